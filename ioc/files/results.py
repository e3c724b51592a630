"""The files of ``cmtm optimize`` and their reader (DESIGN.md: a contract).

Every file is written atomically (a temporary file in the output folder, then os.replace).

``result.json`` (one JSON object; floats print with full precision and parse back to the
same float64; no NaN or inf: an infinite joint limit is ``null``):

====================  ==========================  ==========================================
key                   type                        meaning
====================  ==========================  ==========================================
schema                int                         1, this layout
status                str                         converged | stalled | max_iterations |
                                                  line_search_failed (ioc.optimize.direct)
iterations            int                         accepted solver steps
solve_seconds         float                       wall time of the solve
model, model_lock     str, {joint: float}         the --model spec as given, the positions of
                                                  the joints fixed (--lock and --joints)
model_sha256          str | null                  sha256 of the model file (null: built-in);
                                                  a reader looks for the file at the path
                                                  as given, then next to the result.json
floating_base         str | null                  --floating-base (null: the base is fixed)
gravity               [float] (3)                 the model's gravity, base frame, m/s^2
joint_names           [str] (nv)                  the model's joints, column order
costs, weights        [str], [float] (n_terms)    sub-cost names and their weights
duration, samples     float (s), int              T and N
degree, knots         int, [float] (n_c + p + 1)  the clamped B-spline's full knot vector
control_points        [[float]] (n_c, nv)         theta.hi, high parts of the double-double
control_points_lo     [[float]] (n_c, nv)         theta.lo: theta = hi + lo exactly; readers
                                                  that ignore lo get the float64 rounding
quadrature            {rule, times, weights}      nodes t_m and weights omega_m of the costs
rest_order            int                         R: q^(1..R) = 0 at both ends (rest)
boundary              str                         rest | data (absent: rest), ioc.optimize.problem
start, goal           [float] (nv)                q(0) and q(T), rad or m; boundary data:
                      | [[float]] (R+1, nv)       the raw stacks q..q^(R) at 0 and T
constraints, penalty  str, float                  exact | penalty, and rho's factor
limits                {lower, upper, multipliers} per joint bounds (null: none) at the N
                                                  uniform nodes; multipliers of the active
                                                  ones: [{time, joint, bound, value}]
terms                 [{name, weight, raw,        raw sub-cost c_i and weighted = weight * raw
                      weighted}]
cost                  float                       sum of the weighted terms (and penalties)
stationarity          {absolute, relative}        KKT residual at the solution
history               [{iteration, mode, cost,    one entry per iteration
                      step, alpha, stationarity}]
versions              {cmtm, numpy, scipy,        installed versions (null: not installed)
                      numba}
====================  ==========================  ==========================================

``trajectory.csv``: a header ``time,<joint>,...`` and N rows at the uniform times
np.linspace(0, T, N), positions in rad (m for prismatic joints), full precision;
``ioc.files.data.read_motion(path, joint_names)`` reads it.

``motion.npz``: ``times`` (N,), ``q`` (N, 4, nv) raw q, q', q'', q''', ``tau`` (N, 2, nv)
raw tau, tau' (gravity included), ``joint_names`` (nv,) str.
"""
import csv
import errno
import importlib.metadata
import json
import os
import secrets
import signal
import tempfile
import threading
from contextlib import contextmanager
from functools import partial
from numbers import Real
from pathlib import Path
from typing import NamedTuple

import numpy as np

import cmtm
from ioc.files.models import locate_model, model_sha256, resolve_model
from ioc.optimize.costs import parse_terms
from ioc.optimize.direct import check_weights
from ioc.optimize.problem import MotionProblem
from ioc.spline.bspline import DD

SCHEMA = 1
RESULT_FILE, TRAJECTORY_FILE, MOTION_FILE = "result.json", "trajectory.csv", "motion.npz"
VERSIONED = ("cmtm", "numpy", "scipy", "numba")


class MotionSamples(NamedTuple):
    """An optimized motion at N uniform times over [0, T] inclusive.

    times : (N,) float64 s; q : (N, 4, nv) raw q..q'''; tau : (N, 2, nv) raw tau, tau';
    joint_names : tuple of nv str.
    """
    times: np.ndarray
    q: np.ndarray
    tau: np.ndarray
    joint_names: tuple


