"""Cost weights from measured motions, with their uncertainty (ioc_calibration.md).

Plain inverse KKT on a fitted noisy motion collapses (the fit's noise, amplified by the jerk
and torque-rate stiffness, makes the velocity cost look the most stationary), so measured
data go through an output-error model instead:

    q_data(t_d) = B(t_d) theta*(w, start, goal) + noise,   noise ~ N(0, sigma^2),

where theta*(w, start, goal) is the optimal motion for the weights (ioc.optimize.direct) and B the
spline's design matrix at the data times; start and goal are the boundary values of the
problem's ``boundary`` (ioc.optimize.problem): "rest", the end positions (the motion starts and ends
at rest, q^(1..R) = 0), or "data", the end stacks (q, ..., q^(R)), for recorded motions
that start or end moving. Which to use: "rest" when the trial was cut at rest (a reach
from and to a still hand; it adds no parameters), "data" whenever the hand or joint still
moves at the cut: a rest model cannot follow such a motion at its ends whatever the
weights, and its weights come out biased (tests/test_boundary_data.py measures it).
The sensitivities follow from the implicit function theorem at the optimum,
H_ff dtheta_f = -(sum_i dw_i grad_f c_i + H_fF dtheta_F) (f free, F fixed control points;
H the Newton Hessian).

1. **Linearized data-space estimate** (the starting point): at the fitted motion theta_fit,
   the Newton step to the optimum for w is -H(w)^-1 C^T w; the weights that make it
   smallest in data space, min |B H(w)^-1 C^T w| over the simplex, by a few fixed-point
   iterations on H(w) (column-scaled NNLS). Biased at realistic noise.
2. **Maximum likelihood**: Levenberg-Marquardt on min sum |q_data - B theta*|^2 over the
   log-weights (w = softmax(eta): positive, moved by factors) and every trial's start and
   goal (nuisance parameters: 2 nv positions, or 2 (R+1) nv derivatives with "data"),
   re-optimizing the motions (warm started) at every candidate, from the better (lower
   residual) of the linearized estimate and equal weights, the log-weight steps within a
   trust radius (LOG_WEIGHT_RADIUS). The likelihood has local minima: where a single
   cost fits better than a result that is not identifiable, the maximum likelihood is run
   again from it and the better likelihood kept (``_better_from_a_vertex``).
3. **Uncertainty**: the Fisher information J^T J / sigma^2 of that model at the estimate,
   with the nuisance parameters profiled out (Schur complement) and the weights restricted
   to the simplex's tangent space: per-weight standard deviations and 95 % intervals (the
   Cramer-Rao bound of the linearized model). sigma is the given noise or the residual
   estimate. Where a deviation exceeds 25 % of its weight the model is far from linear over
   the interval, and the deviations reported are the largest of the Fisher bounds over the
   95 % region and equal weights (conservative). A weight whose interval reaches 0 is
   undetermined.

Several trials sharing the weights are **pooled**: one weight vector, their information
added, each trial keeping its own start and goal.
"""
from dataclasses import dataclass, field
from numbers import Real

import numpy as np
from scipy import sparse

from ioc._blas import single_threaded_blas
from ioc.spline.banded import band_columns
from cmtm.api import as_float_array, check_model
from ioc.files.data import MotionData, check_fit_size, fit_spline
from ioc.inverse.inverse_kkt import _solve_scaled
from ioc.optimize.direct import (SolverOptions, _Limits, _StepMatrix, _stationarity,
                                 check_callback, equality_solve, kkt_residual, solve)
from ioc.optimize.problem import MotionProblem, check_boundary_mode
from ioc.spline.bspline import DD, ClampedBSpline, check_int, clamped_knots, dd_add

Z95 = 1.959963984540054
"""Two-sided 95 % quantile of the standard normal distribution."""
LINEARIZATION_LIMIT = 0.25
"""Above this relative standard deviation the output-error model is far from linear over
the 95 % region (the ML estimate then moves by a sizeable fraction of the weight), and the
reported deviations are the largest over that region."""


@dataclass
class Trial:
    """One measured motion on its problem: times (N_d,) from 0, q (N_d, nv), B (N_d, n_c)
    sparse design matrix at the data times, the smoothing fit, and the current motion
    theta (DD) with its start and goal."""
    name: str
    times: np.ndarray
    q: np.ndarray
    B: object
    fit: object
    problem: MotionProblem
    theta: object = None


