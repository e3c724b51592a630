"""Order-0 joint-torque Jacobian d tau / d(q, q', q'') in world coordinates, batched over
samples (in chunks on threads, ``cmtm.api.run_chunks``): the k = 0 case of Lemma 6
(cmtm_math.md §5, §7-§8) written on rotations and translations, with no CMTM block and
no allocation.

World frame, spatial vectors at the world origin (angular-first), the base accelerating
by -g so that gravity is exact (§3.3). Per link i, with p = p(i):

    s_i    = [R_i a_i; p_i x R_i a_i] (revolute) or [0; R_i a_i]   world joint screw
    v_i    = v_p + s_i q'_i,        s'_i = v_p x s_i                twist, screw rate
    alpha_i = alpha_p + s'_i q'_i + s_i q''_i                       spatial acceleration
    s''_i  = alpha_p x s_i + v_p x s'_i
    I_i    = A^{-T} I A^{-1},       I'_i = v_i x^* I_i - I_i v_i x  world inertia, its rate
    f_i    = I_i alpha_i + v_i x^* I_i v_i                          link force (= d/dt I_i v_i)

and over the subtree C(i): composite inertia I^C_i and its rate I^C'_i, subtree momentum
h_i and joint force F_i = h'_i, tau_i = s_i . F_i. With

    e_i = s_i x^* h_i,  b_i = I^C_i s_i,  gamma_i = I^C'_i s_i,  c_i = gamma_i - e_i,
    y_i = e_i + I^C_i s'_i  (the subtree momentum's rate of turn under dq_i),

the blocks are dot products of 6-vectors (the L = 2 pair formulas of
``cmtm.torque_jacobian`` with a_j = -s'_j there):

    j in support(i):     d tau_i / d q_j   = s'_j . c_i + s''_j . b_i
                         d tau_i / d q'_j  = s_j . c_i + 2 s'_j . b_i
                         d tau_i / d q''_j = s_j . b_i
    j strict descendant: d tau_i / d q_j   = s_i . y'_j
                         d tau_i / d q'_j  = s_i . (b'_j + y_j)
                         d tau_i / d q''_j = s_i . b_j

with y'_j = s'_j x^* h_j + s_j x^* F_j + I^C'_j s'_j + I^C_j s''_j and
b'_j = gamma_j + I^C_j s'_j. Pairs on different branches are zero.

Inertias and their rates are kept in the ten numbers of a rigid body's inertia rather than
as 6x6 matrices: I = [[I_O, [mc x]], [[mc x]^T, m E]] about the world origin (mass m, first
moment mc, rotational inertia I_O), and its rate, which has the same form with m' = 0
(``inertia_rate_add``); sums over subtrees and products with 6-vectors (``inertia_add``)
keep that form, as in ``cmtm.torque_jacobian``'s jets. Measured against the 6x6 matrices
before (one thread, through ``cmtm.jacobian``, 200 samples (40 for the 32-link chain),
alternating runs in separate processes, medians of six): order 0 2-link chain 1.22 ->
1.01 us per sample, Panda 3.9 -> 3.1, 32-link chain 27.1 -> 23.1; order 1 2-link chain
2.82 -> 2.46, Panda 13.5 -> 12.6, 32-link chain 161 -> 166 (where the pairs dominate);
order 2 4.5 -> 3.5, 22.2 -> 18.4, 272 -> 261. Results against the 6x6 form, relative to
the largest entry (Panda and a 9-link tree with prismatic joints, 5 samples): order 0
1e-16 to 4e-16, order 1 1e-15 to 2e-15, order 2 3e-15 to 1e-14.

Each link's 6-vectors (screw rates, twist, acceleration, momentum, force, pair factors) are
formed in registers, as tuples (``inertia_times6``, ``plus_scaled6``, and
``cmtm.spatial``'s ``motion_cross6`` and ``force_cross6``), and stored once: accumulated
into workspace arrays term by term, as before 2026-12-04, they made the compiler load the
inputs again after every store (the arrays might alias). The same sums in the same order,
identical bits. Kernel alone, one thread, 200 samples (40 for the 32-link chain), us per
sample, three alternating rounds in separate processes (host load 2-3 on 2 cores): the
blocks, 3-link chain 0.661-0.680 -> 0.536-0.557, Panda 1.57-1.66 -> 1.32-1.36, 32-link
chain 9.26-9.79 -> 8.37-8.65; the torques alone (which now also skip s'', the inertia rates
and the subtree sums of inertia and momentum) 0.314-0.346 -> 0.236-0.243, 0.705-0.735 ->
0.533-0.576, 3.12-3.21 -> 2.49-2.56. Cold compile of the kernel (first call, empty cache,
three alternating pairs) 5.3, 7.8, 7.1 s before, 5.1, 7.0, 7.2 s after.

=========================  ================  ==========  =================================
symbol                     code              shape       meaning (world frame, raw)
=========================  ================  ==========  =================================
R_i, p_i (link in parent)  ``R, p``          (3,3), (3)  link_pose_in_parent, one link
R_i, p_i (link in world)   ``w_R, w_p``      (n,3,3)...  pose of link i in the base
v, alpha                   ``w_v, w_alpha``  (n, 6)      twist, spatial acceleration
I^C: m, mc, I_O            ``w_m, w_mc,``    (n, 1),     composite inertia
                           ``w_IO``          (n, 3)...
I^C': mc', I_O'            ``w_dmc, w_dIO``  (n, 3)...   its rate (m' = 0)
h, F                       ``w_h, w_F``      (n, 6)      subtree momentum, joint force
c, b                       ``row``           (2, 6, n)   per output joint i
y', b' + y, b              ``descendant``    (3, 6, n)   per descendant input joint j
s, s', s''                 ``columns``       (3, 6, n)   joint screws and their rates
=========================  ================  ==========  =================================
"""
from typing import NamedTuple

