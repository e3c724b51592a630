"""Independent naive references for tests: classical rigid-body algorithms in plain numpy.

These functions are the oracle that the engine's tests compare against, so they share no
code with the engine (no ``cmtm.spatial``, ``cmtm.taylor`` or Numba kernels) and are
written straight from the textbook maths: Featherstone's body-frame recursive
Newton-Euler algorithm (RNEA), one forward loop and one backward loop relying on
``parent[i] < i``. They are slow (a Python loop over links, fresh 6x6 arrays) and that is
fine: they serve tests only.

Every function accepts float *or complex* joint arrays and returns arrays of the
matching dtype (transposes are plain transposes, never conjugates), so that
``taylor_coefficients`` can push complex times through them (Cauchy-integral Taylor
extraction) and tests can take complex-step derivatives.

Conventions (DESIGN.md, cmtm_math.md §1.1, §3.3, §5): spatial vectors are angular-first,
motion ``[omega; v]`` and force ``[n; f]``; link ``i`` is the child of joint ``i``; link
velocities, accelerations and forces are expressed in the link frame (body frame);
momentum and inertia are about the link-frame origin; gravity enters as the base
acceleration ``[0; -g]``.

Symbols
-------
===========  ========  ================================================================
code         shape     meaning
===========  ========  ================================================================
``X_up[i]``  (6, 6)    motion transform from parent-link coordinates to link ``i``
                       coordinates, ``A^-1`` of the joint's relative pose (§1.1)
``S[i]``     (6,)      joint screw in link ``i``'s frame: ``[a; 0]`` revolute, ``[0; a]``
                       prismatic (§3.1)
``v[i]``     (6,)      body velocity (twist) of link ``i``, link frame
``a[i]``     (6,)      time derivative of ``v[i]`` (spatial acceleration in body
                       coordinates), plus the base acceleration ``[0; -g]`` when gravity
                       is on
``f[i]``     (6,)      net wrench on link ``i`` (I a + v x6* I v); after the backward
                       loop, the wrench transmitted through joint ``i`` into the subtree
                       of ``i``; link frame
``I[i]``     (6, 6)    spatial inertia of link ``i`` about its frame origin (§5)
===========  ========  ================================================================

The finite-difference Jacobians at the end of the module (``fd_jacobian``) are the
exception: they differentiate the engine's own forward passes numerically, so that the
structured Jacobians (cmtm.jacobian, cmtm.jacobians) are checked against the nonlinear map
they linearize; they use the public forward passes of cmtm.api, never the Jacobian kernels.
"""
import math

import numpy as np

from cmtm.api import (check_model, check_order, check_stack, inverse_dynamics,
                      link_transform_derivatives, motion)

REVOLUTE = 0
PRISMATIC = 1


# --- spatial algebra (cmtm_math.md §1.1), any dtype ---

def _skew(w):
    """The 3x3 cross-product matrix [w x] of a 3-vector."""
    return np.array([[0, -w[2], w[1]],
                     [w[2], 0, -w[0]],
                     [-w[1], w[0], 0]])


def _motion_cross(u):
    """The 6x6 motion cross operator [u x6] of a twist u = [omega; v]."""
    W, V = _skew(u[:3]), _skew(u[3:])
    return np.block([[W, np.zeros((3, 3))], [V, W]])


def _force_cross(u):
    """The 6x6 dual cross operator [u x6*] = -[u x6]^T."""
    return -_motion_cross(u).T


def _rotation(axis, angle):
    """exp(angle [axis x]) by Rodrigues' formula, for a unit axis (3,) and a scalar angle."""
    K = _skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * (K @ K)


def _spatial_inertia(mass, com, inertia_com):
    """Spatial inertia (6,6) about the frame origin, angular-first (cmtm_math.md §5).

    I = [[I_c + m [c x][c x]^T, m [c x]], [m [c x]^T, m E]] for mass m, centre of mass c
    and rotational inertia I_c about the centre of mass, all in the link frame.
    """
    C = _skew(com)
    return np.block([[inertia_com + mass * C @ C.T, mass * C],
                     [mass * C.T, mass * np.eye(3)]])


# --- joint model (cmtm_math.md §3.1) ---

