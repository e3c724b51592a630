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
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from numbers import Integral, Real

import numba
import numpy as np
import scipy.sparse as sp

import cmtm
from cmtm.api import check_model, reserve
from ioc.banded import BandLayout, chain_gradient, chain_hessian_blocks
from ioc.bspline import DD, ClampedBSpline, check_int, dd_add
from ioc.choices import BOUNDARY_MODES, CONSTRAINT_MODES, INTEGRATION_RULES
from ioc.costs import (JACOBIAN_SOURCES, engine_bytes, parse_terms, stack_orders,
                       term_values)

POSITION_BOUND = 1e6
"""Joint positions (start, goal, control points) are refused beyond +-1e6 rad or m: far
beyond any motion, and squares of their spline derivatives would overflow float64."""
DURATION_RANGE = (1e-3, 1e6)
"""Accepted motion durations T, s (1 ms to 11.6 days): a spline's r-th derivatives scale
like T^-r, and far outside this range float64 overflows in the knot and derivative
arithmetic."""
FD_STACK_STEP = 1.5e-8
"""Relative step of the forward differences of stack gradients (Newton Hessian): about
eps**(1/2), balancing truncation and round-off."""


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
    costs : names of the sub-costs (ioc.costs), comma-separated string or sequence
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
        self.limit_times = np.linspace(0.0, self.spline.duration, self.samples)
        self.layout = BandLayout(self.spline.n_control, p, nv)
        fixed = self.rest_order + 1 if constraints == "exact" else 0
        self.free_rows = (fixed, self.spline.n_control - fixed)
        self.n_free = n_free_min * nv
        self._limit_matrix = self._limit_rows()

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
        for name, value in (("start", self.boundary_stacks()[0][0]),
                            ("goal", self.boundary_stacks()[1][0])):
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
        p, n_c = self.spline.degree, self.spline.n_control
        u = self.spline.knots
        greville = np.array([u[i + 1:i + p + 1].mean() for i in range(n_c)]) / self.spline.duration
        s = greville ** 3 * (10 - 15 * greville + 6 * greville ** 2)
        (start, goal), (first_rows, last_rows) = \
            (stack[0] for stack in self.boundary_stacks()), self._end_rows
        theta = np.clip(start + s[:, None] * (goal - start), self.lower, self.upper)
        theta[:self.rest_order + 1] = first_rows
        theta[n_c - self.rest_order - 1:] = last_rows
        return DD.of(theta)

    def with_free_step(self, theta, step):
        """theta + step on the free rows (step: (n_free,) float64), in double-double."""
        full = np.zeros(self.spline.n_control * self.model.nv)
        full[self.free_slice] = step
        return dd_add(theta, full.reshape(theta.hi.shape))

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

    def limit_matrix_free(self):
        """d q(t_c) / d x over the free variables: sparse (n_nodes * nv, n_free)."""
        return self._limit_matrix[:, self.free_slice]

    # --- cost evaluation ---

    def stack(self, theta):
        """Raw stacks q, ..., q^(K-1) at the quadrature nodes, (N, K, nv)."""
        return self.spline.evaluate(theta, self.quadrature.times, self.K - 1)

    def cost(self, theta, weights):
        """The weighted cost alone (no Jacobian pass): line searches."""
        weights = np.asarray(weights, dtype=float)
        values = term_values(self.model, self.terms, self.stack(theta), jacobians=False)
        omega = self.quadrature.weights
        cost = sum(w * 0.5 * np.sum(omega * np.sum(y * y, axis=1))
                   for w, (y, _) in zip(weights, values))
        if self.constraints == "penalty":
            cost += self._add_penalties(theta, weights, None, [])
        return float(cost)

    def evaluate(self, theta, weights, hessian=None):
        """Costs, gradients and optionally the Hessian at ``theta``.

        hessian : None, "gauss_newton" (sum_m omega_m Jy^T Jy, cmtm_math §10) or
            "newton" (exact up to forward differences of the link and torque terms' stack
            gradients, all samples perturbed at once since samples are independent).
        Returns an :class:`Evaluation`; its ``band`` covers all control points.
        """
        weights = np.asarray(weights, dtype=float)
        q_stack = self.stack(theta)
        values = term_values(self.model, self.terms, q_stack, source=self.jacobians)
        omega = self.quadrature.weights
        costs = np.array([0.5 * np.sum(omega * np.sum(y * y, axis=1)) for y, _ in values])
        stack_grads = [np.einsum("m,mdsj,md->msj", omega, Jy, y) for y, Jy in values]
        n_c = self.spline.n_control
        grads = np.array([chain_gradient(self.first, self.basis, g, n_c) for g in stack_grads])
        gradient = np.tensordot(weights, grads, axes=1)
        gross = sum(w * chain_gradient(self.first, np.abs(self.basis), np.abs(g), n_c)
                    for w, g in zip(weights, stack_grads))
        bands = []
        if hessian is not None:
            for G in self._stack_hessians(q_stack, values, stack_grads, weights,
                                          hessian == "newton"):
                if G is not None:
                    bands.append(self.layout.assemble(self.first,
                                                      chain_hessian_blocks(self.basis, G)))
        penalty_cost = 0.0
        if self.constraints == "penalty":
            penalty_cost = self._add_penalties(theta, weights, gradient, bands)
        return Evaluation(costs=costs, grads=grads, gradient=gradient,
                          cost=float(weights @ costs) + penalty_cost,
                          band=bands[-1] if bands else None,
                          gauss_newton_band=bands[0] if bands else None, q_stack=q_stack,
                          gross_gradient=gross)

    def _stack_hessians(self, q_stack, values, stack_grads, weights, newton):
        """Gauss-Newton stack Hessians sum_i w_i omega_m Jy^T Jy, (N, K, nv, K, nv), and with
        ``newton`` also the Newton one, where the link and torque terms' part is replaced
        by central differences of their stack gradients (None otherwise)."""
        N, K, nv = q_stack.shape
        omega = self.quadrature.weights
        dynamic = [i for i, t in enumerate(self.terms) if t.kind != "joint"]
        G_joint, G_dynamic = np.zeros((N, K * nv, K * nv)), np.zeros((N, K * nv, K * nv))
        for i, (y, Jy) in enumerate(values):
            J2 = Jy.reshape(N, Jy.shape[1], K * nv)
            target = G_dynamic if i in dynamic else G_joint
            target += weights[i] * np.einsum("m,mda,mdb->mab", omega, J2, J2)
        shape = (N, K, nv, K, nv)
        gauss_newton = (G_joint + G_dynamic).reshape(shape)
        if not (newton and dynamic):
            return gauss_newton, None
        base = sum(weights[i] * stack_grads[i].reshape(N, K * nv) for i in dynamic)
        fd = self._fd_stack_hessian(q_stack, [self.terms[i] for i in dynamic],
                                    weights[dynamic], base)
        return gauss_newton, (G_joint + fd).reshape(shape)

    def _fd_stack_hessian(self, q_stack, terms, weights, base):
        """Forward differences of sum_i w_i omega_m Jy_i^T y_i (``base`` (N, K nv) at
        q_stack) over each stack entry, all samples at once (samples are independent),
        the K nv perturbations on a thread pool (the engine's kernels release the GIL).
        Step sqrt(eps) * scale: the Hessian is right to ~1e-8 relative, which is all the
        Newton polish needs (its accuracy sets the convergence rate, not the optimum)."""
        N, K, nv = q_stack.shape
        omega = self.quadrature.weights
        top = 1 + max(t.top_order for t in terms)

        def column(entry):
            numba.set_num_threads(1)   # per pool thread: the pool already uses every core
            s, j = divmod(entry, nv)
            h = FD_STACK_STEP * max(1.0, float(np.max(np.abs(q_stack[:, s, j]))))
            plus = q_stack.copy()
            plus[:, s, j] += h
            total = np.zeros((N, K * nv))
            for w, (y, Jy) in zip(weights, term_values(self.model, terms, plus,
                                                       source=self.jacobians)):
                total += w * np.einsum("m,mda,md->ma", omega,
                                       Jy.reshape(N, Jy.shape[1], K * nv), y)
            return (total - base) / h

        H = np.zeros((N, K * nv, K * nv))
        with ThreadPoolExecutor(max_workers=min(os.cpu_count() or 1, top * nv)) as pool:
            for entry, col in enumerate(pool.map(column, range(top * nv))):
                H[:, :, entry] = col
        return 0.5 * (H + H.transpose(0, 2, 1))

    def _add_penalties(self, theta, weights, gradient, bands):
        """Penalty terms of ``constraints="penalty"`` (boundary conditions; limit violations)
        added to the gradient and every band in place; returns their cost."""
        rho = self.penalty * float(np.sum(weights))
        R, nv = self.rest_order, self.model.nv
        ends = np.array([0.0, self.spline.duration])
        first, values = self.spline.local_basis(ends, R)
        stack = self.spline.evaluate(theta, ends, R)
        residual = stack - np.array(self.boundary_stacks())
        cost = 0.5 * rho * float(np.sum(residual ** 2))
        if gradient is not None:
            gradient += chain_gradient(first, values, rho * residual, self.spline.n_control)
        G = np.zeros((2, R + 1, nv, R + 1, nv))
        for r in range(R + 1):
            G[:, r, np.arange(nv), r, np.arange(nv)] = rho
        for band in bands:
            self.layout.assemble(first, chain_hessian_blocks(values, G), out=band)
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
    (n_c, nv) the weighted total with penalties; cost the weighted total; band the Hessian
    asked for and gauss_newton_band the Gauss-Newton one (upper band storage over all
    control points; the same array unless Newton was asked) or None; q_stack (N, K, nv);
    gross_gradient (n_c, nv) sum_i w_i sum_m |B_m|^T |gs_im|, the size of what the gradient
    sums (its rounding scale).
    """
    costs: np.ndarray
    grads: np.ndarray
    gradient: np.ndarray
    cost: float
    band: object
    gauss_newton_band: object
    q_stack: np.ndarray
    gross_gradient: np.ndarray
