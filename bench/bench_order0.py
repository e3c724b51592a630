"""Is the engine competitive at order 0, and what does its Numba compilation cost?

Times the batched order-0 functions of cmtm per sample against Pinocchio (C++) called per
sample from a Python loop, on the same models, in one run:

* cmtm.inverse_dynamics(order=0) vs pinocchio.rnea;
* cmtm.mass_matrix vs pinocchio.crba;
* cmtm.link_poses vs pinocchio.forwardKinematics (positions only);
* cmtm.motion(order=0) (all outputs: velocities, momenta local and world, forces, torques),
  which has no single Pinocchio counterpart and is shown for its cost next to the RNEA.

The Pinocchio models come from tests/pinocchio_ref.py ``to_pinocchio`` (our joint order,
our inertias, our gravity), so both sides solve the same problem; the outputs are checked
to agree to 1e-9 relative before anything is timed. Models: the Panda (nv = 7) and a
128-link serial chain. Times are the best of R repeats after a warm-up; the Pinocchio loop
includes Python's per-call overhead (about a microsecond), which is what a Python user
pays. ``pin/cmtm`` > 1 means cmtm is faster.

Compile columns (model-independent: Numba compiles per argument type, not per model):
"cold s" is the first call in a fresh interpreter with an empty NUMBA_CACHE_DIR (a
temporary directory), each function in its own interpreter so that it pays for every
kernel it needs; "cached s" is the first call in a second interpreter reusing that
directory (loading the cache). The warm import time of ``import cmtm, kinematic_trees``
(best of N fresh interpreters, cache warm) is printed under the table.

Usage: python bench/bench_order0.py [--quick] [--samples N] [--repeats R] [--no-compile]
       [--json PATH]
--quick: 200 samples, 3 repeats, no cold-compile subprocesses (under a minute); the
"cached s" column then loads the project's own Numba cache.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# Run from a checkout: the repository root first (an outdated editable install must not
# shadow it), and tests/ for the Pinocchio model builder.
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import pinocchio  # noqa: E402

import cmtm  # noqa: E402
import kinematic_trees as kt  # noqa: E402
from pinocchio_ref import to_pinocchio  # noqa: E402

AGREEMENT = 1e-9
"""Relative agreement (to the largest entry) required before timing; two O(n) recursions
over 128 links in float64 agree to ~1e-13."""

FUNCTIONS = ("inverse_dynamics", "mass_matrix", "link_poses", "motion")

FIRST_CALL = """
import json, sys, time
sys.path.insert(0, {root!r})
import numpy as np
import cmtm, kinematic_trees as kt
model = kt.compile_tree(kt.panda())
q_stack = np.random.default_rng(0).uniform(-1, 1, (4, 3, model.nv))
call = {{
    "inverse_dynamics": lambda: cmtm.inverse_dynamics(model, q_stack, order=0),
    "mass_matrix": lambda: cmtm.mass_matrix(model, q_stack[:, 0]),
    "link_poses": lambda: cmtm.link_poses(model, q_stack[:, 0]),
    "motion": lambda: cmtm.motion(model, q_stack, order=0),
}}[{function!r}]
start = time.perf_counter()
call()
first = time.perf_counter() - start
start = time.perf_counter()
call()
print(json.dumps({{"first": first, "steady": time.perf_counter() - start}}))
"""

IMPORT = """
import sys, time
sys.path.insert(0, {root!r})
start = time.perf_counter()
import cmtm, kinematic_trees
print(time.perf_counter() - start)
"""


# --- compile and import times (subprocesses) ---

def run_python(code, cache_dir=None):
    """stdout's last line of ``python -c code``, with NUMBA_CACHE_DIR set if given."""
    env = dict(os.environ)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = cache_dir
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, cwd=tempfile.gettempdir())
    if result.returncode != 0:
        raise RuntimeError(f"subprocess failed:\n{result.stderr}")
    return result.stdout.strip().splitlines()[-1]


