"""The direct problem: min_x sum_i w_i c_i(theta(x)) subject to the joint limits
(cmtm_math.md §10), by Newton's method on the exact Hessian.

Method
------
* **Newton from the start**: the Hessian is banded (local support: a quadrature node
  involves p+1 control points of every joint), its Gauss-Newton part sum_m omega_m Jy^T Jy
  from the engine's structured Jacobians, its second-order part from differences of the
  link and torque terms' Jacobians (``MotionProblem.evaluate(hessian="newton")``,
  ``MotionProblem._curvature``), so each step is a banded Cholesky solve
  (``ioc.spline.banded``). Gauss-Newton converges only linearly when the torque residuals are
  large at the optimum (gravity torques): the paper's case (c) took 53 iterations with
  a Newton polish at the end, 22 with Newton throughout. Where the Hessian is not
  positive definite (far from the optimum) it is shifted until it is (``_StepMatrix``);
  a backtracking line search (Armijo's rule) keeps the cost falling, and near the optimum,
  where the cost changes below its own rounding, steps are accepted on the stationarity.
  A step that converged fast is followed by one that keeps the second-order part
  (``CURVATURE_REUSE``). Joint terms alone make the cost quadratic: its constant Hessian
  is factored once, the first step comes from the gradient H theta in float64 (no
  evaluation of the start, :func:`_quadratic_start`) and full steps refine the motion (the
  double-double evaluation of the gradient makes each an iterative refinement): two
  evaluations in all on the paper's case (a).
* **Damped Gauss-Newton** (``start_mode="gauss_newton"``, the paper's: lambda = 1e-8,
  backtracking, full steps doubled while the cost falls) until the stationarity falls
  below ``newton_switch`` or progress slows, then Newton.
* **Double-double control points** (``ioc.spline.bspline.DD``): in float64 the control points
  themselves cap the relative stationarity near 1e-8 (the jerk and torque-rate Hessians
  reach ~1e11, ioc_calibration.md). Iterates are kept as hi + lo pairs and the trajectory is
  evaluated from them without cancellation, so each step solves for a small correction.
* **Joint limits** by a primal active-set method on every step's quadratic model (the
  constraints are linear in the control points, so feasibility is exact); the multipliers
  of the active limits are reported.

Stationarity is the KKT residual |g + A_act^T mu| (mu >= 0 by NNLS over the active limits),
absolute and relative to the largest weighted term gradient max_i |w_i grad c_i|; where every
term gradient vanishes on its own (a single term) the scale is instead the gross gradient
|sum_i w_i sum_m |B_m|^T |gs_im||, the size of the sum whose cancellation is measured. A
solve has converged when the relative stationarity reaches ``tolerance``, or the rounding
floor of that sum (eps |gross| / scale) below ``acceptable``.
"""
import math
import time
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from scipy.linalg import LinAlgError
from scipy.optimize import nnls

from ioc._blas import single_threaded_blas
from ioc.optimize.problem import check_problem, check_theta
from ioc.spline.banded import BandedCholesky, add_row_grams, band_matvec
from ioc.spline.bspline import DD

