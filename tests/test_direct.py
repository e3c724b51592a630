"""The direct problem against closed forms (minimum-jerk quintics), central finite
differences of every sub-cost gradient, and the paper's 3-DoF and 7-DoF experiments."""
import numpy as np
import pytest

import cmtm
import ioc.problem
from ioc.banded import band_to_dense
from ioc.bspline import DD
from ioc.costs import NAMED_TERMS
from ioc.direct import SolverOptions, _Limits, _StepMatrix, _stationarity, kkt_residual, solve
from ioc.problem import MotionProblem
from conftest import PAPER, CASES, chain_gradient_matrix
from ioc_synthetic import hanging_on_a_limit

def quintic(s):
    return s ** 3 * (10 - 15 * s + 6 * s ** 2)


def test_minimum_jerk_rest_order_2_is_the_quintic(chain3):
    q0, q1, T = np.array([0.3, -1.0, 2.0]), np.array([-0.2, 0.5, 1.0]), 1.5
    problem = MotionProblem(chain3, "joint_jerk", duration=T, degree=5, control_points=12,
                            start=q0, goal=q1, rest_order=2, integration="gauss", limits="none")
    result = solve(problem, [1.0])
    assert result.status == "converged"
    t = np.linspace(0, T, 31)
    q = result.sample(t, 0)[:, 0]
    expected = q0 + (q1 - q0) * quintic(t / T)[:, None]
    assert np.max(np.abs(q - expected)) <= 1e-8
    # 1/2 int q'''^2 dt of the quintic = 360 dq^2 / T^5 per joint; Gauss rule is exact here
    exact = np.sum(360 * (q1 - q0) ** 2 / T ** 5)
    assert abs(result.cost - exact) <= 1e-8 * exact


def test_minimum_jerk_rest_order_1_has_zero_jerk_at_the_ends(chain3):
    """With q'' free at the ends the natural boundary conditions are q'''(0) = q'''(T) = 0:
    solve the 6x6 system for that quintic here."""
    q0, q1, T = 1.0, -0.5, 2.0
    problem = MotionProblem(chain3, "joint_jerk", duration=T, degree=5, control_points=15,
                            start=q0, goal=q1, rest_order=1, integration="gauss", limits="none")
    result = solve(problem, [1.0])
    rows = []
    for t, d in [(0, 0), (T, 0), (0, 1), (T, 1), (0, 3), (T, 3)]:
        rows.append([np.prod(range(n - d + 1, n + 1)) * t ** (n - d) if n >= d else 0.0
                     for n in range(6)])
    coef = np.linalg.solve(np.array(rows, dtype=float), [q0, q1, 0, 0, 0, 0])
    t = np.linspace(0, T, 41)
    expected = np.polynomial.polynomial.polyval(t, coef)
    q = result.sample(t, 0)[:, 0]
    assert np.max(np.abs(q - expected[:, None])) <= 1e-8


def test_minimum_jerk_quintic_in_one_quadratic_step_to_round_off(chain3):
    """Joint terms alone take the quadratic path (one float64 step from H theta, refined in
    double-double): the quintic of the closed form to 1e-12 (observed 1.3e-15)."""
    q0, q1, T = np.array([0.3, -1.0, 2.0]), np.array([-0.2, 0.5, 1.0]), 1.5
    problem = MotionProblem(chain3, "joint_jerk", duration=T, degree=5, control_points=12,
                            start=q0, goal=q1, rest_order=2, integration="gauss", limits="none")
    result = solve(problem, [1.0])
    t = np.linspace(0, T, 31)
    expected = q0 + (q1 - q0) * quintic(t / T)[:, None]
    assert result.status == "converged" and result.iterations <= 2
    assert np.max(np.abs(result.sample(t, 0)[:, 0] - expected)) <= 1e-12


def _with_zero_torque(chain3, costs, weights, **kwargs):
    """The same cost through the general Newton path: a torque term of weight 0 makes the
    problem nonlinear, and an explicit start skips the quadratic start."""
    problem = MotionProblem(chain3, tuple(costs) + ("joint_torque",), **kwargs)
    return solve(problem, list(weights) + [0.0], theta0=problem.initial_theta())


def test_quadratic_path_matches_the_general_newton_solve(chain3):
    """Case (a) (joint velocity, acceleration, jerk) by the quadratic path against the
    Newton solver on the same cost: control points to 1e-12 rad (both at relative
    stationarity <= 1e-12; observed 8e-16)."""
    costs, weights = CASES["a"], [1.0, 2.0, 0.5]
    fast = solve(MotionProblem(chain3, costs, **PAPER), weights)
    general = _with_zero_torque(chain3, costs, weights, **PAPER)
    assert fast.status == general.status == "converged"
    assert np.max(np.abs(fast.control_points - general.control_points)) <= 1e-12
    assert abs(fast.cost - general.cost) <= 1e-12 * general.cost


