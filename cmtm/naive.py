"""Independent naive references: classical rigid-body algorithms in plain numpy, and the
oracle of every comprehensive quantity and structured Jacobian built on them.

These functions are what the engine's tests compare against, so they share no code with
the engine: this module imports numpy, math and the joint-type codes of
kinematic_trees.joint_types (a data format, not engine code) and nothing else
(tests/test_layering.py enforces it), and is written straight from the textbook maths:
Featherstone's body-frame recursive Newton-Euler algorithm (RNEA), one forward loop and
one backward loop relying on ``parent[i] < i``. They are slow (a Python loop over links)
and that is fine: they serve tests only.

Every function accepts float *or complex* joint arrays with any leading batch axes,
``q (..., n)``, and returns arrays of the matching dtype (transposes are plain transposes,
never conjugates), so that Taylor coefficients in time can be taken by pushing complex
times through them (the Cauchy integral) and tests can take complex-step derivatives.

Conventions (DESIGN.md, cmtm_math.md §1.1, §3.3, §5): spatial vectors are angular-first,
motion ``[omega; v]`` and force ``[n; f]``; link ``i`` is the child of joint ``i``; link
velocities, accelerations and forces are expressed in the link frame (body frame);
momentum and inertia are about the link-frame origin; gravity enters as the base
acceleration ``[0; -g]``.

Symbols
-------
===========  ============  ============================================================
code         shape         meaning
===========  ============  ============================================================
``X_up[i]``  (..., 6, 6)   motion transform from parent-link coordinates to link ``i``
                           coordinates, ``A^-1`` of the joint's relative pose (§1.1)
``S[i]``     (6,)          joint screw in link ``i``'s frame: ``[a; 0]`` revolute,
                           ``[0; a]`` prismatic (§3.1)
``v[i]``     (..., 6)      body velocity (twist) of link ``i``, link frame
``a[i]``     (..., 6)      time derivative of ``v[i]`` (spatial acceleration in body
                           coordinates), plus the base acceleration ``[0; -g]`` when
                           gravity is on
``f[i]``     (..., 6)      net wrench on link ``i`` (I a + v x6* I v); after the backward
                           loop, the wrench transmitted through joint ``i`` into the
                           subtree of ``i``; link frame
``I[i]``     (6, 6)        spatial inertia of link ``i`` about its frame origin (§5)
===========  ============  ============================================================

The oracle (the last section) takes time derivatives of these quantities along polynomial
trajectories by the Cauchy integral (cmtm_math.md §12) and differentiates the resulting
stacks with respect to the trajectory's derivatives by Richardson-extrapolated central
differences: no CMTM, no jet arithmetic, no structured Jacobian.
"""
import math

import numpy as np

from kinematic_trees.joint_types import JOINT_REVOLUTE


# --- spatial algebra (cmtm_math.md §1.1), any dtype, leading batch axes ---

def _transpose(X):
    """The plain transpose of the last two axes."""
    return np.swapaxes(X, -1, -2)


def _apply(X, x):
    """X x for matrices (..., m, m) and vectors (..., m), broadcasting the batch axes."""
    return (X @ x[..., None])[..., 0]


def _skew(w):
    """The cross-product matrices [w x] (..., 3, 3) of 3-vectors w (..., 3)."""
    x, y, z = w[..., 0], w[..., 1], w[..., 2]
    zero = np.zeros_like(x)
    return np.stack([np.stack([zero, -z, y], -1),
                     np.stack([z, zero, -x], -1),
                     np.stack([-y, x, zero], -1)], -2)


def _blocks(top_left, top_right, bottom_left, bottom_right):
    """The 6x6 matrices [[top_left, top_right], [bottom_left, bottom_right]] (..., 6, 6) of
    3x3 blocks (..., 3, 3) with broadcast batch axes; None is a zero block."""
    grid = ((top_left, 0, 0), (top_right, 0, 3), (bottom_left, 3, 0), (bottom_right, 3, 3))
    blocks = [block for block, _, _ in grid if block is not None]
    batch = np.broadcast_shapes(*(np.shape(block)[:-2] for block in blocks))
    out = np.zeros(batch + (6, 6), dtype=np.result_type(*blocks))
    for block, row, column in grid:
        if block is not None:
            out[..., row:row + 3, column:column + 3] = block
    return out


