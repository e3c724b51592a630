"""Batched comprehensive passes: one call runs the forward and backward sweeps of
cmtm_math.md §4-§5 for every time sample (the loop over samples lives in the kernel).

Inputs and outputs are Taylor-scaled; ``cmtm.api`` converts to raw derivatives. The
samples are shared out to threads in claimed blocks (``cmtm.api.run_chunks``), each thread
with its own slot of the work arrays of :class:`MotionWorkspace`, so results do not
depend on which thread runs a sample; no kernel allocates per sample.

Two velocity passes share the relative CMTMs (§3.3): a gravity-free pass for the
kinematic outputs (link velocities and momenta, whose derivatives must not contain the
fictitious base motion) and a pass with the base-acceleration trick for forces and torques.
"""
from typing import NamedTuple

import numpy as np

from cmtm._jit import claim_samples, jit, jit_inline, jit_kernel
from cmtm.dynamics import force_from_momentum, joint_torque, momentum_stacks, world_momentum
from cmtm.kinematics import (base_velocity_stacks, link_cmtm_inverse_pass, link_cmtm_pass,
                             relative_cmtm_inverse, velocity_pass)
from cmtm.rnea import link_pose_in_parent, world_pose


class MotionWorkspace(NamedTuple):
    """Arrays of :func:`motion_kernel` for n links and order k (K = k+2 CMTM orders with
    dynamics, else k+1). root is shared by every chunk and filled once by
    :func:`motion_workspace`; the others have a leading chunk axis, slot c for chunk c of
    the samples (shapes below per slot)."""

    root: np.ndarray        # (2, k+2, 6) base velocity stacks: at rest, gravity trick (§3.3)
    Xup: np.ndarray         # (n, K, 6, 6) relative CMTMs
    XJinv: np.ndarray       # (K, 6, 6) joint CMTM inverse of one joint
    sin_q: np.ndarray       # (K,) its sin and cos jets
    cos_q: np.ndarray       # (K,)
    skew_axis: np.ndarray   # (3, 3) [a x] of its axis
    kin: np.ndarray         # (5, n, k+1, 6) v_L, h_L, w_h_L, h_J, w_h_J (link-major)
    Xinv_L: np.ndarray      # (n, k+1, 6, 6) link CMTM inverses
    dyn: np.ndarray         # (3, n, k+2, 6) nu, h_L, h_J of the gravity pass
    dyn_f: np.ndarray       # (2, n, k+1, 6) f_L, f_J (link-major)


def motion_workspace(model, order, dynamics, n_chunks):
    """A :class:`MotionWorkspace` for the KernelModel ``model``, order k, with or without
    ``dynamics``, and n_chunks chunks."""
    n, k1 = model.parent.shape[0], order + 1

    def slots(*shape):
        return np.zeros((n_chunks,) + shape)
    root = base_velocity_stacks(model, k1 + 1)
    K = k1 + 1 if dynamics else k1
    return MotionWorkspace(
        root=root, Xup=slots(n, K, 6, 6), XJinv=slots(K, 6, 6),
        sin_q=slots(K), cos_q=slots(K), skew_axis=slots(3, 3), kin=slots(5, n, k1, 6),
        Xinv_L=slots(n, k1, 6, 6), dyn=slots(3, n, k1 + 1, 6), dyn_f=slots(2, n, k1, 6))


@jit_inline
def kinematic_outputs(parent, S, I, Xup, qhat, zero_root, world, v_L, h_L, w_h_L, h_J, w_h_J,
                      Xinv_L):
    """Gravity-free link velocities and momenta (local and world), K = v_L.shape[1] orders.

    Outputs are (n, K, 6) work arrays of one sample; world ones are filled when ``world``.
    """
    momentum_stacks(parent, S, I, Xup, qhat, zero_root, v_L, h_L, h_J)
    if world:
        link_cmtm_inverse_pass(parent, Xup, Xinv_L)
        world_momentum(Xinv_L, h_L, w_h_L)
        world_momentum(Xinv_L, h_J, w_h_J)


