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
(kinematic rows, link momenta and forces), ancestors and descendants (joint momenta and
forces; the torques of ``cmtm.torque_jacobian`` likewise). The raw blocks
d y^(l) / d q_j^(r) = sum_s l!/(r-s)! G_s[l-r+s] (§7.6, §8) are written straight into
the output.

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

The joint torque rows have their own kernel (Lemma 6 in world coordinates,
``cmtm.torque_jacobian``, where every pair costs dot products of 6-vector jets instead of
6x6 block convolutions), and so do the link-velocity rows asked for alone
(``cmtm.velocity_derivatives``, in world coordinates with the binomial rule of §8);
``cmtm.api`` sends them there. Asked for with other rows of this kernel, the link-velocity
rows are written here from V, which the momentum and force rows need anyway. The
``wanted`` mask keeps the order of QUANTITIES; its joint-torque entry must be False.

L = k + 1 + (deepest input order offset requested): k+1 tangents, k+2 velocities and
momenta, k+3 forces. Everything inside is Taylor-scaled.

Tree walks and threads. The pairs (i, j in P(i)) are walked through the KernelModel's
support arrays, the strict descendants of i through its subtree range. The samples are
shared out to threads in claimed blocks (``cmtm.api.run_chunks``), each thread with its
own slot of every work array of :class:`JacobianWorkspace`; every work array is rewritten
before it is read in each sample, so results do not depend on which thread runs a
sample, and no kernel allocates.
"""
from typing import NamedTuple

import numpy as np

from cmtm._jit import claim_samples, jit, jit_inline, jit_kernel
from cmtm.dynamics import momentum_stacks
from cmtm.kinematics import (base_velocity_stacks, link_cmtm_pass, relative_cmtm_inverse,
                             velocity_pass)
from cmtm.spatial import matvec6
from cmtm.taylor import (add_blocks, add_stack, conv_block_vec, conv_blockT_vec, copy_blocks,
                         copy_stack, derivative_stack, force_cross_conv, motion_cross_conv,
                         raw_block_coefficients, write_raw_blocks, zero_blocks, zero_stack)

QUANTITIES = ("joint_velocity", "joint_tangent", "link_tangent", "link_velocity",
              "link_momentum", "link_momentum_world", "joint_momentum_world",
              "joint_momentum", "link_force", "joint_force", "joint_torque")
"""The rows of the paper's Table 4, in the order of the kernel's ``wanted`` mask."""

INPUT_OFFSET = (1, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2)
"""s such that output order l depends on input orders <= l + s (§7.1)."""

(JOINT_VELOCITY, JOINT_TANGENT, LINK_TANGENT, LINK_VELOCITY, LINK_MOMENTUM,
 LINK_MOMENTUM_WORLD, JOINT_MOMENTUM_WORLD, JOINT_MOMENTUM, LINK_FORCE, JOINT_FORCE,
 JOINT_TORQUE) = range(11)


# --- What a set of wanted quantities needs ---

@jit_kernel
def jacobian_flags(wanted):
    """(tangents, kinematic, world, forces): the passes the wanted quantities need, the link
    tangents Gx, the gravity-free kinematic rows, the world momenta, the force rows."""
    kinematic = wanted[LINK_VELOCITY:JOINT_MOMENTUM + 1].any()
    forces = wanted[LINK_FORCE] or wanted[JOINT_FORCE]
    world = wanted[LINK_MOMENTUM_WORLD:JOINT_MOMENTUM + 1].any() or wanted[JOINT_FORCE]
    tangents = wanted[LINK_TANGENT] or kinematic or forces
    return tangents, kinematic, world, forces


def jacobian_sizes(n, order, wanted):
    """(k+1, L, Lv, n_pairs, n_world) of :class:`JacobianWorkspace` for n links, order k and
    the (11,) bool mask ``wanted``: L = k+1 + the deepest input offset, Lv = max(L-1, 1),
    and n or 0 links for the pair arrays and world pair arrays as the quantities need them.
    ValueError if the mask wants the joint torque (its own kernel: cmtm.torque_jacobian)."""
    if wanted[JOINT_TORQUE]:
        raise ValueError("wanted: the joint torque rows are not computed by jacobian_kernel "
                         "(cmtm.torque_jacobian.torque_jacobian_kernel)")
    tangents, _, world, _ = jacobian_flags(wanted)
    L = order + 1 + max(INPUT_OFFSET[q] for q in range(len(QUANTITIES)) if wanted[q])
    return order + 1, L, max(L - 1, 1), n if tangents else 0, n if world else 0


class JacobianWorkspace(NamedTuple):
    """Arrays of :func:`jacobian_kernel` (sizes from :func:`jacobian_sizes`). coef and root
    are shared by every chunk and filled once by :func:`jacobian_workspace`; the others
    have a leading chunk axis, slot c for chunk c of the samples (shapes below per slot)."""

    coef: np.ndarray        # (k+1, k+3, 3) raw_block_coefficients
    root: np.ndarray        # (2, Lv, 6) base velocity stacks: at rest, gravity trick (§3.3)
    Xup: np.ndarray         # (n, L, 6, 6) relative CMTMs
    XJinv: np.ndarray       # (L, 6, 6) joint CMTM inverse of one joint
    sin_q: np.ndarray       # (L,) its sin and cos jets
    cos_q: np.ndarray       # (L,)
    skew_axis: np.ndarray   # (3, 3) [a x] of its axis
    Gx: np.ndarray          # (n_pairs, n_pairs, L, 6) link tangent columns
    G1: np.ndarray          # (2, k+1, 6) joint tangent / velocity columns
    state: np.ndarray       # (2, 3, n, Lv, 6) [free, gravity] x [nu, h_L, h_J]
    Xinv_L: np.ndarray      # (n, Lv, 6, 6) link CMTM inverses
    X_L: np.ndarray         # (n, Lv, 6, 6) link CMTMs
    pose: np.ndarray        # (6, 6) one link pose
    crosses: np.ndarray     # (L, 6, 6) its [nu_m x]
    V: np.ndarray           # (n_pairs, n_pairs, 2, Lv, 6)
    H: np.ndarray           # (n_pairs, n_pairs, 2, Lv, 6)
    W: np.ndarray           # (n_world, n_world, 2, Lv, 6)
    WJ: np.ndarray          # (n_world, n_world, 2, Lv, 6)
    local: np.ndarray       # (Lv, 6) scratch of world_momentum_rule
    HJ: np.ndarray          # (2, Lv, 6) one pair's joint momentum columns
    F: np.ndarray           # (3, max(Lv-1, 1), 6) one pair's force columns


def jacobian_workspace(model, order, wanted, n_chunks):
    """A :class:`JacobianWorkspace` for the KernelModel ``model``, order k, the (11,) bool
    mask ``wanted`` and n_chunks chunks."""
    n = model.parent.shape[0]
    k1, L, Lv, n_pairs, n_world = jacobian_sizes(n, order, wanted)

    def slots(*shape):
        return np.zeros((n_chunks,) + shape)
    root = base_velocity_stacks(model, Lv)
    pairs, world_pairs = (n_pairs, n_pairs, 2, Lv, 6), (n_world, n_world, 2, Lv, 6)
    return JacobianWorkspace(
        coef=raw_block_coefficients(k1, k1 + 2, 3), root=root,
        Xup=slots(n, L, 6, 6), XJinv=slots(L, 6, 6), sin_q=slots(L), cos_q=slots(L),
        skew_axis=slots(3, 3), Gx=slots(n_pairs, n_pairs, L, 6), G1=slots(2, k1, 6),
        state=slots(2, 3, n, Lv, 6), Xinv_L=slots(n, Lv, 6, 6), X_L=slots(n, Lv, 6, 6),
        pose=slots(6, 6), crosses=slots(L, 6, 6), V=slots(*pairs), H=slots(*pairs),
        W=slots(*world_pairs), WJ=slots(*world_pairs), local=slots(Lv, 6),
        HJ=slots(2, Lv, 6), F=slots(3, max(Lv - 1, 1), 6))


# --- Elemental rules on first columns (Lemmas 2-6) ---

@jit
def tangent_sweep(model, S, Xup, Gx):
    """Lemma 2 steps 1-2, recursive form: column j of J_{x_{L_i}} is
    Gx[i, i] = S_i (order 0 only) and Gx[i, j] = (^pX_i)^{-1} Gx[p(i), j] for j in P(p(i)),
    the support of i after i itself.

    S: (n, 6); Xup: (n, L, 6, 6); Gx: (n, n, L, 6), filled for ancestor pairs only.
    """
    for i in range(model.parent.shape[0]):
        zero_stack(Gx[i, i])
        for c in range(6):
            Gx[i, i, 0, c] = S[i, c]
        for t in range(model.support_start[i] + 1, model.support_start[i + 1]):
            j = model.support[t]
            zero_stack(Gx[i, j])
            conv_block_vec(Xup[i], Gx[model.parent[i], j], Gx[i, j], 1.0)


@jit
def velocity_rule(nu, Gx, V):
    """Lemma 2 step 3, dv = U([v x]_T) dx: V_0 = Gx' + [nu x] Gx, V_1 = Gx (§6.3)."""
    derivative_stack(Gx, V[0])
    motion_cross_conv(nu, Gx, V[0])
    copy_stack(Gx, V[1])