def _motion_cross(u, x):
    """[u x6] x = [w x x_w; v x x_w + w x x_v] for twists u = [w; v] and x (..., 6)."""
    w, v = u[..., :3], u[..., 3:]
    return np.concatenate([np.cross(w, x[..., :3]),
                           np.cross(v, x[..., :3]) + np.cross(w, x[..., 3:])], -1)


def _force_cross(u, h):
    """[u x6*] h = [w x n + v x f; w x f] (= -[u x6]^T h) for u = [w; v], h = [n; f] (..., 6)."""
    w, v = u[..., :3], u[..., 3:]
    return np.concatenate([np.cross(w, h[..., :3]) + np.cross(v, h[..., 3:]),
                           np.cross(w, h[..., 3:])], -1)


def _rotation(axis, angle):
    """exp(angle [axis x]) (..., 3, 3) by Rodrigues' formula, unit axis (3,), angles (...)."""
    K = _skew(axis)
    s, c = np.sin(angle)[..., None, None], np.cos(angle)[..., None, None]
    return np.eye(3) + s * K + (1 - c) * (K @ K)


def _spatial_inertia(mass, com, inertia_com):
    """Spatial inertia (6,6) about the frame origin, angular-first (cmtm_math.md §5).

    I = [[I_c + m [c x][c x]^T, m [c x]], [m [c x]^T, m E]] for mass m, centre of mass c
    and rotational inertia I_c about the centre of mass, all in the link frame.
    """
    C = _skew(com)
    return _blocks(inertia_com + mass * C @ C.T, mass * C, mass * C.T, mass * np.eye(3))


def _inertias(model):
    """Spatial inertias (n, 6, 6) of the links from mass, com and inertia_com."""
    return np.array([_spatial_inertia(model.mass[i], model.com[i], model.inertia_com[i])
                     for i in range(len(model.parent))])


def _transform_up(R, p):
    """A^-1 (..., 6, 6) of poses (R (..., 3, 3), p (..., 3)) of a child frame in its parent:
    maps parent-frame twists to child-frame twists."""
    Rt = _transpose(R)
    return _blocks(Rt, None, -Rt @ _skew(p), Rt)


def _motion_transform(R, p):
    """A = [[R, 0], [[p x] R, R]] (..., 6, 6): maps child-frame twists to the parent frame."""
    return _blocks(R, None, _skew(p) @ R, R)


# --- joint model (cmtm_math.md §3.1) ---

def _joint_pose(model, i, q_i):
    """Poses (R (..., 3, 3), p (..., 3)) of link i's frame in its parent link's frame at
    positions q_i (...).

    The joint motion acts after the constant placement: revolute R = R_0 exp(q [a x]),
    prismatic p = p_0 + R_0 a q.
    """
    R0, p0, axis = model.placement_R[i], model.placement_p[i], model.axis[i]
    batch = np.shape(q_i)
    if model.joint_type[i] == JOINT_REVOLUTE:
        return R0 @ _rotation(axis, q_i), np.broadcast_to(p0, batch + (3,))
    return np.broadcast_to(R0, batch + (3, 3)), p0 + np.multiply.outer(q_i, R0 @ axis)


def _screw(model, i):
    """Joint screw S_i (6,) in link i's frame: [a; 0] revolute, [0; a] prismatic."""
    zero = np.zeros(3)
    if model.joint_type[i] == JOINT_REVOLUTE:
        return np.concatenate([model.axis[i], zero])
    return np.concatenate([zero, model.axis[i]])


def joint_screws(model):
    """Joint screws S (n, 6) in the link frames (cmtm_math.md §3.1)."""
    return np.array([_screw(model, i) for i in range(len(model.parent))])


def _joint_vector(x, model, name):
    """x as an (..., n) array of at least float64 precision (complex stays complex)."""
    x = np.asarray(x)
    n = len(model.parent)
    if x.ndim == 0 or x.shape[-1] != n:
        raise ValueError(f"{name}: expected shape (..., {n}), got {x.shape}; the model has "
                         f"nv={n}")
    return x.astype(np.result_type(x, np.float64), copy=False)