@jit_inline
def dynamic_outputs(parent, S, I, Xup, qhat, root_nu, links, nu, h_L, h_J, f_L, f_J, tau):
    """Joint (and, if ``links``, link) wrench stacks and joint torque stacks with gravity
    (base-acceleration trick) of one sample: nu, h_L, h_J (n, k+2, 6) work arrays;
    f_L, f_J (n, k+1, 6) and tau (k+1, n) outputs.
    """
    momentum_stacks(parent, S, I, Xup, qhat, root_nu, nu, h_L, h_J)
    if links:
        force_from_momentum(nu, h_L, f_L)
    force_from_momentum(nu, h_J, f_J)
    joint_torque(S, f_J, tau)


@jit
def copy_link_stack(work, out):
    """out[l, i] = work[i, l]: (n, K, 6) work layout -> (K, n, 6) output layout."""
    for l in range(out.shape[0]):
        for i in range(out.shape[1]):
            for c in range(6):
                out[l, i, c] = work[i, l, c]


@jit_kernel
def motion_kernel(model, ws, chunk, claim, last, qhat, kinematics, world, dynamics, outputs):
    """All comprehensive outputs of order k at the samples it claims, Taylor-scaled, in
    slot ``chunk`` of the workspace (``cmtm.api.run_chunks`` runs the chunks on threads).

    model: KernelModel; ws: a :class:`MotionWorkspace` of this order (with dynamics if
    ``dynamics``); qhat: (n_samples, >=k+2 or k+3, n); outputs = (v_L, h_L, w_h_L, h_J,
    w_h_J, f_L, f_J, tau): per-link (n_samples, k+1, n, 6), tau (n_samples, k+1, n);
    outputs whose flag is off are not touched (may be empty arrays), nor f_L and f_J when
    f_L is empty.
    """
    v_L, h_L, w_h_L, h_J, w_h_J, f_L, f_J, tau = outputs
    parent, S, I, links = model.parent, model.screw, model.spatial_inertia, f_L.shape[0] > 0
    Xup, kin, dyn, dyn_f = ws.Xup[chunk], ws.kin[chunk], ws.dyn[chunk], ws.dyn_f[chunk]
    done = 0
    first, stop = claim_samples(claim, last)
    while first < stop:
        for sample in range(first, stop):
            relative_cmtm_inverse(model, qhat[sample], ws.XJinv[chunk], ws.sin_q[chunk],
                                  ws.cos_q[chunk], ws.skew_axis[chunk], Xup)
            if kinematics:
                kinematic_outputs(parent, S, I, Xup, qhat[sample], ws.root[0], world, kin[0],
                                  kin[1], kin[2], kin[3], kin[4], ws.Xinv_L[chunk])
                copy_link_stack(kin[0], v_L[sample])
                copy_link_stack(kin[1], h_L[sample])
                copy_link_stack(kin[3], h_J[sample])
                if world:
                    copy_link_stack(kin[2], w_h_L[sample])
                    copy_link_stack(kin[4], w_h_J[sample])
            if dynamics:
                dynamic_outputs(parent, S, I, Xup, qhat[sample], ws.root[1], links, dyn[0], dyn[1],
                                dyn[2], dyn_f[0], dyn_f[1], tau[sample])
                if links:
                    copy_link_stack(dyn_f[0], f_L[sample])
                    copy_link_stack(dyn_f[1], f_J[sample])
        done += stop - first
        first, stop = claim_samples(claim, last)
    return done


class LinkPosesWorkspace(NamedTuple):
    """Arrays of :func:`link_poses_kernel`, slot c (leading axis) for chunk c."""

    E: np.ndarray           # (3, 3) exp(q [a x]) of one joint
    R_rel: np.ndarray       # (3, 3) its link pose in the parent
    p_rel: np.ndarray       # (3,)


def link_poses_workspace(model, n_chunks):
    """A :class:`LinkPosesWorkspace` for n_chunks chunks (the model fixes nothing here)."""
    return LinkPosesWorkspace(E=np.zeros((n_chunks, 3, 3)), R_rel=np.zeros((n_chunks, 3, 3)),
                              p_rel=np.zeros((n_chunks, 3)))


