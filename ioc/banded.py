"""Banded symmetric matrices of spline problems (local support, cmtm_math §9).

A sample t_m involves the p+1 control points first_m .. first_m + p of every joint, so with
variables ordered control-point-major (index i * nv + j) every sample contributes a dense
((p+1) nv)^2 block on the diagonal and the normal matrix has upper bandwidth
u = (p+1) nv - 1. Storage is LAPACK's upper band form used by
``scipy.linalg.cholesky_banded``: ``ab[u + r - c, c] = A[r, c]`` for r <= c.
"""
import numpy as np
from scipy.linalg import cho_solve_banded, cholesky_banded


def chain_gradient(first, values, gs, n_control):
    """sum_m B_m^T gs_m: the gradient with respect to control points (n_c, nv) of a
    function of the raw stacks at the samples, from its stack gradients.

    first : (N,) int; values : (N, K, p+1) basis derivatives b^(s)_{first+a}(t_m);
    gs : (N, K, nv) gradient with respect to q^(s)(t_m).
    """
    local = np.einsum("msa,msj->maj", values, gs)
    out = np.zeros((n_control, gs.shape[2]))
    np.add.at(out, first[:, None] + np.arange(values.shape[2]), local)
    return out


def chain_hessian_blocks(values, Gs):
    """Per-sample blocks B_m^T G_m B_m, (N, (p+1) nv, (p+1) nv), control-point-major.

    values : (N, K, p+1); Gs : (N, K, nv, K, nv) Hessian with respect to the raw stack.
    """
    N, K, n_local = values.shape
    nv = Gs.shape[2]
    half = np.einsum("msa,msjtk->majtk", values, Gs)
    blocks = np.einsum("majtk,mtb->majbk", half, values)
    return blocks.reshape(N, n_local * nv, n_local * nv)


class BandLayout:
    """Where the per-sample blocks of a spline problem go in band storage."""

    def __init__(self, n_control, degree, nv):
        self.nv, self.n_local = nv, degree + 1
        self.size = n_control * nv
        self.u = self.n_local * nv - 1
        rows, cols = np.triu_indices(self.n_local * nv)
        self._block_rows, self._block_cols = rows, cols
        self._band_rows = self.u + rows - cols

    def assemble(self, first, blocks, out=None):
        """Add the blocks of samples whose windows start at control point ``first`` into a
        band matrix (u+1, size); blocks of one window are summed before placement."""
        ab = np.zeros((self.u + 1, self.size)) if out is None else out
        windows, inverse = np.unique(first, return_inverse=True)
        summed = np.zeros((len(windows),) + blocks.shape[1:])
        np.add.at(summed, inverse, blocks)
        for window, block in zip(windows, summed):
            ab[self._band_rows, window * self.nv + self._block_cols] += \
                block[self._block_rows, self._block_cols]
        return ab

    def restrict(self, ab, start, stop):
        """The band of the principal submatrix of variables start..stop-1."""
        sub = ab[:, start:stop].copy()
        for c in range(min(self.u, stop - start)):
            sub[:self.u - c, c] = 0.0
        return sub

    def add_diagonal(self, ab, values):
        """ab + diag(values), in place."""
        ab[self.u] += values
        return ab


def band_to_dense(ab):
    """Dense symmetric matrix from upper band storage (tests and small problems)."""
    u, n = ab.shape[0] - 1, ab.shape[1]
    A = np.zeros((n, n))
    for d in range(u + 1):
        idx = np.arange(u - d, n)
        A[idx - (u - d), idx] = ab[d, u - d:]
    return A + np.triu(A, 1).T


def band_matvec(ab, x):
    """A x for A in upper band storage, x (n,) or (n, r)."""
    u, n = ab.shape[0] - 1, ab.shape[1]
    y = ab[u][:, None] * x if x.ndim == 2 else ab[u] * x
    for d in range(1, min(u, n - 1) + 1):
        a = ab[u - d, d:]
        if x.ndim == 2:
            a = a[:, None]
        y[:n - d] += a * x[d:]
        y[d:] += a * x[:n - d]
    return y


class BandedCholesky:
    """Cholesky factor of a symmetric positive definite band matrix; ``solve(b)``."""

    def __init__(self, ab):
        self.factor = cholesky_banded(ab, lower=False)

    def solve(self, b):
        return cho_solve_banded((self.factor, False), b)


def band_columns(ab, columns):
    """Dense columns A[:, columns] (n, len(columns)) of the symmetric band matrix."""
    u, n = ab.shape[0] - 1, ab.shape[1]
    out = np.zeros((n, len(columns)))
    for k, c in enumerate(columns):
        rows = np.arange(max(0, c - u), c + 1)            # upper part: A[r, c], r <= c
        out[rows, k] = ab[u + rows - c, c]
        below = np.arange(c + 1, min(n, c + u + 1))       # A[r, c] = A[c, r], r > c
        out[below, k] = ab[u + c - below, below]
    return out