# --- forward pass: velocities and accelerations ---

def _forward_pass(model, q, qd, qdd, a_base):
    """X_up [n x (..., 6, 6)], S (n, 6), v (..., n, 6), a (..., n, 6): the RNEA forward loop.

    v_i = X_up v_parent + S qd_i
    a_i = X_up a_parent + S qdd_i + v_i x6 (S qd_i)
    with v = 0 and a = a_base for the fixed base.
    """
    S = joint_screws(model)
    X_up, v, a = [], [], []
    for i in range(len(model.parent)):
        X_up.append(_transform_up(*_joint_pose(model, i, q[..., i])))
        p = model.parent[i]
        v_parent, a_parent = (np.zeros(6), a_base) if p < 0 else (v[p], a[p])
        v_J = S[i] * qd[..., i, None]
        v.append(_apply(X_up[i], v_parent) + v_J)
        a.append(_apply(X_up[i], a_parent) + S[i] * qdd[..., i, None]
                 + _motion_cross(v[i], v_J))
    return X_up, S, np.stack(v, -2), np.stack(a, -2)


def rnea_naive(model, q, qd, qdd, gravity=True):
    """Joint torques tau (..., n) by the classical body-frame recursive Newton-Euler algorithm.

    q, qd, qdd : (..., n) float or complex, joint positions, velocities, accelerations (our
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
    I = _inertias(model)
    f = [_apply(I[i], a[..., i, :]) + _force_cross(v[..., i, :], _apply(I[i], v[..., i, :]))
         for i in range(len(model.parent))]
    for i in reversed(range(len(model.parent))):
        p = model.parent[i]
        if p >= 0:
            f[p] = f[p] + _apply(_transpose(X_up[i]), f[i])
    return np.stack([f[i] @ S[i] for i in range(len(model.parent))], -1)


def link_velocities_naive(model, q, qd):
    """Body velocities v (..., n, 6) of the links, each in its own link frame, angular-first.

    q, qd : (..., n) float or complex. v_i = X_up v_parent + S_i qd_i.
    """
    q, qd = _joint_vector(q, model, "q"), _joint_vector(qd, model, "qd")
    return _forward_pass(model, q, qd, np.zeros_like(qd), np.zeros(6))[2]


def link_accelerations_naive(model, q, qd, qdd):
    """Link accelerations (..., n, 6), link frame, angular-first, WITHOUT gravity.

    q, qd, qdd : (..., n) float or complex. Row i is d/dt of the body twist ``v_i`` (the
    components in the moving link frame), i.e. Featherstone's spatial acceleration in
    body coordinates. It is not the "classical" acceleration of the frame origin, whose
    linear part is ``a_lin + omega x v_lin``.
    """
    q, qd = _joint_vector(q, model, "q"), _joint_vector(qd, model, "qd")
    qdd = _joint_vector(qdd, model, "qdd")
    return _forward_pass(model, q, qd, qdd, np.zeros(6))[3]


def link_momenta_naive(model, q, qd):
    """Link momenta h_L (..., n, 6) = I_i v_i, about the link-frame origin, link frame, [n; f].

    q, qd : (..., n) float or complex; angular momentum first, linear momentum second.
    """
    return _apply(_inertias(model), link_velocities_naive(model, q, qd))


def link_poses_naive(model, q):
    """World (base-frame) homogeneous poses (..., n, 4, 4) of the link frames at q (..., n)."""
    q = _joint_vector(q, model, "q")
    poses = []
    for i in range(len(model.parent)):
        R, p = _joint_pose(model, i, q[..., i])
        bottom = np.broadcast_to(np.eye(4)[3], p.shape[:-1] + (1, 4))
        T = np.concatenate([np.concatenate([R, p[..., None]], -1), bottom], -2)
        parent = model.parent[i]
        poses.append(T if parent < 0 else poses[parent] @ T)
    return np.stack(poses, -3)


def point_positions_naive(model, q, link_points):
    """World positions (..., n_points, 3) at q (..., n) of points fixed to links:
    p = o_L + R_L r for each (link, r) of ``link_points``, link a name of model.link_names
    or an index, r (3,) in the link frame, (R_L, o_L) the link's pose (link_poses_naive)."""
    T = link_poses_naive(model, q)
    rows = []
    for link, r in link_points:
        i = model.link_names.index(link) if isinstance(link, str) else int(link)
        rows.append(_apply(T[..., i, :3, :3], np.asarray(r, dtype=np.float64))
                    + T[..., i, :3, 3])
    return np.stack(rows, -2)


