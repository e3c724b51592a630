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

=========================  ================  ==========  =================================
symbol                     code              shape       meaning (world frame, raw)
=========================  ================  ==========  =================================
R_i, p_i (link in parent)  ``R, p``          (3,3), (3)  link_pose_in_parent, one link
R_i, p_i (link in world)   ``w_R, w_p``      (n,3,3)...  pose of link i in the base
s, s', s''                 ``w_s``           (n, 3, 6)   joint screw and its derivatives
v, alpha                   ``w_v, w_alpha``  (n, 6)      twist, spatial acceleration
I^C, I^C'                  ``w_Ic, w_dIc``   (n, 6, 6)   composite inertia and its rate
h, F                       ``w_h, w_F``      (n, 6)      subtree momentum, joint force
c, b                       ``row``           (2, 6, n)   per output joint i
y', b' + y, b              ``descendant``    (3, 6, n)   per descendant input joint j
=========================  ================  ==========  =================================
"""
from typing import NamedTuple

import numpy as np

from cmtm._jit import jit, jit_inline, jit_kernel
from cmtm.rnea import (base_motion, composite_inertia_to_parent_add, link_pose_in_parent,
                       world_pose)
from cmtm.spatial import JOINT_REVOLUTE, force_cross_add, matvec6, motion_cross_add


class TorqueDerivativesWorkspace(NamedTuple):
    """Work arrays of :func:`torque_derivatives_kernel`, one slot per chunk (leading axis)."""

    E: np.ndarray
    R: np.ndarray
    p: np.ndarray
    w_R: np.ndarray
    w_p: np.ndarray
    w_s: np.ndarray
    w_v: np.ndarray
    w_alpha: np.ndarray
    w_Ic: np.ndarray
    w_dIc: np.ndarray
    w_h: np.ndarray
    w_F: np.ndarray
    w_m: np.ndarray
    w_mc: np.ndarray
    w_IO: np.ndarray
    w_v0: np.ndarray
    w_a0: np.ndarray
    first_moment: np.ndarray
    rotational_inertia: np.ndarray
    identity: np.ndarray
    origin: np.ndarray
    w_pair: np.ndarray
    row: np.ndarray
    descendant: np.ndarray


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
        w_s=work(n, 3, 6), w_v=work(n, 6), w_alpha=work(n, 6),
        w_Ic=work(n, 6, 6), w_dIc=work(n, 6, 6), w_h=work(n, 6), w_F=work(n, 6),
        w_m=work(1), w_mc=work(3), w_IO=work(3, 3), w_v0=work(6), w_a0=work(6),
        first_moment=np.array(kernel_model.first_moment),
        rotational_inertia=np.array(kernel_model.rotational_inertia),
        identity=np.eye(3), origin=np.zeros(3), w_pair=work(5, 6), row=work(2, 6, n),
        descendant=work(3, 6, n))


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


@jit
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


@jit
def world_inertia(mass, first_moment, rotational_inertia, w_R, w_p, m, mc, I_O, out):
    """Spatial inertia of a link about the world origin in world axes, A^{-T} I A^{-1}
    (§2.3): its first moment mc and rotational inertia I_O moved to the base by
    ``composite_inertia_to_parent_add`` (m, mc, I_O: work arrays (1,), (3,), (3, 3)), then
    out = [[I_O, [mc x]], [[mc x]^T, m E]]."""
    m[0] = 0.0
    for r in range(3):
        mc[r] = 0.0
        for col in range(3):
            I_O[r, col] = 0.0
    composite_inertia_to_parent_add(w_R, w_p, mass, first_moment, rotational_inertia, m, mc,
                                    I_O)
    for r in range(3):
        for col in range(3):
            out[r, col] = I_O[r, col]
            out[3 + r, 3 + col] = mass if r == col else 0.0
    out[0, 3], out[0, 4], out[0, 5] = 0.0, -mc[2], mc[1]
    out[1, 3], out[1, 4], out[1, 5] = mc[2], 0.0, -mc[0]
    out[2, 3], out[2, 4], out[2, 5] = -mc[1], mc[0], 0.0
    for r in range(3):
        for col in range(3):
            out[3 + r, col] = out[col, 3 + r]


@jit
def inertia_rate_add(v, I, out):
    """out += d/dt I = v x^* I - I v x for a spatial inertia I moving with twist v
    (cmtm_math.md §5). Since I is symmetric and v x^* = -(v x)^T, this is G + G^T with
    row r of G the force cross product v x^* I[r]."""
    for r in range(6):
        w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
        f = I[r]
        g0 = w1 * f[2] - w2 * f[1] + u1 * f[5] - u2 * f[4]
        g1 = w2 * f[0] - w0 * f[2] + u2 * f[3] - u0 * f[5]
        g2 = w0 * f[1] - w1 * f[0] + u0 * f[4] - u1 * f[3]
        g3 = w1 * f[5] - w2 * f[4]
        g4 = w2 * f[3] - w0 * f[5]
        g5 = w0 * f[4] - w1 * f[3]
        out[r, 0] += g0
        out[r, 1] += g1
        out[r, 2] += g2
        out[r, 3] += g3
        out[r, 4] += g4
        out[r, 5] += g5
        out[0, r] += g0
        out[1, r] += g1
        out[2, r] += g2
        out[3, r] += g3
        out[4, r] += g4
        out[5, r] += g5


@jit_inline
def forward_pass(model, ws, c, q, qd, qdd):
    """Poses, screws and their rates, twists, accelerations, and per link the world inertia
    I_i (into w_Ic), its rate (into w_dIc), the momentum I_i v_i (w_h) and the force
    f_i (w_F): the first loop of the module docstring."""
    for i in range(model.parent.shape[0]):
        par = model.parent[i]
        w_R, w_p = ws.w_R[c, i], ws.w_p[c, i]
        s, ds, dds = ws.w_s[c, i, 0], ws.w_s[c, i, 1], ws.w_s[c, i, 2]
        v, alpha, I, dI = ws.w_v[c, i], ws.w_alpha[c, i], ws.w_Ic[c, i], ws.w_dIc[c, i]
        link_world_pose(model, i, q[i], ws.E[c], ws.R[c], ws.p[c], ws.identity, ws.origin,
                        ws.w_R[c], ws.w_p[c], s)
        if par < 0:
            v_par, alpha_par = ws.w_v0[c], ws.w_a0[c]   # base at rest, accelerating at -g
        else:
            v_par, alpha_par = ws.w_v[c, par], ws.w_alpha[c, par]
        for r in range(6):
            v[r] = v_par[r]
            alpha[r] = alpha_par[r]
        for r in range(6):
            ds[r] = 0.0
            dds[r] = 0.0
        motion_cross_add(v, s, 1.0, ds)                 # s' = v_p x s
        motion_cross_add(alpha, s, 1.0, dds)            # s'' = alpha_p x s + v_p x s'
        motion_cross_add(v, ds, 1.0, dds)
        for r in range(6):
            alpha[r] += ds[r] * qd[i] + s[r] * qdd[i]   # alpha = alpha_p + s' q' + s q''
            v[r] += s[r] * qd[i]                        # v = v_p + s q'
        world_inertia(model.mass[i], ws.first_moment[i], ws.rotational_inertia[i], w_R, w_p,
                      ws.w_m[c], ws.w_mc[c], ws.w_IO[c], I)
        dI[:, :] = 0.0
        inertia_rate_add(v, I, dI)                      # I' = v x^* I - I v x
        h, f = ws.w_h[c, i], ws.w_F[c, i]
        for r in range(6):
            h[r] = 0.0
            f[r] = 0.0
        matvec6(I, v, h)                                # h = I v
        matvec6(I, alpha, f)                            # f = I alpha + v x^* h
        force_cross_add(v, h, 1.0, f)


@jit_inline
def subtree_sums(model, ws, c):
    """Composite inertia, its rate, subtree momentum and joint force: each link's own,
    summed over its subtree (children have larger indices)."""
    Ic, dIc, h, F = ws.w_Ic[c], ws.w_dIc[c], ws.w_h[c], ws.w_F[c]
    for i in range(model.parent.shape[0] - 1, -1, -1):
        par = model.parent[i]
        if par >= 0:
            for r in range(6):
                for k in range(6):
                    Ic[par, r, k] += Ic[i, r, k]
                    dIc[par, r, k] += dIc[i, r, k]
                h[par, r] += h[i, r]
                F[par, r] += F[i, r]


@jit_inline
def pair_factors(model, ws, c):
    """Per output joint i: c_i = gamma_i - e_i and b_i (``row[:, :, i]``); per input joint
    j as a descendant: y'_j, b'_j + y_j and b_j (``descendant[:, :, j]``). Stored
    component-major so that the pair loops run over contiguous link ranges."""
    row, descendant = ws.row[c], ws.descendant[c]
    b, gamma, e, db_y, dy = ws.w_pair[c, 0], ws.w_pair[c, 1], ws.w_pair[c, 2], \
        ws.w_pair[c, 3], ws.w_pair[c, 4]
    for i in range(model.parent.shape[0]):
        s, ds, dds = ws.w_s[c, i, 0], ws.w_s[c, i, 1], ws.w_s[c, i, 2]
        Ic, dIc, h, F = ws.w_Ic[c, i], ws.w_dIc[c, i], ws.w_h[c, i], ws.w_F[c, i]
        for k in range(6):
            b[k] = 0.0
            gamma[k] = 0.0
            e[k] = 0.0
            dy[k] = 0.0
        matvec6(Ic, s, b)                               # b = I^C s
        matvec6(dIc, s, gamma)                          # gamma = I^C' s
        force_cross_add(s, h, 1.0, e)                   # e = s x^* h
        for k in range(6):
            db_y[k] = gamma[k] + e[k]                   # b' + y = gamma + I^C s'
        matvec6(Ic, ds, db_y)                           #          + e + I^C s'
        matvec6(Ic, ds, db_y)
        force_cross_add(s, F, 1.0, dy)                  # y' = s x^* F + s' x^* h
        force_cross_add(ds, h, 1.0, dy)                 #      + I^C' s' + I^C s''
        matvec6(dIc, ds, dy)
        matvec6(Ic, dds, dy)
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
def support_blocks(model, ws, c, out):
    """out[i, r, j] for j in the support of i, i.e. i in the subtree of j:
    (s'_j . c_i + s''_j . b_i, s_j . c_i + 2 s'_j . b_i, s_j . b_i)."""
    C, B = ws.row[c, 0], ws.row[c, 1]
    for j in range(model.parent.shape[0]):
        s0, s1, s2, s3, s4, s5 = ws.w_s[c, j, 0]
        d0, d1, d2, d3, d4, d5 = ws.w_s[c, j, 1]
        a0, a1, a2, a3, a4, a5 = ws.w_s[c, j, 2]
        for i in range(j, model.subtree_end[j]):
            C0, C1, C2, C3, C4, C5 = C[0, i], C[1, i], C[2, i], C[3, i], C[4, i], C[5, i]
            B0, B1, B2, B3, B4, B5 = B[0, i], B[1, i], B[2, i], B[3, i], B[4, i], B[5, i]
            sb = s0 * B0 + s1 * B1 + s2 * B2 + s3 * B3 + s4 * B4 + s5 * B5
            sc = s0 * C0 + s1 * C1 + s2 * C2 + s3 * C3 + s4 * C4 + s5 * C5
            db = d0 * B0 + d1 * B1 + d2 * B2 + d3 * B3 + d4 * B4 + d5 * B5
            dc = d0 * C0 + d1 * C1 + d2 * C2 + d3 * C3 + d4 * C4 + d5 * C5
            ab = a0 * B0 + a1 * B1 + a2 * B2 + a3 * B3 + a4 * B4 + a5 * B5
            out[i, 0, j] = dc + ab
            out[i, 1, j] = sc + 2.0 * db
            out[i, 2, j] = sb


@jit_inline
def descendant_blocks(model, ws, c, out):
    """out[i, r, j] for j a strict descendant of i: s_i . (y'_j, b'_j + y_j, b_j)."""
    for i in range(model.parent.shape[0]):
        s0, s1, s2, s3, s4, s5 = ws.w_s[c, i, 0]
        for r in range(3):
            D, row = ws.descendant[c, r], out[i, r]
            for j in range(i + 1, model.subtree_end[i]):
                row[j] = s0 * D[0, j] + s1 * D[1, j] + s2 * D[2, j] + s3 * D[3, j] + \
                    s4 * D[4, j] + s5 * D[5, j]


@jit_kernel
def torque_derivatives_kernel(model, ws, c, first, last, q_stack, out):
    """out[s, i, r, j] = d tau_i / d q_j^(r) (raw derivatives, r = 0, 1, 2) at the samples s
    = first..last-1 of q_stack (n_samples, >= 3, n) raw, with work slot c
    (``cmtm.api.run_chunks`` runs the chunks on threads): per sample, the passes of the
    module docstring, then the blocks. The passes are called here rather than from a
    per-sample function inlined into the kernel: one level of Numba's IR inlining less
    (cold compile of the order-0 torque Jacobian 4.58-4.76 -> 4.02-4.23 s, four alternating
    runs), at the same speed per sample."""
    base_motion(model.gravity, ws.w_v0[c], ws.w_a0[c])       # v_0 = 0, a_0 = -g (§3.3)
    for smp in range(first, last):
        blocks = out[smp]
        forward_pass(model, ws, c, q_stack[smp, 0], q_stack[smp, 1], q_stack[smp, 2])
        subtree_sums(model, ws, c)
        pair_factors(model, ws, c)
        zero_other_branches(model, blocks)
        support_blocks(model, ws, c, blocks)
        descendant_blocks(model, ws, c, blocks)
