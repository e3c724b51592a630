"""What do the structured Jacobians cost against finite differences and automatic
differentiation, and how do they scale with the number of joints and the order?

For the link-velocity and joint-torque stacks of orders k = 0..4 on serial chains of 2 to
128 joints and the Panda, one run times per sample, side by side on the same raw stacks:

* structured: ``cmtm.jacobian`` (paper Table 4, Lemmas 1-6);
* FD: ``cmtm.reference.fd_jacobian`` (central differences of the same engine, every
  perturbed stack of every sample batched into one engine call);
* JAX: bench/jax_reference.py, a classical RNEA in jax.numpy unrolled over the links, Taylor
  mode by ``jax.experimental.jet``, ``jacfwd`` with respect to the raw stack, ``vmap`` over
  samples and ``jit``. Its trace + XLA compile time is its own column and is excluded
  from the per-sample time.

Each timing is the best of at least R calls and TIMED_SECONDS (0.1 s) of calls, after
WARM_UP_CALLS (3) untimed ones, for cmtm, FD and JAX alike. The number of samples per call
adapts to the cost of one sample (a target wall time per call, at most --samples), since
per-sample time is what is reported: small models run 200 samples per call, the 128-joint
FD a single one. The FD err / JAX err columns are max |J - J_structured| / max |J_structured|
on the timed samples (FD: truncation and round-off of h = eps**(1/3); JAX: round-off).

JAX compile time grows with the unrolled graph, O(nv) primitives times O(k^2) from jet, and
faster than linearly in nv, so JAX is skipped (and the cell says why) when the graph would
exceed --jax-max-eqns primitives (estimated from the same quantity and order on the
previous model), when the same quantity and order took more than --jax-max-compile seconds
to compile on a smaller model, or once the run's JAX compile time passes --jax-budget.
cmtm runs on Numba's thread count (``numba.get_num_threads()``, all cores by default: its
samples shared out across threads), XLA on its own thread pool; the "1-thr us" column
is cmtm again with ``numba.set_num_threads(1)``, and JAX/1-thr its ratio to JAX. cmtm and
FD are timed for every cell before JAX runs at all: after JAX's large graphs had run in the
process, cmtm's two-thread times of large outputs were up to 8x slower than without JAX
(measured: the order-4 link-velocity Jacobian of a 16-link chain, 354 against 44 us per
sample; one thread 83 against 81), while a small JAX computation alone changed nothing.

The "floor us" column is what no implementation of this call can go below, per sample, on
the same n samples (:func:`floor_call`): checking that the input is finite (a validating
API must), a zero-initialised output of the same shape (``np.zeros``: the cheapest, its
large pages zeroed lazily by the OS) and the sine and cosine of every joint angle (the one
transcendental work of any Jacobian of revolute joints), in numpy's vectorized loops; no
kinematics, no Jacobian entry written. "JAX/floor" is then more than any JAX/str ratio an
implementation could reach in that cell: where it is below 10, the target of issue 11 (>=
10x in every cell) is out of reach there. The summary counts the cells at >= 10x and lists
those.

Under the table: the exponent p of t ~ nv^p fitted by least squares on log-log over the
serial chains with 16 <= nv <= 128 (structured torque and velocity Jacobians, and FD), and
the peak memory of the 128-joint order-4 torque Jacobian over 200 samples, measured in a
fresh interpreter (peak resident set above the resident set before the call, and
tracemalloc's peak) next to the output's size.

Usage: python bench/bench_jacobians.py [--quick] [--sizes 2,4,...] [--orders 0,1,...]
       [--no-panda] [--no-jax] [--no-fd] [--no-memory] [--json PATH]
--quick: chains of 4, 16, 32, 64, 128 and the Panda at orders 0 and 2, small JAX graphs
only, 20 samples in the memory probe (under a minute). The default run takes ~11 minutes
on two cores, about 8 of them compiling JAX.
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
# shadow it); bench/ (this directory) is already on the path for jax_reference.
sys.path.insert(0, str(ROOT))

import cmtm  # noqa: E402
import kinematic_trees as kt  # noqa: E402
from timing import best_seconds  # noqa: E402

QUANTITIES = ("link_velocity", "joint_torque")
FIT_RANGE = (16, 128)
WARM_UP_CALLS = 3
"""Untimed calls at the timed size: on this project's virtual machine the first calls that
touch a large fresh output (100+ MB) ran up to 10x slower for two to four calls (measured:
the order-2 velocity Jacobian of a 32-link chain, 200 samples: 140, 120, 26, 12 ms), which
the best of 3 timed calls did not always leave behind."""
TIMED_SECONDS = 0.1
"""Least time spent on the timed calls of one side of a cell (after its warm-up): each
timing is the best of at least --repeats calls and of as many more as fit in this time,
for cmtm, FD and JAX alike. JAX's first calls after its warm-up call were seen well above
its best (the 2-link chain's order-0 torque Jacobian, 100 samples: 8.6, 2.9 and 5.3 us per
sample, then a best of 2.0 and a median of 2.5 over 300 calls), so that the best of three
made two runs of the same day report 2.2 and 23.3 us for that cell: a JAX/str ratio ten
times too favourable to cmtm in the second."""
ESTIMATE_CALLS = 3
"""One-sample calls that estimate a cell's cost (the best of them): a single call was once
5.9 ms instead of ~0.06 ms (the 2-link order-0 link-velocity cell of the run of
2026-12-01), which cut that cell's samples per call from 200 to 34 for cmtm and JAX alike,
so that fixed call costs weighed six times more in its per-sample times."""
MEMORY_CASE = (128, 4)
"""(nv, order) of the serial chain whose torque Jacobian's peak memory is measured."""

