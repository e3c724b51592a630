"""Automatic-differentiation reference for the structured Jacobians: RNEA in JAX.

An independent route to the quantities of cmtm_math.md §7 that shares no code with the
engine: a classical body-frame recursive Newton-Euler algorithm (RNEA) written in
``jax.numpy`` as a Python loop unrolled over the links of a static tree, then

1. Taylor mode (``jax.experimental.jet``) along the trajectory polynomial
   q(t) = sum_r q^(r) t^r / r!, which gives the raw time-derivative stacks
   tau, tau', ..., tau^(k) (and v_L, ..., v_L^(k), and the world velocities p', ...,
   p^(k+1) of points fixed to links, from their forward kinematics) at t = 0;
2. forward-mode differentiation (``jax.jacfwd``) of that stack with respect to the raw
   input stack q, q', ..., q^(K_in - 1);
3. ``jax.vmap`` over samples and ``jax.jit``.

``jet`` series are raw derivative coefficients: a primal x_0 with series (x_1, ..., x_k)
stands for x(t) = sum_r x_r t^r / r!, and the output series are raw derivatives too.
So the Jacobians come out in the engine's public convention with no factorials:
``J[s, j, :, r, :] = d y^(j) / d q^(r)``, shape ``(n_samples, k+1, m, K_in, nv)``.

Conventions (DESIGN.md): spatial vectors angular-first, motion [omega; v], force [n; f];
link frames are the joint child frames; velocities and forces in the link frame; joint i
moves link i relative to link parent[i] (-1 for the fixed base), parent[i] < i; revolute
R = R_0 exp(q [a x]), prismatic p = p_0 + R_0 a q; gravity enters as the base
acceleration [0; -g].

Symbols
-------
==========  ======  ===============================================================
code        shape   meaning
==========  ======  ===============================================================
``X_up``    (6,6)   A_i(q_i)^-1: parent-link twists in link i's frame
``S``       (6,)    joint screw in link i's frame: [a; 0] revolute, [0; a] prismatic
``v[i]``    (6,)    body twist of link i, link frame
``a[i]``    (6,)    d/dt of v[i] (body components), plus the base acceleration [0; -g]
``f[i]``    (6,)    net wrench I a + v x* I v, then (backward loop) the wrench through
                    joint i into its subtree
``I``       (6,6)   spatial inertia of link i about its frame origin
==========  ======  ===============================================================

Cost. The traced graph has O(nv) primitives; ``jet`` multiplies it by O(k^2) (every
bilinear primitive becomes a Cauchy product of its series, including products with
constants, whose zero series jet instantiates) and ``jacfwd`` by about 2. XLA's compile
time grows with that graph, which is why the benchmark reports it in its own column and
caps the model sizes it compiles.

This module is a benchmark baseline and a test oracle; JAX is an optional dependency
(``pip install -e .[bench]``).
"""
import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402  (x64 must be switched on before any array exists)
import numpy as np  # noqa: E402
from jax.experimental.jet import jet  # noqa: E402

from kinematic_trees.joint_types import JOINT_REVOLUTE  # noqa: E402


class StaticTree:
    """The model arrays the JAX code closes over, as numpy constants (never traced).

    model : kinematic_trees.CompiledTree (fields parent, joint_type, axis, placement_R,
    placement_p, spatial_inertia, gravity). The tree structure is a Python list so that the
    loops over links unroll at trace time.
    """

    def __init__(self, model):
        self.parent = [int(p) for p in np.asarray(model.parent)]
        self.joint_type = [int(t) for t in np.asarray(model.joint_type)]
        self.axis = np.asarray(model.axis, dtype=np.float64)
        self.placement_R = np.asarray(model.placement_R, dtype=np.float64)
        self.placement_p = np.asarray(model.placement_p, dtype=np.float64)
        self.spatial_inertia = np.asarray(model.spatial_inertia, dtype=np.float64)
        self.gravity = np.asarray(model.gravity, dtype=np.float64)
        self.nv = len(self.parent)

    def screw(self, i):
        """S_i (6,): [a; 0] for a revolute joint, [0; a] for a prismatic one."""
        zero = np.zeros(3)
        a = self.axis[i]
        return np.concatenate([a, zero] if self.joint_type[i] == JOINT_REVOLUTE else [zero, a])


# --- spatial algebra as constant 6x6 matrices (cmtm_math.md §1.1) ---
# The traced graph is kept small (few large ops rather than many scalar ones), because its
# size, multiplied by jet's O(k^2) expansion and jacfwd's tangents, sets XLA's compile time.