def test_quadratic_path_with_an_active_limit_matches_the_general_newton_solve(chain3):
    """Started at 4 rad/s away from its goal, joint 1's minimum acceleration + jerk motion
    overshoots; an upper limit halfway is active on the quadratic path's first (active-set)
    step: the same control points (1e-12 rad, observed 1e-16) and multipliers as the
    Newton solver's."""
    kwargs = dict(duration=1.0, samples=60, control_points=16, rest_order=1,
                  boundary="data", start=[[0.0, 0.0, 0.0], [4.0, 0.0, 0.0]],
                  goal=[[0.5, 0.0, 0.0], [0.0, 0.0, 0.0]])
    costs = ("joint_acceleration", "joint_jerk")
    free = solve(MotionProblem(chain3, costs, limits="none", **kwargs), [1, 1])
    peak = np.max(free.sample(np.linspace(0, 1, 60), 0)[:, 0, 0])
    assert peak > 0.6, "the test needs an overshoot past the goal"
    limits = ([-np.pi] * 3, [0.5 * (0.5 + peak), np.pi, np.pi])
    fast = solve(MotionProblem(chain3, costs, limits=limits, **kwargs), [1, 1])
    general = _with_zero_torque(chain3, costs, [1, 1], limits=limits, **kwargs)
    assert fast.status == general.status == "converged" and fast.multipliers
    assert np.max(np.abs(fast.control_points - general.control_points)) <= 1e-12
    assert [m["time"] for m in fast.multipliers] == [m["time"] for m in general.multipliers]
    np.testing.assert_allclose([m["value"] for m in fast.multipliers],
                               [m["value"] for m in general.multipliers], rtol=1e-9)


@pytest.mark.parametrize("case", ["a", "b", "c"])
def test_paper_3dof_case_reaches_stationarity(paper_solutions, case):
    result = paper_solutions[case]
    assert result.status == "converged"
    assert result.stationarity_rel <= 1e-9
    assert np.all(np.isfinite(result.control_points))


def _torque_stats(result, order):
    t = np.linspace(0, 2.0, 401)
    stack = result.sample(t, order + 2)
    tau = cmtm.inverse_dynamics(result.problem.model, stack, order=order)[:, order]
    return np.sqrt(np.mean(tau ** 2)), np.max(np.abs(tau))


def test_paper_torque_term_lowers_torque_and_torque_rate_term_lowers_its_rate(paper_solutions):
    rms_a, peak_a = _torque_stats(paper_solutions["a"], 0)
    rms_b, peak_b = _torque_stats(paper_solutions["b"], 0)
    assert rms_b < rms_a and peak_b < peak_a
    rate_b, _ = _torque_stats(paper_solutions["b"], 1)
    rate_c, _ = _torque_stats(paper_solutions["c"], 1)
    assert rate_c < rate_b


def test_paper_link_space_terms_converge(chain3):
    costs = ("link_velocity", "link_acceleration", "link_jerk", "joint_torque")
    result = solve(MotionProblem(chain3, costs, **PAPER), np.ones(4))
    assert result.status == "converged" and result.stationarity_rel <= 1e-9


def test_paper_7dof_panda_converges(panda_solution):
    assert panda_solution.status == "converged" and panda_solution.stationarity_rel <= 1e-9


def test_active_joint_limit_holds_with_nonnegative_multiplier(chain3):
    """Unconstrained, the minimum acceleration + torque motion of joint 2 from 1 to -1 rad
    first swings up past 2 rad (against gravity's lever); with an upper limit halfway it
    must touch the limit and stay below it."""
    kwargs = dict(duration=2.0, samples=60, control_points=14, start=[0.0, 1.0, 0.0],
                  goal=[0.0, -1.0, 0.0], rest_order=1)
    costs = ("joint_acceleration", "joint_torque")
    free = solve(MotionProblem(chain3, costs, limits="none", **kwargs), [1, 1])
    peak = np.max(free.sample(np.linspace(0, 2, 60), 0)[:, 0, 1])
    assert peak > 1.5, "the test needs an unconstrained excursion"
    bound = 0.5 * (1.0 + peak)
    limits = ([-np.pi, -np.pi, -np.pi], [np.pi, bound, np.pi])
    problem = MotionProblem(chain3, costs, limits=limits, **kwargs)
    result = solve(problem, [1, 1])
    q = problem.limit_positions(result.theta)
    assert result.status == "converged" and result.stationarity_rel <= 1e-9
    assert np.max(q[:, 1]) <= bound + 1e-9
    assert np.max(q[:, 1]) >= bound - 1e-9, "the limit must be active"
    assert result.multipliers and all(m["value"] > 0 for m in result.multipliers)
    assert all(m["joint"] == "joint2" and m["bound"] == "upper" for m in result.multipliers)


def _free_hessian_and_active_rows(problem, result):
    """(dense Newton Hessian on the free variables, rows a_k of the active limits) at the
    result."""
    ev = problem.evaluate(result.theta, result.weights, hessian="newton")
    free = problem.free_slice
    H = band_to_dense(problem.layout.restrict(ev.band, free.start, free.stop))
    limits = _Limits(problem, result.theta)
    return H, limits.A[limits.active(1e-10)].toarray()


