"""The motion page of ``cmtm view`` (the optional ``plot`` extra, plotly): one
self-contained HTML file that plays a motion in a browser.

Top: the stick figure of ioc.show.drawing in 3D, orthographic, seen from the normal of the
motion's principal plane, with play/pause buttons, a time slider (plotly animation frames,
one per instant) and the current time under it; the data's skeleton (grey) under the
motion's where both exist. Below: the time curves of ioc.show.drawing.CURVES (angles,
velocities, jerks, torques, torque rates), one line per joint (a legend entry per joint
toggles it in every panel; of more than SHOWN_JOINTS joints those that move most are drawn
at first), the data's angles as wide translucent lines under the motion's, and a vertical
line at the current instant.

The file needs no network: plotly's JavaScript (``plotly.offline.get_plotlyjs``, 4.8 MB in
plotly 7) and the figures' JSON are embedded gzip-compressed and base64-encoded in two
``<script type="application/octet-stream">`` elements (ids :data:`PLOTLY_ID` and
:data:`DATA_ID`), inflated by the browser's DecompressionStream (Chromium 80, Firefox 113,
Safari 16.4 and later): the 36-joint human over 200 frames makes a 3 MB page instead of
7 MB. The data element holds {"times": [s], "skeleton": {data, layout, frames}, "curves":
{data, layout, hidden: {data, indices}}}: the stick figures' points in m, full float64
precision (JSON numbers round-trip), a gap (null) between the pieces of a polyline; the
curves of joints hidden at first, but their legend entries, wait in ``hidden``
(:func:`later_traces`). When the page has drawn the stick figure and the curves, it sets
``window.motionPage = {ready: true, milliseconds}`` (the time since navigation; the
performance marks "library", "skeleton" and "curves" time its steps), then adds the hidden
curves and sets ``window.motionPage.complete``.

Inputs (:func:`result_page`, :func:`weights_page`, :func:`motion_file_page`): a ``cmtm
optimize`` result.json, a ``cmtm ioc`` weights.json (its ``motions``: the data and the
motion drawn against them, ioc.files.weights_io) or a motion file (CSV, .mot, .sto) read for a
model.
"""
import base64
import functools
import gzip
import json
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

import cmtm
from ioc.choices import PAGE_FRAMES
from ioc.files.data import CSV_SUFFIXES, STORAGE_SUFFIXES, read_motion
from ioc.files.models import resolve_model
from ioc.files.results import RESULT_FILE, load_result, result_costs, to_json, write_atomically
from ioc.files.weights_io import WEIGHTS_FILE, read_weights
from ioc.show.drawing import CURVES, coinciding_joints, motion_title, principal_view, stick_figure
from ioc.spline.bspline import ClampedBSpline

PAGE_FILE = "motion.html"
DATA_SUFFIXES = CSV_SUFFIXES + STORAGE_SUFFIXES
FRAMES = PAGE_FRAMES
PLOTLY_ID, DATA_ID = "plotly-js-gzip-base64", "motion-data-gzip-base64"
DATA_COLOUR, MOTION_COLOUR, JOINT_COLOUR = "rgba(120,120,120,0.6)", "#1f77b4", "#ff7f0e"
JOINT_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                 "#7f7f7f", "#bcbd22", "#17becf")
DASHES = ("solid", "dash", "dot", "dashdot")
"""Joint j's curves: JOINT_COLOURS[j % 10], DASHES[j // 10 % 4] (matplotlib's tab10 and
ioc.show.plots' styles)."""
PANEL_HEIGHT = 190
"""Pixels per curve panel."""
SHOWN_JOINTS = 12
"""Joints drawn in the curves at first; the others wait in the legend."""


class Track(NamedTuple):
    """One motion on a page: label; q (N, K, nv) raw derivatives q .. q^(K-1) at the page's
    times (K = 1: data samples, angles only; K = 4 up to the jerk); tau (N, 2, nv) tau and
    tau' (gravity included), or None."""
    label: str
    q: np.ndarray
    tau: object = None


class Page(NamedTuple):
    """What a page shows: the CompiledTree, its title, the instants times (N,) s, and its
    tracks, the data's first (drawn grey) and the motion last."""
    model: object
    title: str
    times: np.ndarray
    tracks: tuple


# --- inputs ---------------------------------------------------------------------------------

