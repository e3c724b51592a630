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
([s_j x] s_i) . f = s_j . [s_i x^*] f, and f~ = d/dt h~ (the time-derivative rule of
``cmtm.structured_jacobians``), the first columns G_s of d tau_i / d q_j^(s) (§8) are
jet products of a per-link and a per-joint jet; Leibniz' rule on the jets cancels the
terms in d/dt [s_i x^*] h~_J_i against [s_i' x^*] h~ + [s_i x^*] f~, leaving

    T_0 = -(s_j' . e_i + a_j . gamma_i + a_j' . b_i),
    T_1 = s_j . (gamma_i - e_i) + (s_j' - a_j) . b_i,
    T_2 = s_j . b_i                                          (j in P(i)),
    T_s = s_i . (y0_j', b_j' + y0_j, b_j)[s]                 (j a strict descendant),

products of jets taken as convolutions: no 6x6 product per pair.

=================  ============  ============  ==========================================
symbol             code          shape         meaning (all world frame, Taylor-scaled)
=================  ============  ============  ==========================================
s_i                ``s``         (n, L, 6)     joint screws
v~_i               ``v_w``       (n, L, 6)     link twists (with the fictitious base motion)
h~_J_i             ``hJ_w``      (n, L, 6)     subtree momenta
I~^C_i             ``Ic``        (n, L, 6, 6)  composite (subtree) spatial inertias
e_i                (row_i)                     [s_i x^*] h~_J_i
b_i, gamma_i       (row_i)                     I~^C_i s_i, (d/dt I~^C_i) s_i
a_j                (col_j)                     [s_j x] v~_{p(j)}
y0_j               (desc_j)                    [s_j x^*] h~_J_j - I~^C_j a_j
=================  ============  ============  ==========================================

L = k + 2 coefficients for a torque Jacobian of order k.
"""
import numpy as np

from cmtm._jit import jit
from cmtm.cmtm_matrix import cmtm_blocks_from_crosses, cmtm_inverse_blocks_from_crosses
from cmtm.dynamics import momentum_stacks
from cmtm.kinematics import link_cmtm_inverse_pass
from cmtm.spatial import (matmul6, matTmul6, motion_cross_into,
                          motion_transform_inverse_into)
from cmtm.taylor import (conv_block_vec, conv_blockT_vec, force_cross_conv,
                         motion_cross_conv, write_raw_blocks)


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
    momentum_stacks(parent, S, I, Xup, q, root_nu, nu, h_L, h_J)
    pose_inv = np.empty((n, 1, 6, 6))
    link_cmtm_inverse_pass(parent, Xup, pose_inv)
    pose = np.empty((6, 6))
    crosses = np.empty((L, 6, 6))
    IX = np.empty((L, 6, 6))
    Ic[:] = 0.0
    for i in range(n):
        motion_transform_inverse_into(pose_inv[i, 0], pose)
        for m in range(L - 1):
            motion_cross_into(nu[i, m], crosses[m])
        cmtm_blocks_from_crosses(pose, crosses, X[i])
        cmtm_inverse_blocks_from_crosses(pose_inv[i, 0], crosses, Xinv[i])
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
def per_link_jets(parent, s, v_w, hJ_w, Ic, root_nu, row_i, col_j, desc_j):
    """Stacked per-link and per-joint jets of the pair formulas (L-1 coefficients).

    With e_i = [s_i x^*] h~_J_i, b_i = I~^C_i s_i, gamma_i = (d/dt I~^C_i) s_i and
    a_j = [s_j x] v~_{p(j)}:
      row_i  = ([e_i, gamma_i, b_i], [gamma_i - e_i, b_i], b_i)   (18, 12, 6 wide)
      col_j  = ([s_j', a_j, a_j'], [s_j, s_j' - a_j], s_j)
      desc_j = (y0_j', b_j' + y0_j, b_j), y0_j = e_j - I~^C_j a_j
    so that, for j in P(i), T_0 = -row0 . col0, T_1 = row1 . col1, T_2 = row2 . col2 (as
    jet products), and for a strict descendant j, T_s = s_i . desc_j[s].
    """
    n, L = s.shape[0], s.shape[1]
    K = L - 1
    e = np.zeros((L, 6))
    b = np.zeros((L, 6))
    a = np.zeros((L, 6))
    gamma = np.zeros((K, 6))
    dIc = np.empty((K, 6, 6))
    y0 = np.zeros((L, 6))
    for i in range(n):
        e[:] = 0.0
        force_cross_conv(s[i], hJ_w[i], e)
        b[:] = 0.0
        conv_block_vec(Ic[i], s[i], b)
        for m in range(K):
            dIc[m] = (m + 1) * Ic[i, m + 1]
        gamma[:] = 0.0
        conv_block_vec(dIc, s[i], gamma)
        a[:] = 0.0
        motion_cross_conv(s[i], root_nu if parent[i] < 0 else v_w[parent[i]], a)
        y0[:] = e
        conv_block_vec(Ic[i], a, y0, -1.0)
        for m in range(K):
            for c in range(6):
                row_i[i, m, c] = e[m, c]
                row_i[i, m, 6 + c] = gamma[m, c]
                row_i[i, m, 12 + c] = b[m, c]
                row_i[i, m, 18 + c] = gamma[m, c] - e[m, c]
                row_i[i, m, 24 + c] = b[m, c]
                row_i[i, m, 30 + c] = b[m, c]
                ds = (m + 1) * s[i, m + 1, c]
                col_j[i, m, c] = ds
                col_j[i, m, 6 + c] = a[m, c]
                col_j[i, m, 12 + c] = (m + 1) * a[m + 1, c]
                col_j[i, m, 18 + c] = s[i, m, c]
                col_j[i, m, 24 + c] = ds - a[m, c]
                col_j[i, m, 30 + c] = s[i, m, c]
                desc_j[i, m, c] = (m + 1) * y0[m + 1, c]
                desc_j[i, m, 6 + c] = (m + 1) * b[m + 1, c] + y0[m, c]
                desc_j[i, m, 12 + c] = b[m, c]


@jit
def stacked_dot_conv(u, v, first, last, scale, T):
    """T[m] = scale * sum_{p<=m} u[p, first:last] . v[m-p, first:last] (a jet product)."""
    for m in range(T.shape[0]):
        acc = 0.0
        for p in range(m + 1):
            for c in range(first, last):
                acc += u[p, c] * v[m - p, c]
        T[m] = scale * acc


@jit
def ancestor_pair(row_i, col_j, T):
    """First columns of d tau_i / d q_j^(s), j in P(i): T_0 = -row0 . col0,
    T_1 = row1 . col1, T_2 = row2 . col2 (see ``per_link_jets``)."""
    stacked_dot_conv(row_i, col_j, 0, 18, -1.0, T[0, :, 0])
    stacked_dot_conv(row_i, col_j, 18, 30, 1.0, T[1, :, 0])
    stacked_dot_conv(row_i, col_j, 30, 36, 1.0, T[2, :, 0])


@jit
def descendant_pair(s_i, desc_j, T):
    """First columns for a strict descendant j of i: d h~_J_i = d h~_J_j gives
    T_0 = s_i . y0_j', T_1 = s_i . (b_j' + y0_j), T_2 = s_i . b_j."""
    for t in range(3):
        for m in range(T.shape[1]):
            acc = 0.0
            for p in range(m + 1):
                for c in range(6):
                    acc += s_i[p, c] * desc_j[m - p, 6 * t + c]
            T[t, m, 0] = acc


@jit
def torque_workspace(n, L):
    """Work arrays of ``torque_jacobian_sample`` for n links and L coefficients."""
    vectors = np.empty((6, n, L, 6))
    matrices = np.empty((3, n, L, 6, 6))
    stacked = (np.empty((n, L - 1, 36)), np.empty((n, L - 1, 36)), np.empty((n, L - 1, 18)))
    T = np.empty((3, L - 1, 1))
    return vectors, matrices, stacked, T


@jit
def torque_jacobian_sample(parent, subtree_end, S, I, Xup, q, root_nu, coef, workspace, out):
    """Raw blocks d tau^(l) / d q^(r) of one sample into out (k+1, n, k+3, n), visiting
    ancestors and descendants of every link (the supporting joints of joint dynamics)."""
    vectors, matrices, stacked, T = workspace
    nu, h_L, h_J, s, v_w, hJ_w = vectors
    X, Xinv, Ic = matrices
    row_i, col_j, desc_j = stacked
    world_state(parent, S, I, Xup, q, root_nu, nu, h_L, h_J, X, Xinv, s, v_w, hJ_w, Ic)
    per_link_jets(parent, s, v_w, hJ_w, Ic, root_nu, row_i, col_j, desc_j)
    for i in range(parent.shape[0]):
        j = i
        while j >= 0:
            ancestor_pair(row_i[i], col_j[j], T)
            write_raw_blocks(T, coef, i, j, out)
            j = parent[j]
        for j in range(i + 1, subtree_end[i]):
            descendant_pair(s[i], desc_j[j], T)
            write_raw_blocks(T, coef, i, j, out)
