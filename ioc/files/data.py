"""Recorded joint-angle motions: file readers (DESIGN.md, ioc_calibration.md "Fits").

Readers turn a CSV or OpenSim storage file (``.mot`` / ``.sto``) into :class:`MotionData`,
samples t_m (``times``, (N,) s) and q_m (``q``, (N, nv), rad or m), which
``ioc.spline.smoothing.fit_spline`` fits with a smoothing spline (its names stay importable
from here, as ``ioc.files.data.fit_spline``).

Recordings in other conventions: column maps (:func:`read_map`, :func:`read_mapped`),
DeepMimic motion clips (:func:`read_clip`, :func:`clip_motion`: spherical joints onto a
model's revolute chains), :func:`joint_locks` (where the joints that no data move are
held), :func:`cut_window` and :func:`segments` (movement windows).
"""
import csv
import io
import json
import math
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy.spatial.transform import Rotation

from cmtm.api import check_model
from ioc.spline.smoothing import (GRID_PER_DECADE, LAMBDA_SPAN, SplineFit,  # noqa: F401
                                  check_fit_size, fit_spline, penalty_matrix, rest_map)
from kinematic_trees.joint_types import JOINT_PRISMATIC, JOINT_REVOLUTE

CSV_SUFFIXES = (".csv",)
STORAGE_SUFFIXES = (".mot", ".sto")


# --- Readers ------------------------------------------------------------------------------

class MotionData(NamedTuple):
    """A recorded motion, columns in the model's joint order.

    times : (N,) float64 s, strictly increasing, finite, N >= 2
    q : (N, nv) float64 rad (or m for prismatic joints), column j is ``joint_names[j]``
    joint_names : tuple of str, the model's joint names in model order
    source : str, the file path
    notices : tuple of str, human-readable notes such as ``"ignored columns: a, b"``
    """
    times: np.ndarray
    q: np.ndarray
    joint_names: tuple
    source: str
    notices: tuple


class _Table(NamedTuple):
    """A file's text table: column labels, data rows as (line number, fields), unit flag
    from the file header (None when the file does not say)."""
    labels: list
    rows: list
    in_degrees: object


def read_motion(path, joint_names, degrees=None):
    """Read a recorded motion from ``path`` (``.csv``, ``.mot`` or ``.sto``).

    CSV: comma separated (quoted fields as Python's csv module reads them; a UTF-8 byte
    order mark, as Excel's "CSV UTF-8" writes, is skipped), a header row with a ``time``
    column and one column per joint named as in ``joint_names`` (a label matches a joint
    exactly or, failing that, without surrounding spaces; for a joint named ``time`` the
    first ``time`` column is the time, the second the joint). OpenSim storage: header
    lines up to a line ``endheader`` (a line ``inDegrees=yes|no`` sets the unit), then a
    line of column labels (tab- or space-separated) and whitespace-separated numeric rows.

    Extra columns are ignored with a notice and are not parsed; only ``time`` and the joint
    columns must be numeric and finite. Angles are radians unless ``degrees=True`` or the
    storage header says ``inDegrees=yes``; an explicit ``degrees`` that contradicts the
    header is an error. The degree conversion (np.deg2rad) applies to every joint column:
    models with prismatic joints need files in radians and metres.

    >>> read_motion("walk.csv", ("hip", "knee")).q.shape      # doctest: +SKIP
    (201, 2)

    Raises ValueError naming the file and what was expected and found.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path: expected a file path (str or Path), got {type(path).__name__}")
    path = Path(path)
    names = _joint_names(joint_names)
    table = _read_table(path)
    in_degrees = _unit(path, table.in_degrees, degrees)
    times, q, notices = _columns(path, table, names)
    return MotionData(times, np.deg2rad(q) if in_degrees else q, names, str(path), notices)


def motion_columns(path):
    """The column labels of a motion file (``.csv``, ``.mot``, ``.sto``, as
    :func:`read_motion` parses it); ValueError as there for a file that is not one."""
    return tuple(_read_table(Path(path)).labels)


def _read_table(path):
    """The _Table of a motion file ``path`` (a Path): CSV or OpenSim storage by its suffix;
    ValueError naming the file for another suffix or what cannot be read."""
    suffix = path.suffix.lower()
    if suffix not in CSV_SUFFIXES + STORAGE_SUFFIXES:
        raise ValueError(f"{path}: expected a file ending in "
                         f"{', '.join(CSV_SUFFIXES + STORAGE_SUFFIXES)}, got {path.suffix!r}")
    text = _read_text(path)
    return _csv_table(path, text) if suffix in CSV_SUFFIXES else _storage_table(path, text)


def _joint_names(joint_names):
    """The model's joint names as a tuple of distinct non-empty strings."""
    if isinstance(joint_names, str):
        raise ValueError(f"joint_names: expected a sequence of names, got the string "
                         f"{joint_names!r}")
    try:
        names = tuple(joint_names)
    except TypeError:
        raise ValueError(f"joint_names: expected a sequence of names, got {joint_names!r}") \
            from None
    if not names or not all(isinstance(n, str) and n for n in names) \
            or len(set(names)) != len(names):
        raise ValueError(f"joint_names: expected distinct non-empty strings, got {names!r}")
    return names