def _joint_pose(model, i, q_i):
    """Pose (R (3,3), p (3,)) of link i's frame in its parent link's frame at position q_i.

    The joint motion acts after the constant placement: revolute R = R_0 exp(q [a x]),
    prismatic p = p_0 + R_0 a q.
    """
    R0, p0, axis = model.placement_R[i], model.placement_p[i], model.axis[i]
    if model.joint_type[i] == REVOLUTE:
        return R0 @ _rotation(axis, q_i), p0
    return R0, p0 + R0 @ axis * q_i


def _screw(model, i):
    """Joint screw S_i (6,) in link i's frame: [a; 0] revolute, [0; a] prismatic."""
    zero = np.zeros(3)
    if model.joint_type[i] == REVOLUTE:
        return np.concatenate([model.axis[i], zero])
    return np.concatenate([zero, model.axis[i]])


def _transform_up(R, p):
    """X_up = A^-1 (6,6): maps parent-frame twists to child-frame twists, (R, p) the child pose."""
    Rt = R.T
    return np.block([[Rt, np.zeros((3, 3))], [-Rt @ _skew(p), Rt]])


def _joint_vector(x, model, name):
    """x as an (n,) array of at least float64 precision (complex stays complex)."""
    x = np.asarray(x)
    n = len(model.parent)
    if x.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {x.shape}; the model has nv={n}")
    return x.astype(np.result_type(x, np.float64), copy=False)


# --- forward pass: velocities and accelerations ---

def _forward_pass(model, q, qd, qdd, a_base):
    """X_up (n,6,6), S (n,6), v (n,6), a (n,6): the RNEA forward loop.

    v_i = X_up v_parent + S qd_i
    a_i = X_up a_parent + S qdd_i + v_i x6 (S qd_i)
    with v = 0 and a = a_base for the fixed base.
    """
    n = len(model.parent)
    X_up, S, v, a = [], [], [], []
    for i in range(n):
        X_up.append(_transform_up(*_joint_pose(model, i, q[i])))
        S.append(_screw(model, i))
        p = model.parent[i]
        v_parent, a_parent = (np.zeros(6), a_base) if p < 0 else (v[p], a[p])
        v_J = S[i] * qd[i]
        v.append(X_up[i] @ v_parent + v_J)
        a.append(X_up[i] @ a_parent + S[i] * qdd[i] + _motion_cross(v[i]) @ v_J)
    return X_up, S, np.array(v), np.array(a)


def rnea_naive(model, q, qd, qdd, gravity=True):
    """Joint torques tau (n,) by the classical body-frame recursive Newton-Euler algorithm.

    q, qd, qdd : (n,) float or complex, joint positions, velocities, accelerations (our
        joint order). gravity : bool, include ``model.gravity`` (base frame) as the base
        acceleration [0; -g] (cmtm_math.md §3.3).
    Returns tau = M(q) qdd + C(q, qd) qd + g(q), dtype of the inputs.

    Backward loop: f_i = I_i a_i + v_i x6* (I_i v_i), then f_parent += X_up_i^T f_i
    (X_up^T = A^* maps child wrenches to the parent frame), tau_i = S_i^T f_i.

    >>> import kinematic_trees as kt
    >>> arm = kt.compile_tree(kt.two_link_planar(), gravity=(0, -9.81, 0))
    >>> np.round(rnea_naive(arm, np.radians([30, 60]), np.zeros(2), np.zeros(2)), 4)
    array([12.7436,  0.    ])
    """
    q, qd = _joint_vector(q, model, "q"), _joint_vector(qd, model, "qd")
    qdd = _joint_vector(qdd, model, "qdd")
    g = np.asarray(model.gravity, dtype=np.float64) if gravity else np.zeros(3)
    X_up, S, v, a = _forward_pass(model, q, qd, qdd, np.concatenate([np.zeros(3), -g]))
    f = []
    for i in range(len(model.parent)):
        I = _spatial_inertia(model.mass[i], model.com[i], model.inertia_com[i])
        f.append(I @ a[i] + _force_cross(v[i]) @ (I @ v[i]))
    for i in reversed(range(len(model.parent))):
        p = model.parent[i]
        if p >= 0:
            f[p] = f[p] + X_up[i].T @ f[i]
    return np.array([S[i] @ f[i] for i in range(len(model.parent))])


def link_velocities_naive(model, q, qd):
    """Body velocities v (n,6) of the links, each in its own link frame, angular-first.

    q, qd : (n,) float or complex. v_i = X_up v_parent + S_i qd_i.
    """
    q, qd = _joint_vector(q, model, "q"), _joint_vector(qd, model, "qd")
    return _forward_pass(model, q, qd, np.zeros_like(qd), np.zeros(6))[2]