@jit_kernel
def link_poses_kernel(model, ws, chunk, claim, last, q, R_out, p_out):
    """World (base-frame) poses of the link frames A_i = A_{p(i)} A_0,i E_i(q_i) (§3.1) at
    the samples it claims, work slot ``chunk``: q (n_samples, n); R_out (n_samples,
    n, 3, 3), p_out (n_samples, n, 3) outputs."""
    parent, E, R_rel, p_rel = model.parent, ws.E[chunk], ws.R_rel[chunk], ws.p_rel[chunk]
    done = 0
    first, stop = claim_samples(claim, last)
    while first < stop:
        for sample in range(first, stop):
            for i in range(parent.shape[0]):
                root = parent[i] < 0
                link_pose_in_parent(model.joint_type[i], model.axis[i], model.placement_R[i],
                                    model.placement_p[i], q[sample, i], E,
                                    R_out[sample, i] if root else R_rel,
                                    p_out[sample, i] if root else p_rel)
                if not root:
                    world_pose(R_out[sample, parent[i]], p_out[sample, parent[i]], R_rel, p_rel,
                               R_out[sample, i], p_out[sample, i])
        done += stop - first
        first, stop = claim_samples(claim, last)
    return done


class LinkCMTMWorkspace(NamedTuple):
    """Arrays of :func:`link_cmtm_kernel` for n links and K CMTM orders (Kv = max(K-1, 1)):
    root shared by every chunk, the others with a leading chunk axis."""

    root: np.ndarray        # (Kv, 6) base velocity stack at rest (zeros)
    Xup: np.ndarray         # (n, K, 6, 6) relative CMTMs
    Xinv_L: np.ndarray      # (n, K, 6, 6) link CMTM inverses
    XJinv: np.ndarray       # (K, 6, 6) joint CMTM inverse of one joint
    crosses: np.ndarray     # (K, 6, 6) [nu_m x] of one link
    pose: np.ndarray        # (6, 6) one link pose
    skew_axis: np.ndarray   # (3, 3) [a x] of one joint axis
    sin_q: np.ndarray       # (K,) its sin and cos jets
    cos_q: np.ndarray       # (K,)
    nu: np.ndarray          # (n, Kv, 6) link velocity stacks (zeros if K = 1)


def link_cmtm_workspace(model, n_orders, n_chunks):
    """A :class:`LinkCMTMWorkspace` for a KernelModel, K = n_orders and n_chunks chunks."""
    n, K = model.parent.shape[0], n_orders
    Kv = max(K - 1, 1)
    root = base_velocity_stacks(model, Kv)

    def slots(*shape):
        return np.zeros((n_chunks,) + shape)
    return LinkCMTMWorkspace(
        root=root[0], Xup=slots(n, K, 6, 6), Xinv_L=slots(n, K, 6, 6),
        XJinv=slots(K, 6, 6), crosses=slots(K, 6, 6), pose=slots(6, 6),
        skew_axis=slots(3, 3), sin_q=slots(K), cos_q=slots(K), nu=slots(n, Kv, 6))


@jit_kernel
def link_cmtm_kernel(model, ws, chunk, claim, last, qhat, X_L):
    """Link CMTM blocks X_{L_i,l} = A_{L_i}^(l) / l! of a base at rest (§2.4) at the samples
    it claims, work slot ``chunk``: qhat (n_samples, >=K, n) Taylor-scaled; X_L
    (n_samples, n, K, 6, 6) output."""
    K, Xup, nu = X_L.shape[2], ws.Xup[chunk], ws.nu[chunk]
    done = 0
    first, stop = claim_samples(claim, last)
    while first < stop:
        for sample in range(first, stop):
            relative_cmtm_inverse(model, qhat[sample], ws.XJinv[chunk], ws.sin_q[chunk],
                                  ws.cos_q[chunk], ws.skew_axis[chunk], Xup)
            if K > 1:
                velocity_pass(model.parent, model.screw, Xup, qhat[sample], ws.root, nu)
            link_cmtm_pass(model.parent, Xup, nu, ws.Xinv_L[chunk], X_L[sample], ws.pose[chunk],
                           ws.crosses[chunk])
        done += stop - first
        first, stop = claim_samples(claim, last)
    return done