def _read_text(path):
    """The file's text (a leading UTF-8 byte order mark dropped, line ends as in the file);
    ValueError for a missing or empty file."""
    if not path.is_file():
        raise ValueError(f"{path}: expected an existing motion file, found none")
    try:
        with open(path, encoding="utf-8-sig", newline="") as file:
            text = file.read()
    except UnicodeDecodeError:
        raise ValueError(f"{path}: expected a UTF-8 text file, got undecodable bytes") from None
    if not text.strip():
        raise ValueError(f"{path}: expected a header and data rows, got an empty file")
    return text


def _csv_table(path, text):
    """Comma-separated table: first non-blank row the labels (as written), then data rows
    (fields without surrounding spaces); ValueError for text that Python's csv module
    cannot read (an unclosed quote) or that holds no labels (only commas)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = [(reader.line_num, row) for row in reader]
    except csv.Error as error:
        raise ValueError(f"{path}: line {reader.line_num}: expected CSV, got {error}; an "
                         f"unclosed quote makes the rest of the file one field") from None
    rows = [(line, fields) for line, fields in rows if any(f.strip() for f in fields)]
    if not rows:
        raise ValueError(f"{path}: expected a header row of column labels, got none (only "
                         f"separators and blanks)")
    return _Table(rows[0][1], [(line, [f.strip() for f in fields])
                               for line, fields in rows[1:]], None)


def _storage_table(path, text):
    """OpenSim storage: header lines up to ``endheader``, labels line, data rows."""
    lines = text.splitlines()
    ends = [i for i, line in enumerate(lines) if line.strip().lower() == "endheader"]
    if not ends:
        raise ValueError(f"{path}: expected a header ending with a line 'endheader', "
                         f"found no such line")
    in_degrees = _header_in_degrees(path, lines[:ends[0]])
    body = [(i + 1, line.strip()) for i, line in enumerate(lines)
            if i > ends[0] and line.strip()]
    if not body:
        raise ValueError(f"{path}: expected a line of column labels after 'endheader', "
                         f"got the end of the file")
    labels = body[0][1]
    labels = [f.strip() for f in labels.split("\t")] if "\t" in labels else labels.split()
    return _Table(labels, [(n, line.split()) for n, line in body[1:]], in_degrees)


def _header_in_degrees(path, header):
    """True / False from a header line ``inDegrees=yes|no``, None without one."""
    for line in header:
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "indegrees":
            value = value.strip().lower()
            if value not in ("yes", "no"):
                raise ValueError(f"{path}: inDegrees: expected yes or no, got {value!r}")
            return value == "yes"
    return None


def _unit(path, in_degrees, degrees):
    """Whether the angles are in degrees: the caller's ``degrees`` or the file header."""
    if degrees is not None and not isinstance(degrees, bool):
        raise ValueError(f"degrees: expected None, True or False, got {degrees!r}")
    if degrees is not None and in_degrees is not None and degrees != in_degrees:
        raise ValueError(f"{path}: degrees={degrees} contradicts the header line "
                         f"inDegrees={'yes' if in_degrees else 'no'}")
    return bool(in_degrees if degrees is None else degrees)


def _columns(path, table, names):
    """(times (N,), q (N, nv) in file units, notices) from a parsed table."""
    labels = table.labels
    indices = _column_indices(path, labels, names)
    used = ["time", *names]
    values = _numbers(path, table, indices, used)
    _check_times(path, values[:, 0], [n for n, _ in table.rows])
    ignored = [label for i, label in enumerate(labels) if i not in indices]
    notices = (f"ignored columns: {', '.join(ignored)}",) if ignored else ()
    return values[:, 0], values[:, 1:], notices


def _column_indices(path, labels, names):
    """The columns of the time and of each joint of ``names``: a label equal to the name,
    else equal to it without surrounding spaces; the first 'time' column is the time, so a
    joint named 'time' is the second. ValueError for a missing or an ambiguous column."""
    taken, shared = [], 2 if "time" in names else 1   # the time's label, and a joint's

    def find(name, what):
        for candidates in ([i for i, label in enumerate(labels) if label == name],
                           [i for i, label in enumerate(labels) if label.strip() == name]):
            free = [i for i in candidates if i not in taken]
            if len(free) > (shared if name == "time" and not taken else 1):
                raise ValueError(f"{path}: expected one column {name!r} ({what}), got "
                                 f"{len(free)}")
            if free:
                taken.append(free[0])
                return free[0]
        return None

    if find("time", "the time") is None:
        raise ValueError(f"{path}: expected a 'time' column, got columns {', '.join(labels)}")
    missing = [name for name in names if find(name, "a joint") is None]
    if missing:
        raise ValueError(f"{path}: expected a column for every joint, missing "
                         f"{', '.join(missing)}")
    return taken


def _numbers(path, table, indices, used):
    """(N, len(indices)) float64 of the used columns; checks fields, numbers, finiteness."""
    if not table.rows:
        raise ValueError(f"{path}: expected data rows after the header, got none")
    width = len(table.labels)
    values = np.empty((len(table.rows), len(indices)))
    for r, (line, fields) in enumerate(table.rows):
        if len(fields) != width:
            raise ValueError(f"{path}: line {line}: expected {width} fields as in the "
                             f"header, got {len(fields)}")
        for c, (i, label) in enumerate(zip(indices, used)):
            values[r, c] = _number(path, fields[i], line, label)
    if len(values) < 2:
        raise ValueError(f"{path}: expected at least 2 data rows, got {len(values)}")
    return values


