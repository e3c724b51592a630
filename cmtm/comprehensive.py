"""Batched comprehensive passes: one call runs the forward and backward sweeps of
cmtm_math.md §4-§5 for every time sample (the loop over samples lives in the kernel).

Inputs and outputs are Taylor-scaled; ``cmtm.api`` converts to raw derivatives.

Two velocity passes share the relative CMTMs (§3.3): a gravity-free pass for the
kinematic outputs (link velocities and momenta, whose derivatives must not contain the
fictitious base motion) and a pass with the base-acceleration trick for forces and torques.
"""
import numpy as np

from cmtm._jit import jit
from cmtm.dynamics import (force_from_momentum, joint_momentum_pass, joint_torque,
                           link_momentum, world_momentum)
from cmtm.kinematics import (link_cmtm_inverse_pass, link_cmtm_pass, relative_cmtm_inverse,
                             root_velocity_stack, velocity_pass)
from cmtm.spatial import joint_motion, joint_screw, matTvec6, matvec6


@jit
def kinematic_outputs(parent, joint_type, axis, I, Xup, qhat, world,
                      v_L, h_L, w_h_L, h_J, w_h_J):
    """Gravity-free link velocities and momenta (local and world), K = v_L.shape[1] orders.

    Outputs are (n, K, 6) work arrays of one sample; world ones are filled when ``world``.
    """
    n, K = v_L.shape[0], v_L.shape[1]
    velocity_pass(parent, joint_type, axis, Xup, qhat, np.zeros((K, 6)), v_L)
    link_momentum(I, v_L, h_L)
    joint_momentum_pass(parent, Xup, h_L, h_J)
    if world:
        Xinv_L = np.empty((n, K, 6, 6))
        link_cmtm_inverse_pass(parent, Xup, Xinv_L)
        world_momentum(Xinv_L, h_L, w_h_L)
        world_momentum(Xinv_L, h_J, w_h_J)


@jit
def dynamic_outputs(parent, joint_type, axis, I, Xup, qhat, root_nu, f_L, f_J, tau):
    """Link and joint wrench stacks and joint torque stacks with gravity (base-acceleration
    trick); f_L, f_J: (n, k+1, 6), tau: (k+1, n) outputs of one sample, K = k+2 velocity orders.
    """
    n, K = f_L.shape[0], f_L.shape[1] + 1
    nu = np.empty((n, K, 6))
    h_L = np.empty((n, K, 6))
    h_J = np.empty((n, K, 6))
    velocity_pass(parent, joint_type, axis, Xup, qhat, root_nu, nu)
    link_momentum(I, nu, h_L)
    joint_momentum_pass(parent, Xup, h_L, h_J)
    force_from_momentum(nu, h_L, f_L)
    force_from_momentum(nu, h_J, f_J)
    joint_torque(joint_type, axis, f_J, tau)


@jit
def motion_kernel(parent, joint_type, axis, placement_R, placement_p, I, gravity, qhat,
                  kinematics, world, dynamics,
                  v_L, h_L, w_h_L, h_J, w_h_J, f_L, f_J, tau):
    """All comprehensive outputs of order k for every sample, Taylor-scaled.

    qhat: (n_samples, >=k+2 or k+3, n). Per-link outputs (n_samples, k+1, n, 6), tau
    (n_samples, k+1, n); outputs whose flag is off are not touched (may be empty arrays).
    """
    n_samples = qhat.shape[0]
    n = parent.shape[0]
    k1 = v_L.shape[1] if kinematics else tau.shape[1]
    K_up = k1 + 1 if dynamics else k1
    root_nu = root_velocity_stack(gravity, k1 + 1)
    Xup = np.empty((n, K_up, 6, 6))
    kin = np.empty((5, n, k1, 6))
    dyn_f = np.empty((2, n, k1, 6))
    dyn_tau = np.empty((k1, n))
    for s in range(n_samples):
        relative_cmtm_inverse(joint_type, axis, placement_R, placement_p, qhat[s], Xup)
        if kinematics:
            kinematic_outputs(parent, joint_type, axis, I, Xup, qhat[s], world,
                              kin[0], kin[1], kin[2], kin[3], kin[4])
            for l in range(k1):
                for i in range(n):
                    v_L[s, l, i] = kin[0, i, l]
                    h_L[s, l, i] = kin[1, i, l]
                    h_J[s, l, i] = kin[3, i, l]
                    if world:
                        w_h_L[s, l, i] = kin[2, i, l]
                        w_h_J[s, l, i] = kin[4, i, l]
        if dynamics:
            dynamic_outputs(parent, joint_type, axis, I, Xup, qhat[s], root_nu,
                            dyn_f[0], dyn_f[1], dyn_tau)
            tau[s] = dyn_tau
            if f_L.shape[0] > 0:
                for l in range(k1):
                    for i in range(n):
                        f_L[s, l, i] = dyn_f[0, i, l]
                        f_J[s, l, i] = dyn_f[1, i, l]


