"""How long do the direct and inverse problems take, where does the time go, and how many
measured trials per minute does the estimator handle?

One run, side by side on the same problems (ioc.optimize.direct.solve, default SolverOptions):

* the paper's 3-DoF cases (a), (b), (c) on ``serial_chain(3)`` (PAPER below: T = 2 s,
  200 samples, quintic spline, 50 control points, 1.57 -> -1.57 rad, rest order 1, limits
  [-pi, pi], equal weights);
* the Panda (``kt.panda()``), case (b)'s terms, weights (1, 1, 1, 0.01), PAPER settings;
* the 36-joint human of example-robot-data (``human.urdf`` through
  ``kinematic_trees.load_urdf``, fixed base, its y-up gravity (0, -9.81, 0)), case (b)'s
  terms, weights
  (1, 1, 1, 0.01), the model's joint limits, PAPER's spline and samples; the task moves
  every joint from 30 % to 70 % of its range (start = lower + 0.3 (upper - lower), goal =
  lower + 0.7 (upper - lower)), so every start and goal lies inside the limits.

Columns, per case:

* compile s: the first ``problem.evaluate`` at the initial motion (Newton Hessian: every
  kernel a solve calls) minus a second, warm one: Numba compiling the kernels this case is
  the first to need. The run starts from an empty temporary NUMBA_CACHE_DIR, so this is
  the cold compile; with ``--cached`` the project's cache is used and it is the load time.
  Later cases reuse kernels (they are compiled per argument type, not per model).
* it, stat, status, wall s, s/it: iterations, relative KKT stationarity, solver status,
  the median wall time of up to --repeats warm solves (a case stops repeating once its
  timed solves have taken --budget seconds; n is how many were timed) and wall / it.
* terms %: the share of the wall time spent in ``term_values`` (ioc.optimize.costs: one
  ``cmtm.motion`` and one Jacobian call per evaluation, plus stacking the per-term
  Jacobians), measured by wrapping ``ioc.optimize.problem.term_values`` (the name
  ioc.optimize.problem calls) with a timer; cmtm %: the part of it inside the engine calls proper
  (``cmtm.motion`` and the Jacobian source), wrapped the same way; hess %: the share
  spent in the Newton Hessian's second-order part (``MotionProblem._curvature``,
  differences of the terms' Jacobians, whose term_values calls are part of terms %). The
  rest is spline evaluation in double-double, chaining to control points, banded assembly
  and Cholesky, the active-set step and the line search.
* FD: the same solve with ``MotionProblem(..., jacobians="finite_differences")``
  (``cmtm.reference.fd_jacobians``, central differences of the engine), its own compile
  column, wall time, iterations, stationarity and FD s / structured s. Skipped (and said
  so) for models with more than --fd-max-nv joints.
* KKT ms, L1: ``ioc.inverse.inverse_kkt.recover_weights`` on the structured solution (median of
  --repeats calls) and its L1 error against the true weights normalised to sum 1.
* target: the issue's targets on the structured wall time, on a 2-core machine: case (c)
  < 1 s, Panda < 3 s, human < 30 s.

Under it, a second block: batch throughput of the data estimator. --trials synthetic
noisy trials (the chain3 problem with 60 samples, 14 control points, case (c)'s terms,
weights (0.5, 0.1, 0.2, 0.15, 0.05); its optimal motion sampled at 100 Hz over 2 s plus
0.01 deg Gaussian noise, seeded per trial), each estimated alone by
``estimate_weights([prepare_trial(...)], noise=sigma)`` through ``joblib.Parallel(n_jobs=k)``
(loky; n_jobs=1 runs in this process) for k = 1, 2 and all cores: trials per minute and the
speed-up over k = 1. Workers are started and their kernels loaded before the timing ("start
s", its own column); trial s and cpu s are a trial's median wall and CPU time in its
process (wall above CPU: the worker waited for a core); the median L1 error of the
estimates is a check that the work is real. The last line gives the 1-minute load average
at the start and the end: on a shared machine, other processes take cores too.

Usage: python bench/bench_optimize.py [--quick] [--repeats R] [--budget S] [--skip-human]
       [--fd-max-nv N] [--trials N] [--cached] [--json PATH]
--quick: no human, no FD for the Panda, one timed solve per case, 4 trials (about two
minutes, one of them the cold compile). The default run takes about three and a half
minutes on two shared cores: the cold compile (~50 s), the human's solves (~1.5 min with
its compile and inverse KKT) and the case (c) FD solve (~50 s) take most of it.
"""
import argparse
import atexit
import importlib.metadata
import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# Run from a checkout: the repository root first (an outdated editable install must not
# shadow it).
sys.path.insert(0, str(ROOT))
if "--cached" not in sys.argv[1:]:
    # A cold start: an empty Numba cache, set before numba is first imported (by cmtm);
    # loky workers inherit it and load what this process compiled.
    _COLD_CACHE = tempfile.mkdtemp(prefix="cmtm-numba-cache-")
    os.environ["NUMBA_CACHE_DIR"] = _COLD_CACHE
    atexit.register(shutil.rmtree, _COLD_CACHE, True)

