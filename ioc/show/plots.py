"""PNG figures of optimized motions (the optional ``plot`` extra, matplotlib).

Figures are drawn on the Agg canvas directly (no pyplot): no global backend state, no GUI,
no warnings.

* **Time curves** (:func:`plot_motion`, :func:`plot_grid`, like the paper's Fig. 7 and 9):
  one line per joint against time for each curve of ioc.show.drawing.CURVES, a title naming the
  model and the weighted costs, units on both axes, the legend outside the data, and joints
  whose curves coincide on screen drawn as one line named once ("joint1 = joint2").
* **Snapshot strips** (:func:`plot_snapshots`, like the paper's Fig. 6 and 8): the stick
  figure of ioc.show.drawing at K evenly spaced instants side by side, one strip per motion,
  seen from the normal of the motions' principal plane (ioc.show.drawing.principal_view, one
  view and one scale for the whole figure).
"""
from functools import partial
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ioc.files.results import write_atomically
from ioc.show.drawing import BASE, CURVES, coinciding_joints, principal_view, stick_figure

GRID_CURVES = (CURVES[0], CURVES[3])
"""The columns of :func:`plot_grid`: joint angles and torques, as in the paper's Fig. 7."""
LEGEND_ROWS = 12
"""Legend entries per legend column."""
COLOURS = colormaps["tab10"].colors
LINE_STYLES = ("-", "--", ":", "-.")
"""Joint j is drawn in COLOURS[j % 10] with LINE_STYLES[j // 10 % 4]: 40 distinct lines."""
SNAPSHOTS = 8
"""Instants per snapshot strip."""
STICK_COLOUR, JOINT_COLOUR = "tab:blue", "tab:orange"
LIMIT_MARGIN = 0.08
"""Empty border of a snapshot panel, as a fraction of the largest extent drawn."""


def plot_motion(out_dir, motion, model, title):
    """Write one PNG per curve of CURVES (joint_angles.png, joint_velocities.png,
    joint_jerks.png, joint_torques.png, joint_torque_rates.png) of ``motion``
    (ioc.files.results.MotionSamples) of ``model`` into ``out_dir``, each titled ``title``
    (ioc.show.drawing.motion_title); returns their paths."""
    paths = []
    for curve in CURVES:
        figure = new_figure((7.5, 4.0))
        axes = figure.add_subplot()
        draw_curve(axes, motion, curve, model)
        axes.set_title(title, fontsize="medium")
        paths.append(save_png(figure, Path(out_dir) / f"{curve.name}.png"))
    return paths


def plot_grid(path, motions, model, titles, suptitle):
    """Write one PNG with a row per motion (each titled by ``titles``) and the columns of
    GRID_CURVES (joint angles, torques) like the paper's Fig. 7 and 9, under ``suptitle``;
    returns its path."""
    figure = new_figure((12.0, 3.2 * len(motions)))
    axes = figure.subplots(len(motions), len(GRID_CURVES), squeeze=False)
    for row, motion, title in zip(axes, motions, titles):
        for ax, curve in zip(row, GRID_CURVES):
            draw_curve(ax, motion, curve, model)
            ax.set_title(title, fontsize="small")
    figure.suptitle(suptitle)
    return save_png(figure, Path(path))


def plot_snapshots(path, rows, suptitle):
    """Write the snapshot strips of :func:`snapshot_figure` to ``path``; returns it."""
    return save_png(snapshot_figure(rows, suptitle), Path(path))


def snapshot_times(duration, instants=SNAPSHOTS):
    """``instants`` evenly spaced times over [0, ``duration``] s, both ends included."""
    return np.linspace(0.0, duration, instants)