def spline_track(label, model, spline, theta, times):
    """A Track of a clamped B-spline motion (ioc.spline.bspline.ClampedBSpline, control points
    theta) at ``times``: q .. q''' and tau, tau' (cmtm.inverse_dynamics)."""
    q = spline.evaluate(theta, times, 3)
    return Track(label, q, cmtm.inverse_dynamics(model, q, order=1))


def result_page(path, frames=FRAMES):
    """The Page of a ``cmtm optimize`` result.json (or its folder): its motion at ``frames``
    uniform instants."""
    model, problem, weights, theta, record = load_result(path)
    return optimized_page(model, record["model"], problem, weights, theta, frames)


def optimized_page(model, model_spec, problem, weights, theta, frames=FRAMES):
    """The Page of an optimized motion (control points theta of ``problem``'s spline for
    ``weights``) at ``frames`` uniform instants."""
    times = np.linspace(0.0, problem.spline.duration, frames)
    title = motion_title(model_spec, [term.name for term in problem.terms], weights)
    return Page(model, title, times,
                (spline_track("optimized motion", model, problem.spline, theta, times),))


MOTION_LABELS = {"optimal": "optimal motion for the estimated weights",
                 "reoptimized": "re-optimized motion for the estimated weights",
                 "fit": "smoothing fit (the motion inverse KKT ran on)",
                 "recorded": "recorded optimal motion"}
"""The legend of a weights.json motion by its kind (ioc.files.weights_io)."""


def weights_page(record, trial=0, frames=FRAMES):
    """The Page of a ``cmtm ioc`` weights.json record: trial ``trial``'s data (its samples,
    thinned to ``frames``) and the motion drawn against them at the same instants."""
    motions = record.get("motions")
    if not motions:
        raise ValueError("weights.json: expected the key 'motions' (the data and the motion "
                         "drawn against them), found none: rerun cmtm ioc to write it")
    if not 0 <= trial < len(motions):
        raise ValueError(f"--trial: expected 1..{len(motions)}, got {trial + 1}")
    entry = motions[trial]
    lock = record.get("model_lock", (record.get("settings") or {}).get("lock")) or {}
    model = resolve_model(record["model"], lock, record.get("floating_base"),
                          record.get("gravity"))
    if list(model.joint_names) != record["joint_names"]:
        raise ValueError(f"weights.json: expected the joints {record['joint_names']} of "
                         f"{record['model']!r}, the model has {list(model.joint_names)}")
    times, q = thinned(np.array(entry["times"], dtype=float),
                       np.array(entry["q"], dtype=float), frames)
    motion = entry["motion"]
    spline = ClampedBSpline(motion["degree"], len(motion["control_points"]),
                            float(motion["knots"][-1]), motion["knots"])
    theta = np.array(motion["control_points"], dtype=float)
    names, weights = zip(*record["weights"].items())
    title = (f"{motion_title(record['model'], names, weights)} ({record['estimator']} "
             f"estimate); {entry['source']}")
    return Page(model, title, times,
                (Track("data", q[:, None, :]),
                 spline_track(MOTION_LABELS[motion["kind"]], model, spline, theta, times)))


def motion_file_page(path, model_spec, lock=(), frames=FRAMES, degrees=None,
                     floating_base=None, gravity=None):
    """The Page of a motion file (CSV, .mot, .sto) of ``model_spec``: its angles, thinned
    to ``frames`` samples. ValueError when its joints do not match the model's."""
    model = resolve_model(model_spec, lock, floating_base, gravity)
    data = read_motion(path, model.joint_names, degrees=degrees)
    times, q = thinned(data.times - data.times[0], data.q, frames)
    return Page(model, f"{model_spec}: {path}", times, (Track("data", q[:, None, :]),))


