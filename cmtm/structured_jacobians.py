"""Structured Jacobians of the comprehensive quantities (cmtm_math.md §7-§8, paper Table 4).

Representation. By §8, the Jacobian of a Taylor stack y_(k) with respect to joint j's
stack is sum_s T(G_s) D_s, where G_s(t) = d y / d q_j^(s) is the ordinary Jacobian column
along the trajectory. Each lemma of §7.2 maps these first columns to first columns:

* a Toeplitz product T(M) (a CMTM, an inertia) is a block convolution of M with each G_s;
* a hat-swap term [y hat x]_T dx is a convolution of the tangent column with y;
* U(T(M)) (a time derivative plus a product) maps (G_0, G_1, ...) to
  (G_0' + M G_0, G_1' + G_0 + M G_1, ..., G_r), the derivative of y = sum_s G_s q^(s).

So a pair (output link i, joint j) carries an array ``G[s, m, :]`` of the Taylor
coefficients of G_s, and only pairs with j supporting i are visited: ancestors of i
(kinematic rows, link momenta and forces), ancestors and descendants (joint momenta,
joint forces, torques). The raw blocks d y^(l) / d q_j^(r) = sum_s l!/(r-s)! G_s[l-r+s]
(§7.6, §8) are written straight into the output.

==========================  ==========  ==================  ==============================
paper                       code        shape (one pair)    rule
==========================  ==========  ==================  ==============================
J_{x_{L_i}} column j        ``Gx``      (L, 6)              Lemma 2 steps 1-2
J_{v_{L_i}}                 ``V``       (2, L-1, 6)         Lemma 2 step 3
J_{h_{L_i}}                 ``H``       (2, L-1, 6)         Lemma 3
J_{~h_{L_i}}, J_{~h_{J_i}}  ``W, WJ``   (2, L-1, 6)         Lemma 4 steps 1-2
J_{h_{J_i}}                 ``HJ``      (2, L-1, 6)         Lemma 4 step 3
J_{f_{L_i}}, J_{f_{J_i}}    ``F``       (3, L-2, 6)         Lemma 5
==========================  ==========  ==================  ==============================

The joint torque rows apply Lemma 6 in world coordinates (``cmtm.torque_jacobian``), where
every pair costs dot products of 6-vector jets instead of 6x6 block convolutions.

L = k + 1 + (deepest input order offset requested): k+1 tangents, k+2 velocities and
momenta, k+3 forces and torques. Everything inside is Taylor-scaled.
"""
import numpy as np

from cmtm._jit import jit
from cmtm.dynamics import momentum_stacks
from cmtm.kinematics import (joint_geometry, link_cmtm_pass, relative_cmtm_inverse,
                             root_velocity_stack, velocity_pass)
from cmtm.spatial import matvec6
from cmtm.torque_jacobian import torque_jacobian_sample, torque_workspace
from cmtm.taylor import (conv_block_vec, conv_blockT_vec, derivative_stack, force_cross_conv,
                         motion_cross_conv, raw_block_coefficients, write_raw_blocks)

QUANTITIES = ("joint_velocity", "joint_tangent", "link_tangent", "link_velocity",
              "link_momentum", "link_momentum_world", "joint_momentum_world",
              "joint_momentum", "link_force", "joint_force", "joint_torque")
"""The rows of the paper's Table 4, in the order of the kernel's ``wanted`` mask."""

INPUT_OFFSET = (1, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2)
"""s such that output order l depends on input orders <= l + s (§7.1)."""

(JOINT_VELOCITY, JOINT_TANGENT, LINK_TANGENT, LINK_VELOCITY, LINK_MOMENTUM,
 LINK_MOMENTUM_WORLD, JOINT_MOMENTUM_WORLD, JOINT_MOMENTUM, LINK_FORCE, JOINT_FORCE,
 JOINT_TORQUE) = range(11)


# --- Elemental rules on first columns (Lemmas 2-6) ---

@jit
def tangent_sweep(parent, S, Xup, Gx):
    """Lemma 2 steps 1-2, recursive form: column j of J_{x_{L_i}} is
    Gx[i, i] = S_i (order 0 only) and Gx[i, j] = (^pX_i)^{-1} Gx[p(i), j] for j in P(p(i)).

    S: (n, 6); Xup: (n, L, 6, 6); Gx: (n, n, L, 6), filled for ancestor pairs only.
    """
    for i in range(parent.shape[0]):
        Gx[i, i] = 0.0
        Gx[i, i, 0] = S[i]
        j = parent[i]
        while j >= 0:
            Gx[i, j] = 0.0
            conv_block_vec(Xup[i], Gx[parent[i], j], Gx[i, j])
            j = parent[j]