@jit
def inertia_rule(I, V, H):
    """Lemma 3: dh_L = diag(I..I) dv_L, so H_s = I V_s."""
    for s in range(V.shape[0]):
        zero_stack(H[s])
        for m in range(V.shape[1]):
            matvec6(I, V[s, m], H[s, m])


@jit
def world_momentum_rule(Xinv_L, h_L, Gx, H, local, W):
    """Lemma 4 step 1: d~h = X^*(dh + [h hat x^*]_T dx), with [h hat x^*] dx = [dx x^*] h and
    X^* the blockwise transpose of X_L^{-1} (§2.3); ``local`` is a work array like H[0]."""
    copy_stack(H[0], local)
    force_cross_conv(Gx, h_L, local, 1.0)
    zero_blocks(W)
    conv_blockT_vec(Xinv_L, local, W[0])
    conv_blockT_vec(Xinv_L, H[1], W[1])


@jit
def local_momentum_rule(X_L, h_J, Gx, WJ, ancestor, HJ):
    """Lemma 4 step 3: dh_J = X^{*-1} d~h_J - [h_J hat x^*]_T dx_L, with X^{*-1} = T(X_L^T)
    and [h_J hat x^*] dx = [dx x^*] h_J. The tangent term is present only when joint j is
    an ancestor of link i (``ancestor``); otherwise dx_L = 0.
    """
    zero_blocks(HJ)
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
    zero_blocks(F)
    for s in range(2):
        derivative_stack(H[s], F[s])
        force_cross_conv(nu, H[s], F[s], 1.0)
        if ancestor:
            force_cross_conv(V[s], h, F[s], 1.0)
    add_stack(H[0], F[1])
    copy_stack(H[1], F[2])