def link_accelerations_naive(model, q, qd, qdd):
    """Link accelerations (n,6), link frame, angular-first, WITHOUT gravity.

    q, qd, qdd : (n,) float or complex. Row i is d/dt of the body twist ``v_i`` (the
    components in the moving link frame), i.e. Featherstone's spatial acceleration in
    body coordinates. It is not the "classical" acceleration of the frame origin, whose
    linear part is ``a_lin + omega x v_lin``.
    """
    q, qd = _joint_vector(q, model, "q"), _joint_vector(qd, model, "qd")
    qdd = _joint_vector(qdd, model, "qdd")
    return _forward_pass(model, q, qd, qdd, np.zeros(6))[3]


def link_momenta_naive(model, q, qd):
    """Link momenta h_L (n,6) = I_i v_i, about the link-frame origin, link frame, [n; f].

    q, qd : (n,) float or complex; angular momentum first, linear momentum second.
    """
    v = link_velocities_naive(model, q, qd)
    return np.array([_spatial_inertia(model.mass[i], model.com[i], model.inertia_com[i]) @ v[i]
                     for i in range(len(model.parent))])


def link_poses_naive(model, q):
    """World (base-frame) homogeneous poses (n,4,4) of the link frames at q (n,)."""
    q = _joint_vector(q, model, "q")
    poses = []
    for i in range(len(model.parent)):
        R, p = _joint_pose(model, i, q[i])
        T = np.block([[R, p[:, None]], [np.zeros((1, 3)), np.ones((1, 1))]])
        parent = model.parent[i]
        poses.append(T if parent < 0 else poses[parent] @ T)
    return np.array(poses)


def mass_matrix_naive(model, q):
    """Joint-space mass matrix M(q) (n,n), column j = rnea_naive(q, 0, e_j) without gravity."""
    q = _joint_vector(q, model, "q")
    zero = np.zeros_like(q)
    unit = np.eye(len(q))
    return np.column_stack([rnea_naive(model, q, zero, unit[j], gravity=False)
                            for j in range(len(q))])


# --- Taylor coefficients by the Cauchy integral ---

def taylor_coefficients(f, t0, order, radius=3.0, n_points=32):
    """Taylor coefficients c_l = f^(l)(t0) / l!, l = 0..order, by the Cauchy integral (FFT).

    f : callable mapping a complex scalar time to an array (any shape, complex dtype when
        the time is complex), analytic on the closed disc |t - t0| <= radius and real on
        the real axis. t0 : float. order : int >= 0.
    Returns (order+1, *f_shape) float64, Taylor-scaled (the raw derivative is
    ``math.factorial(l) * c[l]``; the project's raw<->Taylor conversion lives in
    cmtm/taylor.py).

    f is sampled at t0 + r exp(2 pi i m / N), m = 0..N-1 (r = radius, N = n_points); the
    FFT over m divided by N r^l gives sum_j c_{l+jN} r^{jN}, i.e. c_l plus aliasing.
    Accuracy trade-off, with F = max |f| on the circle:
      * aliasing error on c_l ~ |c_{l+N}| r^N, which falls with N and grows with r;
      * round-off error on c_l ~ eps F / r^l, which falls with r up to where F blows up.
    For an entire function with a time scale T (|f(t0 + z)| <~ |f| exp(|z| / T)) the
    relative error of the l-th derivative is about l! eps exp(r/T) / (r/T)^l; the
    defaults r = 3, N = 32 keep it below ~3e-14 for T ~ 1 s and l <= 8 (aliasing
    ~ l! 3^32 / (l+32)! is negligible). For faster motions scale r with T; trajectories
    whose complex extension grows fast need a smaller r: sin of a high-degree polynomial
    q(t), and multibody quantities, whose rotations compose exp(|Im q_j|) along a chain
    (tests of multi-link models use r = 0.5 with N = 64).

    >>> c = taylor_coefficients(np.exp, 0.0, 4)
    >>> np.allclose(c, [1, 1, 1/2, 1/6, 1/24], rtol=1e-14, atol=0)
    True
    """
    if not 0 <= order < n_points:
        raise ValueError(f"order: expected 0 <= order < n_points={n_points}, got {order}")
    times = t0 + radius * np.exp(2j * np.pi * np.arange(n_points) / n_points)
    samples = np.array([np.asarray(f(t), dtype=np.complex128) for t in times])
    coeffs = np.fft.fft(samples, axis=0)[:order + 1] / n_points
    scale = radius ** np.arange(order + 1, dtype=np.float64)
    return (coeffs / scale.reshape((order + 1,) + (1,) * (samples.ndim - 1))).real


