"""Truncated Taylor (jet) arithmetic on derivative stacks (cmtm_math.md §1.2-§1.3).

A *comprehensive vector* of order k is stored as an array ``(k+1, d)`` of Taylor
coefficients ``a_hat[l] = a^(l)(t0) / l!`` ("Taylor-scaled"); a *comprehensive matrix*
T(M_0..M_k) (lower block-Toeplitz) is stored as its block list ``(k+1, r, c)``. Every
Toeplitz product is then a block convolution (J1), and the time derivative is the shift
``(l+1) a_hat[l+1]`` (J2). Dense Toeplitz matrices are only built by
``cmtm.reference.toeplitz``, for tests and for users who want the paper's flattened form.

The public API speaks raw derivatives ``a^(l)``; ``taylor_from_raw`` and
``raw_from_taylor`` are the one place where the two scalings meet.
"""
import math

import numpy as np

from cmtm._jit import jit, jit_leaf
from cmtm.spatial import (force_cross_add, matTvec6, matvec6, motion_block_mul_add,
                          motion_cross_add)


FACTORIAL_TABLE = np.array([math.factorial(r) for r in range(171)], dtype=np.float64)
"""0!, 1!, ..., 170! as float64 (171! overflows it), read-only: what :func:`factorials`
returns views of."""
FACTORIAL_TABLE.flags.writeable = False


def factorials(n):
    """(0!, 1!, ..., (n-1)!) as float64, shape (n,), n <= 171: a read-only view of
    FACTORIAL_TABLE. Made at every call before, it took 19 us of a 125 us one-instant
    ``cmtm.motion`` (nine calls; measured by leaving it out, alternating)."""
    if n > FACTORIAL_TABLE.shape[0]:
        raise ValueError(f"n: expected at most {FACTORIAL_TABLE.shape[0]} factorials (171! "
                         f"overflows float64), got {n}")
    return FACTORIAL_TABLE[:n]


def taylor_from_raw(raw, axis=-2):
    """Divide the derivative-order axis of a raw stack by l! (a^(l) -> a_hat_l): a new
    array (:func:`_orders_scaled`)."""
    return _orders_scaled(raw, axis, np.divide)


def raw_from_taylor(taylor, axis=-2):
    """Multiply the derivative-order axis of a Taylor stack by l! (a_hat_l -> a^(l)): a new
    array (:func:`_orders_scaled`)."""
    return _orders_scaled(taylor, axis, np.multiply)


def _orders_scaled(stack, axis, scale):
    """scale(stack, l! broadcast along ``axis``) as a new float64 array; for at most two
    orders (0! = 1! = 1, and x * 1 = x / 1 = x exactly) a copy of ``stack`` in its memory
    layout, the same bits: broadcasting the factorials took 9.8 us of a (200, 2, 7, 6)
    stack (the Panda's order-1 link velocities of 200 samples), the copy 3.0 us. Scaling
    only the orders l >= 2 of a copy was slower for three or more orders (a (200, 4, 3)
    stack: 8.1 against 3.9 us)."""
    stack = np.asarray(stack, dtype=np.float64)
    if stack.shape[axis] <= 2:
        return np.array(stack, order="K")
    shape = [1] * stack.ndim
    shape[axis] = stack.shape[axis]
    return scale(stack, factorials(stack.shape[axis]).reshape(shape))


# --- Filling and copying stacks (loops: in a kernel's inner loops a slice assignment on a
# small array costs far more than its arithmetic) ---

@jit
def zero_stack(x):
    """x[:] = 0 for a 2-D array (a stack (K, d))."""
    for l in range(x.shape[0]):
        for c in range(x.shape[1]):
            x[l, c] = 0.0


@jit
def copy_stack(x, out):
    """out[:] = x[:len(out)] for 2-D arrays (x may have more rows)."""
    for l in range(out.shape[0]):
        for c in range(out.shape[1]):
            out[l, c] = x[l, c]


@jit
def add_stack(x, out):
    """out[:] += x[:len(out)] for 2-D arrays (x may have more rows)."""
    for l in range(out.shape[0]):
        for c in range(out.shape[1]):
            out[l, c] += x[l, c]


@jit
def zero_blocks(X):
    """X[:] = 0 for a 3-D array (a block list (K, r, c), or a list of stacks)."""
    for l in range(X.shape[0]):
        zero_stack(X[l])


@jit
def copy_blocks(X, out):
    """out[:] = X[:len(out)] for 3-D arrays (X may have more blocks)."""
    for l in range(out.shape[0]):
        copy_stack(X[l], out[l])