def motion_samples(result):
    """:class:`MotionSamples` of a DirectResult at np.linspace(0, T, N)."""
    problem = result.problem
    times = np.linspace(0.0, problem.spline.duration, problem.samples)
    q = result.sample(times, 3)
    tau = cmtm.inverse_dynamics(problem.model, q, order=1)
    return MotionSamples(times, q, tau, problem.model.joint_names)


# --- result.json --------------------------------------------------------------------------

def result_record(result, model_spec, model_lock, floating_base=None):
    """The result.json object of a DirectResult (table above); ``model_spec``,
    ``model_lock`` ({joint: position}) and ``floating_base`` are what :func:`resolve_model`
    was given (the gravity is the model's)."""
    problem = result.problem
    spline, quadrature = problem.spline, problem.quadrature
    return {
        "schema": SCHEMA, "status": result.status, "iterations": result.iterations,
        "solve_seconds": result.solve_seconds,
        "model": model_spec, "model_lock": dict(model_lock),
        "floating_base": floating_base, "gravity": problem.model.gravity.tolist(),
        "model_sha256": model_sha256(model_spec),
        "joint_names": list(problem.model.joint_names),
        "costs": [term.name for term in problem.terms], "weights": result.weights.tolist(),
        "duration": spline.duration, "samples": problem.samples,
        "degree": spline.degree, "knots": spline.knots.tolist(),
        "control_points": result.theta.hi.tolist(),
        "control_points_lo": result.theta.lo.tolist(),
        "quadrature": {"rule": quadrature.rule, "times": quadrature.times.tolist(),
                       "weights": quadrature.weights.tolist()},
        "rest_order": problem.rest_order,
        "boundary": problem.boundary,
        "start": problem.start.tolist(), "goal": problem.goal.tolist(),
        "constraints": problem.constraints, "penalty": problem.penalty,
        "limits": {"lower": _finite_or_null(problem.lower),
                   "upper": _finite_or_null(problem.upper),
                   "multipliers": result.multipliers},
        "terms": result.terms(), "cost": result.cost,
        "stationarity": {"absolute": result.stationarity_abs,
                         "relative": result.stationarity_rel},
        "history": result.history,
        "versions": versions(),
    }


def _finite_or_null(values):
    return [float(v) if np.isfinite(v) else None for v in values]


def versions():
    """Installed versions of cmtm, numpy, scipy and numba (None: not installed)."""
    return {name: _version(name) for name in VERSIONED}


def _version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def to_json(record):
    """One line of JSON; floats round-trip (repr); NaN or inf is a ValueError."""
    return json.dumps(record, allow_nan=False)


# --- writing ------------------------------------------------------------------------------

def write_atomically(path, write, binary=False):
    """Create or replace ``path`` whole: ``write(file)`` fills a temporary file in the same
    folder (text: UTF-8, no newline translation), which then replaces ``path``. A process
    killed by SIGKILL while writing leaves the temporary file (TEMPORARY_GLOB), which the
    next run into that --out removes (:func:`output_folder`)."""
    path = Path(path)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(TOKEN_BYTES)}.tmp")
    try:
        with open(temp, "xb") if binary else open(temp, "x", encoding="utf-8",
                                                   newline="") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


TOKEN_BYTES = 6
TEMPORARY_GLOB = ".*." + "[0-9a-f]" * (2 * TOKEN_BYTES) + ".tmp"
"""The name of :func:`write_atomically`'s temporary files: a dot, the file's name, its
random token of TOKEN_BYTES bytes in hex, .tmp (nothing else a user keeps there)."""

LOCKED_OUT = ("another cmtm run is writing into it; wait for it to finish or choose "
              "another --out")


@contextmanager
def output_folder(out):
    """Make ``out`` ready before any work, hold it for the run and yield it (None: no
    folder, nothing done). ValueError (nothing written) when ``out`` names a file, cannot
    be created, is not writable (a file is created in it and removed), or another run
    holds it: the folder is locked (``flock`` on the folder itself, released when the run
    ends, also when its process is killed) so that two runs never write one folder at
    once. A folder created here is removed again if the run fails or is stopped before
    writing anything into it. Temporary files that a killed run left in ``out`` or its
    trial folders are removed once the lock is held (no other run writes them then)."""
    if out is None:
        yield out
        return
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out: expected a folder, got the file {out}")
    created = [folder for folder in (out, *out.parents) if not folder.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"--out {out}: cannot create the folder ('{error.strerror}')") \
            from None
    with _locked(out):
        try:
            _check_writable(out)
            _remove_left_temporaries(out)
            yield out
        except BaseException:
            for folder in created:                     # the deepest first, while empty
                if any(folder.iterdir()):
                    break
                folder.rmdir()
            raise