# --- Finite-difference Jacobians of the engine (the oracle of cmtm.jacobian) ---
#
# Unlike the naive functions above, these references *call* the engine's forward passes
# (cmtm.motion, cmtm.link_transform_derivatives): they differentiate the nonlinear map
# q_stack -> output stack numerically, so they check the structured Jacobians
# (cmtm.jacobian / cmtm.jacobians, Lemmas 1-6) and nothing else; they never import the
# Jacobian kernels.

FD_METHODS = ("central", "richardson")
"""``method`` values of :func:`central_jacobian` and :func:`fd_jacobian`."""

CENTRAL_STEP = np.finfo(np.float64).eps ** (1.0 / 3.0)
"""Default relative step of plain central differences: h = eps**(1/3) max(1, |x|) balances
truncation (~ h^2 |f'''| / 6) against round-off (~ eps |f| / h), both ~ eps**(2/3) ~ 4e-11."""

RICHARDSON_STEP = 0.5
"""Default relative base step of the Richardson variant (the largest of its halved steps)."""

RICHARDSON_LEVELS = 4
"""Default number of halvings of the Richardson variant: steps h0, h0/2, ..., h0/2**4."""

FD_INPUT_OFFSET = {"joint_velocity": 1, "joint_tangent": 0, "link_tangent": 0,
                   "link_velocity": 1, "link_momentum": 1, "link_momentum_world": 1,
                   "joint_momentum_world": 1, "joint_momentum": 1, "link_force": 2,
                   "joint_force": 2, "joint_torque": 2}
"""s such that output order l depends on q^(0..l+s) (cmtm_math.md §7.1); K_in = k + 1 + s.
Written out again here so that the reference does not read the engine's tables."""

_MOTION_FIELD = {"link_velocity": "v_L", "link_momentum": "h_L", "link_momentum_world": "w_h_L",
                 "joint_momentum_world": "w_h_J", "joint_momentum": "h_J", "link_force": "f_L",
                 "joint_force": "f_J", "joint_torque": "tau"}
"""Quantities read from :func:`cmtm.motion` and the Motion field holding each."""