def _number(path, text, line, label):
    """A finite float from one field."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{path}: line {line}, column {label!r}: expected a number, "
                         f"got {text!r}") from None
    if not np.isfinite(value):
        raise ValueError(f"{path}: line {line}, column {label!r}: expected a finite "
                         f"number, got {text!r}")
    return value


def _check_times(path, times, lines):
    """Strictly increasing times, or ValueError naming the first offending line."""
    bad = np.flatnonzero(np.diff(times) <= 0)
    if bad.size:
        k = bad[0]
        raise ValueError(f"{path}: expected strictly increasing time, got "
                         f"{float(times[k + 1])!r} on line {lines[k + 1]} after "
                         f"{float(times[k])!r} on line {lines[k]}")


# --- Column maps (--map) ------------------------------------------------------------------

MAP_SUFFIXES = (".csv", ".json")


def read_map(path):
    """{data column: (model joint, ...)} from a map file (``cmtm ioc --map``).

    JSON: one object {data_column: model_joint}, a value may be a list of model joints;
    CSV: rows ``data_column,model_joint`` (no header), a data column repeated on several
    rows maps onto those joints in row order. Only a clip's joint maps onto several model
    joints: a chain from parent to child (``clip_motion``); a column of a table maps onto
    one. ValueError naming the file for anything else, and for a model joint named twice.

    With arm.json holding {"r_shoulder_elv": "right_shoulder_X"}:

    >>> read_map("arm.json")                      # doctest: +SKIP
    {'r_shoulder_elv': ('right_shoulder_X',)}
    """
    path = _path_ending(path, MAP_SUFFIXES, "a map file")
    text = _read_text(path)
    pairs = _json_map_pairs(path, text) if path.suffix.lower() == ".json" \
        else _csv_map_pairs(path, text)
    mapping, source_of = {}, {}
    for column, joint in pairs:
        if joint in source_of:
            raise ValueError(f"{path}: expected each model joint mapped once, got {joint!r} "
                             f"from {source_of[joint]!r} and {column!r}")
        source_of[joint] = column
        mapping.setdefault(column, []).append(joint)
    return {column: tuple(joints) for column, joints in mapping.items()}


def _path_ending(path, suffixes, what):
    """``path`` as a Path if it is one (str or PathLike) ending in one of ``suffixes``."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path: expected a file path (str or Path), got {type(path).__name__}")
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise ValueError(f"{path}: expected {what} ending in {', '.join(suffixes)}, got "
                         f"{path.suffix!r}")
    return path