MEMORY_PROBE = """
import json, sys, tracemalloc
sys.path.insert(0, {root!r})
import numpy as np
import cmtm, kinematic_trees as kt


def status_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])


model = kt.compile_tree(kt.serial_chain({nv}))
q_stack = np.random.default_rng(0).uniform(-1, 1, ({samples}, {order} + 3, model.nv))
cmtm.jacobian(model, q_stack[:1], "joint_torque", order={order})   # load the kernels
try:
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")              # reset the peak (VmHWM) to the current RSS
except OSError:
    pass
resident_before = status_kib("VmRSS")
tracemalloc.start()
J = cmtm.jacobian(model, q_stack, "joint_torque", order={order})
traced_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({{"output_bytes": J.nbytes, "shape": J.shape,
                   "peak_rss_increase_bytes": 1024 * (status_kib("VmHWM") - resident_before),
                   "tracemalloc_peak_bytes": traced_peak}}))
"""
"""Peak memory of one call (Linux): the peak resident set VmHWM, reset to the current RSS
just before the call through /proc/self/clear_refs, minus the RSS before the call. Not
ru_maxrss: Linux carries the parent's resident set into it across fork and exec, so a
large benchmark process would inflate it. Also tracemalloc's peak of traced allocations
during the call (numpy's arrays; Numba's allocations inside kernels are not traced)."""


# --- timing ---

def adaptive_best(call, q_all, max_samples, target_s, repeats):
    """Best per-sample time of ``call(q_stack)`` (``timing.best_seconds``: WARM_UP_CALLS
    warm-up calls, at least ``repeats`` calls and TIMED_SECONDS).

    The best of ESTIMATE_CALLS one-sample calls (the kernels are already compiled; after a
    first call that builds the model's kernel arrays and workspaces) estimates the cost;
    the number of samples per call is then target_s / estimate, clipped to [1, max_samples].
    Returns (seconds per sample, samples per call, the last result).
    """
    call(q_all[:1])
    estimate = np.inf
    for _ in range(ESTIMATE_CALLS):
        start = time.perf_counter()
        call(q_all[:1])
        estimate = min(estimate, time.perf_counter() - start)
    n = int(np.clip(target_s / max(estimate, 1e-9), 1, max_samples))
    q = np.ascontiguousarray(q_all[:n])
    best, result = best_seconds(lambda: call(q), repeats, WARM_UP_CALLS, TIMED_SECONDS)
    return best / n, n, result