def mass_matrix_naive(model, q):
    """Joint-space mass matrix M(q) (..., n, n), column j = rnea_naive(q, 0, e_j) without
    gravity."""
    q = _joint_vector(q, model, "q")[..., None, :]          # one row per column of M
    unit = np.eye(q.shape[-1])
    q = np.broadcast_to(q, q.shape[:-2] + unit.shape)
    return _transpose(rnea_naive(model, q, np.zeros_like(q), unit, gravity=False))


# --- the other comprehensive quantities at one time (cmtm_math.md §3, §5) ---

def joint_velocities_naive(model, qd):
    """Joint twists nu_J (..., n, 6) = S_i qd_i in the link frames (§3.1)."""
    qd = _joint_vector(qd, model, "qd")
    return qd[..., None] * joint_screws(model)


def joint_transforms_naive(model, q):
    """Relative motion transforms (..., n, 6, 6) of link i in its parent link's frame."""
    q = _joint_vector(q, model, "q")
    return np.stack([_motion_transform(*_joint_pose(model, i, q[..., i]))
                     for i in range(len(model.parent))], -3)


def link_transforms_naive(model, q):
    """World <- link motion transforms A_L (..., n, 6, 6) of the link frames (§2.4)."""
    T = link_poses_naive(model, q)
    return _motion_transform(T[..., :3, :3], T[..., :3, 3])


def _subtree_sums(model, x):
    """x_J[i] = sum of x[j] over link i and its descendants, x (..., n, 6) in one frame."""
    acc = [x[..., i, :] for i in range(len(model.parent))]
    for i in reversed(range(len(model.parent))):
        if model.parent[i] >= 0:
            acc[model.parent[i]] = acc[model.parent[i]] + acc[i]
    return np.stack(acc, -2)


MOTION_FIELDS = ("v_L", "h_L", "w_h_L", "h_J", "w_h_J", "f_L", "f_J", "tau")
"""The fields of cmtm.Motion, as returned by :func:`motion_naive`."""


def motion_naive(model, q, qd, qdd):
    """Every field of cmtm.Motion at one time, from the naive references: a dict of arrays
    (..., n, 6) (``tau`` (..., n)), link-major, angular-first, raw values (no derivatives).

    w_h_L = A^* h_L (A^* = A^{-T} maps link wrenches to the world); the joint momentum is
    the subtree sum, in the world and back in the link frame (A^T); f_L = I (a - [0; R^T g])
    + v x* I v is the wrench other than gravity; f_J the subtree sum of the f_L.
    """
    q, qd = _joint_vector(q, model, "q"), _joint_vector(qd, model, "qd")
    qdd = _joint_vector(qdd, model, "qdd")
    T = link_poses_naive(model, q)
    R, p = T[..., :3, :3], T[..., :3, 3]
    to_world, to_link = _transpose(_transform_up(R, p)), _transpose(_motion_transform(R, p))
    I = _inertias(model)
    _, _, v, a = _forward_pass(model, q, qd, qdd, np.zeros(6))
    h_L = _apply(I, v)
    w_h_L = _apply(to_world, h_L)
    w_h_J = _subtree_sums(model, w_h_L)
    gravity = np.concatenate([np.zeros(3), np.asarray(model.gravity, dtype=np.float64)])
    a = a - _apply(_transform_up(R, p), gravity)
    f_L = _apply(I, a) + _force_cross(v, h_L)
    f_J = _apply(to_link, _subtree_sums(model, _apply(to_world, f_L)))
    return {"v_L": v, "h_L": h_L, "w_h_L": w_h_L, "h_J": _apply(to_link, w_h_J),
            "w_h_J": w_h_J, "f_L": f_L, "f_J": f_J, "tau": rnea_naive(model, q, qd, qdd)}