def test_limits_held_on_an_indefinite_hessian_converge_in_few_newton_steps(two_link):
    """The step matrix adds curvature along the held limits' rows instead of shifting the
    whole Hessian: on the arm pressed on its limit, 17 Newton iterations (a shift of the
    whole Hessian took 133, converging linearly); 30 allows for other BLAS roundings."""
    problem, weights = hanging_on_a_limit(two_link)
    result = solve(problem, weights)
    H, A = _free_hessian_and_active_rows(problem, result)
    Z = np.linalg.svd(A)[2][len(A):].T                      # null space of the active rows
    assert np.linalg.eigvalsh(H)[0] < 0, "the test needs an indefinite Hessian"
    assert np.linalg.eigvalsh(Z.T @ H @ Z)[0] > 0, "second-order conditions on the limits"
    assert result.status == "converged" and result.iterations <= 30


def test_limits_held_on_an_indefinite_hessian_match_slsqp_and_kkt(two_link):
    """The same optimum as scipy's SLSQP (an independent active-set SQP) on the free
    control points under the same linear limit rows, started at the problem's initial
    motion: costs to 1e-9 relative (plus what SLSQP's constraint violation allows it to
    undercut) and control points to 5e-6 rad (SLSQP's quasi-Newton Hessian stops it early
    along flat directions, its constraints met to its rounding; observed 2.6e-11 and
    3.8e-9 rad with two BLAS threads, 1.8e-11 and 5.6e-7 rad with one, where it ends on
    status 8); KKT: relative stationarity <= 1e-12 (observed 9.7e-16) with every
    multiplier > 0 (nine limit nodes active)."""
    from scipy.optimize import minimize
    problem, weights = hanging_on_a_limit(two_link)
    result = solve(problem, weights)
    theta0, free = problem.initial_theta(), problem.free_slice
    rows, sign, A, bound = problem.limit_constraints()
    x0 = theta0.value().ravel()[free]
    offset = problem.limit_values(theta0)[rows] * sign - A @ x0  # sign q(x) = A x + offset

    def fun(x):
        ev = problem.evaluate(problem.with_free_step(theta0, x - x0), weights)
        return ev.cost, ev.gradient.ravel()[free]

    reference = minimize(fun, x0, jac=True, method="SLSQP",
                         constraints=[{"type": "ineq", "fun": lambda x: bound - offset - A @ x,
                                       "jac": lambda x: -A.toarray()}],
                         options={"ftol": 1e-14, "maxiter": 1000})
    # status 8: its line search found no descent at its rounding floor (seen in the suite)
    assert reference.status in (0, 8), reference.message
    # SLSQP meets its constraints to its rounding only (observed violations up to 5.3e-9
    # rad): its cost may undercut the feasible optimum by up to sum(mu) * violation
    violation = max(0.0, float(np.max(A @ reference.x + offset - bound)))
    slack = sum(m["value"] for m in result.multipliers) * violation
    assert abs(result.cost - reference.fun) <= 1e-9 * reference.fun + slack
    assert np.max(np.abs(result.control_points.ravel()[free] - reference.x)) <= 5e-6
    assert result.stationarity_rel <= 1e-12
    assert result.multipliers and all(m["value"] > 0 for m in result.multipliers)


# --- gradients against central finite differences ---

def _fd_gradient(problem, theta, weights, h=1e-6):
    base = theta.value()
    grad = np.zeros_like(base)
    for i in range(base.shape[0]):
        for j in range(base.shape[1]):
            plus, minus = base.copy(), base.copy()
            plus[i, j] += h
            minus[i, j] -= h
            grad[i, j] = (problem.evaluate(DD.of(plus), weights).cost
                          - problem.evaluate(DD.of(minus), weights).cost) / (2 * h)
    return grad


@pytest.mark.parametrize("term", list(NAMED_TERMS) + ["joint_velocity:3", "joint_torque:2",
                                                       "link_velocity[link2]"])
def test_subcost_gradient_matches_central_fd(tree12, term):
    spec = term.replace("link2", tree12.link_names[3])
    problem = MotionProblem(tree12, spec, duration=1.0, samples=6, degree=5,
                            control_points=7, rest_order=0, limits="none",
                            constraints="penalty", penalty=0.0)
    rng = np.random.default_rng(3)
    theta = DD.of(rng.uniform(-1, 1, (7, tree12.nv)))
    ev = problem.evaluate(theta, [1.0])
    fd = _fd_gradient(problem, theta, [1.0])
    scale = np.max(np.abs(fd))
    # central FD, h = 1e-6: truncation h^2 |c'''| and round-off eps |c| / h
    assert np.max(np.abs(ev.grads[0] - fd)) <= 1e-6 * max(scale, 1.0)


def _fd_hessian(problem, theta, weights, h):
    """Central differences of the exact gradient, one control-point entry at a time."""
    base = theta.value()
    n = base.size
    fd = np.zeros((n, n))
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        gp = problem.evaluate(DD.of(base + e.reshape(base.shape)), weights).gradient
        gm = problem.evaluate(DD.of(base - e.reshape(base.shape)), weights).gradient
        fd[:, k] = (gp - gm).ravel() / (2 * h)
    return fd


