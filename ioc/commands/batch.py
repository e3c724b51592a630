"""The work of ``cmtm ioc``: motion inputs, one trial, pooled trials and batches.

A trial is one motion file: a ``cmtm optimize`` result.json (an exact optimum: inverse KKT,
ioc.inverse.inverse_kkt) or measured joint angles (CSV, .mot, .sto read by
ioc.files.data.read_motion: the output-error estimator of ioc.inverse.estimate by default,
or inverse KKT on the fitted motion). Pooled trials share one weight vector
(ioc.inverse.estimate.estimate_weights).

A batch runs its trials in parallel with joblib: the loky process backend (``jobs=1``
runs them one after the other in this process), or Dask's joblib backend
(``backend="dask"``: the optional ``dask`` extra, ``pip install 'cmtm[dask]'``) on the
scheduler at ``scheduler`` (``dask scheduler`` and ``dask worker ADDRESS`` on machines that
can import cmtm and read the motion files; no address: a local cluster). Each trial's
weights.json is written atomically here, in the calling process, as the trial finishes,
so an interrupted batch keeps its finished trials and a rerun into the same folder skips
them (when they were made with the same estimation settings from the same input: its
sha256, and that of the model file).

Every trial runs with BLAS on one thread (threadpoolctl), in this process as in loky's or
Dask's workers: OpenBLAS's result depends on its thread count (the smoothing fit of 200
control points differs by 5e-11 between one and two threads), and loky starts its workers
with one thread each on two cores, so a serial, a loky and a Dask run give the same bits.
Workers on this machine ignore Ctrl-C (the batch process stops them) and exit within
WATCH_SECONDS when the batch process is gone, even killed (:func:`worker_setup`).
"""
import glob
import inspect
import logging
import os
import signal
import socket
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import joblib
import numba
import numpy as np
from tqdm import tqdm

import cmtm
from ioc._blas import single_threaded_blas
from ioc.commands.messages import one_line, recorded_warnings
from ioc.files.data import (CLIP_SUFFIXES, CSV_SUFFIXES, STORAGE_SUFFIXES, check_map, clip_trial,
                            cut_window, joint_locks, motion_columns, read_clip, read_map,
                            read_mapped, read_motion)
from ioc.files.models import file_sha256 as sha256
from ioc.files.models import model_lock, model_sha256, resolve_model
from ioc.files.results import RESULT_FILE, load_result, result_costs
from ioc.files.weights_io import (SUMMARY_FILE, WEIGHTS_FILE, data_fields, kkt_fields, motion_entry,
                                  named, read_weights, summary_row, weights_record, write_summary,
                                  write_weights)
from ioc.inverse.estimate import (bootstrap_weights, estimate_weights, kkt_stationarity,
                                  prepare_trial, residual)
from ioc.inverse.inverse_kkt import recover_weights
from ioc.optimize.costs import parse_terms
from ioc.optimize.direct import solve
from ioc.optimize.problem import MotionProblem, _limits

DATA_SUFFIXES = CSV_SUFFIXES + STORAGE_SUFFIXES + CLIP_SUFFIXES
REOPTIMIZED_SAMPLES = 201
"""Uniform times at which a result.json's re-optimized motion is compared with its own."""
WATCH_SECONDS = 0.5
"""How often a worker checks that the batch process that started it still runs."""