# --- Taylor coefficients by the Cauchy integral ---

def _circle(radius, n_points):
    """The offsets radius exp(2 pi i m / N), m = 0..N-1 (N = n_points), complex (N,)."""
    return radius * np.exp(2j * np.pi * np.arange(n_points) / n_points)


def _cauchy(samples, radius, order):
    """Taylor coefficients c_0..c_order (order+1, ...) from samples (N, ...) on the circle
    of :func:`_circle`: the FFT over the samples divided by N r^l, real part."""
    coeffs = np.fft.fft(samples, axis=0)[:order + 1] / samples.shape[0]
    scale = radius ** np.arange(order + 1, dtype=np.float64)
    return (coeffs / scale.reshape((order + 1,) + (1,) * (samples.ndim - 1))).real


def taylor_coefficients(f, t0, order, radius=3.0, n_points=32):
    """Taylor coefficients c_l = f^(l)(t0) / l!, l = 0..order, by the Cauchy integral (FFT).

    f : callable mapping a complex scalar time to an array (any shape, complex dtype when
        the time is complex), analytic on the closed disc |t - t0| <= radius and real on
        the real axis. t0 : float. order : int >= 0.
    Returns (order+1, *f_shape) float64, Taylor-scaled (the raw derivative is
    ``math.factorial(l) * c[l]``).

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
    (tests of multi-link models use r = 0.5).

    >>> c = taylor_coefficients(np.exp, 0.0, 4)
    >>> np.allclose(c, [1, 1, 1/2, 1/6, 1/24], rtol=1e-14, atol=0)
    True
    """
    if not 0 <= order < n_points:
        raise ValueError(f"order: expected 0 <= order < n_points={n_points}, got {order}")
    samples = np.array([np.asarray(f(t0 + z), dtype=np.complex128)
                        for z in _circle(radius, n_points)])
    return _cauchy(samples, radius, order)


# --- Jacobians by central differences (Richardson-extrapolated) ---

FD_METHODS = ("central", "richardson")
"""``method`` values of :func:`central_jacobian`."""

CENTRAL_STEP = np.finfo(np.float64).eps ** (1.0 / 3.0)
"""Default relative step of plain central differences: h = eps**(1/3) max(1, |x|) balances
truncation (~ h^2 |f'''| / 6) against round-off (~ eps |f| / h), both ~ eps**(2/3) ~ 4e-11."""

RICHARDSON_STEP = 0.5
"""Default relative base step of the Richardson variant (the largest of its halved steps)."""

RICHARDSON_LEVELS = 4
"""Default number of halvings of the Richardson variant: steps h0, h0/2, ..., h0/2**4."""


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


# --- tangent stacks of transform variations (cmtm_math.md §1.1, §6.2) ---

def factorial_column(n, ndim):
    """(0!, 1!, ..., (n-1)!) shaped (n, 1, ..., 1) with ``ndim`` axes in all."""
    return np.array([float(math.factorial(l)) for l in range(n)]).reshape((n,) + (1,) * (ndim - 1))


def _taylor_inverse_blocks(X):
    """Blocks of T(X)^{-1} = T(X^-) for Taylor blocks X (..., k+1, 6, 6) (§1.3, J1):
    X^-_0 = X_0^{-1}, X^-_l = -X_0^{-1} sum_{m=1..l} X_m X^-_{l-m}."""
    X0_inv = np.linalg.inv(X[..., 0, :, :])
    inverse = [X0_inv]
    for l in range(1, X.shape[-3]):
        acc = sum(X[..., m, :, :] @ inverse[l - m] for m in range(1, l + 1))
        inverse.append(-X0_inv @ acc)
    return np.stack(inverse, axis=-3)


