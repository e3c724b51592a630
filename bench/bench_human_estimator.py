"""Does the data estimator reach human scale: how long does it take on a 7-joint arm and on
the 36-joint human, where does the time go, and how long does ``cmtm ioc`` take on real
clips?

Block 1, synthetic trials (the truth known): human.urdf (pelvis fixed, y-up gravity) with
every joint moving ("human", 36 joints) or only the right arm's seven (shoulder Z-X-Y,
elbow Z-Y, wrist Z-X; the others locked at 0: "arm"); five costs (joint acceleration,
joint jerk, the right hand's jerk, joint torque, joint torque rate) with weights
(0.2, 0.1, 0.3, 0.3, 0.1); T = 2 s, every joint from 30 % to 70 % of its range; a quintic
spline of 20 control points, 200 quadrature samples, no joint limits. The optimal motion
(``setup s``, its solve) is sampled at 100 Hz with Gaussian noise of 0.1 deg (seeded) and
goes through ``prepare_trial(boundary="data")`` and ``estimate_weights`` (``estimate s``:
linearized start, maximum likelihood, Fisher intervals). Where the time goes, by timers
wrapped around the estimator's parts (outermost calls): ``curv`` the Newton Hessians'
second-order parts (MotionProblem._curvature: differences of the terms' exact
vector-Jacobian products), ``solves`` the re-optimizations (ioc.optimize.direct.solve, their
curvatures included), ``sens`` the implicit-function sensitivities (theirs included);
then the L1 error of the weights, how many 95 % intervals cover the truth, and the
issue's targets (arm <= 20 s, human <= 5 min) as met or not. Under the table, one
curvature at the estimate against its floor for any forward-mode scheme (directional
derivatives of the stacks by jets included): one Jacobian pass of the link, point and
torque terms per differenced stack direction (q and q', 2 nv, here); a ratio near 1 says
that exact second derivatives by forward jets could not make it cheaper, only a reverse
(adjoint) pass could.

Block 2, real clips (``--clips``, default kick, walk, jump): ``cmtm ioc`` in a fresh
process on the right arm of human.urdf (shoulder Z-X-Y and elbow Z from the clip, the
rest locked at the clip's mean pose), the window the longest movement segment of the arm
(examples/real_arm.py's, from ioc.files.data.segments), ``--boundary data``, the five
costs and joint jerk alone, 20 control
points, 200 samples, the model's joint limits (``--limits none`` drops them): exit
status, wall time (import and compile-cache load included),
the re-optimized motion's RMS to the data in degrees, the weights with their 95 %
intervals and the identifiability verdict.

Run: python bench/bench_human_estimator.py [--quick] [--cases arm,human] [--clips
kick,walk,jump] [--limits model|none] [--seed S] [--json PATH]; about 3 minutes on two shared cores; --quick
(the arm and the kick) under a minute.
"""
import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ioc.inverse.estimate
from ioc.files.data import MotionData, read_clip
from ioc.files.models import model_lock, resolve_model
from ioc.inverse.estimate import estimate_weights, prepare_trial
from ioc.optimize.costs import term_values
from ioc.optimize.direct import solve
from ioc.optimize.problem import MotionProblem
from timing import best_seconds, clocked

ROOT = Path(__file__).resolve().parent.parent
ARM = ("right_shoulder_Z", "right_shoulder_X", "right_shoulder_Y", "right_elbow_Z",
       "right_elbow_Y", "right_wrist_Z", "right_wrist_X")
COSTS = ("joint_acceleration", "joint_jerk", "point_jerk[right_hand@0,-0.15,0]",
         "joint_torque", "joint_torque_rate")
TRUE_WEIGHTS = np.array([0.2, 0.1, 0.3, 0.3, 0.1])
SETTINGS = dict(degree=5, control_points=20, samples=200, limits="none")
DURATION = 2.0
TIMES = np.linspace(0.0, DURATION, 201)
NOISE_DEG = 0.1
TARGETS = {"arm": 20.0, "human": 300.0}