def first_call_seconds(function, cache_dir):
    """First-call time minus a steady call of cmtm.<function> in a fresh interpreter."""
    times = json.loads(run_python(FIRST_CALL.format(root=str(ROOT), function=function),
                                  cache_dir))
    return times["first"] - times["steady"]


def compile_seconds(function, cold):
    """(cold, cached) first-call seconds of cmtm.<function> in fresh interpreters.

    cold: an empty temporary NUMBA_CACHE_DIR, then a second interpreter loading that cache.
    Without cold, (None, cached) with the project's own (already warm) cache.
    """
    if not cold:
        return None, first_call_seconds(function, None)
    with tempfile.TemporaryDirectory(prefix="cmtm-numba-cache-") as cache_dir:
        return first_call_seconds(function, cache_dir), first_call_seconds(function, cache_dir)


def import_seconds(repeats):
    """Best of ``repeats`` warm imports of cmtm and kinematic_trees in fresh interpreters."""
    return min(float(run_python(IMPORT.format(root=str(ROOT)))) for _ in range(repeats))


# --- per-sample timing ---

def best_seconds(call, repeats):
    """Best wall time of ``repeats`` calls after one warm-up call."""
    call()
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def relative_error(actual, desired):
    """max |actual - desired| / max |desired|."""
    return float(np.max(np.abs(actual - desired)) / np.max(np.abs(desired)))


def pinocchio_calls(pin_model, q_stack):
    """Per-sample Pinocchio loops and their outputs in our layout, for each function."""
    data = pin_model.createData()
    q, v, a = ([np.ascontiguousarray(row) for row in q_stack[:, r]] for r in range(3))
    n = len(q)
    joints = range(1, pin_model.njoints)

    def rnea():
        for i in range(n):
            pinocchio.rnea(pin_model, data, q[i], v[i], a[i])

    def crba():
        for i in range(n):
            pinocchio.crba(pin_model, data, q[i])

    def forward_kinematics():
        for i in range(n):
            pinocchio.forwardKinematics(pin_model, data, q[i])

    def outputs(function):
        """Pinocchio's result for every sample, in cmtm's layout (for the agreement check)."""
        result = []
        for i in range(n):
            if function == "inverse_dynamics":
                result.append(pinocchio.rnea(pin_model, data, q[i], v[i], a[i]).copy())
            elif function == "mass_matrix":
                upper = np.triu(pinocchio.crba(pin_model, data, q[i]))
                result.append(upper + np.triu(upper, 1).T)   # crba fills the upper triangle
            else:
                pinocchio.forwardKinematics(pin_model, data, q[i])
                result.append([data.oMi[j].homogeneous for j in joints])
        return np.array(result)

    return {"inverse_dynamics": rnea, "mass_matrix": crba,
            "link_poses": forward_kinematics}, outputs


def time_model(name, model, n_samples, repeats, rng):
    """Rows (model, nv, function, cmtm s/sample, pinocchio s/sample or None, error)."""
    pin_model = to_pinocchio(model)
    q_stack = rng.uniform(-1.0, 1.0, (n_samples, 3, model.nv))
    q = np.ascontiguousarray(q_stack[:, 0])
    cmtm_calls = {
        "inverse_dynamics": lambda: cmtm.inverse_dynamics(model, q_stack, order=0),
        "mass_matrix": lambda: cmtm.mass_matrix(model, q),
        "link_poses": lambda: cmtm.link_poses(model, q),
        "motion": lambda: cmtm.motion(model, q_stack, order=0),
    }
    pin_calls, pin_outputs = pinocchio_calls(pin_model, q_stack)
    rows = []
    for function in FUNCTIONS:
        error = None
        if function in pin_calls:
            ours = cmtm_calls[function]()
            ours = ours[:, 0] if function == "inverse_dynamics" else ours
            error = relative_error(ours, pin_outputs(function))
            if not error <= AGREEMENT:
                raise SystemExit(f"{name} {function}: cmtm and Pinocchio differ by {error:.2e} "
                                 f"relative (> {AGREEMENT:.0e}); not timing a wrong result")
        ours_s = best_seconds(cmtm_calls[function], repeats) / n_samples
        pin_s = (best_seconds(pin_calls[function], repeats) / n_samples
                 if function in pin_calls else None)
        rows.append({"model": name, "nv": model.nv, "function": function,
                     "cmtm_us": 1e6 * ours_s, "pinocchio_us": None if pin_s is None else 1e6 * pin_s,
                     "pin_over_cmtm": None if pin_s is None else pin_s / ours_s,
                     "max_rel_error": error})
    return rows