def test_linear_hessian_follows_the_weights(chain3):
    """MotionProblem._linear_hessian keeps the sum for the last weights: against the terms'
    bands summed anew, after other weights, and a new array at every call (its callers add
    to it)."""
    problem = MotionProblem(chain3, ("joint_velocity", "joint_jerk"), duration=1.0, samples=8,
                            control_points=9, rest_order=1, limits="none")
    for weights in ([1.0, 2.0], [3.0, 0.5], [1.0, 2.0]):
        band = problem._linear_hessian(np.array(weights))
        expected = sum(w * problem._linear_band(i) for i, w in enumerate(weights))
        assert np.array_equal(band, expected)
        band += 1.0
    assert not np.array_equal(problem._linear_hessian(np.array([1.0, 2.0])), band)


def test_gauss_newton_matrix_of_joint_terms_is_the_exact_hessian(chain3):
    problem = MotionProblem(chain3, ("joint_velocity", "joint_jerk"), duration=1.0, samples=8,
                            control_points=9, rest_order=1, limits="none")
    theta = problem.initial_theta()
    H = band_to_dense(problem.evaluate(theta, [1.0, 2.0], hessian="gauss_newton").band)
    fd = _fd_hessian(problem, theta, [1.0, 2.0], 1e-4)
    # the cost is quadratic: central differences of the gradient are exact up to round-off
    assert np.max(np.abs(H - fd)) <= 1e-6 * np.max(np.abs(H))


CURVATURE_TERMS = [("joint_torque", "link_jerk"),
                   ("link_velocity", "joint_torque:2", "joint_jerk"),
                   ("link_jerk", "joint_torque_rate"),
                   ("joint_torque", "joint_acceleration"),
                   ("link_acceleration", "link_velocity"),
                   ("joint_torque", "link_acceleration"),
                   ("joint_torque_rate",),
                   ("joint_torque", "joint_torque_rate", "joint_jerk")]
TREE12_SUBSETS = [("joint_torque[joint02,joint05,joint11]",),
                  ("joint_torque_rate[joint03,joint09]", "link_acceleration",
                   "joint_torque[joint01,joint12]")]


@pytest.mark.parametrize("model_name, costs",
                         [("tree12", costs) for costs in CURVATURE_TERMS + TREE12_SUBSETS]
                         + [("chain3", costs) for costs in CURVATURE_TERMS])
def test_newton_hessian_matches_fd_of_gradients(request, model_name, costs):
    """The Newton Hessian differences only the stack orders o <= L/2 (L: the highest input
    order) and takes the other blocks as transposes or zeros (the first three cases), and
    where every term is a torque, a torque rate or the rate of a velocity (the others, with
    torque subsets) differences q only and takes the (q', q') and (q'', q') blocks from the
    identities of MotionProblem._curvature: checked against central differences of the
    exact gradient in every control point, on the branching tree (with torque subsets) and
    the 3-DoF chain of the paper."""
    model = request.getfixturevalue(model_name)
    problem = MotionProblem(model, costs, duration=1.0, samples=5, degree=6,
                            control_points=8, rest_order=0, limits="none",
                            constraints="penalty", penalty=0.0)
    theta = DD.of(np.random.default_rng(5).uniform(-1, 1, (8, model.nv)))
    weights = np.linspace(1.0, 2.0, len(costs))
    H = band_to_dense(problem.evaluate(theta, weights, hessian="newton").band)
    fd = _fd_hessian(problem, theta, weights, 1e-5)
    # a forward difference (relative step 1.5e-8) against a central one (step 1e-5)
    assert np.max(np.abs(H - fd)) <= 1e-5 * np.max(np.abs(H))


@pytest.mark.parametrize("costs", [("joint_torque", "link_velocity"),
                                   ("joint_torque_rate[joint03,joint09]", "link_jerk")])
def test_gauss_newton_stack_matches_the_dense_products(tree12, costs):
    """MotionProblem._gauss_newton_stack against sum_i w_i omega_m Jy_i^T Jy_i formed with
    einsum from the terms' Jacobians (order axes first), symmetric to the bit, and the
    same bits as numpy's sum of the products row by row in the kernel's order (its skip of
    the zero entries, which the link Jacobians have, changes none)."""
    problem = MotionProblem(tree12, costs, duration=1.0, samples=5, control_points=8,
                            rest_order=0, limits="none")
    weights = np.array([1.5, 0.5])
    q_stack = problem.stack(DD.of(np.random.default_rng(9).uniform(-1, 1, (8, tree12.nv))))
    values = problem._values(q_stack)
    omega = problem.quadrature.weights
    dense = sum(weights[i] * np.einsum("m,mdsa,mdtb->mstab", omega, Jy, Jy)
                for i, (_, Jy) in enumerate(values))
    G = problem._gauss_newton_stack(values, weights)
    # the same sums in another order: round-off of the products only
    assert np.max(np.abs(G - dense)) <= 1e-14 * np.max(np.abs(dense))
    assert np.array_equal(G, G.transpose(0, 2, 1, 4, 3))
    N, K, nv = q_stack.shape
    rows = np.zeros((N, K * nv, K * nv))
    for i, (_, Jy) in enumerate(values):
        flat = Jy.reshape(N, Jy.shape[1], K * nv)
        assert np.any(flat == 0.0)
        for d in range(flat.shape[1]):
            rows += (weights[i] * omega)[:, None, None] * (flat[:, d, :, None]
                                                           * flat[:, d, None, :])
    assert np.array_equal(G, rows.reshape(N, K, nv, K, nv).transpose(0, 1, 3, 2, 4))