def input_page(path, model_spec=None, lock=(), trial=0, frames=FRAMES, degrees=None,
               floating_base=None, gravity=None):
    """The Page of ``cmtm view INPUT``: a result.json or a weights.json (or a folder holding
    one) with the model they record (``model_spec``, if given, must be it), or a motion
    file of ``model_spec`` (required; with ``lock``, ``floating_base`` and ``gravity`` as
    ioc.files.models.resolve_model takes them). ValueError on anything else."""
    path = recorded_file(Path(path))
    if path.suffix.lower() in DATA_SUFFIXES:
        if model_spec is None:
            raise ValueError(f"--model: required for the motion file {path}, got none")
        return motion_file_page(path, model_spec, lock, frames, degrees, floating_base,
                                gravity)
    if path.suffix.lower() != ".json":
        raise ValueError(f"INPUT: expected a result.json, a weights.json or a motion file "
                         f"(*.csv, *.mot, *.sto), got {path}")
    # a result.json by its name, else by its content (a weights.json has an estimator)
    record = {} if path.name == RESULT_FILE else read_weights(path)
    recorded = record.get("model") or result_costs(path)[0]
    if model_spec is not None and model_spec != recorded:
        raise ValueError(f"--model: {path} records the model {recorded!r}, got "
                         f"{model_spec!r}")
    if "estimator" in record:
        return weights_page(record, trial, frames)
    return result_page(path, frames)


def recorded_file(path):
    """``path``, or the result.json or weights.json of a folder; ValueError if neither
    exists there."""
    if not path.is_dir():
        if not path.is_file():
            raise ValueError(f"INPUT: expected a file or folder, got {path}, which does not "
                             f"exist")
        return path
    found = [path / name for name in (RESULT_FILE, WEIGHTS_FILE) if (path / name).is_file()]
    if not found:
        raise ValueError(f"INPUT: expected a {RESULT_FILE} or {WEIGHTS_FILE} in the folder "
                         f"{path}, found neither")
    return found[0]