def _json_map_pairs(path, text):
    """(column, joint) pairs of a JSON map {column: joint | [joints]}."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: expected a JSON object {{data column: model joint}}, got "
                         f"invalid JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(record, dict) or not record:
        raise ValueError(f"{path}: expected a non-empty JSON object {{data column: model "
                         f"joint}}, got {type(record).__name__}")
    pairs = []
    for column, joints in record.items():
        joints = [joints] if isinstance(joints, str) else joints
        if not column or not isinstance(joints, list) or not joints \
                or not all(isinstance(j, str) and j for j in joints):
            raise ValueError(f"{path}: {column!r}: expected a model joint name or a list of "
                             f"them, got {record[column]!r}")
        pairs += [(column, joint) for joint in joints]
    return pairs


def _csv_map_pairs(path, text):
    """(column, joint) pairs of a two-column CSV map."""
    reader = csv.reader(text.splitlines())
    pairs = []
    for fields in reader:
        fields = [f.strip() for f in fields]
        if not any(fields):
            continue
        if len(fields) != 2 or not all(fields):
            raise ValueError(f"{path}: line {reader.line_num}: expected 2 fields (data column, "
                             f"model joint), got {fields}")
        pairs.append(tuple(fields))
    if not pairs:
        raise ValueError(f"{path}: expected rows 'data column,model joint', got none")
    return pairs


def check_map(source, mapping, joint_names):
    """ValueError unless every model joint of ``mapping`` is one of ``joint_names``."""
    unknown = [j for joints in mapping.values() for j in joints if j not in joint_names]
    if unknown:
        raise ValueError(f"{source}: expected joints of the model, got unknown "
                         f"{', '.join(unknown)} (the model has {', '.join(joint_names)})")


def read_mapped(path, joint_names, mapping, degrees=None):
    """A table (``read_motion``'s formats) whose columns ``mapping`` (``read_map``) names
    onto model joints: MotionData of the mapped joints only, in the model's order
    ``joint_names``; the other columns are ignored with a notice. The model joints no
    column maps onto are the caller's to lock (:func:`joint_locks`).

    ValueError naming the map's unknown model joints, a column mapped onto several joints,
    or (``read_motion``) a column the file does not have.
    """
    names = _joint_names(joint_names)
    check_map("map", mapping, names)
    several = [c for c, joints in mapping.items() if len(joints) != 1]
    if several:
        raise ValueError(f"map: expected one model joint per column of a table, got "
                         f"{several[0]!r} -> {', '.join(mapping[several[0]])} (only a "
                         f"clip's spherical joint maps onto a chain)")
    if "time" in mapping:
        raise ValueError("map: expected joint columns, got 'time' (the time axis)")
    data = read_motion(path, tuple(mapping), degrees)
    target = {joints[0]: column for column, joints in mapping.items()}
    mapped = [name for name in names if name in target]
    columns = [data.joint_names.index(target[name]) for name in mapped]
    return data._replace(q=data.q[:, columns], joint_names=tuple(mapped))


def joint_locks(joint_names, data, movable=None, lock=None):
    """Which model joints move and where the others are locked, for measured motions that
    may cover a subset of the model's joints (``read_mapped``, ``clip_motion``).

    joint_names : the model's joints in model order
    data : a MotionData or a list of them (pooled trials), columns naming model joints
    movable : the joints that move (default: every joint the data cover, less ``lock``)
    lock : {joint: position} explicit positions (rad or m)
    Every other model joint is locked at its mean over all samples of ``data`` (the pose
    the recorded motion holds it in on average), or at 0 when no data cover it (a clip's
    joint that its skeleton lacks, such as human.urdf's wrists: the clip holds it at its
    reference 0). Returns ({joint: position} to lock, in model order; the data restricted
    to the movable joints, model order, a list when a list came in; notices).
    ValueError for unknown joints, a movable joint without data or that is also locked.
    """
    names = _joint_names(joint_names)
    single = isinstance(data, MotionData)
    datas = [data] if single else list(data)
    lock = dict(lock or {})
    covered = {name for d in datas for name in d.joint_names}
    if any(set(d.joint_names) != set(datas[0].joint_names) for d in datas):
        raise ValueError("data: expected pooled motions covering the same joints, got "
                         + " and ".join(sorted({", ".join(d.joint_names) for d in datas})))
    movable = [n for n in names if n in covered and n not in lock] if movable is None \
        else list(movable)
    for what, given in (("movable", movable), ("lock", lock)):
        unknown = [n for n in given if n not in names]
        if unknown:
            raise ValueError(f"{what}: expected joints of the model, got {', '.join(unknown)}")
    if set(movable) & set(lock):
        raise ValueError(f"movable, lock: expected disjoint joints, got "
                         f"{', '.join(sorted(set(movable) & set(lock)))} in both")
    missing = [n for n in movable if n not in covered]
    if missing:
        raise ValueError(f"movable: expected joints the data cover, got {', '.join(missing)} "
                         f"(no column maps onto them)")
    locks, unrecorded = {}, []
    for name in names:
        if name in movable:
            continue
        if name in lock:
            locks[name] = float(lock[name])
        elif name in covered:
            locks[name] = float(np.mean(np.concatenate(
                [d.q[:, d.joint_names.index(name)] for d in datas])))
        else:
            locks[name], _ = 0.0, unrecorded.append(name)
    kept = [name for name in names if name in movable]
    reduced = [d._replace(q=d.q[:, [d.joint_names.index(n) for n in kept]],
                          joint_names=tuple(kept)) for d in datas]
    notices = (f"locked at 0 (no data): {', '.join(unrecorded)}",) if unrecorded else ()
    return locks, reduced[0] if single else reduced, notices


# --- Windows and movement segments ----------------------------------------------------------

def cut_window(data, window, min_samples=2):
    """The samples of ``data`` (MotionData or Clip) with t0 <= t <= t1, on the file's time
    axis (not shifted: ``ioc.inverse.estimate.prepare_trial`` starts the trial at 0).

    window : (t0, t1) s, t0 < t1, inside [times[0], times[-1]] (1e-9 s of slack)
    min_samples : the fewest samples the caller's fit needs (``cmtm ioc``: the control
        points, one per spline coefficient)
    ValueError naming the data and the window otherwise.
    """
    try:
        t0, t1 = (float(t) for t in window)
    except (TypeError, ValueError):
        raise ValueError(f"window: expected (t0, t1) in s, got {window!r}") from None
    times = np.asarray(data.times)
    slack = 1e-9
    if not (np.isfinite(t0) and np.isfinite(t1) and t0 < t1):
        raise ValueError(f"window: expected t0 < t1, finite, got {t0:g}, {t1:g}")
    if t0 < times[0] - slack or t1 > times[-1] + slack:
        raise ValueError(f"window {t0:g},{t1:g}: expected a window inside the time axis "
                         f"[{times[0]:g}, {times[-1]:g}] s of {data.source}")
    keep = (times >= t0 - slack) & (times <= t1 + slack)
    if np.count_nonzero(keep) < min_samples:
        raise ValueError(f"window {t0:g},{t1:g}: expected at least {min_samples} samples (the "
                         f"spline's control points), got {np.count_nonzero(keep)} of "
                         f"{data.source}")
    if isinstance(data, Clip):
        return data._replace(times=times[keep], root_position=data.root_position[keep],
                             rotations={k: R[keep] for k, R in data.rotations.items()})
    return data._replace(times=times[keep], q=np.asarray(data.q)[keep])


SEGMENT_THRESHOLD = 0.05
"""A segment moves at >= 5 % of the motion's peak joint speed: the onset and offset
criterion common in reaching studies (5-10 % of peak velocity); a minimum-jerk movement
crosses it at 5.94 % and 94.06 % of its duration (tests/test_clips.py)."""
SEGMENT_MIN_GAP = 0.1
"""Runs above the threshold separated by less than 0.1 s are one segment (a dip of the
speed in a movement, or noise around the threshold)."""
SEGMENT_MIN_DURATION = 0.1
"""Segments shorter than 0.1 s are dropped (noise spikes, not movements)."""


def segments(data, *, threshold=SEGMENT_THRESHOLD, min_gap=SEGMENT_MIN_GAP,
             min_duration=SEGMENT_MIN_DURATION, joints=None):
    """Movement segments of a recorded motion by speed thresholds: [(t0, t1), ...] in s on
    the file's time axis, in time order; each is a window for ``cut_window`` (--window).

    speed(t_m) = |q'(t_m)|, the Euclidean norm over ``joints`` (default all of the data's)
    of joint velocities by second-order finite differences of the samples (np.gradient, on
    the actual, possibly non-uniform, times). A segment is a run of samples with
    speed >= ``threshold`` x the peak speed (SEGMENT_THRESHOLD); runs closer than
    ``min_gap`` s merge (SEGMENT_MIN_GAP), and segments shorter than ``min_duration`` s are
    dropped (SEGMENT_MIN_DURATION). Differences amplify noise (sigma / dt rad/s): on noisy
    recordings choose a threshold above that level relative to the peak, or segment a
    smoothed motion. A motion that never moves (peak speed 0) has no segments.
    """
    times = np.asarray(data.times, dtype=float)
    names = list(data.joint_names)
    joints = names if joints is None else list(joints)
    unknown = [j for j in joints if j not in names]
    if unknown or not joints:
        raise ValueError(f"joints: expected joints of the data ({', '.join(names)}), got "
                         f"{joints!r}")
    for name, value, low in (("threshold", threshold, 0.0), ("min_gap", min_gap, 0.0),
                             ("min_duration", min_duration, 0.0)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not np.isfinite(value) or value < low or (name == "threshold" and value >= 1):
            raise ValueError(f"{name}: expected a finite number >= 0"
                             f"{' and < 1' if name == 'threshold' else ''}, got {value!r}")
    q = np.asarray(data.q)[:, [names.index(j) for j in joints]]
    speed = np.linalg.norm(np.gradient(q, times, axis=0), axis=1)
    peak = float(speed.max())
    if peak == 0.0:
        return []
    moving = np.flatnonzero(speed >= threshold * peak)
    merged = []
    for run in np.split(moving, np.flatnonzero(np.diff(moving) > 1) + 1):
        t0, t1 = float(times[run[0]]), float(times[run[-1]])
        if merged and t0 - merged[-1][1] < min_gap:
            merged[-1] = (merged[-1][0], t1)
        else:
            merged.append((t0, t1))
    return [(t0, t1) for t0, t1 in merged if t1 - t0 >= min_duration]


# --- DeepMimic motion clips ---------------------------------------------------------------

CLIP_SUFFIXES = (".txt",)
DEEPMIMIC_JOINTS = (("chest", 4), ("neck", 4), ("right_hip", 4), ("right_knee", 1),
                    ("right_ankle", 4), ("right_shoulder", 4), ("right_elbow", 1),
                    ("left_hip", 4), ("left_knee", 1), ("left_ankle", 4),
                    ("left_shoulder", 4), ("left_elbow", 1))
"""The DeepMimic humanoid's joints in frame order with their number of values: a
quaternion (w, x, y, z) of the link's rotation in its parent link's frame for a spherical
joint, an angle (rad) about the parent's z axis for a knee or elbow (pybullet_data's
humanoid/humanoid.urdf: revolute, axis 0 0 1; every joint origin rpy 0, so at rest every
link frame is the world's: y up, x forward, z to the right)."""
DEEPMIMIC_FRAME_LENGTH = 1 + 3 + 4 + sum(n for _, n in DEEPMIMIC_JOINTS)
"""44 values a frame: duration (s), root position (3, m), root quaternion, the joints."""
DEEPMIMIC_HINGE_AXIS = np.array([0.0, 0.0, 1.0])
SINGULARITY_MARGIN_DEG = 5.0
"""A chain's middle angle within 5 deg of +-90 deg is an error: at 90 deg the first and
last axes align and only their sum is determined (a 1 mrad change of the pose moves them by
~1 mrad / cos(beta), 11x at 85 deg)."""
QUATERNION_NOTICE = 1e-3
"""Clip quaternions are normalized (the clips hold some far from unit: 0.42 off in
humanoid3d_kick's right hip); a notice says so when one is more than 1e-3 off."""