def cell(value, fmt, width):
    return f"{'-' if value is None else format(value, fmt):>{width}s}"


def print_table(rows, args, import_s, wall_s):
    print(f"Order-0 cmtm (batched, {args.samples} samples per call) vs Pinocchio "
          f"{pinocchio.__version__} (per-sample Python loop); best of {args.repeats}; "
          f"us/sample; pin/cmtm > 1: cmtm faster")
    print("compile columns: first call minus a steady call, Panda, fresh interpreter; cold: "
          "empty NUMBA_CACHE_DIR, cached: " + ("that cache warm" if args.cold else
                                               "the project's warm cache (--quick: no cold)"))
    header = (f"{'model':17s} {'nv':>3s}  {'function':17s} {'cmtm us':>9s} {'pin us':>9s} "
              f"{'pin/cmtm':>8s} {'rel err':>8s} {'cold s':>7s} {'cached s':>8s}")
    print(header)
    print("-" * len(header))
    for row in rows:
        print(f"{row['model']:17s} {row['nv']:3d}  {row['function']:17s} "
              f"{cell(row['cmtm_us'], '.2f', 9)} {cell(row['pinocchio_us'], '.2f', 9)} "
              f"{cell(row['pin_over_cmtm'], '.2f', 8)} {cell(row['max_rel_error'], '.0e', 8)} "
              f"{cell(row['cold_s'], '.1f', 7)} {cell(row['cached_s'], '.2f', 8)}")
    print(f"warm import of cmtm + kinematic_trees: {1e3 * import_s:.0f} ms (best of "
          f"{args.import_repeats} fresh interpreters); script wall time {wall_s:.0f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="200 samples, 3 repeats, no cold-compile subprocesses")
    parser.add_argument("--samples", type=int, default=None, help="samples per call (1000)")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (7)")
    parser.add_argument("--no-compile", action="store_true",
                        help="skip the cold-compile subprocesses (cached load still timed)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    args.samples = args.samples or (200 if args.quick else 1000)
    args.repeats = args.repeats or (3 if args.quick else 7)
    args.import_repeats = 3 if args.quick else 7
    cold = args.cold = not (args.quick or args.no_compile)
    start = time.perf_counter()

    rng = np.random.default_rng(0)
    models = {"panda": kt.compile_tree(kt.panda()),
              "serial_chain(128)": kt.compile_tree(kt.serial_chain(128))}
    rows = [row for name, model in models.items()
            for row in time_model(name, model, args.samples, args.repeats, rng)]
    # After the timings, which leave the project's own cache warm for the --quick variant.
    compile_columns = {function: compile_seconds(function, cold) for function in FUNCTIONS}
    for row in rows:
        row["cold_s"], row["cached_s"] = compile_columns[row["function"]]
    import_s = import_seconds(args.import_repeats)
    wall_s = time.perf_counter() - start
    print_table(rows, args, import_s, wall_s)
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "import_s": import_s,
                                         "samples": args.samples, "repeats": args.repeats,
                                         "wall_s": wall_s}, indent=2))


if __name__ == "__main__":
    main()
