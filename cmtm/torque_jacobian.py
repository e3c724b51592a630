"""Joint-torque Jacobian by Lemma 6 in world coordinates (cmtm_math.md §5, §7-§8).

tau_i = S_i^T f_J_i = s_i^T f~_J_i with the world screw s_i = A_{L_i} S_i and the world
joint force f~_J_i = d/dt h~_J_i (the time derivative of the world subtree momentum,
h~_J_i = sum_{l in C(i)} I~_l v~_l). The world frame is the inertial frame of the
base-acceleration trick (§3.3), so gravity is exact.

Under dq_j every link of the subtree of j turns by the world tangent s_j dq_j, so for
j in P(i) (cmtm_math.md §6.4 with world-frame tangents)

    d s_i      = [s_j x] s_i dq_j,
    d h~_J_i   = ([s_j x^*] h~_J_i - I~^C_i [s_j x] v~_{p(j)}) dq_j + I~^C_i s_j dq_j',

and for a strict descendant j of i the subtree momentum of i moves only through that of
j: d h~_J_i = d h~_J_j. With the hat swaps s_i . [s_j x^*] h = -s_j . [s_i x^*] h and
([s_j x] s_i) . f = s_j . [s_i x^*] f, every pair (i, j) reduces to dot products of a
per-link jet with a per-joint jet ("dot convolutions"): no 6x6 product per pair. The
first columns G_0, G_1, G_2 of §8 then follow from f~ = d/dt h~ (time derivative rule of
``cmtm.structured_jacobians``).

=================  ============  ============  ==========================================
symbol             code          shape         meaning (all world frame, Taylor-scaled)
=================  ============  ============  ==========================================
s_i                ``s``         (n, L, 6)     joint screws
v~_i               ``v_w``       (n, L, 6)     link twists (with the fictitious base motion)
h~_J_i             ``hJ_w``      (n, L, 6)     subtree momenta
I~^C_i             ``Ic``        (n, L, 6, 6)  composite (subtree) spatial inertias
b_i = I~^C_i s_i   ``b``         (n, L, 6)     c_i = I~^C_i s_i' (``c``)
e_i, e'_i, g_i     ``e, ed, g``  (n, L, 6)     [s_i x^*] h~_J_i, [s_i' x^*] h~_J_i, [s_i x^*] f~_J_i
a_j                ``a``         (n, L, 6)     [s_j x] v~_{p(j)}
y0_j               ``y0``        (n, L, 6)     [s_j x^*] h~_J_j - I~^C_j a_j
=================  ============  ============  ==========================================

L = k + 2 coefficients for a torque Jacobian of order k.
"""
import numpy as np

from cmtm._jit import jit
from cmtm.cmtm_matrix import cmtm_blocks_from_crosses, cmtm_inverse_blocks_from_crosses
from cmtm.dynamics import joint_momentum_pass, link_momentum
from cmtm.kinematics import velocity_pass
from cmtm.spatial import (matmul6, matTmul6, motion_block_mul, motion_cross_into,
                          motion_transform_inverse_into)
from cmtm.taylor import (conv_block_vec, conv_blockT_vec, derivative_stack, force_cross_conv,
                         motion_cross_conv, write_raw_blocks)


@jit
def dot_conv(a, b, scale, out):
    """out[m] += scale * sum_{p<=m} a_p . b_{m-p}: the jet of the scalar product a(t) . b(t)."""
    for m in range(out.shape[0]):
        acc = 0.0
        for p in range(m + 1):
            for c in range(6):
                acc += a[p, c] * b[m - p, c]
        out[m] += scale * acc


@jit
def world_inertia_add(Xinv, I, IX, out):
    """out[m] += sum_{a+b=m} (X-_a)^T I X-_b: the jets of I~ = A^{-T} I A^{-1} (§2.3).

    IX: (L, 6, 6) work array for the products I X-_b.
    """
    L = out.shape[0]
    for b in range(L):
        IX[b] = 0.0
        matmul6(I, Xinv[b], IX[b])
    for m in range(L):
        for a in range(m + 1):
            matTmul6(Xinv[a], IX[m - a], out[m])