def central_jacobian(func, x, step=None, method="central", levels=RICHARDSON_LEVELS):
    """Jacobian of a batched function by central differences, one column per entry of x.

    func : callable mapping an array (N, *x_shape) float64 to (N, *y_shape) float64, row by
        row (a batch of N independent evaluations; every perturbed point of every sample
        and column is passed in ONE call per step, which is what makes it fast).
    x : (n_samples, *x_shape) float64, the points of differentiation.
    step : positive float or None, the *relative* step: entry x_c moves by
        h_c = step * max(1, |x_c|). Default :data:`CENTRAL_STEP` (central) or
        :data:`RICHARDSON_STEP` (richardson, the largest step).
    method : "central" or "richardson".
    levels : int >= 1, number of step halvings of the Richardson variant.
    Returns J (n_samples, *y_shape, *x_shape) float64, ``J[s, ..., c] = d func / d x_c``.

    Error model. For smooth f the central quotient is
        D(h) = (f(x + h) - f(x - h)) / (2 h) = f' + c_1 h^2 + c_2 h^4 + ... + O(delta / h),
    with delta the round-off in evaluating f (~ eps |f| for a well-conditioned f).
    "central" takes one h: error ~ |c_1| h^2 + delta / h, ~ eps**(2/3) at the default.
    "richardson" evaluates D at h_i = h0 / 2**i, i = 0..L (L = ``levels``), and eliminates
    c_1, ..., c_L by Neville's tableau R[i, j] = R[i, j-1] + (R[i, j-1] - R[i-1, j-1]) /
    (4**j - 1). What remains is the truncation term ~ |c_{L+1}| h0^(2L+2) 2^(-L(L+1)) and the
    round-off delta / h_L amplified by the sum of the absolute tableau weights (< 3). For
    the engine's outputs, which are trigonometric polynomials of low degree in q and
    polynomials in q', q'', ..., a large h0 = 1/2 with L = 4 makes the truncation term
    negligible (~ h0^10 2^-20 |c_5|; exact for polynomials of degree <= 2L + 2) while the
    smallest step h_L = h0/16 ~ 0.03 keeps the round-off at ~100 eps |f|: about 1e-14 of
    max |f|, 1e-13 to 1e-12 of max |J| for torque stacks of order 4 whose values exceed
    their Jacobians a hundredfold (measured in tests/test_jacobians.py, on functions with
    known Jacobians and on the engine). Smaller h0 or more levels raise the round-off;
    h0 = 1 with L = 4 leaves visible truncation (~3e-11 on a 12-joint tree).
    The actually represented step (x + h) - (x - h) is used in each quotient.

    >>> x = np.array([[0.3, -1.2]])
    >>> J = central_jacobian(lambda z: np.stack([np.sin(z[:, 0]) * z[:, 1]], axis=1), x,
    ...                      method="richardson")
    >>> bool(np.allclose(J[0], [[np.cos(0.3) * -1.2, np.sin(0.3)]], rtol=1e-13, atol=0))
    True
    """
    if method not in FD_METHODS:
        raise ValueError(f"method: expected one of {', '.join(FD_METHODS)}, got {method!r}")
    if step is None:
        step = CENTRAL_STEP if method == "central" else RICHARDSON_STEP
    if not (np.isscalar(step) and np.isfinite(step) and step > 0):
        raise ValueError(f"step: expected a positive finite float, got {step!r}")
    if method == "richardson" and (isinstance(levels, bool) or not isinstance(levels, int)
                                   or levels < 1):
        raise ValueError(f"levels: expected a positive integer, got {levels!r}")
    x = np.asarray(x, dtype=np.float64)
    n_samples, x_shape = x.shape[0], x.shape[1:]
    flat = x.reshape(n_samples, -1)
    scale = step * np.maximum(1.0, np.abs(flat))
    steps = [scale] if method == "central" else [scale / 2.0 ** i for i in range(levels + 1)]
    quotients = [_central_quotients(func, flat, h, x_shape) for h in steps]
    if method == "richardson":
        # Neville's tableau in place: after pass j, quotients[i] = R[i, j] for i >= j.
        for j in range(1, len(quotients)):
            for i in range(len(quotients) - 1, j - 1, -1):
                quotients[i] = quotients[i] + (quotients[i] - quotients[i - 1]) / (4.0 ** j - 1.0)
    D = quotients[-1]                                      # (n_samples, p, *y_shape)
    y_ndim = D.ndim - 2
    J = np.moveaxis(D, 1, -1)                              # (n_samples, *y_shape, p)
    return J.reshape(J.shape[:1 + y_ndim] + x_shape)


def _central_quotients(func, flat, h, x_shape):
    """(f(x + h_c e_c) - f(x - h_c e_c)) / (2 h_c) for every sample and column c, from one
    batched call: (n_samples, p, *y_shape)."""
    n_samples, p = flat.shape
    eye = np.eye(p)
    plus = flat[:, None, :] + eye * h[:, None, :]          # (n_samples, p, p): row c moves x_c
    minus = flat[:, None, :] - eye * h[:, None, :]
    width = np.einsum("scc->sc", plus) - np.einsum("scc->sc", minus)   # represented 2 h_c
    points = np.concatenate([plus, minus]).reshape((2 * n_samples * p,) + x_shape)
    values = np.asarray(func(points), dtype=np.float64)
    values = values.reshape((2, n_samples, p) + values.shape[1:])
    width = width.reshape((n_samples, p) + (1,) * (values.ndim - 3))
    return (values[0] - values[1]) / width


def _factorial_column(n, ndim):
    """(0!, 1!, ..., (n-1)!) shaped (n, 1, ..., 1) with ``ndim`` axes in all."""
    return np.array([float(math.factorial(l)) for l in range(n)]).reshape((n,) + (1,) * (ndim - 1))


def _screws(model):
    """Joint screws S (nv, 6) in the link frames (cmtm_math.md §3.1)."""
    return np.array([_screw(model, i) for i in range(len(model.parent))])