def tangent_jacobian(X, dX, raw=True):
    """Jacobian of the body-frame tangent stacks of the transforms whose Taylor blocks
    X (S, k+1, n, 6, 6) have the derivatives dX (S, k+1, n, 6, 6, K, nv) with respect to
    K x nv inputs: (S, k+1, 6 n, K, nv), link-major, angular-first.

    With T(X) the block-Toeplitz matrix of the blocks, T(X)^{-1} dT(X) = T([da_l x]) (the
    variation [da x] = A^{-1} dA of §1.1 in Taylor form, §6.2): the first block column of
    T(X)^{-1} dT(X) gives [da_l x], whose 6-vector is read from the
    [[omega x], 0], [[v x], [omega x]]] block. ``raw``: da_l becomes the raw derivative by
    the factor l!; otherwise the Taylor coefficients are returned.
    """
    k = X.shape[1] - 1
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
    if raw:
        da = da * factorial_column(k + 1, 5)
    return da.reshape((X.shape[0], k + 1, 6 * X.shape[2]) + da.shape[-2:])


# --- the oracle: stacks and Jacobians of every quantity (cmtm_math.md §7.1, §12) ---

INPUT_OFFSET = {"joint_velocity": 1, "joint_tangent": 0, "link_tangent": 0,
                "link_velocity": 1, "link_momentum": 1, "link_momentum_world": 1,
                "joint_momentum_world": 1, "joint_momentum": 1, "link_force": 2,
                "joint_force": 2, "joint_torque": 2}
"""s such that output order l depends on q^(0..l+s) (cmtm_math.md §7.1); K_in = k + 1 + s.
Written out again here so that the references do not read the engine's tables."""

FIELD_OF = {"link_velocity": "v_L", "link_momentum": "h_L", "link_momentum_world": "w_h_L",
            "joint_momentum_world": "w_h_J", "joint_momentum": "h_J", "link_force": "f_L",
            "joint_force": "f_J", "joint_torque": "tau"}
"""The quantities whose stacks are time derivatives of a Motion field, and that field."""

_TANGENT_TRANSFORMS = {"link_tangent": link_transforms_naive,
                       "joint_tangent": joint_transforms_naive}
"""The tangents and the transforms whose variations they are: [dx x] = A^{-1} dA."""

ORACLE_RADIUS = 0.5
"""Radius of the time circle: rotations along a chain compose exp(|Im q_j|), so the
samples stay within ~e^2 of their real values on trees of a dozen joints."""

ORACLE_POINTS = 32
"""Points on the time circle: aliasing ~ r^N |c_{l+N}| is far below round-off for N = 32,
and the round-off on the l-th coefficient, ~ eps max|f| / r^l, stays ~1e-13 up to l = 8."""


def _trajectory(points, offsets):
    """q, q', q'' (N_t, N, nv) at the times t0 + offsets (N_t,) of the polynomials
    q(t0 + z) = sum_r points[:, r] z^r / r! (raw derivatives points (N, K, nv) at t0)."""
    K = points.shape[1]
    derivatives = []
    for d in range(3):
        powers = np.array([[z ** (r - d) / math.factorial(r - d) if r >= d else 0.0
                            for r in range(K)] for z in offsets])
        derivatives.append(np.einsum("tr,nrv->tnv", powers, points))
    return derivatives


def taylor_stacks(values, points, order, radius=ORACLE_RADIUS, n_points=ORACLE_POINTS):
    """Taylor coefficients in time (N, order+1, ...) of values(q, qd, qdd) along the
    polynomial trajectories whose raw derivatives at t0 are points (N, K, nv).

    values maps q, q', q'' (N_t, N, nv) complex to (N_t, N, ...) complex, batched over the
    N_t times of the Cauchy circle and the N trajectories; the polynomial has degree K-1,
    so a quantity of order l that depends on q^(0..l+s) is exact for l + s < K.
    """
    samples = values(*_trajectory(points, _circle(radius, n_points)))
    return np.moveaxis(_cauchy(samples, radius, order), 0, 1)


