"""The ``cmtm`` command line (DESIGN.md: a contract).

    cmtm check-jacobians --model M --order k [--samples N] [--seed S] [--tolerance T] [--json]
    cmtm optimize --model M --costs NAME[,NAME...] --weights W[,W...] [--out DIR] [--json]
    cmtm ioc [--model M] --motion FILE|DIR|PATTERN ... --costs NAME[,NAME...] [--pool]
             [--estimator kkt|data] [--jobs N] [--backend loky|dask] [--out DIR] [--json]
    cmtm view INPUT [--model M] [--out motion.html] [--trial K] [--frames N]

Models: a built-in name (``two_link_planar``, ``chainN`` such as ``chain3``, ``panda``,
``human``) or a URDF path; ``--floating-base ORDER`` frees its root, ``--gravity GX,GY,GZ``
overrides its gravity, ``--lock joint=value`` fixes joints such as gripper fingers, and
``--joints J1,J2,...`` (optimize, ioc) keeps only those movable, the others fixed at their
``--lock`` value, else at 0 (optimize) or at their mean over the data (ioc). ``--json``
prints one JSON object (strict JSON: never NaN or inf). Every file is written atomically
(ioc.files.results.write_atomically).

Errors: every command exits 2 with one line ``cmtm COMMAND: error: MESSAGE`` on stderr for
bad input (argparse's own errors included); an unexpected exception, which is a bug, also
exits 2, with one line ``cmtm COMMAND: internal error: TYPE: MESSAGE`` and a hint.
Ctrl-C (SIGINT) ends a command with the one line ``cmtm COMMAND: interrupted`` and exit
status 130, SIGTERM with ``cmtm COMMAND: terminated`` and 143: files are written whole or
not at all (and a result's files as a set), the trials a batch finished are kept.
Warnings (numpy's, matplotlib's, ...) never reach stderr on their own: after a command
that ran they are notices, each once (none with --quiet); after an error, only the error's
line is printed. ``--debug`` (before or after the command name) lets every exception
through with its traceback instead.
"""
import os
import signal
import sys


def _stop_while_starting(number, frame):
    """Ctrl-C or SIGTERM while the command line starts (importing numpy, Numba and the
    engine takes about a second, before :func:`main` handles signals): its one line, and
    the process ends at once (nothing is written yet)."""
    command = next((word for word in sys.argv[1:] if not word.startswith("-")), None)
    word = "interrupted" if number == signal.SIGINT else "terminated"
    os.write(2, f"cmtm{'' if command is None else ' ' + command}: {word}\n".encode())
    os._exit(128 + number)


if __name__ == "__main__" or os.path.basename(sys.argv[0]) == "cmtm":
    for _number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_number, _stop_while_starting)

# the imports below come after the handlers: they take the time
import argparse
import dataclasses
import importlib.metadata
import json
import logging
import threading
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path

import numpy as np
from tqdm import tqdm

import cmtm
import ioc
from ioc.choices import (BACKENDS, BOUNDARY_MODES, CONSTRAINT_MODES, ESTIMATORS,
                         INTEGRATION_RULES, PAGE_FRAMES)
from ioc.commands.demo import add_demo
from ioc.commands.engine import (DEFAULT_TOLERANCE, announce_compile, compiling,
                                 jacobian_discrepancies, precompile, stopped_compile)
from ioc.commands.engine import check_jacobians_units, compile_notice  # noqa: F401 (as cli.X)
from ioc.commands.messages import one_line, recorded_warnings
from ioc.commands.outputs import write_motion_files
from ioc.commands.options import (OneLineParser, add_joints_argument, add_model_arguments,
                                  float_list, integer_at_least, joint_values_option,
                                  limits_option, positive_float, window_option)
from ioc.files.models import (BOUNDARY_RULE, PAPER_GOAL, PAPER_START, default_boundary, model_lock,
                              paper_boundary_fits, resolve_model)
from ioc.optimize.costs import engine_units, parse_terms, split_names

batch, direct, results, view, weights_io = (
    ioc.lazy_module(name) for name in ("ioc.commands.batch", "ioc.optimize.direct",
                                       "ioc.files.results", "ioc.show.view",
                                       "ioc.files.weights_io"))
"""The solver layer, loaded by the first command that uses it: building the parser (every
command, ``--help``) and ``check-jacobians`` without ``--json`` import none of scipy's
solvers, nor joblib."""

DESCRIPTION = ("cmtm: optimize motions with higher-order time derivatives (jerk, torque "
               "rate) and recover cost weights from motions, on robots and human models")