@dataclass(frozen=True)
class Settings:
    """The options of ``cmtm ioc``; None: not given (the default of
    ioc.inverse.estimate.prepare_trial, or what a result.json records).

    costs : cost names (None: a result.json's own); lock : (joint, position) pairs;
    floating_base, gravity (3 numbers), joints (names kept movable, the others fixed at
    their mean over the data unless locked): the model options; limits : "model" |
    "none" | (lo, hi); noise : sigma in the unit of the angles (deg with ``degrees``);
    bootstrap : number of bootstrap samples (0: none); boundary : "rest" | "data"
    (ioc.optimize.problem); map : a map file (ioc.files.data.read_map); window : (t0, t1) s
    on the files' time axis. The run options (pool, jobs, backend, scheduler) do not change
    a trial's weights.
    """
    costs: object
    model: object = None
    lock: tuple = ()
    floating_base: object = None
    gravity: object = None
    joints: object = None
    estimator: object = None
    integration: object = None
    samples: object = None
    degree: object = None
    control_points: object = None
    rest_order: object = None
    limits: object = None
    degrees: bool = False
    noise: object = None
    reoptimize: bool = False
    bootstrap: int = 0
    pool: bool = False
    jobs: object = None
    backend: str = "loky"
    scheduler: object = None
    boundary: object = None
    map: object = None
    window: object = None

    RUN_OPTIONS = ("pool", "jobs", "backend", "scheduler")
    PROBLEM_OPTIONS = ("integration", "samples", "degree", "control_points", "rest_order",
                       "boundary")

    def record(self):
        """The settings as a JSON object."""
        out = asdict(self)
        out.update(costs=None if self.costs is None else list(self.costs),
                   lock=dict(self.lock),
                   limits=list(self.limits) if isinstance(self.limits, tuple) else self.limits,
                   map=None if self.map is None else str(self.map),
                   window=None if self.window is None else list(self.window),
                   gravity=None if self.gravity is None else list(self.gravity),
                   joints=None if self.joints is None else list(self.joints))
        return out

    def estimation(self):
        """record() without the run options: what a finished trial must share to be
        skipped."""
        return {k: v for k, v in self.record().items() if k not in self.RUN_OPTIONS}

    def problem_options(self):
        """The given spline and quadrature options, keywords of prepare_trial."""
        return {k: getattr(self, k) for k in self.PROBLEM_OPTIONS if getattr(self, k) is not None}

    @property
    def noise_radians(self):
        """sigma in rad (None: not given)."""
        return None if self.noise is None else \
            float(np.deg2rad(self.noise) if self.degrees else self.noise)


# --- inputs -------------------------------------------------------------------------------

def is_result(path):
    """Whether ``path`` names a ``cmtm optimize`` result.json (else measured data)."""
    return Path(path).name == RESULT_FILE


def _is_motion_file(path):
    return path.is_file() and (is_result(path) or path.suffix.lower() in DATA_SUFFIXES)


def expand_motion(specs):
    """The trial files of ``--motion``: files as given; a folder's result.json if it holds
    one (a ``cmtm optimize`` folder), else its *.csv, *.mot, *.sto and *.txt (DeepMimic
    clip) files, sorted; the motion files and folders a glob pattern (with * ? or [)
    matches. ValueError for a name that does not exist, or a folder or pattern without
    motion files."""
    paths = []
    for spec in specs:
        if any(c in spec for c in "*?["):
            found = [p for m in sorted(glob.glob(spec)) for p in _motion_files(Path(m))]
        elif Path(spec).is_dir():
            found = _motion_files(Path(spec))
        elif Path(spec).exists():
            found = [Path(spec)]
        else:
            raise ValueError(f"--motion: expected a file, folder or pattern, got {spec!r}, "
                             f"which does not exist")
        if not found:
            raise ValueError(f"--motion: expected *.csv, *.mot, *.sto, *.txt or result.json "
                             f"files in {spec!r}, found none")
        paths += found
    return list(dict.fromkeys(paths))


def _motion_files(path):
    """A folder's motion files (see expand_motion); a file: itself if it is one."""
    if not path.is_dir():
        return [path] if _is_motion_file(path) else []
    if (path / RESULT_FILE).is_file():
        return [path / RESULT_FILE]
    return sorted(p for p in path.iterdir() if _is_motion_file(p))


def trial_names(paths):
    """Each trial's name (its output folder): the file's stem, or for a result.json its
    folder's name; ValueError if two trials would share one (a name that cannot be a
    folder of --out is refused when the trial runs: :func:`unusable_name`)."""
    names = [p.resolve().parent.name if is_result(p) else p.stem for p in paths]
    seen = {}
    for name, path in zip(names, paths):
        if name in seen:
            raise ValueError(f"--motion: {seen[name]} and {path} would share the trial name "
                             f"{name!r} (their output folder); rename one")
        seen[name] = path
    return names


def unusable_name(name):
    """Why the trial name ``name`` cannot name its folder of --out, or None: it must be a
    plain name inside --out (not empty, '.' or '..'), not hidden (the batch's temporary
    files start with a dot) and not the batch's summary file."""
    if name in ("", ".", "..") or name.startswith("."):
        return f"expected a name that is a folder inside --out, got {name!r}"
    if name.lower() == SUMMARY_FILE:
        return f"expected a name other than the batch's {SUMMARY_FILE}, got {name!r}"
    return None


