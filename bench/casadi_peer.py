"""The motion problems of ``ioc.optimize.problem.MotionProblem`` rebuilt in CasADi and solved
by IPOPT (a module for ``bench_peers.py``, not a benchmark).

What a researcher would write instead of ``cmtm optimize``: the joint torques by the classical
body-frame recursive Newton-Euler algorithm and the link twists by its forward loop, written
with CasADi's symbolic scalars (SX) from the model's arrays (no code shared with the engine);
their time derivatives by forward directional derivatives along the stack (y' = dy/ds s',
``casadi.jtimes``); the spline stacks at the quadrature nodes as the problem's own design
matrices times the control points; the per-sample cost sum_i w_i 1/2 |y_i|^2 as one SX function
mapped over the samples (``Function.map``) inside an MX graph; the joint limits at the limit
nodes as linear constraints; IPOPT with exact Hessians (CasADi's automatic differentiation).

``PeerProblem(problem, weights)`` builds it (``expand``: CasADi's SX graph, else MX;
``limits``: with the joint limits as constraints); ``.solve(x0)`` runs IPOPT from the free
control points x0 and returns the free control points, the cost, IPOPT's iteration count
and status; ``.stack_values(q_stack)`` and ``.torques(q_stack)`` evaluate the per-sample
outputs for the check against the engine.
"""
import time

import casadi as ca
import numpy as np
from scipy import sparse

from kinematic_trees import JOINT_REVOLUTE


# --- spatial algebra on CasADi vectors (angular first, cmtm_math.md §1.1) ---

def skew(w):
    return ca.vertcat(ca.horzcat(0, -w[2], w[1]), ca.horzcat(w[2], 0, -w[0]),
                      ca.horzcat(-w[1], w[0], 0))


def rotation(axis, angle):
    """exp(angle [axis x]) by Rodrigues' formula (unit axis)."""
    K = ca.DM(skew(ca.DM(axis)))
    return ca.DM.eye(3) + ca.sin(angle) * K + (1 - ca.cos(angle)) * (K @ K)


def transform_up(R, p, x):
    """A^-1 x: a parent-frame twist x = [w; v] in the child frame at pose (R, p)."""
    w, v = x[:3], x[3:]
    return ca.vertcat(R.T @ w, R.T @ (v - ca.cross(p, w)))


def force_to_parent(R, p, f):
    """A^-T f: a child-frame wrench f = [n; f] in the parent frame."""
    n, force = R @ f[:3], R @ f[3:]
    return ca.vertcat(n + ca.cross(p, force), force)


def motion_cross(u, x):
    return ca.vertcat(ca.cross(u[:3], x[:3]), ca.cross(u[3:], x[:3]) + ca.cross(u[:3], x[3:]))


def force_cross(u, h):
    return ca.vertcat(ca.cross(u[:3], h[:3]) + ca.cross(u[3:], h[3:]), ca.cross(u[:3], h[3:]))


def spatial_inertia(mass, com, inertia_com):
    """6x6 spatial inertia about the link origin, angular first."""
    C = np.array([[0, -com[2], com[1]], [com[2], 0, -com[0]], [-com[1], com[0], 0]])
    return ca.DM(np.block([[inertia_com + mass * C @ C.T, mass * C],
                           [mass * C.T, mass * np.eye(3)]]))


# --- the recursive Newton-Euler algorithm (body frames) ---

def joint_pose(model, i, q_i):
    R0, p0, axis = model.placement_R[i], model.placement_p[i], model.axis[i]
    if model.joint_type[i] == JOINT_REVOLUTE:
        return ca.DM(R0) @ rotation(axis, q_i), ca.DM(p0)
    return ca.DM(R0), ca.DM(p0) + ca.DM(R0 @ axis) * q_i


def screw(model, i):
    zero = np.zeros(3)
    a = model.axis[i]
    return ca.DM(np.concatenate([a, zero] if model.joint_type[i] == JOINT_REVOLUTE
                                else [zero, a]))