# --- Sweeps over the tree (pairs (i, j): j in the support of i, then, for joint
# dynamics, j a strict descendant of i) ---

@jit_inline
def link_sweep(model, ws, chunk, state, momentum, world):
    """Forward sweep for the support pairs (i, j in P(i)): V, and if ``momentum`` H, if
    ``world`` W (and H), from the pass ``state`` = (nu, h_L, h_J)."""
    nu, h_L, I = state[0], state[1], model.spatial_inertia
    Gx, V, H, W = ws.Gx[chunk], ws.V[chunk], ws.H[chunk], ws.W[chunk]
    for i in range(model.parent.shape[0]):
        for t in range(model.support_start[i], model.support_start[i + 1]):
            j = model.support[t]
            velocity_rule(nu[i], Gx[i, j], V[i, j])
            if momentum or world:
                inertia_rule(I[i], V[i, j], H[i, j])
            if world:
                world_momentum_rule(ws.Xinv_L[chunk, i], h_L[i], Gx[i, j], H[i, j],
                                    ws.local[chunk], W[i, j])


@jit
def subtree_sum_sweep(model, W, WJ):
    """Lemma 4 step 2 as a backward sweep: WJ[i, j] = W[i, j] + sum_c WJ[c, j], j in P(i).

    For a descendant j of i the sum is WJ[j, j] (only the subtree of j moves with q_j).
    """
    support, support_start = model.support, model.support_start
    for i in range(model.parent.shape[0]):
        for t in range(support_start[i], support_start[i + 1]):
            copy_blocks(W[i, support[t]], WJ[i, support[t]])
    for c in range(model.parent.shape[0] - 1, -1, -1):
        p = model.parent[c]
        if p >= 0:
            for t in range(support_start[p], support_start[p + 1]):
                add_blocks(WJ[c, support[t]], WJ[p, support[t]])