def _stack_values(model, quantities):
    """The naive quantities at one time, side by side: a function (q, qd, qdd) (..., nv)
    -> (..., sum of m), each block flattened link-major (joint_velocity or a Motion field)."""
    def values(q, qd, qdd):
        fields = motion_naive(model, q, qd, qdd) if set(quantities) & set(FIELD_OF) else {}
        parts = [joint_velocities_naive(model, qd) if name == "joint_velocity"
                 else fields[FIELD_OF[name]] for name in quantities]
        return np.concatenate([part.reshape(q.shape[:-1] + (-1,)) for part in parts], -1)

    return values


def _split_rows(model, quantities, array, axis):
    """{name: block} of ``array`` cut along ``axis`` into the quantities' rows, side by side
    as :func:`_stack_values` puts them: nv for joint_torque, 6 nv for the others."""
    nv = len(model.parent)
    widths = [nv if name == "joint_torque" else 6 * nv for name in quantities]
    return dict(zip(quantities, np.split(array, np.cumsum(widths)[:-1], axis=axis)))


def oracle_stacks(model, q_stack, order, radius=ORACLE_RADIUS, n_points=ORACLE_POINTS):
    """Raw time-derivative stacks of every cmtm.Motion field, orders 0..order, at the
    samples of q_stack (n_samples, K, nv) raw (K >= order + 3): a dict of
    (n_samples, order+1, nv, 6) arrays (``tau`` (n_samples, order+1, nv)), the layout of
    cmtm.motion, from the Cauchy integral of :func:`motion_naive` along polynomials.
    """
    points = np.asarray(q_stack, dtype=np.float64)[:, :order + 3]
    quantities = list(FIELD_OF)
    raw = (taylor_stacks(_stack_values(model, quantities), points, order, radius, n_points)
           * factorial_column(order + 1, 2))
    n = len(model.parent)
    shapes = {name: (n,) if name == "joint_torque" else (n, 6) for name in quantities}
    return {FIELD_OF[name]: block.reshape(block.shape[:2] + shapes[name])
            for name, block in _split_rows(model, quantities, raw, -1).items()}


def _trajectory_jacobian(values, stack, order, taylor, radius, n_points):
    """d c_l / d x (S, order+1, ..., K, nv) for the Taylor coefficients in time c_l of
    values along the polynomials of stack (S, K, nv) raw, with respect to x = the raw
    derivatives (taylor False) or the Taylor coefficients q_hat_r = q^(r) / r! (taylor
    True), by Richardson-extrapolated central differences (:func:`central_jacobian`)."""
    to_raw = factorial_column(stack.shape[1], 2) if taylor else np.ones((stack.shape[1], 1))

    def coefficients(points):
        return taylor_stacks(values, points * to_raw, order, radius, n_points)

    return central_jacobian(coefficients, stack / to_raw, method="richardson")


def _tangent_oracle(model, quantity, stack, order, taylor, radius, n_points):
    """Jacobian (S, order+1, 6 n, order+1, nv) of a tangent: the variation of the link
    transforms (world <- link) or joint transforms (parent <- child), [dx x] = A^{-1} dA."""
    def transforms(q, qd, qdd):
        return _TANGENT_TRANSFORMS[quantity](model, q)

    X = taylor_stacks(transforms, stack, order, radius, n_points)
    dX = _trajectory_jacobian(transforms, stack, order, taylor, radius, n_points)
    return tangent_jacobian(X, dX, raw=not taylor)


