"""Classic order-0 algorithms on rotations and translations, batched over samples: the
recursive Newton-Euler inverse dynamics and the composite-rigid-body mass matrix.

The comprehensive engine at k = 0 computes the same torques with 6x6 CMTM blocks; this
kernel is the foundation's RNEA written on rotations and translations for speed:
one forward loop (velocities, accelerations with the base acceleration -g, link wrenches
f_i = I_i a_i + v_i x^* I_i v_i) and one backward loop (tau_i = S_i . f_i, wrenches passed
to the parent). Angular-first, body frames; (R, p) is the pose of link i in its parent.

=========  ==========  ==========  =========================================
symbol     code        shape       meaning
=========  ==========  ==========  =========================================
R, p       ``R, p``    (3,3), (3,) pose of link i in its parent, R_0 E(q), ...
v_i, a_i   ``v, a``    (n, 6)      body twist and its time derivative + base acc.
f_i        ``f``       (n, 6)      wrench on link i, then through joint i
=========  ==========  ==========  =========================================
"""
import math

import numpy as np

from cmtm._jit import jit
from cmtm.spatial import JOINT_REVOLUTE


@jit
def link_pose_in_parent(joint_type, axis, R0, p0, q, E, R, p):
    """(R, p) = A_0 E(q): R = R_0 exp(q [a x]) (revolute), p = p_0 + R_0 a q (prismatic);
    E: (3, 3) work array for exp(q [a x]) = c E + s [a x] + (1 - c) a a^T."""
    if joint_type == JOINT_REVOLUTE:
        s, c = math.sin(q), math.cos(q)
        a0, a1, a2 = axis[0], axis[1], axis[2]
        t = 1.0 - c
        E[0, 0], E[0, 1], E[0, 2] = c + t * a0 * a0, t * a0 * a1 - s * a2, t * a0 * a2 + s * a1
        E[1, 0], E[1, 1], E[1, 2] = t * a1 * a0 + s * a2, c + t * a1 * a1, t * a1 * a2 - s * a0
        E[2, 0], E[2, 1], E[2, 2] = t * a2 * a0 - s * a1, t * a2 * a1 + s * a0, c + t * a2 * a2
        for r in range(3):
            for col in range(3):
                R[r, col] = R0[r, 0] * E[0, col] + R0[r, 1] * E[1, col] + R0[r, 2] * E[2, col]
        p[:] = p0
    else:
        R[:] = R0
        for r in range(3):
            p[r] = p0[r] + (R0[r, 0] * axis[0] + R0[r, 1] * axis[1] + R0[r, 2] * axis[2]) * q


@jit
def inertia_times(I, m, mc, x, out):
    """out = I x for the spatial inertia about the link origin,
    I = [[I_O, m [c x]], [m [c x]^T, m E]]: [I_O w + mc x v; m v - mc x w]."""
    w0, w1, w2, v0, v1, v2 = x[0], x[1], x[2], x[3], x[4], x[5]
    for r in range(3):
        out[r] = I[r, 0] * w0 + I[r, 1] * w1 + I[r, 2] * w2
    out[0] += mc[1] * v2 - mc[2] * v1
    out[1] += mc[2] * v0 - mc[0] * v2
    out[2] += mc[0] * v1 - mc[1] * v0
    out[3] = m * v0 - (mc[1] * w2 - mc[2] * w1)
    out[4] = m * v1 - (mc[2] * w0 - mc[0] * w2)
    out[5] = m * v2 - (mc[0] * w1 - mc[1] * w0)


@jit
def motion_to_child(R, p, x, out):
    """out = A^{-1} x = [R^T w; R^T (v - p x w)] for the twist x = [w; v] of the parent."""
    w0, w1, w2 = x[0], x[1], x[2]
    u0 = x[3] - (p[1] * w2 - p[2] * w1)
    u1 = x[4] - (p[2] * w0 - p[0] * w2)
    u2 = x[5] - (p[0] * w1 - p[1] * w0)
    for r in range(3):
        out[r] = R[0, r] * w0 + R[1, r] * w1 + R[2, r] * w2
        out[r + 3] = R[0, r] * u0 + R[1, r] * u1 + R[2, r] * u2


