"""What does the Jacobian of a hand's jerk cost, against automatic differentiation and finite
differences, and what does a hand-jerk cost term cost against a link-velocity term on the
human?

Block 1, the point_jerk Jacobian: ``cmtm.point_jacobian(model, q_stack, [hand], order=2)``
(the stacks p', p'', p''' of one point fixed to the hand and their Jacobian with respect to
q, ..., q''', whose row l = 2 is the point_jerk term's), per sample over --samples samples,
side by side with

* 1-thr: the same on one Numba thread (``numba.set_num_threads(1)``);
* FD: ``cmtm.reference.fd_point_jacobian``, central differences of ``cmtm.point_motion``
  (every perturbed stack of every sample in one engine call);
* JAX: bench/jax_reference.py, forward kinematics of the point in jax.numpy, Taylor mode by
  ``jax.experimental.jet`` along the trajectory polynomial, ``jacfwd`` with respect to the
  raw stack, ``vmap`` over samples and ``jit``; its trace + XLA compile time is its own
  column, not part of the per-sample time.

on the planar two-link arm, the Panda (its hand's TCP frame, a link merged into link 7),
the 36-joint human and the same human on a floating pelvis (42 joints), the right hand's
point (0, -0.15, 0). FD err and JAX err are max |J - J_cmtm| / max |J_cmtm|.

Block 2, a cost term on the human (fixed pelvis, 36 joints): per sample over --samples
samples, the value and stack Jacobian of one term (``ioc.optimize.costs.term_values``: what the
optimizer and the inverse problem evaluate at every iterate) for

* point_jerk[right_hand@0,-0.15,0]   the hand's world jerk p''' (3 rows)
* link_velocity[right_hand]          the hand's body twist nu (6 rows)
* link_jerk[right_hand]              its second derivative nu'' (6 rows)

and one Gauss-Newton evaluation of a MotionProblem with that term alone (quintic spline,
--samples nodes, 20 control points: values, gradients and the banded Gauss-Newton matrix),
each as a ratio to link_velocity's.

Each time is the best of at least R calls and TIMED_SECONDS (0.1 s) of calls after
WARM_UP_CALLS (3) untimed ones (``timing.best_seconds``, the settings of
bench_jacobians.py), on one machine that other jobs may share: compare
the ratios, which are measured side by side in one run.

Usage: python bench/bench_points.py [--quick] [--samples N] [--repeats R] [--no-jax]
--quick: 50 samples, no floating human, one timed call per side (~1 minute with JAX).
"""
import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))      # this checkout first; bench/ is on the path already

import cmtm  # noqa: E402
import ioc  # noqa: E402
import kinematic_trees as kt  # noqa: E402
from bench_jacobians import (TIMED_SECONDS, WARM_UP_CALLS, one_numba_thread,  # noqa: E402
                             relative_error)
from ioc.optimize.costs import parse_terms, stack_orders, term_values  # noqa: E402
from timing import best_seconds  # noqa: E402

ORDER = 2
"""p', p'', p''': the point_jerk term's Jacobian is row 2 of the order-2 point Jacobian."""
HAND = ("right_hand", (0.0, -0.15, 0.0))
TERMS = ("link_velocity[right_hand]", "point_jerk[right_hand@0,-0.15,0]",
         "link_jerk[right_hand]")


def models(quick):
    """(name, model, point) of block 1."""
    cases = [("two_link_planar", kt.compile_tree(kt.two_link_planar()),
              ("link2", (1.0, 0.0, 0.0))),
             ("panda", kt.compile_tree(kt.panda()), ("panda_hand_tcp", (0.0, 0.0, 0.0))),
             ("human", kt.compile_tree(kt.human()), HAND)]
    if not quick:
        cases.append(("human floating", kt.compile_tree(kt.human(floating_base="xyz_zxy")),
                      HAND))
    return cases


def per_sample(call, n, repeats):
    """(best seconds per sample of ``call()`` on n samples, its result)."""
    seconds, result = best_seconds(call, repeats, WARM_UP_CALLS, TIMED_SECONDS)
    return seconds / n, result


def jacobian_row(name, model, point, args, rng):
    """Block 1's row of one model."""
    q = rng.uniform(-1.0, 1.0, (args.samples, ORDER + 2, model.nv))
    points = [point]
    cmtm.point_jacobian(model, q[:1], points, ORDER)                # compiled before timing
    structured, J = per_sample(lambda: cmtm.point_jacobian(model, q, points, ORDER),
                               len(q), args.repeats)
    with one_numba_thread():
        one_thread, _ = per_sample(lambda: cmtm.point_jacobian(model, q, points, ORDER),
                                   len(q), args.repeats)
    fd, J_fd = per_sample(lambda: cmtm.reference.fd_point_jacobian(model, q, points, ORDER),
                          len(q), args.repeats)
    row = {"model": name, "nv": model.nv, "structured_us": 1e6 * structured,
           "one_thread_us": 1e6 * one_thread, "fd_us": 1e6 * fd,
           "fd_err": relative_error(J_fd, J), "jax_us": None, "jax_compile_s": None,
           "jax_err": None}
    if not args.no_jax:
        import jax_reference
        link, r = cmtm.api.check_points(model, points)
        fun = jax_reference.point_jacobian_function(model, [(int(link[0]), r[0])], ORDER)
        start = time.perf_counter()
        compiled = fun.lower(q).compile()
        row["jax_compile_s"] = time.perf_counter() - start
        jax_s, J_jax = per_sample(lambda: compiled(q).block_until_ready(), len(q),
                                  args.repeats)
        row.update(jax_us=1e6 * jax_s, jax_err=relative_error(J_jax, J))
    return row


