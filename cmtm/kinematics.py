"""Comprehensive forward kinematics: the forward pass of cmtm_math.md §4.

Every stack here is Taylor-scaled (``a_hat[l] = a^(l) / l!``).

=====================  ================  ===================  ==========================
paper                  code              shape                meaning
=====================  ================  ===================  ==========================
q_hat                  ``qhat``          (K+1, n)             joint coordinates
S_i                    ``joint_screw``   (6,)                 joint screw, joint frame
nu_J                   ``nuJ``           (K, 6)               joint velocity stack
(^p X_i)^{-1}          ``Xup``           (n, K, 6, 6)         relative CMTM, parent -> child
X_{L_i}^{-1}           ``Xinv_L``        (n, K, 6, 6)         link CMTM inverse, world -> link
v_{L_i}                ``nu``            (n, K, 6)            link body-velocity stack
=====================  ================  ===================  ==========================

``Xup`` maps twist stacks written in the parent link frame to the child link frame; its
blockwise transpose maps wrench stacks from the child to the parent (§2.3).
"""
import numpy as np

from cmtm._jit import jit
from cmtm.cmtm_matrix import cmtm_blocks, cmtm_inverse_blocks
from cmtm.spatial import joint_motion, joint_screw, motion_transform, motion_transform_inverse
from cmtm.taylor import conv_block_vec, conv_blocks


@jit
def joint_velocity_stack(joint_type, axis, qhat_i, n_orders):
    """nu_J,m = (m+1) q_hat_{m+1} S for m < n_orders (§3.1): shape (n_orders, 6)."""
    S = joint_screw(joint_type, axis)
    nuJ = np.zeros((n_orders, 6))
    for m in range(n_orders):
        nuJ[m] = (m + 1) * qhat_i[m + 1] * S
    return nuJ


@jit
def relative_cmtm_inverse(joint_type, axis, placement_R, placement_p, qhat, Xup):
    """Blocks of (^p X_i)^{-1} = X_J^{-1} A_0^{-1} for every link (§3.1, §2.2).

    qhat: (>=K, n) Taylor-scaled joint stack; Xup: (n, K, 6, 6) output. The joint CMTM
    inverse needs nu_J up to order K-2, hence q_hat up to order K-1.
    """
    n, K = Xup.shape[0], Xup.shape[1]
    XJinv = np.empty((K, 6, 6))
    for i in range(n):
        nuJ = joint_velocity_stack(joint_type[i], axis[i], qhat[:, i], K - 1)
        R, p = joint_motion(joint_type[i], axis[i], qhat[0, i])
        cmtm_inverse_blocks(motion_transform_inverse(R, p), nuJ, XJinv)
        A0inv = motion_transform_inverse(placement_R[i], placement_p[i])
        for l in range(K):
            Xup[i, l] = XJinv[l] @ A0inv


@jit
def velocity_pass(parent, joint_type, axis, Xup, qhat, root_nu, nu):
    """Link body-velocity stacks (§2.5): v_i = (^p X_i)^{-1} v_p + nu_J,i, parents first.

    root_nu: (K, 6) velocity stack of the base (zero, or the gravity trick of §3.3);
    nu: (n, K, 6) output, K orders; qhat needs orders up to K.
    """
    n, K = nu.shape[0], nu.shape[1]
    for i in range(n):
        nu[i] = joint_velocity_stack(joint_type[i], axis[i], qhat[:, i], K)
        if parent[i] < 0:
            conv_block_vec(Xup[i], root_nu, nu[i])
        else:
            conv_block_vec(Xup[i], nu[parent[i]], nu[i])


@jit
def link_cmtm_inverse_pass(parent, Xup, Xinv_L):
    """X_{L_i}^{-1} = (^p X_i)^{-1} X_{L_p}^{-1} (§2.4) for a base at rest, parents first.

    Xinv_L: (n, K, 6, 6) output; its block 0 is the inverse world pose of each link.
    """
    n, K = Xinv_L.shape[0], Xinv_L.shape[1]
    for i in range(n):
        if parent[i] < 0:
            Xinv_L[i] = Xup[i, :K]
        else:
            conv_blocks(Xup[i], Xinv_L[parent[i]], Xinv_L[i])


@jit
def link_cmtm_pass(parent, Xup, nu, Xinv_L, X_L):
    """Link CMTMs of a base at rest: X_L^{-1} by composition (§2.4), X_L by the §2.1
    recursion on the link pose A_L = ((X_L^{-1})_0)^{-1} and the body-velocity stack nu.

    nu: (n, >=K-1, 6); Xinv_L, X_L: (n, K, 6, 6) outputs.
    """
    link_cmtm_inverse_pass(parent, Xup, Xinv_L)
    for i in range(parent.shape[0]):
        R = Xinv_L[i, 0, :3, :3].T.copy()
        p_cross = -(R @ np.ascontiguousarray(Xinv_L[i, 0, 3:, :3]))
        p = np.array([p_cross[2, 1], p_cross[0, 2], p_cross[1, 0]])
        cmtm_blocks(motion_transform(R, p), nu[i], X_L[i])


@jit
def root_velocity_stack(gravity, n_orders):
    """Base velocity stack (n_orders, 6) for the base-acceleration trick of §3.3:
    nu_hat_root,1 = [0; -g], all other orders zero; forces then include gravity exactly."""
    root = np.zeros((n_orders, 6))
    if n_orders > 1:
        root[1, 3:] = -gravity
    return root