@jit
def force_to_parent_add(R, p, f, out):
    """out += A^* f = [R n + p x (R f_l); R f_l] for the wrench f = [n; f_l] of the child."""
    n0 = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2]
    n1 = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2]
    n2 = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2]
    g0 = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    g1 = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    g2 = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    out[0] += n0 + p[1] * g2 - p[2] * g1
    out[1] += n1 + p[2] * g0 - p[0] * g2
    out[2] += n2 + p[0] * g1 - p[1] * g0
    out[3] += g0
    out[4] += g1
    out[5] += g2


@jit
def rnea_kernel(parent, joint_type, axis, placement_R, placement_p, I, mass, com, gravity,
                q, qd, qdd, tau):
    """tau[s] = ID(q, q', q'') with gravity for every sample; q, qd, qdd, tau: (n_samples, n).

    I: (n, 6, 6) spatial inertias (only the rotational block about the origin is read),
    mass (n,), com (n, 3): the rest of I in closed form (``inertia_times``).
    """
    n = parent.shape[0]
    mc = np.empty((n, 3))
    for i in range(n):
        mc[i] = mass[i] * com[i]
    E = np.empty((3, 3))
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    v = np.empty((n, 6))
    a = np.empty((n, 6))
    f = np.empty((n, 6))
    h = np.empty(6)
    base_v = np.zeros(6)
    base_a = np.zeros(6)
    base_a[3:] = -gravity
    for s in range(q.shape[0]):
        for i in range(n):
            link_pose_in_parent(joint_type[i], axis[i], placement_R[i], placement_p[i],
                                q[s, i], E, R[i], p[i])
            par = parent[i]
            motion_to_child(R[i], p[i], base_v if par < 0 else v[par], v[i])
            motion_to_child(R[i], p[i], base_a if par < 0 else a[par], a[i])
            off = 0 if joint_type[i] == JOINT_REVOLUTE else 3
            wq, aq = qd[s, i], qdd[s, i]
            # a_i += [v_i x] S q' (S = axis in the angular or linear half) + S q''
            for r in range(3):
                a[i, off + r] += axis[i, r] * aq
            w0, w1, w2 = v[i, 0], v[i, 1], v[i, 2]
            e0, e1, e2 = axis[i, 0] * wq, axis[i, 1] * wq, axis[i, 2] * wq
            a[i, off + 0] += w1 * e2 - w2 * e1
            a[i, off + 1] += w2 * e0 - w0 * e2
            a[i, off + 2] += w0 * e1 - w1 * e0
            if off == 0:
                u0, u1, u2 = v[i, 3], v[i, 4], v[i, 5]
                a[i, 3] += u1 * e2 - u2 * e1
                a[i, 4] += u2 * e0 - u0 * e2
                a[i, 5] += u0 * e1 - u1 * e0
            for r in range(3):
                v[i, off + r] += axis[i, r] * wq
            # f_i = I a_i + v_i x^* (I v_i)
            inertia_times(I[i], mass[i], mc[i], a[i], f[i])
            inertia_times(I[i], mass[i], mc[i], v[i], h)
            n0, n1, n2, g0, g1, g2 = h[0], h[1], h[2], h[3], h[4], h[5]
            w0, w1, w2, u0, u1, u2 = v[i, 0], v[i, 1], v[i, 2], v[i, 3], v[i, 4], v[i, 5]
            f[i, 0] += w1 * n2 - w2 * n1 + u1 * g2 - u2 * g1
            f[i, 1] += w2 * n0 - w0 * n2 + u2 * g0 - u0 * g2
            f[i, 2] += w0 * n1 - w1 * n0 + u0 * g1 - u1 * g0
            f[i, 3] += w1 * g2 - w2 * g1
            f[i, 4] += w2 * g0 - w0 * g2
            f[i, 5] += w0 * g1 - w1 * g0
        for i in range(n - 1, -1, -1):
            off = 0 if joint_type[i] == JOINT_REVOLUTE else 3
            tau[s, i] = axis[i, 0] * f[i, off] + axis[i, 1] * f[i, off + 1] + \
                axis[i, 2] * f[i, off + 2]
            if parent[i] >= 0:
                force_to_parent_add(R[i], p[i], f[i], f[parent[i]])