@jit
def velocity_rule(nu, Gx, V):
    """Lemma 2 step 3, dv = U([v x]_T) dx: V_0 = Gx' + [nu x] Gx, V_1 = Gx (§6.3)."""
    derivative_stack(Gx, V[0])
    motion_cross_conv(nu, Gx, V[0])
    V[1] = Gx[:V.shape[1]]


@jit
def inertia_rule(I, V, H):
    """Lemma 3: dh_L = diag(I..I) dv_L, so H_s = I V_s."""
    H[:] = 0.0
    for s in range(V.shape[0]):
        for m in range(V.shape[1]):
            matvec6(I, V[s, m], H[s, m])


@jit
def world_momentum_rule(Xinv_L, h_L, Gx, H, local, W):
    """Lemma 4 step 1: d~h = X^*(dh + [h hat x^*]_T dx), with [h hat x^*] dx = [dx x^*] h and
    X^* the blockwise transpose of X_L^{-1} (§2.3); ``local`` is a work array like H[0]."""
    local[:] = H[0]
    force_cross_conv(Gx, h_L, local)
    W[:] = 0.0
    conv_blockT_vec(Xinv_L, local, W[0])
    conv_blockT_vec(Xinv_L, H[1], W[1])


@jit
def local_momentum_rule(X_L, h_J, Gx, WJ, ancestor, HJ):
    """Lemma 4 step 3: dh_J = X^{*-1} d~h_J - [h_J hat x^*]_T dx_L, with X^{*-1} = T(X_L^T)
    and [h_J hat x^*] dx = [dx x^*] h_J. The tangent term is present only when joint j is
    an ancestor of link i (``ancestor``); otherwise dx_L = 0.
    """
    HJ[:] = 0.0
    conv_blockT_vec(X_L, WJ[0], HJ[0])
    conv_blockT_vec(X_L, WJ[1], HJ[1])
    if ancestor:
        force_cross_conv(Gx, h_J, HJ[0], -1.0)


@jit
def force_rule(nu, h, H, V, ancestor, F):
    """Lemma 5: df = U([v x^*]_T) dh + [h hat x^*]_T dv (dv = 0 unless j is an ancestor):
    F_0 = H_0' + [nu x^*] H_0 + [V_0 x^*] h, F_1 = H_1' + H_0 + [nu x^*] H_1 + [V_1 x^*] h,
    F_2 = H_1.
    """
    F[:] = 0.0
    for s in range(2):
        derivative_stack(H[s], F[s])
        force_cross_conv(nu, H[s], F[s])
        if ancestor:
            force_cross_conv(V[s], h, F[s])
    F[1] += H[0, :F.shape[1]]
    F[2] = H[1, :F.shape[1]]


# --- Sweeps over the tree ---

@jit
def link_sweep(parent, I, Xinv_L, nu, h_L, Gx, momentum, world, V, H, W):
    """Forward sweep for ancestor pairs: V, and if ``momentum`` H, if ``world`` W, of every
    (i, j in P(i))."""
    local = np.empty(V.shape[3:])
    for i in range(parent.shape[0]):
        j = i
        while j >= 0:
            velocity_rule(nu[i], Gx[i, j], V[i, j])
            if momentum or world:
                inertia_rule(I[i], V[i, j], H[i, j])
            if world:
                world_momentum_rule(Xinv_L[i], h_L[i], Gx[i, j], H[i, j], local, W[i, j])
            j = parent[j]


@jit
def subtree_sum_sweep(parent, W, WJ):
    """Lemma 4 step 2 as a backward sweep: WJ[i, j] = W[i, j] + sum_c WJ[c, j], j in P(i).

    For a descendant j of i the sum is WJ[j, j] (only the subtree of j moves with q_j).
    """
    n = parent.shape[0]
    for i in range(n):
        j = i
        while j >= 0:
            WJ[i, j] = W[i, j]
            j = parent[j]
    for c in range(n - 1, -1, -1):
        p = parent[c]
        j = p
        while j >= 0:
            WJ[p, j] += WJ[c, j]
            j = parent[j]


@jit
def supporting_joints(parent, subtree_end, i):
    """P(i) and C(i) of link i: its ancestors (with i) and its strict descendants."""
    count = 0
    j = i
    while j >= 0:
        count += 1
        j = parent[j]
    out = np.empty(count + subtree_end[i] - i - 1, dtype=np.int64)
    j = i
    for t in range(count):
        out[t] = j
        j = parent[j]
    for t in range(i + 1, subtree_end[i]):
        out[count + t - i - 1] = t
    return out


# --- The batched kernel ---