@jit
def world_state(parent, S, I, Xup, q, root_nu, nu, h_L, h_J, X, Xinv, s, v_w, hJ_w, Ic):
    """Gravity-pass body stacks (§4-§5) and their world-frame forms, L coefficients each:
    link CMTMs from the §2.1 recursion on the link pose and the body velocity (which holds
    the fictitious base motion), world screws s = X S, twists X v, subtree momenta X^* h_J,
    and composite inertias sum over the subtree of X^* I X^{-1}."""
    n, L = nu.shape[0], nu.shape[1]
    velocity_pass(parent, S, Xup, q, root_nu, nu)
    link_momentum(I, nu, h_L)
    joint_momentum_pass(parent, Xup, h_L, h_J)
    pose_inv = np.empty((n, 6, 6))
    pose = np.empty((6, 6))
    crosses = np.empty((L, 6, 6))
    IX = np.empty((L, 6, 6))
    Ic[:] = 0.0
    for i in range(n):
        if parent[i] < 0:
            pose_inv[i] = Xup[i, 0]
        else:
            motion_block_mul(Xup[i, 0], pose_inv[parent[i]], pose_inv[i])
        motion_transform_inverse_into(pose_inv[i], pose)
        for m in range(L - 1):
            motion_cross_into(nu[i, m], crosses[m])
        cmtm_blocks_from_crosses(pose, crosses, X[i])
        cmtm_inverse_blocks_from_crosses(pose_inv[i], crosses, Xinv[i])
        for m in range(L):
            for c in range(6):
                acc = 0.0
                for t in range(6):
                    acc += X[i, m, c, t] * S[i, t]
                s[i, m, c] = acc
        v_w[i] = 0.0
        conv_block_vec(X[i], nu[i], v_w[i])
        hJ_w[i] = 0.0
        conv_blockT_vec(Xinv[i], h_J[i], hJ_w[i])
        world_inertia_add(Xinv[i], I[i], IX, Ic[i])
    for c in range(n - 1, -1, -1):
        if parent[c] >= 0:
            Ic[parent[c]] += Ic[c]


@jit
def per_link_jets(parent, s, v_w, hJ_w, Ic, root_nu, b, c, e, ed, g, a, y0):
    """The per-link and per-joint jets of the module table (L coefficients; ed, g, c use one
    fewer since they contain a time derivative)."""
    n, L = s.shape[0], s.shape[1]
    ds = np.zeros((L - 1, 6))
    dh = np.zeros((L - 1, 6))
    Ic_a = np.zeros((L, 6))
    for i in range(n):
        derivative_stack(s[i], ds)
        derivative_stack(hJ_w[i], dh)
        b[i] = 0.0
        conv_block_vec(Ic[i], s[i], b[i])
        c[i] = 0.0
        conv_block_vec(Ic[i], ds, c[i, :L - 1])
        e[i] = 0.0
        force_cross_conv(s[i], hJ_w[i], e[i])
        ed[i] = 0.0
        force_cross_conv(ds, hJ_w[i], ed[i, :L - 1])
        g[i] = 0.0
        force_cross_conv(s[i], dh, g[i, :L - 1])
        a[i] = 0.0
        if parent[i] < 0:
            motion_cross_conv(s[i], root_nu, a[i])
        else:
            motion_cross_conv(s[i], v_w[parent[i]], a[i])
        Ic_a[:] = 0.0
        conv_block_vec(Ic[i], a[i], Ic_a)
        y0[i] = e[i] - Ic_a