def oracle_jacobians(model, q_stack, quantities, order=0, taylor=False, radius=ORACLE_RADIUS,
                     n_points=ORACLE_POINTS):
    """Jacobians of quantities of cmtm.QUANTITIES from the naive references alone, in the
    layout of cmtm.jacobians: a dict name -> J.

    model : kinematic_trees.CompiledTree. q_stack : (n_samples, K, nv) or (K, nv) float64,
    raw derivatives, K >= K_in = order + 1 + s for every quantity (s in
    :data:`INPUT_OFFSET`; extra orders are ignored). quantities : names (a str is one).
    taylor : False for raw blocks d y^(j) / d q^(r); True for Taylor-scaled blocks
    d y_hat_j / d q_hat_r, differentiated with respect to the Taylor coefficients
    q_hat_r = q^(r) / r! and never multiplied by factorials.
    Returns J (n_samples, order+1, m, K_in, nv) float64 per name, m = nv (joint_torque)
    or 6 nv; the sample axis is dropped for a single instant.

    Each input stack defines the polynomial trajectory q(t0 + z) = sum_r q^(r) z^r / r!.
    Velocities, momenta, forces and torques: the Taylor coefficients in time of
    :func:`motion_naive` (or S qd) along it (:func:`taylor_stacks`), differentiated with
    respect to the stack by Richardson-extrapolated central differences, all of them from
    one set of perturbed evaluations. Tangents: the same derivative of the Taylor blocks
    of the link or joint transforms, turned into tangent stacks by
    :func:`tangent_jacobian`.

    >>> import kinematic_trees as kt
    >>> arm = kt.compile_tree(kt.two_link_planar())
    >>> J = oracle_jacobians(arm, np.zeros((3, 2)), "link_velocity")["link_velocity"]
    >>> J.shape, float(np.round(J[0, 2, 1, 0], 12))   # d omega_z of link 0 / d q'_0
    ((1, 12, 2, 2), 1.0)
    """
    names = (quantities,) if isinstance(quantities, str) else tuple(quantities)
    for name in names:
        if name not in INPUT_OFFSET:
            raise ValueError(f"quantity: expected one of {', '.join(INPUT_OFFSET)}, got {name!r}")
    stack = np.asarray(q_stack, dtype=np.float64)
    single = stack.ndim == 2
    stack = stack.reshape((-1,) + stack.shape[-2:])
    result = {name: _tangent_oracle(model, name, stack[:, :order + 1], order, taylor, radius,
                                    n_points)
              for name in names if name in _TANGENT_TRANSFORMS}
    stacked = [name for name in names if name not in _TANGENT_TRANSFORMS]
    if stacked:
        K = order + 1 + max(INPUT_OFFSET[name] for name in stacked)
        J = _trajectory_jacobian(_stack_values(model, stacked), stack[:, :K], order, taylor,
                                 radius, n_points)
        if not taylor:
            J = J * factorial_column(order + 1, 4)
        for name, block in _split_rows(model, stacked, J, 2).items():
            result[name] = block[:, :, :, :order + 1 + INPUT_OFFSET[name]]
    return {name: result[name][0] if single else result[name] for name in names}


def _point_values(model, link_points):
    """(q, qd, qdd) (..., nv) -> the points' world positions flattened (..., 3 n_points)."""
    def values(q, qd, qdd):
        return point_positions_naive(model, q, link_points).reshape(q.shape[:-1] + (-1,))
    return values


def oracle_point_stacks(model, q_stack, link_points, order, radius=ORACLE_RADIUS,
                        n_points=ORACLE_POINTS):
    """Raw world velocities and their derivatives p', ..., p^(order+1) of points fixed to
    links (:func:`point_positions_naive`), (n_samples, order+1, n_points, 3), at the samples
    of q_stack (n_samples, K, nv) raw, K >= order + 2: the Cauchy integral of the positions
    along the polynomial trajectories (:func:`taylor_stacks`), times l!."""
    stack = np.asarray(q_stack, dtype=np.float64)[:, :order + 2]
    raw = (taylor_stacks(_point_values(model, link_points), stack, order + 1, radius,
                         n_points) * factorial_column(order + 2, 2))
    return raw[:, 1:].reshape(raw.shape[:1] + (order + 1, -1, 3))


def oracle_point_jacobian(model, q_stack, link_points, order=0, radius=ORACLE_RADIUS,
                          n_points=ORACLE_POINTS):
    """d p^(l+1) / d q^(r) of the stacks of :func:`oracle_point_stacks`, in the layout of
    cmtm.point_jacobian: (n_samples, order+1, 3 n_points, order+2, nv), rows point-major,
    from Richardson-extrapolated central differences of the Cauchy coefficients with
    respect to the raw stack (as :func:`oracle_jacobians`)."""
    stack = np.asarray(q_stack, dtype=np.float64)[:, :order + 2]
    J = _trajectory_jacobian(_point_values(model, link_points), stack, order + 1, False,
                             radius, n_points)
    return (J * factorial_column(order + 2, 4))[:, 1:]