HUMAN_CLIP_MAP = {
    "root": ("middle_pelvis_tx", "middle_pelvis_ty", "middle_pelvis_tz",
             "middle_pelvis_rz", "middle_pelvis_rx", "middle_pelvis_ry"),
    "chest": ("middle_thoracic_Z", "middle_thoracic_X", "middle_thoracic_Y"),
    "neck": ("middle_cervical_Z", "middle_cervical_X", "middle_cervical_Y"),
    **{f"{side}_{joint}": tuple(f"{side}_{joint}_{axis}" for axis in axes)
       for side in ("right", "left")
       for joint, axes in (("hip", "ZXY"), ("knee", "Z"), ("ankle", "ZX"),
                           ("shoulder", "ZXY"), ("elbow", "Z"))},
}
"""DeepMimic joint -> example-robot-data's human.urdf joints (kt.human()), parent to child.
The clip's one spine joint (chest) goes onto the thoracic chain, which reproduces the thorax
exactly; the lumbar joints, the clavicles, the forearm rotations (elbow_Y) and the wrists,
which the clip's skeleton lacks, are not mapped (``joint_locks`` locks them at 0, the
clip's rest). The ankles are spherical in the clip and Z-X in the model: their rotation
about the foot's y axis is dropped (a notice gives its size). The root goes onto the
floating base of ``kt.human(floating_base="xyz_zxy")``; a fixed-pelvis model drops it."""