import numpy as np

from cmtm._jit import claim_samples, index_range, jit, jit_inline, jit_kernel, jit_leaf
from cmtm.rnea import (base_motion, composite_inertia_to_parent_add, link_pose_in_parent,
                       world_pose)
from cmtm.spatial import JOINT_REVOLUTE, force_cross6, motion_cross6, motion_cross_add


class TorqueDerivativesWorkspace(NamedTuple):
    """Work arrays of :func:`torque_derivatives_kernel`, one slot per chunk (leading axis)."""

    E: np.ndarray
    R: np.ndarray
    p: np.ndarray
    w_R: np.ndarray
    w_p: np.ndarray
    w_v: np.ndarray
    w_alpha: np.ndarray
    w_m: np.ndarray
    w_mc: np.ndarray
    w_IO: np.ndarray
    w_dmc: np.ndarray
    w_dIO: np.ndarray
    w_h: np.ndarray
    w_F: np.ndarray
    w_v0: np.ndarray
    w_a0: np.ndarray
    first_moment: np.ndarray
    rotational_inertia: np.ndarray
    identity: np.ndarray
    origin: np.ndarray
    row: np.ndarray
    descendant: np.ndarray
    columns: np.ndarray


def torque_derivatives_workspace(kernel_model, n_chunks):
    """A :class:`TorqueDerivativesWorkspace` for a KernelModel and n_chunks chunks. Shared
    by the chunks: the base pose (identity, origin) and writable copies of the link mass
    properties (so that ``composite_inertia_to_parent_add`` sees the array types of
    ``crba_sample`` and compiles once)."""
    n = kernel_model.parent.shape[0]

    def work(*shape):
        return np.empty((n_chunks,) + shape)
    return TorqueDerivativesWorkspace(
        E=work(3, 3), R=work(3, 3), p=work(3), w_R=work(n, 3, 3), w_p=work(n, 3),
        w_v=work(n, 6), w_alpha=work(n, 6),
        w_m=work(n, 1), w_mc=work(n, 3), w_IO=work(n, 3, 3), w_dmc=work(n, 3),
        w_dIO=work(n, 3, 3), w_h=work(n, 6), w_F=work(n, 6), w_v0=work(6), w_a0=work(6),
        first_moment=np.array(kernel_model.first_moment),
        rotational_inertia=np.array(kernel_model.rotational_inertia),
        identity=np.eye(3), origin=np.zeros(3), row=work(2, 6, n),
        descendant=work(3, 6, n), columns=work(3, 6, n))


@jit_inline
def link_world_pose(model, i, q_i, E, R, p, identity, origin, w_R, w_p, s):
    """Pose of link i in the base, (w_R[i], w_p[i]) = its parent's pose (the base's:
    identity, origin) times its pose in the parent (R, p: ``link_pose_in_parent``, with
    E), and its world joint screw s (``world_screw``): the first lines of the per-link
    recursion of every world-frame kernel (here, ``cmtm.velocity_derivatives``,
    ``cmtm.torque_jacobian``)."""
    par = model.parent[i]
    link_pose_in_parent(model.joint_type[i], model.axis[i], model.placement_R[i],
                        model.placement_p[i], q_i, E, R, p)
    if par < 0:
        world_pose(identity, origin, R, p, w_R[i], w_p[i])
    else:
        world_pose(w_R[par], w_p[par], R, p, w_R[i], w_p[i])
    world_screw(model.joint_type[i], model.axis[i], w_R[i], w_p[i], s)


