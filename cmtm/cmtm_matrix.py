"""Comprehensive motion transformation matrices (cmtm_math.md §2, §6.3).

All block lists are Taylor-scaled: ``X[l] = A^(l)(t0) / l!``, shape ``(K+1, 6, 6)``, and
velocity stacks ``nu[m] = nu^(m)(t0) / m!``, shape ``(>=K, 6)``.

==============================  ========================  ==============
paper                           code                      shape
==============================  ========================  ==============
X_(k) = T(X_0..X_k)             ``cmtm_blocks``           (K+1, 6, 6)
X_(k)^{-1}                      ``cmtm_inverse_blocks``   (K+1, 6, 6)
X^*_(k) (force CMTM)            ``dual_blocks``           (K+1, 6, 6)
v_(k) from X^{-1} d_t X         ``comprehensive_velocity`` (K, 6)
W_(k) (tangent matrix)          ``tangent_matrix``        dense 6(k+1)
==============================  ========================  ==============
"""
import numpy as np

from cmtm._jit import jit
from cmtm.spatial import motion_block_mul_add, motion_cross, motion_cross_into


@jit
def velocity_crosses(nu, K):
    """[nu_m x] for m < K as a (K, 6, 6) block list."""
    crosses = np.empty((K, 6, 6))
    for m in range(K):
        motion_cross_into(nu[m], crosses[m])
    return crosses


@jit
def cmtm_blocks(A, nu, out):
    """CMTM blocks by the recursion of §2.1: X_0 = A, X_{l+1} = 1/(l+1) sum_m X_{l-m} [nu_m x].

    A: (6, 6) motion transform; nu: (>=K, 6) Taylor-scaled body velocity; out: (K+1, 6, 6).
    """
    cmtm_blocks_from_crosses(A, velocity_crosses(nu, out.shape[0] - 1), out)


@jit
def cmtm_blocks_from_crosses(A, crosses, out):
    """``cmtm_blocks`` with the [nu_m x] given as a (>=K, 6, 6) block list."""
    out[0] = A
    for l in range(out.shape[0] - 1):
        out[l + 1] = 0.0
        for m in range(l + 1):
            motion_block_mul_add(out[l - m], crosses[m], 1.0 / (l + 1), out[l + 1])


@jit
def cmtm_inverse_blocks(Ainv, nu, out):
    """Inverse CMTM blocks (§2.2): X-_0 = A^{-1}, X-_{l+1} = -1/(l+1) sum_m [nu_m x] X-_{l-m}."""
    cmtm_inverse_blocks_from_crosses(Ainv, velocity_crosses(nu, out.shape[0] - 1), out)


@jit
def cmtm_inverse_blocks_from_crosses(Ainv, crosses, out):
    """``cmtm_inverse_blocks`` with the [nu_m x] given as a (>=K, 6, 6) block list."""
    out[0] = Ainv
    for l in range(out.shape[0] - 1):
        out[l + 1] = 0.0
        for m in range(l + 1):
            motion_block_mul_add(crosses[m], out[l - m], -1.0 / (l + 1), out[l + 1])


@jit
def dual_blocks(inverse_blocks):
    """Dual (force) CMTM X^* = T((X-_0)^T, ..., (X-_k)^T): blockwise transpose of X^{-1} (§2.3)."""
    out = np.empty_like(inverse_blocks)
    for l in range(inverse_blocks.shape[0]):
        out[l] = inverse_blocks[l].T
    return out


@jit
def comprehensive_velocity(X):
    """Recover nu_0..nu_{K-1} from CMTM blocks (§2.1):
    [nu_l x] = X_0^{-1} ((l+1) X_{l+1} - sum_{m<l} X_{l-m} [nu_m x]).
    """
    K = X.shape[0] - 1
    X0inv = np.linalg.inv(X[0])
    nu = np.zeros((K, 6))
    for l in range(K):
        acc = (l + 1) * X[l + 1]
        for m in range(l):
            acc = acc - X[l - m] @ motion_cross(nu[m])
        cross = X0inv @ acc
        nu[l, 0] = cross[2, 1]
        nu[l, 1] = cross[0, 2]
        nu[l, 2] = cross[1, 0]
        nu[l, 3] = cross[5, 1]
        nu[l, 4] = cross[3, 2]
        nu[l, 5] = cross[4, 0]
    return nu


def tangent_matrix(nu, order):
    """Square tangent matrix W_(k) of §6.3 (dense, Taylor-scaled), mapping the tangent stack
    dx_(k) to du_(k) = [da_0; dnu_0; ...; dnu_{k-1}].

    Blocks: W_00 = E, W_ll = l E (l >= 1), W_lm = [nu_{l-1-m} x] for m < l, zero above.
    nu: (>=order, 6) Taylor-scaled body velocity.
    """
    W = np.zeros((6 * (order + 1), 6 * (order + 1)))
    W[:6, :6] = np.eye(6)
    for l in range(1, order + 1):
        W[6 * l:6 * l + 6, 6 * l:6 * l + 6] = l * np.eye(6)
        for m in range(l):
            W[6 * l:6 * l + 6, 6 * m:6 * m + 6] = motion_cross(np.ascontiguousarray(nu[l - 1 - m]))
    return W