@pytest.mark.parametrize("costs", [("joint_torque_rate",),
                                   ("joint_torque", "joint_torque_rate", "link_acceleration"),
                                   ("joint_torque_rate[joint03,joint09]",
                                    "joint_torque[joint01,joint12]")])
def test_curvature_identities_match_differences_along_q_prime(tree12, monkeypatch, costs):
    """The (q', q') and (q'', q') blocks that MotionProblem._curvature takes from its
    identities against the same blocks differenced along q' (the general path, with the
    identities switched off), on the curvature alone (no Gauss-Newton or jerk part to
    hide a small error in)."""
    problem = MotionProblem(tree12, costs, duration=1.0, samples=5, control_points=8,
                            rest_order=0, limits="none")
    weights = np.linspace(1.0, 2.0, len(costs))
    q_stack = problem.stack(DD.of(np.random.default_rng(8).uniform(-1, 1, (8, tree12.nv))))
    values = problem._values(q_stack)
    identities = problem._curvature(q_stack, values, weights)
    monkeypatch.setattr(MotionProblem, "_identity_groups", lambda self: None)
    differenced = problem._curvature(q_stack, values, weights)
    assert np.max(np.abs(identities[:, 1:3, 1:3])) > 1e-3 * np.max(np.abs(identities))
    for S in (identities, differenced):             # symmetric to the bit
        assert np.array_equal(S, S.transpose(0, 2, 1, 4, 3))
    # two forward differences (relative step 1.5e-8), each right to ~1e-8 of the part
    assert np.max(np.abs(identities - differenced)) <= 1e-6 * np.max(np.abs(identities))


@pytest.mark.parametrize("d, K, top, nv, B, first", [(3, 3, 3, 3, 3, 0), (42, 3, 2, 7, 2, 5),
                                                     (5, 4, 4, 3, 1, 2)])
def test_add_vjps_matches_numpy_products(d, K, top, nv, B, first):
    """ioc.problem._add_vjps (the compiled lambda^T Jy of MotionProblem._curvature) against
    numpy's matmul (its former expression, ioc.problem._vjp), on strided Jacobians cut to
    a top order (entries p past it untouched), over a remainder of entries (P mod 4), added
    to what the columns held, at the directions first, first + 1, ... and nowhere else."""
    rng = np.random.default_rng(11)
    N, O = 6, (first + B - 1) // nv + 1
    lam = rng.standard_normal((N, d))
    Jy = rng.standard_normal((B * N, 2, d, K, nv))[:, 1, :, :top]    # strided, like a term's
    out = rng.standard_normal((N, O, nv, K * nv))
    before = out.copy()
    ioc.problem._add_vjps(lam, Jy.reshape(B * N, d, top * nv), first, out)
    products = ioc.problem._vjp(lam, Jy.reshape(B, N, d, top, nv)).reshape(B, N, top * nv)
    expected = before.copy()
    for e in range(B):
        o, j = divmod(first + e, nv)
        expected[:, o, j, :top * nv] += products[e]
    # the same sums (numpy's with BLAS may take another order): round-off only
    assert np.max(np.abs(out - expected)) <= 1e-14 * np.max(np.abs(expected))
    changed = np.zeros(out.shape, dtype=bool)
    for e in range(B):
        changed[:, divmod(first + e, nv)[0], divmod(first + e, nv)[1], :top * nv] = True
    assert np.array_equal(out[~changed], before[~changed])


def test_curvature_in_direction_groups_matches_one_group(tree12, monkeypatch):
    """The differences share engine calls in groups of directions (CURVATURE_BYTES): any
    grouping gives the same second-order part, up to the order of float sums."""
    problem = MotionProblem(tree12, ("joint_torque_rate", "link_velocity"), duration=1.0,
                            samples=5, control_points=8, rest_order=0, limits="none")
    weights = np.array([1.0, 2.0])
    q_stack = problem.stack(DD.of(np.random.default_rng(7).uniform(-1, 1, (8, tree12.nv))))
    values = problem._values(q_stack)
    one = problem._curvature(q_stack, values, weights)
    assert np.max(np.abs(one)) > 1.0                # a moving motion: a part to compare
    monkeypatch.setattr(ioc.problem, "CURVATURE_BYTES", 1)       # one direction per call
    assert np.allclose(problem._curvature(q_stack, values, weights), one, rtol=0,
                       atol=1e-12 * np.max(np.abs(one)))


def test_urdf_branching_tree_with_prismatic_joint_optimizes(tree12):
    costs = ("joint_jerk", "joint_torque_rate", "link_velocity")
    problem = MotionProblem(tree12, costs, duration=1.0, samples=30, control_points=10,
                            start=0.2, goal=-0.2, limits="none")
    result = solve(problem, [1.0, 1e-3, 1.0])
    assert result.status == "converged" and result.stationarity_rel <= 1e-9