@jit_inline
def screw_twist_jets(v_parent, q, i, rate_scale, s, v):
    """The screw and twist jets of link i from its parent's twist jets v_parent and its
    world screw s[0] (``link_world_pose``), on Taylor coefficients (cmtm_math.md §2.5, §5
    in world coordinates: s' = v_p x s, v = v_p + s q'):

        (m+1) s_{m+1} = sum_{a<=m} v_p,a x s_{m-a}        for m + 1 < len(s)
        v_m = v_p,m + sum_{a<=m} s_a q'_{m-a}              for m < len(v)

    with the Taylor coefficients of the joint rate q'_b = q[b+1, i] * rate_scale[b]:
    rate_scale 1/b! on raw derivative rows (``cmtm.velocity_derivatives``), b+1 on
    Taylor-scaled rows (``cmtm.torque_jacobian``). The twist rows are accumulated term by
    term over a, the six components innermost: one thread, us per sample, three
    alternating runs, against each component summed over a in turn: order-1 torque
    Jacobian of the Panda 8.8-9.6 against 10.6-11.6, 32-link chain 89-99 against 100-111,
    orders 2-3 4-15 % faster; the same sums in the same order, identical bits.

    The one copy of this recursion in the two kernels. Measured against the copy each kernel
    had before (kernel alone, one thread, 200 samples, 15 rounds alternating in one process,
    identical bits), median ratios old/new: link velocity 1.00-1.03 (2-, 4-, 8-link chains
    and the Panda, orders 0-2), order >= 1 torque 0.97-0.99 (the same models and the 32-link
    chain). As a ``jit_leaf`` instead, the torque kernel was 3-17 % slower."""
    for m in range(s.shape[0] - 1):
        for r in range(6):
            s[m + 1, r] = 0.0
        for a in range(m + 1):
            motion_cross_add(v_parent[a], s[m - a], 1.0 / (m + 1), s[m + 1])
    for m in range(v.shape[0]):
        for r in range(6):
            v[m, r] = v_parent[m, r]
        for a in range(m + 1):
            rate = q[m - a + 1, i] * rate_scale[m - a]
            for r in range(6):
                v[m, r] += s[a, r] * rate


@jit_leaf
def world_screw(joint_type, axis, w_R, w_p, s):
    """s = [u; p x u] with u = w_R a (revolute: a line through p), or [0; w_R a]."""
    u0 = w_R[0, 0] * axis[0] + w_R[0, 1] * axis[1] + w_R[0, 2] * axis[2]
    u1 = w_R[1, 0] * axis[0] + w_R[1, 1] * axis[1] + w_R[1, 2] * axis[2]
    u2 = w_R[2, 0] * axis[0] + w_R[2, 1] * axis[1] + w_R[2, 2] * axis[2]
    if joint_type == JOINT_REVOLUTE:
        s[0], s[1], s[2] = u0, u1, u2
        s[3] = w_p[1] * u2 - w_p[2] * u1
        s[4] = w_p[2] * u0 - w_p[0] * u2
        s[5] = w_p[0] * u1 - w_p[1] * u0
    else:
        s[0], s[1], s[2] = 0.0, 0.0, 0.0
        s[3], s[4], s[5] = u0, u1, u2


@jit_leaf
def inertia_times6(m, mc, I_O, x):
    """I x as a 6-tuple for the spatial inertia I = [[I_O, [mc x]], [[mc x]^T, m E]] (§2.3)
    given by its mass m, first moment mc and rotational inertia I_O: [I_O w + mc x u;
    m u - mc x w] for x = [w; u] (the value form of ``cmtm.rnea.inertia_times``)."""
    w0, w1, w2, u0, u1, u2 = x[0], x[1], x[2], x[3], x[4], x[5]
    return (I_O[0, 0] * w0 + I_O[0, 1] * w1 + I_O[0, 2] * w2 + (mc[1] * u2 - mc[2] * u1),
            I_O[1, 0] * w0 + I_O[1, 1] * w1 + I_O[1, 2] * w2 + (mc[2] * u0 - mc[0] * u2),
            I_O[2, 0] * w0 + I_O[2, 1] * w1 + I_O[2, 2] * w2 + (mc[0] * u1 - mc[1] * u0),
            m * u0 - (mc[1] * w2 - mc[2] * w1),
            m * u1 - (mc[2] * w0 - mc[0] * w2),
            m * u2 - (mc[0] * w1 - mc[1] * w0))


