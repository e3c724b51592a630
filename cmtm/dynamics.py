"""Comprehensive dynamics: momenta, forces and joint torques (cmtm_math.md §5).

Every stack is Taylor-scaled. With ``K`` velocity orders the momenta have ``K`` orders and
the forces and torques ``K-1`` (a force is a time derivative of a momentum).

======================  ================  ==============  ================================
paper                   code              shape           meaning
======================  ================  ==============  ================================
I_i                     ``I``             (n, 6, 6)       spatial inertia about link origin
h_{L_i} = I_i v_i       ``h_L``           (n, K, 6)       link momentum, link frame
h_{J_i}                 ``h_J``           (n, K, 6)       subtree momentum, link i frame
~h = X^* h              ``w_h_L/w_h_J``   (n, K, 6)       the same in the world frame
f = U([v x^*]) h        ``f_L/f_J``       (n, K-1, 6)     link / joint wrench, link frame
t_i = S_i^T f_{J_i}     ``tau``           (K-1, n)        joint torque (force) stack
======================  ================  ==============  ================================
"""
from cmtm._jit import jit
from cmtm.kinematics import velocity_pass
from cmtm.spatial import matvec6
from cmtm.taylor import (conv_blockT_vec, copy_stack, derivative_stack, force_cross_conv,
                         zero_stack)


@jit
def link_momentum(I, nu, h_L):
    """h_L = diag(I..I) v_L (Lemma 3 / §5): h_L[i, l] = I_i nu[i, l]."""
    for i in range(h_L.shape[0]):
        zero_stack(h_L[i])
        for l in range(h_L.shape[1]):
            matvec6(I[i], nu[i, l], h_L[i, l])


@jit
def joint_momentum_pass(parent, Xup, h_L, h_J):
    """h_J_i = h_L_i + sum_{c in children(i)} ^iX^*_c h_J_c (§5), children first.

    ^iX^*_c is the blockwise transpose of (^iX_c)^{-1} = Xup[c] (§2.3).
    """
    n = h_L.shape[0]
    for i in range(n):
        copy_stack(h_L[i], h_J[i])
    for c in range(n - 1, -1, -1):
        if parent[c] >= 0:
            conv_blockT_vec(Xup[c], h_J[c], h_J[parent[c]])


@jit
def momentum_stacks(parent, S, I, Xup, qhat, root_nu, nu, h_L, h_J):
    """One pass of §4-§5 up to momenta: link velocities (base stack ``root_nu``), link
    momenta and subtree (joint) momenta, all (n, K, 6) with K = nu.shape[1]."""
    velocity_pass(parent, S, Xup, qhat, root_nu, nu)
    link_momentum(I, nu, h_L)
    joint_momentum_pass(parent, Xup, h_L, h_J)


@jit
def force_from_momentum(nu, h, f):
    """f = U([v x^*]_T) h (§5): f_l = (l+1) h_{l+1} + sum_{m<=l} [nu_m x^*] h_{l-m}.

    nu, h: (n, K, 6); f: (n, K-1, 6) output.
    """
    for i in range(f.shape[0]):
        derivative_stack(h[i], f[i])
        force_cross_conv(nu[i], h[i], f[i], 1.0)


@jit
def joint_torque(S, f_J, tau):
    """t_i = S_i^T f_J_i per order (Lemma 6 / §5); S: (n, 6); tau: (K-1, n) output."""
    for i in range(f_J.shape[0]):
        for l in range(f_J.shape[1]):
            acc = 0.0
            for c in range(6):
                acc += S[i, c] * f_J[i, l, c]
            tau[l, i] = acc


@jit
def world_momentum(Xinv_L, h, w_h):
    """~h = X^*_L h with X^* the blockwise transpose of X_L^{-1} (§2.3, §5)."""
    for i in range(h.shape[0]):
        zero_stack(w_h[i])
        conv_blockT_vec(Xinv_L[i], h[i], w_h[i])