# --- bad input ---

@pytest.mark.parametrize("kwargs, message", [
    (dict(costs="joint_snapp"), "cost: expected one of"),
    (dict(costs="joint_velocity:2[link1]"), "expected joint names of the model"),
    (dict(costs="joint_jerk", degree=3), "use degree >= 4"),
    (dict(costs="joint_velocity:4", degree=5), "use degree >= 6"),
    (dict(costs="joint_jerk", control_points=4), "control"),
    (dict(costs="joint_jerk", start=4.0, limits=(-3, 3)), "start: expected values within"),
    (dict(costs="joint_jerk", goal=[0.0, np.nan, 0.0]), "goal: expected"),
    (dict(costs="joint_jerk", integration="simpson"), "integration: expected"),
    (dict(costs="joint_jerk", constraints="soft"), "constraints: expected"),
    (dict(costs="joint_jerk", samples=1), "samples: expected"),
    (dict(costs="joint_jerk", duration=float("nan")), "duration"),
    (dict(costs="joint_jerk", rest_order=5), "rest_order"),
])
def test_bad_problem_is_a_clear_value_error(chain3, kwargs, message):
    kwargs = dict(kwargs)
    costs = kwargs.pop("costs")
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        MotionProblem(chain3, costs, **kwargs)


@pytest.mark.parametrize("weights, message", [
    ([1.0], "expected 2"), ([1.0, -1.0], "non-negative"), ([0.0, 0.0], "not all zero"),
    ([1.0, np.nan], "finite"), ([np.inf, 1.0], "finite"), ([-0.0, -1e-300], "non-negative"),
    ([1e-310, 0.0], "a sum within"), ([1.5e200, 1e200], "a sum within"),
])
def test_bad_weights_are_a_clear_value_error(chain3, weights, message):
    problem = MotionProblem(chain3, "joint_velocity,joint_jerk", samples=10, control_points=8)
    with pytest.raises(ValueError, match=message):
        solve(problem, weights)


def test_single_threaded_blas_sets_one_thread_inside_and_restores_the_count():
    """Against threadpoolctl's own report (threadpool_info) of the BLAS libraries' thread
    counts: one inside a decorated call (also a nested one), the count before restored
    after it, also when the call raises."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from ioc._blas import single_threaded_blas

    def blas_threads():
        return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
                if lib["user_api"] == "blas"}

    @single_threaded_blas
    def inner():
        return blas_threads()

    @single_threaded_blas
    def outer(fail=False):
        if fail:
            raise RuntimeError("planted")
        return blas_threads(), inner(), blas_threads()

    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        assert before and set(before.values()) == {2}
        assert all(set(seen.values()) == {1} for seen in outer())
        assert blas_threads() == before
        with pytest.raises(RuntimeError, match="planted"):
            outer(fail=True)
        assert blas_threads() == before


def term_values_of(problem, ev):
    """(y, Jy) of every term at the evaluation: the engine's of the link and torque terms
    (its ``inputs``), a joint term's y the stack entries that its selector Jy (d, K, nv)
    picks, by numpy's indexing."""
    values = list(ev.inputs[2])
    for i, S in problem._selectors().items():
        term = problem.terms[i]
        values[i] = ev.q_stack[:, term.derivative, term.joints], S
    return values


def test_gross_gradient_and_costs_equal_their_definitions_sample_by_sample(chain3):
    """Evaluation.gross_gradient, the rounding scale of the stationarity, against its
    definition sum_i w_i sum_m |B_m|^T |gs_im| summed sample by sample here from the local
    basis (gs_im = omega_m Jy_im^T y_im, the stack gradient of term i), and the costs
    against 1/2 sum_m omega_m |y_im|^2, on joint and torque terms with unequal weights;
    cost() is evaluate's cost (the line search compares them). 1e-14 relative: sums in
    other orders."""
    problem = MotionProblem(chain3, "joint_velocity,joint_jerk,joint_torque", duration=2.0,
                            samples=40, degree=5, control_points=12, start=0.4, goal=-0.3)
    rng = np.random.default_rng(5)
    theta = problem.initial_theta()
    theta = DD.of(theta.hi + 0.05 * rng.normal(size=theta.hi.shape))
    weights = np.array([0.7, 1e-3, 0.2])
    ev = problem.evaluate(theta, weights)
    omega = problem.quadrature.weights
    reference = np.zeros_like(ev.gross_gradient)
    for i, (y, Jy) in enumerate(term_values_of(problem, ev)):
        Jy = np.broadcast_to(Jy, (len(y),) + Jy.shape[-3:])
        assert abs(ev.costs[i] - 0.5 * sum(omega[m] * y[m] @ y[m] for m in range(len(y)))) \
            <= 1e-14 * ev.costs[i]
        for m in range(len(y)):
            gs = omega[m] * np.einsum("d,dsj->sj", y[m], Jy[m])
            for s in range(gs.shape[0]):
                for a in range(problem.basis.shape[2]):
                    reference[problem.first[m] + a] += \
                        weights[i] * abs(problem.basis[m, s, a]) * np.abs(gs[s])
    assert np.max(np.abs(ev.gross_gradient - reference)) <= 1e-14 * np.max(reference)
    assert np.all(np.abs(ev.gradient) <= ev.gross_gradient * (1 + 1e-14))
    assert problem.cost(theta, weights) == ev.cost