import joblib  # noqa: E402
from timing import clocked  # noqa: E402

import cmtm  # noqa: E402
import ioc.optimize.costs  # noqa: E402
import ioc.optimize.problem  # noqa: E402
import kinematic_trees as kt  # noqa: E402
from ioc.files.data import MotionData  # noqa: E402
from ioc.inverse.estimate import estimate_weights, prepare_trial  # noqa: E402
from ioc.inverse.inverse_kkt import recover_weights  # noqa: E402
from ioc.optimize.direct import solve  # noqa: E402
from ioc.optimize.problem import MotionProblem  # noqa: E402

PAPER = dict(duration=2.0, samples=200, degree=5, control_points=50, start=1.57, goal=-1.57,
             rest_order=1, limits=(-np.pi, np.pi))
"""The paper's §8.3 setting (as tests/conftest.py, which bench does not import)."""
CASES = {"a": ("joint_velocity", "joint_acceleration", "joint_jerk"),
         "b": ("joint_velocity", "joint_acceleration", "joint_jerk", "joint_torque"),
         "c": ("joint_velocity", "joint_acceleration", "joint_jerk", "joint_torque",
               "joint_torque_rate")}
ROBOT_WEIGHTS = (1.0, 1.0, 1.0, 0.01)
"""The paper's 7-DoF weights (velocity, acceleration, jerk, torque / 100), also the human's."""
HUMAN_RANGE = (0.3, 0.7)
"""The human's task: every joint from 30 % to 70 % of its range."""
HUMAN_URDF = Path("cmeel.prefix", "share", "example-robot-data", "robots",
                  "human_description", "robots", "human.urdf")
TARGETS = {"chain3 (c)": 1.0, "panda": 3.0, "human": 30.0}
"""The issue's wall-time targets (s) on a 2-core machine."""

BATCH = dict(costs=CASES["c"], weights=(0.5, 0.1, 0.2, 0.15, 0.05), samples=60,
             control_points=14, rate_hz=100.0, noise_deg=0.01)
"""The synthetic trials of the throughput block (chain3, PAPER's other settings)."""


# --- the cases ---

def human_model():
    """example-robot-data's human.urdf, located through the distribution's metadata."""
    path = Path(importlib.metadata.distribution("example-robot-data").locate_file(HUMAN_URDF))
    return kt.compile_tree(kt.load_urdf(path, gravity=kt.Y_UP_GRAVITY))


def direct_cases(skip_human):
    """(name, model, costs, weights, MotionProblem keywords) of every case, in run order."""
    chain3 = kt.compile_tree(kt.serial_chain(3))
    cases = [(f"chain3 ({c})", chain3, terms, np.ones(len(terms)), PAPER)
             for c, terms in CASES.items()]
    cases.append(("panda", kt.compile_tree(kt.panda()), CASES["b"], ROBOT_WEIGHTS, PAPER))
    if not skip_human:
        human = human_model()
        lower, upper = np.asarray(human.q_lower), np.asarray(human.q_upper)
        start, goal = (lower + f * (upper - lower) for f in HUMAN_RANGE)
        task = dict(PAPER, start=start, goal=goal, limits="model")
        cases.append(("human", human, CASES["b"], ROBOT_WEIGHTS, task))
    return cases


# --- timing ---