@single_threaded_blas
def prepare_trial(model, costs, data, *, degree=5, control_points=50, rest_order=1,
                  integration="samples", samples=200, limits="model", noise=None,
                  boundary="rest"):
    """A :class:`Trial` from a :class:`ioc.files.data.MotionData`: the time axis starts at 0, a
    smoothing quintic (P-spline, ioc.files.data.fit_spline) on the problem's knot grid gives the
    starting motion, its ends the start and goal: with ``boundary="rest"`` a fit at rest
    (q^(1..R) = 0) and its end positions, with ``"data"`` a free fit and its end stacks
    (q, ..., q^(R)), so the first and last R+1 control points are the fit's."""
    times, q = _data_samples(model, data)
    check_fit_size(control_points, degree)
    check_boundary_mode(boundary)
    knots = clamped_knots(degree, control_points, float(times[-1]))
    rest = boundary == "rest"
    fit = fit_spline(knots, degree, times, q, noise=noise, rest_order=rest_order if rest else 0)
    theta = fit.control_points
    start, goal = (theta[0], theta[-1]) if rest else \
        ClampedBSpline(degree, control_points, float(times[-1])).boundary_derivatives(
            theta, check_int("rest_order", rest_order, 0))
    problem = MotionProblem(model, costs, duration=float(times[-1]), samples=samples,
                            degree=degree, control_points=control_points, start=start,
                            goal=goal, rest_order=rest_order, integration=integration,
                            limits=limits, boundary=boundary)
    _check_within_limits(problem, DD.of(theta), data.source)
    return Trial(name=str(data.source), times=times, q=q,
                 B=problem.spline.design_matrix(times), fit=fit, problem=problem,
                 theta=DD.of(theta))


def _data_samples(model, data):
    """(times (N,) from 0, q (N, nv)) of a MotionData for ``model``; ValueError unless the
    times are N >= 2 strictly increasing finite values and q has one column per joint."""
    check_model(model)
    if not isinstance(data, MotionData):
        raise ValueError(f"data: expected an ioc.data.MotionData (ioc.read_motion), got "
                         f"{type(data).__name__}")
    times = as_float_array("data.times", data.times)
    q = as_float_array("data.q", data.q)
    if times.ndim != 1 or times.size < 2 or q.shape != (times.size, model.nv):
        raise ValueError(f"data: expected times (N,) with N >= 2 and q (N, {model.nv}), one "
                         f"column per joint of the model, got {times.shape} and {q.shape}")
    if np.any(np.diff(times) <= 0):
        raise ValueError(f"data.times: expected strictly increasing times, got "
                         f"{np.array2string(times, threshold=8)}")
    return times - times[0], q


def _check_within_limits(problem, theta, source):
    q = problem.limit_positions(theta)
    over = (q > problem.upper + 1e-9) | (q < problem.lower - 1e-9)
    if np.any(over):
        node, joint = np.argwhere(over)[0]
        raise ValueError(f"{source}: the motion violates the joint limits: "
                         f"{problem.model.joint_names[joint]} = {q[node, joint]:.6g} at "
                         f"t = {problem.limit_times[node]:.4g} s, outside "
                         f"[{problem.lower[joint]:g}, {problem.upper[joint]:g}]")


# --- sensitivities of the optimal motion (implicit function theorem) ---

@dataclass
class Sensitivity:
    """d(B theta*) with respect to the weights (N_d nv, m) and to start and goal
    (N_d nv, n_u = start.size + goal.size), at one motion; dtheta_w (n_c nv, m) and
    dtheta_u (n_c nv, n_u) the same for the control points theta* (flattened i * nv + j)."""
    weights: np.ndarray
    boundary: np.ndarray
    dtheta_w: np.ndarray
    dtheta_u: np.ndarray

    def predicted(self, problem, theta, dw, du):
        """theta + dtheta_w dw + dtheta_u du (DD): the optimal motion for weights moved by
        dw and start and goal by du to first order (the first Newton step from theta, with
        its Hessian), for ``problem`` (whose start and goal are the moved ones); theta itself
        where that motion leaves the joint limits (the active-set steps need a feasible
        start)."""
        step = self.dtheta_w @ dw + self.dtheta_u @ du
        moved = dd_add(theta, step.reshape(theta.hi.shape))
        return theta if np.any(_Limits(problem, moved).b < 0) else moved


