"""How does the cost of the comprehensive motion grow with the derivative order k?

Times cmtm.motion (all outputs: velocities, momenta local and world, forces, torques) and
cmtm.inverse_dynamics (torques only) per sample at k = 0, 1, 2, 4 on the Panda (nv = 7) and
a 32-link serial chain, 1,000 samples per call, in one run: a warm-up call first, then the
best of a few repeats. The passes are O(n k^2) block convolutions, so t ~ (k+1)^p with p
approaching 2 once the per-order work dominates the fixed per-sample cost; the table gives
the ratios to k = 0 and the fitted exponent p (least squares of log t on log(k+1)).

The compile columns time the first call in a fresh interpreter: "cold" with an empty
NUMBA_CACHE_DIR (a temporary directory, so Numba compiles every kernel), "cached" in a
second interpreter reusing that directory. Both are model-independent (the kernels are
compiled per argument type, not per model) and measured once on the Panda.

Usage: python bench/bench_motion_orders.py [--samples N] [--repeats R]
No assertions: this script prints one table.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import cmtm
import kinematic_trees as kt
from timing import best_seconds

ORDERS = (0, 1, 2, 4)

FIRST_CALL = """
import json, time
import numpy as np
start = time.perf_counter()
import cmtm, kinematic_trees as kt
imported = time.perf_counter()
model = kt.compile_tree(kt.panda())
q = np.random.default_rng(0).uniform(-1, 1, (4, 5, model.nv))
before = time.perf_counter()
cmtm.{function}(model, q, order=2)
after = time.perf_counter()
print(json.dumps({{"import": imported - start, "first_call": after - before}}))
"""


def best_time_per_sample(call, q_stack, order, repeats):
    """Best wall time of ``repeats`` calls after one warm-up call, per sample (s)."""
    return best_seconds(lambda: call(q_stack, order), repeats)[0] / q_stack.shape[0]


def growth_exponent(orders, times):
    """p in t ~ (k+1)^p by least squares on log t vs log(k+1)."""
    return np.polyfit(np.log(np.asarray(orders) + 1.0), np.log(times), 1)[0]


def first_call_seconds(function, cache_dir):
    """Time of the first ``cmtm.<function>`` call in a fresh interpreter whose Numba cache
    lives in ``cache_dir``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    result = subprocess.run([sys.executable, "-c", FIRST_CALL.format(function=function)],
                            env=env, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])["first_call"]


def compile_times(function):
    """(cold, cached) first-call seconds of ``function`` with a fresh Numba cache directory."""
    with tempfile.TemporaryDirectory(prefix="cmtm-numba-cache-") as cache_dir:
        cold = first_call_seconds(function, cache_dir)
        cached = first_call_seconds(function, cache_dir)
    return cold, cached


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-compile", action="store_true",
                        help="skip the cold-compile subprocesses")
    args = parser.parse_args()

    models = {"panda (nv=7)": kt.compile_tree(kt.panda()),
              "serial_chain(32)": kt.compile_tree(kt.serial_chain(32))}
    functions = {
        "motion": lambda model: lambda q, k: cmtm.motion(model, q, order=k),
        "inverse_dynamics": lambda model: lambda q, k: cmtm.inverse_dynamics(model, q, order=k),
    }
    compile_columns = {name: (None, None) if args.no_compile else compile_times(name)
                       for name in functions}

    rng = np.random.default_rng(0)
    rows = []
    for model_name, model in models.items():
        q_stack = rng.uniform(-1.0, 1.0, (args.samples, max(ORDERS) + 3, model.nv))
        for function_name, make_call in functions.items():
            call = make_call(model)
            times = [best_time_per_sample(call, q_stack[:, :k + 3], k, args.repeats)
                     for k in ORDERS]
            rows.append((model_name, function_name, times, growth_exponent(ORDERS, times),
                         *compile_columns[function_name]))

    time_heads = "  ".join(f"{f'k={k} us':>8s}" for k in ORDERS)
    ratio_heads = "  ".join(f"{f't{k}/t0':>6s}" for k in ORDERS[1:])
    header = (f"{'model':17s} {'function':16s}  {time_heads}  {ratio_heads}  {'p':>5s}"
              f"  {'cold s':>6s}  {'cached s':>8s}")
    print(f"cmtm.motion vs order k: time per sample, {args.samples} samples per call, "
          f"best of {args.repeats}; p: t ~ (k+1)^p; cold/cached: first call in a fresh "
          f"interpreter with an empty / warm NUMBA_CACHE_DIR")
    print(header)
    print("-" * len(header))
    for model_name, function_name, times, exponent, cold, cached in rows:
        cells = "  ".join(f"{1e6 * t:8.2f}" for t in times)
        ratios = "  ".join(f"{t / times[0]:6.2f}" for t in times[1:])
        cold_cell = "-" if cold is None else f"{cold:.1f}"
        cached_cell = "-" if cached is None else f"{cached:.2f}"
        print(f"{model_name:17s} {function_name:16s}  {cells}  {ratios}  {exponent:5.2f}"
              f"  {cold_cell:>6s}  {cached_cell:>8s}")


if __name__ == "__main__":
    main()