@jit_leaf
def inertia_add(m, mc, I_O, x, scale, out):
    """out += scale I x (:func:`inertia_times6`), the six products formed before the first
    store. The accumulating form of ``cmtm.rnea.inertia_times``, which the order-0 RNEA
    keeps: written as zeroing then this, inverse_dynamics was 3-5 % slower (Panda, 1000
    samples, and a 128-link chain; ten alternating runs, identical bits)."""
    product = inertia_times6(m, mc, I_O, x)
    for r in range(6):
        out[r] += scale * product[r]


@jit_leaf
def plus_scaled6(a, scale, b):
    """a + scale b for 6-vectors (tuples or arrays), as a 6-tuple: ``out += scale b`` of
    the accumulating helpers with ``out`` in registers (a = ZERO6 for ``out`` zeroed)."""
    return (a[0] + scale * b[0], a[1] + scale * b[1], a[2] + scale * b[2],
            a[3] + scale * b[3], a[4] + scale * b[4], a[5] + scale * b[5])


@jit_leaf
def vector6(x):
    """The six entries of x as a tuple (loaded once, so that later stores cannot make the
    compiler load them again)."""
    return (x[0], x[1], x[2], x[3], x[4], x[5])


@jit_leaf
def store6(x, out):
    """out[:6] = x."""
    out[0], out[1], out[2], out[3], out[4], out[5] = x[0], x[1], x[2], x[3], x[4], x[5]


ZERO6 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
"""The zeroed 6-vector that the register forms accumulate into (0 + x, as the array forms
on a zeroed ``out``: the same bits, signed zeros included)."""


@jit
def inertia_conv(m, mc, I_O, x, scale, out):
    """out[n] += scale sum_{p<=n} I_p x_{n-p} for n < len(out): the jet product (Taylor
    coefficients) of an inertia jet I_p = (m if p = 0 else 0, mc[p], I_O[p]) (the mass is
    constant) and a motion jet x, by :func:`inertia_add` (``cmtm.taylor.conv_block_vec`` on
    the ten numbers of an inertia instead of its 6x6 matrix)."""
    for n in range(out.shape[0]):
        for p in range(n + 1):
            inertia_add(m if p == 0 else 0.0, mc[p], I_O[p], x[n - p], scale, out[n])


@jit_leaf
def inertia_rate_add(v, m, mc, I_O, dmc, dI_O):
    """(dmc, dI_O) += the rate I' = v x^* I - I v x of the spatial inertia (m, mc, I_O) of
    :func:`inertia_add` moving with twist v = [w; u] (cmtm_math.md §5), which has the same
    form: m' = 0 and, block by block of the 6x6 product,

        mc'  = w x mc + m u
        I_O' = [w x] I_O - I_O [w x] - (mc u^T + u mc^T) + 2 (u . mc) E

    where [w x] I_O - I_O [w x] = G + G^T with G = [w x] I_O (I_O symmetric); the inputs
    are loaded once, before the first store."""
    v, mc = vector6(v), (mc[0], mc[1], mc[2])     # loaded before the first store
    I_O = ((I_O[0, 0], I_O[0, 1], I_O[0, 2]), (I_O[1, 0], I_O[1, 1], I_O[1, 2]),
           (I_O[2, 0], I_O[2, 1], I_O[2, 2]))
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    dmc[0] += w1 * mc[2] - w2 * mc[1] + m * u0
    dmc[1] += w2 * mc[0] - w0 * mc[2] + m * u1
    dmc[2] += w0 * mc[1] - w1 * mc[0] + m * u2
    twice_uc = 2.0 * (u0 * mc[0] + u1 * mc[1] + u2 * mc[2])
    for r in range(3):
        r1, r2 = (r + 1) % 3, (r + 2) % 3
        for k in range(3):
            k1, k2 = (k + 1) % 3, (k + 2) % 3
            g_rk = v[r1] * I_O[r2][k] - v[r2] * I_O[r1][k]      # ([w x] I_O)[r, k]
            g_kr = v[k1] * I_O[k2][r] - v[k2] * I_O[k1][r]
            dI_O[r, k] += g_rk + g_kr - (mc[r] * v[3 + k] + v[3 + r] * mc[k]) \
                + (twice_uc if r == k else 0.0)


