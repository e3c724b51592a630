"""Comprehensive motion transformation matrices (cmtm_math.md §2, §6.3).

All block lists are Taylor-scaled: ``X[l] = A^(l)(t0) / l!``, shape ``(K+1, 6, 6)``, and
velocity stacks ``nu[m] = nu^(m)(t0) / m!``, shape ``(>=K, 6)``.

==============================  ====================================  ==============
paper                           code                                  shape
==============================  ====================================  ==============
[nu_m x], m < K                 ``velocity_crosses(_into)``           (K, 6, 6)
X_(k) = T(X_0..X_k)             ``cmtm_blocks(_into)``,               (K+1, 6, 6)
                                ``cmtm_blocks_from_crosses``
X_(k)^{-1}                      ``cmtm_inverse_blocks_from_crosses``  (K+1, 6, 6)
==============================  ====================================  ==============

The references built on these (the inverse from nu, the velocity recovered from X, the
dense tangent matrix W_(k) of §6.3) are in cmtm.reference.
"""
import numpy as np

from cmtm._jit import jit, jit_allocating
from cmtm.spatial import motion_block_mul_add, motion_cross_into
from cmtm.taylor import copy_stack, zero_stack


@jit_allocating
def velocity_crosses(nu, K):
    """[nu_m x] for m < K as a new (K, 6, 6) block list."""
    crosses = np.empty((K, 6, 6))
    velocity_crosses_into(nu, K, crosses)
    return crosses


@jit
def velocity_crosses_into(nu, K, crosses):
    """crosses[m] = [nu_m x] for m < K; crosses: (>=K, 6, 6) work array."""
    for m in range(K):
        motion_cross_into(nu[m], crosses[m])


@jit_allocating
def cmtm_blocks(A, nu, out):
    """CMTM blocks by the recursion of §2.1: X_0 = A, X_{l+1} = 1/(l+1) sum_m X_{l-m} [nu_m x].

    A: (6, 6) motion transform; nu: (>=K, 6) Taylor-scaled body velocity; out: (K+1, 6, 6).
    Allocates its [nu_m x]; kernels call ``cmtm_blocks_into`` with a work array.
    """
    cmtm_blocks_from_crosses(A, velocity_crosses(nu, out.shape[0] - 1), out)


@jit
def cmtm_blocks_into(A, nu, crosses, out):
    """``cmtm_blocks`` with crosses: (>=K, 6, 6) a work array for the [nu_m x]."""
    velocity_crosses_into(nu, out.shape[0] - 1, crosses)
    cmtm_blocks_from_crosses(A, crosses, out)


@jit
def cmtm_blocks_from_crosses(A, crosses, out):
    """``cmtm_blocks`` with the [nu_m x] given as a (>=K, 6, 6) block list."""
    copy_stack(A, out[0])
    for l in range(out.shape[0] - 1):
        zero_stack(out[l + 1])
        for m in range(l + 1):
            motion_block_mul_add(out[l - m], crosses[m], 1.0 / (l + 1), out[l + 1])


@jit
def cmtm_inverse_blocks_from_crosses(Ainv, crosses, out):
    """Inverse CMTM blocks (§2.2): X-_0 = A^{-1}, X-_{l+1} = -1/(l+1) sum_m [nu_m x] X-_{l-m},
    with the [nu_m x] given as a (>=K, 6, 6) block list; out: (K+1, 6, 6)."""
    copy_stack(Ainv, out[0])
    for l in range(out.shape[0] - 1):
        zero_stack(out[l + 1])
        for m in range(l + 1):
            motion_block_mul_add(crosses[m], out[l - m], -1.0 / (l + 1), out[l + 1])