def sensitivity(trial, theta, w, evaluation=None):
    """Sensitivities of the data-space motion B theta*(w, start, goal) at ``theta``
    (``evaluation``: a Newton evaluation at theta to reuse, e.g. DirectResult.evaluation).

    Where the optimum presses on joint limits (active, multiplier > 0), small changes keep
    it there (strict complementarity): the free control points move by the solution of
    H_ff dtheta_f + A_f^T dmu = -(C^T dw + H_fF dtheta_F), A_f dtheta_f = -A_F dtheta_F
    (A the held limits' rows over the free and fixed control points), the implicit
    function theorem of the KKT system (:func:`ioc.optimize.direct.equality_solve`)."""
    problem = trial.problem
    nv, n_c = problem.model.nv, problem.spline.n_control
    ev = problem.evaluate(theta, w, hessian="newton") if evaluation is None \
        else evaluation.exact()
    free = problem.free_slice
    start_rows, goal_rows = problem.fixed_rows
    fixed_idx = (np.concatenate([start_rows, goal_rows])[:, None] * nv + np.arange(nv)).ravel()
    held = _held_limit_rows(problem, theta, ev)
    chol = _sensitivity_factor(problem, ev, sparse.csr_matrix(held[:, free]))
    C = ev.grads.reshape(len(problem.terms), -1)[:, free]
    selector = problem.boundary_jacobian()               # d theta_fixed / d(start, goal)
    coupling = band_columns(ev.band, fixed_idx)[free]
    dtheta_w = np.zeros((n_c * nv, C.shape[0]))
    dtheta_u = np.zeros((n_c * nv, selector.shape[1]))
    dtheta_u[fixed_idx] = selector
    if len(held):
        dtheta_w[free] = equality_solve(chol, -C.T, held[:, free])[0]
        dtheta_u[free] = equality_solve(chol, -(coupling @ selector), held[:, free],
                                        -held[:, fixed_idx] @ selector)[0]
    else:
        dtheta_w[free] = -chol.solve(C.T)
        dtheta_u[free] = -chol.solve(coupling @ selector)
    return Sensitivity(_in_data_space(trial, dtheta_w), _in_data_space(trial, dtheta_u),
                       dtheta_w, dtheta_u)


def _held_limit_rows(problem, theta, ev):
    """Dense rows (k, n_c nv) sign_k d q_j(t_c) / d theta over all control points of the
    limits active at ``theta`` with a positive multiplier (those the optimum presses on)."""
    limits = _Limits(problem, theta)
    active = limits.active(SolverOptions().active_tolerance)
    if len(active):
        _, mu = kkt_residual(ev.gradient.ravel()[problem.free_slice], limits, active)
        active = active[mu > 0]
    return problem.signed_limit_rows()[active].toarray()


def _sensitivity_factor(problem, ev, held):
    """Cholesky factor of the Newton Hessian on the free control points, with curvature
    along the ``held`` limit rows where it is indefinite (the solver's step matrix,
    ioc.optimize.direct._StepMatrix), shifted where that is not enough."""
    return _StepMatrix(problem, SolverOptions()).newton(ev.band, held)[0]


def _in_data_space(trial, dtheta):
    """B applied joint by joint: (n_c nv, P) -> (N_d nv, P)."""
    n_c = trial.B.shape[1]
    nv = trial.problem.model.nv
    P = dtheta.shape[1]
    out = trial.B @ dtheta.reshape(n_c, nv * P)
    return out.reshape(-1, P)


def residual(trial, theta):
    """q_data - B theta (N_d nv,)."""
    return (trial.q - trial.B @ theta.value()).ravel()


# --- 1. linearized data-space estimate ---

@single_threaded_blas
def linearized_estimate(trials, iterations=4):
    """min over the simplex of sum_t |P_t B_t H_t(w)^-1 C_t^T w| at the fitted motions, with
    H_t fixed at the previous w (fixed-point iterations); returns w (m,).

    P_t projects out the data-space moves of the trial's start and goal (the columns of
    its boundary sensitivity), which the maximum-likelihood fit adjusts with the weights:
    the nuisance parameters profiled out of the linearized model as the Fisher information
    profiles them. Without it, on trials with moving ends (``boundary="data"``, 2 (R+1) nv
    boundary values) the start fell into another basin of the likelihood (measured on the
    synthetic trials of tests/test_boundary_data.py at 0.01 deg, seeds 0-2: the estimate
    stopped at 30 iterations with L1 0.30-0.34 and one interval of five covering, against
    L1 0.023-0.041 in 3-4 iterations, all covering, with it)."""
    m = len(trials[0].problem.terms)
    w = np.full(m, 1.0 / m)
    for _ in range(iterations):
        M = np.vstack([_without_boundary_moves(sensitivity(t, t.theta, w)) for t in trials])
        w = simplex_least_squares(M)
    return w