@jit_inline
def tangent_rows(model, ws, chunk, wanted, outputs, sample):
    """Lemma 1 (joint tangent and joint velocity: S_i on their own joint) and Lemma 2
    (link tangent: Gx over the support) written as raw blocks for sample ``sample``."""
    S, Gx, G1, coef = model.screw, ws.Gx[chunk], ws.G1[chunk], ws.coef
    for i in range(model.parent.shape[0]):
        if wanted[JOINT_TANGENT]:
            zero_blocks(G1)
            for c in range(6):
                G1[0, 0, c] = S[i, c]
            write_raw_blocks(G1[:1], coef, 6 * i, i, outputs[JOINT_TANGENT][sample])
        if wanted[JOINT_VELOCITY]:
            zero_blocks(G1)
            for c in range(6):
                G1[1, 0, c] = S[i, c]
            write_raw_blocks(G1, coef, 6 * i, i, outputs[JOINT_VELOCITY][sample])
        if wanted[LINK_TANGENT]:
            for t in range(model.support_start[i], model.support_start[i + 1]):
                j = model.support[t]
                write_raw_blocks(Gx[i, j:j + 1], coef, 6 * i, j, outputs[LINK_TANGENT][sample])


@jit_inline
def joint_momentum_pair(ws, chunk, state, i, j, wanted, outputs, sample):
    """Joint momentum columns (world, local) of the pair (i, j): WJ[i, j] for j in P(i),
    WJ[j, j] for a strict descendant j (Lemma 4), then Lemma 4 step 3."""
    ancestor = j <= i
    src = ws.WJ[chunk, i, j] if ancestor else ws.WJ[chunk, j, j]
    if wanted[JOINT_MOMENTUM_WORLD]:
        write_raw_blocks(src, ws.coef, 6 * i, j, outputs[JOINT_MOMENTUM_WORLD][sample])
    if wanted[JOINT_MOMENTUM]:
        HJ = ws.HJ[chunk]
        local_momentum_rule(ws.X_L[chunk, i], state[2, i], ws.Gx[chunk, i, j], src, ancestor,
                            HJ)
        write_raw_blocks(HJ, ws.coef, 6 * i, j, outputs[JOINT_MOMENTUM][sample])


@jit_inline
def momentum_rows(model, ws, chunk, state, wanted, world, outputs, sample):
    """Lemmas 2-4 on the gravity-free pass ``state``: link velocity, link momentum (local,
    world), joint momentum (world, local) raw blocks for sample ``sample``, from the
    link-velocity columns V."""
    V, H, W, coef = ws.V[chunk], ws.H[chunk], ws.W[chunk], ws.coef
    link_sweep(model, ws, chunk, state, wanted[LINK_MOMENTUM], world)
    for i in range(model.parent.shape[0]):
        for t in range(model.support_start[i], model.support_start[i + 1]):
            j = model.support[t]
            if wanted[LINK_VELOCITY]:
                write_raw_blocks(V[i, j], coef, 6 * i, j, outputs[LINK_VELOCITY][sample])
            if wanted[LINK_MOMENTUM]:
                write_raw_blocks(H[i, j], coef, 6 * i, j, outputs[LINK_MOMENTUM][sample])
            if wanted[LINK_MOMENTUM_WORLD]:
                write_raw_blocks(W[i, j], coef, 6 * i, j, outputs[LINK_MOMENTUM_WORLD][sample])
    if wanted[JOINT_MOMENTUM_WORLD] or wanted[JOINT_MOMENTUM]:
        subtree_sum_sweep(model, W, ws.WJ[chunk])
        for i in range(model.parent.shape[0]):
            for t in range(model.support_start[i], model.support_start[i + 1]):
                joint_momentum_pair(ws, chunk, state, i, model.support[t], wanted, outputs,
                                    sample)
            for j in range(i + 1, model.subtree_end[i]):
                joint_momentum_pair(ws, chunk, state, i, j, wanted, outputs, sample)


@jit_inline
def joint_force_pair(ws, chunk, state, i, j, out):
    """Joint force columns of the pair (i, j) (Lemmas 4-5), j in P(i) or a strict
    descendant of i, written as raw blocks into out (k+1, 6n, k+3, n)."""
    ancestor = j <= i
    src = ws.WJ[chunk, i, j] if ancestor else ws.WJ[chunk, j, j]
    HJ, F = ws.HJ[chunk], ws.F[chunk]
    local_momentum_rule(ws.X_L[chunk, i], state[2, i], ws.Gx[chunk, i, j], src, ancestor, HJ)
    force_rule(state[0, i], state[2, i], HJ, ws.V[chunk, i, j], ancestor, F)
    write_raw_blocks(F, ws.coef, 6 * i, j, out)


