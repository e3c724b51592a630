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
        figure = line_figure(motion.times, getattr(motion, field)[:, 0], motion.joint_names,
                             label)
        path = Path(out_dir) / name
        write_atomically(path, partial(figure.savefig, format="png"), binary=True)
        paths.append(path)
    return paths


def line_figure(times, values, names, ylabel):
    """A Figure with one line per column of ``values`` (N, nv) against ``times`` (N,) s."""
    figure = Figure(figsize=(6.4, 4.0), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for column, name in zip(values.T, names):
        axes.plot(times, column, label=name)
    axes.set_xlabel("time (s)")
    axes.set_ylabel(ylabel)
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small", ncols=-(-len(names) // LEGEND_ROWS))
    return figure