@jit
def ancestor_pair(s_j, a_j, b_i, c_i, e_i, ed_i, g_i, P, R, work, T):
    """First columns T[s] (s = 0, 1, 2) of d tau_i / d q_j^(s) for j in P(i):
    P = s_i . Y_0 = -s_j.e_i - b_i.a_j, Q = s_i'. Y_0 = -s_j.e'_i - c_i.a_j,
    R = s_i . Y_1 = b_i.s_j, U = s_i'. Y_1 = c_i.s_j, and with f~ = d/dt h~:
    T_0 = P' - Q + s_j.g_i, T_1 = R' - U + P, T_2 = R."""
    K = T.shape[1]
    P[:] = 0.0
    dot_conv(s_j, e_i, -1.0, P)
    dot_conv(b_i, a_j, -1.0, P)
    R[:] = 0.0
    dot_conv(b_i, s_j, 1.0, R)
    for m in range(K):
        T[0, m, 0] = (m + 1) * P[m + 1]
        T[1, m, 0] = (m + 1) * R[m + 1] + P[m]
        T[2, m, 0] = R[m]
    work[:] = 0.0
    dot_conv(s_j, ed_i, 1.0, work)
    dot_conv(c_i, a_j, 1.0, work)
    dot_conv(s_j, g_i, 1.0, work)
    for m in range(K):
        T[0, m, 0] += work[m]
    work[:] = 0.0
    dot_conv(c_i, s_j, -1.0, work)
    for m in range(K):
        T[1, m, 0] += work[m]


@jit
def descendant_pair(s_i, y0_j, b_j, dy0, z1, T):
    """First columns for a strict descendant j of i: d h~_J_i = d h~_J_j, so with
    Y_0 = y0_j, Y_1 = b_j: T_0 = s_i . Y_0', T_1 = s_i . (Y_1' + Y_0), T_2 = s_i . Y_1."""
    K = T.shape[1]
    derivative_stack(y0_j, dy0)
    derivative_stack(b_j, z1)
    z1 += y0_j[:K]
    T[:] = 0.0
    dot_conv(s_i, dy0, 1.0, T[0, :, 0])
    dot_conv(s_i, z1, 1.0, T[1, :, 0])
    dot_conv(s_i, b_j, 1.0, T[2, :, 0])


@jit
def torque_workspace(n, L):
    """Work arrays of ``torque_jacobian_sample`` for n links and L coefficients."""
    vectors = np.empty((13, n, L, 6))
    matrices = np.empty((3, n, L, 6, 6))
    scalars = np.empty((3, L))
    scratch = np.empty((2, L - 1, 6))
    T = np.empty((3, L - 1, 1))
    return vectors, matrices, scalars, scratch, T


@jit
def torque_jacobian_sample(parent, subtree_end, S, I, Xup, q, root_nu, coef, workspace, out):
    """Raw blocks d tau^(l) / d q^(r) of one sample into out (k+1, n, k+3, n), visiting
    ancestors and descendants of every link (the supporting joints of joint dynamics)."""
    vectors, matrices, scalars, scratch, T = workspace
    nu, h_L, h_J, s, v_w, hJ_w, b, c, e, ed, g, a, y0 = vectors
    X, Xinv, Ic = matrices
    K = T.shape[1]
    world_state(parent, S, I, Xup, q, root_nu, nu, h_L, h_J, X, Xinv, s, v_w, hJ_w, Ic)
    per_link_jets(parent, s, v_w, hJ_w, Ic, root_nu, b, c, e, ed, g, a, y0)
    for i in range(parent.shape[0]):
        j = i
        while j >= 0:
            ancestor_pair(s[j], a[j], b[i], c[i], e[i], ed[i], g[i],
                          scalars[0], scalars[1], scalars[2, :K], T)
            write_raw_blocks(T, coef, i, j, out)
            j = parent[j]
        for j in range(i + 1, subtree_end[i]):
            descendant_pair(s[i], y0[j], b[j], scratch[0], scratch[1], T)
            write_raw_blocks(T, coef, i, j, out)
