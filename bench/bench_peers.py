"""Is ``cmtm optimize``'s solver ten times faster than CasADi + IPOPT on the same problems?

The peer is what a researcher would write instead (``casadi_peer.py``): the same B-spline
problem built in CasADi from our model arrays and spline matrices (the torques by a
recursive Newton-Euler algorithm in CasADi symbols, their time derivatives by forward
directional derivatives), solved by IPOPT with exact Hessians from CasADi's automatic
differentiation. Before timing, the peer's per-sample outputs of every term (torques,
torque rates, link twists, ...) are checked against ours at the initial motion's stack, and
its torques against ``cmtm.inverse_dynamics``, to CHECK_TOLERANCE relative.

Cases (T = 2 s, 200 samples, quintic spline with 50 control points, rest order 1):

* a, b, c: the paper's 3-DoF cases on ``serial_chain(3)`` (ioc/demo.py): joint velocity,
  acceleration and jerk, + torque, + torque rate, equal weights, 1.57 -> -1.57 rad, limits
  [-pi, pi];
* panda: case (b)'s terms on ``kt.panda()``, weights (1, 1, 1, 0.01);
* human: example-robot-data's 36-joint human (fixed pelvis, compiled with gravity
  (0, -9.81, 0): it is y-up), case (b)'s terms, weights (1, 1, 1, 0.01), every joint from
  30 % to 70 % of its range, the model's limits;
* link: the Panda with link-space costs, link velocity and acceleration of every link and
  joint jerk, equal weights.

Each case is solved from the same initial motion (``MotionProblem.initial_theta``) by our
solver (``ioc.optimize.direct.solve``, default options: relative stationarity 1e-13) and by IPOPT
(``--ipopt-tol``, default 1e-10: tighter tolerances end at "acceptable level" after extra
iterations, as IPOPT stops at the float64 floor), with the joint limits as linear
constraints ("IPOPT lim") and without them ("IPOPT free": the limits are inactive at
these optima, and IPOPT's barrier pays for them); the ratio is against the faster of the
two. Both sides are warm (one untimed solve each: our Numba kernels and caches, CasADi's
compiled graph); then rounds alternate ours, IPOPT lim, IPOPT free until --rounds rounds or
--budget seconds of a case, and each side's best wall time is kept. The final costs must
agree to COST_TOLERANCE relative; "stat" is the relative KKT stationarity by our measure
(``ioc.optimize.direct``) at each solution.

Graphs: CasADi's SX graph expanded for models up to EXPAND_MAX_NV joints (fastest per
iteration; 5-25 s to build), its MX graph with the per-sample function mapped over the
samples for the larger human (the expanded SX graph passed 8 GiB without finishing).

Under the table, where each side's time goes: ours split by wrapping the engine calls
(``term_values``: motion and Jacobians), the Hessian's second-order part
(``MotionProblem._curvature``, differences of the terms' Jacobians), its chaining to the
control points (``SplineChain.hessian``) and the banded Cholesky factorizations; IPOPT's by
CasADi's own timers (Hessian of the Lagrangian, gradient, other).

Run: python bench/bench_peers.py [--quick] [--cases a,b,c,panda,human,link] [--rounds R]
     [--budget S] [--ipopt-tol T] [--json PATH]
--quick: no human, two rounds.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

import casadi
import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import cmtm  # noqa: E402
import ioc.spline.banded  # noqa: E402
import ioc.optimize.problem  # noqa: E402
import kinematic_trees as kt  # noqa: E402
from casadi_peer import PeerProblem  # noqa: E402
from ioc.inverse.estimate import kkt_stationarity  # noqa: E402
from ioc.optimize.direct import solve  # noqa: E402
from ioc.optimize.problem import MotionProblem  # noqa: E402
from ioc.spline.bspline import DD  # noqa: E402
from timing import clocked  # noqa: E402

PAPER = dict(duration=2.0, samples=200, degree=5, control_points=50, start=1.57, goal=-1.57,
             rest_order=1, limits=(-np.pi, np.pi))
"""The paper's §8.3 setting (ioc/demo.py)."""
COSTS = ("joint_velocity", "joint_acceleration", "joint_jerk", "joint_torque",
         "joint_torque_rate")
