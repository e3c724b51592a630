"""Weights from noisy motion data (ioc.estimate) against the truth and the Cramer-Rao bound.

The data are a direct solution (3-DoF arm, five costs with unequal weights, a smaller
spline than the paper's so that twenty trials fit in the suite) sampled at 100 Hz with
seeded Gaussian noise. The bound is computed at the true motion, from the same Fisher
formula but nothing the estimator saw (truth, true start and goal).
"""
import numpy as np
import pytest
from scipy.stats import chi2

from ioc.data import MotionData
from ioc.direct import solve
from ioc.estimate import (Trial, _better_from_a_vertex, _lm_step, _moved, estimate_weights,
                          kkt_stationarity, maximum_likelihood, prepare_trial, residual,
                          sensitivity)
from ioc.inverse_kkt import recover_weights
from ioc.problem import MotionProblem
import ioc_synthetic
from ioc_synthetic import exact_trial, hanging_on_a_limit

COSTS = ("joint_velocity", "joint_acceleration", "joint_jerk", "joint_torque",
         "joint_torque_rate")
TRUE_WEIGHTS = np.array([0.5, 0.1, 0.2, 0.15, 0.05])
SETTINGS = dict(degree=5, control_points=14, rest_order=1, samples=60, limits="none")
TIMES = np.linspace(0.0, 2.0, 201)          # 100 Hz


@pytest.fixture(scope="module")
def truth(chain3):
    return exact_trial(MotionProblem(chain3, COSTS, duration=2.0, start=1.57, goal=-1.57,
                                     **SETTINGS), TRUE_WEIGHTS, TIMES)


def cramer_rao_std(truth, sigma):
    """Per-weight standard deviations of the bound at the true motion."""
    return ioc_synthetic.cramer_rao_std(truth[1], TRUE_WEIGHTS, sigma)


def noisy_trial(model, truth, sigma, seed):
    q, _ = truth
    noisy = q + sigma * np.random.default_rng(seed).normal(size=q.shape)
    data = MotionData(TIMES, noisy, model.joint_names, f"seed{seed}", ())
    return prepare_trial(model, COSTS, data, noise=sigma, **SETTINGS)


def covered(estimate):
    return (estimate.ci95[:, 0] <= TRUE_WEIGHTS) & (TRUE_WEIGHTS <= estimate.ci95[:, 1])


def test_small_noise_reaches_the_cramer_rao_bound(chain3, truth):
    sigma = np.deg2rad(0.001)
    estimate = estimate_weights([noisy_trial(chain3, truth, sigma, 0)], noise=sigma)
    l1 = np.sum(np.abs(estimate.weights - TRUE_WEIGHTS))
    bound_l1 = np.sqrt(2 / np.pi) * np.sum(cramer_rao_std(truth, sigma))
    assert l1 <= 0.1 and l1 <= 3 * bound_l1          # measured: L1 5.2e-3, bound 5.1e-3
    assert estimate.identifiable and np.all(covered(estimate))


@pytest.fixture(scope="module")
def trials_at_001_degree(chain3, truth):
    sigma = np.deg2rad(0.01)
    trials = [noisy_trial(chain3, truth, sigma, seed) for seed in range(20)]
    return sigma, trials, [estimate_weights([t], noise=sigma) for t in trials]


def test_intervals_cover_the_truth_at_001_degree(trials_at_001_degree):
    """Where the linearization holds the 95 % intervals must be nominal: each weight's
    interval holds the truth in at least 17 of 20 trials (binomial 5 % tail: 16)."""
    _, _, estimates = trials_at_001_degree
    coverage = np.sum([covered(e) for e in estimates], axis=0)
    assert np.all(coverage >= 17), coverage