def snapshot_figure(rows, suptitle):
    """A Figure with one strip per row of ``rows``: (title, model, times (K,), q (K, nv)),
    a subfigure (``figure.subfigs[r]``) of K panels side by side, panel k the stick figure
    at times[k] (its first line, ``axes.lines[0]``: the polyline of ioc.show.drawing projected on
    the view), joints as dots, the base as a black triangle. One view and one scale for all
    panels: the principal plane of every drawn point, up against the first model's
    gravity."""
    drawn = [(title, times, *stick_figure(model, q)) for title, model, times, q in rows]
    view = principal_view(np.concatenate([points for *_, points in drawn], axis=1),
                          rows[0][1].gravity)
    planes = [points @ view[:2].T for *_, points in drawn]
    limits = plane_limits(np.concatenate(planes, axis=1))
    columns = max(len(times) for _, times, *_ in drawn)
    figure = new_figure((1.5 * columns + 0.8, 0.8 + 2.1 * len(rows)))
    for strip, (title, times, stick, _), plane in zip(figure.subfigures(len(rows), 1,
                                                                        squeeze=False)[:, 0],
                                                      drawn, planes):
        panels = strip.subplots(1, columns, sharex=True, sharey=True, squeeze=False)[0]
        for axes, t, points in zip(panels, times, plane):
            draw_stick(axes, stick, points)
            axes.set(xlim=limits[0], ylim=limits[1], title=f"t = {t:.2f} s")
            axes.title.set_fontsize("small")
        panels[0].set_xlabel(f"along {direction_text(view[0])} (m)", fontsize="small")
        panels[0].set_ylabel(f"along {direction_text(view[1])} (m)", fontsize="small")
        strip.suptitle(title, fontsize="medium")
    figure.suptitle(suptitle)
    return figure


def draw_stick(axes, stick, points):
    """One stick figure ``points`` (P, 2), m, on ``axes``: the polyline, joints as dots,
    the base as a black triangle."""
    axes.plot(points[:, 0], points[:, 1], color=STICK_COLOUR, lw=2.5, solid_capstyle="round")
    joints = points[stick.joints]
    axes.scatter(joints[:, 0], joints[:, 1], s=14, color=JOINT_COLOUR, zorder=3)
    base = points[stick.path == BASE][0]
    axes.scatter([base[0]], [base[1]], marker="^", s=80, color="black", zorder=4)
    axes.set_aspect("equal")
    axes.grid(alpha=0.3)
    axes.tick_params(labelsize="x-small")


def plane_limits(points):
    """((x_lo, x_hi), (y_lo, y_hi)) around ``points`` (..., 2) with a margin of
    LIMIT_MARGIN of the larger extent, NaN ignored."""
    flat = points.reshape(-1, 2)
    flat = flat[np.all(np.isfinite(flat), axis=1)]
    low, high = flat.min(axis=0), flat.max(axis=0)
    margin = LIMIT_MARGIN * max(np.max(high - low), 1e-3)
    return tuple(zip(low - margin, high + margin))


def direction_text(vector):
    """A unit vector of the base frame as text, "(0.00, 1.00, 0.00)"."""
    return "(" + ", ".join(f"{value + 0.0:.2f}" for value in vector) + ")"


def new_figure(size):
    """A constrained-layout Figure of ``size`` (inches) on its own Agg canvas."""
    figure = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save_png(figure, path):
    """Write ``figure`` to ``path`` as PNG, atomically; returns ``path``."""
    write_atomically(path, partial(figure.savefig, format="png"), binary=True)
    return path


def draw_curve(axes, motion, curve, model):
    """``curve`` (ioc.show.drawing.Curve) of ``motion`` on ``axes``: one line per group of
    coinciding joints, named by its joints, the legend right of the axes."""
    values = getattr(motion, curve.field)[:, curve.order]
    for group in coinciding_joints(values):
        first = group[0]
        axes.plot(motion.times, values[:, first], color=COLOURS[first % len(COLOURS)],
                  ls=LINE_STYLES[first // len(COLOURS) % len(LINE_STYLES)],
                  label=" = ".join(motion.joint_names[j] for j in group))
    axes.set_xlabel("time (s)")
    axes.set_ylabel(curve.label(model))
    axes.grid(alpha=0.3)
    entries = len(axes.lines)
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0),
                borderaxespad=0.0, ncols=-(-entries // LEGEND_ROWS))