def _skew(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _motion_cross_matrix(u):
    """[u x6] (6,6) of a constant twist u = [w; v]."""
    W, V = _skew(u[:3]), _skew(u[3:])
    return np.block([[W, np.zeros((3, 3))], [V, W]])


_UNIT = np.eye(6)
MOTION_CROSS = np.stack([_motion_cross_matrix(_UNIT[k]) for k in range(6)])
"""(6, 6, 6): [u x6] = sum_k u_k MOTION_CROSS[k], which makes [u x6] linear in a traced u."""


def _force_cross(u, h):
    """[u x6*] h = -[u x6]^T h, traced u and h."""
    return -(jnp.tensordot(u, MOTION_CROSS, axes=1).T @ h)


def _inverse_placement(R0, p0):
    """A_0^-1 (6,6) of the constant placement (R0, p0) (maps parent twists to the joint frame)."""
    Rt = R0.T
    return np.block([[Rt, np.zeros((3, 3))], [-Rt @ _skew(p0), Rt]])


def _transform_up(tree, i, q_i):
    """X_up = A_i(q_i)^-1 (6,6): parent-link twists in link i's frame.

    A_i = A_0 E(q) with the joint motion E acting after the placement, so
    A_i^-1 = E(q)^-1 A_0^-1 = E(-q) A_0^-1 with E(-q) = exp(-q [S x6]):
    revolute  E(-q) = I - sin(q) K + (1 - cos(q)) K^2, K = [S x6] (K^3 = -K for unit a);
    prismatic E(-q) = I - q K (K^2 = 0).
    Every product with a constant is folded at trace time, leaving a few scaled sums.
    """
    K = _motion_cross_matrix(tree.screw(i))
    X0inv = _inverse_placement(tree.placement_R[i], tree.placement_p[i])
    if tree.joint_type[i] == JOINT_REVOLUTE:
        return X0inv - jnp.sin(q_i) * (K @ X0inv) + (1.0 - jnp.cos(q_i)) * (K @ K @ X0inv)
    return X0inv - q_i * (K @ X0inv)


# --- the classical algorithm ---

def forward_pass(tree, q, qd, qdd, a_base):
    """X_up, twists and accelerations of every link (the RNEA forward loop).

    v_i = X_up v_parent + S_i qd_i;  a_i = X_up a_parent + S_i qdd_i + v_i x6 (S_i qd_i),
    the last term written qd_i (-[S_i x6]) v_i so that its matrix is a constant.
    """
    X_up, v, a = [], [], []
    for i in range(tree.nv):
        X = _transform_up(tree, i, q[i])
        S = tree.screw(i)
        parent = tree.parent[i]
        qd_i = qd[i]
        v_J = S * qd_i
        if parent < 0:
            v_i = v_J
            a_i = X @ a_base + S * qdd[i]
        else:
            v_i = X @ v[parent] + v_J
            a_i = X @ a[parent] + S * qdd[i] - qd_i * (_motion_cross_matrix(S) @ v_i)
        X_up.append(X)
        v.append(v_i)
        a.append(a_i)
    return X_up, v, a


def rnea(tree, q, qd, qdd):
    """Joint torques tau (nv,) = M(q) qdd + C(q, qd) qd + g(q), gravity of the model included.

    q, qd, qdd : (nv,) joint positions, velocities and accelerations in the model's joint
    order. Backward loop: f_i = I_i a_i + v_i x6* (I_i v_i); f_parent += X_up_i^T f_i
    (X_up^T = A^* maps child wrenches to the parent frame); tau_i = S_i . f_i.
    """
    a_base = np.concatenate([np.zeros(3), -tree.gravity])
    X_up, v, a = forward_pass(tree, q, qd, qdd, a_base)
    f = []
    for i in range(tree.nv):
        I = tree.spatial_inertia[i]
        f.append(I @ a[i] + _force_cross(v[i], I @ v[i]))
    for i in reversed(range(tree.nv)):
        parent = tree.parent[i]
        if parent >= 0:
            f[parent] = f[parent] + X_up[i].T @ f[i]
    return jnp.stack([jnp.dot(tree.screw(i), f[i]) for i in range(tree.nv)])


def link_velocities(tree, q, qd):
    """Body twists of the links (nv, 6), each in its own frame, no gravity (kinematics)."""
    zero = jnp.zeros_like(qd)
    return jnp.stack(forward_pass(tree, q, qd, zero, np.zeros(6))[1])


def link_poses(tree, q):
    """World poses [(R_i (3,3), o_i (3,))] of the link frames at q (nv,): forward
    kinematics, A_i = A_parent A_0,i E_i(q_i) with R = R_0 (E + sin q K + (1 - cos q) K^2),
    K = [a x] (revolute), or o = o_0 + R_0 a q (prismatic)."""
    poses = []
    for i in range(tree.nv):
        R0, p0, a = tree.placement_R[i], tree.placement_p[i], tree.axis[i]
        if tree.joint_type[i] == JOINT_REVOLUTE:
            K = _skew(a)
            R, p = R0 + jnp.sin(q[i]) * (R0 @ K) + (1.0 - jnp.cos(q[i])) * (R0 @ K @ K), p0
        else:
            R, p = R0, p0 + q[i] * (R0 @ a)
        parent = tree.parent[i]
        poses.append((R, p) if parent < 0 else
                     (poses[parent][0] @ R, poses[parent][0] @ p + poses[parent][1]))
    return poses


def point_positions(tree, q, points):
    """World positions o_L + R_L r of points (link index, r (3,) in the link frame),
    flattened (3 n_points,)."""
    poses = link_poses(tree, q)
    return jnp.concatenate([poses[i][0] @ np.asarray(r, dtype=np.float64) + poses[i][1]
                            for i, r in points])


# --- Taylor mode: raw time-derivative stacks ---

def _time_derivatives(fun, inputs, q_stack, order):
    """Raw derivatives y, y', ..., y^(k) (k = order) at t = 0 of y(t) = fun(x_1(t), ...),
    where input ``m`` of ``inputs`` (a tuple of derivative offsets, 0 for q, 1 for qd,
    2 for qdd) follows q^(m)(t) = sum_r q_stack[r + m] t^r / r!. Returns (k+1, ...)."""
    primals = tuple(q_stack[m] for m in inputs)
    if order == 0:
        return fun(*primals)[None]
    series = tuple([q_stack[m + r] for r in range(1, order + 1)] for m in inputs)
    y0, y_series = jet(fun, primals, series)
    return jnp.stack([y0, *y_series])


def torque_stack(tree, q_stack, order):
    """tau, tau', ..., tau^(k): (k+1, nv) from a raw stack q_stack (>= k+3, nv)."""
    return _time_derivatives(lambda q, qd, qdd: rnea(tree, q, qd, qdd), (0, 1, 2),
                             q_stack, order)


def velocity_stack(tree, q_stack, order):
    """v_L, v_L', ..., v_L^(k) flattened link-major: (k+1, 6 nv), from q_stack (>= k+2, nv)."""
    return _time_derivatives(lambda q, qd: link_velocities(tree, q, qd).reshape(-1), (0, 1),
                             q_stack, order)


def point_stack(tree, q_stack, points, order):
    """p', p'', ..., p^(k+1) of the points flattened: (k+1, 3 n_points), from q_stack
    (>= k+2, nv): the derivatives 1..k+1 of the Taylor-mode position series."""
    return _time_derivatives(lambda q: point_positions(tree, q, points), (0,), q_stack,
                             order + 1)[1:]


# --- Jacobians of the stacks with respect to the raw input stack ---

STACKS = {"joint_torque": (torque_stack, 3), "link_velocity": (velocity_stack, 2)}
"""quantity -> (stack function, K_in - order): inputs q .. q^(k+2) for torques,
q .. q^(k+1) for link velocities (cmtm_math.md §7.1)."""


def stack_function(model, quantity, order, jit=True):
    """Vmapped ``q_stack (n_samples, K_in, nv) -> y stack (n_samples, k+1, m)`` (raw
    derivatives), jitted unless ``jit`` is False."""
    stack, _ = _stack_and_offset(quantity)
    tree = StaticTree(model)
    fun = jax.vmap(lambda x: stack(tree, x, order))
    return jax.jit(fun) if jit else fun


def jacobian_function(model, quantity, order, jit=True):
    """Vmapped Jacobian of the order-k stack of ``quantity`` ("joint_torque" or
    "link_velocity") with respect to the raw input stack, jitted unless ``jit`` is False.

    Returns f: q_stack (n_samples, K_in, nv) float64, raw derivatives, K_in = k+3 for the
    torque and k+2 for link velocities -> J (n_samples, k+1, m, K_in, nv) with
    ``J[s, j, :, r, :] = d y^(j) / d q^(r)`` (m = nv torques, 6 nv link twists), the layout
    of ``cmtm.jacobian``. Jitted, it compiles on the first call per input shape (or on
    ``f.lower(q_stack).compile()``); eagerly (``jit=False``) it runs primitive by primitive,
    which is slow per sample but skips XLA's compilation of the whole graph (tests).
    """
    stack, _ = _stack_and_offset(quantity)
    tree = StaticTree(model)
    fun = jax.vmap(jax.jacfwd(lambda x: stack(tree, x, order)))
    return jax.jit(fun) if jit else fun


def _stack_and_offset(quantity):
    if quantity not in STACKS:
        raise ValueError(f"quantity: expected one of {', '.join(STACKS)}, got {quantity!r}")
    return STACKS[quantity]


def input_orders(quantity, order):
    """K_in: the number of raw input orders the Jacobian of ``quantity`` takes."""
    return order + _stack_and_offset(quantity)[1]


def point_jacobian_function(model, points, order, jit=True):
    """Vmapped Jacobian of the order-k point velocity stack (:func:`point_stack`) with
    respect to the raw input stack q, ..., q^(k+1): f(q_stack (n_samples, k+2, nv)) ->
    J (n_samples, k+1, 3 n_points, k+2, nv), the layout of ``cmtm.point_jacobian``.
    points : [(link index, (x, y, z))] in the links' frames. Jitted unless ``jit`` is
    False (as :func:`jacobian_function`)."""
    tree = StaticTree(model)
    fun = jax.vmap(jax.jacfwd(lambda x: point_stack(tree, x, points, order)))
    return jax.jit(fun) if jit else fun