def _remove_left_temporaries(out):
    """Remove :func:`write_atomically`'s temporary files in ``out`` and its subfolders one
    level down (a batch's trial folders), left there by a run killed while writing."""
    for temp in (*out.glob(TEMPORARY_GLOB), *out.glob(f"*/{TEMPORARY_GLOB}")):
        temp.unlink(missing_ok=True)


def _check_writable(folder):
    """ValueError unless a file can be created in ``folder`` (mode bits say little to
    root or on a read-only mount)."""
    try:
        handle, name = tempfile.mkstemp(prefix=".cmtm-probe-", dir=folder)
    except OSError as error:
        raise ValueError(f"--out {folder}: expected a folder this run can write into, got "
                         f"'{error.strerror}'") from None
    os.close(handle)
    os.unlink(name)


@contextmanager
def _locked(folder):
    """An exclusive lock on ``folder`` while the context runs; ValueError if another
    process (or another open of this process) holds it. Where the platform has no
    ``fcntl`` (Windows) the folder is not locked."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    handle = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise ValueError(f"--out {folder}: {LOCKED_OUT}") from None
        yield
    finally:
        os.close(handle)


@contextmanager
def signals_deferred():
    """Hold SIGINT and SIGTERM back while the context runs (a set of files that belong
    together is written whole) and deliver them when it ends. In a thread other than the
    main one, where signals cannot be handled, it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []
    wanted = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, lambda number, frame: received.append(number))
                for number in wanted}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(received):
            signal.raise_signal(number)


def write_result(out_dir, record, motion):
    """Write result.json, trajectory.csv and motion.npz into ``out_dir`` (created if
    needed); returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / name for name in (RESULT_FILE, TRAJECTORY_FILE, MOTION_FILE)]
    write_atomically(paths[0], lambda file: file.write(to_json(record) + "\n"))
    write_atomically(paths[1], partial(_write_trajectory, motion=motion))
    write_atomically(paths[2], partial(_write_motion, motion=motion), binary=True)
    return paths


def _write_trajectory(file, motion):
    """trajectory.csv; its header quoted whole when a joint name holds a carriage return,
    which Python's csv writer leaves unquoted with a newline line end but its reader (and
    others) split the row at."""
    header = ("time",) + tuple(motion.joint_names)
    quoting = csv.QUOTE_ALL if any("\r" in name for name in header) else csv.QUOTE_MINIMAL
    csv.writer(file, lineterminator="\n", quoting=quoting).writerow(header)
    csv.writer(file, lineterminator="\n").writerows(
        np.column_stack([motion.times, motion.q[:, 0]]).tolist())


def _write_motion(file, motion):
    np.savez(file, times=motion.times, q=motion.q, tau=motion.tau,
             joint_names=np.array(motion.joint_names, dtype=str))


# --- reading ------------------------------------------------------------------------------

def load_result(path, costs=None):
    """Rebuild a ``cmtm optimize`` result from its result.json (or the folder holding it).

    Returns (model, problem, weights, theta, record): the CompiledTree of the recorded model
    spec, lock, floating base and gravity (files without the last two: a fixed base and the
    model's own gravity; the model file found by ``ioc.files.models.locate_model``), the exact
    MotionProblem (same costs, knots, quadrature, boundary conditions, limits, constraints
    and penalty; with ``costs``, those costs instead: the candidates of a hypothesis test),
    the recorded weights (one per recorded cost) float64, the control points
    theta = DD(hi, lo) (n_c, nv) and the parsed record.
    ValueError naming the file if it is not such a result or no longer fits its model.
    """
    path, record = _result_record(path)

    def get(*keys):
        return _field(record, keys, path)

    spec = locate_model(get("model"), get("model_sha256") if "model_sha256" in record
                        else None, path.parent)
    model = resolve_model(spec, get("model_lock"), record.get("floating_base"),
                          record.get("gravity"))
    if list(model.joint_names) != get("joint_names"):
        raise ValueError(f"{path}: expected joints {get('joint_names')} of model "
                         f"{get('model')!r}, the model now has {list(model.joint_names)}")
    theta = DD(_floats(get("control_points"), "control_points", path),
               _floats(get("control_points_lo"), "control_points_lo", path))
    if theta.hi.ndim != 2 or theta.hi.shape[1] != model.nv or theta.lo.shape != theta.hi.shape:
        raise ValueError(f"{path}: expected control_points and control_points_lo of shape "
                         f"(n_c, {model.nv}), got {theta.hi.shape} and {theta.lo.shape}")
    limits = (_bounds(get("limits", "lower"), -np.inf, path),
              _bounds(get("limits", "upper"), np.inf, path))
    problem = MotionProblem(
        model, get("costs") if costs is None else costs, duration=get("duration"),
        samples=get("samples"),
        degree=get("degree"), control_points=theta.hi.shape[0], start=get("start"),
        goal=get("goal"), rest_order=get("rest_order"), integration=get("quadrature", "rule"),
        limits=limits, constraints=get("constraints"), knots=get("knots"),
        penalty=get("penalty"), boundary=record.get("boundary", "rest"))
    n_recorded = len(problem.terms) if costs is None else len(parse_terms(get("costs"), model))
    weights = check_weights(get("weights"), n_recorded)
    return model, problem, weights, theta, record


def result_costs(path):
    """(model, model_lock, costs, floating_base) recorded in a result.json (or the folder
    holding it): what its problem's cost terms depend on, read without rebuilding the
    problem. ValueError naming the file as :func:`load_result`."""
    path, record = _result_record(path)
    return (*(_field(record, (key,), path) for key in ("model", "model_lock", "costs")),
            record.get("floating_base"))


def _result_record(path):
    """(the result.json, its parsed record) of a result.json or the folder holding it."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULT_FILE
    return path, _read_json(path)


def _read_json(path):
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"{path}: expected a result.json of cmtm optimize, "
                         f"could not read it ({error.strerror})") from None
    record = parse_json(text, path)
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise ValueError(f"{path}: expected a cmtm optimize result of schema {SCHEMA}, got "
                         f"{record.get('schema') if isinstance(record, dict) else record!r}")
    return record