def forward_loop(model, q, qd, qdd, base_acceleration):
    """Poses, screws, link twists and accelerations (body frames)."""
    poses, S, v, a = [], [], [], []
    for i in range(model.nv):
        poses.append(joint_pose(model, i, q[i]))
        S.append(screw(model, i))
        parent = model.parent[i]
        v_p = ca.DM.zeros(6) if parent < 0 else v[parent]
        a_p = base_acceleration if parent < 0 else a[parent]
        v_J = S[i] * qd[i]
        v.append(transform_up(*poses[i], v_p) + v_J)
        a.append(transform_up(*poses[i], a_p) + S[i] * qdd[i] + motion_cross(v[i], v_J))
    return poses, S, v, a


def torques(model, q, qd, qdd):
    """tau = M(q) qdd + C(q, qd) qd + g(q) by the RNEA, gravity as the base acceleration."""
    base = ca.DM(np.concatenate([np.zeros(3), -np.asarray(model.gravity)]))
    poses, S, v, a = forward_loop(model, q, qd, qdd, base)
    f = []
    for i in range(model.nv):
        I = spatial_inertia(model.mass[i], model.com[i], model.inertia_com[i])
        f.append(I @ a[i] + force_cross(v[i], I @ v[i]))
    for i in reversed(range(model.nv)):
        if model.parent[i] >= 0:
            f[model.parent[i]] = f[model.parent[i]] + force_to_parent(*poses[i], f[i])
    return ca.vertcat(*[ca.dot(S[i], f[i]) for i in range(model.nv)])


def link_twists(model, q, qd):
    """Body twists of the links (gravity-free), stacked (6 nv,)."""
    zero = ca.SX.zeros(model.nv)
    return ca.vertcat(*forward_loop(model, q, qd, zero, ca.DM.zeros(6))[2])


# --- the problem ---

def term_outputs(model, terms, stack):
    """y_i for every term as SX of the stack symbols q^(0..K-1) (each (nv,)); the r-th time
    derivative of a quantity by r forward directional derivatives along the stack."""
    K = len(stack)
    base = {"joint": lambda: stack[0],
            "link": lambda: link_twists(model, stack[0], stack[1]),
            "torque": lambda: torques(model, stack[0], stack[1], stack[2])}
    cache = {}

    def derivative(kind, r):
        if (kind, r) not in cache:
            if kind == "joint":
                cache[kind, r] = stack[r]
            elif r == 0:
                cache[kind, r] = base[kind]()
            else:
                lower = derivative(kind, r - 1)
                cache[kind, r] = ca.jtimes(lower, ca.vertcat(*stack[:K - 1]),
                                           ca.vertcat(*stack[1:]))
        return cache[kind, r]

    outputs = []
    for term in terms:
        y = derivative(term.kind, term.derivative)
        if term.kind == "link":
            y = ca.vertcat(*[y[6 * l:6 * l + 6] for l in term.links])
        outputs.append(y)
    return outputs