def _joint_stack_values(model, stacks, order, offset):
    """S_i q_i^(l + offset), l = 0..order: (N, order+1, 6 nv), link-major, angular-first.

    offset 1 is the joint velocity nu_J^(l) = S q^(l+1); offset 0 is the linear map whose
    Jacobian is the joint tangent's definition dx_J^(l) = S dq^(l) (§3.1, Lemma 1).
    """
    S = _screws(model)
    rows = stacks[:, offset:order + 1 + offset, :, None] * S   # (N, k+1, nv, 6)
    return rows.reshape(rows.shape[:2] + (-1,))


def _taylor_inverse_blocks(X):
    """Blocks of T(X)^{-1} = T(X^-) for Taylor blocks X (..., k+1, 6, 6) (§1.3, J1):
    X^-_0 = X_0^{-1}, X^-_l = -X_0^{-1} sum_{m=1..l} X_m X^-_{l-m}."""
    X0_inv = np.linalg.inv(X[..., 0, :, :])
    inverse = [X0_inv]
    for l in range(1, X.shape[-3]):
        acc = sum(X[..., m, :, :] @ inverse[l - m] for m in range(1, l + 1))
        inverse.append(-X0_inv @ acc)
    return np.stack(inverse, axis=-3)


def _link_tangent_jacobian(model, stack, order, step, method, levels):
    """d a^(l) / d q^(r) (n_samples, k+1, 6 n, k+1, nv) of the link tangent stacks (§6.2).

    With X = T(X_0..X_k) the link CMTM (Taylor blocks of A_L), T(X)^{-1} dT(X) = T([da_l x]):
    the first block column of X^{-1} times the finite-difference derivative of X (taken with
    respect to each raw input q^(r)_j) gives [da_l x]; its 6-vector is read from the
    [[omega x], 0], [[v x], [omega x]]] block, and the Taylor coefficient da_l becomes the
    raw derivative by the factor l!.
    """
    k = order
    n = len(model.parent)

    def transforms(points):
        A = link_transform_derivatives(model, points, order=k)   # (N, k+1, n, 6, 6) raw
        return A / _factorial_column(k + 1, 4)

    X = transforms(stack)                                         # (S, k+1, n, 6, 6)
    dX = central_jacobian(transforms, stack, step, method, levels)  # (S, k+1, n, 6, 6, K, nv)
    X_inv = _taylor_inverse_blocks(np.moveaxis(X, 2, 1))          # (S, n, k+1, 6, 6)
    tangent = np.zeros(dX.shape)
    for l in range(k + 1):
        for m in range(l + 1):
            tangent[:, l] += np.einsum("sial,silcrj->siacrj", X_inv[:, :, l - m], dX[:, m])
    omega = np.stack([tangent[..., 2, 1, :, :], tangent[..., 0, 2, :, :],
                      tangent[..., 1, 0, :, :]], axis=-3)
    v = np.stack([tangent[..., 5, 1, :, :], tangent[..., 3, 2, :, :],
                  tangent[..., 4, 0, :, :]], axis=-3)
    da = np.concatenate([omega, v], axis=-3)                      # (S, k+1, n, 6, K, nv)
    da = da * _factorial_column(k + 1, 5)
    return da.reshape((stack.shape[0], k + 1, 6 * n) + da.shape[-2:])


def _fd_group(quantity):
    """Quantities that one set of perturbed evaluations serves: 'motion', 'joint' or the
    link tangent on its own."""
    if quantity in _MOTION_FIELD:
        return "motion"
    return "joint" if quantity.startswith("joint_") else "link_tangent"


def _fd_quantity_names(quantities):
    """Tuple of validated quantity names (a str is one name)."""
    if isinstance(quantities, str):
        quantities = (quantities,)
    quantities = tuple(quantities)
    if not quantities:
        raise ValueError("quantities: expected at least one quantity name, got none")
    for name in quantities:
        if name not in FD_INPUT_OFFSET:
            raise ValueError(f"quantity: expected one of {', '.join(FD_INPUT_OFFSET)}, "
                             f"got {name!r}")
    return quantities