def test_limit_slacks_are_bounds_minus_the_spline_positions_at_the_limit_nodes(chain3):
    """MotionProblem.limit_slacks (the active-set steps' b) against the positions from the
    spline's own evaluation at the limit nodes (1e-14: other sums), and bit for bit against
    the rows of limit_values (of theta.value()) with their signs, on a DD with a lo part;
    infinite bounds have no row."""
    problem = MotionProblem(chain3, "joint_jerk", duration=2.0, samples=30, degree=5,
                            control_points=12, start=0.4, goal=-0.3,
                            limits=([-1.0, -np.inf, -2.0], [1.5, 2.0, np.inf]))
    theta = problem.initial_theta()
    rng = np.random.default_rng(6)
    hi = theta.hi + 0.1 * rng.normal(size=theta.hi.shape)
    theta = DD(hi, 1e-16 * rng.normal(size=hi.shape))      # rounded into hi + lo
    rows, sign, _, bound = problem.limit_constraints()
    q = problem.spline.evaluate(theta, problem.limit_times, 0)[:, 0].ravel()
    slacks = problem.limit_slacks(theta)
    assert len(rows) == 2 * 2 * 30 and set(rows % 3) == {0, 1, 2}
    assert np.max(np.abs(slacks - (bound - sign * q[rows]))) <= 1e-14
    assert np.array_equal(slacks, bound - sign * problem.limit_values(theta)[rows])


