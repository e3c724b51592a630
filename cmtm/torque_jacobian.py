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
from typing import NamedTuple

import numpy as np

from cmtm._jit import jit, jit_inline
from cmtm.cmtm_matrix import (cmtm_blocks_from_crosses, cmtm_inverse_blocks_from_crosses,
                              velocity_crosses_into)
from cmtm.dynamics import momentum_stacks
from cmtm.kinematics import link_cmtm_inverse_pass
from cmtm.spatial import matmul6, matTmul6, motion_transform_inverse_into
from cmtm.taylor import (add_blocks, conv_block_vec, conv_blockT_vec, copy_stack,
                         force_cross_conv, motion_cross_conv, write_raw_blocks, zero_blocks,
                         zero_stack)


class TorqueWorkspace(NamedTuple):
    """Work arrays of :func:`torque_jacobian_sample`, slot c (leading axis) for chunk c of
    the samples; n links, L coefficients (the symbol table above; ``pose_inv`` ... ``y0``
    are scratch of one link or one sample)."""

    nu: np.ndarray        # (n, L, 6) body twists of the gravity pass
    h_L: np.ndarray       # (n, L, 6) link momenta
    h_J: np.ndarray       # (n, L, 6) subtree momenta, link frame
    s: np.ndarray         # (n, L, 6)
    v_w: np.ndarray       # (n, L, 6)
    hJ_w: np.ndarray      # (n, L, 6)
    X: np.ndarray         # (n, L, 6, 6) link CMTMs
    Xinv: np.ndarray      # (n, L, 6, 6) their inverses
    Ic: np.ndarray        # (n, L, 6, 6)
    pose_inv: np.ndarray  # (n, 1, 6, 6) inverse link poses
    pose: np.ndarray      # (6, 6)
    crosses: np.ndarray   # (L, 6, 6) [nu_m x]
    IX: np.ndarray        # (L, 6, 6) I X-_b
    e: np.ndarray         # (L, 6) the jets of per_link_jets
    b: np.ndarray         # (L, 6)
    a: np.ndarray         # (L, 6)
    y0: np.ndarray        # (L, 6)
    gamma: np.ndarray     # (L-1, 6)
    dIc: np.ndarray       # (L-1, 6, 6) d/dt I~^C_i
    row_i: np.ndarray     # (n, L-1, 36)
    col_j: np.ndarray     # (n, L-1, 36)
    desc_j: np.ndarray    # (n, L-1, 18)
    T: np.ndarray         # (3, L-1, 1) first columns of one pair


def torque_workspace(n, L, n_chunks):
    """A :class:`TorqueWorkspace` for n links (0 when no torque Jacobian is wanted), L >= 2
    coefficients and n_chunks chunks."""
    def slots(*shape):
        return np.zeros((n_chunks,) + shape)
    vector, matrix, jet = (n, L, 6), (n, L, 6, 6), (L, 6)
    return TorqueWorkspace(
        nu=slots(*vector), h_L=slots(*vector), h_J=slots(*vector), s=slots(*vector),
        v_w=slots(*vector), hJ_w=slots(*vector), X=slots(*matrix), Xinv=slots(*matrix),
        Ic=slots(*matrix), pose_inv=slots(n, 1, 6, 6), pose=slots(6, 6),
        crosses=slots(L, 6, 6), IX=slots(L, 6, 6), e=slots(*jet), b=slots(*jet),
        a=slots(*jet), y0=slots(*jet), gamma=slots(L - 1, 6), dIc=slots(L - 1, 6, 6),
        row_i=slots(n, L - 1, 36), col_j=slots(n, L - 1, 36), desc_j=slots(n, L - 1, 18),
        T=slots(3, L - 1, 1))


@jit_inline
def world_inertia_add(Xinv, I, IX, out):
    """out[m] += sum_{a+b=m} (X-_a)^T I X-_b: the jets of I~ = A^{-T} I A^{-1} (§2.3).

    IX: (>=L, 6, 6) work array for the products I X-_b.
    """
    L = out.shape[0]
    zero_blocks(IX)
    for b in range(L):
        matmul6(I, Xinv[b], IX[b])
    for m in range(L):
        for a in range(m + 1):
            matTmul6(Xinv[a], IX[m - a], out[m])


@jit
def screw_stack(X, S, s):
    """s[m] = X_m S: the jets of the world screw s = A S (§2.3)."""
    for m in range(s.shape[0]):
        for c in range(6):
            acc = 0.0
            for t in range(6):
                acc += X[m, c, t] * S[t]
            s[m, c] = acc


@jit_inline
def world_state(model, tw, chunk, S, Xup, q, root_nu):
    """Gravity-pass body stacks (§4-§5) and their world-frame forms, L coefficients each:
    link CMTMs from the §2.1 recursion on the link pose and the body velocity (which holds
    the fictitious base motion), world screws s = X S, twists X v, subtree momenta X^* h_J,
    and composite inertias sum over the subtree of X^* I X^{-1}."""
    parent, I = model.parent, model.spatial_inertia
    nu, h_J, X, Xinv, Ic = tw.nu[chunk], tw.h_J[chunk], tw.X[chunk], tw.Xinv[chunk], \
        tw.Ic[chunk]
    pose_inv, pose, crosses = tw.pose_inv[chunk], tw.pose[chunk], tw.crosses[chunk]
    n, L = nu.shape[0], nu.shape[1]
    momentum_stacks(parent, S, I, Xup, q, root_nu, nu, tw.h_L[chunk], h_J)
    link_cmtm_inverse_pass(parent, Xup, pose_inv)
    for i in range(n):
        motion_transform_inverse_into(pose_inv[i, 0], pose)
        velocity_crosses_into(nu[i], L - 1, crosses)
        cmtm_blocks_from_crosses(pose, crosses, X[i])
        cmtm_inverse_blocks_from_crosses(pose_inv[i, 0], crosses, Xinv[i])
        screw_stack(X[i], S[i], tw.s[chunk, i])
        v_w, hJ_w = tw.v_w[chunk, i], tw.hJ_w[chunk, i]
        zero_stack(v_w)
        conv_block_vec(X[i], nu[i], v_w)
        zero_stack(hJ_w)
        conv_blockT_vec(Xinv[i], h_J[i], hJ_w)
        zero_blocks(Ic[i])
        world_inertia_add(Xinv[i], I[i], tw.IX[chunk], Ic[i])
    for child in range(n - 1, -1, -1):
        if parent[child] >= 0:
            add_blocks(Ic[child], Ic[parent[child]])