@contextmanager
def engine_clocks():
    """(terms, cmtm, hessian) clocks while ``ioc.optimize.problem.term_values``, the engine
    calls it makes (``cmtm.motion``, ``cmtm.api.torques_and_jacobian`` for torque terms
    alone, the JACOBIAN_SOURCES entries) and the Newton Hessian's second-order
    part (``MotionProblem._curvature``, differences of the terms' Jacobians) are wrapped;
    restored on exit."""
    sources = [(ioc.optimize.costs.JACOBIAN_SOURCES, name)
               for name in ioc.optimize.costs.JACOBIAN_SOURCES]
    with clocked({"terms": [(ioc.optimize.problem, "term_values")],
                  "cmtm": [(cmtm, "motion"), (cmtm.api, "torques_and_jacobian")] + sources,
                  "hessian": [(MotionProblem, "_curvature")]}) as clocks:
        yield clocks["terms"], clocks["cmtm"], clocks["hessian"]


def compile_seconds(problem, weights):
    """First minus second ``evaluate`` (Newton Hessian) at the initial motion."""
    theta = problem.initial_theta()
    times = []
    for _ in range(2):
        start = time.perf_counter()
        problem.evaluate(theta, weights, hessian="newton")
        times.append(time.perf_counter() - start)
    return max(times[0] - times[1], 0.0)


def timed_solves(problem, weights, repeats, budget):
    """Warm solves, up to ``repeats`` or until they have taken ``budget`` s: a dict of the
    median wall time, the last result, the count, and the terms / cmtm / Newton-Hessian
    shares."""
    results, walls = [], []
    with engine_clocks() as (terms, engine, hessian):
        while len(walls) < repeats and sum(walls) < budget:
            start = time.perf_counter()
            results.append(solve(problem, weights))
            walls.append(time.perf_counter() - start)
    total = sum(walls)
    return {"result": results[-1], "wall_s": float(np.median(walls)), "n": len(walls),
            "terms_share": terms.seconds / total, "cmtm_share": engine.seconds / total,
            "hessian_share": hessian.seconds / total}


def median_seconds(call, repeats):
    """Median wall time of ``repeats`` calls (after one warm-up call) and the last value."""
    value = call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        value = call()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), value


# --- the direct, FD and inverse-KKT rows ---

def solve_row(name, model, costs, weights, settings, args):
    """All the columns of one case."""
    weights = np.asarray(weights, dtype=float)
    problem = MotionProblem(model, costs, **settings)
    row = {"case": name, "nv": model.nv, "n_free": problem.n_free,
           "compile_s": compile_seconds(problem, weights)}
    run = timed_solves(problem, weights, args.repeats, args.budget)
    result = run.pop("result")
    row.update(run, iterations=result.iterations, status=result.status,
               stationarity=result.stationarity_rel)
    row["per_iteration_s"] = row["wall_s"] / max(result.iterations, 1)
    kkt_s, kkt = median_seconds(lambda: recover_weights(problem, result.theta), args.repeats)
    row["kkt_ms"], row["kkt_l1"] = 1e3 * kkt_s, float(np.sum(np.abs(kkt.weights
                                                                     - weights / weights.sum())))
    row["fd"] = fd_columns(model, costs, weights, settings, row, args)
    target = TARGETS.get(name)
    row["target_s"], row["target_met"] = target, None if target is None \
        else row["wall_s"] < target
    return row


def fd_columns(model, costs, weights, settings, row, args):
    """The finite-difference solve's columns, or a dict with the reason it was skipped."""
    if model.nv > args.fd_max_nv:
        return {"skipped": f"nv > {args.fd_max_nv}"}
    if args.quick and row["case"] == "panda":
        return {"skipped": "--quick"}
    problem = MotionProblem(model, costs, jacobians="finite_differences", **settings)
    compile_s = compile_seconds(problem, weights)
    run = timed_solves(problem, weights, args.repeats, args.budget)
    result = run["result"]
    return {"compile_s": compile_s, "wall_s": run["wall_s"], "n": run["n"],
            "iterations": result.iterations, "status": result.status,
            "stationarity": result.stationarity_rel, "ratio": run["wall_s"] / row["wall_s"]}


# --- batch throughput ---

def batch_truth():
    """(model, times, clean q) of the synthetic trials: the batch problem's optimal motion
    for BATCH's weights, sampled at BATCH's rate over [0, T]."""
    model = kt.compile_tree(kt.serial_chain(3))
    settings = dict(PAPER, samples=BATCH["samples"], control_points=BATCH["control_points"])
    problem = MotionProblem(model, BATCH["costs"], **settings)
    result = solve(problem, BATCH["weights"])
    times = np.arange(round(PAPER["duration"] * BATCH["rate_hz"]) + 1) / BATCH["rate_hz"]
    return times, result.sample(times, 0)[:, 0]