@contextlib.contextmanager
def one_numba_thread():
    """cmtm's kernels on one thread inside the block (Numba's count restored after)."""
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def relative_error(actual, desired):
    return float(np.max(np.abs(np.asarray(actual) - desired)) / np.max(np.abs(desired)))


class JaxRunner:
    """JAX cells with their caps; imports jax only when used."""

    def __init__(self, max_eqns, max_compile_s, budget_s):
        import jax  # noqa: F401  (fails early if the bench extra is missing)
        import jax_reference
        self.jax_reference = jax_reference
        self.max_eqns, self.max_compile_s, self.budget_s = max_eqns, max_compile_s, budget_s
        self.spent_s = 0.0
        self.eqns_per_joint = {}      # (quantity, order) -> primitives per joint, last model
        self.slow = set()             # (quantity, order) whose compile exceeded max_compile_s

    def skip_reason(self, quantity, order, nv):
        """Why this cell is not compiled, or None."""
        if (quantity, order) in self.slow:
            return "skip: slow compile on a smaller model"
        if self.spent_s > self.budget_s:
            return "skip: JAX compile budget spent"
        rate = self.eqns_per_joint.get((quantity, order))
        if rate is not None and rate * nv > self.max_eqns:
            return f"skip: ~{rate * nv / 1e3:.0f}k primitives"
        return None

    def run(self, model, quantity, order, q, repeats):
        """(seconds per sample, compile seconds, J, primitives) of the jitted Jacobian."""
        fun = self.jax_reference.jacobian_function(model, quantity, order)
        start = time.perf_counter()
        traced = fun.trace(q)
        eqns = len(traced.jaxpr.eqns)
        self.eqns_per_joint[(quantity, order)] = eqns / model.nv
        if eqns > self.max_eqns:
            self.spent_s += time.perf_counter() - start
            return None, None, None, eqns
        compiled = traced.lower().compile()
        compile_s = time.perf_counter() - start
        self.spent_s += compile_s
        if compile_s > self.max_compile_s:
            self.slow.add((quantity, order))
        best, J = best_seconds(lambda: compiled(q).block_until_ready(), repeats,
                               WARM_UP_CALLS, TIMED_SECONDS)
        return best / q.shape[0], compile_s, np.asarray(J), eqns


def floor_call(q, output_shape):
    """The least any validating Jacobian call of ``output_shape`` does on the raw stacks
    ``q`` (n, K, nv): check that the input is finite, allocate a zero-initialised output,
    take the sine and cosine of every joint angle q[:, 0] (each revolute joint's rotation
    needs them). No kinematics and no entry of the Jacobian: a floor under any
    implementation, cmtm's included."""
    if not np.isfinite(q).all():
        raise ValueError("q_stack: expected finite values")
    np.sin(q[:, 0])
    np.cos(q[:, 0])
    return np.zeros((len(q),) + output_shape[1:])


def time_cell(name, model, quantity, order, args, rng):
    """One table row without its JAX columns: structured (all threads and one) and FD
    per-sample times of one Jacobian; ``row["q"]`` keeps the first --jax-samples stacks
    for :func:`time_jax` (removed there)."""
    K_in = cmtm.jacobian_input_orders(quantity, order)
    q_all = rng.uniform(-1.0, 1.0, (args.samples, K_in, model.nv))
    row = {"model": name, "nv": model.nv, "order": order, "quantity": quantity}

    structured_s, n, J = adaptive_best(
        lambda q: cmtm.jacobian(model, q, quantity, order=order),
        q_all, args.samples, args.target, args.repeats)
    floor_s, _, _ = adaptive_best(lambda q: floor_call(q, J.shape), q_all[:n], n, np.inf,
                                  max(args.repeats, 10))
    row.update(structured_us=1e6 * structured_s, samples=n, floor_us=1e6 * floor_s)
    with one_numba_thread():
        one_thread_s, _, _ = adaptive_best(
            lambda q: cmtm.jacobian(model, q, quantity, order=order),
            q_all[:n], n, np.inf, args.repeats)
    row.update(one_thread_us=1e6 * one_thread_s)

    row.update(fd_us=None, fd_samples=None, fd_err=None)
    if not args.no_fd:
        fd_s, n_fd, J_fd = adaptive_best(
            lambda q: cmtm.reference.fd_jacobian(model, q, quantity, order=order),
            q_all, min(n, args.samples), args.target, args.repeats)
        row.update(fd_us=1e6 * fd_s, fd_samples=n_fd, fd_err=relative_error(J_fd, J[:n_fd]))
    row["q"] = np.ascontiguousarray(q_all[:min(n, args.jax_samples)])
    return row