@jit_inline
def link_jets(tw, chunk, i, root_nu):
    """The jets of link i (L coefficients, L-1 for gamma): e_i = [s_i x^*] h~_J_i,
    b_i = I~^C_i s_i, gamma_i = (d/dt I~^C_i) s_i, a_i = [s_i x] v~_{p(i)} (root_nu for a
    root) and y0_i = e_i - I~^C_i a_i, into tw.e, b, gamma, a, y0."""
    s, Ic, v_parent = tw.s[chunk, i], tw.Ic[chunk, i], root_nu
    e, b, a, y0, gamma, dIc = tw.e[chunk], tw.b[chunk], tw.a[chunk], tw.y0[chunk], \
        tw.gamma[chunk], tw.dIc[chunk]
    zero_stack(e)
    force_cross_conv(s, tw.hJ_w[chunk, i], e)
    zero_stack(b)
    conv_block_vec(Ic, s, b)
    for m in range(dIc.shape[0]):
        for r in range(6):
            for c in range(6):
                dIc[m, r, c] = (m + 1) * Ic[m + 1, r, c]
    zero_stack(gamma)
    conv_block_vec(dIc, s, gamma)
    zero_stack(a)
    motion_cross_conv(s, v_parent, a)
    copy_stack(e, y0)
    conv_block_vec(Ic, a, y0, -1.0)


@jit_inline
def per_link_jets(model, tw, chunk, root_nu):
    """Stacked per-link and per-joint jets of the pair formulas (L-1 coefficients).

    With e_i = [s_i x^*] h~_J_i, b_i = I~^C_i s_i, gamma_i = (d/dt I~^C_i) s_i and
    a_j = [s_j x] v~_{p(j)} (``link_jets``):
      row_i  = ([e_i, gamma_i, b_i], [gamma_i - e_i, b_i], b_i)   (18, 12, 6 wide)
      col_j  = ([s_j', a_j, a_j'], [s_j, s_j' - a_j], s_j)
      desc_j = (y0_j', b_j' + y0_j, b_j), y0_j = e_j - I~^C_j a_j
    so that, for j in P(i), T_0 = -row0 . col0, T_1 = row1 . col1, T_2 = row2 . col2 (as
    jet products), and for a strict descendant j, T_s = s_i . desc_j[s].
    """
    e, b, a, y0, gamma = tw.e[chunk], tw.b[chunk], tw.a[chunk], tw.y0[chunk], tw.gamma[chunk]
    row_i, col_j, desc_j = tw.row_i[chunk], tw.col_j[chunk], tw.desc_j[chunk]
    for i in range(model.parent.shape[0]):
        parent = model.parent[i]
        link_jets(tw, chunk, i, root_nu if parent < 0 else tw.v_w[chunk, parent])
        s = tw.s[chunk, i]
        for m in range(gamma.shape[0]):
            for c in range(6):
                row_i[i, m, c] = e[m, c]
                row_i[i, m, 6 + c] = gamma[m, c]
                row_i[i, m, 12 + c] = b[m, c]
                row_i[i, m, 18 + c] = gamma[m, c] - e[m, c]
                row_i[i, m, 24 + c] = b[m, c]
                row_i[i, m, 30 + c] = b[m, c]
                ds = (m + 1) * s[m + 1, c]
                col_j[i, m, c] = ds
                col_j[i, m, 6 + c] = a[m, c]
                col_j[i, m, 12 + c] = (m + 1) * a[m + 1, c]
                col_j[i, m, 18 + c] = s[m, c]
                col_j[i, m, 24 + c] = ds - a[m, c]
                col_j[i, m, 30 + c] = s[m, c]
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


@jit_inline
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


@jit_inline
def torque_jacobian_sample(model, tw, chunk, S, Xup, q, root_nu, coef, out):
    """Raw blocks d tau^(l) / d q^(r) of one sample into out (k+1, n, k+3, n), visiting
    the supporting joints of joint dynamics: the support of every link (model.support),
    then its strict descendants; tw: a :class:`TorqueWorkspace`, slot ``chunk``."""
    world_state(model, tw, chunk, S, Xup, q, root_nu)
    per_link_jets(model, tw, chunk, root_nu)
    row_i, col_j, desc_j, s, T = tw.row_i[chunk], tw.col_j[chunk], tw.desc_j[chunk], \
        tw.s[chunk], tw.T[chunk]
    for i in range(model.parent.shape[0]):
        for t in range(model.support_start[i], model.support_start[i + 1]):
            j = model.support[t]
            ancestor_pair(row_i[i], col_j[j], T)
            write_raw_blocks(T, coef, i, j, out)
        for j in range(i + 1, model.subtree_end[i]):
            descendant_pair(s[i], desc_j[j], T)
            write_raw_blocks(T, coef, i, j, out)