@jit
def any_of(wanted, first, last):
    """True if any of wanted[first..last] is set."""
    for q in range(first, last + 1):
        if wanted[q]:
            return True
    return False


@jit
def tangent_rows(parent, S, Gx, coef, wanted, outputs, smp):
    """Lemma 1 (joint tangent and joint velocity: S_i on their own joint) and Lemma 2
    (link tangent: Gx over the ancestors) written as raw blocks for sample ``smp``."""
    k1 = outputs[JOINT_TANGENT].shape[1] if wanted[JOINT_TANGENT] else \
        outputs[JOINT_VELOCITY].shape[1] if wanted[JOINT_VELOCITY] else \
        outputs[LINK_TANGENT].shape[1]
    G1 = np.zeros((2, k1, 6))
    for i in range(parent.shape[0]):
        if wanted[JOINT_TANGENT]:
            G1[:] = 0.0
            G1[0, 0] = S[i]
            write_raw_blocks(G1[:1], coef, 6 * i, i, outputs[JOINT_TANGENT][smp])
        if wanted[JOINT_VELOCITY]:
            G1[:] = 0.0
            G1[1, 0] = S[i]
            write_raw_blocks(G1, coef, 6 * i, i, outputs[JOINT_VELOCITY][smp])
        if wanted[LINK_TANGENT]:
            j = i
            while j >= 0:
                write_raw_blocks(Gx[i, j:j + 1, :k1], coef, 6 * i, j,
                                 outputs[LINK_TANGENT][smp])
                j = parent[j]


@jit
def momentum_rows(parent, subtree_end, I, Xinv_L, X_L, state, Gx, coef, wanted, world, pairs,
                  outputs, smp):
    """Lemmas 2-4 on the gravity-free pass: link velocity, link momentum (local, world),
    joint momentum (world, local) raw blocks for sample ``smp``."""
    V, H, W, WJ, HJ, F = pairs
    nu, h_L, h_J = state[0], state[1], state[2]
    link_sweep(parent, I, Xinv_L, nu, h_L, Gx, wanted[LINK_MOMENTUM], world, V, H, W)
    for i in range(parent.shape[0]):
        j = i
        while j >= 0:
            if wanted[LINK_VELOCITY]:
                write_raw_blocks(V[i, j], coef, 6 * i, j, outputs[LINK_VELOCITY][smp])
            if wanted[LINK_MOMENTUM]:
                write_raw_blocks(H[i, j], coef, 6 * i, j, outputs[LINK_MOMENTUM][smp])
            if wanted[LINK_MOMENTUM_WORLD]:
                write_raw_blocks(W[i, j], coef, 6 * i, j, outputs[LINK_MOMENTUM_WORLD][smp])
            j = parent[j]
    if wanted[JOINT_MOMENTUM_WORLD] or wanted[JOINT_MOMENTUM]:
        subtree_sum_sweep(parent, W, WJ)
        for i in range(parent.shape[0]):
            for j in supporting_joints(parent, subtree_end, i):
                ancestor = j <= i
                src = WJ[i, j] if ancestor else WJ[j, j]
                if wanted[JOINT_MOMENTUM_WORLD]:
                    write_raw_blocks(src, coef, 6 * i, j, outputs[JOINT_MOMENTUM_WORLD][smp])
                if wanted[JOINT_MOMENTUM]:
                    local_momentum_rule(X_L[i], h_J[i], Gx[i, j], src, ancestor, HJ)
                    write_raw_blocks(HJ, coef, 6 * i, j, outputs[JOINT_MOMENTUM][smp])


@jit
def force_rows(parent, subtree_end, I, Xinv_L, X_L, state, Gx, coef, wanted, pairs, outputs,
               smp):
    """Lemmas 2-5 on the gravity pass: link and joint force raw blocks for sample ``smp``.

    Lemma 4's world frame may be any fixed frame: the gravity root CMTM is constant in q
    and cancels in X^{*-1} (sum X^* ...), so the link CMTMs of the base at rest serve.
    """
    V, H, W, WJ, HJ, F = pairs
    nu, h_L, h_J = state[0], state[1], state[2]
    link_sweep(parent, I, Xinv_L, nu, h_L, Gx, True, wanted[JOINT_FORCE], V, H, W)
    if wanted[LINK_FORCE]:
        for i in range(parent.shape[0]):
            j = i
            while j >= 0:
                force_rule(nu[i], h_L[i], H[i, j], V[i, j], True, F)
                write_raw_blocks(F, coef, 6 * i, j, outputs[LINK_FORCE][smp])
                j = parent[j]
    if wanted[JOINT_FORCE]:
        subtree_sum_sweep(parent, W, WJ)
        for i in range(parent.shape[0]):
            for j in supporting_joints(parent, subtree_end, i):
                ancestor = j <= i
                src = WJ[i, j] if ancestor else WJ[j, j]
                local_momentum_rule(X_L[i], h_J[i], Gx[i, j], src, ancestor, HJ)
                force_rule(nu[i], h_J[i], HJ, V[i, j], ancestor, F)
                write_raw_blocks(F, coef, 6 * i, j, outputs[JOINT_FORCE][smp])