def print_jacobian_table(rows, args):
    print(f"\nBlock 1: point_jerk Jacobian (cmtm.point_jacobian, order {ORDER}: p', p'', p''' "
          f"w.r.t. q..q'''), one hand point, {args.samples} samples, us per sample")
    print(f"{'model':<16}{'nv':>4}{'cmtm':>9}{'1-thr':>9}{'FD':>10}{'JAX':>9}{'FD/cmtm':>9}"
          f"{'JAX/cmtm':>9}{'JAX/1-thr':>10}{'JAX comp s':>11}{'FD err':>9}{'JAX err':>9}")
    for row in rows:
        jax = row["jax_us"]
        ratio = "-" if jax is None else f"{jax / row['structured_us']:.1f}"
        ratio_one = "-" if jax is None else f"{jax / row['one_thread_us']:.1f}"
        print(f"{row['model']:<16}{row['nv']:>4}{row['structured_us']:>9.2f}"
              f"{row['one_thread_us']:>9.2f}{row['fd_us']:>10.1f}"
              f"{'-' if jax is None else f'{jax:.2f}':>9}"
              f"{row['fd_us'] / row['structured_us']:>9.1f}{ratio:>9}{ratio_one:>10}"
              f"{'-' if jax is None else format(row['jax_compile_s'], '.1f'):>11}"
              f"{row['fd_err']:>9.0e}{'-' if jax is None else format(row['jax_err'], '.0e'):>9}")


def term_rows(args):
    """Block 2: term_values and one Gauss-Newton evaluation per term on the human."""
    human = kt.compile_tree(kt.human())
    rng = np.random.default_rng(1)
    rows = []
    for spec in TERMS:
        terms = parse_terms([spec], human)
        q = rng.uniform(-1.0, 1.0, (args.samples, stack_orders(terms), human.nv))
        term_values(human, terms, q[:1])                                  # compiled first
        values_s, _ = per_sample(lambda: term_values(human, terms, q), len(q), args.repeats)
        problem = ioc.MotionProblem(human, spec, samples=args.samples, control_points=20,
                                    start=0.1, goal=0.3, limits="none")
        theta = problem.initial_theta()
        evaluate_s, _ = best_seconds(
            lambda: problem.evaluate(theta, [1.0], hessian="gauss_newton"), args.repeats,
            WARM_UP_CALLS, TIMED_SECONDS)
        rows.append({"term": spec, "rows": terms[0].size, "values_us": 1e6 * values_s,
                     "evaluate_ms": 1e3 * evaluate_s})
    return rows


def print_term_table(rows, args):
    print(f"\nBlock 2: one cost term on the 36-joint human, {args.samples} samples: "
          f"term_values (value + stack Jacobian, us per sample) and one Gauss-Newton "
          f"evaluation of the problem with the term alone (20 control points, ms)")
    base = rows[0]
    print(f"{'term':<36}{'rows':>5}{'values us':>11}{'/ link_vel':>11}{'evaluate ms':>13}"
          f"{'/ link_vel':>11}")
    for row in rows:
        print(f"{row['term']:<36}{row['rows']:>5}{row['values_us']:>11.2f}"
              f"{row['values_us'] / base['values_us']:>11.2f}{row['evaluate_ms']:>13.2f}"
              f"{row['evaluate_ms'] / base['evaluate_ms']:>11.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 samples, no floating human")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-jax", action="store_true", help="skip the JAX column")
    args = parser.parse_args()
    if args.quick:
        args.samples, args.repeats = 50, 1
    started = time.perf_counter()
    print(f"bench_points.py, {datetime.date.today()}, {os.cpu_count()} CPUs, Numba threads "
          f"{numba.get_num_threads()}, load average {os.getloadavg()[0]:.2f}")
    cmtm.precompile()
    rng = np.random.default_rng(0)
    rows = [jacobian_row(name, model, point, args, rng)
            for name, model, point in models(args.quick)]
    print_jacobian_table(rows, args)
    print_term_table(term_rows(args), args)
    print(f"\nwall time {time.perf_counter() - started:.0f} s, load average "
          f"{os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