def batch_costs(paths, settings):
    """The cost names of the batch's summary columns: --costs, or without it (result.json
    inputs) every cost that the readable results record, in order of appearance."""
    if settings.costs is not None:
        return list(settings.costs)
    names = []
    for path in paths:
        try:
            names += [name for name in result_costs(path)[2] if isinstance(name, str)]
        except ValueError:
            pass                                        # its trial reports the error
    return list(dict.fromkeys(names))


def check_inputs(paths, settings):
    """ValueError for options that do not fit the inputs, before any work: the estimator,
    --pool, --bootstrap, --noise and --degrees against result.json inputs, the backend, a
    model for data files, and the costs and spline options on the model. Returns the cost
    terms of --costs on --model as checked (None without --model)."""
    results = [p for p in paths if is_result(p)]
    if results and settings.estimator == "data":
        raise ValueError(f"--estimator data: expected measured motions (CSV, .mot, .sto), "
                         f"got the cmtm optimize result {results[0]} (use kkt)")
    if results and (settings.noise is not None or settings.degrees):
        raise ValueError(f"--noise, --degrees: apply to measured motions, got the cmtm "
                         f"optimize result {results[0]}")
    kkt = f"the cmtm optimize result {results[0]}" if results else \
        "--estimator kkt" if settings.estimator == "kkt" else None
    if results and (settings.map, settings.window, settings.boundary) != (None, None, None):
        raise ValueError(f"--map, --window, --boundary: apply to measured motions, got the "
                         f"cmtm optimize result {results[0]}")
    if settings.pool and kkt:
        raise ValueError(f"--pool: pools measured motions under the data estimator, got {kkt}")
    if settings.bootstrap and kkt:
        raise ValueError(f"--bootstrap: applies to the data estimator only, got {kkt}")
    if settings.scheduler is not None and settings.backend != "dask":
        raise ValueError("--scheduler: applies to --backend dask only")
    if settings.backend == "dask":
        dask_client()
    if settings.model is None and len(results) < len(paths):
        raise ValueError("--model: required for measured motions (CSV, .mot, .sto), got none")
    if results and settings.joints is not None:
        raise ValueError(f"--joints: applies to measured motions, got the cmtm optimize "
                         f"result {results[0]} (its model_lock holds its fixed joints)")
    if settings.costs is None and len(results) < len(paths):
        raise ValueError("--costs: required for measured motions (CSV, .mot, .sto), got none "
                         "(a result.json defaults to its recorded costs)")
    if settings.model is None:
        return None
    full = _full_model(settings)
    if settings.costs is None:
        return None
    within_limits = {name: float(np.clip(0.0, lower, upper)) for name, lower, upper
                     in zip(full.joint_names, full.q_lower, full.q_upper)}
    model = _subset_model(settings, within_limits)
    problem = MotionProblem(model, settings.costs, **settings.problem_options(), limits="none")
    _limits(model, settings.limits or "model")
    if settings.map is not None:
        check_map(settings.map, read_map(settings.map),
                  _full_model(settings, lock={}).joint_names)
    return problem.terms


# --- one trial ----------------------------------------------------------------------------

@single_threaded_blas
def run_trial(path, settings):
    """(weights.json record, notices) of one motion file; ValueError naming the file for
    anything wrong with it."""
    path = Path(path)
    if is_result(path):
        with naming(path):
            return _from_result(path, settings)
    return run_pooled([path], settings)


@single_threaded_blas
def run_pooled(paths, settings):
    """(weights.json record, notices) of measured motions that share the weights."""
    model, lock, trials, notices = _read_trials([Path(path) for path in paths], settings)
    return _estimate(model, lock, trials, settings), notices


def _full_model(settings, lock=None):
    """The model of --model, --floating-base, --gravity and ``lock`` (default --lock's),
    before --joints and the data's locks."""
    return resolve_model(settings.model, settings.lock if lock is None else lock,
                         settings.floating_base, settings.gravity)


def _subset_model(settings, positions):
    """The model of the settings with, for --joints, the other joints fixed at
    ``positions`` {name: value} unless --lock gives them (ioc.files.models.model_lock)."""
    lock = model_lock(settings.model, settings.lock, settings.floating_base, settings.joints,
                      positions)
    return _full_model(settings, lock)