@jit_inline
def force_rows(model, ws, chunk, state, wanted, outputs, sample):
    """Lemmas 2-5 on the gravity pass ``state``: link and joint force raw blocks for
    sample ``sample``.

    Lemma 4's world frame may be any fixed frame: the gravity root CMTM is constant in q
    and cancels in X^{*-1} (sum X^* ...), so the link CMTMs of the base at rest serve.
    """
    V, H, F = ws.V[chunk], ws.H[chunk], ws.F[chunk]
    link_sweep(model, ws, chunk, state, wanted[LINK_FORCE:JOINT_FORCE + 1].any(),
               wanted[JOINT_FORCE])
    if wanted[LINK_FORCE]:
        for i in range(model.parent.shape[0]):
            for t in range(model.support_start[i], model.support_start[i + 1]):
                j = model.support[t]
                force_rule(state[0, i], state[1, i], H[i, j], V[i, j], j <= i, F)
                write_raw_blocks(F, ws.coef, 6 * i, j, outputs[LINK_FORCE][sample])
    if wanted[JOINT_FORCE]:
        subtree_sum_sweep(model, ws.W[chunk], ws.WJ[chunk])
        for i in range(model.parent.shape[0]):
            for t in range(model.support_start[i], model.support_start[i + 1]):
                joint_force_pair(ws, chunk, state, i, model.support[t],
                                 outputs[JOINT_FORCE][sample])
            for j in range(i + 1, model.subtree_end[i]):
                joint_force_pair(ws, chunk, state, i, j, outputs[JOINT_FORCE][sample])


# --- The batched kernel ---

@jit_kernel
def jacobian_kernel(model, ws, chunk, claim, last, qhat, wanted, outputs):
    """Structured Jacobians of every wanted quantity at the samples it claims (raw
    derivatives), in slot ``chunk`` of the workspace (``cmtm.api.run_chunks`` runs the
    chunks on threads).

    model: KernelModel; ws: a :class:`JacobianWorkspace` for these quantities and order;
    qhat: (n_samples, >=k+1+s, n) Taylor-scaled; wanted: (11,) bool in QUANTITIES order
    (the joint torque False: its own kernel); outputs[q]: (n_samples, k+1, m_q, k+1+s_q,
    n), zero-initialised, of which only the blocks of supporting joints are written.
    Kinematic rows use a gravity-free pass, forces the base-acceleration pass (§3.3).
    """
    tangents, kinematic, world, forces = jacobian_flags(wanted)
    parent, S, I, free_root, gravity_root = model.parent, model.screw, model.spatial_inertia, \
        ws.root[0], ws.root[1]
    Xup, free, gravity = ws.Xup[chunk], ws.state[chunk, 0], ws.state[chunk, 1]
    done = 0
    first, stop = claim_samples(claim, last)
    while first < stop:
        for sample in range(first, stop):
            q = qhat[sample]
            relative_cmtm_inverse(model, q, ws.XJinv[chunk], ws.sin_q[chunk],
                                  ws.cos_q[chunk], ws.skew_axis[chunk], Xup)
            if tangents:
                tangent_sweep(model, S, Xup, ws.Gx[chunk])
            if wanted[JOINT_VELOCITY:LINK_TANGENT + 1].any():
                tangent_rows(model, ws, chunk, wanted, outputs, sample)
            if wanted[LINK_MOMENTUM:JOINT_MOMENTUM + 1].any() or world:
                momentum_stacks(parent, S, I, Xup, q, free_root, free[0], free[1], free[2])
            elif kinematic:
                velocity_pass(parent, S, Xup, q, free_root, free[0])
            if world:
                link_cmtm_pass(parent, Xup, free[0], ws.Xinv_L[chunk], ws.X_L[chunk],
                               ws.pose[chunk], ws.crosses[chunk])
            if kinematic:
                momentum_rows(model, ws, chunk, free, wanted, world, outputs, sample)
            if forces:
                momentum_stacks(parent, S, I, Xup, q, gravity_root, gravity[0], gravity[1],
                                gravity[2])
                force_rows(model, ws, chunk, gravity, wanted, outputs, sample)
        done += stop - first
        first, stop = claim_samples(claim, last)
    return done
