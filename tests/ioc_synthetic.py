"""A small synthetic inverse problem for the ``cmtm ioc`` tests.

chain3, four costs with the weights (0.4, 0.3, 0.2, 0.1), 2 s from 1 rad to -1 rad, 40
samples and 12 control points: solved directly (ioc.direct.solve), written by
``cmtm optimize`` (result.json), and sampled at 100 Hz with seeded Gaussian noise of
0.001 deg into CSV (rad) and .mot (deg) files.
"""
import contextlib
import io
from types import SimpleNamespace

import numpy as np

import kinematic_trees as kt
from ioc.cli import main
from ioc.direct import solve
from ioc.estimate import Trial, fisher_covariance
from ioc.problem import MotionProblem

COSTS = "joint_velocity,joint_acceleration,joint_jerk,joint_torque"
NAMES = COSTS.split(",")
WEIGHTS = (0.4, 0.3, 0.2, 0.1)
SPLINE = ["--samples", "40", "--control-points", "12"]
NOISE_DEG = 0.001
NOISE_RAD = float(np.deg2rad(NOISE_DEG))
TIMES = np.linspace(0.0, 2.0, 201)
"""100 Hz over the 2 s motion."""
JOINTS = ("joint1", "joint2", "joint3")


def run(argv):
    """(exit status, stdout, stderr) of ``main(argv)``, argparse's SystemExit included."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as stop:
            code = stop.code
    return code, out.getvalue(), err.getvalue()


def ioc_argv(*motion, extra=()):
    """``cmtm ioc`` on the synthetic problem's model, costs and spline."""
    return ["ioc", "--model", "chain3", "--costs", COSTS, *SPLINE, "--motion",
            *map(str, motion), *extra]


def build(folder):
    """Solve the problem, write ``folder``/optimize (cmtm optimize) and return the true
    samples q (201, 3) rad with the paths."""
    problem = MotionProblem(kt.compile_tree(kt.serial_chain(3)), COSTS, duration=2.0,
                            samples=40, control_points=12, start=1.0, goal=-1.0)
    result = solve(problem, WEIGHTS)
    optimized = folder / "optimize"
    code, _, _ = run(["optimize", "--model", "chain3", "--costs", COSTS, "--weights",
                      ",".join(map(str, WEIGHTS)), *SPLINE, "--start", "1", "--goal", "-1",
                      "--out", str(optimized), "--quiet"])
    assert code == 0
    return SimpleNamespace(folder=folder, optimized=optimized,
                           q=result.sample(TIMES, 0)[:, 0])


def noisy(q, seed):
    """q plus Gaussian noise of NOISE_RAD (seeded)."""
    return q + NOISE_RAD * np.random.default_rng(seed).normal(size=q.shape)


def write_trials(case, names):
    """case.folder/trials holding one noisy sample set per name (seeds 1, 2, ...)."""
    folder = case.folder / "trials"
    folder.mkdir()
    for seed, name in enumerate(names, start=1):
        write_csv(folder / f"{name}.csv", noisy(case.q, seed))
    return folder


def write_csv(path, q, times=TIMES, names=JOINTS):
    """A CSV motion file in rad, full precision."""
    rows = [",".join(("time",) + tuple(names))]
    rows += [",".join(repr(float(x)) for x in (t, *row)) for t, row in zip(times, q)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def write_mot(path, q_deg, times=TIMES):
    """An OpenSim .mot motion file in deg (inDegrees=yes)."""
    header = [path.stem, "version=1", f"nRows={len(times)}", f"nColumns={1 + len(JOINTS)}",
              "inDegrees=yes", "endheader", "\t".join(("time",) + JOINTS)]
    rows = ["\t".join(repr(float(x)) for x in (t, *row)) for t, row in zip(times, q_deg)]
    path.write_text("\n".join(header + rows) + "\n", encoding="utf-8")
    return path


def exact_trial(problem, weights, times):
    """(samples q (len(times), nv), a Trial of the exact optimum of ``problem`` for
    ``weights`` at ``times``): the truth of the data-estimator tests, with which the
    Cramer-Rao bound is computed from nothing the estimator sees."""
    result = solve(problem, weights)
    assert result.status == "converged"
    q = result.sample(times, 0)[:, 0]
    return q, Trial("truth", times, q, problem.spline.design_matrix(times), None, problem,
                    result.theta)


def cramer_rao_std(reference, weights, sigma):
    """Per-weight standard deviations of the bound at the true motion of ``reference``
    (an exact_trial), its start and goal profiled out."""
    cov = fisher_covariance([reference], [reference.theta], weights, sigma)
    return np.sqrt(np.diag(cov))


def hanging_on_a_limit(two_link):
    """The planar arm's first link held by its lower limit 1.27 rad from hanging (where
    gravity's torque squared curves down) over 2 s, cost joint torque with a little joint
    acceleration: the optimum presses on the limit, the Newton Hessian there is indefinite
    and positive definite on the limits' null space (as on DeepMimic's kick): the
    tests of limits held on an indefinite Hessian (tests/test_direct.py, test_estimate.py)."""
    kwargs = dict(duration=2.0, samples=60, control_points=14, start=[-0.1, 0.0],
                  goal=[0.0, 0.5], rest_order=1)
    problem = MotionProblem(two_link, ("joint_acceleration", "joint_torque"),
                            limits=([-0.3, -np.pi], [np.pi, np.pi]), **kwargs)
    return problem, [1e-3, 1.0]