def _read_trials(paths, settings):
    """(model, its locked joints {name: position}, ioc.inverse.estimate.Trials, notices) of data
    files that share one model (:func:`_model_and_data`); a file's errors name it."""
    model, locks, datas, notices = _model_and_data(paths, settings)
    trials = []
    for path, data in zip(paths, datas):
        with naming(path):
            if not settings.degrees:
                _suggest_degrees(data, model, settings.limits or "model")
            trials.append(prepare_trial(model, settings.costs, data,
                                        limits=settings.limits or "model",
                                        noise=settings.noise_radians,
                                        **settings.problem_options()))
    return model, locks, trials, notices


def _model_and_data(paths, settings):
    """(model, its locked joints {name: position}, [MotionData] of its joints, notices) of
    data files that share one model. Each file is read on the model of --model with
    nothing locked (a table: its columns of the model's joints, or through --map; a
    DeepMimic clip through ioc.files.data.clip_trial) and cut to --window. The joints that stay
    movable are --joints, else every joint the data cover, less --lock's; the others are
    locked (ioc.files.data.joint_locks: at --lock's value, else at their mean over the samples of
    all the files, else at 0 where no file covers them, as ``cmtm optimize --joints``
    writes its trajectory.csv)."""
    geometry = _full_model(settings, lock={})
    mapping = None if settings.map is None else read_map(settings.map)
    if mapping is None and not any(_is_clip(path) for path in paths):
        names = _table_joints(paths, geometry.joint_names, settings)
        read = _each_file(paths, lambda path: _table(path, names, settings))
    else:
        read = _each_file(paths, lambda path: _mapped(path, geometry, mapping, settings))
    lock = dict(settings.lock)
    movable = settings.joints if settings.joints is not None \
        else [name for name in read[0][1] if name not in lock]
    locks, datas, extra = joint_locks(geometry.joint_names, [data for data, _ in read],
                                      movable=movable, lock=lock)
    notices = tuple(f"{data.source}: {notice}" for data in datas for notice in data.notices)
    return _full_model(settings, locks), locks, datas, notices + extra


def _table_joints(paths, joint_names, settings):
    """The joints read from motion tables whose columns carry model joint names: every joint
    of ``joint_names`` not locked by --lock; with --joints, those and the other joints that
    every file has a column of."""
    names = [name for name in joint_names if name not in dict(settings.lock)]
    if settings.joints is None:
        return names
    present = set.intersection(*_each_file(paths, lambda path: set(motion_columns(path))))
    return [name for name in names if name in settings.joints or name in present]


def _table(path, names, settings):
    """(MotionData of the columns ``names``, cut to --window, ``names``) of a motion table."""
    data = read_motion(path, names, True if settings.degrees else None)
    return _windowed(data, settings), names


def _each_file(paths, read):
    """[read(path) for path in paths], each file's errors naming it (:func:`naming`)."""
    out = []
    for path in paths:
        with naming(path):
            out.append(read(path))
    return out


def _is_clip(path):
    return Path(path).suffix.lower() in CLIP_SUFFIXES


def _mapped(path, geometry, mapping, settings):
    """(MotionData, the joints that move) of a clip or of a table read through ``mapping``,
    cut to --window, on the model ``geometry`` (nothing locked)."""
    if not _is_clip(path):
        data = read_mapped(path, geometry.joint_names, mapping,
                           True if settings.degrees else None)
        return _windowed(data, settings), data.joint_names
    if settings.degrees:
        raise ValueError(f"{path}: --degrees: a DeepMimic clip holds quaternions and "
                         f"radians")
    clip = read_clip(path)
    if settings.window is not None:
        clip = cut_window(clip, settings.window, _fewest_samples(settings))
    return clip_trial(clip, geometry, mapping)


def _windowed(data, settings):
    """``data`` cut to --window (as it is without one)."""
    return data if settings.window is None else \
        cut_window(data, settings.window, _fewest_samples(settings))


def _fewest_samples(settings):
    """Samples a window must hold: one per control point of the fit."""
    return settings.control_points or \
        inspect.signature(prepare_trial).parameters["control_points"].default


@contextmanager
def naming(path):
    """ValueError and OSError inside become a ValueError whose message names ``path``."""
    try:
        yield
    except (ValueError, OSError) as error:
        raise ValueError(named_error(path, error)) from None