ROBOT_WEIGHTS = (1.0, 1.0, 1.0, 0.01)
HUMAN_RANGE = (0.3, 0.7)
HUMAN_GRAVITY = (0.0, -9.81, 0.0)
CHECK_TOLERANCE = 1e-12
"""Peer outputs against ours (relative to the largest magnitude of each output)."""
COST_TOLERANCE = 1e-8
"""Final costs of the two solvers (relative)."""
EXPAND_MAX_NV = 10
TARGET_RATIO = 10.0
TARGET_SECONDS = {"c": 0.1, "panda": 0.1, "human": 2.0}
"""The issue's absolute targets (s, after compilation)."""


def cases(names):
    """{name: (model, costs, weights, MotionProblem keywords)} for the requested names."""
    chain3 = kt.compile_tree(kt.serial_chain(3))
    table = {"a": lambda: (chain3, COSTS[:3], (1.0,) * 3, PAPER),
             "b": lambda: (chain3, COSTS[:4], (1.0,) * 4, PAPER),
             "c": lambda: (chain3, COSTS, (1.0,) * 5, PAPER),
             "panda": lambda: (kt.compile_tree(kt.panda()), COSTS[:4], ROBOT_WEIGHTS, PAPER),
             "human": human_case,
             "link": lambda: (kt.compile_tree(kt.panda()),
                              ("link_velocity", "link_acceleration", "joint_jerk"),
                              (1.0,) * 3, PAPER)}
    unknown = [name for name in names if name not in table]
    if unknown:
        raise SystemExit(f"bench_peers: unknown cases {unknown}; expected some of "
                         f"{', '.join(table)}")
    return {name: table[name]() for name in names}


def human_case():
    model = kt.compile_tree(kt.example_robots.human(), gravity=HUMAN_GRAVITY)
    lower, upper = np.asarray(model.q_lower), np.asarray(model.q_upper)
    start, goal = (lower + f * (upper - lower) for f in HUMAN_RANGE)
    return model, COSTS[:4], ROBOT_WEIGHTS, dict(PAPER, start=start, goal=goal, limits="model")


# --- the check ---

def check_outputs(problem, peer):
    """Largest relative difference of the peer's per-sample term outputs against ours, and
    of its torques against cmtm.inverse_dynamics, at the initial motion's stack;
    SystemExit above CHECK_TOLERANCE."""
    q_stack = problem.stack(problem.initial_theta())
    ours = [y for y, _ in ioc.optimize.problem.term_values(problem.model, problem.terms, q_stack,
                                                  jacobians=False)]
    theirs = peer.stack_values(q_stack)
    worst = max(_relative(a, b) for a, b in zip(theirs, ours))
    if q_stack.shape[1] >= 3:
        tau = cmtm.inverse_dynamics(problem.model, q_stack[:, :3])[:, 0]
        worst = max(worst, _relative(peer.torques(q_stack), tau))
    if not worst <= CHECK_TOLERANCE:
        raise SystemExit(f"bench_peers: the CasADi problem differs from ours by {worst:.1e} "
                         f"relative (> {CHECK_TOLERANCE:g}): not the same problem")
    return worst


def _relative(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1.0))


# --- timing ---

def where_ours_goes(problem, weights):
    """Shares of one warm solve's wall time: engine calls, the Hessian's second-order part
    (engine calls included), its chaining, Cholesky factorizations."""
    targets = {"engine": [(ioc.optimize.problem, "term_values")],
               "curvature": [(MotionProblem, "_curvature")],
               "chain": [(ioc.spline.banded.SplineChain, "hessian")],
               "cholesky": [(ioc.spline.banded.BandedCholesky, "__init__")]}
    with clocked(targets) as clocks:
        start = time.perf_counter()
        solve(problem, weights)
        wall = time.perf_counter() - start
    return {label: clock.seconds / wall for label, clock in clocks.items()}


