"""Is the engine competitive at order 0, how does it scale with threads, and what does its
Numba compilation cost?

One run prints five blocks, every number measured in that run:

1. The batched order-0 functions of cmtm per sample against Pinocchio (C++) called per
   sample from a Python loop, on the Panda (nv = 7) and a 128-link serial chain, --samples
   samples per call, one Numba thread (``numba.set_num_threads(1)`` around the calls;
   Pinocchio is single-threaded):

   * cmtm.inverse_dynamics(order=0) vs pinocchio.rnea;
   * cmtm.mass_matrix vs pinocchio.crba;
   * cmtm.link_poses vs pinocchio.forwardKinematics (positions only);
   * cmtm.motion(order=0) (all outputs: velocities, momenta local and world, forces,
     torques), which has no single Pinocchio counterpart and is shown for its cost next to
     the RNEA.

   Columns: cmtm us and pin us per sample; pin/cmtm (> 1: cmtm faster); rel err, the
   largest difference relative to Pinocchio's largest entry (checked <= 1e-9 before
   anything is timed); cold s and cached s, the function's row of block 4.

2. The order-0 torque Jacobian: ``cmtm.jacobian(model, q_stack, "joint_torque", order=0)``
   over --jacobian-samples (200) samples, ``J[s, 0, :, r, :] = d tau / d q^(r)``, against
   ``pinocchio.computeRNEADerivatives(model, data, q, v, a)`` per sample, one thread, on the
   Panda, ``serial_chain(32)`` and ``serial_chain(128)``. rel err is the largest over the
   three blocks r of max |J_r - P_r| / max |P_r|, with P = data.dtau_dq, data.dtau_dv and
   data.M (= dtau/da; Pinocchio fills its upper triangle only, so it is symmetrized);
   checked <= 1e-9 before timing. cmtm/pin (< 1: cmtm faster) and the target of issue 11,
   "within 2x of Pinocchio" (cmtm/pin <= 2), met or not met. Next to it, the order-0
   link-velocity Jacobian ``cmtm.jacobian(model, q_stack, "link_velocity", order=0)``
   (d nu / d q, d nu / d q' of every link, body frames) against
   ``pinocchio.computeForwardKinematicsDerivatives`` and ``getJointVelocityDerivatives``
   (LOCAL) of every joint per sample, checked the same way; Pinocchio's per-joint calls
   include Python's per-call overhead, as for any Python user.

3. Thread scaling: the same 200-sample torque Jacobian, the 200-sample order-1 torque
   Jacobian (about four times the work per sample) and ``cmtm.inverse_dynamics`` (order 0,
   --samples samples) on the Panda and ``serial_chain(32)`` with
   ``numba.set_num_threads(t)`` for t = 1 .. numba.config.NUMBA_NUM_THREADS, in
   THREAD_ROUNDS rounds, each of which times every t in turn: us per sample (median round),
   speed-up over t = 1 (the median over the rounds of each round's speed-up, and the best
   round's), and whether the result is bit-for-bit that of t = 1 (``np.array_equal``).
   Target of issue 11: a 200-sample Jacobian >= 1.7x on 2 threads (median speed-up),
   judged on each of the two. Kernels that
   are not parallel show a speed-up of about 1. Each round ends with the machine's own
   two-core ceiling (``ProcessPair``): two fresh interpreters making the same one-thread
   call, one alone and then both at once, 2 x (alone) / (the slower at once) of median call
   times over windows of at least 0.3 s, on the t = 2 row (median and best round): on a
   shared virtual machine two vCPUs need not run two independent processes at twice the
   speed of one, and no split of the samples beats that. "window" is the speed-up timed as
   the ceiling is (the median call over such a window, calls back to back, each t in turn
   in every round; median of the rounds), so that it compares like with like with the
   ceiling; the target is judged on the best-of-R speed-up (its median round).

4. Compile (model-independent: Numba compiles per argument type, not per model; all on the
   Panda). "cold s" is the first call minus a second, steady call in a fresh interpreter
   with an empty NUMBA_CACHE_DIR (a temporary directory), each case in its own interpreter
   so that it pays for every kernel it needs; "cached s" is the same in a second
   interpreter reusing that directory (loading the cache); "import s" is ``import cmtm,
   kinematic_trees`` in the cold interpreter (the cached one under --quick or
   --no-compile). One case per public function of cmtm (``__all__``), with the orders that
   select different kernels (COMPILE_CASES); then "all public functions together" (every
   case in one interpreter; target <= 20 s cold), the same with ``cmtm.precompile()``
   first (every kernel compiled by one process per CPU at once, then loaded; its time
   included) and the command line ``cmtm
   check-jacobians --model panda --order 2`` (CLI_ARGS, run as the ``cmtm`` entry point
   ``ioc.commands.cli:main``; its whole wall time including interpreter start and imports, and the
   parallel compile of the kernels it runs, which the command starts itself on a cold cache
   (``cmtm.precompile`` with its units); target <= 30 s cold; rel err is the largest
   structured-vs-FD difference it reports).

5. One instant per call: the same calls as blocks 1 and 2 on one sample (q_stack of shape
   (1, 4, nv)), Panda, one Numba thread, best of INSTANT_REPEATS calls: what a user who
   calls cmtm once per instant (a control loop) pays per call, validation and result
   checks included, against one Pinocchio call from Python. Columns as block 1.

Times are the best of R repeats after a warm-up; the Pinocchio loop includes Python's
per-call overhead (about a microsecond), which is what a Python user pays. Under the
blocks: the warm import time of ``import cmtm, kinematic_trees`` (best of N fresh
interpreters, cache warm), the script's wall time and the 1-minute load average at its
start and end (on a shared machine other processes take cores too), and a warning if the
sources of cmtm, kinematic_trees or ioc changed during the run.

Usage: python bench/bench_order0.py [--quick] [--samples N] [--jacobian-samples N]
       [--repeats R] [--no-compile] [--json PATH]
--quick: 200 samples, 3 repeats, no cold-compile subprocesses (under a minute); the
"cached s" column then loads the project's own Numba cache.
"""
import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# Run from a checkout: the repository root first (an outdated editable install must not
# shadow it), and tests/ for the Pinocchio model builder.
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import pinocchio  # noqa: E402