@jit_inline
def forward_pass(model, ws, chunk, q, qd, qdd, blocks):
    """Poses, screws s and s' (into ``columns``, component-major, as the pair loops read
    them), twists, accelerations, and per link the world inertia I_i (into w_m, w_mc,
    w_IO), the momentum I_i v_i (w_h) and the force f_i (w_F): the first loop of the module
    docstring; with ``blocks`` (what only the blocks read) also s''_i and the inertia's
    rate (w_dmc, w_dIO), else s'', w_dmc, w_dIO and w_h are left as they are. Each link's
    6-vectors are formed in registers (the ``*6`` forms, ZERO6 for the arrays the
    accumulating form zeroed) and stored once: the same sums in the same order as
    accumulating into the workspace arrays, which made the compiler load the inputs again
    after every store (they might alias)."""
    for i in range(model.parent.shape[0]):
        par = model.parent[i]
        w_R, w_p = ws.w_R[chunk, i], ws.w_p[chunk, i]
        m, mc, I_O = ws.w_m[chunk, i], ws.w_mc[chunk, i], ws.w_IO[chunk, i]
        link_world_pose(model, i, q[i], ws.E[chunk], ws.R[chunk], ws.p[chunk], ws.identity,
                        ws.origin, ws.w_R[chunk], ws.w_p[chunk], ws.columns[chunk, 0, :, i])
        if par < 0:
            v_par, alpha_par = ws.w_v0[chunk], ws.w_a0[chunk]   # base at rest, accelerating at -g
        else:
            v_par, alpha_par = ws.w_v[chunk, par], ws.w_alpha[chunk, par]
        s = vector6(ws.columns[chunk, 0, :, i])
        v_par, alpha_par = vector6(v_par), vector6(alpha_par)
        ds = plus_scaled6(ZERO6, 1.0, motion_cross6(v_par, s))     # s' = v_p x s
        alpha = link_acceleration(alpha_par, ds, s, qd[i], qdd[i])
        v = plus_scaled6(v_par, qd[i], s)                           # v = v_p + s q'
        store6(ds, ws.columns[chunk, 1, :, i])
        store6(v, ws.w_v[chunk, i])
        store6(alpha, ws.w_alpha[chunk, i])
        m[0] = 0.0
        zero_inertia_parts(mc, I_O)
        composite_inertia_to_parent_add(w_R, w_p, model.mass[i], ws.first_moment[i],
                                        ws.rotational_inertia[i], m, mc, I_O)  # A^{-T} I A^{-1}
        if blocks:                                      # s'' = alpha_p x s + v_p x s'
            dds = plus_scaled6(plus_scaled6(ZERO6, 1.0, motion_cross6(alpha_par, s)), 1.0,
                               motion_cross6(v_par, ds))
            store6(dds, ws.columns[chunk, 2, :, i])
            dmc, dI_O = ws.w_dmc[chunk, i], ws.w_dIO[chunk, i]
            zero_inertia_parts(dmc, dI_O)
            inertia_rate_add(v, m[0], mc, I_O, dmc, dI_O)          # I' = v x^* I - I v x
        h = plus_scaled6(ZERO6, 1.0, inertia_times6(m[0], mc, I_O, v))     # h = I v
        f = plus_scaled6(plus_scaled6(ZERO6, 1.0, inertia_times6(m[0], mc, I_O, alpha)), 1.0,
                         force_cross6(v, h))                        # f = I alpha + v x^* h
        if blocks:
            store6(h, ws.w_h[chunk, i])
        store6(f, ws.w_F[chunk, i])


@jit_leaf
def zero_inertia_parts(mc, I_O):
    """mc[:] = 0 and I_O[:] = 0: the first moment and rotational inertia of one link."""
    for r in range(3):
        mc[r] = 0.0
        for c in range(3):
            I_O[r, c] = 0.0


@jit_leaf
def link_acceleration(alpha_par, ds, s, qd, qdd):
    """alpha = alpha_p + (s' q' + s q''), the link's spatial acceleration (6-tuple)."""
    return (alpha_par[0] + (ds[0] * qd + s[0] * qdd), alpha_par[1] + (ds[1] * qd + s[1] * qdd),
            alpha_par[2] + (ds[2] * qd + s[2] * qdd), alpha_par[3] + (ds[3] * qd + s[3] * qdd),
            alpha_par[4] + (ds[4] * qd + s[4] * qdd), alpha_par[5] + (ds[5] * qd + s[5] * qdd))


@jit_inline
def subtree_sums(model, ws, chunk, blocks):
    """Joint force and, with ``blocks``, composite inertia, its rate and subtree momentum
    (what only the blocks read): each link's own, summed over its subtree (children have
    larger indices)."""
    m, mc, I_O = ws.w_m[chunk], ws.w_mc[chunk], ws.w_IO[chunk]
    dmc, dI_O = ws.w_dmc[chunk], ws.w_dIO[chunk]
    h, F = ws.w_h[chunk], ws.w_F[chunk]
    for i in range(model.parent.shape[0] - 1, -1, -1):
        par = model.parent[i]
        if par < 0:
            continue
        for r in range(6):
            F[par, r] += F[i, r]
        if blocks:
            m[par, 0] += m[i, 0]
            for r in range(3):
                mc[par, r] += mc[i, r]
                dmc[par, r] += dmc[i, r]
                for k in range(3):
                    I_O[par, r, k] += I_O[i, r, k]
                    dI_O[par, r, k] += dI_O[i, r, k]
            for r in range(6):
                h[par, r] += h[i, r]