def where_ipopt_goes(stats):
    """Shares of IPOPT's last solve: the Lagrangian Hessian, gradient, the rest."""
    total = stats.get("t_wall_total") or sum(v for k, v in stats.items()
                                              if k.startswith("t_wall_nlp"))
    hessian = stats.get("t_wall_nlp_hess_l", 0.0)
    gradient = stats.get("t_wall_nlp_grad_f", 0.0) + stats.get("t_wall_nlp_jac_g", 0.0)
    return {"hessian": hessian / total, "gradient": gradient / total,
            "other": max(0.0, 1.0 - (hessian + gradient) / total)}


def run_case(name, model, costs, weights, settings, args):
    """The row of one case."""
    weights = np.asarray(weights, dtype=float)
    problem = MotionProblem(model, costs, **settings)
    expand = model.nv <= EXPAND_MAX_NV
    peers = {"lim": PeerProblem(problem, weights, tol=args.ipopt_tol, expand=expand),
             "free": PeerProblem(problem, weights, tol=args.ipopt_tol, expand=expand,
                                 limits=False)}
    row = {"case": name, "nv": model.nv, "n_free": problem.n_free,
           "graph": "SX" if expand else "MX",
           "build_s": {k: p.build_seconds for k, p in peers.items()},
           "check": check_outputs(problem, peers["lim"])}
    x0 = peers["lim"].initial_x()
    sides = {"ours": lambda: solve(problem, weights)}
    sides.update({k: (lambda p=p: p.solve(x0)) for k, p in peers.items()})
    best, last = {}, {}
    for side, call in sides.items():            # warm-up
        last[side] = call()
    rounds, started = 0, time.perf_counter()
    while rounds < args.rounds and (rounds == 0 or time.perf_counter() - started < args.budget):
        for side, call in sides.items():
            start = time.perf_counter()
            last[side] = call()
            best[side] = min(best.get(side, np.inf), time.perf_counter() - start)
        rounds += 1
    result = last["ours"]
    row.update(rounds=rounds, ours_s=best["ours"], ours_it=result.iterations,
               ours_status=result.status, ours_stat=result.stationarity_rel,
               ours_cost=result.cost)
    for side, peer in peers.items():
        x, cost, iterations, status = last[side]
        row[side] = {"s": best[side], "it": iterations, "status": status, "cost": cost,
                     "cost_diff": abs(cost - result.cost) / abs(result.cost),
                     "stat": float(kkt_stationarity(problem, DD.of(peer.theta(x)),
                                                    weights)[1]),
                     "time": where_ipopt_goes(peer.solver.stats())}
    row["ratio"] = min(row["lim"]["s"], row["free"]["s"]) / row["ours_s"]
    row["costs_agree"] = all(row[s]["cost_diff"] <= COST_TOLERANCE for s in peers)
    row["ours_time"] = where_ours_goes(problem, weights)
    return row


# --- output ---

def target_cells(row):
    ratio = "met" if row["ratio"] >= TARGET_RATIO else "NOT met"
    cells = f">= {TARGET_RATIO:g}x {ratio}"
    if row["case"] in TARGET_SECONDS:
        limit = TARGET_SECONDS[row["case"]]
        cells += f"; <= {limit:g} s {'met' if row['ours_s'] <= limit else 'NOT met'}"
    return cells


