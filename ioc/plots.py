"""PNG plots of an optimized motion (the optional ``plot`` extra, matplotlib).

Figures are drawn on the Agg canvas directly (no pyplot): no global backend state, no GUI,
no warnings. Each plot is one line per joint against time, like the paper's Fig. 7 and 9.
"""
from functools import partial
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ioc.results import write_atomically

PLOTS = (("joint_angles.png", "q", "joint position (rad, m)"),
         ("joint_torques.png", "tau", "joint torque (N m, N)"))
"""(file name, MotionSamples field, y label); order 0 of the field is plotted."""
LEGEND_ROWS = 8
"""Joints per legend column."""


def plot_motion(out_dir, motion):
    """Write joint_angles.png and joint_torques.png of ``motion`` (ioc.results.MotionSamples)
    into ``out_dir`` (atomically); returns their paths."""
    paths = []
    for name, field, label in PLOTS:
        figure = new_figure((6.4, 4.0))
        draw_lines(figure.add_subplot(), motion.times, getattr(motion, field)[:, 0],
                   motion.joint_names, label)
        paths.append(save_png(figure, Path(out_dir) / name))
    return paths


def plot_grid(path, motions, titles):
    """Write one PNG with a row per motion (titled by ``titles``) and a column per entry of
    PLOTS (joint positions, joint torques), like the paper's Fig. 7 and 9; returns its
    path."""
    figure = new_figure((11.0, 3.2 * len(motions)))
    axes = figure.subplots(len(motions), len(PLOTS), squeeze=False)
    for row, motion, title in zip(axes, motions, titles):
        for ax, (_, field, label) in zip(row, PLOTS):
            draw_lines(ax, motion.times, getattr(motion, field)[:, 0], motion.joint_names,
                       label)
            ax.set_title(title, fontsize="small")
    return save_png(figure, Path(path))


def new_figure(size):
    """A constrained-layout Figure of ``size`` (inches) on its own Agg canvas."""
    figure = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save_png(figure, path):
    """Write ``figure`` to ``path`` as PNG, atomically; returns ``path``."""
    write_atomically(path, partial(figure.savefig, format="png"), binary=True)
    return path


def draw_lines(axes, times, values, names, ylabel):
    """One line per column of ``values`` (N, nv) against ``times`` (N,) s on ``axes``."""
    for column, name in zip(values.T, names):
        axes.plot(times, column, label=name)
    axes.set_xlabel("time (s)")
    axes.set_ylabel(ylabel)
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small", ncols=-(-len(names) // LEGEND_ROWS))