@jit_inline
def pair_factors(model, ws, chunk):
    """Per output joint i: c_i = gamma_i - e_i and b_i (``row[:, :, i]``); per input joint
    j as a descendant: y'_j, b'_j + y_j and b_j (``descendant[:, :, j]``); per input joint
    j in a support: s_j, s'_j and s''_j (``columns[:, :, j]``, written by
    :func:`forward_pass`). Stored component-major so that the pair loops run over
    contiguous link ranges; formed in registers (:func:`forward_pass`). The screws written
    straight into ``columns`` rather than copied there from per-link rows: kernel alone, one
    thread, 200 samples, two alternating rounds, 3-link chain 0.549, 0.531 -> 0.527, 0.528
    us per sample, Panda 1.348, 1.318 -> 1.304, 1.307, 32- and 128-link chains the same
    within the noise (40 samples: 8.31, 8.11 -> 8.18, 8.12 and 57.8, 60.5 -> 60.9, 60.2);
    identical bits."""
    row, descendant, columns = ws.row[chunk], ws.descendant[chunk], ws.columns[chunk]
    for i in range(model.parent.shape[0]):
        s, ds, dds = columns[0, :, i], columns[1, :, i], columns[2, :, i]
        m, mc, I_O, dmc, dI_O = ws.w_m[chunk, i, 0], ws.w_mc[chunk, i], ws.w_IO[chunk, i], \
            ws.w_dmc[chunk, i], ws.w_dIO[chunk, i]
        h, F = ws.w_h[chunk, i], ws.w_F[chunk, i]
        b = plus_scaled6(ZERO6, 1.0, inertia_times6(m, mc, I_O, s))          # b = I^C s
        gamma = plus_scaled6(ZERO6, 1.0, inertia_times6(0.0, dmc, dI_O, s))  # gamma = I^C' s
        e = plus_scaled6(ZERO6, 1.0, force_cross6(s, h))                     # e = s x^* h
        db_y = plus_scaled6(plus_scaled6(gamma, 1.0, e), 2.0,                 # b' + y = gamma
                            inertia_times6(m, mc, I_O, ds))                   # + e + 2 I^C s'
        dy = plus_scaled6(ZERO6, 1.0, force_cross6(s, F))         # y' = s x^* F + s' x^* h
        dy = plus_scaled6(dy, 1.0, force_cross6(ds, h))           #      + I^C' s' + I^C s''
        dy = plus_scaled6(dy, 1.0, inertia_times6(0.0, dmc, dI_O, ds))
        dy = plus_scaled6(dy, 1.0, inertia_times6(m, mc, I_O, dds))
        for k in range(6):
            row[0, k, i] = gamma[k] - e[k]
            row[1, k, i] = b[k]
            descendant[0, k, i] = dy[k]
            descendant[1, k, i] = db_y[k]
            descendant[2, k, i] = b[k]


@jit_inline
def zero_other_branches(model, out):
    """out[i, :, j] = 0 for every j neither in the support of i nor its descendant: the
    gaps between consecutive supporting joints (support is in decreasing order) and the
    links after the subtree of i."""
    n = model.parent.shape[0]
    for i in range(n):
        above = i
        for t in range(model.support_start[i], model.support_start[i + 1]):
            j = model.support[t]
            if j + 1 < above:
                out[i, :, j + 1:above] = 0.0
            above = j
        if above > 0:
            out[i, :, :above] = 0.0
        if model.subtree_end[i] < n:
            out[i, :, model.subtree_end[i]:] = 0.0