@jit
def add_blocks(X, out):
    """out[:] += X[:len(out)] for 3-D arrays (X may have more blocks)."""
    for l in range(out.shape[0]):
        add_stack(X[l], out[l])


@jit
def conv_blocks(A, B, out):
    """out[l] = sum_{m<=l} A[l-m] @ B[m] for l < len(out): T(A) T(B) = T(A*B) (J1).

    A, B: (>=K, r, s) and (>=K, s, c) block lists; out: (K, r, c), overwritten.
    """
    K, r, c = out.shape
    s = A.shape[2]
    zero_blocks(out)
    for l in range(K):
        for m in range(l + 1):
            Al = A[l - m]
            Bm = B[m]
            for i in range(r):
                for j in range(c):
                    acc = 0.0
                    for t in range(s):
                        acc += Al[i, t] * Bm[t, j]
                    out[l, i, j] += acc


@jit
def conv_motion_blocks(A, B, out):
    """``conv_blocks`` for block lists of the motion-transform form [[P, 0], [Q, P]]
    (CMTMs and their inverses, §2): each product costs 3x3 blocks, not a 6x6 product."""
    zero_blocks(out)
    for l in range(out.shape[0]):
        for m in range(l + 1):
            motion_block_mul_add(A[l - m], B[m], 1.0, out[l])


@jit_leaf
def conv_block_vec(A, x, out, scale):
    """out[l] += scale * sum_{m<=l} A[l-m] @ x[m] for l < len(out): T(A) x (J1).

    A: (>=K, 6, 6) blocks; x: (>=K, 6); out: (K, 6).
    """
    for l in range(out.shape[0]):
        for m in range(l + 1):
            matvec6(A[l - m], x[m], out[l], scale)


@jit
def conv_blockT_vec(A, x, out):
    """out[l] += sum_{m<=l} A[l-m]^T @ x[m]: the product with the *blockwise* transpose T(A^T)."""
    for l in range(out.shape[0]):
        for m in range(l + 1):
            matTvec6(A[l - m], x[m], out[l])


@jit
def derivative_stack(x, out):
    """out[l] = (l+1) x[l+1]: the Taylor coefficients of the time derivative (J2, B_(k))."""
    for l in range(out.shape[0]):
        for i in range(out.shape[1]):
            out[l, i] = (l + 1) * x[l + 1, i]


@jit_leaf
def motion_cross_conv(a, b, out):
    """out[l] += sum_{m<=l} [a_m x_6] b_{l-m}: T([a x]) b, the Taylor form of a x b (§1.3)."""
    for l in range(out.shape[0]):
        for m in range(l + 1):
            motion_cross_add(a[m], b[l - m], 1.0, out[l])


@jit_leaf
def force_cross_conv(a, h, out, scale):
    """out[l] += scale * sum_{m<=l} [a_m x_6^*] h_{l-m}: T([a x^*]) h, the Taylor form of
    a x^* h (§1.1, §1.3)."""
    for l in range(out.shape[0]):
        for m in range(l + 1):
            force_cross_add(a[m], h[l - m], scale, out[l])


def raw_block_coefficients(k1, K_in, n_s):
    """c[l, r, s] = l!/(r-s)! where 0 <= l-r+s < k1 and r >= s, else 0: the weights of
    d y^(l) / d q^(r) = sum_s c[l, r, s] G_s[l-r+s] (§7.6, §8); (k1, K_in, n_s) float64,
    made once per workspace."""
    fact = factorials(K_in + k1)
    coef = np.zeros((k1, K_in, n_s))
    for l in range(k1):
        for r in range(K_in):
            for s in range(n_s):
                if r >= s and 0 <= l - r + s < k1:
                    coef[l, r, s] = fact[l] / fact[r - s]
    return coef


@jit
def write_raw_blocks(G, coef, row0, j, out):
    """Raw blocks from first columns (§8, §7.6):
    out[l, row0 + c, r, j] = d y^(l)_c / d q_j^(r) = sum_s coef[l, r, s] G[s, l-r+s, c].

    G: (n_s, >=k+1, d) Taylor coefficients of G_s; coef from ``raw_block_coefficients``;
    out: (k+1, m, K_in, nv) of one sample.
    """
    k1, K_in, d = out.shape[0], out.shape[2], G.shape[2]
    for l in range(k1):
        for r in range(K_in):
            for c in range(d):
                acc = 0.0
                for s in range(G.shape[0]):
                    weight = coef[l, r, s]
                    if weight != 0.0:
                        acc += weight * G[s, l - r + s, c]
                out[l, row0 + c, r, j] = acc