def synthetic_trial(case, seed):
    """(trial, setup seconds): the case's optimal motion with noise, prepared."""
    lock = model_lock("human", joints=list(ARM)) if case == "arm" else {}
    model = resolve_model("human", lock)
    lower, upper = model.q_lower, model.q_upper
    started = time.perf_counter()
    problem = MotionProblem(model, COSTS, duration=DURATION, start=lower + 0.3 * (upper - lower),
                            goal=lower + 0.7 * (upper - lower), **SETTINGS)
    q = solve(problem, TRUE_WEIGHTS).sample(TIMES, 0)[:, 0]
    setup = time.perf_counter() - started
    noise = np.deg2rad(NOISE_DEG) * np.random.default_rng(seed).normal(size=q.shape)
    data = MotionData(TIMES, q + noise, model.joint_names, f"{case} seed {seed}", ())
    return prepare_trial(model, COSTS, data, boundary="data", **SETTINGS), setup


PARTS = {"curv": [(MotionProblem, "_curvature")], "solves": [(ioc.inverse.estimate, "solve")],
         "sens": [(ioc.inverse.estimate, "sensitivity")]}


def synthetic_row(case, seed):
    trial, setup = synthetic_trial(case, seed)
    with clocked(PARTS) as clocks:
        started = time.perf_counter()
        est = estimate_weights([trial])
        seconds = time.perf_counter() - started
    covered = (est.ci95[:, 0] <= TRUE_WEIGHTS) & (TRUE_WEIGHTS <= est.ci95[:, 1])
    row = {"case": case, "nv": trial.problem.model.nv, "setup_s": setup, "estimate_s": seconds,
           "target_s": TARGETS[case], "met": seconds <= TARGETS[case],
           "l1": float(np.sum(np.abs(est.weights - TRUE_WEIGHTS))),
           "covered": int(covered.sum()), "status": est.status, "iterations": est.iterations,
           "weights": est.weights.tolist()}
    for label, clock in clocks.items():
        row[f"{label}_calls"], row[f"{label}_s"] = clock.calls, clock.seconds
    return row | curvature_floor(trial.problem, est.thetas[0], est.weights)


