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
"""
import numpy as np

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
    whose complex extension grows fast (e.g. sin of a high-degree polynomial q(t)) need
    a smaller r.

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
