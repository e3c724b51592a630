"""The motion problem: a model, sub-costs, a clamped B-spline, quadrature, boundary
conditions and joint limits (cmtm_math.md §9-§10, DESIGN.md).

=====================  ===========  ==================  ===================================
maths                  code         shape               meaning
=====================  ===========  ==================  ===================================
theta                  ``theta``    (n_c, nv) DD        control points (double-double)
x                      ``x``        (n_free,)           free control points, flattened
                                                        control-point-major (i * nv + j)
t_m, omega_m           ``quadrature.times, .weights``   (N,)  nodes and weights of the costs
c_i                    ``costs``    (n_terms,)          1/2 sum_m omega_m |y_i(t_m)|^2
grad c_i               ``grads``    (n_terms, n_c, nv)  raw sub-cost gradients
=====================  ===========  ==================  ===================================

Boundary conditions (``rest_order`` R), ``boundary="rest"``: q(0) = start, q(T) = goal and
q^(1..R) = 0 at both ends. ``boundary="data"``: start and goal are the raw derivative stacks
(q, q', ..., q^(R)) at t = 0 and t = T, (R+1, nv) each, e.g. a recorded motion's (rest is
the special case start = (q0, 0, ..., 0)). A clamped spline's q^(r) at an end depends on the
r+1 control points nearest to it only, through a triangular matrix (M_0 at t = 0, M_T at
t = T: ``end_matrices``), so the stacks fix the first and last R+1 control points of every
joint, theta_0..R = M_0^-1 start and theta_(n_c-R-1)..(n_c-1) = M_T^-1 goal (for rest, all
equal to start / goal: a clamped spline's derivatives 1..R vanish at an end iff those control
points coincide). With ``constraints="exact"`` those rows are fixed and the optimizer moves
only the others. With ``"penalty"`` (the paper's formulation) every control point is free
and the conditions enter as penalty terms 1/2 rho |q^(r)(t_end) - target|^2 with
rho = ``penalty`` * sum(weights); joint limits become penalties on their violation.

Joint limits lower <= q_j(t_c) <= upper are imposed at the N uniform nodes t_c over [0, T]
inclusive (the samples of ``trajectory.csv``); between nodes the spline is not checked.
"""
import copy
from dataclasses import dataclass, replace
from numbers import Real

import numpy as np
import scipy.sparse as sp

import cmtm
from cmtm._jit import index_range, jit_kernel, jit_leaf
from cmtm.api import check_model, reserve
from ioc.choices import BOUNDARY_MODES, CONSTRAINT_MODES, INTEGRATION_RULES
from ioc.optimize.costs import (JACOBIAN_SOURCES, TermValues, engine_bytes, parse_terms,
                                stack_orders, term_values)
from ioc.spline.banded import BandLayout, SplineChain
from ioc.spline.bspline import DD, ClampedBSpline, check_int, dd_add_floats

POSITION_BOUND = 1e6
"""Joint positions (start, goal, control points) are refused beyond +-1e6 rad or m: far
beyond any motion, and squares of their spline derivatives would overflow float64."""
DURATION_RANGE = (1e-3, 1e6)
"""Accepted motion durations T, s (1 ms to 11.6 days): a spline's r-th derivatives scale
like T^-r, and far outside this range float64 overflows in the knot and derivative
arithmetic."""
_NO_LO, _NO_BOUND = np.zeros((0, 0)), np.zeros(0)
"""Empty arrays: no x_lo, no bound in :meth:`MotionProblem._limit_products`."""
_NO_STACK_GRADIENTS = np.zeros((0, 0, 0, 0))
"""Empty stack gradients: the joint terms' costs alone in :meth:`MotionProblem._joint_costs`."""
FD_STACK_STEP = 1.5e-8
"""Relative step of the forward differences of the terms' vector-Jacobian products (the
Newton Hessian's second-order part): about eps**(1/2), balancing truncation and round-off."""
CURVATURE_BYTES = 48 * 2**20
"""Bytes of term Jacobians per engine call of those differences: the perturbed samples of
several directions share a call (fewer calls, fewer fresh Jacobian arrays), within a bound
on the memory they take. Measured 2026-12-04 (2 shared cores, two runs each), the
fastest of 15 curvatures / of 3 solves, 8 -> 48 MB: bench_peers' link case (7 directions
of 5.6 MB: 7 calls -> 1) 6.2-6.5 -> 4.3-4.4 ms / 88-92 -> 76-78 ms; its floating human (36
directions of 12.4 MB: 36 calls -> 9) 100-109 -> 92-95 ms / 351-363 -> 345 ms; the Panda
case (one call either way) the same."""


@dataclass(frozen=True)
class Quadrature:
    """Nodes and weights of the sub-cost integrals: ``samples`` (N uniform midpoints
    t_m = (m + 1/2) T/N, weight T/N each: the paper's sampled sum) or ``gauss`` (p+1
    Gauss-Legendre nodes on every knot span, exact for polynomial integrands of degree
    <= 2p+1, so for every joint term)."""
    rule: str
    times: np.ndarray
    weights: np.ndarray


def make_quadrature(spline, rule, samples):
    """The :class:`Quadrature` of ``rule`` on the spline's interval."""
    if rule not in INTEGRATION_RULES:
        raise ValueError(f"integration: expected one of {', '.join(INTEGRATION_RULES)}, "
                         f"got {rule!r}")
    T = spline.duration
    if rule == "samples":
        times = (np.arange(samples) + 0.5) * (T / samples)
        return Quadrature(rule, times, np.full(samples, T / samples))
    nodes, weights = np.polynomial.legendre.leggauss(spline.degree + 1)
    u = np.unique(spline.knots)
    a, b = u[:-1, None], u[1:, None]
    times = (0.5 * (b - a) * nodes + 0.5 * (a + b)).ravel()
    return Quadrature(rule, times, (0.5 * (b - a) * weights).ravel())


def _finite_real(name, value):
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, got {value!r}")
    return float(value)


def _duration(value):
    """T as a float in DURATION_RANGE, else ValueError."""
    low, high = DURATION_RANGE
    T = _finite_real("duration", value)
    if not low <= T <= high:
        raise ValueError(f"duration: expected a number of seconds in [{low:g}, {high:g}], "
                         f"got {value!r}")
    return T


def _per_joint(name, value, nv):
    """One value for all joints or one per joint -> (nv,) float64 within +-POSITION_BOUND."""
    try:
        array = None if isinstance(value, str) else np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim > 1 or array.size not in (1, nv) \
            or not np.all(np.abs(array) <= POSITION_BOUND):
        raise ValueError(f"{name}: expected one finite value or {nv} (one per joint) within "
                         f"+-{POSITION_BOUND:g} rad or m, got {value!r}")
    return np.broadcast_to(array.ravel(), (nv,)).copy()


def check_boundary_mode(boundary):
    """``boundary`` if it is one of BOUNDARY_MODES, else ValueError."""
    if boundary not in BOUNDARY_MODES:
        raise ValueError(f"boundary: expected one of {', '.join(BOUNDARY_MODES)}, got "
                         f"{boundary!r}")
    return boundary


def _per_order(name, value, orders, nv):
    """One value for all, or a 2-D array broadcasting to (orders, nv) -> (orders, nv)
    float64 (a raw derivative stack at one end), positions within +-POSITION_BOUND."""
    try:
        array = None if isinstance(value, str) else np.asarray(value, dtype=np.float64)
        array = None if array is None or array.ndim not in (0, 2) else \
            np.broadcast_to(array, (orders, nv)).copy()
    except (TypeError, ValueError):
        array = None
    if array is None or not np.all(np.isfinite(array)) \
            or not np.all(np.abs(array[0]) <= POSITION_BOUND):
        raise ValueError(f"{name}: expected one finite value or ({orders}, {nv}) (the raw "
                         f"derivatives 0..rest_order of every joint; positions within "
                         f"+-{POSITION_BOUND:g} rad or m), got {value!r}")
    return array