class PeerProblem:
    """``problem`` (an ioc.MotionProblem with exact boundary constraints) for ``weights``
    in CasADi + IPOPT (tolerance ``tol``); ``build_seconds`` is the graph and solver
    construction time."""

    def __init__(self, problem, weights, tol=1e-10, max_iter=3000, expand=True, limits=True):
        started = time.perf_counter()
        if problem.constraints != "exact":
            raise ValueError("PeerProblem: expected constraints='exact'")
        self.problem, self.weights = problem, np.asarray(weights, dtype=float)
        model, spline, nv = problem.model, problem.spline, problem.model.nv
        K = problem.K
        stack = [ca.SX.sym(f"q{r}", nv) for r in range(K)]
        outputs = term_outputs(model, problem.terms, stack)
        self.outputs = ca.Function("outputs", stack, outputs)
        sample_cost = sum(w * 0.5 * ca.sumsqr(y) for w, y in zip(self.weights, outputs))
        per_sample = ca.Function("sample_cost", stack, [sample_cost])
        N = len(problem.quadrature.times)
        mapped = per_sample.map(N)
        a, b = problem.free_rows
        self.n_rows = b - a
        x = ca.MX.sym("x", self.n_rows * nv)
        theta0 = problem.initial_theta().value()
        theta = ca.vertcat(ca.DM(theta0[:a]), ca.reshape(x, nv, self.n_rows).T,
                           ca.DM(theta0[b:]))
        times = problem.quadrature.times
        columns = [ca.DM(sparse.csc_matrix(spline.design_matrix(times, r)))
                   for r in range(K)]
        per_node = mapped(*[(D @ theta).T for D in columns])
        cost = per_node @ ca.DM(problem.quadrature.weights)
        constraints, self.lbg, self.ubg = self._limits(theta) if limits else \
            (ca.MX(0, 1), np.zeros(0), np.zeros(0))
        options = {"print_time": False, "ipopt.print_level": 0, "ipopt.tol": tol,
                   "ipopt.max_iter": max_iter, "ipopt.hessian_approximation": "exact",
                   "ipopt.sb": "yes", "expand": expand}
        self.solver = ca.nlpsol("peer", "ipopt", {"x": x, "f": cost, "g": constraints},
                                options)
        self.build_seconds = time.perf_counter() - started

    def _limits(self, theta):
        """(q(t_c) at the limit nodes with a finite bound, lower, upper): linear in theta."""
        problem = self.problem
        nodes = ca.DM(sparse.csc_matrix(problem.spline.design_matrix(problem.limit_times, 0)))
        positions = ca.reshape((nodes @ theta).T, -1, 1)    # node-major, joints fastest
        n_nodes = len(problem.limit_times)
        lower, upper = np.tile(problem.lower, n_nodes), np.tile(problem.upper, n_nodes)
        finite = np.flatnonzero(np.isfinite(lower) | np.isfinite(upper))
        return positions[finite.tolist()], lower[finite], upper[finite]

    def torques(self, q_stack):
        """Joint torques (N, nv) of the peer's RNEA at the raw stacks (N, >= 3, nv)."""
        nv = self.problem.model.nv
        q, qd, qdd = (ca.SX.sym(name, nv) for name in ("q", "qd", "qdd"))
        function = ca.Function("tau", [q, qd, qdd], [torques(self.problem.model, q, qd, qdd)])
        mapped = function.map(q_stack.shape[0])
        return np.asarray(mapped(*[q_stack[:, r, :].T for r in range(3)])).T

    def initial_x(self):
        """The free control points of the problem's initial motion, flattened i * nv + j."""
        a, b = self.problem.free_rows
        return self.problem.initial_theta().value()[a:b].ravel()

    def solve(self, x0):
        """IPOPT from x0: (free control points (n_free,), cost, iterations, status)."""
        result = self.solver(x0=x0, lbg=self.lbg, ubg=self.ubg)
        stats = self.solver.stats()
        return (np.asarray(result["x"]).ravel(), float(result["f"]), stats["iter_count"],
                stats["return_status"])

    def theta(self, x):
        """Full control points (n_c, nv) of free control points x."""
        theta = self.problem.initial_theta().value().copy()
        a, b = self.problem.free_rows
        theta[a:b] = x.reshape(b - a, -1)
        return theta

    def stack_values(self, q_stack):
        """Per-term outputs at every sample of the raw stack (N, K, nv): list of (N, d)."""
        columns = [q_stack[:, r, :].T for r in range(q_stack.shape[1])]
        mapped = self.outputs.map(q_stack.shape[0])
        values = mapped(*columns)
        values = values if isinstance(values, (list, tuple)) else [values]
        return [np.asarray(v).T for v in values]