@jit
def link_poses_kernel(parent, joint_type, axis, placement_R, placement_p, q, R_out, p_out):
    """World (base-frame) poses of the link frames: A_i = A_{p(i)} A_0,i E_i(q_i) (§3.1).

    q: (n_samples, n); R_out: (n_samples, n, 3, 3), p_out: (n_samples, n, 3).
    """
    for s in range(q.shape[0]):
        for i in range(parent.shape[0]):
            RJ, pJ = joint_motion(joint_type[i], axis[i], q[s, i])
            R_rel = placement_R[i] @ RJ
            p_rel = placement_p[i] + placement_R[i] @ pJ
            if parent[i] < 0:
                R_out[s, i] = R_rel
                p_out[s, i] = p_rel
            else:
                Rp = R_out[s, parent[i]]
                R_out[s, i] = Rp @ R_rel
                p_out[s, i] = p_out[s, parent[i]] + Rp @ p_rel


@jit
def mass_matrix_kernel(parent, joint_type, axis, placement_R, placement_p, I, q, M):
    """Joint-space mass matrix by the composite-rigid-body algorithm.

    I^C_i = I_i + sum_c Xup_c^T I^C_c Xup_c (children first); then
    M_ij = S_j^T (^jX_i)^* I^C_i S_i along the path from i to the root.
    q: (n_samples, n); M: (n_samples, n, n) output.
    """
    n = parent.shape[0]
    Xup = np.empty((n, 1, 6, 6))
    Ic = np.empty((n, 6, 6))
    qhat = np.zeros((1, n))
    for s in range(q.shape[0]):
        qhat[0] = q[s]
        relative_cmtm_inverse(joint_type, axis, placement_R, placement_p, qhat, Xup)
        Ic[:] = I
        for c in range(n - 1, -1, -1):
            if parent[c] >= 0:
                Ic[parent[c]] += Xup[c, 0].T @ Ic[c] @ Xup[c, 0]
        M[s] = 0.0
        for i in range(n):
            F = np.zeros(6)
            matvec6(Ic[i], joint_screw(joint_type[i], axis[i]), F)
            M[s, i, i] = joint_screw(joint_type[i], axis[i]) @ F
            j = i
            while parent[j] >= 0:
                Fp = np.zeros(6)
                matTvec6(Xup[j, 0], F, Fp)
                F = Fp
                j = parent[j]
                M[s, i, j] = joint_screw(joint_type[j], axis[j]) @ F
                M[s, j, i] = M[s, i, j]


@jit
def link_cmtm_kernel(parent, joint_type, axis, placement_R, placement_p, qhat, X_L):
    """Link CMTM blocks X_{L_i,l} = A_{L_i}^(l) / l! of a base at rest for every sample (§2.4).

    qhat: (n_samples, >=K, n) Taylor-scaled; X_L: (n_samples, n, K, 6, 6) output.
    """
    n, K = X_L.shape[1], X_L.shape[2]
    Xup = np.empty((n, K, 6, 6))
    nu = np.empty((n, max(K - 1, 1), 6))
    Xinv_L = np.empty((n, K, 6, 6))
    for s in range(qhat.shape[0]):
        relative_cmtm_inverse(joint_type, axis, placement_R, placement_p, qhat[s], Xup)
        if K > 1:
            velocity_pass(parent, joint_type, axis, Xup, qhat[s], np.zeros((K - 1, 6)), nu)
        link_cmtm_pass(parent, Xup, nu, Xinv_L, X_L[s])