def check_page_path(path):
    """``path`` as a Path if a page can be written there: not a folder, in an existing
    writable folder; ValueError otherwise (before any work)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"--out: expected an HTML file name, got the folder {path}")
    if not path.parent.is_dir():
        raise ValueError(f"--out: expected a file in an existing folder, got {path} "
                         f"({path.parent} is not a folder)")
    if not os.access(path.parent, os.W_OK):
        raise ValueError(f"--out: expected a writable folder, {path.parent} is not")
    return path


def default_page_path(path):
    """Where ``cmtm view INPUT`` writes without --out: motion.html beside a result.json or
    weights.json (in the folder given), <stem>.html beside a motion file."""
    path = Path(path)
    if path.is_dir():
        return path / PAGE_FILE
    return path.with_name(PAGE_FILE if path.suffix.lower() == ".json" else
                          path.stem + ".html")


def thinned(times, q, frames):
    """(times, q) at most ``frames`` samples, evenly spread over the indices, both ends
    kept."""
    keep = np.unique(np.round(np.linspace(0, len(times) - 1, min(frames, len(times))))
                     .astype(np.int64))
    return times[keep], q[keep]


# --- the figures ----------------------------------------------------------------------------

def skeleton_figure(page):
    """The 3D figure {data, layout, frames}: one polyline trace per track (frame k holds
    the tracks' stick figures at times[k]), the base marker (a black dot: plotly turns
    each marker symbol into triangles on the CPU, so the joints' circle serves it too),
    play/pause and the slider."""
    sticks = [stick_figure(page.model, track.q[:, 0]) for track in page.tracks]
    points = np.stack([polyline for _, polyline in sticks])          # (tracks, N, P, 3)
    view = principal_view(points, page.model.gravity)
    motion = len(page.tracks) - 1
    traces = [stick_trace(track.label, stick, polyline[0], k == motion)
              for k, (track, (stick, polyline)) in enumerate(zip(page.tracks, sticks))]
    traces.append({"type": "scatter3d", "mode": "markers", "name": "base", "x": [0.0],
                   "y": [0.0], "z": [0.0], "marker": {"size": 8, "color": "black"}})
    frames = [{"name": str(i), "traces": list(range(len(sticks))),
               "data": [{"type": "scatter3d", **coordinates(polyline[i])}
                        for _, polyline in sticks]}
              for i in range(len(page.times))]
    layout = {"title": {"text": page.title, "font": {"size": 14}},
              "scene": scene(points, view), "height": 620,
              "margin": {"l": 10, "r": 10, "t": 60, "b": 10},
              "legend": {"x": 0.0, "y": 1.0},
              "updatemenus": [play_buttons(page.times)],
              "sliders": [time_slider(page.times)]}
    return {"data": traces, "layout": layout, "frames": frames}


def stick_trace(label, stick, polyline, is_motion):
    """A scatter3d trace of one stick figure: lines, dots at the joints."""
    colour = MOTION_COLOUR if is_motion else DATA_COLOUR
    return {"type": "scatter3d", "mode": "lines+markers", "name": label,
            **coordinates(polyline), "line": {"color": colour, "width": 7 if is_motion else 10},
            "marker": {"size": np.where(stick.joints, 4, 0).tolist(),
                       "color": JOINT_COLOUR if is_motion else DATA_COLOUR},
            "hoverinfo": "skip"}


def coordinates(polyline):
    """{x, y, z} lists of a polyline (P, 3), None (a gap) where it is NaN."""
    return {axis: [None if np.isnan(value) else float(value) for value in polyline[:, a]]
            for a, axis in enumerate("xyz")}


def scene(points, view):
    """An orthographic scene: a cube around every point drawn (equal scales), the camera
    on the view's normal with the view's up."""
    flat = points.reshape(-1, 3)
    flat = flat[np.all(np.isfinite(flat), axis=1)]
    centre = (flat.min(axis=0) + flat.max(axis=0)) / 2
    half = 0.55 * max(np.max(flat.max(axis=0) - flat.min(axis=0)), 1e-3)
    axes = {f"{axis}axis": {"range": [centre[a] - half, centre[a] + half],
                            "title": {"text": f"{axis} (m)"}} for a, axis in enumerate("xyz")}
    return {**axes, "aspectmode": "cube",
            "camera": {"eye": dict(zip("xyz", (1.8 * view[2]).tolist())),
                       "up": dict(zip("xyz", view[1].tolist())),
                       "center": {"x": 0, "y": 0, "z": 0},
                       "projection": {"type": "orthographic"}}}


def animation(duration_ms):
    """plotly.animate options: frames ``duration_ms`` apart, redrawn (a 3D scene needs
    it), no transition."""
    return {"mode": "immediate", "fromcurrent": True, "transition": {"duration": 0},
            "frame": {"duration": duration_ms, "redraw": True}}


def play_buttons(times):
    """Play (real time, at most 50 frames per second) and pause."""
    step = 1000.0 * float(np.mean(np.diff(times))) if len(times) > 1 else 0.0
    return {"type": "buttons", "direction": "left", "x": 0.0, "y": 0.0, "xanchor": "left",
            "yanchor": "top", "pad": {"t": 10, "r": 10}, "showactive": False,
            "buttons": [{"label": "Play", "method": "animate",
                         "args": [None, animation(max(step, 20.0))]},
                        {"label": "Pause", "method": "animate",
                         "args": [[None], animation(0)]}]}


def time_slider(times):
    """One unlabelled step per frame. plotly lays a slider out by measuring the text of
    every step's label and current value (two SVG text measurements per step, 0.1-0.2 s
    of the human page's opening over 200 frames); the page shows the current time itself
    (PAGE_TEMPLATE's #time)."""
    return {"active": 0, "x": 0.12, "len": 0.88, "y": 0.0, "yanchor": "top",
            "pad": {"t": 10}, "ticklen": 0, "currentvalue": {"visible": False},
            "steps": [{"label": "", "method": "animate", "args": [[str(i)], animation(0)]}
                      for i in range(len(times))]}


def curves_figure(page):
    """The time curves {data, layout, hidden}: a panel per curve of CURVES, one line per
    joint and track, a legend entry per joint, the coinciding joints of each panel noted
    once, a vertical line (layout.shapes[0]) at the first instant. Of a model with more than
    SHOWN_JOINTS joints, the SHOWN_JOINTS whose angles move most are drawn and the others
    wait in the legend (noted on the first panel); their other lines wait in ``hidden``
    (:func:`later_traces`)."""
    names = page.model.joint_names
    shown = shown_joints(page.tracks[-1].q[:, 0])
    traces, notes = [], []
    if len(shown) < len(names):
        notes.append(panel_note(1, f"{len(shown)} of {len(names)} joints drawn, those moving "
                                    f"most: click a legend entry to draw or hide a joint",
                                y=1.12))
    panels = [curve for curve in CURVES
              if any(curve_values(track, curve) is not None for track in page.tracks)]
    for row, curve in enumerate(panels, start=1):
        for track in page.tracks:
            values = curve_values(track, curve)
            if values is None:
                continue
            traces += [joint_trace(page.times, values[:, j], names[j], j, row,
                                   is_data=track.tau is None, shown=j in shown,
                                   first=row == 1 and track is page.tracks[-1])
                       for j in range(len(names))]
        groups = [group for group in coinciding_joints(curve_values(page.tracks[-1], curve))
                  if len(group) > 1]
        if groups:
            notes.append(panel_note(row, "; ".join(" = ".join(names[j] for j in group)
                                                   for group in groups) + " coincide"))
    first, hidden = later_traces(traces)
    return {"data": first, "layout": curves_layout(page, panels, notes), "hidden": hidden}


def later_traces(traces):
    """(traces drawn first, {data, indices}: the others and their indices among all): the
    lines of joints that wait in the legend, but their legend entries, are added once the
    page has drawn. A trace costs plotly about 1 ms even when hidden: the human's 120 such
    lines took a tenth of its page's opening (bench/bench_view.py)."""
    waits = [trace["visible"] is not True and not trace["showlegend"] for trace in traces]
    later = [k for k, wait in enumerate(waits) if wait]
    return ([trace for trace, wait in zip(traces, waits) if not wait],
            {"data": [traces[k] for k in later], "indices": later})


def shown_joints(angles):
    """The columns of ``angles`` (N, nv) drawn at first: all, or the SHOWN_JOINTS with the
    largest range (a page with 36 lines in a panel shows none of them)."""
    ranges = np.ptp(angles, axis=0)
    return set(np.argsort(-ranges, kind="stable")[:SHOWN_JOINTS].tolist())


def curve_values(track, curve):
    """The (N, nv) values of ``curve`` on ``track``, or None when the track lacks them."""
    stack = track.q if curve.field == "q" else track.tau
    return None if stack is None or curve.order >= stack.shape[1] else stack[:, curve.order]


def joint_trace(times, values, name, j, row, is_data, shown, first):
    """One joint's curve on panel ``row``: a thin line (the motion) or a wide translucent
    one under it (data; a line, since thousands of SVG dots slow the page down)."""
    colour = JOINT_COLOURS[j % len(JOINT_COLOURS)]
    line = {"color": colour, "width": 5, "dash": "solid"} if is_data else \
        {"color": colour, "width": 1.6, "dash": DASHES[j // len(JOINT_COLOURS) % len(DASHES)]}
    return {"type": "scatter", "mode": "lines", "x": times.tolist(), "y": values.tolist(),
            "name": name + (" (data)" if is_data else ""), "legendgroup": name,
            "showlegend": first, "visible": True if shown else "legendonly",
            "opacity": 0.35 if is_data else 1.0, "line": line, "xaxis": "x",
            "yaxis": f"y{row}"}


def panel_note(row, text, y=1.0):
    """An annotation at the top left of panel ``row`` (``y``: its height in the panel)."""
    return {"text": text, "xref": "x domain", "yref": f"y{row} domain", "x": 0.0, "y": y,
            "xanchor": "left", "yanchor": "bottom", "showarrow": False,
            "font": {"size": 11, "color": "#555"}}


def curves_layout(page, panels, notes):
    """Panels stacked on one time axis, a legend right of them, the time line."""
    count, gap = len(panels), 0.04
    height = (1.0 - gap * (count - 1)) / count
    axes = {f"yaxis{row}": {"domain": [1.0 - row * height - (row - 1) * gap,
                                       1.0 - (row - 1) * (height + gap)],
                            "title": {"text": curve.label(page.model), "font": {"size": 11}},
                            "anchor": "x"}
            for row, curve in enumerate(panels, start=1)}
    axes["yaxis"] = axes.pop("yaxis1")
    return {"title": {"text": page.title, "font": {"size": 14}},
            "height": 80 + PANEL_HEIGHT * count, "margin": {"t": 60, "b": 50},
            "xaxis": {"title": {"text": "time (s)"}, "anchor": f"y{count}",
                      "range": [float(page.times[0]), float(page.times[-1])]},
            **axes, "legend": {"x": 1.02, "y": 1.0, "xanchor": "left", "yanchor": "top",
                               "title": {"text": "joints"}},
            "hovermode": "closest", "annotations": notes,
            "shapes": [{"type": "line", "xref": "x", "yref": "paper", "x0": page.times[0],
                        "x1": page.times[0], "y0": 0, "y1": 1,
                        "line": {"color": "black", "width": 1.5, "dash": "dot"}}]}


# --- the file -------------------------------------------------------------------------------

def page_html(page):
    """The self-contained HTML of a Page (module docstring)."""
    data = {"times": page.times.tolist(), "skeleton": skeleton_figure(page),
            "curves": curves_figure(page)}
    title = page.title.replace("&", "&amp;").replace("<", "&lt;")
    return PAGE_TEMPLATE.format(title=title, plotly_id=PLOTLY_ID, data_id=DATA_ID,
                                plotly=plotly_payload(), data=packed(to_json(data)))


def packed(text):
    """``text`` gzip-compressed (deterministic: no time stamp) and base64-encoded."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), 9, mtime=0)).decode("ascii")


def unpacked(text):
    """The inverse of :func:`packed`."""
    return gzip.decompress(base64.b64decode(text)).decode("utf-8")


COMPILE_HINT = "//# allFunctionsCalledOnLoad\n"
"""V8's explicit compile hint (Chromium 136 and later; a comment elsewhere): compile every
function of the script as it loads instead of pre-parsing it then parsing it again on its
first call; plotly calls most of its functions while it loads, so its evaluation (a third of
the page's opening) takes about a tenth less (bench/bench_view.py)."""


@functools.cache
def plotly_payload():
    """plotly's JavaScript after COMPILE_HINT, packed (once per process: it takes 0.4 s)."""
    from plotly.offline import get_plotlyjs
    return packed(COMPILE_HINT + get_plotlyjs())


def page_data(html):
    """The data element's object of a page's HTML (:func:`page_html`)."""
    start = html.index(f'id="{DATA_ID}">') + len(f'id="{DATA_ID}">')
    return json.loads(unpacked(html[start:html.index("</script>", start)]))


def write_page(path, page):
    """Write the page's HTML to ``path`` atomically; returns ``path``."""
    html = page_html(page)
    write_atomically(path, lambda file: file.write(html))
    return path


PAGE_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 0 1em; }}
#message {{ color: #a00; }}
#time {{ margin: 0 0 0 12%; font-size: 14px; }}
</style>
</head>
<body>
<p id="message">Loading the motion…</p>
<div id="skeleton"></div>
<p id="time"></p>
<div id="curves"></div>
<script type="application/octet-stream" id="{plotly_id}">{plotly}</script>
<script type="application/octet-stream" id="{data_id}">{data}</script>
<script>
"use strict";
async function inflate(id) {{
  const base64 = document.getElementById(id).textContent;
  const bytes = Uint8Array.fromBase64 ? Uint8Array.fromBase64(base64)
    : Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}}
async function draw() {{
  const library = document.createElement("script");
  library.textContent = await inflate("{plotly_id}");
  document.head.appendChild(library);
  performance.mark("library");
  const page = JSON.parse(await inflate("{data_id}"));
  const skeleton = document.getElementById("skeleton");
  const curves = document.getElementById("curves");
  const config = {{responsive: true, displaylogo: false}};
  await Plotly.newPlot(skeleton, page.skeleton.data, page.skeleton.layout, config);
  await Plotly.addFrames(skeleton, page.skeleton.frames);
  performance.mark("skeleton");
  await Plotly.newPlot(curves, page.curves.data, page.curves.layout, config);
  performance.mark("curves");
  const time = document.getElementById("time");
  const showTime = (frame) => {{
    time.textContent = `t = ${{page.times[frame].toFixed(3)}} s`;
    return page.times[frame];
  }};
  showTime(0);
  skeleton.on("plotly_animatingframe", (event) => {{
    const t = showTime(Number(event.name));
    Plotly.relayout(curves, {{"shapes[0].x0": t, "shapes[0].x1": t}});
  }});
  document.getElementById("message").remove();
  window.motionPage = {{ready: true, milliseconds: performance.now()}};
  if (page.curves.hidden.data.length) {{
    await Plotly.addTraces(curves, page.curves.hidden.data, page.curves.hidden.indices);
  }}
  window.motionPage.complete = true;
}}
if (typeof DecompressionStream === "undefined") {{
  document.getElementById("message").textContent =
    "This browser cannot open the page (no DecompressionStream): use a current Chromium, " +
    "Firefox or Safari.";
}} else {{
  draw().catch((error) => {{
    document.getElementById("message").textContent = "The page failed: " + error;
    console.error(error);
  }});
}}
</script>
</body>
</html>
"""