def time_jax(row, model, args, jax_runner):
    """The JAX columns of a row of :func:`time_cell` (None without a runner: --no-jax), on
    its kept stacks (the structured Jacobian of the same stacks recomputed, untimed, for
    the error)."""
    quantity, order, q = row["quantity"], row["order"], row.pop("q")
    row.update(jax_us=None, jax_compile_s=None, jax_err=None, jax_eqns=None, jax_note=None)
    if jax_runner is None:
        return
    reason = jax_runner.skip_reason(quantity, order, model.nv)
    if reason is None:
        jax_s, compile_s, J_jax, eqns = jax_runner.run(model, quantity, order, q, args.repeats)
        row["jax_eqns"] = eqns
        if jax_s is None:
            reason = f"skip: {eqns / 1e3:.0f}k primitives"
        else:
            J = cmtm.jacobian(model, q, quantity, order=order)
            row.update(jax_us=1e6 * jax_s, jax_compile_s=compile_s,
                       jax_err=relative_error(J_jax, J))
    row["jax_note"] = reason


# --- summaries under the table ---

def fitted_exponents(rows, key, quantity):
    """order -> p of t ~ nv^p over serial chains with nv in FIT_RANGE (None if < 2 sizes)."""
    result = {}
    for order in sorted({row["order"] for row in rows}):
        points = [(row["nv"], row[key]) for row in rows
                  if row["quantity"] == quantity and row["order"] == order
                  and row["model"].startswith("serial_chain") and row[key] is not None
                  and FIT_RANGE[0] <= row["nv"] <= FIT_RANGE[1]]
        if len({nv for nv, _ in points}) >= 2:
            nv, t = np.array(points, dtype=float).T
            result[order] = float(np.polyfit(np.log(nv), np.log(t), 1)[0])
        else:
            result[order] = None
    return result