STATUSES = ("converged", "stalled", "max_iterations", "line_search_failed")
ROUNDING = np.finfo(np.float64).eps
"""Unit roundoff of the gradient's sums: the stationarity cannot fall much below
ROUNDING |gross gradient| / scale, and a solve that reaches it has converged."""
CURVATURE_REUSE = 1e-2
"""A Newton step that lowered the relative stationarity by this factor or more is followed
by one whose Hessian keeps the last second-order part (MotionProblem._curvature) instead
of differencing it again: near the optimum the iterates move little, and the stale part
only sets the rate of convergence. Measured against differencing at every step, from the
minimum-jerk start (iterations, differenced curvatures): case (b) 11, 11 -> 12, 9;
(c) 22, 22 -> 22, 20; the Panda 4, 4 -> 4, 2; the Panda link-space case 16, 16 -> 19, 15.
Reusing it also after steps that the quadratic model predicted within 25 % saved 10-20 %
more curvatures but took the test suite's estimator problem (case (c)'s terms, unequal
weights) to another local minimum (cost 1682.0 instead of 1779.9), so it is not done.
At 727f327 (iterations, curvatures; b 12, 10; c 22, 20; link 10, 7): a factor 2e-2, 5e-2,
1e-1: b 13, 10; 13, 10; 13, 9; c 22, 19; 23, 19; 25, 18; link 10, 7; 10, 7; 16, 6; the
Panda 4, 2; 6, 1; 6, 1; 16 variants of (b), (c) (_StepMatrix) 271, 215; 283, 206;
297, 202 against 258, 220. Reusing it after every shifted step: b 15, 8; c 23, 13;
link 12, 7; at every other step: b 19, 8; c 24, 11; the Panda 6, 1. Reusing it also below the
``acceptable`` stationarity: c 22, 19, but it ended at 2.6e-12 (9 times its rounding
floor) instead of 9.9e-13."""
START_MODES = ("gauss_newton", "newton")


