"""How accurately are cost weights recovered from noisy joint angles, against the
Cramer-Rao bound?

The 3-DoF arm (serial_chain(3)), five costs (joint velocity, acceleration, jerk, torque,
torque rate) with unequal weights (0.5, 0.1, 0.2, 0.15, 0.05), T = 2 s, a quintic spline of
14 control points, 60 quadrature samples; the optimal motion is sampled at 100 Hz and
Gaussian noise of sigma degrees is added (seeded). For each sigma the table gives the mean
L1 error of the maximum-likelihood estimator (ioc.inverse.estimate), of its linearized starting
point, and of plain inverse KKT on the fitted motion, next to the bound's expected L1
sqrt(2/pi) sum_i std_i (Fisher information at the true motion), their ratio, how many
weights the estimator reported undetermined, the coverage of its 95 % intervals (the share of
the weights, over the seeds, whose interval holds the true weight), and the mean time per
trial (data fit and estimate).

Run: python bench/bench_noise_curve.py [--seeds S] [--sigmas 1e-4,1e-3,...] [--json PATH]
"""
import argparse
import json
import time

import numpy as np

import kinematic_trees as kt
from ioc.files.data import MotionData
from ioc.inverse.estimate import Trial, estimate_weights, fisher_covariance, prepare_trial
from ioc.inverse.inverse_kkt import recover_weights
from ioc.optimize.direct import solve
from ioc.optimize.problem import MotionProblem

COSTS = ("joint_velocity", "joint_acceleration", "joint_jerk", "joint_torque",
         "joint_torque_rate")
TRUE_WEIGHTS = np.array([0.5, 0.1, 0.2, 0.15, 0.05])
SETTINGS = dict(degree=5, control_points=14, rest_order=1, samples=60, limits="none")
TIMES = np.linspace(0.0, 2.0, 201)


def truth():
    """The true motion's samples and a Trial holding it (for the bound)."""
    model = kt.compile_tree(kt.serial_chain(3))
    problem = MotionProblem(model, COSTS, duration=2.0, start=1.57, goal=-1.57, **SETTINGS)
    result = solve(problem, TRUE_WEIGHTS)
    q = result.sample(TIMES, 0)[:, 0]
    reference = Trial("truth", TIMES, q, problem.spline.design_matrix(TIMES), None, problem,
                      result.theta)
    return model, q, reference


def bound_l1(reference, sigma):
    """Expected L1 of an unbiased estimator at the Cramer-Rao bound."""
    cov = fisher_covariance([reference], [reference.theta], TRUE_WEIGHTS, sigma)
    return float(np.sqrt(2 / np.pi) * np.sum(np.sqrt(np.diag(cov))))


def row(model, q, reference, sigma_deg, seeds):
    """Mean errors over the seeds at one noise level."""
    sigma = np.deg2rad(sigma_deg)
    ml, linear, kkt, undetermined, covered, seconds = [], [], [], [], [], []
    for seed in range(seeds):
        noisy = q + sigma * np.random.default_rng(seed).normal(size=q.shape)
        started = time.perf_counter()
        trial = prepare_trial(model, COSTS, MotionData(TIMES, noisy, model.joint_names,
                                                       f"seed{seed}", ()), noise=sigma,
                              **SETTINGS)
        estimate = estimate_weights([trial], noise=sigma)
        seconds.append(time.perf_counter() - started)
        ml.append(np.sum(np.abs(estimate.weights - TRUE_WEIGHTS)))
        linear.append(np.sum(np.abs(estimate.linearized - TRUE_WEIGHTS)))
        kkt.append(np.sum(np.abs(recover_weights(trial.problem, trial.theta).weights
                                 - TRUE_WEIGHTS)))
        undetermined.append(len(estimate.undetermined))
        covered.append(np.mean((estimate.ci95[:, 0] <= TRUE_WEIGHTS)
                               & (TRUE_WEIGHTS <= estimate.ci95[:, 1])))
    bound = bound_l1(reference, sigma)
    return {"sigma_deg": sigma_deg, "ml_l1": float(np.mean(ml)), "linear_l1": float(np.mean(linear)),
            "kkt_l1": float(np.mean(kkt)), "bound_l1": bound,
            "ratio": float(np.mean(ml)) / bound, "undetermined": float(np.mean(undetermined)),
            "coverage": float(np.mean(covered)),
            "seconds": float(np.mean(seconds))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--sigmas", default="1e-4,1e-3,1e-2,0.03,0.1,0.3,1")
    parser.add_argument("--json")
    args = parser.parse_args()
    model, q, reference = truth()
    print(f"weights recovered from noisy data: {args.seeds} seeds per sigma, L1 errors "
          f"(mean), bound = Cramer-Rao expected L1 at the truth")
    print(f"{'sigma deg':>10}{'ML L1':>11}{'linear L1':>11}{'plain KKT':>11}{'bound L1':>11}"
          f"{'ML/bound':>10}{'undet.':>8}{'cover':>7}{'s/trial':>9}")
    rows = []
    for sigma_deg in (float(s) for s in args.sigmas.split(",")):
        r = row(model, q, reference, sigma_deg, args.seeds)
        rows.append(r)
        print(f"{r['sigma_deg']:>10.0e}{r['ml_l1']:>11.2e}{r['linear_l1']:>11.2e}"
              f"{r['kkt_l1']:>11.2e}{r['bound_l1']:>11.2e}{r['ratio']:>10.2f}"
              f"{r['undetermined']:>8.1f}{r['coverage']:>7.2f}{r['seconds']:>9.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