def memory_probe(nv, order, samples):
    """Peak memory of one structured torque Jacobian call, in a fresh interpreter."""
    code = MEMORY_PROBE.format(root=str(ROOT), nv=nv, order=order, samples=samples)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=tempfile.gettempdir(), env=dict(os.environ))
    if result.returncode != 0:
        raise RuntimeError(f"memory probe failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


# --- output ---

def fmt(value, spec, width, missing="-"):
    return f"{missing if value is None else format(value, spec):>{width}s}"


def print_table(rows, args):
    print(f"Jacobians of raw derivative stacks, time per sample (us), best of >= {args.repeats} "
          f"calls and {TIMED_SECONDS} s, "
          f"<= {args.samples} samples per call (adaptive); FD = cmtm.reference.fd_jacobian "
          f"(central); JAX = jit(vmap(jacfwd(jet(RNEA)))), compile = trace + XLA compile, "
          f"excluded from JAX us")
    header = (f"{'model':17s} {'nv':>3s} {'k':>1s} {'quantity':13s} {'struct us':>10s} "
              f"{'1-thr us':>10s} {'FD us':>11s} {'JAX us':>10s} {'FD/str':>7s} "
              f"{'JAX/str':>7s} {'JAX/1-thr':>9s} {'floor us':>8s} {'JAX/floor':>9s} "
              f"{'JAX comp s':>10s} {'n':>4s} "
              f"{'FD err':>7s} {'JAX err':>7s}")
    print(header)
    print("-" * len(header))
    for row in rows:
        fd_ratio = None if row["fd_us"] is None else row["fd_us"] / row["structured_us"]
        jax_ratio = None if row["jax_us"] is None else row["jax_us"] / row["structured_us"]
        jax_one = None if row["jax_us"] is None else row["jax_us"] / row["one_thread_us"]
        jax_floor = None if row["jax_us"] is None else row["jax_us"] / row["floor_us"]
        jax_cell = fmt(row["jax_us"], ".1f", 10)
        line = (f"{row['model']:17s} {row['nv']:3d} {row['order']:1d} {row['quantity']:13s} "
                f"{row['structured_us']:10.1f} {row['one_thread_us']:10.1f} "
                f"{fmt(row['fd_us'], '.1f', 11)} {jax_cell} "
                f"{fmt(fd_ratio, '.1f', 7)} {fmt(jax_ratio, '.1f', 7)} {fmt(jax_one, '.1f', 9)} "
                f"{row['floor_us']:8.2f} {fmt(jax_floor, '.1f', 9)} "
                f"{fmt(row['jax_compile_s'], '.1f', 10)} {row['samples']:4d} "
                f"{fmt(row['fd_err'], '.0e', 7)} {fmt(row['jax_err'], '.0e', 7)}")
        if row["jax_note"]:
            line += f"  [JAX {row['jax_note']}]"
        print(line)


def print_summaries(rows, memory, jax_runner, wall_s):
    for label, key, quantity in (("structured torque", "structured_us", "joint_torque"),
                                 ("structured velocity", "structured_us", "link_velocity"),
                                 ("FD torque", "fd_us", "joint_torque")):
        exponents = fitted_exponents(rows, key, quantity)
        cells = ", ".join(f"k={k}: {'-' if p is None else f'{p:.2f}'}"
                          for k, p in exponents.items())
        print(f"{label} Jacobian time ~ nv^p, serial chains nv {FIT_RANGE[0]}..{FIT_RANGE[1]}: "
              f"{cells}")
    if memory is not None:
        mb = 1024.0 ** 2
        print(f"memory, structured torque Jacobian, serial_chain({memory['nv']}) order "
              f"{memory['order']}, {memory['samples']} samples: output {tuple(memory['shape'])} "
              f"= {memory['output_bytes'] / mb:.0f} MiB; peak RSS above the pre-call RSS "
              f"{memory['peak_rss_increase_bytes'] / mb:.0f} MiB; tracemalloc peak "
              f"{memory['tracemalloc_peak_bytes'] / mb:.0f} MiB")
    if jax_runner is not None:
        print_jax_target(rows)
        print(f"JAX trace + compile time in this run: {jax_runner.spent_s:.0f} s")
    print(f"script wall time: {wall_s:.0f} s")


def print_jax_target(rows):
    """Issue 11's target (structured >= 10x faster than JAX in every cell where JAX ran):
    how many cells meet it, on all threads and on one, and the cells where not even the
    floor (:func:`floor_call`) is 10x faster than JAX."""
    timed = [row for row in rows if row["jax_us"] is not None]
    met = sum(row["jax_us"] >= 10 * row["structured_us"] for row in timed)
    met_one = sum(row["jax_us"] >= 10 * row["one_thread_us"] for row in timed)
    beyond = [f"{row['model']} k={row['order']} {row['quantity']} "
              f"({row['jax_us'] / row['floor_us']:.1f}x)"
              for row in timed if row["jax_us"] < 10 * row["floor_us"]]
    print(f"JAX/str >= 10 (issue 11): {met} of {len(timed)} cells ({met_one} with cmtm on one "
          f"thread); JAX/floor < 10, out of reach of any validating implementation: "
          f"{len(beyond)} cells{': ' + ', '.join(beyond) if beyond else ''}")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a subset, under a minute")
    parser.add_argument("--sizes", default=None, help="serial chain sizes, comma-separated")
    parser.add_argument("--orders", default=None, help="orders k, comma-separated")
    parser.add_argument("--no-panda", action="store_true")
    parser.add_argument("--samples", type=int, default=200, help="max samples per call")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (3)")
    parser.add_argument("--target", type=float, default=None,
                        help="target seconds per timed call, sets the samples per call")
    parser.add_argument("--no-fd", action="store_true")
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--jax-samples", type=int, default=100, help="max JAX samples per call")
    parser.add_argument("--jax-max-eqns", type=int, default=None,
                        help="skip JAX graphs with more primitives (default 25000)")
    parser.add_argument("--jax-max-compile", type=float, default=None,
                        help="seconds; a slower compile skips that (quantity, order) on "
                             "larger models (default 60)")
    parser.add_argument("--jax-budget", type=float, default=None,
                        help="total JAX compile seconds, then JAX is skipped (default 540)")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args()
    quick = args.quick
    args.sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes
                  else [4, 16, 32, 64, 128] if quick else [2, 4, 8, 16, 32, 64, 128])
    args.orders = ([int(k) for k in args.orders.split(",")] if args.orders
                   else [0, 2] if quick else [0, 1, 2, 3, 4])
    args.repeats = args.repeats or (2 if quick else 3)
    args.target = args.target or (0.05 if quick else 0.2)
    args.jax_max_eqns = args.jax_max_eqns or (3000 if quick else 25000)
    args.jax_max_compile = args.jax_max_compile or (10.0 if quick else 60.0)
    args.jax_budget = args.jax_budget if args.jax_budget is not None else (
        15.0 if quick else 540.0)
    args.memory_samples = 20 if quick else 200
    return args