class Clip(NamedTuple):
    """A DeepMimic motion clip (``read_clip``).

    times : (N,) float64 s from 0, the cumulated frame durations
    root_position : (N, 3) float64 m, the pelvis origin in the world (y up)
    rotations : {joint: (N, 3, 3) float64}: "root" the pelvis orientation in the world, every
        other joint its link's rotation in its parent link's frame (knees and elbows about
        z); all frames are the world's at rest
    source : str, the file path; notices : tuple of str
    """
    times: np.ndarray
    root_position: np.ndarray
    rotations: dict
    source: str
    notices: tuple


def read_clip(path):
    """Read a DeepMimic humanoid clip (pybullet_data's ``data/motions/humanoid3d_*.txt``): a
    JSON object whose ``Frames`` hold one list of DEEPMIMIC_FRAME_LENGTH (44) numbers per
    frame, the frame's duration, root position, root quaternion (w, x, y, z), then
    DEEPMIMIC_JOINTS; ``Loop`` and other keys are ignored. Quaternions are normalized.

    Raises ValueError naming the file (and the frame) for anything else.
    """
    path = _path_ending(path, CLIP_SUFFIXES, "a DeepMimic clip")
    try:
        record = json.loads(_read_text(path))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: expected a DeepMimic clip (JSON with 'Frames'), got invalid "
                         f"JSON ({error.msg} at line {error.lineno})") from None
    values = _clip_frames(path, record)
    durations = values[:-1, 0]
    if np.any(durations <= 0):
        k = int(np.argmax(durations <= 0))
        raise ValueError(f"{path}: frame {k}: expected a duration > 0 s, got {durations[k]!r}")
    rotations, notices, column = {}, [], 8
    quaternions = {"root": values[:, 4:8]}
    for name, n in DEEPMIMIC_JOINTS:
        if n == 4:
            quaternions[name] = values[:, column:column + 4]
        else:
            rotations[name] = Rotation.from_rotvec(
                values[:, column, None] * DEEPMIMIC_HINGE_AXIS).as_matrix()
        column += n
    off = []
    for name, quaternion in quaternions.items():
        norm = np.linalg.norm(quaternion, axis=1)
        if np.any(norm <= 1e-6):
            k = int(np.argmax(norm <= 1e-6))
            raise ValueError(f"{path}: frame {k}: {name}: expected a rotation quaternion "
                             f"(w, x, y, z), got norm {norm[k]:.3g}")
        off.append((float(np.max(np.abs(norm - 1))), int(np.argmax(np.abs(norm - 1))), name))
        rotations[name] = Rotation.from_quat(quaternion[:, [1, 2, 3, 0]]).as_matrix()
    worst = max(off)
    if worst[0] > QUATERNION_NOTICE:
        notices.append(f"quaternions normalized: the largest was {worst[0]:.3g} off unit norm "
                       f"({worst[2]}, frame {worst[1]})")
    rotations = {name: rotations[name] for name in ("root", *(n for n, _ in DEEPMIMIC_JOINTS))}
    return Clip(np.r_[0.0, np.cumsum(durations)], values[:, 1:4], rotations, str(path),
                tuple(notices))


def _clip_frames(path, record):
    """(N, 44) float64 of a parsed clip's Frames, checked: N >= 2 lists of 44 finite numbers."""
    frames = record.get("Frames") if isinstance(record, dict) else None
    if not isinstance(frames, list) or len(frames) < 2:
        raise ValueError(f"{path}: expected a JSON object with 'Frames', a list of at least 2 "
                         f"frames, got {type(frames).__name__ if frames is not None else 'none'}")
    for k, frame in enumerate(frames):
        if not isinstance(frame, list) or len(frame) != DEEPMIMIC_FRAME_LENGTH:
            got = len(frame) if isinstance(frame, list) else type(frame).__name__
            raise ValueError(f"{path}: frame {k}: expected {DEEPMIMIC_FRAME_LENGTH} values "
                             f"(duration, root position 3, root quaternion 4, "
                             f"{', '.join(f'{n} {c}' for n, c in DEEPMIMIC_JOINTS)}), got {got}")
        bad = [v for v in frame if isinstance(v, bool) or not isinstance(v, (int, float))
               or not math.isfinite(v)]
        if bad:
            raise ValueError(f"{path}: frame {k}: expected finite numbers, got {bad[0]!r}")
    return np.array(frames, dtype=np.float64)