def print_rows(rows, args):
    header = (f"{'case':6s} {'nv':>3s} {'free':>5s} | {'ours s':>8s} {'it':>3s} {'stat':>7s} | "
              f"{'IPOPT lim s':>11s} {'it':>3s} {'stat':>7s} | {'IPOPT free s':>12s} "
              f"{'it':>3s} {'stat':>7s} | {'cost diff':>9s} {'ratio':>6s} | target")
    print(f"Warm solves, best of the rounds (alternating ours / IPOPT with limits / IPOPT "
          f"without); IPOPT tol {args.ipopt_tol:g}, exact Hessians; ratio = faster IPOPT / "
          f"ours; stat = relative KKT stationarity by our measure")
    print(header)
    print("-" * len(header))
    for r in rows:
        lim, free = r["lim"], r["free"]
        diff = max(lim["cost_diff"], free["cost_diff"])
        print(f"{r['case']:6s} {r['nv']:3d} {r['n_free']:5d} | {r['ours_s']:8.4f} "
              f"{r['ours_it']:3d} {r['ours_stat']:7.0e} | {lim['s']:11.3f} {lim['it']:3d} "
              f"{lim['stat']:7.0e} | {free['s']:12.3f} {free['it']:3d} {free['stat']:7.0e} | "
              f"{diff:9.1e} {r['ratio']:6.1f} | {target_cells(r)}")
    print()
    print("Where the time goes (share of one warm solve's wall time). Ours: engine = "
          "term_values (motion and Jacobians, also those inside the curvature), curvature = "
          "the Hessian's second-order part (its engine calls included), chain = its "
          "chaining to the control points, cholesky = banded factorizations. IPOPT: "
          "CasADi's timers. Peer graph build s and check = largest relative difference of "
          "its outputs against ours at the initial motion.")
    header = (f"{'case':6s} {'graph':>5s} {'build s':>8s} {'check':>7s} | {'engine':>6s} "
              f"{'curv.':>6s} {'chain':>6s} {'chol.':>6s} | {'IPOPT hess':>10s} "
              f"{'grad':>5s} {'other':>6s} | rounds")
    print(header)
    print("-" * len(header))
    for r in rows:
        t, p = r["ours_time"], r["lim"]["time"]
        print(f"{r['case']:6s} {r['graph']:>5s} {r['build_s']['lim']:8.1f} {r['check']:7.0e} | "
              f"{100 * t['engine']:5.0f}% {100 * t['curvature']:5.0f}% {100 * t['chain']:5.0f}% "
              f"{100 * t['cholesky']:5.0f}% | {100 * p['hessian']:9.0f}% "
              f"{100 * p['gradient']:4.0f}% {100 * p['other']:5.0f}% | {r['rounds']}")
    if not all(r["costs_agree"] for r in rows):
        print(f"WARNING: final costs differ by more than {COST_TOLERANCE:g} in "
              f"{[r['case'] for r in rows if not r['costs_agree']]}: different local minima")
    print(f"{os.cpu_count()} cores ({cpu_model()}); load average (1 min) {args.load[0]:.1f} "
          f"at the start, {args.load[1]:.1f} at the end; {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"casadi {casadi.__version__}, numpy {np.__version__}, numba {numba.__version__}")


def cpu_model():
    """The CPU's model name (/proc/cpuinfo), or "unknown". Printed with the versions: from
    one machine and install of this project's kind to the next (2026-12-03), IPOPT's times
    on cases (b) and (c) fell 3x and 1.7x, ours 1.2x."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="no human, two rounds")
    parser.add_argument("--cases", default=None,
                        help="comma-separated, of a,b,c,panda,human,link (default all)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per case (5)")
    parser.add_argument("--budget", type=float, default=120.0,
                        help="stop a case's rounds after this many seconds (one at least)")
    parser.add_argument("--ipopt-tol", type=float, default=1e-10)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    default = "a,b,c,panda,link" if args.quick else "a,b,c,panda,human,link"
    args.cases = (args.cases or default).split(",")
    args.rounds = args.rounds or (2 if args.quick else 5)
    return args


def main():
    args = parse_args()
    load = os.getloadavg()[0]
    rows = []
    for name, case in cases(args.cases).items():
        rows.append(run_case(name, *case, args))
        print(f"  done {name}: ours {rows[-1]['ours_s']:.3f} s, ratio {rows[-1]['ratio']:.1f}",
              file=sys.stderr, flush=True)
    args.load = (load, os.getloadavg()[0])
    print_rows(rows, args)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1, default=float))


if __name__ == "__main__":
    main()