def _without_boundary_moves(sens):
    """The weight sensitivity with its part in the span of the boundary sensitivity removed
    (orthogonal projection)."""
    Q, _ = np.linalg.qr(sens.boundary)
    return sens.weights - Q @ (Q.T @ sens.weights)


def simplex_least_squares(M):
    """argmin |M w| s.t. w >= 0, sum(w) = 1, on column-scaled M (ioc.inverse.inverse_kkt)."""
    scale = np.linalg.norm(M, axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    v, _, _ = _solve_scaled((M / scale).T, np.zeros((0, M.shape[0])), 1.0 / scale)
    w = v / scale
    return w / w.sum()


# --- 2. maximum likelihood ---

@dataclass
class Estimate:
    """Weights from data. weights, std, ci95 (m, 2) per term; covariance (m, m); sigma the
    noise level used; rss; thetas the optimal motions for the weights (one per trial);
    starts / goals; history of (iteration, rss, damping); linearized the starting point."""
    names: tuple
    weights: np.ndarray
    std: np.ndarray
    ci95: np.ndarray
    covariance: np.ndarray
    sigma: float
    sigma_method: str
    rss: float
    n_observations: int
    thetas: list
    linearized: np.ndarray
    iterations: int
    status: str
    undetermined: list = field(default_factory=list)
    history: list = field(default_factory=list)
    stationarity: float = 0.0

    @property
    def identifiable(self):
        return not self.undetermined

    def data_rms(self, trials):
        """RMS of (optimal motion - data) per trial."""
        return [float(np.sqrt(np.mean(residual(t, th) ** 2))) for t, th in zip(trials, self.thetas)]


LOG_WEIGHT_RADIUS = 10.0
"""Trust radius of a Levenberg-Marquardt step in the log-weights (|d eta| <= it: no weight
changes by more than a factor e^10 ~ 2e4 per step), quartered at each rejected trial. The
damping alone does not bound these steps: the columns of the log-weight Jacobian scale
with the weights, so a weight near 0 has a near-zero column and its step is not damped;
steps of 300 in eta drove the weights to 1e-300 at once, and then re-optimizations at
the same saturated weights were rejected one after another (measured on DeepMimic's
walk, right arm, five costs, with the vertex check of estimate_weights: 129 solves in
96 s without the radius, 73 in 19 s with it; radii 5 and 20: 75 and 77 solves, RMS to
the data 3.091, 3.090, 3.090 deg)."""
WARM = SolverOptions(start_mode="newton")
"""Re-optimizations from a nearby motion start in the Newton polish."""


def _optimal(trial, w, start, goal, theta0, options):
    problem = trial.problem.with_boundary(start, goal)
    result = solve(problem, w, theta0=theta0, options=options)
    return problem, result


@single_threaded_blas
def maximum_likelihood(trials, starts, *, noise=None, max_iterations=30,
                       options=WARM, progress=None, uncertainty=True):
    """Levenberg-Marquardt on the output error over the log-weights (w = softmax(eta), so
    weights stay positive and move by factors) and each trial's start and goal, from the
    best of the candidate weight vectors ``starts``; returns an :class:`Estimate` with its
    Fisher uncertainty."""
    bounds = [(t.problem.start.copy(), t.problem.goal.copy()) for t in trials]
    return _maximize(trials, _best_start(trials, starts, bounds, options), bounds, starts[0],
                     noise, max_iterations, options, progress, uncertainty)


def _maximize(trials, start, bounds, linearized, noise, max_iterations, options, progress,
              uncertainty):
    """The iterations of :func:`maximum_likelihood` from ``start`` = (rss, w, per trial
    (problem, DirectResult)) of :func:`_best_start` at the trials' ``bounds`` (start and
    goal); ``linearized``: the Estimate's linearized weights."""
    rss, w, states = start
    thetas = [r.theta for _, r in states]
    Z = _simplex_basis(len(w))
    damping, history, status = 1e-9, [], "max_iterations"
    iteration = 0
    for iteration in range(1, max_iterations + 1):
        for t, (problem, _) in zip(trials, states):
            t.problem = problem
        J_w, J_u, r, sensitivities = _jacobians(trials, [res for _, res in states], w)
        J_eta = J_w @ (np.diag(w) - np.outer(w, w)) @ Z
        accepted, radius = False, LOG_WEIGHT_RADIUS
        while damping < 1e10:
            d_eta, d_u = _lm_step(J_eta, J_u, r, damping, radius)
            w_new = _softmax(_log_weights(w) + Z @ d_eta)
            new_bounds = [_moved(s, g, du) for (s, g), du in zip(bounds, d_u)]
            try:
                starts_k = _predicted(trials, sensitivities, thetas, w_new - w, new_bounds,
                                      d_u)
                new_states = _optimal_all(trials, w_new, new_bounds, starts_k, options)
                new_rss = _rss(trials, [r.theta for _, r in new_states])
            except ValueError:
                new_rss = np.inf
            if new_rss < rss:
                accepted = True
                break
            damping *= 10.0
            radius = 0.25 * min(radius, float(np.linalg.norm(d_eta)))
        if not accepted:
            status = "converged"
            break
        decrease = (rss - new_rss) / rss
        w, bounds, states, rss = w_new, new_bounds, new_states, new_rss
        thetas = [r.theta for _, r in states]
        damping = max(damping / 3.0, 1e-9)
        history.append({"iteration": iteration, "rss": rss, "damping": damping,
                        "weights": w.tolist()})
        if progress is not None:
            progress(history[-1])
        if decrease < 1e-9:
            status = "converged"
            break
    for t, (problem, _) in zip(trials, states):
        t.problem = problem
    return _with_uncertainty(trials, w, [r for _, r in states], rss, noise, iteration,
                             status, history, linearized,
                             max(r.stationarity_rel for _, r in states), uncertainty)


START_FLOOR = 1e-6
"""The smallest weight of a start of :func:`maximum_likelihood` (before normalising): the
log-weight steps move it by factors, so a cost at a vertex's floor can come back."""


def _best_start(trials, starts, bounds, options):
    """(rss, w, per trial (problem, DirectResult)) of the start of ``starts`` (weight
    vectors, floored at START_FLOOR and normalised) whose optimal motions, from the trials'
    fitted motions, fit the data best."""
    candidates = []
    for w in starts:
        w = np.maximum(np.asarray(w, dtype=float), START_FLOOR)
        w /= w.sum()
        states = _optimal_all(trials, w, bounds, [t.theta for t in trials], options)
        candidates.append((_rss(trials, [r.theta for _, r in states]), w, states))
    return min(candidates, key=lambda c: c[0])


def _moved(start, goal, du):
    """start and goal (any shapes) moved by the flat step du = (d start, d goal)."""
    return (start + du[:start.size].reshape(start.shape),
            goal + du[start.size:].reshape(goal.shape))


def _optimal_all(trials, w, bounds, thetas, options):
    return [_optimal(t, w, s, g, th, options) for t, (s, g), th in zip(trials, bounds, thetas)]


def _predicted(trials, sensitivities, thetas, dw, bounds, d_u):
    """Per trial the start of its re-optimization: its optimal motion moved to first order
    (:meth:`Sensitivity.predicted`) for the weights moved by dw and its start and goal to
    ``bounds`` (by d_u). Measured on bench_noise_curve's problem, 5 seeds, against
    starting at the optimal motion itself: at 0.1 deg 958 solver iterations against 1174,
    0.74 against 0.85 s per trial; at 0.001 deg 104 against 109; the same weights."""
    return [sens.predicted(t.problem.with_boundary(*bound), th, dw, du)
            for t, sens, th, bound, du in zip(trials, sensitivities, thetas, bounds, d_u)]


def _log_weights(w):
    """log w, with weights that underflowed to 0 at log(1e-300) (softmax maps it back to 0)."""
    return np.log(np.maximum(w, 1e-300))


def _softmax(eta):
    e = np.exp(eta - np.max(eta))
    return e / e.sum()


def _rss(trials, thetas):
    return float(sum(np.sum(residual(t, th) ** 2) for t, th in zip(trials, thetas)))


def _simplex_basis(m):
    """Orthonormal basis (m, m-1) of the tangent space {dw : sum(dw) = 0}."""
    Q, _ = np.linalg.qr(np.eye(m) - 1.0 / m, mode="reduced")
    return Q[:, :m - 1] if m > 1 else np.zeros((1, 0))


def _jacobians(trials, motions, w):
    """d(B theta*)/dw of all trials (sum N nv, m); per trial d/d(start, goal) (N nv, n_u),
    the residual and the :class:`Sensitivity`. ``motions``: per trial a DD theta or a
    DirectResult (whose evaluation is reused)."""
    J_u, r, sensitivities = [], [], []
    for t, motion in zip(trials, motions):
        theta = getattr(motion, "theta", motion)
        sensitivities.append(sensitivity(t, theta, w, getattr(motion, "evaluation", None)))
        J_u.append(sensitivities[-1].boundary)
        r.append(residual(t, theta))
    return np.vstack([s.weights for s in sensitivities]), J_u, r, sensitivities


def _lm_step(Jw, J_u, r, damping, radius=np.inf):
    """Levenberg-Marquardt step on the block-arrow normal equations: shared weight
    coordinates, per-trial boundary parameters, solved by eliminating the latter; the
    weight step scaled to length ``radius`` where longer (and the boundary step for it)."""
    n_w = Jw.shape[1]
    A = Jw.T @ Jw
    b = Jw.T @ np.concatenate(r)
    rows = np.cumsum([0] + [len(x) for x in r])
    eliminated = []
    for k, (Ju, rk) in enumerate(zip(J_u, r)):
        Jwk = Jw[rows[k]:rows[k + 1]]
        Uu = Ju.T @ Ju
        Uu = Uu + damping * np.diag(np.diag(Uu) + 1e-300)
        Wu = Jwk.T @ Ju
        Uinv_Wt = np.linalg.solve(Uu, Wu.T)
        Uinv_b = np.linalg.solve(Uu, Ju.T @ rk)
        A -= Wu @ Uinv_Wt
        b -= Wu @ Uinv_b
        eliminated.append((Uinv_Wt, Uinv_b))
    A = A + damping * np.diag(np.diag(Jw.T @ Jw) + 1e-300)
    dw = np.linalg.lstsq(A, b, rcond=None)[0] if n_w else np.zeros(0)
    if np.linalg.norm(dw) > radius:
        dw = dw * (radius / np.linalg.norm(dw))
    du = [Ub - UW @ dw for UW, Ub in eliminated]
    return dw, du


# --- 3. uncertainty ---

@single_threaded_blas
def fisher_covariance(trials, thetas, w, sigma):
    """Covariance (m, m) of the weights from the Fisher information of the output-error
    model, nuisance start/goal profiled out, restricted to the simplex (Cramer-Rao bound
    of the linearized model). ``thetas``: per trial the optimal motion for w, a DD or a
    DirectResult (whose last evaluation is reused)."""
    return _fisher(trials, thetas, w, sigma)[0]


def _fisher(trials, motions, w, sigma):
    """(:func:`fisher_covariance`, the trials' sensitivities)."""
    m = len(w)
    Z = _simplex_basis(m)
    J_w, J_u, _, sensitivities = _jacobians(trials, motions, w)
    Jw = J_w @ Z
    rows = np.cumsum([0] + [len(Ju) for Ju in J_u])
    info = Jw.T @ Jw
    for k, Ju in enumerate(J_u):
        Jwk = Jw[rows[k]:rows[k + 1]]
        W = Jwk.T @ Ju
        info -= W @ np.linalg.pinv(Ju.T @ Ju) @ W.T
    info /= sigma ** 2
    cov_z = np.linalg.pinv(info, rcond=1e-14, hermitian=True)
    return Z @ cov_z @ Z.T, sensitivities


def _with_uncertainty(trials, w, motions, rss, noise, iterations, status, history, w0,
                      stationarity, uncertainty=True):
    """The :class:`Estimate` at the weights w; ``motions``: per trial the optimal motion for
    w, a DirectResult (or a DD)."""
    thetas = [getattr(motion, "theta", motion) for motion in motions]
    n_obs = sum(t.q.size for t in trials)
    n_params = len(w) - 1 + sum(t.problem.start.size + t.problem.goal.size for t in trials)
    if noise is not None:
        sigma, method = float(noise), "given"
    else:
        sigma, method = float(np.sqrt(rss / max(n_obs - n_params, 1))), "residual"
    cov, sensitivities = _fisher(trials, motions, w, sigma) if uncertainty \
        else (np.zeros((len(w), len(w))), None)
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    if uncertainty and np.any(std > LINEARIZATION_LIMIT * np.maximum(w, 1e-300)):
        # the weights share the simplex: one weakly determined weight makes the others'
        # local bounds unreliable too (measured: 0.34-0.52 of the truth's for the largest)
        std = np.maximum(std, _region_std(trials, thetas, w, cov, sigma, sensitivities))
    ci = np.stack([np.maximum(w - Z95 * std, 0.0), np.minimum(w + Z95 * std, 1.0)], axis=1)
    names = tuple(t.name for t in trials[0].problem.terms)
    undetermined = [n for n, wi, si in zip(names, w, std) if Z95 * si >= wi]
    return Estimate(names=names, weights=w, std=std, ci95=ci, covariance=cov, sigma=sigma,
                    sigma_method=method, rss=rss, n_observations=n_obs, thetas=thetas,
                    linearized=np.asarray(w0), iterations=iterations, status=status,
                    undetermined=undetermined, history=history, stationarity=stationarity)


def _region_std(trials, thetas, w, cov, sigma, sensitivities,
                options=SolverOptions(tolerance=1e-8, acceptable=1e-6, max_iterations=100,
                                      start_mode="newton")):
    """Largest Fisher standard deviations over the ends of the 95 % ellipsoid's principal
    axes, w +- 1.96 sqrt(lambda_k) v_k, in weights and in log-weights, and of the moves of
    one weight by +- 1.96 std_i with the others rescaled (all kept inside the simplex):
    where the information varies
    across the region, the bound at the estimate alone can be optimistic about the
    truth's. Each re-optimization starts from the estimate's motions moved to first order
    (``sensitivities``, at the estimate)."""
    out = np.zeros(len(w))
    bounds = [(t.problem.start, t.problem.goal) for t in trials]
    no_move = [np.zeros(t.problem.start.size + t.problem.goal.size) for t in trials]
    for wk in _region_points(w, cov):
        starts = _predicted(trials, sensitivities, thetas, wk - w, bounds, no_move)
        moved = [_optimal(t, wk, t.problem.start, t.problem.goal, th, options)[1]
                 for t, th in zip(trials, starts)]
        cov_k = fisher_covariance(trials, moved, wk, sigma)
        out = np.maximum(out, np.sqrt(np.maximum(np.diag(cov_k), 0.0)))
    return out


def _region_points(w, cov):
    """The weights where :func:`_region_std` evaluates the Fisher bounds (its docstring),
    and equal weights. A variance that rounding left negative (the pseudo-inverse of a
    numerically indefinite information matrix; measured on DeepMimic's jump) counts as 0:
    its moves stay at w."""
    values, vectors = np.linalg.eigh(cov)
    points = [_inside_simplex(w, sign * Z95 * np.sqrt(v) * u)
              for v, u in zip(values, vectors.T) if v > 0 for sign in (-1.0, 1.0)]
    points += [_inside_simplex(w, sign * Z95 * np.sqrt(max(cov[i, i], 0.0))
                               * _coordinate_move(w, i))
               for i in range(len(w)) for sign in (-1.0, 1.0)]
    # the same ellipsoid in log-weights, cov(eta) = D^-1 cov(w) D^-1 (D = diag w):
    # its ends move small weights by factors, the way the estimator moves them
    log_cov = cov / np.outer(np.maximum(w, 1e-12), np.maximum(w, 1e-12))
    values, vectors = np.linalg.eigh(log_cov)
    points += [_softmax(_log_weights(w) + sign * Z95 * np.sqrt(v) * u)
               for v, u in zip(values, vectors.T) if v > 0 for sign in (-1.0, 1.0)]
    return points + [np.full(len(w), 1.0 / len(w))]


def _coordinate_move(w, i):
    """Unit change of w_i with the other weights scaled to keep the sum."""
    d = -w / max(1.0 - w[i], 1e-300)
    d[i] = 1.0
    return d


def _inside_simplex(w, dw):
    """w + t dw with the largest t <= 1 keeping every weight >= 1e-3 of its value."""
    negative = dw < 0
    t = 1.0 if not np.any(negative) else \
        float(min(1.0, np.min(0.999 * w[negative] / -dw[negative])))
    out = w + t * dw
    return out / out.sum()


@single_threaded_blas
def estimate_weights(trials, *, noise=None, max_iterations=30, progress=None,
                     uncertainty=True):
    """The data estimator: maximum likelihood (pooled over ``trials``, which share the
    weights) from the better of the linearized estimate and equal weights, and, where that
    estimate is not identifiable, also from the best single cost where that fits better
    (:func:`_better_from_a_vertex`); without ``uncertainty`` the (costly) Fisher
    deviations (std and ci95 NaN-free zeros) and so the vertices are skipped."""
    _check_trials(trials)
    if noise is not None and (isinstance(noise, bool) or not isinstance(noise, Real)
                              or not np.isfinite(noise) or noise <= 0):
        raise ValueError(f"noise: expected None or a finite number > 0 (rad), got {noise!r}")
    check_int("max_iterations", max_iterations, 0)
    check_callback("progress", progress)
    m = len(trials[0].problem.terms)
    starts = [linearized_estimate(trials), np.full(m, 1.0 / m)]
    first = maximum_likelihood(trials, starts, noise=noise, max_iterations=max_iterations,
                               progress=progress, uncertainty=uncertainty)
    if not uncertainty or first.identifiable:
        return first
    fit = _better_from_a_vertex(trials, first, noise, max_iterations, progress)
    if fit is first:
        return first
    return _with_uncertainty(trials, fit.weights, fit.thetas, fit.rss, noise, fit.iterations,
                             fit.status, fit.history, first.linearized, fit.stationarity)


def _better_from_a_vertex(trials, fit, noise, max_iterations, progress):
    """The likelihood has local minima (measured on DeepMimic's jump: the five-cost
    estimate ended at joint torque rate alone, 17.9 deg RMS, where joint jerk alone fits
    9.7 deg), and a weight that the log-weight steps drove to 1e-100 cannot come back. So
    the single-cost vertices (the other weights at START_FLOOR, the trials' start and goal
    at the fit's) are evaluated; where the best of them fits better than ``fit``, the
    maximum likelihood from it is run and the better of the two likelihoods kept (the
    trials' problems restored to the kept one's). estimate_weights does so only for an
    estimate that is not identifiable (an interval reaching 0: a flat likelihood, as on
    every real clip): the vertices' solves are the costly ones of an arm (one cost alone
    leaves its motion ill-determined: the hand's jerk, the swivel; torque, the hanging
    arm), and on bench_human_estimator's synthetic 7-joint arm they took 65 s against
    1.5 s for the estimate itself."""
    m = len(fit.weights)
    if m == 1:
        return fit
    bounds = [(t.problem.start.copy(), t.problem.goal.copy()) for t in trials]
    vertex = _best_start(trials, list(np.eye(m)), bounds, WARM)
    if vertex[0] >= fit.rss:
        return fit
    problems = [t.problem for t in trials]
    other = _maximize(trials, vertex, bounds, vertex[1], noise, max_iterations, WARM, progress,
                      uncertainty=False)
    if other.rss < fit.rss:
        return other
    for t, problem in zip(trials, problems):
        t.problem = problem
    return fit


def _check_trials(trials):
    """ValueError unless ``trials`` is a non-empty sequence of Trial sharing their costs."""
    if isinstance(trials, Trial) or not isinstance(trials, (list, tuple)) or not trials \
            or not all(isinstance(t, Trial) for t in trials):
        raise ValueError(f"trials: expected a non-empty list of ioc.estimate.Trial "
                         f"(prepare_trial), got {trials!r}")
    costs = [tuple(term.name for term in t.problem.terms) for t in trials]
    if len(set(costs)) > 1:
        raise ValueError(f"trials: expected pooled trials with the same costs, got "
                         f"{' and '.join(map(str, sorted(set(costs))))}")


def kkt_stationarity(problem, theta, w):
    """(absolute, relative) KKT residual of the motion ``theta`` for the weights ``w``
    (ioc.optimize.direct's measure): how far the motion is from optimal for them."""
    ev = problem.evaluate(theta, w)
    stat, _, _ = _stationarity(problem, ev, w, _Limits(problem, theta), SolverOptions())
    return stat[:2]


@single_threaded_blas
def bootstrap_weights(trials, estimate, n_samples, seed=0, noise=None):
    """Parametric bootstrap of the whole estimator: ``n_samples`` data sets simulated
    from the estimated motions plus Gaussian noise of the estimate's sigma, each refitted
    and re-estimated. Returns (std (m,), ci95 (m, 2) percentile interval, weights (B, m))."""
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_samples):
        simulated = []
        for t, theta in zip(trials, estimate.thetas):
            q = t.B @ theta.value() + estimate.sigma * rng.normal(size=t.q.shape)
            data = MotionData(t.times, q, t.problem.model.joint_names, t.name, ())
            simulated.append(_refit(t, data, noise))
        draws.append(estimate_weights(simulated, noise=noise, uncertainty=False).weights)
    draws = np.array(draws)
    return draws.std(axis=0, ddof=1), np.percentile(draws, [2.5, 97.5], axis=0).T, draws


def _refit(trial, data, noise):
    """A trial of the same problem settings for other data."""
    p = trial.problem
    return prepare_trial(p.model, [t.name for t in p.terms], data, degree=p.spline.degree,
                         control_points=p.spline.n_control, rest_order=p.rest_order,
                         integration=p.quadrature.rule, samples=p.samples,
                         limits=(p.lower, p.upper), noise=noise, boundary=p.boundary)