@jit_inline
def support_blocks(model, ws, chunk, out):
    """out[i, r, j] for j in the support of i, i.e. i in the subtree of j:
    (s'_j . c_i + s''_j . b_i, s_j . c_i + 2 s'_j . b_i, s_j . b_i), run by run of the
    support (the KernelModel's ``runs``), j innermost over consecutive entries of the
    screw columns and of the output row (:func:`cmtm._jit.index_range`: vectorized), one
    loop per row r. Kernel alone, one thread, 200 samples (50 for the 128-link chain),
    cmtm / Pinocchio's computeRNEADerivatives, alternating runs: against j outer and i
    inner over the subtree, with :func:`descendant_blocks` on a signed index (the same
    sums, identical bits), 128-link chain 1.17-1.27 -> 0.79-0.82 and 32-link chain
    0.83-0.91 -> 0.73-0.82 (Panda 0.48-0.49 -> 0.56-0.58); one loop per row rather than one
    for the three (12 or 6 columns read per loop, so fewer alias checks before each),
    Panda 0.62-0.66 -> 0.56-0.57, 32-link chain 0.72-0.84 -> 0.69-0.74, 128-link chain
    0.78-0.96 -> 0.74-0.80, for ~1 s more of cold compile (three pairs of runs)."""
    C, B = ws.row[chunk, 0], ws.row[chunk, 1]
    s, ds, dds = ws.columns[chunk, 0], ws.columns[chunk, 1], ws.columns[chunk, 2]
    for i in range(model.parent.shape[0]):
        C0, C1, C2, C3, C4, C5 = C[0, i], C[1, i], C[2, i], C[3, i], C[4, i], C[5, i]
        B0, B1, B2, B3, B4, B5 = B[0, i], B[1, i], B[2, i], B[3, i], B[4, i], B[5, i]
        d_q, d_qd, d_qdd = out[i, 0], out[i, 1], out[i, 2]
        for u in range(model.run_start[i], model.run_start[i + 1]):
            first, stop = model.runs[u, 0], model.runs[u, 0] + model.runs[u, 1]
            for j in index_range(first, stop):              # s'_j . c_i + s''_j . b_i
                d_q[j] = (ds[0, j] * C0 + ds[1, j] * C1 + ds[2, j] * C2 + ds[3, j] * C3 +
                          ds[4, j] * C4 + ds[5, j] * C5) + \
                    (dds[0, j] * B0 + dds[1, j] * B1 + dds[2, j] * B2 + dds[3, j] * B3 +
                     dds[4, j] * B4 + dds[5, j] * B5)
            for j in index_range(first, stop):              # s_j . c_i + 2 s'_j . b_i
                d_qd[j] = (s[0, j] * C0 + s[1, j] * C1 + s[2, j] * C2 + s[3, j] * C3 +
                           s[4, j] * C4 + s[5, j] * C5) + 2.0 * \
                    (ds[0, j] * B0 + ds[1, j] * B1 + ds[2, j] * B2 + ds[3, j] * B3 +
                     ds[4, j] * B4 + ds[5, j] * B5)
            for j in index_range(first, stop):              # s_j . b_i
                d_qdd[j] = s[0, j] * B0 + s[1, j] * B1 + s[2, j] * B2 + s[3, j] * B3 + \
                    s[4, j] * B4 + s[5, j] * B5


@jit_inline
def descendant_blocks(model, ws, chunk, out):
    """out[i, r, j] for j a strict descendant of i: s_i . (y'_j, b'_j + y_j, b_j), j
    innermost over consecutive entries (:func:`cmtm._jit.index_range`: vectorized;
    measured with :func:`support_blocks`: 128-link chain 1.23-1.28 -> 1.02-1.10 of
    Pinocchio's time, support_blocks still j outer)."""
    for i in range(model.parent.shape[0]):
        s0, s1, s2, s3, s4, s5 = ws.columns[chunk, 0, :, i]
        for r in range(3):
            D, row = ws.descendant[chunk, r], out[i, r]
            for j in index_range(i + 1, model.subtree_end[i]):
                row[j] = s0 * D[0, j] + s1 * D[1, j] + s2 * D[2, j] + s3 * D[3, j] + \
                    s4 * D[4, j] + s5 * D[5, j]


FACTOR_BOUND = 1e150
"""Largest magnitude M of a pair factor (an entry of ``columns``, ``row`` or
``descendant``) for which every block is finite without a look: the largest block,
s_j . c_i + 2 s'_j . b_i, is at most 6 M^2 + 2 x 6 M^2 = 1.8e301 < 1.8e308 in magnitude."""


@jit_leaf
def all_within(x, bound):
    """Whether every entry of the C-contiguous 3-D array x is at most ``bound`` in
    magnitude (False for NaN), over its entries as one flat run (unsigned index,
    :func:`cmtm._jit.index_range`). Against three nested loops over the axes, kernel alone,
    one thread, 200 samples: the Panda's order-0 torque Jacobian 1.99 -> 1.80 us per
    sample (the check 0.28 -> ~0.09 of it), a 3-link chain's 0.77 either way; the same
    flags."""
    flat = x.reshape(x.size)
    within = True
    for t in index_range(0, flat.shape[0]):
        within &= abs(flat[t]) <= bound
    return within


