"""Batched comprehensive passes: one call runs the forward and backward sweeps of
cmtm_math.md §4-§5 for every time sample (the loop over samples lives in the kernel).

Inputs and outputs are Taylor-scaled; ``cmtm.api`` converts to raw derivatives.

Two velocity passes share the relative CMTMs (§3.3): a gravity-free pass for the
kinematic outputs (link velocities and momenta, whose derivatives must not contain the
fictitious base motion) and a pass with the base-acceleration trick for forces and torques.
"""
import numpy as np

from cmtm._jit import jit
from cmtm.dynamics import force_from_momentum, joint_torque, momentum_stacks, world_momentum
from cmtm.kinematics import (joint_geometry, link_cmtm_inverse_pass, link_cmtm_pass,
                             relative_cmtm_inverse, root_velocity_stack, velocity_pass)
from cmtm.rnea import link_pose_in_parent


@jit
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


@jit
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
            out[l, i] = work[i, l]


@jit
def motion_kernel(parent, joint_type, axis, placement_R, placement_p, I, gravity, qhat,
                  kinematics, world, dynamics,
                  v_L, h_L, w_h_L, h_J, w_h_J, f_L, f_J, tau):
    """All comprehensive outputs of order k for every sample, Taylor-scaled.

    qhat: (n_samples, >=k+2 or k+3, n). Per-link outputs (n_samples, k+1, n, 6), tau
    (n_samples, k+1, n); outputs whose flag is off are not touched (may be empty arrays).
    """
    n = parent.shape[0]
    k1 = tau.shape[1]
    S, A0inv = joint_geometry(joint_type, axis, placement_R, placement_p)
    Xup = np.empty((n, k1 + 1 if dynamics else k1, 6, 6))
    kin = np.empty((5, n, k1, 6))
    Xinv_L = np.empty((n, k1, 6, 6))
    root_nu = root_velocity_stack(gravity, k1 + 1)
    zero_root = np.zeros((k1, 6))
    links = f_L.shape[0] > 0
    dyn = np.empty((3, n, k1 + 1, 6))
    dyn_f = np.empty((2, n, k1, 6))
    dyn_tau = np.empty((k1, n))
    for s in range(qhat.shape[0]):
        relative_cmtm_inverse(joint_type, axis, A0inv, qhat[s], Xup)
        if kinematics:
            kinematic_outputs(parent, S, I, Xup, qhat[s], zero_root, world,
                              kin[0], kin[1], kin[2], kin[3], kin[4], Xinv_L)
            copy_link_stack(kin[0], v_L[s])
            copy_link_stack(kin[1], h_L[s])
            copy_link_stack(kin[3], h_J[s])
            if world:
                copy_link_stack(kin[2], w_h_L[s])
                copy_link_stack(kin[4], w_h_J[s])
        if dynamics:
            dynamic_outputs(parent, S, I, Xup, qhat[s], root_nu, links, dyn[0], dyn[1], dyn[2],
                            dyn_f[0], dyn_f[1], dyn_tau)
            tau[s] = dyn_tau
            if links:
                copy_link_stack(dyn_f[0], f_L[s])
                copy_link_stack(dyn_f[1], f_J[s])


@jit
def link_poses_kernel(parent, joint_type, axis, placement_R, placement_p, q, R_out, p_out):
    """World (base-frame) poses of the link frames: A_i = A_{p(i)} A_0,i E_i(q_i) (§3.1).

    q: (n_samples, n); R_out: (n_samples, n, 3, 3), p_out: (n_samples, n, 3).
    """
    E = np.empty((3, 3))
    R_rel = np.empty((3, 3))
    p_rel = np.empty(3)
    for s in range(q.shape[0]):
        for i in range(parent.shape[0]):
            link_pose_in_parent(joint_type[i], axis[i], placement_R[i], placement_p[i],
                                q[s, i], E, R_rel, p_rel)
            if parent[i] < 0:
                R_out[s, i] = R_rel
                p_out[s, i] = p_rel
                continue
            Rp = R_out[s, parent[i]]
            for r in range(3):
                p_out[s, i, r] = p_out[s, parent[i], r] + Rp[r, 0] * p_rel[0] + \
                    Rp[r, 1] * p_rel[1] + Rp[r, 2] * p_rel[2]
                for c in range(3):
                    R_out[s, i, r, c] = Rp[r, 0] * R_rel[0, c] + Rp[r, 1] * R_rel[1, c] + \
                        Rp[r, 2] * R_rel[2, c]


@jit
def link_cmtm_kernel(parent, joint_type, axis, placement_R, placement_p, qhat, X_L):
    """Link CMTM blocks X_{L_i,l} = A_{L_i}^(l) / l! of a base at rest for every sample (§2.4).

    qhat: (n_samples, >=K, n) Taylor-scaled; X_L: (n_samples, n, K, 6, 6) output.
    """
    n, K = X_L.shape[1], X_L.shape[2]
    S, A0inv = joint_geometry(joint_type, axis, placement_R, placement_p)
    Xup = np.empty((n, K, 6, 6))
    nu = np.zeros((n, max(K - 1, 1), 6))
    Xinv_L = np.empty((n, K, 6, 6))
    for s in range(qhat.shape[0]):
        relative_cmtm_inverse(joint_type, axis, A0inv, qhat[s], Xup)
        if K > 1:
            velocity_pass(parent, S, Xup, qhat[s], np.zeros((K - 1, 6)), nu)
        link_cmtm_pass(parent, Xup, nu, Xinv_L, X_L[s])