def named_error(path, error):
    """One line for ``error`` that starts with ``path`` (unless it names it already);
    exceptions other than ValueError and OSError are named as internal errors."""
    text = one_line(error)
    if not isinstance(error, (ValueError, OSError)):
        text = f"internal error: {type(error).__name__}: {text}"
    return text if str(path) in text else f"{path}: {text}"


def _suggest_degrees(data, model, limits):
    """ValueError suggesting --degrees when the angles read as radians leave the joint
    limits by more than a turn (2 pi: implausible for a joint with limits) and the same
    numbers read as degrees (1/57.3 of them) lie within them."""
    lower, upper = _limits(model, limits)
    outside = (data.q < lower) | (data.q > upper)
    radians = np.deg2rad(data.q)
    if np.any(np.abs(data.q[outside]) > 2 * np.pi) \
            and np.all((radians >= lower) & (radians <= upper)):
        row, joint = np.argwhere(outside)[0]
        raise ValueError(f"{model.joint_names[joint]} reaches {data.q[row, joint]:.6g} at "
                         f"t = {data.times[row]:.4g} s, outside its limits "
                         f"[{lower[joint]:g}, {upper[joint]:g}] rad; read as degrees the "
                         f"angles lie within them: add --degrees (then --noise is in "
                         f"degrees too)")


def _estimate(model, lock, trials, settings):
    """weights.json record of measured trials, by the data estimator or inverse KKT;
    ``model_lock`` records every joint locked to build ``model`` from --model (--lock's
    and those the data do not move), so that the record rebuilds it."""
    estimator = _kkt_on_fit if settings.estimator == "kkt" else _maximum_likelihood
    fields, extra = estimator(trials, settings)
    return weights_record(fields, model=settings.model, joint_names=model.joint_names,
                          sources=[t.name for t in trials], settings=settings.record(),
                          model_lock=lock,
                          fit_rms=[named(model.joint_names, t.fit.fit_rms) for t in trials],
                          floating_base=settings.floating_base, gravity=model.gravity,
                          source_sha256=[sha256(t.name) for t in trials],
                          model_sha256=model_sha256(settings.model), **extra)


def _kkt_on_fit(trials, settings):
    """(estimator keys, extra keys) of inverse KKT on one trial's fitted motion."""
    trial, = trials
    kkt = recover_weights(trial.problem, trial.theta)
    if not settings.reoptimize:
        return kkt_fields(kkt), {"motions": [_trial_motion(trial, trial.theta, "fit")]}
    theta = solve(trial.problem, kkt.weights, theta0=trial.theta).theta
    rms = float(np.sqrt(np.mean(residual(trial, theta) ** 2)))
    return kkt_fields(kkt), {"reoptimized_rms": [rms],
                             "motions": [_trial_motion(trial, theta, "reoptimized")]}


def _trial_motion(trial, theta, kind):
    """The ``motions`` entry (ioc.files.weights_io.motion_entry) of a measured trial."""
    return motion_entry(trial.name, trial.times, trial.q, trial.problem.spline, theta, kind)


def _maximum_likelihood(trials, settings):
    """(estimator keys, extra keys) of the data estimator on trials sharing the weights.
    Its stationarity is that of the optimal motions for the estimated weights (each
    trial's problem holds its estimated start and goal), a measure of the solves behind
    the estimate; the fitted motion's own KKT residual measures the noise of the data,
    not a convergence. reoptimized_rms: those motions against the data, per trial."""
    noise = settings.noise_radians
    est = estimate_weights(trials, noise=noise)
    raw = sum(t.problem.evaluate(theta, est.weights).costs for t, theta in zip(trials, est.thetas))
    stat = np.max([kkt_stationarity(t.problem, theta, est.weights)
                   for t, theta in zip(trials, est.thetas)], axis=0)
    bootstrap = None
    if settings.bootstrap:
        std, ci95, _ = bootstrap_weights(trials, est, settings.bootstrap, seed=0, noise=noise)
        bootstrap = (std, ci95, settings.bootstrap)
    extra = {"reoptimized_rms": est.data_rms(trials),
             "motions": [_trial_motion(trial, theta, "optimal")
                         for trial, theta in zip(trials, est.thetas)]}
    return data_fields(est, raw, stat, bootstrap), extra