def parse_json(text, path):
    """The JSON value of ``text``; ValueError naming ``path`` for text that is not JSON
    (or nests too deeply for the parser)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: expected JSON, got {error}") from None
    except RecursionError:
        raise ValueError(f"{path}: expected JSON of a cmtm file, got values nested too "
                         f"deeply to parse") from None


FIELD_TYPES = {
    "model": str, "model_sha256": (str, type(None)), "model_lock": dict, "joint_names": list,
    "costs": (list, str), "weights": list, "duration": Real, "samples": int, "degree": int,
    "knots": list, "control_points": list, "control_points_lo": list, "quadrature": dict,
    "quadrature.rule": str, "rest_order": int, "start": (list, Real), "goal": (list, Real),
    "constraints": str, "penalty": Real, "limits": dict, "limits.lower": list,
    "limits.upper": list}
"""The JSON types of the result.json keys that :func:`load_result` reads."""


def _field(record, keys, path):
    """record[keys[0]][keys[1]]...; ValueError naming the key if it is missing or of
    another type than FIELD_TYPES says."""
    value = record
    for depth, key in enumerate(keys):
        name = ".".join(keys[:depth + 1])
        if not isinstance(value, dict) or key not in value:
            raise ValueError(f"{path}: expected the key {name!r} of a cmtm optimize result, "
                             f"found none")
        value = value[key]
        kind = FIELD_TYPES.get(name, object)
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not object:
            raise ValueError(f"{path}: {name}: expected {_type_names(kind)}, got "
                             f"{type(value).__name__}")
    return value


def _type_names(kind):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({"str": "a string", "dict": "an object", "list": "a list",
                        "int": "an integer", "Real": "a number", "NoneType": "null"}
                       [k.__name__] for k in kinds)


def _floats(values, name, path):
    """float64 array of a JSON list of numbers; ValueError naming the key otherwise."""
    try:
        return np.array(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{path}: {name}: expected numbers, got "
                         f"{json.dumps(values)[:60]}") from None


def _bounds(values, infinite, path):
    """A per-joint bound list with null for ``infinite``."""
    return _floats([infinite if v is None else v for v in values], "limits", path)