def fd_jacobians(model, q_stack, quantities, order=0, step=None, method="central",
                 levels=RICHARDSON_LEVELS):
    """Finite-difference Jacobians of several quantities, in the layout of cmtm.jacobians.

    Same arguments as :func:`fd_jacobian` with a sequence of names; the quantities read
    from :func:`cmtm.motion` share one set of perturbed motion calls (perturbing the
    deepest input order any of them needs; each result keeps its own K_in columns, which
    are computed exactly as by :func:`fd_jacobian`). Returns a dict name -> J.
    """
    check_model(model)
    k = check_order(order)
    names = _fd_quantity_names(quantities)
    depth = max(FD_INPUT_OFFSET[name] for name in names)
    stack, single = check_stack(model, q_stack, k + 1 + depth)
    result = {}
    for group in ("joint", "link_tangent", "motion"):
        members = [name for name in names if _fd_group(name) == group]
        if not members:
            continue
        K = k + 1 + max(FD_INPUT_OFFSET[name] for name in members)
        points = np.ascontiguousarray(stack[:, :K])
        if group == "link_tangent":
            result["link_tangent"] = _link_tangent_jacobian(model, points, k, step, method,
                                                            levels)
            continue
        if group == "joint":
            def values(batch, members=members):
                return np.concatenate([_joint_stack_values(model, batch, k,
                                                           FD_INPUT_OFFSET[name])
                                       for name in members], axis=-1)
        elif members == ["joint_torque"]:
            # the engine's fastest torque path, so that FD timings are a fair baseline
            def values(batch):
                return inverse_dynamics(model, batch, order=k)
        else:
            dynamics = any(FD_INPUT_OFFSET[name] == 2 for name in members)
            world = any(name.endswith("_world") for name in members)

            def values(batch, members=members, dynamics=dynamics, world=world):
                mo = motion(model, batch, order=k, dynamics=dynamics, world=world)
                fields = [getattr(mo, _MOTION_FIELD[name]) for name in members]
                return np.concatenate([f.reshape(f.shape[:2] + (-1,)) for f in fields], axis=-1)

        J = central_jacobian(values, points, step, method, levels)   # (S, k+1, M, K, nv)
        start = 0
        for name in members:
            width = len(model.parent) if name == "joint_torque" else 6 * len(model.parent)
            result[name] = J[:, :, start:start + width, :k + 1 + FD_INPUT_OFFSET[name]]
            start += width
    return {name: (result[name][0] if single else result[name]).copy() for name in names}


def fd_jacobian(model, q_stack, quantity, order=0, step=None, method="central",
                levels=RICHARDSON_LEVELS):
    """Finite-difference Jacobian of one quantity of cmtm.QUANTITIES, the oracle of
    :func:`cmtm.jacobian` (same layout and validation).

    model : kinematic_trees.CompiledTree. q_stack : (n_samples, K, nv) or (K, nv) float64,
    raw derivatives q, q', ..., q^(K-1), K >= K_in (= order + 1 + s, s = 0 tangents,
    1 velocities and momenta, 2 forces and torques; extra orders are ignored).
    quantity : name in cmtm.QUANTITIES. order : k >= 0.
    step, method, levels : as in :func:`central_jacobian` (relative step; "central" plain
    central differences with h = eps**(1/3) max(1, |x|), "richardson" the extrapolated
    variant good to ~1e-12 relative).
    Returns J (n_samples, k+1, m, K_in, nv) float64, ``J[s, j, :, r, :] = d y^(j) / d q^(r)``
    (raw derivatives), m = 6 nv (link-major, angular-first) or nv for joint_torque; the
    sample axis is dropped for a single instant.

    What is differentiated, column by column (every perturbed stack of every sample is a
    sample of one engine call):
      * velocities, momenta, forces, torques: :func:`cmtm.motion` (kinematics and momenta
        from its gravity-free pass, forces and torques with gravity);
      * link_tangent: :func:`cmtm.link_transform_derivatives`, turned into the body-frame
        tangent stack by T(X)^{-1} dT(X) = T([da_l x]) (cmtm_math.md §6.2);
      * joint_velocity nu_J^(l) = S q^(l+1) and joint_tangent dx_J^(l) = S dq^(l): their
        definitions (§3.1), differentiated the same way.

    >>> import kinematic_trees as kt
    >>> arm = kt.compile_tree(kt.two_link_planar())
    >>> J = fd_jacobian(arm, np.zeros((3, 2)), "link_velocity", order=0)
    >>> J.shape, float(np.round(J[0, 2, 1, 0], 12))   # d omega_z of link 0 / d q'_0
    ((1, 12, 2, 2), 1.0)
    """
    return fd_jacobians(model, q_stack, (quantity,), order, step, method, levels)[quantity]
