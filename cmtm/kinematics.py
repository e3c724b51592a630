"""Comprehensive forward kinematics: the forward pass of cmtm_math.md §4.

Every stack here is Taylor-scaled (``a_hat[l] = a^(l) / l!``).

=====================  ================  ===================  ==========================
paper                  code              shape                meaning
=====================  ================  ===================  ==========================
q_hat                  ``qhat``          (K+1, n)             joint coordinates
S_i                    ``S``             (n, 6)               joint screws, joint frame
A_{0,i}^{-1}           ``A0inv``         (n, 6, 6)            inverse joint placements
X_{J_i}^{-1}           ``XJinv``         (K, 6, 6)            joint CMTM inverse
(^p X_i)^{-1}          ``Xup``           (n, K, 6, 6)         relative CMTM, parent -> child
X_{L_i}^{-1}, X_{L_i}  ``Xinv_L, X_L``   (n, K, 6, 6)         link CMTM (inverse), world
v_{L_i}                ``nu``            (n, K, 6)            link body-velocity stack
=====================  ================  ===================  ==========================

``Xup`` maps twist stacks written in the parent link frame to the child link frame; its
blockwise transpose maps wrench stacks from the child to the parent (§2.3).
"""
import math

import numpy as np

from cmtm._jit import jit, jit_kernel
from cmtm.cmtm_matrix import cmtm_blocks_into
from cmtm.spatial import (JOINT_REVOLUTE, joint_screw_into, motion_block_mul,
                          motion_transform_inverse_into, placement_inverse_into, skew_into)
from cmtm.taylor import conv_block_vec, conv_motion_blocks, copy_blocks, zero_blocks


@jit_kernel
def joint_geometry(model, S, A0inv):
    """Constant per-joint data of a KernelModel (its ``screw`` and ``placement_inverse``):
    screws S (n, 6) and inverse placements A_0^{-1} (n, 6, 6), outputs. A kernel, so that
    the helpers it shares with the other kernels are never called (nor compiled) from
    Python: ``cmtm._jit`` does not cache helpers."""
    for i in range(model.parent.shape[0]):
        joint_screw_into(model.joint_type[i], model.axis[i], 1.0, S[i])
        placement_inverse_into(model.placement_R[i], model.placement_p[i], A0inv[i])


@jit
def sin_cos_jets(qhat_i, sin_q, cos_q):
    """Taylor coefficients of sin q(t) and cos q(t) from s' = c q', c' = -s q':
    (l+1) s_{l+1} = sum_m (m+1) q_{m+1} c_{l-m}, (l+1) c_{l+1} = -sum_m (m+1) q_{m+1} s_{l-m}."""
    sin_q[0] = math.sin(qhat_i[0])
    cos_q[0] = math.cos(qhat_i[0])
    for l in range(sin_q.shape[0] - 1):
        s = 0.0
        c = 0.0
        for m in range(l + 1):
            rate = (m + 1) * qhat_i[m + 1]
            s += rate * cos_q[l - m]
            c -= rate * sin_q[l - m]
        sin_q[l + 1] = s / (l + 1)
        cos_q[l + 1] = c / (l + 1)


@jit
def joint_cmtm_inverse(joint_type, axis, qhat_i, XJinv, sin_q, cos_q, a):
    """Blocks of X_J^{-1}, the Taylor coefficients of E(q(t))^{-1} = E(-q(t)) (§3.1), in
    closed form (E commutes with [S x], so the §2.2 recursion sums to this):

    revolute:  blkdiag(R_l, R_l), R(-q) = E - sin q [a x] + (1 - cos q) [a x]^2;
    prismatic: [[d_l E, 0], [-q_l [a x], d_l E]]  (d_l = 1 for l = 0, else 0).

    XJinv: (K, 6, 6) output; sin_q, cos_q: (>=K,) and a: (3, 3) work arrays.
    """
    K = XJinv.shape[0]
    zero_blocks(XJinv)
    skew_into(axis, a)
    if joint_type == JOINT_REVOLUTE:
        sin_cos_jets(qhat_i, sin_q[:K], cos_q[:K])
        for l in range(K):
            one = 1.0 if l == 0 else 0.0
            for r in range(3):
                for c in range(3):
                    a2 = axis[r] * axis[c] - (1.0 if r == c else 0.0)  # [a x]^2, |a| = 1
                    value = -sin_q[l] * a[r, c] + (one - cos_q[l]) * a2
                    XJinv[l, r, c] = value
                    XJinv[l, r + 3, c + 3] = value
        for r in range(6):
            XJinv[0, r, r] += 1.0
    else:
        for l in range(K):
            for r in range(3):
                for c in range(3):
                    XJinv[l, r + 3, c] = -qhat_i[l] * a[r, c]
        for r in range(6):
            XJinv[0, r, r] = 1.0