import cmtm  # noqa: E402
import kinematic_trees as kt  # noqa: E402
from pinocchio_ref import to_pinocchio  # noqa: E402
from timing import best_seconds  # noqa: E402

AGREEMENT = 1e-9
"""Relative agreement (to the largest entry) required before timing; two O(n) recursions
over 128 links in float64 agree to ~1e-13."""

FUNCTIONS = ("inverse_dynamics", "mass_matrix", "link_poses", "motion")
TORQUE_JACOBIAN = "jacobian joint_torque"
TORQUE_JACOBIAN_1 = "jacobian joint_torque order 1"
VELOCITY_JACOBIAN = "jacobian link_velocity"
LOCAL = pinocchio.ReferenceFrame.LOCAL

JACOBIAN_RATIO_TARGET = 2.0
"""Issue 11: the order-0 torque Jacobian within 2x of Pinocchio's computeRNEADerivatives."""
SPEEDUP_TARGET = (2, 1.7)
"""Issue 11: a 200-sample torque Jacobian (order 0 or 1) >= 1.7x faster on 2 threads than
on 1."""

COMPILE_CASES = {
    "inverse_dynamics": "cmtm.inverse_dynamics(model, q_stack, order=0)",
    "inverse_dynamics order 1": "cmtm.inverse_dynamics(model, q_stack, order=1)",
    "mass_matrix": "cmtm.mass_matrix(model, q_stack[:, 0])",
    "link_poses": "cmtm.link_poses(model, q_stack[:, 0])",
    "link_transform_derivatives": "cmtm.link_transform_derivatives(model, q_stack, order=1)",
    "motion": "cmtm.motion(model, q_stack, order=0)",
    TORQUE_JACOBIAN: "cmtm.jacobian(model, q_stack, 'joint_torque', order=0)",
    "jacobian link_velocity": "cmtm.jacobian(model, q_stack, 'link_velocity', order=0)",
    "jacobian joint_torque order 1": "cmtm.jacobian(model, q_stack, 'joint_torque', order=1)",
    "jacobian link_velocity order 1": "cmtm.jacobian(model, q_stack, 'link_velocity', order=1)",
    "jacobians 3 quantities order 1": (
        "cmtm.jacobians(model, q_stack, ('link_velocity', 'link_momentum', 'joint_torque'), "
        "order=1)"),
    "jacobian_chunks order 1": (
        "list(cmtm.jacobian_chunks(model, q_stack, ('joint_force', 'joint_torque'), order=1, "
        "chunk=2))"),
    "flatten_jacobian": "cmtm.flatten_jacobian(np.ones((4, 2, 7, 4, 7)), taylor=True)",
}
"""Compile cases: name -> the call, on the Panda with q_stack (4, 5, nv) (orders enough for
torques of order 2). The cheap helpers of ``__all__`` (jacobian_input_orders,
jacobians_nbytes, memory_budget) run no kernel and are left out."""
ALL_TOGETHER = "all public functions together"
ALL_TOGETHER_TARGET = 20.0
PRECOMPILED = "all together after cmtm.precompile()"
CLI_ARGS = ("check-jacobians", "--model", "panda", "--order", "2")
CLI_CASE = "cmtm " + " ".join(CLI_ARGS)
CLI_TARGET = 30.0