"""What ``cmtm --help`` opens with."""
INTERRUPTED, TERMINATED = 130, 143
"""Exit statuses after SIGINT and SIGTERM: 128 + the signal's number, as a shell's."""


def joint_values(model, values, default, option):
    """One value per joint of the model from --start or --goal: ``default`` (nv,) for None,
    a list as given (one value or one per joint), a dict {joint: value} with the other
    joints at their ``default``; ValueError for a name that is not a movable joint of the
    model."""
    if values is None:
        return default
    if not isinstance(values, dict):
        return values
    unknown = sorted(set(values) - set(model.joint_names))
    if unknown:
        raise ValueError(f"{option}: expected movable joints of the model "
                         f"({', '.join(model.joint_names)}), got {', '.join(unknown)}")
    return [values.get(name, value) for name, value in zip(model.joint_names, default)]


def command_lock(args):
    """The joints --lock and --joints fix (ioc.files.models.model_lock: the others at 0)."""
    return model_lock(args.model, args.lock, args.floating_base, args.joints)


def check_jacobians(args):
    """Structured Jacobians vs central finite differences (the paper's Table 6 layout)."""
    model = resolve_model(args.model, args.lock, args.floating_base, args.gravity)
    rows = jacobian_discrepancies(model, args.order, args.samples, args.seed)
    failed = [r["quantity"] for r in rows if not r["rel_diff"] <= args.tolerance]
    if args.json:
        print(results.to_json({"model": args.model, "nv": model.nv, "order": args.order,
                               "samples": args.samples, "tolerance": args.tolerance,
                               "rows": rows, "passed": not failed}))
    else:
        print(f"model {args.model} (nv={model.nv}), order {args.order}, {args.samples} "
              f"sample(s): structured vs central FD, tolerance {args.tolerance:g} relative")
        print(f"{'quantity':<22}{'max|J|':>12}{'max abs diff':>15}{'rel diff':>12}")
        for r in rows:
            print(f"{r['quantity']:<22}{r['max_abs_J']:>12.3e}{r['max_abs_diff']:>15.3e}"
                  f"{r['rel_diff']:>12.3e}{'  FAIL' if r['quantity'] in failed else ''}")
        print("all within tolerance" if not failed else f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


# --- cmtm optimize ------------------------------------------------------------------------

def optimize(args):
    """Optimize a motion for given cost weights (the direct problem) and write its files."""
    lock = command_lock(args)
    problem = build_problem(args, lock)
    weights = direct.check_weights(args.weights, len(problem.terms))
    with results.output_folder(args.out):
        if not args.quiet:
            print_boundary(args, problem)
        precompile(engine_units(problem.terms), args.command, args.quiet)
        result = direct.solve(problem, weights, progress=None if args.quiet else print_progress)
        record = results.result_record(result, args.model, lock, args.floating_base)
        written = [] if args.out is None else write_outputs(args, result, record)
    if args.json:
        print(results.to_json(record))
    else:
        print_summary(result, written)
    return 0 if result.status == "converged" else 1


def build_problem(args, lock):
    """The MotionProblem of the command line, its model's joints ``lock`` fixed
    (ValueError on any bad value); start and goal default per joint to
    :func:`ioc.files.models.default_boundary` of the limits of --limits."""
    from ioc.optimize.problem import _limits
    model = resolve_model(args.model, lock, args.floating_base, args.gravity)
    start, goal = default_boundary(*_limits(model, args.limits))
    return ioc.MotionProblem(
        model, args.costs, duration=args.duration, samples=args.samples, degree=args.degree,
        control_points=args.control_points,
        start=joint_values(model, args.start, start, "--start"),
        goal=joint_values(model, args.goal, goal, "--goal"), rest_order=args.rest_order,
        integration=args.integration, limits=args.limits, constraints=args.constraints)


def print_boundary(args, problem):
    """A notice on stderr naming the joints whose default start and goal are not the
    paper's (:data:`ioc.files.models.BOUNDARY_RULE`), with the values taken."""
    if args.start is not None and args.goal is not None:
        return
    names = problem.model.joint_names
    moved = np.flatnonzero(~paper_boundary_fits(problem.lower, problem.upper))
    if moved.size:
        print(f"cmtm {args.command}: notice: {PAPER_START} or {PAPER_GOAL} lies outside the "
              f"limits of {', '.join(names[j] for j in moved)}: their start and goal "
              f"default to 30 % and 70 % of their range (" + ", ".join(
                  f"{problem.start[j]:.4g} -> {problem.goal[j]:.4g}" for j in moved) + ")",
              file=sys.stderr)


def write_outputs(args, result, record):
    """result.json, trajectory.csv, motion.npz and, with the plot extra, the PNG plots
    (matplotlib) and unless --no-view the motion page (plotly), as a set: Ctrl-C or SIGTERM
    while they are written takes effect once they all are."""
    installed = plot_extra(args, {"matplotlib": "no plots", "plotly": "no motion page"})
    return write_motion_files(args.out, result, record, results.motion_samples(result),
                              args.model, "matplotlib" in installed, "plotly" in installed)


def plot_extra(args, wanted):
    """The packages of ``wanted`` {package: what is left out without it} that are installed
    (plotly only without --no-view), and one notice on stderr naming the others unless
    --quiet."""
    if getattr(args, "no_view", False):
        wanted = {name: what for name, what in wanted.items() if name != "plotly"}
    missing = [name for name in wanted if find_spec(name) is None]
    if missing and not args.quiet:
        print(f"cmtm {args.command}: notice: {' and '.join(missing)} not installed (the "
              f"'plot' extra), so {' and '.join(wanted[name] for name in missing)}",
              file=sys.stderr)
    return [name for name in wanted if name not in missing]


def write_pages(args, folder, record):
    """The motion page of each source of a weights.json ``record`` in ``folder`` (unless
    --no-view, with plotly): motion.html for one, motion-K.html for the K-th of pooled
    ones (``cmtm view --trial K``); returns their paths."""
    if not plot_extra(args, {"plotly": "no motion page"}):
        return []
    count = len(record["source"])
    files = [view.PAGE_FILE] if count == 1 else [f"motion-{k}.html" for k in range(1, count + 1)]
    return [view.write_page(folder / file, view.weights_page(record, trial))
            for trial, file in enumerate(files)]


def print_written(paths):
    """The files written, if any, on stdout."""
    if paths:
        print(f"wrote {', '.join(str(path) for path in paths)}")


def print_progress(entry):
    """One solver iteration on stderr."""
    print(f"iteration {entry['iteration']:4d}  {entry['mode']:<12}  cost {entry['cost']:.12e}"
          f"  step {entry['step']:.3e}  stationarity {entry['stationarity']:.3e}",
          file=sys.stderr)


def print_summary(result, written):
    """Status, time, cost per term and stationarity on stdout."""
    print(f"{result.status} after {result.iterations} iterations in "
          f"{result.solve_seconds:.3g} s; cost {result.cost:.12e}, stationarity "
          f"{result.stationarity_rel:.2e} relative ({result.stationarity_abs:.2e} absolute)")
    print(f"  {'term':<24}{'weight':>12}{'raw':>20}{'weighted':>20}")
    for term in result.terms():
        print(f"  {term['name']:<24}{term['weight']:>12.6g}{term['raw']:>20.12e}"
              f"{term['weighted']:>20.12e}")
    if result.multipliers:
        print(f"  {len(result.multipliers)} active joint limit(s)")
    print_written(written)


# --- cmtm ioc ------------------------------------------------------------------------------

def recover(args):
    """Recover cost weights from motions (inverse optimal control): weights.json per trial
    (ioc.files.weights_io), summary.csv per batch."""
    settings = batch.Settings(**{f.name: getattr(args, f.name)
                                 for f in dataclasses.fields(batch.Settings)})
    paths = batch.expand_motion(args.motion)
    terms = batch.check_inputs(paths, settings)
    with results.output_folder(args.out):
        precompile_trials(paths, settings, terms, args.quiet)
        if args.pool or len(paths) == 1:
            return recover_one(args, paths, settings)
        return recover_batch(args, paths, settings)


def precompile_trials(paths, settings, terms, quiet=False):
    """``cmtm.precompile`` with the units of the trials' costs
    (``ioc.optimize.costs.engine_units``): those of ``terms``, the terms of --costs on
    --model that ``batch.check_inputs`` returned, or without them (None: every input a
    result.json) of every result's costs (:func:`result_units`). Here for the trials of this
    machine: one trial or --pool (run in this process), loky's workers and those of a local
    Dask cluster (no --scheduler), which read this machine's cache; on the workers of the
    cluster at --scheduler otherwise, once per cache they hold
    (``batch.precompile_on_workers``)."""
    units = engine_units(terms) if terms is not None else result_units(paths, settings.costs)
    if settings.scheduler is None or settings.pool or len(paths) == 1:
        precompile(units, "ioc", quiet)
    else:
        batch.precompile_on_workers(settings.scheduler, units)


def result_units(paths, costs=None):
    """The units of ``engine_units`` that the result.json files ``paths`` need together, in
    the order of ``cmtm.compile_cache.UNITS``: for their recorded costs, or ``costs`` (the
    candidates of --costs) on their models; each distinct (model, lock, costs) is parsed
    once. A file that cannot be read adds none: its trial reports the error."""
    wanted, seen = set(), set()
    for path in paths:
        try:
            spec, lock, recorded, floating_base = results.result_costs(path)
            costs_here = recorded if costs is None else costs
            key = json.dumps([spec, lock, costs_here, floating_base], sort_keys=True)
            if key not in seen:
                seen.add(key)
                model = resolve_model(spec, lock, floating_base)
                wanted.update(engine_units(parse_terms(costs_here, model)))
        except (ValueError, TypeError):
            pass                                        # its trial reports the error
    return [name for name in cmtm.compile_cache.UNITS if name in wanted]


def recover_one(args, paths, settings):
    """One trial, or the pooled trials: errors are bad input (exit 2)."""
    record, notices = batch.run_pooled(paths, settings) if args.pool \
        else batch.run_trial(paths[0], settings)
    for notice in () if args.quiet else notices:
        print(f"cmtm ioc: notice: {notice}", file=sys.stderr)
    written = [] if args.out is None else [weights_io.write_weights(args.out, record)]
    if args.out is not None:
        written += write_pages(args, args.out, record)
    if args.json:
        print(results.to_json(record))
    else:
        print_weights(record, written)
    return 0


def recover_batch(args, paths, settings):
    """Several trials: a failed trial is reported and the others go on (exit 1 if any
    failed)."""
    shown = set()
    batch.quiet_resource_tracker()
    outcomes = batch.run_batch(paths, settings, out=args.out, progress=not args.quiet,
                               report=lambda outcome: report_outcome(outcome, args, shown))
    names = batch.batch_costs(paths, settings)
    rows = batch.summary_rows(outcomes, names)
    for outcome in outcomes if args.out is not None else ():
        folder = args.out / outcome.name
        if outcome.record is not None and not (outcome.skipped and
                                               (folder / view.PAGE_FILE).exists()):
            write_pages(args, folder, outcome.record)
    if args.json:
        trials = [{"trial": o.name, "status": "ok", **o.record} if o.record else
                  {"trial": o.name, "status": "failed", "source": [o.path], "error": o.error}
                  for o in outcomes]
        print(results.to_json({"trials": trials, "summary": rows}))
    else:
        print_batch(rows, names, args.out, sum(o.skipped for o in outcomes))
    return 1 if any(o.record is None for o in outcomes) else 0


def report_outcome(outcome, args, shown):
    """A batch trial's error, notices, warnings (each message once per batch: ``shown``)
    or skip on stderr (above the progress bar)."""
    if outcome.error is not None:
        lines = [f"cmtm ioc: error: {outcome.error}"]
    elif args.quiet:
        lines = []
    elif outcome.skipped:
        lines = [f"cmtm ioc: skipping {outcome.path}: "
                 f"{args.out / outcome.name / weights_io.WEIGHTS_FILE} exists"]
    else:
        lines = [f"cmtm ioc: notice: {notice}" for notice in outcome.notices]
        lines += [f"cmtm ioc: warning: {text}" for text in outcome.warnings
                  if text not in shown]
        shown.update(outcome.warnings)
    for line in lines:
        tqdm.write(line, file=sys.stderr)


def print_weights(record, written):
    """The weights with their intervals and the verdict on stdout."""
    verdict = "identifiable" if record["identifiable"] else \
        f"NOT identifiable ({len(record['undetermined'])} undetermined)"
    print(f"{record['estimator']} estimator, {len(record['source'])} motion(s): {verdict}")
    intervals = record["uncertainty"]["ci95"] or {}
    for name, weight in record["weights"].items():
        interval = f"  95 % [{intervals[name][0]:.6g}, {intervals[name][1]:.6g}]" \
            if name in intervals else ""
        print(f"  {name:<24}{weight:>12.6g}{interval}")
    print(fit_line(record))
    print_written(written)


def fit_line(record):
    """What the weights rest on, in one line: for the data estimator the optimal motions
    for them (their stationarity: the solves converged) and their distance to the data;
    for inverse KKT the motion's stationarity for them, an exact optimum's ~1e-12, a
    fitted noisy motion's far larger (the noise, not a failure)."""
    relative = f"stationarity {record['stationarity']['relative']:.2e} relative"
    if record["estimator"] == "data":
        sigma = record["uncertainty"]["sigma"]
        rms = max(record["reoptimized_rms"])
        return (f"optimal motion(s) for these weights: {relative}; RMS to the data "
                f"{rms:.3g} (noise sigma {sigma:.3g}, rad or m)")
    kind = "the fitted motion (measured data: noise, not a convergence measure)" \
        if record["fit_rms"] else "the optimum"
    return (f"{relative} of {kind} for these weights"
            + (f"; L1 error {record['l1_error']:.2e}" if "l1_error" in record else ""))


def print_batch(rows, names, out, skipped=0):
    """One line per trial on stdout; the files written (``skipped`` trials had theirs)."""
    for row in rows:
        if row["status"] == "failed":
            print(f"{row['trial']:<24}failed: {row['error']}")
            continue
        weights = " ".join("-" if row[name] is None else f"{row[name]:.6g}" for name in names)
        print(f"{row['trial']:<24}{weights}  "
              f"{'identifiable' if row['identifiable'] else 'NOT identifiable'}")
    if out is not None:
        written = sum(row["status"] == "ok" for row in rows) - skipped
        kept = f" ({skipped} finished earlier, kept)" if skipped else ""
        print(f"wrote {out / weights_io.SUMMARY_FILE} and {written} weights.json{kept}")


def add_optimize(commands):
    """The ``optimize`` subcommand; defaults are the paper's."""
    command = commands.add_parser(
        "optimize", help=optimize.__doc__, description=optimize.__doc__,
        epilog="Exit status: 0 converged, 1 solved without converging (files written all "
               "the same), 2 bad input (nothing written).")
    add_model_arguments(command)
    add_joints_argument(command, "at 0")
    command.add_argument("--costs", type=split_names, required=True, metavar="NAME[,NAME...]",
                         help="sub-costs, e.g. joint_velocity,joint_jerk,joint_torque, "
                              "joint_torque[J1,J2], point_jerk[LINK@x,y,z]")
    command.add_argument("--weights", type=float_list, required=True, metavar="W[,W...]",
                         help="one non-negative weight per cost")
    command.add_argument("--duration", type=float, default=2.0, metavar="T",
                         help="motion duration in s (default %(default)s)")
    command.add_argument("--samples", type=integer_at_least(2), default=200, metavar="N",
                         help="quadrature samples, limit nodes and output rows (default "
                              "%(default)s)")
    command.add_argument("--degree", type=integer_at_least(3), default=5, metavar="P",
                         help="B-spline degree, >= 3 since motion.npz holds q''' (default "
                              "%(default)s)")
    command.add_argument("--control-points", type=integer_at_least(1), default=50,
                         metavar="NC", help="B-spline control points (default %(default)s)")
    command.add_argument("--start", type=joint_values_option, metavar="Q0",
                         help="q(0): one value for all joints, one per joint or JOINT=VALUE "
                              "pairs, rad (m for prismatic joints); default per joint (also "
                              "for the joints pairs leave out): "
                              + BOUNDARY_RULE.replace("%", "%%"))
    command.add_argument("--goal", type=joint_values_option, metavar="Q1",
                         help="q(T): as --start; default per joint: -1.57 or 70 %% of the "
                              "range, see --start")
    command.add_argument("--rest-order", type=integer_at_least(0), default=1, metavar="R",
                         help="q' .. q^(R) vanish at both ends, R < degree (default "
                              "%(default)s)")
    command.add_argument("--integration", choices=INTEGRATION_RULES, default="samples",
                         help="cost quadrature (default %(default)s)")
    command.add_argument("--limits", type=limits_option, default="model",
                         metavar="model|none|LO,HI",
                         help="joint limits: the model's, none, or LO,HI for all joints "
                              "(default %(default)s)")
    command.add_argument("--constraints", choices=CONSTRAINT_MODES, default="exact",
                         help="boundary conditions fixed exactly or as penalties (default "
                              "%(default)s)")
    command.add_argument("--out", type=Path, metavar="DIR",
                         help="write result.json, trajectory.csv, motion.npz, the plots and "
                              "the motion page motion.html")
    add_no_view(command)
    command.add_argument("--json", action="store_true",
                         help="print the result.json object on stdout instead of a summary")
    command.add_argument("--quiet", action="store_true",
                         help="no progress or notices on stderr")
    command.set_defaults(run=optimize, parser=command)


def add_ioc(commands):
    """The ``ioc`` subcommand; spline options default to prepare_trial's (or a
    result.json's)."""
    recorded = " (default: a result.json's, else %s)"
    command = commands.add_parser(
        "ioc", help=recover.__doc__.splitlines()[0], description=recover.__doc__,
        epilog="A cmtm optimize result.json (or its folder) is an exact optimum: inverse KKT "
               "recovers its weights without refitting, compared with the recorded ones. "
               "Measured motions (CSV, .mot, .sto) are fitted by a smoothing spline and go "
               "through the maximum-likelihood data estimator (95 % Fisher intervals). "
               "Several files without --pool make a batch run in parallel with joblib "
               "(--jobs; --backend dask --scheduler ADDRESS runs it on a Dask cluster, "
               "which needs the dask extra: pip install 'cmtm[dask]'); with --out each trial "
               "writes DIR/<trial>/weights.json as it finishes, a rerun skips the finished "
               "ones, and DIR/summary.csv lists them all. Exit status: 0 done, 1 a batch "
               "trial failed (the others are written), 2 bad input (nothing written).")
    add_model_arguments(command, required=False,
                        note="; required for measured motions, default: a result.json's")
    add_joints_argument(command, "at their mean over the data (measured motions)")
    command.add_argument("--motion", nargs="+", required=True, metavar="FILE",
                         help="motion files (CSV, .mot, .sto, DeepMimic clip .txt, "
                              "result.json), folders (their result.json, else every *.csv, "
                              "*.mot, *.sto, *.txt inside) or glob patterns")
    command.add_argument("--costs", type=split_names, metavar="NAME[,NAME...]",
                         help="the sub-costs whose weights to recover: required for measured "
                              "motions; a result.json's default are its recorded costs, "
                              "other ones are candidates whose stationarity says whether "
                              "they explain the optimum")
    command.add_argument("--estimator", choices=ESTIMATORS,
                         help="kkt: inverse KKT on the (fitted) motion; data: maximum "
                              "likelihood on the samples (default: kkt for a result.json, "
                              "data for measured motions)")
    command.add_argument("--pool", action="store_true",
                         help="the measured motions share the weights: one estimate")
    command.add_argument("--integration", choices=INTEGRATION_RULES,
                         help="cost quadrature" + recorded % "samples")
    command.add_argument("--samples", type=integer_at_least(2), metavar="N",
                         help="quadrature samples and limit nodes" + recorded % 200)
    command.add_argument("--degree", type=integer_at_least(1), metavar="P",
                         help="B-spline degree, > 4 for measured motions (the fit's snap "
                              "penalty)" + recorded % 5)
    command.add_argument("--control-points", type=integer_at_least(1), metavar="NC",
                         help="B-spline control points" + recorded % 50)
    command.add_argument("--rest-order", type=integer_at_least(0), metavar="R",
                         help="q' .. q^(R) vanish at both ends" + recorded % 1)
    command.add_argument("--limits", type=limits_option, metavar="model|none|LO,HI",
                         help="joint limits: the model's, none, or LO,HI for all joints"
                              + recorded % "model")
    command.add_argument("--degrees", action="store_true",
                         help="the files' angles are in degrees, and so is --noise (default: "
                              "radians for both, unless a .mot or .sto header says "
                              "inDegrees=yes)")
    command.add_argument("--boundary", choices=BOUNDARY_MODES,
                         help="rest: the motion starts and ends at rest (q' .. q^(R) = 0); "
                              "data: with the recorded motion's end velocities .. q^(R), "
                              "fitted as nuisance parameters, for a clip or window cut while "
                              "moving (default rest)")
    command.add_argument("--map", metavar="FILE",
                         help="data columns (or DeepMimic clip joints) -> model joints: a "
                              "two-column CSV or JSON {column: joint}; only mapped joints "
                              "move, the others are locked at their mean over the data (0 "
                              "without data). DeepMimic clips (*.txt) default to human.urdf's "
                              "map")
    command.add_argument("--window", type=window_option, metavar="T0,T1",
                         help="fit only the samples with T0 <= t <= T1 (s, the file's time "
                              "axis); ioc.data.segments finds movement windows")
    command.add_argument("--noise", type=positive_float, metavar="SIGMA",
                         help="noise standard deviation of the angles: rad, or deg with "
                              "--degrees (a .mot saying inDegrees=yes needs --degrees for "
                              "deg); default: the fit's GCV and the residual estimate")
    command.add_argument("--reoptimize", action="store_true",
                         help="re-solve the direct problem with the recovered weights and "
                              "report reoptimized_rms")
    command.add_argument("--bootstrap", type=integer_at_least(2), default=0, metavar="B",
                         help="B parametric bootstrap samples of the data estimator")
    command.add_argument("--jobs", type=integer_at_least(1), metavar="N",
                         help="trials run at once (default 1: one after the other in this "
                              "process; with dask: every worker)")
    command.add_argument("--backend", choices=BACKENDS, default="loky",
                         help="joblib backend of a batch (default %(default)s)")
    command.add_argument("--scheduler", metavar="ADDRESS",
                         help="the Dask scheduler, e.g. tcp://host:8786 (default: a local "
                              "cluster)")
    command.add_argument("--out", type=Path, metavar="DIR",
                         help="write weights.json and the motion page motion.html (and for a "
                              "batch DIR/<trial>/weights.json, motion.html and summary.csv)")
    add_no_view(command)
    command.add_argument("--json", action="store_true",
                         help="print the weights.json object (a batch: {trials, summary}) "
                              "on stdout instead of a summary")
    command.add_argument("--quiet", action="store_true",
                         help="no progress or notices on stderr (errors still)")
    command.set_defaults(run=recover, parser=command)


def add_no_view(command):
    """The --no-view option of a command that writes a motion page with --out."""
    command.add_argument("--no-view", action="store_true",
                         help="with --out, no motion page (motion.html, see cmtm view)")


# --- cmtm view -----------------------------------------------------------------------------

def view_motion(args):
    """Write the motion page of a result.json, a weights.json or a motion file: one HTML
    file that plays the stick figure in a browser, with the time curves below."""
    if find_spec("plotly") is None:
        raise ValueError("plotly is not installed: the motion page needs the 'plot' extra "
                         "(pip install 'cmtm[plot]')")
    path = view.check_page_path(args.out or view.default_page_path(args.input))
    page = view.input_page(args.input, args.model, dict(args.lock), args.trial - 1,
                           args.frames, True if args.degrees else None, args.floating_base,
                           args.gravity)
    view.write_page(path, page)
    print(f"wrote {path}")
    return 0


def add_view(commands):
    """The ``view`` subcommand."""
    command = commands.add_parser(
        "view", help=view_motion.__doc__.splitlines()[0], description=view_motion.__doc__,
        epilog="The page embeds plotly's JavaScript (compressed): it opens without network "
               "in a current browser. Exit status: 0 written, 2 bad input (nothing "
               "written).")
    command.add_argument("input", type=Path, metavar="INPUT",
                         help="a cmtm optimize result.json, a cmtm ioc weights.json (or the "
                              "folder of either), or a motion file (CSV, .mot, .sto)")
    add_model_arguments(command, required=False,
                        note="; required for a motion file, default: the recorded one")
    command.add_argument("--out", type=Path, metavar="FILE",
                         help="the page (default: motion.html beside a result.json or "
                              "weights.json, <stem>.html beside a motion file)")
    command.add_argument("--trial", type=integer_at_least(1), default=1, metavar="K",
                         help="the K-th source of a pooled weights.json (default 1)")
    command.add_argument("--frames", type=integer_at_least(2), default=PAGE_FRAMES,
                         metavar="N", help="instants at most (default %(default)s)")
    command.add_argument("--degrees", action="store_true",
                         help="the motion file's angles are in degrees")
    command.set_defaults(run=view_motion, parser=command)


def add_check_jacobians(commands):
    """The ``check-jacobians`` subcommand."""
    command = commands.add_parser(
        "check-jacobians", help=check_jacobians.__doc__, description=check_jacobians.__doc__,
        epilog="Exit status: 0 every quantity within the tolerance, 1 a quantity is not, "
               "2 bad input.")
    add_model_arguments(command)
    command.add_argument("--order", type=integer_at_least(0, cmtm.MAX_ORDER), required=True,
                         help=f"derivative order k, 0..{cmtm.MAX_ORDER} (cmtm.MAX_ORDER)")
    command.add_argument("--samples", type=integer_at_least(1), default=1,
                         help="random instants (default %(default)s)")
    command.add_argument("--seed", type=integer_at_least(0), default=0,
                         help="random seed (default %(default)s)")
    command.add_argument("--tolerance", type=positive_float, default=DEFAULT_TOLERANCE,
                         help="largest relative difference accepted (default %(default)s)")
    command.add_argument("--json", action="store_true", help="print one JSON object")
    command.set_defaults(run=check_jacobians, parser=command)


def precompile_kernels(args):
    """Compile every kernel of the engine into Numba's on-disk cache, several processes at
    once (cmtm.precompile); later runs load them instead of compiling, and the kernels
    already cached are only loaded."""
    announce_compile("precompile", jobs=args.jobs)
    with compiling():
        result = cmtm.precompile(args.jobs)
    compiled = sum(len(group) for group in result["groups"])
    print(f"every kernel ready in {result['seconds']:.1f} s: {compiled} unit(s) compiled by "
          f"{len(result['groups'])} process(es), {len(result['cached'])} found compiled or "
          f"cached")
    return 0


def add_precompile(commands):
    """The ``precompile`` subcommand."""
    command = commands.add_parser("precompile", help=precompile_kernels.__doc__,
                                  description=precompile_kernels.__doc__)
    command.add_argument("--jobs", type=integer_at_least(1), default=None,
                         help="processes (default: one per CPU this process may use)")
    command.set_defaults(run=precompile_kernels, parser=command)


DEBUG_HELP = "show the traceback of an error instead of one line"


def build_parser():
    parser = OneLineParser(prog="cmtm", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"cmtm {version()}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    commands = parser.add_subparsers(dest="command", required=True)
    add_demo(commands)
    add_check_jacobians(commands)
    add_optimize(commands)
    add_ioc(commands)
    add_view(commands)
    add_precompile(commands)
    for command in commands.choices.values():
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help=DEBUG_HELP)
    return parser


def version():
    """The installed cmtm's version ("unknown" for a checkout that is not installed)."""
    try:
        return importlib.metadata.version("cmtm")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class Terminated(BaseException):
    """SIGTERM, raised in the main thread while a command runs (as SIGINT raises
    KeyboardInterrupt), so that it ends as Ctrl-C does: temporary files removed, workers
    stopped."""


STOPS = {signal.SIGINT: ("interrupted", INTERRUPTED, KeyboardInterrupt),
         signal.SIGTERM: ("terminated", TERMINATED, Terminated)}
"""Per signal that stops a command: its one line's word, the exit status, the exception."""


@contextmanager
def stop_signals():
    """While the context runs (in the main thread), SIGINT raises KeyboardInterrupt and
    SIGTERM :class:`Terminated`; yields the list of the signals received. Where Python
    cannot let that exception through (a ctypes callback of Numba's compiler prints it as
    "ignored", and the compile then fails with a RuntimeError), the error that follows is
    the signal's doing: the caller reports the signal, and the "ignored" report is not
    printed. From the signal on, logging is off at ERROR and below: what the libraries
    log while the command stops (a local Dask cluster's scheduler: "Couldn't gather
    keys" for the tasks the stop cancelled) would follow the one line."""
    received = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def stop(number, frame):
        received.append(number)
        logging.disable(logging.ERROR)
        raise STOPS[number][2]

    previous = {number: signal.signal(number, stop) for number in STOPS}
    unraisable = sys.unraisablehook
    sys.unraisablehook = lambda report: None if received else unraisable(report)
    try:
        yield received
    finally:
        sys.unraisablehook = unraisable
        if received:
            logging.disable(logging.NOTSET)
        for number, handler in previous.items():
            signal.signal(number, handler)


def main(argv=None):
    """Run ``cmtm``; returns the exit status (argparse's errors exit 2 by SystemExit).

    Bad input (ValueError, OSError) and unexpected exceptions alike exit 2 with one line
    on stderr, Ctrl-C 130 and SIGTERM 143 with one line; the warnings a command raised
    follow its output as notices, each once, unless it failed or runs with --quiet. With
    ``--debug`` exceptions and warnings propagate as Python shows them. ``argv`` None
    (the process's own command line, the console script): a process whose compile a
    signal stopped ends at once after its line (os._exit), skipping a teardown that can
    crash (:data:`ioc.commands.engine.stopped_compile`).
    """
    args, unknown = build_parser().parse_known_args(argv)
    if unknown:
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.debug:
        return args.run(args)
    with stop_signals() as received, recorded_warnings() as raised:
        try:
            status = args.run(args)
        except (KeyboardInterrupt, Terminated, Exception) as error:
            stopped = received[:1] or [number for number, (_, _, kind) in STOPS.items()
                                       if isinstance(error, kind)]
            if not stopped:
                print(error_line(args.command, error), file=sys.stderr)
                return 2
            word, status, _ = STOPS[stopped[0]]
            print(f"cmtm {args.command}: {word}", file=sys.stderr)
            if argv is None and stopped_compile.is_set():
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
            return status
    for text in () if getattr(args, "quiet", False) else raised:
        print(f"cmtm {args.command}: warning: {text}", file=sys.stderr)
    return status


def error_line(command, error):
    """The one stderr line of an exception: bad input, or an internal error (a bug)."""
    if isinstance(error, (ValueError, OSError)):
        return f"cmtm {command}: error: {one_line(error)}"
    return (f"cmtm {command}: internal error: {type(error).__name__}: "
            f"{one_line(error)} (a bug: rerun with --debug for the traceback and "
            f"report it)")


if __name__ == "__main__":
    sys.exit(main())