FLOAT64_MAX = 1.7976931348623157e308
"""The largest finite float64: abs(x) <= FLOAT64_MAX holds for finite x only (False for
inf and NaN)."""


@jit_inline
def blocks_finite(ws, chunk, blocks):
    """Whether every entry of one sample's blocks (n, 3, n) is finite. Where the blocks
    have no more entries than the pair factors (``columns``, ``row``, ``descendant``: 48 n;
    n <= 16), by reading them (:func:`all_within` FLOAT64_MAX); otherwise at once if every
    pair factor is within FACTOR_BOUND, O(n) reads, and else by reading every entry. The
    factors bound the blocks (:data:`FACTOR_BOUND`), and the zeros between branches are
    finite. The blocks of few joints read directly rather than through their factors:
    kernel alone, one thread, 600 samples of a 3-link chain (27 entries against 144),
    the check 52 -> 19 ns of 759 -> 727 ns per sample; the same flags."""
    n_factors = ws.columns[chunk].size + ws.row[chunk].size + ws.descendant[chunk].size
    if blocks.size <= n_factors:
        return all_within(blocks, FLOAT64_MAX)
    if all_within(ws.columns[chunk], FACTOR_BOUND) and all_within(ws.row[chunk], FACTOR_BOUND) \
            and all_within(ws.descendant[chunk], FACTOR_BOUND):
        return True
    return all_within(blocks, FLOAT64_MAX)


@jit_leaf
def joint_torques(screws, w_F, tau):
    """tau_i = s_i . F_i for every joint i: the world screw (``screws[:, i]``) against the
    joint force F_i = h'_i summed over the subtree (``subtree_sums``), gravity included by
    the base's acceleration -g (§3.3): the inverse dynamics of the module docstring's
    passes, in world coordinates about the world origin, so equal to those of
    ``cmtm.rnea`` and ``cmtm.api.motion`` up to rounding."""
    for i in range(tau.shape[0]):
        s, F = screws[:, i], w_F[i]
        tau[i] = s[0] * F[0] + s[1] * F[1] + s[2] * F[2] + s[3] * F[3] + s[4] * F[4] + \
            s[5] * F[5]


@jit_kernel
def torque_derivatives_kernel(model, ws, chunk, claim, last, q_stack, tau, out, finite):
    """out[s, i, r, j] = d tau_i / d q_j^(r) (raw derivatives, r = 0, 1, 2) and tau[s, i]
    (:func:`joint_torques`) at the samples s it claims of q_stack (n_samples, >= 3, n) raw,
    with work slot ``chunk`` (``cmtm.api.run_chunks`` runs the chunks on threads): per
    sample, the passes of the module docstring, then the blocks; finite[s] whether every
    entry of sample s's blocks is finite (:func:`blocks_finite`), so that the caller need
    not read the output again (a sum over it took 40-44 us per sample of the 128-link
    chain's 370-380). ``tau`` or ``out`` with no rows (shape (0, ...)) is not written: the
    torques alone skip s'', the inertia rates, the subtree sums of inertia and momentum, the
    pair factors and the blocks (and flag every sample finite), the blocks alone the dot
    products of the torques; the torques are the same bits either way (the same forward
    pass and subtree sums of the joint forces). The passes are called
    here rather than from a per-sample function inlined into the kernel: one level of
    Numba's IR inlining less (cold compile of the order-0 torque Jacobian 4.58-4.76 ->
    4.02-4.23 s, four alternating runs), at the same speed per sample."""
    base_motion(model.gravity, ws.w_v0[chunk], ws.w_a0[chunk])       # v_0 = 0, a_0 = -g (§3.3)
    blocks_wanted = out.shape[0] > 0
    done = 0
    first, stop = claim_samples(claim, last)
    while first < stop:
        for sample in range(first, stop):
            forward_pass(model, ws, chunk, q_stack[sample, 0], q_stack[sample, 1],
                         q_stack[sample, 2], blocks_wanted)
            subtree_sums(model, ws, chunk, blocks_wanted)
            if tau.shape[0]:
                joint_torques(ws.columns[chunk, 0], ws.w_F[chunk], tau[sample])
            finite[sample] = True
            if blocks_wanted:
                blocks = out[sample]
                pair_factors(model, ws, chunk)
                zero_other_branches(model, blocks)
                support_blocks(model, ws, chunk, blocks)
                descendant_blocks(model, ws, chunk, blocks)
                finite[sample] = blocks_finite(ws, chunk, blocks)
        done += stop - first
        first, stop = claim_samples(claim, last)
    return done