def _from_result(path, settings):
    """(weights.json record, notices) of a ``cmtm optimize`` result: inverse KKT on its
    motion, for its recorded costs or for the candidate costs of --costs (a hypothesis
    test: the stationarity says whether they explain the optimum; true_weights and
    l1_error where they include the recorded costs, whose weights are the truth and the
    others' zero)."""
    model, problem, weights, theta, record = load_result(path, costs=settings.costs)
    _check_recorded(path, settings, model, problem, record)
    kkt = recover_weights(problem, theta)
    recorded = dict(zip(record_cost_names(record, model), weights / weights.sum()))
    extra, notices = {}, ()
    if set(recorded) <= set(kkt.names):
        true = np.array([recorded.get(name, 0.0) for name in kkt.names])
        extra = {"true_weights": named(kkt.names, true),
                 "l1_error": float(np.sum(np.abs(kkt.weights - true)))}
    else:
        notices = (f"{path}: the candidate costs leave out recorded ones "
                   f"({', '.join(sorted(set(recorded) - set(kkt.names)))}); the "
                   f"stationarity {kkt.residual_rel:.2e} says how well they explain this "
                   f"optimum (about 1e-12 where they do)",)
    motion, kind = theta, "recorded"
    if settings.reoptimize:
        motion, kind = solve(problem, kkt.weights, theta0=theta).theta, "reoptimized"
        times = np.linspace(0.0, problem.spline.duration, REOPTIMIZED_SAMPLES)
        change = problem.spline.evaluate(motion, times, 0) \
            - problem.spline.evaluate(theta, times, 0)
        extra["reoptimized_rms"] = [float(np.sqrt(np.mean(change ** 2)))]
    times = np.linspace(0.0, problem.spline.duration, problem.samples)
    extra["motions"] = [motion_entry(path, times, problem.spline.evaluate(theta, times, 0)[:, 0],
                                     problem.spline, motion, kind)]
    return weights_record(kkt_fields(kkt), model=record["model"], joint_names=model.joint_names,
                          sources=[path], fit_rms=None, settings=settings.record(),
                          model_lock=record["model_lock"],
                          floating_base=record.get("floating_base"), gravity=model.gravity,
                          source_sha256=[sha256(path)], model_sha256=record.get("model_sha256"),
                          **extra), notices


def record_cost_names(record, model):
    """The cost names a result.json records, parsed as its problem parses them."""
    return [term.name for term in parse_terms(record["costs"], model)]


def _check_recorded(path, settings, model, problem, record):
    """ValueError if a given option differs from what the result.json records."""
    recorded = {"model": record["model"], "lock": record["model_lock"],
                "floating_base": record.get("floating_base"),
                "gravity": model.gravity.tolist(),
                "integration": problem.quadrature.rule,
                "samples": problem.samples, "degree": problem.spline.degree,
                "control_points": problem.spline.n_control, "rest_order": problem.rest_order}
    given = settings.record()
    for key, value in recorded.items():
        if given[key] not in (None, {}) and given[key] != value:
            raise ValueError(f"{path}: --{key.replace('_', '-')} {given[key]} differs from the "
                             f"recorded {value}")
    if settings.limits is not None:
        lower, upper = _limits(model, settings.limits)
        if not (np.array_equal(lower, problem.lower) and np.array_equal(upper, problem.upper)):
            raise ValueError(f"{path}: --limits {given['limits']} differs from "
                             f"the recorded limits {problem.lower.tolist()} .. "
                             f"{problem.upper.tolist()}")


# --- batches ------------------------------------------------------------------------------

class Outcome(NamedTuple):
    """One trial of a batch: its name, its file, its weights.json record (None when it
    failed), the one-line error, the reader's notices, whether it had finished in an
    earlier run (skipped), and the warnings it raised (their messages, each once)."""
    name: str
    path: str
    record: object
    error: object = None
    notices: tuple = ()
    skipped: bool = False
    warnings: tuple = ()


def attempt(name, path, settings, batch_pid=None, folder=None):
    """The Outcome of one trial (the task that joblib runs): any exception of the trial
    becomes a failed one whose error names the file, and the warnings it raises are
    returned, not printed (by a worker, on the batch's stderr). ``batch_pid``: the
    process of the batch, which a worker on this machine watches (:func:`worker_setup`);
    ``folder``: the batch's working folder, where the trial's relative paths (motion,
    model, map) resolve (:func:`work_in`)."""
    worker_setup(batch_pid)
    work_in(folder)
    record, notices, error = None, (), None
    with recorded_warnings() as raised:
        try:
            record, notices = run_trial(path, settings)
        except Exception as failure:
            error = named_error(path, failure)
    return Outcome(name, str(path), record, error, notices, warnings=tuple(raised))