def estimate_trial(times, q_clean, seed):
    """One synthetic trial (noise seeded by ``seed``) estimated alone: (weights, wall s,
    CPU s of this process). Runs in a worker; builds its own model."""
    start, cpu = time.perf_counter(), time.process_time()
    model = kt.compile_tree(kt.serial_chain(3))
    sigma = np.deg2rad(BATCH["noise_deg"])
    noisy = q_clean + sigma * np.random.default_rng(seed).normal(size=q_clean.shape)
    data = MotionData(times, noisy, model.joint_names, f"synthetic-{seed}", ())
    trial = prepare_trial(model, BATCH["costs"], data, control_points=BATCH["control_points"],
                          samples=BATCH["samples"], limits=PAPER["limits"], noise=sigma)
    weights = estimate_weights([trial], noise=sigma).weights
    return weights, time.perf_counter() - start, time.process_time() - cpu


def warm_worker():
    """Load every kernel a trial needs (the batch problem's Newton evaluation)."""
    model = kt.compile_tree(kt.serial_chain(3))
    settings = dict(PAPER, samples=BATCH["samples"], control_points=BATCH["control_points"])
    problem = MotionProblem(model, BATCH["costs"], **settings)
    problem.evaluate(problem.initial_theta(), BATCH["weights"], hessian="newton")
    return os.getpid()


def batch_rows(n_trials):
    """Throughput rows for n_jobs = 1, 2 and all cores (distinct values)."""
    times, q_clean = batch_truth()
    truth = np.asarray(BATCH["weights"]) / np.sum(BATCH["weights"])
    rows = []
    for n_jobs in sorted({1, min(2, os.cpu_count()), os.cpu_count()}):
        with joblib.Parallel(n_jobs=n_jobs, backend="loky") as parallel:
            start = time.perf_counter()
            parallel(joblib.delayed(warm_worker)() for _ in range(n_jobs))
            start_s = time.perf_counter() - start
            start = time.perf_counter()
            out = parallel(joblib.delayed(estimate_trial)(times, q_clean, seed)
                           for seed in range(n_trials))
            wall = time.perf_counter() - start
        errors = [float(np.sum(np.abs(w - truth))) for w, _, _ in out]
        rows.append({"n_jobs": n_jobs, "trials": n_trials, "start_s": start_s, "wall_s": wall,
                     "trial_s": float(np.median([s for _, s, _ in out])),
                     "trial_cpu_s": float(np.median([c for _, _, c in out])),
                     "per_minute": 60.0 * n_trials / wall, "median_l1": float(np.median(errors))})
    for row in rows:
        row["speedup"] = rows[0]["wall_s"] / row["wall_s"]
    return rows


# --- output ---

def fmt(value, spec, width, missing="-"):
    return f"{missing if value is None else format(value, spec):>{width}s}"


def percent(share, width):
    return fmt(None if share is None else 100.0 * share, ".0f", width)


FD_HEADER = (f"{'FD comp':>7s} {'FD s':>8s} {'n':>2s} {'FD it':>5s} {'FD stat':>7s} "
             f"{'FD status':>10s} {'FD/str':>6s}")


def fd_cells(fd):
    if "skipped" in fd:
        return f"{'skipped (' + fd['skipped'] + ')':>{len(FD_HEADER)}s}"
    return (f"{fd['compile_s']:7.1f} {fd['wall_s']:8.2f} {fd['n']:2d} {fd['iterations']:5d} "
            f"{fd['stationarity']:7.0e} {fd['status'][:10]:>10s} {fd['ratio']:6.1f}")


def target_cell(row):
    if row["target_s"] is None:
        return "-"
    return f"< {row['target_s']:g} s: {'met' if row['target_met'] else 'not met'}"


def print_block(title, header, lines):
    """A title line, the header, a rule and the lines."""
    print(title)
    print(header)
    print("-" * len(header))
    for line in lines:
        print(line)


def direct_line(row):
    return (f"{row['case']:11s} {row['nv']:3d} {row['n_free']:5d} {row['compile_s']:9.1f} "
            f"{row['iterations']:4d} {row['stationarity']:7.0e} {row['status'][:10]:>10s} "
            f"{row['wall_s']:8.2f} {row['n']:2d} {row['per_iteration_s']:6.3f} "
            f"{percent(row['terms_share'], 7)} {percent(row['cmtm_share'], 6)} "
            f"{percent(row['hessian_share'], 6)} | {fd_cells(row['fd'])} | "
            f"{row['kkt_ms']:6.1f} {row['kkt_l1']:7.0e} | {target_cell(row)}")