def test_step_matrix_shifts_by_factors_of_8_from_a_third_of_the_last_shift(chain3):
    """_StepMatrix factors H itself where it is positive definite (shift 0); else H +
    tau max(diag H) I with tau = 1e-10, 8e-10, ... the first that factors, and at the next
    indefinite H from a third of the last shift: a diagonal H with one entry -5e-7 (its
    max 1) needs tau > 5e-7, 1e-10 8^5 at first, then 1e-10 8^5 / 3. The factor is the
    shifted matrix's (its solve against the dense one)."""
    problem = MotionProblem(chain3, "joint_jerk", control_points=12, samples=30)
    n, u = problem.n_free, problem.layout.u
    step = _StepMatrix(problem, SolverOptions())
    diagonal = np.ones(n)
    diagonal[n // 2] = -5e-7
    indefinite = np.zeros((u + 1, n))
    indefinite[u] = diagonal
    first = 1e-10 * 8.0 ** 5
    for tau in (first, first / 3.0):
        factor, band = step._shifted(indefinite.copy(), 1e-10)
        assert step.shift == tau
        np.testing.assert_array_equal(band[u], diagonal + tau)
        b = np.arange(1.0, n + 1)
        np.testing.assert_allclose(factor.solve(b), b / (diagonal + tau), rtol=1e-12)
    definite = indefinite.copy()
    definite[u, n // 2] = 1.0
    factor, band = step._shifted(definite.copy(), 1e-10)
    assert step.shift == 0.0
    np.testing.assert_array_equal(band, definite)


@pytest.mark.parametrize("rest_order", [0, 2])
def test_signed_limits_of_a_step_are_the_sparse_product_bit_for_bit(chain3, rest_order):
    """MotionProblem.signed_limits_of (the active-set steps' A dx, from the bases at the
    limit nodes) equals scipy's product A @ dx with the sparse free columns bit for bit,
    for a step on the free rows (the fixed rows' columns left out) and for all control
    points against signed_limit_rows(); limits on some joints only, random values."""
    problem = MotionProblem(chain3, "joint_jerk", duration=2.0, samples=30, degree=5,
                            control_points=12, start=0.4, goal=-0.3, rest_order=rest_order,
                            limits=([-1.0, -np.inf, -2.0], [1.5, 2.0, np.inf]))
    _, _, A, _ = problem.limit_constraints()
    rng = np.random.default_rng(rest_order)
    dx = rng.normal(size=A.shape[1])
    assert np.array_equal(problem.signed_limits_of(dx.reshape(-1, 3), problem.free_rows[0]),
                          A @ dx)
    x = rng.normal(size=(problem.spline.n_control, 3))
    assert np.array_equal(problem.signed_limits_of(x), problem.signed_limit_rows() @ x.ravel())


def test_evaluate_equals_the_selector_products_bit_for_bit(chain3):
    """MotionProblem.evaluate writes a joint term's stack gradient omega_m y_m straight to
    the entries it selects and chains the gradients in a compiled loop; the reference is
    the general formula, its selector Jy: gs = (omega y) Jy, chained by scipy's sparse
    products (conftest.chain_gradient_matrix and its |.|), the weighted sum by np.tensordot;
    the costs (a joint term's from the squares of its compiled call) against _term_cost's
    einsum of the y that numpy's indexing selects, and cost() against evaluate's. Equal bit
    for bit, on joint terms (one a subset of non-consecutive joints) around a torque term,
    unequal weights."""
    problem = MotionProblem(chain3, "joint_velocity[joint1,joint3],joint_torque,joint_jerk",
                            duration=2.0, samples=40, degree=5, control_points=12, start=0.4,
                            goal=-0.3)
    rng = np.random.default_rng(6)
    theta = problem.initial_theta()
    theta = DD.of(theta.hi + 0.05 * rng.normal(size=theta.hi.shape))
    weights = np.array([0.7, 0.2, 1e-3])
    ev = problem.evaluate(theta, weights)
    omega, values = problem.quadrature.weights, term_values_of(problem, ev)
    N, K, nv = ev.q_stack.shape
    stack_grads, gross_stack = np.zeros((N, K, 3, nv)), np.zeros((N, K, nv))
    for i, (y, Jy) in enumerate(values):
        gs = ((omega[:, None] * y) @ Jy.reshape(len(Jy), -1)).reshape(N, K, nv) \
            if Jy.ndim == 3 else ioc.problem._vjp(omega[:, None] * y, Jy)
        stack_grads[:, :gs.shape[1], i] = gs
        gross_stack[:, :gs.shape[1]] += weights[i] * np.abs(gs)
        if Jy.ndim == 3:
            assert np.array_equal(y, ev.q_stack.reshape(N, -1) @ Jy.reshape(len(Jy), -1).T)
        assert ev.costs[i] == ioc.problem._term_cost(omega, y)
    assert problem.cost(theta, weights) == ev.cost
    C = chain_gradient_matrix(problem.chain)
    grads = np.moveaxis((C @ stack_grads.reshape(N * K, -1)).reshape(-1, 3, nv), 1, 0)
    assert np.array_equal(ev.grads, grads)
    assert np.array_equal(ev.gradient, np.tensordot(weights, grads, axes=1))
    assert np.array_equal(ev.gross_gradient, abs(C) @ gross_stack.reshape(N * K, nv))


def test_joint_costs_equal_term_cost_of_the_indexed_values_bit_for_bit(tree12):
    """MotionProblem._joint_costs (squares summed in a compiled loop) against _term_cost's
    einsum on the y that numpy's indexing selects, bit for bit: joint terms of 1 to 12
    joints (all, one, and scattered subsets) at orders 1-3, random DD control points
    (einsum sums a column-major copy column by column: the loop's order)."""
    names = ["joint_velocity[joint05]", "joint_velocity", "joint_acceleration[joint02,"
             "joint03,joint11]", "joint_jerk[joint01,joint04,joint06,joint07,joint08,joint12]"]
    problem = MotionProblem(tree12, names, duration=1.0, samples=30, control_points=10,
                            limits="none")
    omega = problem.quadrature.weights
    for seed in range(5):
        rng = np.random.default_rng(seed)
        hi = rng.uniform(-2, 2, (10, tree12.nv))
        q_stack = problem.stack(DD(hi, 1e-17 * rng.normal(size=hi.shape)))
        costs = problem._joint_costs(q_stack)
        for i, term in enumerate(problem.terms):
            y = q_stack[:, term.derivative, term.joints]
            assert costs[i] == ioc.problem._term_cost(omega, y)


def test_stationarity_equals_numpys_norms_bit_for_bit(chain3):
    """_stationarity's norms (sqrt(x . x)) and maxima (array methods) against the formulas
    with numpy.linalg.norm, np.max and np.flatnonzero: equal bit for bit, at an iterate
    with active limits (a limit-hugging start), unequal weights, a torque term."""
    problem = MotionProblem(chain3, ("joint_acceleration", "joint_torque"), duration=2.0,
                            samples=40, control_points=12, start=[0.0, 1.0, 0.0],
                            goal=[0.0, -1.0, 0.0], limits=([-3, -3, -3], [3, 1.0, 3]))
    rng = np.random.default_rng(8)
    theta = problem.initial_theta()
    theta = DD.of(theta.hi + 0.01 * rng.normal(size=theta.hi.shape))
    weights, options = np.array([0.3, 0.7]), SolverOptions(active_tolerance=0.05)
    ev, limits = problem.evaluate(theta, weights), _Limits(problem, theta)
    stat, mu, active = _stationarity(problem, ev, weights, limits, options)
    free = problem.free_slice
    expected_active = np.flatnonzero(limits.b <= options.active_tolerance)
    assert len(expected_active) and np.array_equal(active, expected_active)
    residual, expected_mu = kkt_residual(ev.gradient.ravel()[free], limits, expected_active)
    terms = weights[:, None] * ev.grads.reshape(2, -1)[:, free]
    scale = max(float(np.linalg.norm(term)) for term in terms)
    gross = float(np.linalg.norm(ev.gross_gradient.ravel()[free]))
    absolute = float(np.linalg.norm(residual))
    assert np.array_equal(mu, expected_mu) and absolute > 0
    assert stat == (absolute, absolute / scale, np.finfo(float).eps * gross / scale)