def curvature_floor(problem, theta, w):
    """One curvature (MotionProblem._curvature) at the estimate against what any
    forward-mode second derivative pays: one Jacobian pass of the link, point and torque
    terms (ioc.optimize.costs.term_values, every sample) per differenced stack direction."""
    q_stack = problem.stack(theta)
    values = problem._values(q_stack)
    Kd, nv = problem.engine_orders, problem.model.nv
    terms = [problem.terms[i] for i in problem.nonlinear]
    directions = ((Kd - 1) // 2 + 1) * nv       # orders 0 .. O-1 (no identity: order 3)
    curvature, _ = best_seconds(lambda: problem._curvature(q_stack, values, w), 2)
    jacobian, _ = best_seconds(lambda: term_values(problem.model, terms, q_stack[:, :Kd],
                                                   source=problem.jacobians, values=False), 3)
    return {"curvature_s": curvature, "jacobian_pass_s": jacobian, "directions": directions,
            "floor_ratio": curvature / (directions * jacobian)}


def print_synthetic(rows):
    print(f"synthetic trials: {len(COSTS)} costs, {SETTINGS['control_points']} control points, "
          f"{SETTINGS['samples']} samples, noise {NOISE_DEG} deg, boundary data")
    print(f"{'case':6s} {'nv':>3s} {'setup s':>8s} {'estimate s':>10s} {'target':>7s} "
          f"{'curv n':>6s} {'curv s':>7s} {'share':>6s} {'solves n':>8s} {'solves s':>8s} "
          f"{'sens n':>6s} {'sens s':>7s} {'L1':>8s} {'cover':>5s}  met")
    for r in rows:
        print(f"{r['case']:6s} {r['nv']:3d} {r['setup_s']:8.2f} {r['estimate_s']:10.2f} "
              f"{r['target_s']:7.0f} {r['curv_calls']:6d} {r['curv_s']:7.2f} "
              f"{r['curv_s'] / r['estimate_s']:6.2f} {r['solves_calls']:8d} "
              f"{r['solves_s']:8.2f} {r['sens_calls']:6d} {r['sens_s']:7.2f} {r['l1']:8.4f} "
              f"{r['covered']:3d}/{len(COSTS)}  {'met' if r['met'] else 'NOT met'}")
    print("one curvature at the estimate against its floor (one Jacobian pass of the "
          "terms per differenced direction):")
    for r in rows:
        print(f"{r['case']:6s} curvature {r['curvature_s']:.3f} s, Jacobian pass "
              f"{1e3 * r['jacobian_pass_s']:.2f} ms x {r['directions']} directions = "
              f"{r['directions'] * r['jacobian_pass_s']:.3f} s, ratio {r['floor_ratio']:.2f}")


def real_arm_example():
    """examples/real_arm.py as a module: its arm map and movement window."""
    spec = importlib.util.spec_from_file_location("real_arm", ROOT / "examples" / "real_arm.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


def clip_rows(name, folder, limits):
    """``cmtm ioc`` on the clip's right arm with the five costs and joint jerk alone, with
    ``limits`` (--limits)."""
    import pybullet_data                            # the test extra: its data files only
    path = Path(pybullet_data.getDataPath()) / "data" / "motions" / f"humanoid3d_{name}.txt"
    example = real_arm_example()
    arm_map = folder / "arm.json"
    arm_map.write_text(json.dumps(example.ARM_MAP), encoding="utf-8")
    t0, t1 = example.movement_window(read_clip(path), resolve_model("human"))
    rows = []
    for label, costs in (("5 costs", ",".join(COSTS)), ("jerk alone", "joint_jerk")):
        command = [sys.executable, "-m", "ioc.commands.cli", "ioc", "--model", "human", "--motion",
                   str(path), "--map", str(arm_map), "--window", f"{t0!r},{t1!r}",
                   "--boundary", "data", "--limits", limits, "--costs", costs, "--control-points",
                   str(SETTINGS["control_points"]), "--samples", str(SETTINGS["samples"]),
                   "--json", "--quiet"]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        seconds = time.perf_counter() - started
        row = {"clip": name, "costs": label, "limits": limits, "window": [t0, t1],
               "exit": done.returncode,
               "seconds": seconds, "met": done.returncode == 0 and seconds <= TARGETS["arm"]}
        if done.returncode == 0:
            record = json.loads(done.stdout)
            row |= {"rms_deg": float(np.rad2deg(record["reoptimized_rms"][0])),
                    "weights": record["weights"], "ci95": record["uncertainty"]["ci95"],
                    "identifiable": record["identifiable"]}
        else:
            row["error"] = done.stderr.strip().splitlines()[-1:]
        rows.append(row)
    return rows


def print_clips(rows, limits):
    print(f"\nreal clips, right arm (4 joints), `cmtm ioc --boundary data --limits {limits}`, "
          f"target {TARGETS['arm']:.0f} s")
    for r in rows:
        head = f"{r['clip']:9s} {r['costs']:10s} window {r['window'][0]:.3f}-" \
               f"{r['window'][1]:.3f} s  exit {r['exit']}  {r['seconds']:6.2f} s " \
               f"{'met' if r['met'] else 'NOT met'}"
        if r["exit"] != 0:
            print(f"{head}  {r['error']}")
            continue
        verdict = "identifiable" if r["identifiable"] else "NOT identifiable"
        print(f"{head}  RMS {r['rms_deg']:.2f} deg  {verdict}")
        for name, w in r["weights"].items():
            lo, hi = r["ci95"][name]
            print(f"    {name:34s} {w:10.4g}  95 % [{lo:.4g}, {hi:.4g}]")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the arm and the kick only")
    parser.add_argument("--cases", default="arm,human")
    parser.add_argument("--clips", default="kick,walk,jump")
    parser.add_argument("--limits", choices=("model", "none"), default="model",
                        help="joint limits of the clips' estimates (default: the model's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, metavar="PATH")
    args = parser.parse_args()
    cases = ["arm"] if args.quick else [c for c in args.cases.split(",") if c]
    clips = ["kick"] if args.quick else [c for c in args.clips.split(",") if c]
    rows = [synthetic_row(case, args.seed) for case in cases]
    print_synthetic(rows)
    with tempfile.TemporaryDirectory() as folder:
        real = [row for name in clips for row in clip_rows(name, Path(folder), args.limits)]
    print_clips(real, args.limits)
    if args.json:
        args.json.write_text(json.dumps({"synthetic": rows, "clips": real}, indent=1),
                             encoding="utf-8")


if __name__ == "__main__":
    main()