def batch_line(row):
    return (f"{row['n_jobs']:6d} {row['start_s']:7.1f} {row['wall_s']:7.1f} "
            f"{row['trial_s']:7.2f} {row['trial_cpu_s']:6.2f} {row['per_minute']:10.1f} "
            f"{row['speedup']:8.2f} {row['median_l1']:9.3f}")


def print_table(rows, batch, args, wall_s):
    cache = "project's cache (--cached): load" if args.cached else "empty cache: cold compile"
    print_block(
        f"Direct solves (ioc.optimize.direct.solve, default options), median of up to "
        f"{args.repeats} warm solves (n timed, --budget {args.budget:g} s); compile s = first "
        f"minus second Newton evaluation ({cache}); terms % / cmtm % / hess % of the wall time in "
        f"term_values / in the engine calls / in the Newton Hessian's differences; FD = "
        f"jacobians='finite_differences'; KKT = recover_weights on the structured "
        f"solution, L1 against the normalised true weights",
        f"{'case':11s} {'nv':>3s} {'free':>5s} {'compile s':>9s} {'it':>4s} {'stat':>7s} "
        f"{'status':>10s} {'wall s':>8s} {'n':>2s} {'s/it':>6s} {'terms %':>7s} "
        f"{'cmtm %':>6s} {'hess %':>6s} | {FD_HEADER} | {'KKT ms':>6s} {'L1':>7s} | target",
        map(direct_line, rows))
    if batch:
        print()
        print_block(
            f"Batch throughput: {batch[0]['trials']} synthetic chain3 trials (case (c) terms, "
            f"weights {BATCH['weights']}, {BATCH['samples']} samples, "
            f"{BATCH['control_points']} control points, {BATCH['rate_hz']:g} Hz, "
            f"{BATCH['noise_deg']} deg noise), each estimate_weights([trial]) through "
            f"joblib.Parallel(n_jobs, loky); start s = starting workers and loading kernels; "
            f"trial s / cpu s: a trial's median wall / CPU time",
            f"{'n_jobs':>6s} {'start s':>7s} {'wall s':>7s} {'trial s':>7s} {'cpu s':>6s} "
            f"{'trials/min':>10s} {'speed-up':>8s} {'median L1':>9s}",
            map(batch_line, batch))
    print(f"{os.cpu_count()} cores; load average (1 min) {args.load[0]:.1f} at the start, "
          f"{args.load[1]:.1f} at the end (other processes share the cores); script wall "
          f"time {wall_s:.0f} s")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="no human, no FD for the Panda, 1 timed solve, 4 trials")
    parser.add_argument("--repeats", type=int, default=None, help="timed solves per case (3)")
    parser.add_argument("--budget", type=float, default=30.0,
                        help="stop repeating a case once its timed solves took this long (s)")
    parser.add_argument("--skip-human", action="store_true", help="no 36-joint human")
    parser.add_argument("--fd-max-nv", type=int, default=10,
                        help="skip the FD solves of larger models (default 10: the human)")
    parser.add_argument("--trials", type=int, default=None,
                        help="synthetic trials per batch row (8; 0 skips the batch)")
    parser.add_argument("--cached", action="store_true",
                        help="use the project's Numba cache instead of an empty one")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    args.repeats = args.repeats or (1 if args.quick else 3)
    args.trials = (4 if args.quick else 8) if args.trials is None else args.trials
    args.skip_human = args.skip_human or args.quick
    return args


def main():
    args = parse_args()
    start = time.perf_counter()
    load = os.getloadavg()[0]
    rows = []
    for case in direct_cases(args.skip_human):
        rows.append(solve_row(*case, args))
        print(f"  done {case[0]}: {rows[-1]['wall_s']:.2f} s", file=sys.stderr, flush=True)
    batch = batch_rows(args.trials) if args.trials else []
    wall_s = time.perf_counter() - start
    args.load = (load, os.getloadavg()[0])
    print_table(rows, batch, args, wall_s)
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "batch": batch, "wall_s": wall_s},
                                        indent=2, default=float))


if __name__ == "__main__":
    main()