_watching = []
"""The batch process this process watches, once set up (:func:`worker_setup`)."""


def worker_setup(batch_pid):
    """Set up a process that runs trials for the batch process ``batch_pid`` on this
    machine (loky's initializer, ``Client.run`` on a local Dask cluster's workers, and
    every trial, for a worker that joins later): it ignores Ctrl-C, which reaches every
    process of the terminal's group while the batch process handles it and stops its
    workers; a thread ends it within WATCH_SECONDS once the batch process is gone, also
    when killed (without it loky's idle workers lived 300 s); and a Dask worker logs
    errors only (its warnings about the tasks a stopped batch cancels would follow the
    interrupt's one line). Does nothing in the batch process itself, in a worker started
    by another process (a Dask cluster's own) or the second time."""
    if batch_pid is None or os.getpid() == batch_pid or os.getppid() != batch_pid \
            or _watching:
        return
    _watching.append(batch_pid)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("distributed").setLevel(logging.ERROR)   # "task cancelled" warnings
    threading.Thread(target=_exit_without, args=(batch_pid,), daemon=True,
                     name="cmtm-batch-watch").start()


TRACKER_WARNINGS = "ignore:resource_tracker:UserWarning"
"""The ``-W`` option that keeps loky's resource tracker from printing its shutdown report."""


def quiet_resource_tracker():
    """Start loky's resource tracker, when this process starts it, without its shutdown
    warnings ("There appear to be N leaked semlock objects ..."). The tracker outlives a
    stopped batch process on the same stderr and unlinks what that process left; after a
    SIGTERM it once found a semaphore still registered though already unlinked (one CI
    run; not reproduced in 14 runs here; the stop probably landed inside the semaphore's
    finalizer), and its report followed the stop's one line. The tracker takes its warning
    filters from this process's ``sys.warnoptions`` as it is started
    (``multiprocessing.util._args_from_interpreter_flags``); the filter matches only
    warnings whose text starts with "resource_tracker"."""
    if TRACKER_WARNINGS not in sys.warnoptions:
        sys.warnoptions.append(TRACKER_WARNINGS)


def work_in(folder):
    """Make ``folder`` (the batch's working folder) this process's, when it exists here:
    loky keeps its workers between batches of one process (a notebook, a test session),
    and a worker started by an earlier batch would resolve relative paths in that batch's
    folder (another folder's files of the same name, or none)."""
    if folder is not None and os.path.isdir(folder):
        os.chdir(folder)


def _exit_without(batch_pid):
    """Exit this process (at once, as a killed one would) when its parent process is no
    longer ``batch_pid`` (the orphan was handed to another process)."""
    while os.getppid() == batch_pid:
        time.sleep(WATCH_SECONDS)
    os._exit(1)


def run_batch(paths, settings, *, out=None, progress=False, report=lambda outcome: None):
    """Outcomes of every trial of ``paths`` in input order, run in parallel with joblib.

    out : None or the folder receiving <name>/weights.json (each written as its trial
        finishes; trials whose file exists for the same settings and input are skipped
        and read back, and estimated again for other input) and summary.csv
    progress : a tqdm bar on stderr; report : callable(Outcome), called for every skipped
        trial first, then for every trial as it finishes
    """
    names = trial_names(paths)
    earlier = {n: _finished(out, n, p, settings) for n, p in zip(names, paths)}
    outcomes = {n: skipped for n, (skipped, _) in earlier.items() if skipped is not None}
    if out is not None:
        outcomes.update({n: Outcome(n, str(p), None, f"{p}: trial name: {unusable_name(n)} "
                                    f"(its folder in --out); rename the file")
                         for n, p in zip(names, paths) if unusable_name(n)})
    pending = [(n, p) for n, p in zip(names, paths) if n not in outcomes]
    for outcome in outcomes.values():
        report(outcome)
    jobs = settings.jobs or (1 if settings.backend == "loky" else -1)
    with parallel_backend(settings.backend, settings.scheduler):
        tasks = (joblib.delayed(attempt)(n, p, settings, os.getpid(), os.getcwd())
                 for n, p in pending)
        done = joblib.Parallel(n_jobs=jobs, return_as="generator_unordered")(tasks)
        for outcome in tqdm(done, total=len(pending), disable=not progress, unit="trial",
                            leave=False):
            if outcome.record is not None and out is not None:
                write_weights(out / outcome.name, outcome.record)
            rerun = earlier[outcome.name][1]
            outcomes[outcome.name] = outcome = outcome._replace(
                notices=(rerun,) * bool(rerun) + outcome.notices)
            report(outcome)
    ordered = [outcomes[name] for name in names]
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_summary(out / SUMMARY_FILE, summary_rows(ordered, batch_costs(paths, settings)))
    return ordered