@dataclass(frozen=True)
class SolverOptions:
    """Stopping rules and switches of :func:`solve` (defaults follow the paper where it
    gives one: damping 1e-8, step 1e-12, 500 iterations). ``start_mode="gauss_newton"``
    starts with damped Gauss-Newton steps and switches to Newton at ``newton_switch`` or
    after ``slow_iterations`` slow ones (the paper's method, with a Newton polish)."""
    max_iterations: int = 500
    damping: float = 1e-8
    step_tolerance: float = 1e-12
    tolerance: float = 1e-13
    acceptable: float = 1e-9
    newton_switch: float = 1e-3
    slow_iterations: int = 5
    start_mode: str = "newton"
    active_tolerance: float = 1e-10

    def __post_init__(self):
        """ValueError naming the first option that is not what its type says: counts are
        integers (max_iterations >= 0, slow_iterations >= 1), tolerances finite and >= 0."""
        for name, lowest in (("max_iterations", 0), ("slow_iterations", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Integral) or value < lowest:
                raise ValueError(f"{name}: expected an integer >= {lowest}, got {value!r}")
        for name in ("damping", "step_tolerance", "tolerance", "acceptable", "newton_switch",
                     "active_tolerance"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Real) \
                    or not np.isfinite(value) or value < 0:
                raise ValueError(f"{name}: expected a finite number >= 0, got {value!r}")
        if self.start_mode not in START_MODES:
            raise ValueError(f"start_mode: expected one of {', '.join(START_MODES)}, got "
                             f"{self.start_mode!r}")


@dataclass
class DirectResult:
    """Outcome of :func:`solve`; never NaN: failures are a ``status`` with the best iterate.

    theta : DD (n_c, nv) control points (hi + lo); ``control_points`` rounds them.
    costs : (n_terms,) raw sub-costs c_i; weights (n_terms,); cost = weights @ costs
    stationarity_abs / stationarity_rel : KKT residual, absolute and relative
    multipliers : list of dicts (time, joint, bound, value) of the active joint limits
    history : list of dicts (iteration, mode, cost, step, alpha, stationarity)
    evaluation : the last ``MotionProblem.evaluate`` result at ``theta`` (its band is the
        Newton Hessian when the solve ended in the Newton polish)
    """
    problem: object
    weights: np.ndarray
    theta: object
    status: str
    iterations: int
    solve_seconds: float
    cost: float
    costs: np.ndarray
    stationarity_abs: float
    stationarity_rel: float
    multipliers: list = field(default_factory=list)
    history: list = field(default_factory=list)
    evaluation: object = None

    @property
    def control_points(self):
        return self.theta.value()

    def terms(self):
        """Per term: name, weight, raw and weighted cost."""
        return [{"name": t.name, "weight": float(w), "raw": float(c), "weighted": float(w * c)}
                for t, w, c in zip(self.problem.terms, self.weights, self.costs)]

    def sample(self, times, max_derivative=3):
        """Raw stack q, ..., q^(max_derivative) at ``times``: (len(times), K, nv)."""
        return self.problem.spline.evaluate(self.theta, times, max_derivative)


def check_callback(name, value):
    """Raise ValueError unless ``value`` is None or callable."""
    if not (value is None or callable(value)):
        raise ValueError(f"{name}: expected None or a callable, got {value!r}")


WEIGHT_SUM_RANGE = (1e-300, 1e200)
"""Accepted sums of the weights: the solver divides by the sum (a normal float from
1e-300 on), and the weighted costs reported (weight times raw cost) stay finite for raw
costs up to 1e100."""


def check_weights(weights, n_terms):
    """Weights as a float array: one finite non-negative value per term, not all zero,
    their sum within WEIGHT_SUM_RANGE."""
    try:
        w = np.asarray(weights, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"weights: expected {n_terms} numbers, got {weights!r}") from None
    if w.size != n_terms:
        raise ValueError(f"weights: expected {n_terms} (one per cost), got {w.size}")
    values = w.tolist()            # a few numbers: Python's float operations, not numpy's
    if not all(math.isfinite(v) and v >= 0 for v in values) or not any(v > 0 for v in values):
        raise ValueError(f"weights: expected finite non-negative values, not all zero, "
                         f"got {values}")
    largest = max(values)
    total = largest * sum(v / largest for v in values)     # Python floats: inf, no warning
    low, high = WEIGHT_SUM_RANGE
    if not low <= total <= high:
        raise ValueError(f"weights: expected a sum within [{low:g}, {high:g}], got {total:g} "
                         f"(a common factor does not change the optimum: scale them)")
    return w


class _Limits:
    """The linear limit constraints a_k^T dx <= b_k of one iterate (upper rows, then lower
    rows with the sign flipped), restricted to finite bounds."""

    def __init__(self, problem, theta):
        self.rows, self.sign, self.A, _ = problem.limit_constraints()
        self.b = problem.limit_slacks(theta)
        self.nv = problem.model.nv
        self.times = problem.limit_times
        self._problem = problem

    def of_step(self, dx):
        """A dx for a step dx (n_free,) (``MotionProblem.signed_limits_of``: the sparse
        product's bits)."""
        return self._problem.signed_limits_of(dx.reshape(-1, self.nv),
                                              self._problem.free_rows[0])

    def active(self, tolerance):
        return (self.b <= tolerance).nonzero()[0]

    def held(self, working, tolerance):
        """The constraints of the working set ``working`` that are active at the iterate:
        those the active-set step starts from (and keeps unless a multiplier turns
        negative)."""
        return [k for k in working if self.b[k] <= tolerance]

    def describe(self, k, value, problem):
        node, joint = divmod(int(self.rows[k]), self.nv)
        return {"time": float(self.times[node]), "joint": problem.model.joint_names[joint],
                "bound": "upper" if self.sign[k] > 0 else "lower", "value": float(value)}


def kkt_residual(gradient, limits, active):
    """min over mu >= 0 of |g + A_act^T mu| (NNLS); returns (residual vector, mu)."""
    if len(active) == 0:
        return gradient, np.zeros(0)
    At = limits.A[active].toarray().T
    mu, _ = nnls(At, -gradient, maxiter=50 * max(1, len(active)))
    return gradient + At @ mu, mu


class _StepMatrix:
    """The matrix of each step's quadratic model on the free variables, and its Cholesky
    factor: the Newton Hessian (mode "newton"), shifted by tau max(diag) where it is not
    positive definite, tau from 1e-10 up by factors of 8 until it is, and from a third of
    the last shift at the next step (the inertia correction of interior-point codes such
    as IPOPT); or the damped Gauss-Newton matrix (mode "gauss_newton"; positive definite:
    the joint terms' weights make it so, and the damping otherwise). Measured from the
    minimum-jerk start, iterations: against falling back to damped Gauss-Newton, case (c)
    22 against 28 (and a different local minimum), (c) with unequal weights 22 against
    22, the Panda link-space case of bench_peers 10 against 14; tau from 1e-10 against
    1e-8 and 1e-12: (c) 22, 22, 21, (c) unequal 22, 31, 25, link-space 10, 18, 11;
    shifts by tau diag(H) instead of tau max(diag) took 27-39 iterations on (c).

    Measured again at 727f327 (s46): H is indefinite at iterations 1-6 of case (b)'s 12 and
    1-10 of (c)'s 22 (23 and 39 Cholesky attempts, 7 at the first iterate), and the shift
    is 1.4-58 times |lambda_min(H)| on (b), 1.35-74 on (c); yet the unshifted quadratic
    model predicts the cost change of every shifted full step to within 0.87-1.03, the
    steps that fail are longer ones (b's 6th, c's 7th and 11th). Shorter shifts are
    chaotic in the iteration count and reach other local minima; iterations (b, c, the
    Panda link-space case, which takes 10) from the minimum-jerk start:
    * decay by 1/2, 1/5, 1/10, 1/30 instead of 1/3: b 14, 13, 12, 10; c 23, 20, 18, 21;
      link 11, 8, 11, 10;
    * the last shift also divided by 2, 3, 5, 8, 10, 15, 30 after a full step: b 10, 11,
      13, 11, 10, 11, 13; c 21, 18, 21, 25, 21, 20, 19; link 11, 11, 13, 10, 10, 9, 9; on
      16 variants of (b) and (c) (weights exp U(-2, 2), start and goal U(-2, 2)) 10 and
      15 took 249 and 260 iterations against 258 and reached a minimum of cost 12653
      instead of 5120 on one;
    * shift beta |lambda_min| (dense eigenvalues), beta 1.05-8: b 9-16, c 16-29, link 7-18;
    * modified Newton (negative eigenvalues flipped or clamped to 1e-9 .. 1e-7 max(diag)):
      b 10-15, c 22-52, link 8-101;
    * a trust region on |d|_2 (the shift chosen for |d| in [R/2, R], R from the ratio
      of actual to predicted change, grown by 2-8): b 10, c 22-26, link 7-9, but
      865-1010 iterations on the 16 variants (two stagnate at the smallest shift with an
      indefinite H: that hard case needs a negative-curvature direction).
    Starting at a third of the last shift, without the unshifted attempt, while that is
    >= 1e-8 keeps the iterations and costs on a, b, c and link and saves 5 and 7
    factorizations of ~20 us on (b) and (c) (under 1 % of the solve), so H is still
    tried first (tests/test_direct.py expects shift 0 for a definite H after shifts)."""

    def __init__(self, problem, options):
        self.problem, self.options = problem, options
        self.shift = 0.0

    def __call__(self, ev, mode, held=None):
        """(Cholesky factor, band) at the evaluation ``ev``; ``held``: the sparse rows A_W
        of the limits that the step starts on (:meth:`_shifted`)."""
        layout, free = self.problem.layout, self.problem.free_slice
        if mode == "newton":
            return self.newton(ev.band, held)
        band = layout.add_diagonal(layout.restrict(ev.gauss_newton_band, free.start,
                                                   free.stop), self.options.damping)
        try:
            return BandedCholesky(band), band
        except LinAlgError:
            return self._shifted(band, 1e-10, held)

    def newton(self, band, held=None):
        """(Cholesky factor, band) of the Newton Hessian ``band`` (over all control points)
        on the free variables."""
        free = self.problem.free_slice
        return self._shifted(self.problem.layout.restrict(band, free.start, free.stop), 1e-10,
                             held)

    def _shifted(self, band, first, held=None):
        """Where H is not positive definite but the limits ``held`` are active, H +
        max(diag H) sum_k a_k a_k^T / |a_k|^2 (a_k the rows of A_W) is tried before any
        shift: the step's equality subproblems keep A_W p = 0, on which the added term
        vanishes, so their steps and multipliers are those of H (the augmented Lagrangian's
        Hessian; a limit the step releases only gains that curvature in the model), and it
        is positive definite when H is on the null space of A_W, as at a minimum on the
        limits (second-order conditions), and the factor is large enough; where it is
        not, the shifts follow. Shifting H instead damps the step in every direction:
        measured on DeepMimic's kick (right arm, joint torque weighted 1 - 1e-42, the elbow
        and the shoulder on three limits; H's smallest eigenvalue -0.094, the reduced
        Hessian's 0.015), shifts of 1e-4 max(diag) left Newton converging linearly, 296
        iterations against 33 (tests/test_direct.py has a planar arm: 133 against 17)."""
        layout = self.problem.layout
        if held is not None and held.shape[0]:
            try:
                return BandedCholesky(band), band
            except LinAlgError:
                band = add_row_grams(band, held, float(np.max(np.abs(band[layout.u]))))
        try:                            # H itself first (tau = 0): no diagonal to shift
            factor = BandedCholesky(band)
            self.shift = 0.0
            return factor, band
        except LinAlgError:
            diagonal = band[layout.u].copy()
        scale = max(float(np.max(np.abs(diagonal))), 1e-300)
        tau = max(self.shift / 3.0, first)
        while True:
            band[layout.u] = diagonal + tau * scale
            try:
                factor = BandedCholesky(band)
                self.shift = tau
                return factor, band
            except LinAlgError:
                tau *= 8.0


def active_set_step(chol, band, g, limits, working, tolerance, max_iterations=200):
    """Primal active-set solution of min g^T d + 1/2 d^T H d s.t. A d <= b, from d = 0
    (feasible) and the constraints of ``working`` that are active at d = 0.
    Returns (d, working set)."""
    d = np.zeros(g.shape)
    W = limits.held(working, tolerance)
    scale = 0.0
    for inner in range(max_iterations):
        gk = g + band_matvec(band, d) if inner else g
        p, mu = _equality_step(chol, gk, limits, W)
        size = float(np.abs(p).max())
        scale = max(scale, size, float(np.abs(d).max()) if inner else 0.0)    # d = 0 first
        if inner and size <= 1e-9 * scale or size == 0.0:
            # d solves the equality problem on W: optimal if no multiplier is negative
            if len(mu) == 0 or mu.min() >= 0:
                return d, W
            W.pop(int(np.argmin(mu)))
            continue
        alpha, blocking = 1.0, None
        if limits.A.shape[0]:
            Ap = limits.of_step(p)
            slack = limits.b - limits.of_step(d) if inner else limits.b     # d = 0 at first
            if not (Ap <= slack).all():                 # else all ratios >= 1: none blocks
                candidates = np.flatnonzero(Ap > 1e-300)
                if W:
                    candidates = candidates[~np.isin(candidates, W)]
                if candidates.size:
                    ratios = np.maximum(slack[candidates], 0.0) / Ap[candidates]
                    i = int(np.argmin(ratios))
                    if ratios[i] < 1.0:
                        alpha, blocking = float(ratios[i]), int(candidates[i])
        d = d + alpha * p
        if blocking is None:
            if not W:
                return d, W
        else:
            W.append(blocking)
    return d, W


def _equality_step(chol, g, limits, W):
    """min 1/2 p^T H p + g^T p s.t. A_W p = 0 (:func:`equality_solve`); (p, mu)."""
    if not W:
        return -chol.solve(g), np.zeros(0)
    return equality_solve(chol, -g, limits.A[W].toarray())


def equality_solve(chol, R, A, c=0.0):
    """x = H^-1 (R - A^T mu) with A x = c, by the Schur complement
    (A H^-1 A^T) mu = A H^-1 R - c: the minimizer of 1/2 x^T H x - R^T x subject to A x = c
    (H positive definite on the null space of A; ``chol`` factors H, or H plus curvature
    along A's rows, which leaves x unchanged, and mu where c = 0), and its multipliers mu.
    R (n,) or (n, r), A dense (k, n) with k >= 1, c like A @ R."""
    HR = chol.solve(R)
    HA = chol.solve(A.T)
    mu = np.linalg.lstsq(A @ HA, A @ HR - c, rcond=None)[0]
    return HR - HA @ mu, mu


def solve(problem, weights, theta0=None, options=SolverOptions(), progress=None):
    """Optimize the motion of ``problem`` for ``weights``; returns a :class:`DirectResult`.

    A common factor of the weights does not change the optimum: the solver works with the
    weights normalised to sum 1 (:func:`_solve_normalised`), so that their scale changes
    neither the damping's share nor the stopping rules, and the result reports the cost,
    the absolute stationarity, the multipliers and the history for the weights as given
    (``evaluation``: for the normalised ones).

    theta0 : DD or (n_c, nv) float64 start (default ``problem.initial_theta()``); its fixed
        rows are replaced by the boundary conditions.
    progress : optional callable(dict) called once per iteration (iteration, mode, cost,
        step, stationarity).
    """
    check_problem(problem)
    w = check_weights(weights, len(problem.terms))
    scale = float(w.sum())
    scaled = None if progress is None else \
        (lambda entry: progress({**entry, "cost": entry["cost"] * scale}))
    check_callback("progress", progress)
    if not isinstance(options, SolverOptions):
        raise ValueError(f"options: expected an ioc.SolverOptions, got {type(options).__name__}")
    result = _solve_normalised(problem, w / scale, theta0, options, scaled)
    result.weights, result.cost = w, result.cost * scale
    result.stationarity_abs *= scale
    for entry in result.history:
        entry["cost"] *= scale
    for multiplier in result.multipliers:
        multiplier["value"] *= scale
    return result


@single_threaded_blas
def _solve_normalised(problem, w, theta0, options, progress):
    """:func:`solve` for checked weights ``w`` (float64) that sum to 1, after its checks."""
    started = time.perf_counter()
    theta = problem.initial_theta() if theta0 is None else _with_boundary(problem, theta0)
    dynamic = bool(problem.nonlinear)
    mode = options.start_mode if dynamic else "newton"
    history, working = [], []
    status = "max_iterations"
    free = problem.free_slice
    factor, step_matrix = None, _StepMatrix(problem, options)
    if not dynamic and problem.constraints == "exact":
        theta, first_step, factor, working = _quadratic_start(problem, theta, w, options,
                                                              step_matrix)
    ev = problem.evaluate(theta, w, hessian=mode)
    limits = _Limits(problem, theta)
    stat, mu, active = _stationarity(problem, ev, w, limits, options)
    if factor is not None:
        history.append({"iteration": 1, "mode": mode, "cost": ev.cost, "step": first_step,
                        "alpha": 1.0, "stationarity": stat[1]})
        if progress is not None:
            progress(history[-1])
    slow = stalls = 0
    for iteration in range(len(history) + 1, options.max_iterations + 1):
        if stat[1] <= options.tolerance or stat[1] <= min(stat[2], options.acceptable):
            status = "converged"
            break
        g = ev.gradient.ravel()[free]
        if dynamic or factor is None:      # joint terms alone: one constant exact Hessian
            held = limits.held(working, options.active_tolerance)
            factor = step_matrix(ev, mode, limits.A[held] if held else None)
        step, working = active_set_step(*factor, g, limits, working,
                                        options.active_tolerance)
        if dynamic:
            accepted = _line_search(problem, theta, w, ev, step, stat, options, limits, mode)
        else:                              # the quadratic model is the cost: a full step
            candidate = problem.with_free_step(theta, step)
            accepted = candidate, 1.0, problem.evaluate(candidate, w, hessian=mode)
        if accepted is None:
            if mode == "gauss_newton":
                mode = "newton"
                ev = problem.evaluate(theta, w, hessian=mode)
                continue
            status = "converged" if stat[1] <= options.acceptable else "stalled"
            break
        previous, (theta, alpha, ev) = ev, accepted
        step_norm = float(np.abs(alpha * step).max())
        limits = _Limits(problem, theta)
        new_stat, mu, active = _stationarity(problem, ev, w, limits, options)
        if dynamic and new_stat[1] <= CURVATURE_REUSE * stat[1]:
            ev.reuse_curvature(previous)
        slow = slow + 1 if new_stat[1] > 0.9 * stat[1] else 0
        stalls = stalls + 1 if new_stat[1] > 0.8 * stat[1] else 0
        stat = new_stat
        entry = {"iteration": iteration, "mode": mode, "cost": ev.cost, "step": step_norm,
                 "alpha": alpha, "stationarity": stat[1]}
        history.append(entry)
        if progress is not None:
            progress(entry)
        if mode == "gauss_newton" and (stat[1] <= options.newton_switch
                                       or slow >= options.slow_iterations):
            mode = "newton"
            ev = problem.evaluate(theta, w, hessian=mode)
        at_floor = stat[1] <= options.acceptable and stalls >= 2
        if step_norm <= options.step_tolerance * max(1.0, float(np.abs(theta.hi).max())) \
                or at_floor:
            status = "converged" if stat[1] <= options.acceptable else "stalled"
            break
    if status == "max_iterations" and (stat[1] <= options.tolerance
                                       or stat[1] <= min(stat[2], options.acceptable)):
        status = "converged"
    multipliers = [limits.describe(k, m, problem) for k, m in zip(active, mu) if m > 0]
    return DirectResult(problem=problem, weights=w, theta=theta, status=status,
                        iterations=len(history), solve_seconds=time.perf_counter() - started,
                        cost=float(ev.cost), costs=ev.costs, stationarity_abs=stat[0],
                        stationarity_rel=stat[1], multipliers=multipliers, history=history,
                        evaluation=ev)


def _quadratic_start(problem, theta, w, options, step_matrix):
    """The first step of a cost of joint terms alone (quadratic in the control points, its
    constant Hessian H = sum_i w_i H_i, ``MotionProblem._linear_hessian``) under exact
    boundary rows: the limit-constrained minimizer of the quadratic from the gradient
    H theta in float64 (a banded product) rather than a double-double evaluation. Its
    rounding, ~eps |H| |theta|, only makes the first step less exact (measured on case
    (a): relative stationarity 3.1e-8 after it, 3.2e-10 from the double-double gradient);
    the evaluations of the next steps refine it in double-double (1.8e-13 after the
    second step, 2.5e-13 before: 2 iterations either way). Returns (theta + step,
    max |step|, (Cholesky factor, band) of H on the free variables, working set)."""
    band = problem._linear_hessian(w)
    g = band_matvec(band, theta.value().ravel())[problem.free_slice]
    factor = step_matrix.newton(band)
    step, working = active_set_step(*factor, g, _Limits(problem, theta), [],
                                    options.active_tolerance)
    return (problem.with_free_step(theta, step), float(np.abs(step).max()), factor,
            working)


def _with_boundary(problem, theta0):
    theta = check_theta(problem, theta0, "theta0")
    fixed = problem.initial_theta()
    hi, lo = theta.hi.copy(), theta.lo.copy()
    a, b = problem.free_rows
    hi[:a], lo[:a] = fixed.hi[:a], fixed.lo[:a]
    hi[b:], lo[b:] = fixed.hi[b:], fixed.lo[b:]
    return DD(hi, lo)


def _stationarity(problem, ev, w, limits, options):
    """((absolute, relative KKT residual, its rounding floor), multipliers, active constraint
    indices). The floor is eps |gross gradient| / scale: the rounding of the sum that the
    gradient is (measured at the optimum, the relative stationarity reached is 0.25-5.5
    times it on the paper's cases, the Panda and a link-space case). The term gradients'
    norms by :func:`_norm` (BLAS dot products) rather than numpy.einsum's sums of squares,
    whose Python wrapper cost 15 us a case (a) solve right after an IPOPT solve (paired
    medians of 100, 2026-12-04); the relative stationarity changes in its last bit."""
    free = problem.free_slice
    g = ev.gradient.ravel()[free]
    active = limits.active(options.active_tolerance) if problem.constraints == "exact" \
        else np.zeros(0, dtype=int)
    residual, mu = kkt_residual(g, limits, active)
    terms = np.asarray(w, dtype=np.float64)[:, None] * ev.grads.reshape(len(w), -1)[:, free]
    scale = max(_norm(term) for term in terms)
    gross = _norm(ev.gross_gradient.ravel()[free])
    if scale <= 1e-8 * gross:
        scale = gross
    scale = max(scale, 1e-300)
    absolute = _norm(residual)
    return (absolute, absolute / scale, ROUNDING * gross / scale), mu, active


def _norm(x):
    """|x|_2 of a float64 vector: numpy.linalg.norm's sqrt(x . x) (the same bits) without
    its argument handling, a few microseconds a call after the caches were flushed."""
    return math.sqrt(x.dot(x))


def _line_search(problem, theta, w, ev, step, stat, options, limits, mode):
    """Backtracking along ``step`` with Armijo's rule on the cost; returns (theta, alpha,
    its evaluation with the Hessian of ``mode`` to come) or None. The full step is
    evaluated whole (gradient and all: a Newton step is taken near the optimum, and its
    evaluation serves the next iteration); shorter ones on the cost alone first. A
    Gauss-Newton full step is doubled while the cost keeps falling and the limits allow
    (long curved valleys). Where the cost change is below its rounding (near the optimum)
    a step that lowers the stationarity is taken. Measured at 727f327 (iterations on
    cases b, c and the Panda link-space case: 12, 22, 10): the next alpha from the
    quadratic through the cost, its slope and the rejected cost (within [0.1, 0.5] alpha)
    took 13, 22, 12; a non-monotone rule (Armijo against the largest of the last 2 or 4
    costs) 12, 21, 11 and 12, 25, 10."""
    g = ev.gradient.ravel()[problem.free_slice]
    slope = float(g @ step)
    rounding = 1e-13 * abs(ev.cost)
    alpha = 1.0
    for _ in range(40):
        candidate = problem.with_free_step(theta, alpha * step)
        extrapolate = alpha == 1.0 and mode == "gauss_newton"
        new = problem.evaluate(candidate, w, hessian=mode) \
            if alpha == 1.0 and not extrapolate else None
        cost = problem.cost(candidate, w) if new is None else new.cost
        if cost <= ev.cost + 1e-4 * alpha * slope:
            if extrapolate:
                candidate, alpha, cost = _extrapolate(problem, theta, w, step, candidate,
                                                      cost, limits)
                if alpha > 1.0:
                    new = None
            return candidate, alpha, new or problem.evaluate(candidate, w, hessian=mode)
        if abs(cost - ev.cost) <= rounding:
            new = new or problem.evaluate(candidate, w, hessian=mode)
            new_stat, _, _ = _stationarity(problem, new, w, _Limits(problem, candidate),
                                           options)
            if new_stat[1] < stat[1]:
                return candidate, alpha, new
        alpha *= 0.5
    return None


def _extrapolate(problem, theta, w, step, candidate, cost, limits, max_alpha=16.0):
    """Double an accepted full step while the cost falls and the limits hold."""
    alpha = 1.0
    if limits.A.shape[0]:
        Ap = limits.of_step(step)
        positive = Ap > 0
        if np.any(positive):
            max_alpha = min(max_alpha, float(np.min(limits.b[positive] / Ap[positive])))
    while 2 * alpha <= max_alpha:
        trial = problem.with_free_step(theta, 2 * alpha * step)
        trial_cost = problem.cost(trial, w)
        if not trial_cost < cost:
            break
        alpha, candidate, cost = 2 * alpha, trial, trial_cost
    return candidate, alpha, cost