@jit
def pair_workspace(n_pairs, n_world, Lv):
    """Per-pair first columns (V, H, W, WJ) and per-pair scratch (HJ, F)."""
    return (np.zeros((n_pairs, n_pairs, 2, Lv, 6)), np.zeros((n_pairs, n_pairs, 2, Lv, 6)),
            np.zeros((n_world, n_world, 2, Lv, 6)), np.zeros((n_world, n_world, 2, Lv, 6)),
            np.zeros((2, Lv, 6)), np.zeros((3, max(Lv - 1, 1), 6)))


@jit
def jacobian_kernel(parent, subtree_end, joint_type, axis, placement_R, placement_p, I,
                    gravity, qhat, order, wanted, outputs):
    """Structured Jacobians of every wanted quantity at every sample (raw derivatives).

    qhat: (n_samples, >=k+1+s, n) Taylor-scaled; wanted: (11,) bool in QUANTITIES order;
    outputs[q]: (n_samples, k+1, m_q, k+1+s_q, n), zero-initialised; only the blocks of
    supporting joints are written. Kinematic rows use a gravity-free pass, forces and
    torques the base-acceleration pass (§3.3).
    """
    n = parent.shape[0]
    k1 = order + 1
    depth = 0
    for q in range(11):
        if wanted[q]:
            depth = max(depth, INPUT_OFFSET[q])
    L = k1 + depth
    Lv = max(L - 1, 1)
    kinematic = any_of(wanted, LINK_VELOCITY, JOINT_MOMENTUM)
    forces = wanted[LINK_FORCE] or wanted[JOINT_FORCE]
    world = any_of(wanted, LINK_MOMENTUM_WORLD, JOINT_MOMENTUM) or wanted[JOINT_FORCE]
    tangents = wanted[LINK_TANGENT] or kinematic or forces
    S, A0inv = joint_geometry(joint_type, axis, placement_R, placement_p)
    coef = raw_block_coefficients(k1, k1 + 2, 3)
    Xup = np.empty((n, L, 6, 6))
    n_pairs = n if tangents else 0
    Gx = np.empty((n_pairs, n_pairs, L, 6))
    pairs = pair_workspace(n_pairs, n if world else 0, Lv)
    state = np.zeros((2, 3, n, Lv, 6))  # [free, gravity] x [nu, h_L, h_J]
    Xinv_L = np.empty((n, Lv, 6, 6))
    X_L = np.empty((n, Lv, 6, 6))
    torque_ws = torque_workspace(n if wanted[JOINT_TORQUE] else 0, max(Lv, 2))
    root = np.zeros((2, Lv, 6))
    root[1] = root_velocity_stack(gravity, Lv)
    for smp in range(qhat.shape[0]):
        q = qhat[smp]
        relative_cmtm_inverse(joint_type, axis, A0inv, q, Xup)
        if tangents:
            tangent_sweep(parent, S, Xup, Gx)
        if any_of(wanted, JOINT_VELOCITY, LINK_TANGENT):
            tangent_rows(parent, S, Gx, coef, wanted, outputs, smp)
        if any_of(wanted, LINK_MOMENTUM, JOINT_MOMENTUM) or world:
            momentum_stacks(parent, S, I, Xup, q, root[0], state[0, 0], state[0, 1], state[0, 2])
        elif kinematic:
            velocity_pass(parent, S, Xup, q, root[0], state[0, 0])
        if world:
            link_cmtm_pass(parent, Xup, state[0, 0], Xinv_L, X_L)
        if kinematic:
            momentum_rows(parent, subtree_end, I, Xinv_L, X_L, state[0], Gx, coef, wanted,
                          world, pairs, outputs, smp)
        if forces:
            momentum_stacks(parent, S, I, Xup, q, root[1], state[1, 0], state[1, 1], state[1, 2])
            force_rows(parent, subtree_end, I, Xinv_L, X_L, state[1], Gx, coef, wanted, pairs,
                       outputs, smp)
        # --- Lemma 6 in world coordinates: joint torques (cmtm.torque_jacobian) ---
        if wanted[JOINT_TORQUE]:
            torque_jacobian_sample(parent, subtree_end, S, I, Xup, q, root[1], coef, torque_ws,
                                   outputs[JOINT_TORQUE][smp])