def _finished(out, name, path, settings):
    """(the skipped Outcome of a trial whose weights.json exists for this input, else
    None; a notice when that file is replaced: made from other input, or unreadable).
    ValueError if that file was made with other estimation settings."""
    file = None if out is None or unusable_name(name) else out / name / WEIGHTS_FILE
    if file is None or not file.exists():
        return None, None
    try:
        record = read_weights(file)
    except ValueError as error:
        return None, f"{one_line(error)}: estimating the trial again"
    theirs, ours = record.get("settings", {}), settings.estimation()
    differ = [key for key in ours if key not in theirs or theirs[key] != ours[key]]
    if differ:
        raise ValueError(f"{file}: expected a finished trial of this run's settings (to "
                         f"skip it), found other {', '.join(differ)}; choose another --out "
                         f"or remove it")
    inputs = {"source_sha256": [sha256(path)],
              "model_sha256": None if is_result(path) else model_sha256(settings.model)}
    changed = [key for key, value in inputs.items()
               if key != "model_sha256" or value is not None
               if record.get(key) != value]
    if changed:
        return None, (f"{file} was made from other input ({' and '.join(changed)} differ): "
                      f"estimating the trial again")
    return Outcome(name, str(path), record, skipped=True), None


def summary_rows(outcomes, costs):
    """The summary.csv rows of a batch's outcomes, a column per name of ``costs``."""
    return [summary_row(o.name, costs, o.record, o.error) for o in outcomes]


@contextmanager
def parallel_backend(backend, scheduler):
    """joblib's backend for a batch: loky (joblib's default) or Dask at ``scheduler`` (no
    address: a local cluster), their workers set up by :func:`worker_setup` as they start
    (loky's initializer; on Dask, ``Client.run`` in each worker's main thread)."""
    if backend == "loky":
        with joblib.parallel_config(backend="loky", initializer=worker_setup,
                                    initargs=(os.getpid(),)):
            yield
        return
    with dask_client()(scheduler) as client, joblib.parallel_config(backend="dask"):
        client.run(worker_setup, os.getpid())
        yield


def precompile_on_workers(scheduler, units):
    """``cmtm.precompile(units=units)`` on the workers of the Dask cluster at ``scheduler``,
    as a task on one worker per Numba cache (:func:`kernel_cache`): the workers may run on
    other machines, each with a cache of its own, and two processes must not compile into
    one cache at once (``cmtm.compile_cache``). The other workers of a cache load the
    kernels from it on their first trial. Returns the addresses of the workers that ran it.
    """
    with dask_client()(scheduler) as client:
        caches = client.run(kernel_cache)                  # {worker address: its cache}
        one_per_cache = sorted({cache: address for address, cache in caches.items()}.values())
        client.gather([client.submit(cmtm.precompile, units=units, workers=[address],
                                     allow_other_workers=False, pure=False)
                       for address in one_per_cache])
    return one_per_cache


def kernel_cache():
    """Where this process's Numba cache of cmtm's kernels is: (host name, NUMBA_CACHE_DIR,
    the folder of the cmtm package, next to which Numba caches when NUMBA_CACHE_DIR is
    unset)."""
    return socket.gethostname(), numba.config.CACHE_DIR, str(Path(cmtm.__file__).parent)


def dask_client():
    """dask.distributed.Client; ValueError saying to install the dask extra without it."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise ValueError("--backend dask: needs dask.distributed, which is not installed; "
                         "install the dask extra: pip install 'cmtm[dask]'") from None
    return Client