@jit
def composite_inertia_to_parent_add(R, p, m, h, I_O, m_out, h_out, I_out):
    """Add a subtree inertia (mass m, first moment h, rotational inertia I_O about the child
    origin, child axes) to its parent's, expressed about the parent origin in parent axes:
    h' = R h + m p, I' = R I_O R^T - m [p x]^2 - [p x][Rh x] - [Rh x][p x]."""
    Rh0 = R[0, 0] * h[0] + R[0, 1] * h[1] + R[0, 2] * h[2]
    Rh1 = R[1, 0] * h[0] + R[1, 1] * h[1] + R[1, 2] * h[2]
    Rh2 = R[2, 0] * h[0] + R[2, 1] * h[1] + R[2, 2] * h[2]
    pp = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
    ph = p[0] * Rh0 + p[1] * Rh1 + p[2] * Rh2
    for r in range(3):
        Rh_r = Rh0 if r == 0 else Rh1 if r == 1 else Rh2
        for c in range(3):
            Rh_c = Rh0 if c == 0 else Rh1 if c == 1 else Rh2
            acc = 0.0
            for a in range(3):
                for b in range(3):
                    acc += R[r, a] * I_O[a, b] * R[c, b]
            # -m [p x]^2 = m (|p|^2 E - p p^T); -[p x][Rh x] - [Rh x][p x] = 2 (p.Rh) E - p Rh^T - Rh p^T
            delta = 1.0 if r == c else 0.0
            acc += m * (pp * delta - p[r] * p[c]) + 2.0 * ph * delta - p[r] * Rh_c - Rh_r * p[c]
            I_out[r, c] += acc
        h_out[r] += Rh_r + m * p[r]
    m_out[0] += m


@jit
def crba_kernel(parent, joint_type, axis, placement_R, placement_p, I, mass, com, q, M):
    """Joint-space mass matrix by the composite-rigid-body algorithm on rotations and
    translations: composite inertias (m, h = m c, I_O) summed children first, then
    M_ij = S_j . (^jX_i)^* I^C_i S_i along the path from i to the root.
    q: (n_samples, n); M: (n_samples, n, n) output."""
    n = parent.shape[0]
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    E = np.empty((3, 3))
    mC = np.empty((n, 1))
    hC = np.empty((n, 3))
    IC = np.empty((n, 3, 3))
    S = np.zeros(6)
    F = np.empty(6)
    Fp = np.empty(6)
    for s in range(q.shape[0]):
        for i in range(n):
            link_pose_in_parent(joint_type[i], axis[i], placement_R[i], placement_p[i],
                                q[s, i], E, R[i], p[i])
            mC[i, 0] = mass[i]
            hC[i] = mass[i] * com[i]
            IC[i] = I[i, :3, :3]
        for c in range(n - 1, -1, -1):
            if parent[c] >= 0:
                composite_inertia_to_parent_add(R[c], p[c], mC[c, 0], hC[c], IC[c],
                                                mC[parent[c]], hC[parent[c]], IC[parent[c]])
        M[s] = 0.0  # joints on different branches do not couple
        for i in range(n):
            S[:] = 0.0
            off = 0 if joint_type[i] == JOINT_REVOLUTE else 3
            S[off:off + 3] = axis[i]
            inertia_times(IC[i], mC[i, 0], hC[i], S, F)
            M[s, i, i] = axis[i, 0] * F[off] + axis[i, 1] * F[off + 1] + axis[i, 2] * F[off + 2]
            j = i
            while parent[j] >= 0:
                Fp[:] = 0.0
                force_to_parent_add(R[j], p[j], F, Fp)
                F[:] = Fp
                j = parent[j]
                oj = 0 if joint_type[j] == JOINT_REVOLUTE else 3
                M[s, i, j] = axis[j, 0] * F[oj] + axis[j, 1] * F[oj + 1] + axis[j, 2] * F[oj + 2]
                M[s, j, i] = M[s, i, j]