def test_pooling_twenty_trials_narrows_every_interval_threefold(trials_at_001_degree):
    """The pooled estimate's error is judged jointly, by its squared Mahalanobis distance
    under the estimate's own covariance (rank m - 1 on the simplex) against chi-square's
    99 % quantile: five marginal 95 % intervals all hold on ~77 % of draws (0.95^5, were
    they independent), and a solver change that lands the truth problem in its other
    local minimum redraws the noise (there four of five missed at Mahalanobis^2 7.91,
    p = 0.095; 4.59 here)."""
    sigma, trials, estimates = trials_at_001_degree
    pooled = estimate_weights(trials, noise=sigma)
    single = np.min([e.std for e in estimates], axis=0)
    assert np.all(single >= 3 * pooled.std)
    error = pooled.weights - TRUE_WEIGHTS
    dof = len(TRUE_WEIGHTS) - 1
    mahalanobis2 = error @ np.linalg.pinv(pooled.covariance, rcond=1e-10, hermitian=True) @ error
    assert np.linalg.matrix_rank(pooled.covariance, tol=1e-10 * np.abs(
        pooled.covariance).max()) == dof            # eigenvalues 7.6e-12 .. 7.0e-5, one -4e-22
    assert mahalanobis2 <= chi2.ppf(0.99, dof), mahalanobis2
    assert np.sum(np.abs(pooled.weights - TRUE_WEIGHTS)) < \
        np.mean([np.sum(np.abs(e.weights - TRUE_WEIGHTS)) for e in estimates])


@pytest.mark.parametrize("seed", [0, 1, 8])
def test_realistic_noise_is_honest(chain3, truth, seed):
    """0.1 deg: one trial carries little information. Seeds 1 and 8 put the estimate near
    the simplex boundary, where the Fisher bound at the estimate alone is 0.67-0.88 of the
    truth's; the reported deviations must still not be below the truth's bound."""
    sigma = np.deg2rad(0.1)
    trial = noisy_trial(chain3, truth, sigma, seed)
    estimate = estimate_weights([trial], noise=sigma)
    assert np.all(estimate.std >= cramer_rao_std(truth, sigma))
    reaches_zero = [n for n, (lo, _) in zip(estimate.names, estimate.ci95) if lo <= 0]
    assert set(reaches_zero) <= set(estimate.undetermined) and not estimate.identifiable
    # the re-optimized motion fits the data as well as the noise allows
    assert abs(estimate.data_rms([trial])[0] / sigma - 1) <= 0.3
    # plain inverse KKT on the fitted motion collapses and must not claim identifiability
    assert not recover_weights(trial.problem, trial.theta).identifiable


def test_region_points_stay_on_the_simplex_when_rounding_leaves_a_variance_negative():
    """The pseudo-inverse of a numerically indefinite Fisher information can leave a
    variance at -1e-20 (DeepMimic's jump gave NaN weights before): that weight's moves
    stay at w, every point is a finite weight vector on the simplex."""
    from ioc.estimate import _region_points
    w = np.array([0.5, 0.3, 0.2 - 1e-12, 1e-12])
    A = np.random.default_rng(0).normal(size=(4, 3)) * 0.01
    cov = A @ A.T
    cov[3, 3] = -1e-20
    points = np.array(_region_points(w, cov))
    assert np.all(np.isfinite(points)) and np.all(points >= 0)
    np.testing.assert_allclose(points.sum(axis=1), 1.0, rtol=0, atol=1e-15)  # rounding
    moves_of_the_last = points[2 * np.count_nonzero(np.linalg.eigvalsh(cov) > 0) + 6:][:2]
    np.testing.assert_array_equal(moves_of_the_last, [w / w.sum(), w / w.sum()])


def test_sensitivity_on_held_limits_matches_central_differences_of_the_optimum(two_link):
    """The optimum pressed on a limit (nine nodes, multipliers >= 0.19) stays on it for
    small changes: d theta* / dw and d theta* / d(start, goal) against central differences
    of re-optimized motions (step 1e-5 of each weight and boundary value, 1 % of the small
    weight; the same active set at both ends). Tolerance 1e-6 of the largest column
    entry: the differences' truncation and the optima's rounding (observed <= 9.4e-8;
    the implicit function theorem without the held limits is off by 0.76-12.6)."""
    problem, weights = hanging_on_a_limit(two_link)
    result = solve(problem, weights)
    times = np.linspace(0.0, 2.0, 41)
    trial = Trial("hanging", times, result.sample(times, 0)[:, 0],
                  problem.spline.design_matrix(times), None, problem, result.theta)
    sens = sensitivity(trial, result.theta, result.weights)
    h = 1e-5
    for i in range(len(weights)):
        dw = np.zeros(len(weights))
        dw[i] = h
        fd = (_optimum(problem, weights + dw) - _optimum(problem, weights - dw)) / (2 * h)
        _assert_columns_close(sens.dtheta_w[:, i], fd)
    start, goal = problem.start, problem.goal
    for k in range(start.size + goal.size):
        du = np.zeros(start.size + goal.size)
        du[k] = h
        moved = [problem.with_boundary(*_moved(start, goal, sign * du)) for sign in (1, -1)]
        fd = (_optimum(moved[0], weights) - _optimum(moved[1], weights)) / (2 * h)
        _assert_columns_close(sens.dtheta_u[:, k], fd)