def clip_motion(clip, model, mapping=None, *, held=False):
    """The joint angles of ``model`` that reproduce a clip's poses: MotionData of the mapped
    joints (model order), on the clip's times.

    mapping : {clip joint: (model joints, ...)} (``read_map``), default HUMAN_CLIP_MAP (less
        the root on a model without those floating-base joints). A clip joint's rotation Q
        (its link in its parent's frame) goes onto a chain of 1-3 revolute model joints that
        meet at one point (each placed at the previous one's frame: no offset, no rotation),
        with mutually orthogonal axes a, b, c (read from the model, signs included): with
        W the chain's rest orientation in the world (the model's placements from the base;
        the clip's frames are the world's at rest) it solves
        W^T Q W = Rot(a, alpha) Rot(b, beta) Rot(c, gamma)     (``chain_angles``),
        alpha and gamma unwrapped over time, beta in [-90, 90] deg. A two-joint chain drops
        gamma about the missing axis c = a x b, a one-joint chain takes the twist about a;
        the notices give the largest rotation dropped. The root's position goes onto
        prismatic joints before its rotation chain (q = axis . (p - origin)).
    ValueError for a chain that is not one, unknown joints, and a middle angle within
    SINGULARITY_MARGIN_DEG of +-90 deg (naming the clip joint, the model joint and the
    frame); with ``held`` (joints that will be locked at their mean, not moved) a notice
    instead.
    """
    model = check_model(model)
    names = tuple(model.joint_names)
    mapping, notices = _clip_mapping(mapping, names)
    notices = list(clip.notices) + notices
    rest = _rest_orientations(model)
    columns = {}
    for clip_joint, joints in mapping.items():
        idx = [names.index(j) for j in joints]
        chain = f"{clip.source}: {clip_joint} onto {', '.join(joints)}"
        _check_chain(model, idx, chain)
        linear = [i for i in idx if model.joint_type[i] == JOINT_PRISMATIC]
        if linear and (clip_joint != "root" or idx[:len(linear)] != linear):
            raise ValueError(f"{chain}: expected revolute joints (prismatic joints take the "
                             f"root's position, before its rotation)")
        if linear:
            columns.update(_root_position(clip, model, linear, rest, chain, notices))
        turning = idx[len(linear):]
        if not turning:
            continue
        Q = clip.rotations[clip_joint]
        W = rest[turning[0]]
        angles, middle, residual = chain_angles(W.T @ Q @ W, model.axis[turning])
        near = _near_singularity(clip, middle, names[turning[min(1, len(turning) - 1)]])
        if near and not held:
            raise ValueError(f"{chain}: {near}; map this joint otherwise or cut the clip "
                             f"before that frame (--window)")
        if near:
            notices.append(f"{clip_joint} (held at its mean): {near}")
        if residual.max() > 1e-9:
            notices.append(f"{clip_joint} onto {', '.join(names[i] for i in turning)}: the "
                           f"pose differs from the clip's by up to "
                           f"{np.rad2deg(residual.max()):.3g} deg (rotation the chain cannot "
                           f"make, dropped)")
        columns.update({names[i]: angles[:, k] for k, i in enumerate(turning)})
    mapped = tuple(name for name in names if name in columns)
    q = np.column_stack([columns[name] for name in mapped])
    return MotionData(clip.times, q, mapped, clip.source, tuple(notices))


def clip_trial(clip, model, mapping=None):
    """A clip on ``model`` for an estimation: (pose, movable), pose a MotionData of every
    joint the clip determines, movable the joints that move: those of ``mapping``
    (``clip_motion``; default HUMAN_CLIP_MAP, all of them). With a map on human.urdf, pose
    also holds the default map's angles of the clip's other joints (checked for the
    singularity only by a notice), so that ``joint_locks`` locks them at the clip's mean
    pose, not at 0: an arm study keeps the trunk as the clip held it."""
    moving = clip_motion(clip, model, mapping)
    if mapping is None:
        return moving, moving.joint_names
    names = tuple(model.joint_names)
    default = {c: joints for c, joints in HUMAN_CLIP_MAP.items() if c not in mapping
               and all(j in names and j not in moving.joint_names for j in joints)}
    if not default:
        return moving, moving.joint_names
    held = clip_motion(clip, model, default, held=True)
    columns = dict(zip(moving.joint_names, moving.q.T)) | dict(zip(held.joint_names, held.q.T))
    joints = tuple(n for n in names if n in columns)
    notices = moving.notices + tuple(n for n in held.notices if n not in moving.notices)
    return (MotionData(clip.times, np.column_stack([columns[n] for n in joints]), joints,
                       clip.source, notices), moving.joint_names)


def _clip_mapping(mapping, names):
    """(the checked clip map, notices): HUMAN_CLIP_MAP (without the root if the model lacks
    its joints) or ``mapping``."""
    clip_joints = ("root", *(n for n, _ in DEEPMIMIC_JOINTS))
    if mapping is None:
        mapping, notices = dict(HUMAN_CLIP_MAP), []
        if not all(j in names for j in mapping["root"]):
            del mapping["root"]
            notices.append("the clip's root (the pelvis pose) is not mapped: the model has "
                           "no floating base")
        missing = [j for joints in mapping.values() for j in joints if j not in names]
        if missing:
            raise ValueError(f"clip map: the default map is human.urdf's (kt.human()); the "
                             f"model lacks {', '.join(missing)}: give a map (--map)")
        return mapping, notices
    unknown = [c for c in mapping if c not in clip_joints]
    if unknown:
        raise ValueError(f"map: expected DeepMimic joints ({', '.join(clip_joints)}), got "
                         f"unknown {', '.join(unknown)}")
    check_map("map", mapping, names)
    return mapping, []


def _rest_orientations(model):
    """W (nv, 3, 3): each joint frame's orientation in the world (base) at q = 0, the
    product of the placement rotations from the base."""
    W = np.empty((model.nv, 3, 3))
    for i, parent in enumerate(model.parent):
        W[i] = (np.eye(3) if parent < 0 else W[parent]) @ model.placement_R[i]
    return W