FIRST_CALLS = """
import json, sys, time
sys.path.insert(0, {root!r})
start = time.perf_counter()
import numpy as np
import cmtm, kinematic_trees as kt
import_s = time.perf_counter() - start
model = kt.compile_tree(kt.panda())
q_stack = np.random.default_rng(0).uniform(-1, 1, (4, 5, model.nv))
def calls():
{calls}
seconds = []
for round in range(2):
    start = time.perf_counter()
    if round == 0:
        {prelude}
    calls()
    seconds.append(time.perf_counter() - start)
print(json.dumps({{"import": import_s, "first": seconds[0], "steady": seconds[1]}}))
"""

CLI = ("import sys; sys.path.insert(0, {root!r}); from ioc.commands.cli import main; "
       "sys.exit(main())")

IMPORT = """
import sys, time
sys.path.insert(0, {root!r})
start = time.perf_counter()
import cmtm, kinematic_trees
print(time.perf_counter() - start)
"""


# --- compile and import times (subprocesses) ---

def run_python(code, cache_dir=None, args=()):
    """stdout of ``python -c code *args``, with NUMBA_CACHE_DIR set if given."""
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    result = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                            text=True, cwd=tempfile.gettempdir())
    if result.returncode != 0:
        raise RuntimeError(f"subprocess failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def first_calls(calls, cache_dir, prelude="pass"):
    """{"import", "compile"} seconds of a fresh interpreter making ``calls`` (expressions of
    COMPILE_CASES): the import, and the first calls minus a second, steady round; the
    statement ``prelude`` runs before the first round, inside its time."""
    code = FIRST_CALLS.format(root=str(ROOT), calls="\n".join(f"    {c}" for c in calls),
                              prelude=prelude)
    times = json.loads(run_python(code, cache_dir).splitlines()[-1])
    return {"import": times["import"], "compile": times["first"] - times["steady"]}


def cli_run(cache_dir):
    """{"wall", "rel_diff"}: wall seconds of ``cmtm CLI_ARGS --json`` in a fresh interpreter
    and the largest structured-vs-FD difference it reports (SystemExit if it fails)."""
    start = time.perf_counter()
    try:
        out = run_python(CLI.format(root=str(ROOT)), cache_dir, CLI_ARGS + ("--json",))
    except RuntimeError as error:
        raise SystemExit(f"{CLI_CASE} failed: {error}") from None
    wall = time.perf_counter() - start
    return {"wall": wall, "rel_diff": max(row["rel_diff"] for row in json.loads(out)["rows"])}


def cold_and_cached(measure, cold):
    """(cold, cached) results of ``measure(cache_dir)`` in fresh interpreters.

    cold: an empty temporary NUMBA_CACHE_DIR, then a second interpreter loading that cache.
    Without cold, (None, cached) with the project's own (already warm) cache.
    """
    if not cold:
        return None, measure(None)
    with tempfile.TemporaryDirectory(prefix="cmtm-numba-cache-") as cache_dir:
        return measure(cache_dir), measure(cache_dir)


def compile_row(case, calls, cold, prelude="pass"):
    """Row of block 4 for a case making ``calls`` in fresh interpreters (after ``prelude``)."""
    first, cached = cold_and_cached(lambda cache_dir: first_calls(calls, cache_dir, prelude),
                                    cold)
    return {"case": case, "import_s": (first or cached)["import"],
            "cold_s": None if first is None else first["compile"],
            "cached_s": cached["compile"], "max_rel_error": None}


def compile_rows(cold):
    """Rows of block 4: every case of COMPILE_CASES, all of them together, the CLI."""
    rows = [compile_row(case, [call], cold) for case, call in COMPILE_CASES.items()]
    rows.append(compile_row(ALL_TOGETHER, list(COMPILE_CASES.values()), cold))
    rows.append(compile_row(PRECOMPILED, list(COMPILE_CASES.values()), cold,
                            prelude="cmtm.precompile()"))
    rows[-2]["target_s"] = rows[-1]["target_s"] = ALL_TOGETHER_TARGET
    first, cached = cold_and_cached(cli_run, cold)
    rows.append({"case": CLI_CASE, "import_s": None,
                 "cold_s": None if first is None else first["wall"], "cached_s": cached["wall"],
                 "max_rel_error": max(run["rel_diff"] for run in (first, cached) if run),
                 "target_s": CLI_TARGET})
    for row in rows:
        row["target"] = (None if row.get("target_s") is None or row["cold_s"] is None
                         else verdict(row["cold_s"] <= row["target_s"]))
    return rows


def sources_modified():
    """Latest modification time of the engine's and the command line's sources: compile
    numbers mix versions when another edit lands during the run."""
    return max(path.stat().st_mtime for package in ("cmtm", "kinematic_trees", "ioc")
               for path in (ROOT / package).glob("*.py"))


def import_seconds(repeats):
    """Best of ``repeats`` warm imports of cmtm and kinematic_trees in fresh interpreters."""
    return min(float(run_python(IMPORT.format(root=str(ROOT))).splitlines()[-1])
               for _ in range(repeats))


# --- per-sample timing ---

@contextlib.contextmanager
def numba_threads(n):
    """Run the block with ``n`` Numba threads, then restore the previous number."""
    previous = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def relative_error(actual, desired):
    """max |actual - desired| / max |desired|."""
    return float(np.max(np.abs(actual - desired)) / np.max(np.abs(desired)))


def max_relative_error(function, ours, theirs):
    """relative_error; for the torque Jacobian the largest over its blocks d tau / d q^(r),
    each relative to its own largest entry."""
    if function != TORQUE_JACOBIAN:
        return relative_error(ours, theirs)
    return max(relative_error(ours[:, :, r], theirs[:, :, r]) for r in range(ours.shape[2]))


def verdict(met):
    return "met" if met else "not met"


def symmetrized(upper):
    """The symmetric matrix whose upper triangle is that of ``upper`` (crba,
    computeRNEADerivatives' data.M)."""
    return np.triu(upper) + np.triu(upper, 1).T


def bench_model(name):
    """The CompiledTree of a model name of the tables: "panda" or "serial_chain(N)"."""
    if name == "panda":
        return kt.compile_tree(kt.panda())
    return kt.compile_tree(kt.serial_chain(int(name[len("serial_chain("):-1])))


def random_stack(rng, n_samples, nv):
    """Raw stack (n_samples, 4, nv): q, q', q'', q''' uniform in [-1, 1] (q''' for the
    order-1 torque Jacobian; order-0 calls ignore it)."""
    return rng.uniform(-1.0, 1.0, (n_samples, 4, nv))


def cmtm_calls(model, q_stack):
    """The cmtm calls, by function name, returning results in Pinocchio's per-sample layout
    (the torque Jacobian as (n_samples, nv, 3, nv))."""
    q = np.ascontiguousarray(q_stack[:, 0])
    return {
        "inverse_dynamics": lambda: cmtm.inverse_dynamics(model, q_stack, order=0)[:, 0],
        "mass_matrix": lambda: cmtm.mass_matrix(model, q),
        "link_poses": lambda: cmtm.link_poses(model, q),
        "motion": lambda: cmtm.motion(model, q_stack, order=0),
        TORQUE_JACOBIAN: lambda: cmtm.jacobian(model, q_stack, "joint_torque", order=0)[:, 0],
        TORQUE_JACOBIAN_1: lambda: cmtm.jacobian(model, q_stack, "joint_torque", order=1),
        VELOCITY_JACOBIAN: lambda: cmtm.jacobian(model, q_stack, "link_velocity",
                                                 order=0)[:, 0],
    }


def pinocchio_calls(pin_model, q_stack):
    """Per-sample Pinocchio loops and their outputs in our layout, for each function."""
    data = pin_model.createData()
    q, v, a = ([np.ascontiguousarray(row) for row in q_stack[:, r]] for r in range(3))
    n = len(q)
    joints = range(1, pin_model.njoints)
    zero = np.zeros(pin_model.nv)

    def rnea():
        for i in range(n):
            pinocchio.rnea(pin_model, data, q[i], v[i], a[i])

    def crba():
        for i in range(n):
            pinocchio.crba(pin_model, data, q[i])

    def forward_kinematics():
        for i in range(n):
            pinocchio.forwardKinematics(pin_model, data, q[i])

    def rnea_derivatives():
        for i in range(n):
            pinocchio.computeRNEADerivatives(pin_model, data, q[i], v[i], a[i])

    def velocity_derivatives():
        for i in range(n):
            pinocchio.computeForwardKinematicsDerivatives(pin_model, data, q[i], v[i], zero)
            for j in joints:
                pinocchio.getJointVelocityDerivatives(pin_model, data, j, LOCAL)

    def outputs(function):
        """Pinocchio's result for every sample, in cmtm's layout (for the agreement check)."""
        result = []
        for i in range(n):
            if function == "inverse_dynamics":
                result.append(pinocchio.rnea(pin_model, data, q[i], v[i], a[i]).copy())
            elif function == "mass_matrix":
                result.append(symmetrized(pinocchio.crba(pin_model, data, q[i])))
            elif function == VELOCITY_JACOBIAN:
                pinocchio.computeForwardKinematicsDerivatives(pin_model, data, q[i], v[i], zero)
                blocks = [pinocchio.getJointVelocityDerivatives(pin_model, data, j, LOCAL)
                          for j in joints]
                result.append(np.stack([np.vstack([np.vstack([b[r][3:], b[r][:3]])
                                                   for b in blocks]) for r in range(2)],
                                       axis=1))
            elif function == TORQUE_JACOBIAN:
                pinocchio.computeRNEADerivatives(pin_model, data, q[i], v[i], a[i])
                result.append(np.stack([data.dtau_dq, data.dtau_dv, symmetrized(data.M)],
                                       axis=1))
            else:
                pinocchio.forwardKinematics(pin_model, data, q[i])
                result.append([data.oMi[j].homogeneous for j in joints])
        return np.array(result)

    return {"inverse_dynamics": rnea, "mass_matrix": crba, "link_poses": forward_kinematics,
            TORQUE_JACOBIAN: rnea_derivatives,
            VELOCITY_JACOBIAN: velocity_derivatives}, outputs


def compare(name, model, q_stack, functions, repeats):
    """Rows (model, nv, function, cmtm s/sample, pinocchio s/sample or None, error), one
    Numba thread; SystemExit if a result differs from Pinocchio's."""
    calls = cmtm_calls(model, q_stack)
    pin_calls, pin_outputs = pinocchio_calls(to_pinocchio(model), q_stack)
    n_samples = len(q_stack)
    rows = []
    with numba_threads(1):
        for function in functions:
            error = None
            if function in pin_calls:
                error = max_relative_error(function, calls[function](), pin_outputs(function))
                if not error <= AGREEMENT:
                    raise SystemExit(f"{name} {function}: cmtm and Pinocchio differ by "
                                     f"{error:.2e} relative (> {AGREEMENT:.0e}); not timing "
                                     f"a wrong result")
            ours_s = best_seconds(calls[function], repeats)[0] / n_samples
            pin_s = (best_seconds(pin_calls[function], repeats)[0] / n_samples
                     if function in pin_calls else None)
            rows.append({"model": name, "nv": model.nv, "function": function,
                         "samples": n_samples, "cmtm_us": 1e6 * ours_s,
                         "pinocchio_us": None if pin_s is None else 1e6 * pin_s,
                         "pin_over_cmtm": None if pin_s is None else pin_s / ours_s,
                         "max_rel_error": error})
    return rows


def jacobian_rows(models, n_samples, repeats, rng):
    """Block 2: the torque Jacobian vs computeRNEADerivatives, with the 2x target, and the
    link-velocity Jacobian vs Pinocchio's velocity derivatives."""
    rows = [row for name, model in models.items()
            for row in compare(name, model, random_stack(rng, n_samples, model.nv),
                               (TORQUE_JACOBIAN, VELOCITY_JACOBIAN), repeats)]
    for row in rows:
        row["cmtm_over_pin"] = 1.0 / row["pin_over_cmtm"]
        row["target"] = (verdict(row["cmtm_over_pin"] <= JACOBIAN_RATIO_TARGET)
                         if row["function"] == TORQUE_JACOBIAN else None)
    return rows


INSTANT_REPEATS = 500
"""Calls timed per function in block 5 (its calls take microseconds: 500 are a few ms)."""

THREAD_ROUNDS = 5
"""Rounds of block 3. Each round times every thread count in turn (best of --repeats calls),
so that each round's speed-up compares times taken side by side; a count's speed-up is the
median of its rounds' (the target is judged on it), shown with the best round's. On this
project's shared machine the same code's two-thread speed-up ranged from 0.87x to 1.77x
between runs minutes apart (2026-12-01), as another tenant took the second core or not."""


PAIR_WORKER = """
import sys, time
sys.path.insert(0, {bench!r})
import numba, numpy as np
import bench_order0 as bench
numba.set_num_threads(1)
model = bench.bench_model(sys.argv[1])
q_stack = bench.random_stack(np.random.default_rng(0), int(sys.argv[3]), model.nv)
call = bench.cmtm_calls(model, q_stack)[sys.argv[2]]
for _ in range(3):
    call()
print("ready", flush=True)
for line in sys.stdin:
    start_at, deadline = map(float, line.split())
    time.sleep(max(0.0, start_at - time.time()))
    print(bench.median_call_seconds(call, deadline), flush=True)
"""
"""A worker of :class:`ProcessPair`: the one-thread call of a block-3 case, warmed up, then
for each line "start_at deadline" (time.time() seconds) the median time of the calls it
makes back to back from start_at until the deadline (the median: the best call of a window
was seen to come from a lull of the other tenants, alone or paired, giving ceilings above
2)."""

PAIR_WINDOW = (0.3, 10)
"""A ProcessPair window: at least 0.3 s and 10 one-thread calls."""


def pair_window(one_call_s):
    """Seconds of a window (:data:`PAIR_WINDOW`) for a one-thread call of one_call_s."""
    return max(PAIR_WINDOW[0], PAIR_WINDOW[1] * one_call_s)


def median_call_seconds(call, deadline):
    """Median wall time of ``call`` made back to back until ``deadline`` (time.time()
    seconds; at least one call)."""
    seconds = []
    while not seconds or time.time() < deadline:
        began = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - began)
    return float(np.median(seconds))