def main():
    args = parse_args()
    start = time.perf_counter()
    models = [(f"serial_chain({n})", kt.compile_tree(kt.serial_chain(n))) for n in args.sizes]
    if not args.no_panda:
        models.append(("panda", kt.compile_tree(kt.panda())))
    models.sort(key=lambda item: item[1].nv)          # small first: JAX caps bite late

    # Load (or compile) the Numba kernels once, so that no timed call pays for them: orders
    # 0 (the order-0 torque kernel) and 1 (the other kernels) of every quantity.
    warm = kt.compile_tree(kt.serial_chain(2))
    for quantity in QUANTITIES:
        for order in (0, 1):
            q = np.zeros((1, cmtm.jacobian_input_orders(quantity, order), 2))
            cmtm.jacobian(warm, q, quantity, order=order)
            if not args.no_fd:
                cmtm.reference.fd_jacobian(warm, q, quantity, order=order)

    jax_runner = None if args.no_jax else JaxRunner(args.jax_max_eqns, args.jax_max_compile,
                                                    args.jax_budget)
    rng = np.random.default_rng(0)
    rows = []
    for name, model in models:       # cmtm and FD of every cell before JAX runs at all
        for order in args.orders:
            for quantity in QUANTITIES:
                rows.append(time_cell(name, model, quantity, order, args, rng))
                print(f"  timed {name} k={order} {quantity} "
                      f"({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    for row in rows:
        time_jax(row, dict(models)[row["model"]], args, jax_runner)
        if jax_runner is not None:
            print(f"  JAX {row['model']} k={row['order']} {row['quantity']} "
                  f"({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)

    memory = None
    if not args.no_memory:
        nv, order = MEMORY_CASE
        memory = dict(memory_probe(nv, order, args.memory_samples), nv=nv, order=order,
                      samples=args.memory_samples)
    wall_s = time.perf_counter() - start
    print_table(rows, args)
    print_summaries(rows, memory, jax_runner, wall_s)
    if args.json is not None:
        exponents = {f"{key}:{quantity}": fitted_exponents(rows, key, quantity)
                     for key in ("structured_us", "fd_us", "jax_us") for quantity in QUANTITIES}
        args.json.write_text(json.dumps({"rows": rows, "exponents": exponents,
                                         "memory": memory, "wall_s": wall_s,
                                         "jax_compile_total_s": None if jax_runner is None
                                         else jax_runner.spent_s}, indent=2))


if __name__ == "__main__":
    main()