def _check_chain(model, idx, chain):
    """ValueError unless the joints ``idx`` form a chain parent to child, each placed at the
    previous one's frame, with mutually orthogonal axes, at most three of each type."""
    names = model.joint_names
    for a, b in zip(idx, idx[1:]):
        if model.parent[b] != a or np.any(np.abs(model.placement_p[b]) > 1e-12) \
                or np.any(np.abs(model.placement_R[b] - np.eye(3)) > 1e-12):
            raise ValueError(f"{chain}: expected a chain of joints meeting at one point, "
                             f"parent to child; {names[b]} is not placed at {names[a]}'s frame")
    for kind in (JOINT_REVOLUTE, JOINT_PRISMATIC):
        part = [i for i in idx if model.joint_type[i] == kind]
        axes = model.axis[part]
        if len(part) > 3 or not np.allclose(axes @ axes.T, np.eye(len(part)), atol=1e-9):
            raise ValueError(f"{chain}: expected at most three joints of a kind with mutually "
                             f"orthogonal axes, got {', '.join(names[i] for i in part)}")


def _root_position(clip, model, linear, rest, chain, notices):
    """{prismatic joint: q (N,)} placing the base's child link at the clip's root position."""
    if model.parent[linear[0]] >= 0:
        raise ValueError(f"{chain}: expected the position joints to start at the model's base")
    offset = clip.root_position - model.placement_p[linear[0]]
    directions = np.stack([rest[i] @ model.axis[i] for i in linear])
    if len(linear) < 3:
        left = offset - (offset @ directions.T) @ directions
        notices.append(f"root position: {np.max(np.linalg.norm(left, axis=1)):.3g} m along "
                       f"the axes no joint of {chain.split(' onto ')[1]} moves, dropped")
    return {model.joint_names[i]: offset @ d for i, d in zip(linear, directions)}


def _near_singularity(clip, middle, joint):
    """What happens at the first frame whose middle angle (None: no middle angle) is within
    SINGULARITY_MARGIN_DEG of +-90 deg, or "" if none is."""
    near = np.zeros(0, bool) if middle is None else \
        np.abs(middle) > np.deg2rad(90.0 - SINGULARITY_MARGIN_DEG)
    if not np.any(near):
        return ""
    k = int(np.argmax(near))
    return (f"frame {k} (t = {clip.times[k]:.4g} s): the middle joint {joint} reaches "
            f"{np.rad2deg(middle[k]):.1f} deg, within {SINGULARITY_MARGIN_DEG:g} deg of the "
            f"chain's singularity at +-90 deg, where its other angles are not determined")


def chain_angles(X, axes):
    """Angles of a chain of 1-3 revolute joints with orthonormal axes that make the rotations
    X: (angles (N, k), middle (N,) or None, residual (N,)), rad.

    X : (N, 3, 3) rotation matrices in the chain's first frame; axes : (k, 3) unit, a, b, c.
    k = 3 (Tait-Bryan, intrinsic): X = Rot(a, alpha) Rot(b, beta) Rot(c, gamma). With
    e = a . (b x c) = +-1, X c = e sin(beta) a + cos(beta) (cos(alpha) c - e sin(alpha) b)
    and X^T a = cos(beta) (cos(gamma) a - e sin(gamma) b) + e sin(beta) c, so
        beta  = atan2(e a.Xc, |(b.Xc, c.Xc)|) in [-pi/2, pi/2],
        alpha = atan2(-e b.Xc, c.Xc),   gamma = atan2(-e a.Xb, a.Xa),
    alpha and gamma are then unwrapped along the N rotations (a time series), and
    middle = beta (singular at +-pi/2). k = 2: the same with c = a x b, gamma dropped.
    k = 1: the twist about a, 2 atan2(v.a, w) of X's quaternion (w, v) (swing-twist),
    unwrapped; middle None. residual: the angle of Rot(...)^T X, what the chain cannot make.
    """
    axes = np.asarray(axes, dtype=np.float64)
    k = len(axes)
    if k == 1:
        w, v = _quaternion(X)
        twist = 2.0 * np.arctan2(v @ axes[0], w)
        angles, middle = np.unwrap(np.arctan2(np.sin(twist), np.cos(twist)))[:, None], None
    else:
        a, b = axes[0], axes[1]
        c = axes[2] if k == 3 else np.cross(a, b)
        e = float(a @ np.cross(b, c))
        Xa, Xb, Xc = X @ a, X @ b, X @ c
        middle = np.arctan2(e * (Xc @ a), np.hypot(Xc @ b, Xc @ c))
        alpha = np.unwrap(np.arctan2(-e * (Xc @ b), Xc @ c))
        gamma = np.unwrap(np.arctan2(-e * (Xb @ a), Xa @ a))
        angles = np.stack([alpha, middle, gamma][:k], axis=1)
    made = np.eye(3)
    for axis, angle in zip(axes, angles.T):
        made = made @ Rotation.from_rotvec(angle[:, None] * axis).as_matrix()
    residual = Rotation.from_matrix(np.swapaxes(made, -1, -2) @ X).magnitude()
    return angles, middle, residual


def _quaternion(X):
    """(w (N,), v (N, 3)) unit quaternions of rotation matrices X (N, 3, 3)."""
    quaternion = Rotation.from_matrix(X).as_quat()          # (x, y, z, w)
    return quaternion[:, 3], quaternion[:, :3]