class ProcessPair:
    """Two interpreters that make the same one-thread call of a block-3 case with nothing
    shared: the machine's own ceiling for two threads. Each round times both at once over
    one window, between two windows of one alone; the ceiling is 2 x (alone) / (the slower
    of the two at once), the speed-up that splitting the work in two halves across two
    cores could reach if the split cost nothing. Both sleep on their input between
    windows."""

    def __init__(self, name, function, n_samples):
        code = PAIR_WORKER.format(bench=str(Path(__file__).resolve().parent))
        self.workers = [subprocess.Popen(
            [sys.executable, "-c", code, name, function, str(n_samples)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(2)]
        for worker in self.workers:
            if worker.stdout.readline().strip() != "ready":
                raise RuntimeError(f"ProcessPair worker for {name} {function} failed")

    def call_seconds(self, workers, window):
        """Median call time of each of ``workers`` (indices) over one window, all at once."""
        start_at = time.time() + 0.05
        for index in workers:
            self.workers[index].stdin.write(f"{start_at} {start_at + window}\n")
            self.workers[index].stdin.flush()
        return [float(self.workers[index].stdout.readline()) for index in workers]

    def ceiling(self, one_call_s):
        """One round's ceiling, in windows of PAIR_WINDOW: one worker alone before and after
        the pair (its better window: the machine's speed drifts between windows)."""
        window = pair_window(one_call_s)
        before, = self.call_seconds([0], window)
        together = max(self.call_seconds([0, 1], window))
        after, = self.call_seconds([0], window)
        return 2 * min(before, after) / together

    def close(self):
        for worker in self.workers:
            worker.stdin.close()
            worker.wait()


def thread_scaling(name, model, function, q_stack, repeats, rounds=THREAD_ROUNDS):
    """Block 3 rows of one model and function for 1 .. NUMBA_NUM_THREADS threads, timed in
    ``rounds`` alternating rounds; each round ends with the machine's two-core ceiling
    (:class:`ProcessPair`), shown on the two-thread row."""
    call = cmtm_calls(model, q_stack)[function]
    counts = range(1, numba.config.NUMBA_NUM_THREADS + 1)
    results, times = {}, {threads: [] for threads in counts}
    for threads in counts:
        with numba_threads(threads):
            results[threads] = call()
    pair = ProcessPair(name, function, len(q_stack)) if len(counts) > 1 else None
    ceilings, windows = [], {threads: [] for threads in counts}
    try:
        for _ in range(rounds):
            for threads in counts:
                with numba_threads(threads):
                    times[threads].append(best_seconds(call, repeats)[0])
            window = pair_window(times[1][-1])
            for threads in counts:
                with numba_threads(threads):
                    windows[threads].append(median_call_seconds(call, time.time() + window))
            if pair is not None:
                ceilings.append(pair.ceiling(times[1][-1]))
    finally:
        if pair is not None:
            pair.close()
    rows = []
    for threads in counts:
        speedups = np.array(times[1]) / np.array(times[threads])
        target = None
        if function in (TORQUE_JACOBIAN, TORQUE_JACOBIAN_1) and threads == SPEEDUP_TARGET[0]:
            target = verdict(np.median(speedups) >= SPEEDUP_TARGET[1])
        ceiling = float(np.median(ceilings)) if threads == 2 else None
        rows.append({"model": name, "nv": model.nv, "function": function,
                     "samples": len(q_stack), "threads": threads,
                     "cmtm_us": 1e6 * np.median(times[threads]) / len(q_stack),
                     "speedup": np.median(speedups), "best_speedup": speedups.max(),
                     "window_speedup": np.median(np.array(windows[1])
                                                 / np.array(windows[threads])),
                     "ceiling": ceiling,
                     "best_ceiling": None if ceiling is None else max(ceilings),
                     "identical": bool(np.array_equal(results[threads], results[1])),
                     "target": target})
    return rows


def thread_rows(models, jacobian_samples, samples, repeats, rng):
    """Block 3: the torque Jacobians of orders 0 and 1 and inverse dynamics over the thread
    counts."""
    rows = []
    for name, model in models.items():
        for function, n_samples in ((TORQUE_JACOBIAN, jacobian_samples),
                                    (TORQUE_JACOBIAN_1, jacobian_samples),
                                    ("inverse_dynamics", samples)):
            q_stack = random_stack(rng, n_samples, model.nv)
            rows += thread_scaling(name, model, function, q_stack, repeats)
    return rows


# --- output ---

def cell(value, fmt, width):
    return f"{'-' if value is None else format(value, fmt):>{width}s}"


def print_rows(title, columns, rows):
    """A titled block: columns are (header, row key, format, width); '' formats a string."""
    print(title)
    header = " ".join(f"{h:{'<' if f == '' else '>'}{w}s}" for h, _, f, w in columns)
    print(header.rstrip())
    print("-" * len(header))
    for row in rows:
        print(" ".join(f"{'-' if row.get(key) is None else str(row[key]):<{w}s}" if f == ""
                       else cell(row.get(key), f, w) for _, key, f, w in columns).rstrip())
    print()


MODEL_COLUMNS = [("model", "model", "", 17), ("nv", "nv", "d", 3)]
CMTM_US = ("cmtm us", "cmtm_us", ".2f", 9)
PIN_US = ("pin us", "pinocchio_us", ".2f", 9)
REL_ERR = ("rel err", "max_rel_error", ".0e", 8)
TARGET = ("target", "target", "", 7)
COLD_S = ("cold s", "cold_s", ".1f", 7)
CACHED_S = ("cached s", "cached_s", ".2f", 8)
"""Columns shared by the blocks: (header, row key, format, width)."""


def print_tables(blocks, args):
    rows, jacobians, threads, compiles, instants = blocks
    print_rows(
        f"1. Order-0 cmtm (batched, {args.samples} samples per call, 1 Numba thread) vs "
        f"Pinocchio {pinocchio.__version__} (per-sample Python loop); best of {args.repeats}; "
        f"us/sample; pin/cmtm > 1: cmtm faster; cold/cached s: block 4",
        MODEL_COLUMNS + [("function", "function", "", 17), CMTM_US, PIN_US,
                         ("pin/cmtm", "pin_over_cmtm", ".2f", 8), REL_ERR,
                         COLD_S, CACHED_S], rows)
    print_rows(
        f"2. Order-0 Jacobians, cmtm.jacobian(..., order=0) over {args.jacobian_samples} "
        f"samples vs Pinocchio per sample, 1 thread: joint_torque vs "
        f"computeRNEADerivatives (target cmtm/pin <= {JACOBIAN_RATIO_TARGET:g}), "
        f"link_velocity vs computeForwardKinematicsDerivatives + getJointVelocityDerivatives "
        f"(LOCAL) of every joint",
        MODEL_COLUMNS + [("function", "function", "", 23), CMTM_US, PIN_US,
                         ("cmtm/pin", "cmtm_over_pin", ".2f", 8), REL_ERR, TARGET], jacobians)
    print_rows(
        f"3. Thread scaling, numba.set_num_threads(t), t = 1..{numba.config.NUMBA_NUM_THREADS} "
        f"({numba.threading_layer()} layer), {THREAD_ROUNDS} rounds, each timing every t "
        f"(best of {args.repeats}); cmtm us: median round; speedup vs 1 thread: median of the "
        f"rounds' speedups, best: the best round's; ceiling: two processes making the "
        f"one-thread call at once, 2 x (alone) / (slower of the two), median call times, "
        f"median and best round (what two cores give with nothing shared); window: the "
        f"speed-up over windows of calls timed as the ceiling is (median round); identical: "
        f"np.array_equal with 1 thread; target: each Jacobian's median speedup >= "
        f"{SPEEDUP_TARGET[1]:g}x on "
        f"{SPEEDUP_TARGET[0]} threads",
        MODEL_COLUMNS + [("function", "function", "", 29), ("samples", "samples", "d", 7),
                         ("threads", "threads", "d", 7), CMTM_US,
                         ("speedup", "speedup", ".2f", 7), ("best", "best_speedup", ".2f", 5),
                         ("ceiling", "ceiling", ".2f", 7), ("best", "best_ceiling", ".2f", 5),
                         ("window", "window_speedup", ".2f", 6),
                         ("identical", "identical", "", 9), TARGET], threads)
    print_rows(
        "4. Compile, Panda, fresh interpreters: cold s = first call minus a steady call with "
        "an empty NUMBA_CACHE_DIR" + ("" if args.cold else " (not measured: --quick or "
                                      "--no-compile)")
        + ", cached s = the same loading " + ("that cache" if args.cold else
                                              "the project's warm cache")
        + f"; the CLI row is its whole wall time; targets: together <= {ALL_TOGETHER_TARGET:g} "
          f"s, CLI <= {CLI_TARGET:g} s (cold)",
        [("case", "case", "", 44), ("import s", "import_s", ".2f", 8), COLD_S, CACHED_S,
         REL_ERR, ("target s", "target_s", "g", 8), TARGET], compiles)
    print_rows(
        f"5. One instant per call (q_stack (1, 4, nv)), 1 Numba thread, best of "
        f"{INSTANT_REPEATS} calls: us per call, cmtm (validation and checks included) vs one "
        f"Pinocchio call from Python; pin/cmtm > 1: cmtm faster",
        MODEL_COLUMNS + [("function", "function", "", 23), CMTM_US, PIN_US,
                         ("pin/cmtm", "pin_over_cmtm", ".2f", 8), REL_ERR], instants)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="200 samples, 3 repeats, no cold-compile subprocesses")
    parser.add_argument("--samples", type=int, default=None,
                        help="samples per call of blocks 1 and 3's inverse dynamics (1000)")
    parser.add_argument("--jacobian-samples", type=int, default=200,
                        help="samples per torque Jacobian call (%(default)s)")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (7)")
    parser.add_argument("--no-compile", action="store_true",
                        help="skip the cold-compile subprocesses (cached load still timed)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    args.samples = args.samples or (200 if args.quick else 1000)
    args.repeats = args.repeats or (3 if args.quick else 7)
    args.import_repeats = 3 if args.quick else 7
    cold = args.cold = not (args.quick or args.no_compile)
    start, load_start, sources = time.perf_counter(), os.getloadavg()[0], sources_modified()

    rng = np.random.default_rng(0)
    models = {name: bench_model(name)
              for name in ("panda", "serial_chain(32)", "serial_chain(128)")}
    rows = [row for name in ("panda", "serial_chain(128)")
            for row in compare(name, models[name], random_stack(rng, args.samples,
                                                                models[name].nv),
                               FUNCTIONS, args.repeats)]
    jacobians = jacobian_rows(models, args.jacobian_samples, args.repeats, rng)
    threads = thread_rows({name: models[name] for name in ("panda", "serial_chain(32)")},
                          args.jacobian_samples, args.samples, args.repeats, rng)
    instants = compare("panda", models["panda"], random_stack(rng, 1, models["panda"].nv),
                       FUNCTIONS + (TORQUE_JACOBIAN, VELOCITY_JACOBIAN), INSTANT_REPEATS)
    # After the timings, which leave the project's own cache warm for the --quick variant.
    compiles = compile_rows(cold)
    by_case = {row["case"]: row for row in compiles}
    for row in rows:
        row["cold_s"], row["cached_s"] = (by_case[row["function"]][key]
                                          for key in ("cold_s", "cached_s"))
    import_s = import_seconds(args.import_repeats)
    wall_s = time.perf_counter() - start
    load = (load_start, os.getloadavg()[0])
    print_tables((rows, jacobians, threads, compiles, instants), args)
    print(f"warm import of cmtm + kinematic_trees: {1e3 * import_s:.0f} ms (best of "
          f"{args.import_repeats} fresh interpreters); script wall time {wall_s:.0f} s; "
          f"1-minute load average {load[0]:.2f} at the start, {load[1]:.2f} at the end "
          f"({os.cpu_count()} cores)")
    changed = sources_modified() != sources
    if changed:
        print("warning: sources of cmtm, kinematic_trees or ioc changed during the run; its "
              "numbers (cached loads above all) may mix versions")
    if args.json is not None:
        args.json.write_text(json.dumps({
            "rows": rows, "jacobian_rows": jacobians, "thread_rows": threads,
            "compile_rows": compiles, "instant_rows": instants, "import_s": import_s,
            "samples": args.samples,
            "jacobian_samples": args.jacobian_samples, "repeats": args.repeats,
            "wall_s": wall_s, "load_average": load, "sources_changed": changed}, indent=2))


if __name__ == "__main__":
    main()