def _optimum(problem, weights):
    result = solve(problem, weights)
    assert result.status == "converged" and len(result.multipliers) == 9
    return result.control_points.ravel()


def _assert_columns_close(actual, desired):
    error = np.max(np.abs(actual - desired)) / np.max(np.abs(desired))
    assert error <= 1e-6, error


def test_a_vertex_that_fits_better_than_the_estimate_replaces_it(chain3):
    """Data made by joint jerk alone (0.001 deg noise), candidates joint jerk and joint
    torque; an estimate stopped at torque-heavy weights (no iterations: a stand-in for a
    local minimum of the likelihood). The jerk vertex fits better, so the maximum
    likelihood from it replaces the estimate: lower residual (observed sum of squares 397
    -> 1.8e-7), jerk's weight within 1e-3 of 1 (observed 1 - 1.4e-8), the trial's start
    and goal those of the kept motion; an estimate that no vertex beats is kept as is."""
    costs = ("joint_jerk", "joint_torque")
    problem = MotionProblem(chain3, costs, duration=2.0, start=1.57, goal=-1.57, **SETTINGS)
    q, _ = exact_trial(problem, [1.0, 0.0], TIMES)
    sigma = np.deg2rad(0.001)
    noisy = q + sigma * np.random.default_rng(0).normal(size=q.shape)
    trial = prepare_trial(chain3, costs, MotionData(TIMES, noisy, chain3.joint_names, "jerk",
                                                     ()), noise=sigma, **SETTINGS)
    stuck = maximum_likelihood([trial], [[0.01, 0.99]], noise=sigma, max_iterations=0,
                               uncertainty=False)
    better = _better_from_a_vertex([trial], stuck, sigma, 30, None)
    assert better.rss < stuck.rss and better.weights[0] >= 1 - 1e-3, better.weights
    assert np.sum(residual(trial, better.thetas[0]) ** 2) == pytest.approx(better.rss,
                                                                            rel=1e-12)
    assert kkt_stationarity(trial.problem, better.thetas[0], better.weights)[1] <= 1e-9
    assert _better_from_a_vertex([trial], better, sigma, 30, None) is better


def test_lm_step_within_the_trust_radius_keeps_the_boundary_step_optimal_for_it():
    """A weight step longer than the radius is scaled to it, and each trial's boundary step
    is then the damped least-squares one for that weight step (against lstsq of the
    damped boundary problem; rounding 1e-10)."""
    rng = np.random.default_rng(1)
    Jw = rng.normal(size=(30, 3))
    J_u = [rng.normal(size=(12, 4)), rng.normal(size=(18, 4))]
    r = [rng.normal(size=12), rng.normal(size=18)]
    damping = 1e-3
    dw_free, _ = _lm_step(Jw, J_u, r, damping)
    radius = 0.5 * np.linalg.norm(dw_free)
    dw, du = _lm_step(Jw, J_u, r, damping, radius)
    np.testing.assert_allclose(dw, 0.5 * dw_free, rtol=1e-12)
    rows = [slice(0, 12), slice(12, 30)]
    for Ju, rk, duk, block in zip(J_u, r, du, rows):
        D = np.sqrt(damping * (np.diag(Ju.T @ Ju) + 1e-300))
        target = np.concatenate([rk - Jw[block] @ dw, np.zeros(4)])
        expected = np.linalg.lstsq(np.vstack([Ju, np.diag(D)]), target, rcond=None)[0]
        np.testing.assert_allclose(duk, expected, rtol=0, atol=1e-10)