@jit
def relative_cmtm_inverse(model, qhat, XJinv, sin_q, cos_q, a, Xup):
    """Blocks of (^p X_i)^{-1} = X_J^{-1} A_0^{-1} for every link (§3.1, §2.2).

    model: KernelModel (A_0^{-1}: ``model.placement_inverse``); qhat: (>=K, n)
    Taylor-scaled joint stack; Xup: (n, K, 6, 6) output; XJinv (>=K, 6, 6), sin_q, cos_q
    (>=K,) and a (3, 3): work arrays of ``joint_cmtm_inverse``.
    """
    n, K = Xup.shape[0], Xup.shape[1]
    for i in range(n):
        joint_cmtm_inverse(model.joint_type[i], model.axis[i], qhat[:, i], XJinv[:K], sin_q,
                           cos_q, a)
        for l in range(K):
            motion_block_mul(XJinv[l], model.placement_inverse[i], Xup[i, l])


@jit
def velocity_pass(parent, S, Xup, qhat, root_nu, nu):
    """Link body-velocity stacks (§2.5): v_i = (^p X_i)^{-1} v_p + nu_J,i, parents first,
    with nu_J,m = (m+1) q_hat_{m+1} S (§3.1).

    root_nu: (K, 6) velocity stack of the base (zero, or the gravity trick of §3.3);
    nu: (n, K, 6) output, K orders; qhat needs orders up to K.
    """
    n, K = nu.shape[0], nu.shape[1]
    for i in range(n):
        for m in range(K):
            rate = (m + 1) * qhat[m + 1, i]
            for c in range(6):
                nu[i, m, c] = rate * S[i, c]
        if parent[i] < 0:
            conv_block_vec(Xup[i], root_nu, nu[i], 1.0)
        else:
            conv_block_vec(Xup[i], nu[parent[i]], nu[i], 1.0)


@jit
def link_cmtm_inverse_pass(parent, Xup, Xinv_L):
    """X_{L_i}^{-1} = (^p X_i)^{-1} X_{L_p}^{-1} (§2.4) for a base at rest, parents first.

    Xinv_L: (n, K, 6, 6) output; its block 0 is the inverse world pose of each link.
    """
    for i in range(Xinv_L.shape[0]):
        if parent[i] < 0:
            copy_blocks(Xup[i], Xinv_L[i])
        else:
            conv_motion_blocks(Xup[i], Xinv_L[parent[i]], Xinv_L[i])


@jit
def link_cmtm_pass(parent, Xup, nu, Xinv_L, X_L, pose, crosses):
    """Link CMTMs of a base at rest: X_L^{-1} by composition (§2.4), X_L by the §2.1
    recursion on the link pose A_L = ((X_L^{-1})_0)^{-1} and the body-velocity stack nu.

    nu: (n, >=K-1, 6); Xinv_L, X_L: (n, K, 6, 6) outputs; pose (6, 6) and crosses
    (>=K-1, 6, 6): work arrays.
    """
    link_cmtm_inverse_pass(parent, Xup, Xinv_L)
    for i in range(parent.shape[0]):
        motion_transform_inverse_into(Xinv_L[i, 0], pose)
        cmtm_blocks_into(pose, nu[i], crosses, X_L[i])


def root_velocity_stack(gravity, n_orders):
    """Base velocity stack (n_orders, 6) for the base-acceleration trick of §3.3:
    nu_hat_root,1 = [0; -g], all other orders zero; forces then include gravity exactly."""
    root = np.zeros((n_orders, 6))
    if n_orders > 1:
        root[1, 3:] = -np.asarray(gravity)
    return root


def base_velocity_stacks(model, n_orders):
    """(2, n_orders, 6) base velocity stacks of a KernelModel shared by the chunks of a
    batched kernel: at rest (zeros) and with the gravity trick (§3.3)."""
    root = np.zeros((2, n_orders, 6))
    root[1] = root_velocity_stack(model.gravity, n_orders)
    return root