def _limits(model, limits):
    """(lower, upper) per joint from "model", "none" or (lo, hi) / per-joint arrays."""
    nv = model.nv
    if isinstance(limits, str) and limits == "model":
        return np.array(model.q_lower, dtype=float), np.array(model.q_upper, dtype=float)
    if limits is None or (isinstance(limits, str) and limits == "none"):
        return np.full(nv, -np.inf), np.full(nv, np.inf)
    try:
        lower, upper = (np.broadcast_to(np.asarray(bound, dtype=float), (nv,)).copy()
                        for bound in limits)
    except (TypeError, ValueError):
        raise ValueError(f"limits: expected 'model', 'none' or (lower, upper), each one "
                         f"number or {nv} (one per joint), got {limits!r}") from None
    if np.any(np.isnan(lower)) or np.any(np.isnan(upper)) or np.any(lower >= upper):
        raise ValueError(f"limits: expected lower < upper for every joint, got "
                         f"{lower.tolist()} and {upper.tolist()}")
    return lower, upper


class MotionProblem:
    """A direct (or inverse) motion problem; immutable after construction.

    model : kinematic_trees.CompiledTree
    costs : names of the sub-costs (ioc.optimize.costs), comma-separated string or sequence
    duration T (s, in DURATION_RANGE), samples N (quadrature nodes of ``samples`` and
    limit nodes; with control_points bounded by the engine's memory budget), degree p,
    control_points n_c, start / goal (boundary "rest": q(0) and q(T), one value or nv;
    "data": the raw stacks (q, ..., q^(R)) at t = 0 and T, one value or (R+1, nv) each),
    rest_order R, integration ("samples" | "gauss"), limits ("model" | "none" | (lower,
    upper)), constraints ("exact" | "penalty"), knots (full clamped knot vector, default
    uniform), penalty rho, jacobians ("structured" | "finite_differences": where the
    sub-cost Jacobians come from), boundary ("rest" | "data", the module's docstring).
    """

    def __init__(self, model, costs, *, duration=2.0, samples=200, degree=5,
                 control_points=50, start=0.0, goal=0.0, rest_order=1,
                 integration="samples", limits="model", constraints="exact", knots=None,
                 penalty=1e12, jacobians="structured", boundary="rest"):
        check_model(model)
        self.model = model
        nv = model.nv
        self.terms = parse_terms(costs, model)
        self.samples = check_int("samples", samples, 2)
        self.rest_order = check_int("rest_order", rest_order, 0)
        self.K = stack_orders(self.terms)
        degree = check_int("degree", degree, 1)
        control_points = check_int("control_points", control_points, 1)
        self._check_size(degree, control_points)
        self.spline = ClampedBSpline(degree, control_points, _duration(duration), knots=knots)
        p = self.spline.degree
        for term in self.terms:
            self.spline.check_derivative(term.top_order, what=f"cost {term.name!r}")
        if self.rest_order >= p:
            raise ValueError(f"rest_order: expected < degree {p}, got {self.rest_order}")
        n_fixed = 2 * (self.rest_order + 1)
        if constraints == "exact" and self.spline.n_control <= n_fixed:
            raise ValueError(f"control_points: expected more than {n_fixed} (the first and "
                             f"last rest_order+1 are fixed), got {self.spline.n_control}")
        if constraints not in CONSTRAINT_MODES:
            raise ValueError(f"constraints: expected one of {', '.join(CONSTRAINT_MODES)}, "
                             f"got {constraints!r}")
        self.constraints = constraints
        if jacobians not in JACOBIAN_SOURCES:
            raise ValueError(f"jacobians: expected one of {', '.join(JACOBIAN_SOURCES)}, "
                             f"got {jacobians!r}")
        self.jacobians = jacobians
        self.penalty = _finite_real("penalty", penalty)
        if self.penalty < 0:
            raise ValueError(f"penalty: expected a finite number >= 0, got {penalty!r}")
        self.boundary = check_boundary_mode(boundary)
        self.lower, self.upper = _limits(model, limits)
        self._set_boundary(start, goal)
        self.quadrature = make_quadrature(self.spline, integration, self.samples)
        n_free_min = self.spline.n_control - (n_fixed if constraints == "exact" else 0)
        self.first, self.basis = self.spline.local_basis(self.quadrature.times, self.K - 1)
        self._stack_evaluator = self.spline.stack_evaluator(self.quadrature.times, self.K - 1)
        self.chain = SplineChain(self.first, self.basis, self.spline.n_control, nv)
        self.nonlinear = tuple(i for i, term in enumerate(self.terms) if term.kind != "joint")
        self._linear_bands, self._linear_sum, self._selector_cache = {}, None, None
        self._joint_terms = self._joint_term_entries()
        self._gradient_orders = self._stack_gradient_orders()
        self.limit_times = np.linspace(0.0, self.spline.duration, self.samples)
        self.layout = BandLayout(self.spline.n_control, p, nv)
        fixed = self.rest_order + 1 if constraints == "exact" else 0
        self.free_rows = (fixed, self.spline.n_control - fixed)
        self.n_free = n_free_min * nv
        self._limit_matrix = self._limit_rows()
        self._limit_constraints = self._end_chain = None
        u = self.spline.knots
        greville = np.array([u[i + 1:i + p + 1].mean() for i in range(self.spline.n_control)])
        s = greville / self.spline.duration
        self._minimum_jerk = s ** 3 * (10 - 15 * s + 6 * s ** 2)

    def _check_size(self, degree, control_points):
        """ValueError before anything is allocated when one evaluation would not fit in the
        engine's memory budget (cmtm.memory_budget): per sample the engine's Jacobians, the
        terms' stack Jacobians and three stack Hessians; per control point two Hessian
        bands."""
        nv, width = self.model.nv, self.K * self.model.nv
        rows = sum(term.size for term in self.terms)
        engine = engine_bytes(self.model, self.terms)
        reserve("samples", self.samples, engine + 8 * width * (rows + 3 * width),
                "lower samples to at most {chunk}")
        reserve("control_points", control_points, 16 * (degree + 1) * nv * nv,
                "lower control_points to at most {chunk}", unit="control points")

    # --- boundary conditions and the free variables ---

    def _set_boundary(self, start, goal):
        """Validated ``start`` and ``goal`` (rest: (nv,) positions; data: (R+1, nv) raw
        stacks) and the fixed control-point rows they imply, ``_end_rows``."""
        self._initial = None
        nv, orders = self.model.nv, self.rest_order + 1
        if self.boundary == "rest":
            self.start, self.goal = _per_joint("start", start, nv), _per_joint("goal", goal, nv)
            self._end_rows = (np.broadcast_to(self.start, (orders, nv)),
                              np.broadcast_to(self.goal, (orders, nv)))
        else:
            self.start, self.goal = (_per_order(name, value, orders, nv)
                                     for name, value in (("start", start), ("goal", goal)))
            M_0, M_T = self.end_matrices()
            self._end_rows = (np.linalg.solve(M_0, self.start), np.linalg.solve(M_T, self.goal))
        for name, value in zip(("start", "goal"), self.boundary_positions()):
            bad = np.flatnonzero((value < self.lower) | (value > self.upper))
            if bad.size:
                j = bad[0]
                raise ValueError(f"{name}: expected values within the joint limits, got "
                                 f"{value[j]:g} for {self.model.joint_names[j]} outside "
                                 f"[{self.lower[j]:g}, {self.upper[j]:g}]")

    def with_boundary(self, start, goal):
        """The same problem with other start and goal (validated; the shapes of the
        problem's ``boundary``, see the class docstring)."""
        other = copy.copy(self)
        other._set_boundary(start, goal)
        return other

    def end_matrices(self):
        """(M_0, M_T), (R+1, R+1) each: q^(r)(0) = sum_a M_0[r, a] theta_a over the first R+1
        control points (lower triangular) and q^(r)(T) = sum_a M_T[r, a] theta_(n_c-R-1+a)
        over the last R+1 (upper triangular), from the basis derivatives at the ends (§9)."""
        R, p = self.rest_order, self.spline.degree
        _, values = self.spline.local_basis(np.array([0.0, self.spline.duration]), R)
        return values[0, :, :R + 1], values[1, :, p - R:]

    def boundary_stacks(self):
        """(start, goal) raw stacks (q, ..., q^(R)) at t = 0 and T, (R+1, nv) each."""
        if self.boundary == "data":
            return self.start, self.goal
        zeros = np.zeros((self.rest_order, self.model.nv))
        return np.vstack([self.start, zeros]), np.vstack([self.goal, zeros])

    def boundary_positions(self):
        """(start, goal) positions q(0) and q(T), (nv,) each: the first rows of
        :meth:`boundary_stacks`."""
        if self.boundary == "data":
            return self.start[0], self.goal[0]
        return self.start, self.goal

    def boundary_jacobian(self):
        """d theta_fixed / d (start, goal), (2 (R+1) nv, start.size + goal.size): the fixed
        rows (first R+1, then last R+1, flattened row-major i * nv + j) against the
        flattened start and goal; rest: ones (every fixed row copies its end's position),
        data: M_0^-1 and M_T^-1 (``end_matrices``), joint by joint."""
        nv, orders = self.model.nv, self.rest_order + 1
        if self.boundary == "rest":
            blocks = (np.ones((orders, 1)), np.ones((orders, 1)))
        else:
            blocks = tuple(np.linalg.inv(M) for M in self.end_matrices())
        return sp.block_diag([np.kron(b, np.eye(nv)) for b in blocks]).toarray()

    @property
    def fixed_rows(self):
        """Control-point rows fixed by the boundary conditions (exact constraints):
        (rows equal to start, rows equal to goal)."""
        a, b = self.free_rows
        return np.arange(a), np.arange(b, self.spline.n_control)

    @property
    def free_slice(self):
        """Range of the free variables in the flattened control points (i * nv + j)."""
        nv = self.model.nv
        return slice(self.free_rows[0] * nv, self.free_rows[1] * nv)

    def initial_theta(self):
        """A feasible start: control points on the minimum-jerk profile between start and
        goal at the Greville abscissae (fixed rows exactly start and goal)."""
        if self._initial is None:       # made once per boundary (_set_boundary), copied
            n_c = self.spline.n_control
            start, goal = self.boundary_positions()
            first_rows, last_rows = self._end_rows
            theta = np.minimum(np.maximum(start + self._minimum_jerk[:, None] * (goal - start),
                                          self.lower), self.upper)
            theta[:self.rest_order + 1] = first_rows
            theta[n_c - self.rest_order - 1:] = last_rows
            self._initial = theta
        return DD.of(self._initial.copy())

    def with_free_step(self, theta, step):
        """theta + step on the free rows (step: (n_free,) float64), in double-double."""
        return dd_add_floats(theta, step.reshape(-1, self.model.nv), self.free_rows[0])

    # --- joint limits at the nodes t_c: lower <= q(t_c) <= upper ---

    def _limit_rows(self):
        """Sparse A with q_j(t_c) = (A theta_flat)[c * nv + j] over all control points."""
        nv = self.model.nv
        first, values = self.spline.local_basis(self.limit_times, 0)
        n_local = values.shape[2]
        c = np.arange(len(first))
        rows = (c[:, None, None] * nv + np.arange(nv)[None, None, :]).repeat(n_local, 1)
        cols = (first[:, None, None] + np.arange(n_local)[None, :, None]) * nv \
            + np.arange(nv)[None, None, :]
        data = np.broadcast_to(values[:, 0, :, None], rows.shape)
        return sp.csr_array((data.ravel(), (rows.ravel(), cols.ravel())),
                            shape=(len(first) * nv, self.spline.n_control * nv))

    @property
    def has_limits(self):
        return bool(np.any(np.isfinite(self.lower)) or np.any(np.isfinite(self.upper)))

    def limit_positions(self, theta):
        """q(t_c) at the limit nodes, (n_nodes, nv), from the double-double control points."""
        return self.spline.evaluate(theta, self.limit_times, 0)[:, 0, :]

    def limit_values(self, theta):
        """q(t_c) at the limit nodes, flattened node-major (n_nodes * nv,), in float64 (the
        active-set steps' slacks; positions need no double-double)."""
        return self._limit_matrix @ theta.value().ravel()

    def limit_constraints(self):
        """(rows, signs, A, bounds) of the finite limits as a_k^T dx <= b_k = bound_k -
        sign_k q_rows[k]: rows into :meth:`limit_values`, upper bounds first (sign +1), then
        lower ones (sign -1, bound -lower); A (n_rows, n_free) sparse, a_k = sign_k d q / dx.
        Built on first use and kept (they do not depend on the iterate)."""
        if self._limit_constraints is None:
            n_nodes = len(self.limit_times)
            upper, lower = np.tile(self.upper, n_nodes), np.tile(self.lower, n_nodes)
            up, lo = np.flatnonzero(np.isfinite(upper)), np.flatnonzero(np.isfinite(lower))
            rows = np.concatenate([up, lo])
            sign = np.concatenate([np.ones(len(up)), -np.ones(len(lo))])
            self._signed_limit_rows = self._limit_matrix[rows].multiply(sign[:, None]).tocsr()
            A = self._signed_limit_rows[:, self.free_slice]
            first, basis = self.spline.local_basis(self.limit_times, 0)
            node, joint = np.divmod(rows, self.model.nv)
            self._limit_terms = (node, joint, sign, first, np.ascontiguousarray(basis[:, 0]))
            self._limit_constraints = rows, sign, A, np.concatenate([upper[up], -lower[lo]])
        return self._limit_constraints

    def signed_limits_of(self, x, first_row=0):
        """sign_k q_rows[k] of the rows of :meth:`limit_constraints` for the control points
        x (n, nv), rows first_row .. first_row + n - 1 of theta (the others zero): with
        first_row = 0 and all rows, the signed positions (:meth:`signed_limit_rows` @ theta);
        with the free rows, A dx of a step dx. The same bits as those sparse products, in
        one compiled call on the B-spline bases at the limit nodes
        (:func:`_signed_limit_products`) instead of scipy's dispatch and the matrices' rows
        (measured 2026-12-03, bench_peers' case (a), limit_slacks per call in a solve: 10.2
        -> 8.2 us, and 30.5 -> 17.6 us right after a pass over 64 MB)."""
        return self._limit_products(x, _NO_LO, first_row, _NO_BOUND)

    def _limit_products(self, x, x_lo, first_row, bound):
        """:func:`_signed_limit_products` of the rows of :meth:`limit_constraints` for the
        control points x (+ x_lo if not empty) from row first_row, subtracted from
        ``bound`` (float64, contiguous) if not empty."""
        self.limit_constraints()
        out = np.empty(len(self._limit_terms[0]))
        _signed_limit_products(*self._limit_terms, np.ascontiguousarray(x, dtype=np.float64),
                               np.ascontiguousarray(x_lo, dtype=np.float64), first_row, bound,
                               np.empty((len(self.limit_times), x.shape[1])), out)
        return out

    def signed_limit_rows(self):
        """sign_k d q_rows[k] / d theta over all control points, sparse (n_rows, n_c nv), of
        the rows of :meth:`limit_constraints` (whose A is its free columns)."""
        self.limit_constraints()
        return self._signed_limit_rows

    def limit_slacks(self, theta):
        """b_k = bound_k - sign_k q_rows[k](theta) of :meth:`limit_constraints`, in float64
        (the same bits as from :meth:`limit_values`: :meth:`signed_limits_of` of
        theta.value(), a sign flips no rounding), in one compiled call from the DD."""
        return self._limit_products(theta.hi, theta.lo, 0, self.limit_constraints()[3])

    # --- cost evaluation ---

    def stack(self, theta):
        """Raw stacks q, ..., q^(K-1) at the quadrature nodes, (N, K, nv); a DD of float64
        control points (the solvers' iterates) through the spline's fixed-time evaluator
        (``ClampedBSpline.stack_evaluator``), anything else checked by ``evaluate``."""
        shape = (self.spline.n_control, self.model.nv)
        if isinstance(theta, DD) and all(isinstance(part, np.ndarray) and part.shape == shape
                                         and part.dtype == np.float64 for part in theta):
            return self._stack_evaluator(theta)
        return self.spline.evaluate(theta, self.quadrature.times, self.K - 1)

    def cost(self, theta, weights):
        """The weighted cost alone (no Jacobian pass): line searches."""
        weights = np.asarray(weights, dtype=float)
        q_stack = self.stack(theta)
        values = self._values(q_stack, jacobians=False)
        costs = self._joint_costs(q_stack)
        for i in self.nonlinear:
            costs[i] = _term_cost(self.quadrature.weights, values[i][0])
        cost = sum(w * c for w, c in zip(weights, costs.tolist()))
        if self.constraints == "penalty":
            cost += self._add_penalties(theta, weights, None, [])
        return float(cost)

    def evaluate(self, theta, weights, hessian=None):
        """Costs, gradients and optionally the Hessian at ``theta``.

        hessian : None, "gauss_newton" (sum_m omega_m Jy^T Jy, cmtm_math §10) or "newton"
            (the Gauss-Newton matrix plus the second-order part of the link and torque
            terms, :meth:`_curvature`).
        Returns an :class:`Evaluation`; its ``band`` covers all control points.
        """
        weights = np.asarray(weights, dtype=float)
        q_stack = self.stack(theta)
        values = self._values(q_stack)
        omega = self.quadrature.weights
        stack_grads = np.zeros(q_stack.shape[:2] + (len(values), q_stack.shape[2]))
        costs = self._joint_costs(q_stack, stack_grads)
        for i in self.nonlinear:
            y, Jy = values[i]
            costs[i] = _term_cost(omega, y)
            gs = _stack_gradient(omega, y, Jy)
            stack_grads[:, :gs.shape[1], i] = gs
        term_grads, gross = self.chain.gradient(stack_grads, orders=self._gradient_orders,
                                                weights=weights)
        grads = np.ascontiguousarray(term_grads.transpose(1, 0, 2))   # (n_terms, n_c, nv)
        gradient = weights[None].dot(grads.reshape(len(weights), -1)).reshape(
            grads.shape[1:])                # np.tensordot(weights, grads, 1)'s product
        penalty_cost = 0.0
        if self.constraints == "penalty":
            penalty_cost = self._add_penalties(theta, weights, gradient, [])
        return Evaluation(costs=costs, grads=grads, gradient=gradient,
                          cost=float(weights @ costs) + penalty_cost, q_stack=q_stack,
                          gross_gradient=gross.reshape(gradient.shape), hessian=hessian,
                          exact_hessian=hessian == "newton"
                          or (hessian is not None and not self.nonlinear),
                          inputs=(self, theta, values, weights))

    def _values(self, q_stack, jacobians=True):
        """(y (N, d), Jy (N, d, Kd, nv)) of the link and torque terms at the stack, from the
        engine (``ioc.optimize.costs.term_values``, Jy over the orders they depend on,
        ``engine_orders``); None for the joint terms, whose y are stack entries
        (:meth:`_joint_costs`)."""
        values = TermValues([None] * len(self.terms))
        if self.nonlinear:
            engine = term_values(self.model, [self.terms[i] for i in self.nonlinear],
                                 q_stack[:, :self.engine_orders], jacobians=jacobians,
                                 source=self.jacobians)
            for i, value in zip(self.nonlinear, engine):
                values[i] = value
            values.engine = engine.engine
        return values

    def _joint_term_entries(self):
        """The stack entries y = q^(r) of the joints of each joint term (what its selector
        picks, in the order of its joints), as :func:`_joint_terms` takes them: (term
        indices (Tj,), orders r (Tj,), joints (Tj, nv) padded with -1, their counts (Tj,))."""
        linear = [i for i in range(len(self.terms)) if i not in self.nonlinear]
        joints = np.full((len(linear), self.model.nv), -1, dtype=np.int64)
        for t, i in enumerate(linear):
            joints[t, :len(self.terms[i].joints)] = self.terms[i].joints
        return (np.array(linear, dtype=np.int64),
                np.array([self.terms[i].derivative for i in linear], dtype=np.int64),
                joints, np.array([len(self.terms[i].joints) for i in linear], dtype=np.int64))

    def _joint_costs(self, q_stack, stack_grads=None):
        """Raw costs (n_terms,) with those of the joint terms, 1/2 sum_m omega_m |y_m|^2 for
        y the stack entries they select (the others zero), and their stack gradients
        omega_m y_m written to their entries of ``stack_grads`` (N, K, n_terms, nv) if
        given: the squares |y_m|^2 and the gradients in one compiled call
        (:func:`_joint_terms`), the sums over m as :func:`_term_cost` takes them (the same
        bits), without numpy's indexing and einsum per term (measured 2026-12-04, case (a)
        of bench_peers, three joint terms: evaluate 61 -> 50 us back to back)."""
        terms, orders, joints, counts = self._joint_terms
        omega = self.quadrature.weights
        squares = np.empty((len(terms), len(omega)))
        _joint_terms(np.ascontiguousarray(q_stack), omega, terms, orders, joints, counts,
                     stack_grads is not None,
                     _NO_STACK_GRADIENTS if stack_grads is None else stack_grads, squares)
        costs = np.zeros(len(self.terms))
        for i, row in zip(terms.tolist(), squares):
            costs[i] = 0.5 * float(omega @ row)
        return costs

    def _stack_gradient_orders(self):
        """The orders where each term's stack gradient in :meth:`evaluate` may be nonzero
        (the per-term ``orders`` of ``SplineChain.gradient``), (K, n_terms) bool: a joint
        term's order r, the engine orders of the others."""
        orders = np.zeros((self.K, len(self.terms)), dtype=np.bool_)
        terms, joint_orders = self._joint_terms[:2]
        orders[joint_orders, terms] = True
        for i in self.nonlinear:
            orders[:self.engine_orders, i] = True
        return orders

    def _selectors(self):
        """{term index: Jy (d, K, nv)} of the joint terms, whose y is a selection of stack
        entries (the same Jy at every node); made on first use and kept."""
        if self._selector_cache is None:
            linear = [i for i in range(len(self.terms)) if i not in self.nonlinear]
            zero = np.zeros((1, self.K, self.model.nv))
            values = term_values(self.model, [self.terms[i] for i in linear], zero)
            self._selector_cache = {i: Jy[0] for i, (_, Jy) in zip(linear, values)}
        return self._selector_cache

    def _hessians(self, kind, theta, q_stack, values, weights, curvature=None):
        """(the Hessian of ``kind``, the Gauss-Newton one or a _Deferred of it, the stack
        curvature used or None) in band storage over all control points, penalties
        included (:meth:`evaluate`); ``curvature``: a second-order part to use instead of
        :meth:`_curvature`'s differences."""
        linear = self._linear_hessian(weights)
        band, gauss_newton = None, linear
        if self.nonlinear:
            G = self._gauss_newton_stack(values, weights)
            if kind == "newton":
                if curvature is None:
                    curvature = self._curvature(q_stack, values, weights)
                band = self.chain.hessian(G, out=linear.copy(), C=curvature)
                gauss_newton = _Deferred(self.chain.hessian, G, linear)
            else:
                self.chain.hessian(G, out=linear)
        if self.constraints == "penalty":
            self._add_penalties(theta, weights, None,
                                [b for b in (band, linear) if b is not None])
        return gauss_newton if band is None else band, gauss_newton, curvature

    @property
    def engine_orders(self):
        """Kd: the raw orders q .. q^(Kd-1) the link and torque terms depend on (0: none)."""
        return 1 + max((self.terms[i].top_order for i in self.nonlinear), default=-1)

    def _linear_hessian(self, weights):
        """sum_i w_i H_i over the joint terms (band over all control points), a new array:
        each H_i = sum_m omega_m B_m^T Jy_i^T Jy_i B_m is constant (Jy_i selects stack
        entries), chained once per term and kept, and so is the sum for the last weights (a
        solve's every iteration asks for the same)."""
        key = np.asarray(weights, dtype=float).tobytes()
        if self._linear_sum is None or self._linear_sum[0] != key:
            band = np.zeros((self.layout.u + 1, self.layout.size))
            for i, term in enumerate(self.terms):
                if i not in self.nonlinear and weights[i] != 0.0:
                    if i not in self._linear_bands:
                        self._linear_bands[i] = self._linear_band(i)
                    band += weights[i] * self._linear_bands[i]
            self._linear_sum = key, band
        return self._linear_sum[1].copy()

    def _linear_band(self, index):
        """H_i of the joint term ``index``: its selector Jy (d, K, nv) is the same at every
        node, so the stack Hessians are omega_m P, P = Jy^T Jy (K, K, nv, nv), and the
        blocks are those of the node weights alone (one per (s, t)) contracted with P."""
        N, K, nv = len(self.quadrature.times), self.K, self.model.nv
        S = self._selectors()[index]
        P = np.einsum("dsj,dtk->stjk", S, S).reshape(K * K, nv * nv)
        nodes = np.zeros((N, K * K, K * K))
        nodes[:, np.arange(K * K), np.arange(K * K)] = self.quadrature.weights[:, None]
        Q = self.chain.hessian_blocks(nodes.reshape(N, K, K, K * K))
        return self.chain.band(Q @ P)

    def _gauss_newton_stack(self, values, weights):
        """sum_i w_i omega_m Jy_i^T Jy_i over the link and torque terms, (N, Kd, Kd, nv, nv)
        with the order axes first, as ``SplineChain.hessian`` takes them: a view of the
        products W (N, Kd nv, Kd nv) over the flattened stack entries (s nv + a), G[m, s,
        t, a, b] = W[m, s nv + a, t nv + b], which the chaining reads in place (no
        reordered copy). The terms' products are added (:func:`_add_gauss_newton`, which
        reads each Jacobian row into a contiguous work row: no copy of the Jacobian). A term's
        Jacobian is zero beyond its top order (a torque's in q''' where a torque rate shares
        the engine call, a link velocity's in q''): those columns are left out of its
        product."""
        N, Kd, nv = len(self.quadrature.weights), self.engine_orders, self.model.nv
        omega = self.quadrature.weights
        W, row = np.zeros((N, Kd * nv, Kd * nv)), np.empty(Kd * nv)
        for i in self.nonlinear:
            Jy = _flat(values[i][1][:, :, :self.terms[i].top_order + 1])
            _add_gauss_newton(weights[i] * omega, Jy, row[:Jy.shape[2]], W)
        return W.reshape(N, Kd, nv, Kd, nv).transpose(0, 1, 3, 2, 4)

    def _curvature(self, q_stack, values, weights):
        """The second-order part sum_i w_i omega_m sum_d y_id Hess(y_id) of the link and torque
        terms' stack Hessians, (N, Kd, Kd, nv, nv), by forward differences of the frozen
        vector-Jacobian product g(s) = sum_i Jy_i(s)^T lambda_i, lambda_i = w_i omega_m y_i at
        the current stack, along the stack entries q^(o)_j (every sample perturbed at once:
        samples are independent; several directions share an engine call).

        Only the orders o <= L/2 are differenced, L the terms' highest input order: y^(r)
        is a polynomial in q', q'', ... with coefficients that depend on q, each monomial of
        weight (the sum of its derivative orders) at most L (y = tau has M(q) q'' and
        q'^T Gamma(q) q', weight 2, nu = J(q) q' weight 1, and a time derivative raises
        every weight by one). A second derivative in q^(a) and q^(b), a, b >= 1, needs a
        monomial holding both, so it vanishes unless a + b <= L: every other block is the
        transpose of one in a differenced column, or zero.

        Where L <= 3 and every term is a torque tau, a torque rate tau', or (L <= 2) the
        rate y' of a velocity y = J(q) q' (a link twist, a point velocity), only q is
        differenced (:meth:`_identity_groups`): the blocks left, (q', q') and (q'', q'),
        follow from the differenced ones and from the differences of the mass matrix M
        and of its rate Mdot = sum_l d_l M q'_l (read in the same perturbed engine
        Jacobians: M = d tau / dq'', Mdot = d tau' / dq'' - d tau / dq'). With
        D = d(M lambda)/dq, E_jk = sum_i lambda_i d_i M_jk, c = q'^T Gamma(q) q',
        Gamma_ijk = (d_k M_ij + d_j M_ik - d_i M_jk) / 2 (Christoffel symbols):

        * y' = J q'' + sum_k (d_k J) q'_k q': lambda . y' has the q'' part J^T lambda and
          the q' quadratic form A_jk = sum_d lambda_d d_k J_dj = X_jk, X the (q'', q) block,
          so the (q', q') block is X + X^T;
        * tau: the (q', q') block is 2 lambda_i Gamma_ijk = D + D^T - E, D = X;
        * tau' = M q''' + Mdot q'' + 2 Gamma[q', q''] + (d_q c) q' + (d_q g) q': the (q', q')
          block is the Hessian of the cubic lambda . (d_q c) q', Z + Z^T - U with Z the
          (q'', q) block and U_ab = sum_i lambda_i d_i Mdot_ab; the (q'', q') block is
          D + 2 lambda_i Gamma_iab = 2 D + D^T - E, D the (q''', q) block.

        lambda = sum_i P_i^T lambda_i over the torque terms y_i = P_i tau of a group (the
        joints they keep); the terms' blocks add. Step FD_STACK_STEP * max(1, |q^(o)_j|)
        per sample: the part is right to ~1e-8 relative, which sets the rate of the Newton
        steps near the optimum, not the optimum."""
        N, nv, Kd = q_stack.shape[0], self.model.nv, self.engine_orders
        O = (Kd - 1) // 2 + 1                       # column orders 0 .. O-1
        groups = self._identity_groups() if O == 2 else None
        part = np.zeros(len(self.nonlinear), dtype=int) if groups is None else groups
        differenced = 1 if groups is not None else O
        terms = [self.terms[i] for i in self.nonlinear]
        omega = self.quadrature.weights
        lambdas = [weights[i] * omega[:, None] * values[i][0] for i in self.nonlinear]
        stack = np.ascontiguousarray(q_stack[:, :Kd])
        steps = FD_STACK_STEP * np.maximum(1.0, np.abs(stack[:, :O]))       # (N, O, nv)
        # C[group, m, o, j, t, k] = S[m, t, o, k, j] of the group's terms
        columns = np.zeros((1 + int(part.max()), N, O, nv, Kd * nv))
        bases = np.zeros((columns.shape[0], N, 1, 1, Kd * nv))
        torques = None if groups is None else _MassDifferences(self, terms, part, lambdas,
                                                               values.engine)
        tops = [term.top_order + 1 for term in terms]     # Jy is zero beyond a term's top
        for lam, i, group, top in zip(lambdas, self.nonlinear, part, tops):
            _add_vjps(lam, _flat(values[i][1][:, :, :top]), 0, bases[group])
        for block in self._direction_groups(differenced * nv, values):
            perturbed = np.empty((len(block), N, Kd, nv))
            _perturbed_stacks(stack, steps, block.start, perturbed)
            moved = term_values(self.model, terms, perturbed.reshape(-1, Kd, nv),
                                source=self.jacobians, values=False)
            for lam, (_, Jy), group, top in zip(lambdas, moved, part, tops):
                _add_vjps(lam, _flat(Jy[:, :, :top]), block.start, columns[group])
            if torques is not None:
                torques.add(moved.engine, block.start, steps)
        E, U = _NO_MASS_DIFFERENCES if torques is None else (torques.E, torques.U)
        S = np.empty((N, Kd, Kd, nv, nv))
        _curvature_of_columns(columns.reshape(columns.shape[:4] + (Kd, nv)),
                              bases.reshape(bases.shape[:2] + (Kd, nv)), steps,
                              differenced * nv, torques is not None, part.max() == 1, E, U, S)
        return S

    def _identity_groups(self):
        """Where only q is differenced (:meth:`_curvature`): per link and torque term, 0
        for a torque tau or the rate of a velocity (input order <= 2), 1 for a torque rate
        tau'; None where some term is neither."""
        groups = []
        for i in self.nonlinear:
            term = self.terms[i]
            if term.kind == "torque" and term.derivative == 1:
                groups.append(1)
            elif term.top_order <= 2 and (term.kind in ("link", "point")
                                          or term.derivative == 0):
                groups.append(0)
            else:
                return None
        return np.array(groups)

    def _direction_groups(self, n_directions, values):
        """The difference directions in groups whose perturbed samples' term Jacobians (and
        the engine's, about as large) take at most CURVATURE_BYTES."""
        per_direction = 2 * sum(values[i][1].nbytes for i in self.nonlinear)
        size = max(1, CURVATURE_BYTES // max(per_direction, 1))
        return [range(a, min(a + size, n_directions)) for a in range(0, n_directions, size)]

    def _add_penalties(self, theta, weights, gradient, bands):
        """Penalty terms of ``constraints="penalty"`` (boundary conditions; limit violations)
        added to the gradient and every band in place; returns their cost."""
        rho = self.penalty * float(np.sum(weights))
        R, nv = self.rest_order, self.model.nv
        ends = np.array([0.0, self.spline.duration])
        if self._end_chain is None:    # the same at every call: built once, kept
            self._end_chain = SplineChain(*self.spline.local_basis(ends, R),
                                          self.spline.n_control, nv)
        chain = self._end_chain
        stack = self.spline.evaluate(theta, ends, R)
        residual = stack - np.array(self.boundary_stacks())
        cost = 0.5 * rho * float(np.sum(residual ** 2))
        if gradient is not None:
            gradient += chain.gradient(rho * residual)
        G = np.zeros((2, R + 1, R + 1, nv, nv))
        for r in range(R + 1):
            G[:, r, r, np.arange(nv), np.arange(nv)] = rho
        for band in bands:
            chain.hessian(G, out=band)
        if self.has_limits:
            cost += self._add_limit_penalty(theta, rho, gradient, bands)
        return cost

    def _add_limit_penalty(self, theta, rho, gradient, bands):
        q = self.limit_positions(theta)
        violation = np.maximum(q - self.upper, 0.0) + np.minimum(q - self.lower, 0.0)
        flat = violation.ravel()
        if gradient is not None:
            gradient += (rho * (self._limit_matrix.T @ flat)).reshape(gradient.shape)
        active = flat != 0.0
        if bands and active.any():
            A = self._limit_matrix[active]
            dense = (A.T @ A).toarray() * rho
            for band in bands:
                _add_dense_to_band(band, dense, self.layout.u)
        return 0.5 * rho * float(flat @ flat)


class _MassDifferences:
    """Forward differences along q_b of the mass matrix M and of its rate Mdot, read in the
    torque rows of the engine's Jacobians (M = d tau / dq'', Mdot = d tau' / dq'' -
    d tau / dq'), contracted with the torque multipliers lambda_g = sum_i P_i^T lambda_i of
    each group g of :meth:`MotionProblem._identity_groups`: E_g = sum_b lambda_gb d_b M
    and U = sum_b lambda_1b d_b Mdot (:meth:`MotionProblem._curvature`)."""

    def __init__(self, problem, terms, part, lambdas, engine):
        N, nv = len(problem.quadrature.weights), problem.model.nv
        self.lam = np.zeros((2, N, nv))
        for term, group, lam in zip(terms, part, lambdas):
            if term.kind == "torque":       # P_i^T: every joint (a slice) or the kept ones
                joints = slice(None) if term.joints == tuple(range(nv)) else list(term.joints)
                self.lam[group][:, joints] += lam
        self.rate = 1 in part.tolist()
        self.torques = any(term.kind == "torque" for term in terms)
        self.E, self.U = np.zeros((2, N, nv, nv)), np.zeros((N, nv, nv))
        self.J = engine["joint_torque"] if self.torques else None

    def add(self, engine, first, steps):
        """Add the differences of the directions q_b, b = first, first + 1, ..., whose
        perturbed samples (steps (N, O, nv)) follow each other in the engine's Jacobians
        ``engine``."""
        if self.torques:
            _add_mass_differences(self.J, engine["joint_torque"], self.lam, steps, first,
                                  self.rate, self.E, self.U)


@jit_kernel
def _perturbed_stacks(stack, steps, first, perturbed):
    """perturbed[e] = the stack (N, Kd, nv) with q^(o)_j moved by steps[:, o, j], (o, j) =
    divmod(first + e, nv): the samples of the differences of :meth:`MotionProblem._curvature`,
    direction after direction."""
    N, Kd, nv = stack.shape
    for e in range(perturbed.shape[0]):
        o, j = divmod(first + e, nv)
        for m in range(N):
            for t in range(Kd):
                for k in range(nv):
                    perturbed[e, m, t, k] = stack[m, t, k]
            perturbed[e, m, o, j] += steps[m, o, j]


@jit_kernel
def _add_vjps(lam, Jy, first, out):
    """out[m, o, j, :P] += lam_m^T Jy[e N + m], (o, j) = divmod(first + e, nv), for lam (N,
    d), Jy (B N, d, P) of any strides and out (N, O, nv, P' >= P): the vector-Jacobian
    products of a term at the B perturbed samples of the directions first, first + 1, ...
    (at the stack itself: B = 1, out (N, 1, 1, P')), added to those of its group's other
    terms (:meth:`MotionProblem._curvature`; P: the stack entries up to the term's top
    order, where its Jacobian may be nonzero). Each product is summed over d from +0
    (numpy's order without BLAS), four entries p at a time (four sums in flight: the rows
    of the link terms, 42 of 14 or 21 entries on bench_peers' link case, are read down
    their columns; d unsigned, ``index_range``), then added to ``out``. Measured
    2026-12-04 against numpy's matmul (one BLAS call per sample), 200 samples: 3 x 9
    torque Jacobians, 3 directions at once, 18-19 -> 7.5 us; 42 x 21 and 42 x 14 link
    Jacobians, one direction, 36-39 -> 43 and 27-28 -> 26 us (numpy's over 21 entries for
    both: 72-78 -> 69 us). The rounding differs from BLAS's (its order of the sums over
    d): bench_peers' cases b and link end with other last bits, same iterations and costs
    (to 2e-16 relative)."""
    N, nv, D, P = lam.shape[0], out.shape[2], Jy.shape[1], Jy.shape[2]
    for e in range(Jy.shape[0] // N):
        o, j = divmod(first + e, nv)
        for m in range(N):
            g, r = out[m, o, j], e * N + m
            for p in range(0, P - P % 4, 4):
                s0 = s1 = s2 = s3 = 0.0
                for d in index_range(0, D):
                    x = lam[m, d]
                    s0 += x * Jy[r, d, p]
                    s1 += x * Jy[r, d, p + 1]
                    s2 += x * Jy[r, d, p + 2]
                    s3 += x * Jy[r, d, p + 3]
                g[p] += s0
                g[p + 1] += s1
                g[p + 2] += s2
                g[p + 3] += s3
            for p in range(P - P % 4, P):
                s0 = 0.0
                for d in index_range(0, D):
                    s0 += lam[m, d] * Jy[r, d, p]
                g[p] += s0


@jit_kernel
def _add_mass_differences(J, moved, lam, steps, first, rate, E, U):
    """E[g, m] += sum_b lam[g, m, b] (M_m(q + h e_b) - M_m(q)) / h (g = 1, the torque
    rates' multipliers, only with ``rate``: without, they are zero and E[1] is not read)
    and, with ``rate``, U[m] += sum_b lam[1, m, b] (Mdot_m(q + h e_b) - Mdot_m(q)) / h,
    h = steps[m, 0, b], over the directions b = first + e of the perturbed samples e N + m
    of ``moved``; M = J[:, 0, :, 2], Mdot = J[:, 1, :, 2] - J[:, 0, :, 1] in the torque
    Jacobians J (N, k+1, nv, K, nv) (:class:`_MassDifferences`)."""
    N, nv = lam.shape[1], lam.shape[2]
    for e in range(moved.shape[0] // N):
        b = first + e
        for m in range(N):
            inverse, r = 1.0 / steps[m, 0, b], e * N + m
            for i in range(nv):
                for k in range(nv):
                    dM = (moved[r, 0, i, 2, k] - J[m, 0, i, 2, k]) * inverse
                    E[0, m, i, k] += lam[0, m, b] * dM
                    if rate:
                        E[1, m, i, k] += lam[1, m, b] * dM
                        dMdot = ((moved[r, 1, i, 2, k] - moved[r, 0, i, 1, k])
                                 - (J[m, 1, i, 2, k] - J[m, 0, i, 1, k])) * inverse
                        U[m, i, k] += lam[1, m, b] * dMdot


_NO_MASS_DIFFERENCES = np.zeros((1, 1, 1, 1)), np.zeros((1, 1, 1))
"""The E and U of :func:`_curvature_of_columns` where the identities are not used."""


@jit_kernel
def _curvature_of_columns(columns, bases, steps, n_directions, identities, rate, E, U, S):
    """S (N, Kd, Kd, nv, nv) of :meth:`MotionProblem._curvature` from its columns C (groups,
    N, O, nv, Kd, nv), holding the summed vector-Jacobian products at the perturbed
    samples of the first n_directions directions (:func:`_add_vjps`), and those at the
    stack, bases (groups, N, Kd, nv): sample by sample, the differences
    (:func:`_differenced_sample`), with ``identities`` the other blocks of the q' columns
    (:func:`_identity_sample`, E and U those of :class:`_MassDifferences`), then S
    (:func:`_symmetrized_sample`). C is overwritten."""
    for m in range(columns.shape[1]):
        _differenced_sample(columns, bases, steps, n_directions, m)
        if identities:
            _identity_sample(columns, E, U, rate, m)
        _symmetrized_sample(columns, m, S)


@jit_leaf
def _differenced_sample(columns, bases, steps, n_directions, m):
    """C[g, m, o, j] = (C[g, m, o, j] - bases[g, m]) / h, h = steps[m, o, j], (o, j) =
    divmod(b, nv) for b < n_directions: the forward differences of the groups'
    vector-Jacobian products at sample m, in place (:func:`_curvature_of_columns`)."""
    nv, Kd = columns.shape[3], columns.shape[4]
    for g in range(columns.shape[0]):
        for b in range(n_directions):
            o, j = divmod(b, nv)
            h = steps[m, o, j]
            for t in range(Kd):
                for k in range(nv):
                    columns[g, m, o, j, t, k] = (columns[g, m, o, j, t, k]
                                                 - bases[g, m, t, k]) / h


@jit_leaf
def _identity_sample(columns, E, U, rate, m):
    """The (q', q') and (q'', q') blocks of :meth:`MotionProblem._curvature`'s identities at
    sample m, in place, from its differenced q columns C (groups, N, 2, nv, Kd, nv), C[g,
    m, o, j, t, k] = S_g[m, t, o, k, j], and the mass matrix differences E, U
    (:class:`_MassDifferences`): X + X^T - E_0 (X the (q'', q) block of group 0) and, with
    ``rate`` (a group 1), Z + Z^T - U and 2 D + D^T - E_1 (Z, D the (q'', q) and (q''', q)
    blocks of group 1); the (q, q') blocks are the transposes of the (q', q) ones."""
    nv = columns.shape[3]
    X = columns[0, m, 0]                                   # [j, t, k] = S[t, 0, k, j]
    for k in range(nv):
        for j in range(nv):
            columns[0, m, 1, j, 1, k] = X[j, 2, k] + X[k, 2, j] - E[0, m, k, j]
    if rate:
        Z = columns[1, m, 0]
        for k in range(nv):
            for j in range(nv):
                columns[1, m, 1, j, 1, k] = Z[j, 2, k] + Z[k, 2, j] - U[m, k, j]
                columns[1, m, 1, j, 2, k] = 2 * Z[j, 3, k] + Z[k, 3, j] - E[1, m, k, j]
    for g in range(columns.shape[0]):
        for k in range(nv):
            for j in range(nv):
                columns[g, m, 1, j, 0, k] = columns[g, m, 0, k, 1, j]


@jit_leaf
def _symmetrized_sample(columns, m, S):
    """S[m] (Kd, Kd, nv, nv) from the differenced columns C (groups, N, O, nv, Kd, nv) of
    :meth:`MotionProblem._curvature`, summed over the groups in order into C[0, m] (c[o, j,
    t, k]): S[t, o] = (c[t, o] + c[o, t]^T) / 2 where both orders are below O, S[t, o] =
    c[t, o] and S[o, t] = c[t, o]^T for o < O <= t, zero for both >= O. The first is
    symmetric to the bit (a + b = b + a): computed for (t, k) <= (o, j) and written to both
    entries."""
    O, nv, Kd = columns.shape[2], columns.shape[3], columns.shape[4]
    c, out = columns[0, m], S[m]
    for g in range(1, columns.shape[0]):
        other = columns[g, m]
        for o in range(O):
            for j in range(nv):
                for t in range(Kd):
                    for k in range(nv):
                        c[o, j, t, k] += other[o, j, t, k]
    for t in range(O):
        for o in range(t, O):
            A, B = c[o], c[t]                       # A[j, t, k], B[k, o, j]
            for k in range(nv):
                for j in range(k if o == t else 0, nv):
                    out[t, o, k, j] = out[o, t, j, k] = 0.5 * (A[j, t, k] + B[k, o, j])
    for t in range(O, Kd):
        for o in range(O):
            A = c[o]
            for k in range(nv):
                for j in range(nv):
                    out[t, o, k, j] = out[o, t, j, k] = A[j, t, k]
        for o in range(O, Kd):
            for k in range(nv):
                for j in range(nv):
                    out[t, o, k, j] = 0.0


@jit_kernel
def _add_gauss_newton(scale, Jy, row, W):
    """W[m, p, q] += sum_d scale_m (Jy[m, d, p] Jy[m, d, q]): one term's w_i omega_m Jy_m^T
    Jy_m, Jy (N, d, Kt nv) of any strides (flattened stack entries p = s nv + a, Kt <= Kd),
    each of its rows copied to the work array ``row`` (Kt nv,) and read from there, W (N,
    Kd nv, Kd nv), symmetric to the bit (each product taken in both orders is the same).
    The entries p of a row where Jy[m, d, p] = 0 are skipped: their products are zeros
    (finite Jacobians), which leave an entry of W unchanged, an entry being never -0 (a sum
    from +0 is -0 only if every term is). A link Jacobian is about half zeros (a link moves
    with the joints before it only): measured 2026-12-04, bench_peers' link case (the
    Panda, two link terms of 42 rows), 1.36 -> 0.78 ms a call, case (c) 45 -> 44 us."""
    n = row.size
    for m in range(Jy.shape[0]):
        for d in range(Jy.shape[1]):
            for p in range(n):
                row[p] = Jy[m, d, p]
            for p in range(n):
                x, out = row[p], W[m, p]
                if x != 0.0:
                    for q in range(n):
                        out[q] += scale[m] * (x * row[q])


@jit_kernel
def _joint_terms(q_stack, omega, terms, orders, joints, counts, gradients, stack_grads,
                 squares):
    """squares[t, m] = |y_m|^2 of the joint term t, y = q^(r) of its joints (r = orders[t],
    joints[t, :counts[t]]), summed from +0 in the order of its joints: numpy.einsum's
    "md,md->m" on the stack entries that ``q_stack[:, r, joints]`` selects, the same bits
    (its column-major copy is summed column by column); and if ``gradients``, its stack
    gradient omega_m y_m written to stack_grads[m, r, terms[t], j] (numpy's
    ``omega[:, None] * y`` entry by entry): :meth:`MotionProblem._joint_costs`, in one
    compiled call instead of a few numpy ones per term."""
    for t in range(terms.size):
        r, i = orders[t], terms[t]
        for m in range(q_stack.shape[0]):
            total = 0.0
            for c in range(counts[t]):
                y = q_stack[m, r, joints[t, c]]
                total += y * y
                if gradients:
                    stack_grads[m, r, i, joints[t, c]] = omega[m] * y
            squares[t, m] = total


@jit_kernel
def _signed_limit_products(node, joint, sign, first, basis, x, x_lo, first_row, bound, q,
                           out):
    """out[k] = sign_k q[node[k], joint[k]] (:meth:`MotionProblem.signed_limits_of`), or
    bound[k] - sign_k q[node[k], joint[k]] where ``bound`` is not empty (the slacks of
    :meth:`MotionProblem.limit_slacks`), q[c, j] = sum_a basis[c, a] x[first_c + a -
    first_row, j] the positions at the limit nodes c (work array (n_nodes, nv)) over the a
    whose control point is a row of x, summed from +0 in the order of a, x rounded from
    x + x_lo where x_lo is not empty (a DD's ``value()``): scipy's product with the CSR
    rows sign_k basis[c, a] (stored in that order) bit for bit but for the sign of a zero
    (a product sign_k (basis x) is exact, a sum of negated terms the negated sum, and a
    zero term leaves a sum unchanged). Unsigned indices (``index_range``) spare the loads
    the checks of negative ones: 4.5 -> 3.5 us on bench_peers' case (b), scipy's product
    5.1 us."""
    n_local = basis.shape[1]
    with_lo, with_bound = x_lo.size > 0, bound.size > 0
    for c in range(first.size):
        start = first[c] - first_row
        begin, end = max(0, -start), min(n_local, x.shape[0] - start)
        for j in index_range(0, x.shape[1]):
            total = 0.0
            for a in index_range(begin, end):
                row = np.uint64(start + a)
                total += basis[c, a] * (x[row, j] + x_lo[row, j] if with_lo else x[row, j])
            q[c, j] = total
    for k in range(out.size):
        signed = sign[k] * q[node[k], joint[k]]
        out[k] = bound[k] - signed if with_bound else signed


def _term_cost(omega, y):
    """c = 1/2 sum_m omega_m |y_m|^2 of one term's values y (N, d), as a float (the same
    sums in :meth:`MotionProblem.cost` and :meth:`MotionProblem.evaluate`, so that a line
    search compares like with like)."""
    return 0.5 * float(omega @ np.einsum("md,md->m", y, y))


def _stack_gradient(omega, y, Jy):
    """omega_m Jy_m^T y_m (N, K, nv): the gradient of 1/2 sum_m omega_m |y_m|^2 with respect to
    the stack at each node (Jy (N, d, K, nv); a joint term's, whose Jy selects stack
    entries, is written by :func:`_joint_terms`)."""
    return _vjp(omega[:, None] * y, Jy)


def _vjp(lam, Jy):
    """lam_m^T Jy_m (..., N, K, nv) for lam (N, d) and Jy (..., N, d, K, nv)."""
    flat = np.matmul(lam[:, None, :], Jy.reshape(Jy.shape[:-2] + (-1,)))
    return flat.reshape(Jy.shape[:-3] + Jy.shape[-2:])


def _flat(A):
    """A (..., K, nv) as (..., K nv): the stack entries of one node flattened, s nv + j."""
    return A.reshape(A.shape[:-2] + (-1,))


class _Deferred:
    """A value computed on first use: ``function(*args)``."""

    def __init__(self, function, *args):
        self._call = (function, args)

    def get(self):
        if self._call is not None:
            function, args = self._call
            self._value, self._call = function(*args), None
        return self._value


def check_problem(problem):
    """Raise ValueError unless ``problem`` is a MotionProblem."""
    if not isinstance(problem, MotionProblem):
        raise ValueError(f"problem: expected an ioc.MotionProblem, got "
                         f"{type(problem).__name__}")


def check_theta(problem, theta, name="theta"):
    """Control points of ``problem`` as a DD: a DD or an array (n_c, nv), real and finite;
    ValueError otherwise."""
    shape = (problem.spline.n_control, problem.model.nv)
    if isinstance(theta, DD):
        hi, lo = (cmtm.api.as_float_array(name, part) for part in theta)
    else:
        hi = cmtm.api.as_float_array(name, theta)
        lo = np.zeros_like(hi)
    if hi.shape != shape or lo.shape != shape:
        raise ValueError(f"{name}: expected control points of shape {shape} (n_control, nv), "
                         f"got {hi.shape}")
    if np.max(np.abs(hi)) > POSITION_BOUND:
        raise ValueError(f"{name}: expected control points within +-{POSITION_BOUND:g} rad or "
                         f"m, got {np.max(np.abs(hi)):g}")
    return DD(hi, lo)


def _add_dense_to_band(band, dense, u):
    """band += upper band of the symmetric matrix ``dense``."""
    n = dense.shape[0]
    for d in range(u + 1):
        idx = np.arange(d, n)
        band[u - d, idx] += dense[idx - d, idx]


@dataclass
class Evaluation:
    """Everything :meth:`MotionProblem.evaluate` computes at one iterate.

    costs (n_terms,) raw sub-costs; grads (n_terms, n_c, nv) their gradients; gradient
    (n_c, nv) the weighted total with penalties; cost the weighted total; q_stack
    (N, K, nv); gross_gradient (n_c, nv) sum_i w_i sum_m |B_m|^T |gs_im|, the size of what
    the gradient sums (its rounding scale). ``band`` is the Hessian asked for (``hessian``:
    upper band storage over all control points) or None, ``gauss_newton_band`` the
    Gauss-Newton one (the same array unless Newton was asked) and ``curvature`` the stack
    second-order part in it (MotionProblem._curvature); all computed on first use (a line
    search evaluates iterates it may reject) from ``inputs``. exact_hessian: ``band`` is the
    Newton Hessian (asked for, or Gauss-Newton's where every term is a joint term).
    """
    costs: np.ndarray
    grads: np.ndarray
    gradient: np.ndarray
    cost: float
    q_stack: np.ndarray
    gross_gradient: np.ndarray
    hessian: str = None
    exact_hessian: bool = False
    inputs: tuple = None
    _hessians: tuple = None
    _curvature: object = None

    def _built(self):
        if self._hessians is None:
            problem, theta, values, weights = self.inputs
            self._hessians = problem._hessians(self.hessian, theta, self.q_stack, values,
                                               weights, self._curvature)
        return self._hessians

    @property
    def band(self):
        return None if self.hessian is None else self._built()[0]

    @property
    def gauss_newton_band(self):
        if self.hessian is None:
            return None
        gauss_newton = self._built()[1]
        return gauss_newton.get() if isinstance(gauss_newton, _Deferred) else gauss_newton

    @property
    def curvature(self):
        return None if self.hessian is None else self._built()[2]

    def reuse_curvature(self, other):
        """Build the Newton Hessian with ``other``'s second-order part instead of new
        differences (an iterate close to other's, where the steps converge fast: the
        difference sets the rate, as an inexact Hessian does, not the optimum); the band
        is then no longer exact (:meth:`exact`)."""
        if self._hessians is None and self.hessian == "newton":
            self._curvature = other.curvature
            self.exact_hessian = False

    def exact(self):
        """This evaluation with the exact Newton Hessian (itself if it has it; else the same
        values and gradients, the Hessian built anew on first use)."""
        if self.exact_hessian:
            return self
        return replace(self, hessian="newton", exact_hessian=True, _hessians=None,
                       _curvature=None)
