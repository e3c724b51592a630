"""Banded symmetric matrices of spline problems (local support, cmtm_math §9).

A sample t_m involves the p+1 control points first_m .. first_m + p of every joint, so with
variables ordered control-point-major (index i * nv + j) every sample contributes a dense
((p+1) nv)^2 block on the diagonal and the normal matrix has upper bandwidth
u = (p+1) nv - 1. Storage is LAPACK's upper band form used by
``scipy.linalg.cholesky_banded``: ``ab[u + r - c, c] = A[r, c]`` for r <= c.
"""
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic
from scipy.linalg import LinAlgError
from scipy.linalg.blas import dsbmv
from scipy.linalg.lapack import dpbtrf, dpbtrs

from cmtm._jit import index_range, jit_kernel


class SplineChain:
    """The chain rule from the raw stacks at sample times to the control points, with its
    index work done once per time grid (local support: a sample involves the p+1 control
    points first_m .. first_m + p of every joint).

    first : (N,) int; values : (N, K, p+1) basis derivatives b^(s)_{first_m+a,p}(t_m)
    (``ClampedBSpline.local_basis``); n_control, nv.

    * gradient: sum_m B_m^T gs_m, i.e. (n_c, X) = Cg (n_c, N K) @ gs (N K, X) with the
      sparse Cg[first_m + a, m K + s] = values[m, s, a], in one compiled loop
      (:func:`_chain_gradient`);
    * Hessian: sum_m B_m^T G_m B_m for stack Hessians G_m over the first Kc orders. Its block
      between control points i and i + delta (0 <= delta <= p, nv x nv) is
      sum_m sum_{s,t} values[m, s, i - first_m] values[m, t, i + delta - first_m]
      G_m[s, :, t, :]. The samples of one knot span share first_m, so per span one dense
      product Y[a, b] = sum_{m in span, s, t} values[m, s, a] values[m, t, b] G_m[s, t]
      ((p+1)^2, n Kc^2) @ (n Kc^2, nv^2) gives every block the span touches (i = first + a,
      delta = b - a), summed span by span; a compiled loop then adds the blocks to upper
      band storage (no two blocks share an entry). Against one sparse product over all
      samples (scipy's csr_matvecs), median CPU of 15 alternating calls: the 36-joint
      human's Gauss-Newton Hessian (200 samples, 3 orders) 32.0 -> 17.7 ms, case (c)'s
      0.26 -> 0.10 ms.
    """

    def __init__(self, first, values, n_control, nv):
        self.first = np.ascontiguousarray(first, dtype=np.int64)
        self.values = np.ascontiguousarray(values, dtype=np.float64)
        self.n_control, self.nv = n_control, nv
        N, _, n_local = self.values.shape
        self.layout = BandLayout(n_control, n_local - 1, nv)
        self.span_first, self._span, counts = np.unique(self.first, return_inverse=True,
                                                        return_counts=True)
        order = np.argsort(self._span, kind="stable")
        self._slot = np.empty(N, dtype=np.int64)
        self._slot[order] = np.arange(N) - np.repeat(np.cumsum(counts) - counts, counts)
        self._slots = int(counts.max())
        self._span_weights = {}

    def gradient(self, gs, orders=None, weights=None):
        """sum_m B_m^T gs_m: gs (N, K, ...) stack gradients -> (n_control, ...); with the
        terms' ``weights`` (T,), gs (N, K, T, ...) being the stack gradients of T terms, also
        the gross gradient sum_m |B_m|^T gross_m of gross_m = sum_i w_i |gs_m,i| (summed in
        the order of i: a gradient's rounding scale), in the same pass: (gradient, gross
        gradient (n_control, ...)). ``orders`` (default all True): the orders s where gs[:,
        s] may be nonzero, (K,) bool, or with weights (K, T) bool per term (those where
        gs[:, s, i] may be); the products of the others are skipped. The same bits as
        scipy's CSR product Cg @ gs (|Cg| @ gross): each entry sums the same products in the
        same order (the matrix's columns m K + s ascending), the skipped ones and those of
        zero entries being zeros, which leave a sum that starts at +0 unchanged (a gross
        sum too: its terms are >= 0). Without scipy's handling of the product, and
        skipping the joint terms' zero orders, in one compiled loop
        (:func:`_chain_gradient`) whose trip counts over a sample's control points, a
        term's columns and the terms are constants of its compiled form (measured
        2026-12-04, 2 shared cores, case (a) of bench_peers: 200 samples, K = 4, 3 terms
        of one order each, 9 columns, per call: scipy's product 19 us, a loop over every
        order 17 us, skipping zero orders 10.5 -> 8.9 us, then with the gross gradient
        22 us; constant trip counts 15.5 us, and skipping zero terms 10.3 us)."""
        N, K = gs.shape[:2]
        flat = np.ascontiguousarray(gs, dtype=np.float64).reshape(N, K, -1)
        terms = 1 if weights is None else len(weights)
        if orders is None:
            orders = np.ones((K, terms), dtype=np.bool_)
        elif orders.ndim == 1:                  # the same orders for every term
            orders = np.repeat(np.asarray(orders, dtype=np.bool_)[:, None], terms, axis=1)
        w = np.zeros(0) if weights is None else np.ascontiguousarray(weights, np.float64)
        width = flat.shape[2] // terms
        out = np.zeros((self.n_control, flat.shape[2]))
        out_gross = np.zeros((self.n_control, width if w.size else 0))
        _chain_gradient(self.first, self.values, flat, w, orders, out, out_gross,
                        static_sizes(self.values.shape[2], width, terms))
        gradient = out.reshape((self.n_control,) + gs.shape[2:])
        if weights is None:
            return gradient
        return gradient, out_gross.reshape((self.n_control,) + gs.shape[3:])

    def span_weights(self, Kc):
        """W (n_spans, (p+1)^2, slots Kc^2): W[span, (a, b), (slot, s, t)] =
        values[m, s, a] values[m, t, b] for the sample m in that slot of the span (zero for
        the slots a span does not fill); built on first use."""
        if Kc not in self._span_weights:
            N, _, n_local = self.values.shape
            b = self.values[:, :Kc]
            products = np.einsum("msa,mtb->mabst", b, b).reshape(N, n_local ** 2, Kc * Kc)
            W = np.zeros((len(self.span_first), n_local ** 2, self._slots, Kc * Kc))
            W[self._span, :, self._slot] = products
            self._span_weights[Kc] = W.reshape(len(self.span_first), n_local ** 2, -1)
        return self._span_weights[Kc]

    def hessian_blocks(self, G, C=None):
        """(n_c, p+1, X) blocks of sum_m B_m^T (G_m + C_m) B_m (C: none if None), G and C
        (N, Kc, Kc, ...) stack Hessians with the order axes first (G[m, s, t] = d^2 /
        dq^(s) dq^(t), X = nv^2 entries, or any trailing size), of any strides (e.g. a
        reordering view). Each span's samples in its slots (:func:`_fill_slots`, G + C
        entry by entry), one product per span (numpy's matmul), the products summed into
        the blocks in the order of the spans (:func:`_sum_span_products`): the bits of the
        fancy-index and sparse scatters (1 Y, summed from +0 in the order of its columns)
        that it replaces. Measured 2026-12-03 in bench_peers' solves (median of 40, per
        Newton Hessian, with ``MotionProblem._gauss_newton_stack``, whose reordered copy
        the slots now make): case (b) 143.5 -> 111.5 us, case (c) 239 -> 198 us."""
        N, Kc = G.shape[:2]
        n_local = self.values.shape[2]
        stacks = _blocks_of(G)
        added = stacks[:0] if C is None else _blocks_of(C)
        X = stacks.shape[3] * stacks.shape[4]
        padded = np.zeros((len(self.span_first), self._slots * Kc * Kc, X))
        _fill_slots(self._span, self._slot, stacks, added,
                    padded.reshape(len(self.span_first), -1))
        Y = np.matmul(self.span_weights(Kc), padded)
        blocks = np.zeros((self.n_control, n_local, X))
        _sum_span_products(self.span_first, Y, blocks)
        return blocks

    def band(self, blocks, out=None):
        """Upper band storage (u+1, n_c nv) of the blocks of :meth:`hessian_blocks` (added
        to ``out`` if given): block (i, delta) entry (j, k) is A[i nv + j, (i + delta) nv +
        k], where it lies in the matrix and on or above the diagonal
        (:func:`_add_blocks_to_band`)."""
        ab = np.zeros((self.layout.u + 1, self.layout.size)) if out is None else out
        _add_blocks_to_band(np.ascontiguousarray(blocks, dtype=np.float64).reshape(
            self.n_control, self.layout.n_local, self.nv, self.nv), ab)
        return ab

    def hessian(self, G, out=None, C=None):
        """sum_m B_m^T (G_m + C_m) B_m in upper band storage (added to ``out`` if given);
        G and C (N, Kc, Kc, nv, nv), C none if None."""
        return self.band(self.hessian_blocks(G, C), out)


def _blocks_of(G):
    """Stack Hessians (N, Kc, Kc, ...) as float64 (N, Kc, Kc, A, B): (nv, nv) trailing
    axes as they are (a strided view is read in place), any other trailing size X as
    (1, X)."""
    G = np.asarray(G, dtype=np.float64)
    return G if G.ndim == 5 else G.reshape(G.shape[:3] + (1, -1))


@jit_kernel
def _fill_slots(span, slot, G, C, padded):
    """padded[span_m, slot_m S + e] = G[m, s, t, a, b] + C[m, s, t, a, b] (G where C is
    empty), e = ((s Kc + t) A + a) B + b, S = Kc^2 A B, for G and C (N, Kc, Kc, A, B) of any
    strides, padded (n_spans, slots S): the samples in their slots of
    :meth:`SplineChain.hessian_blocks`."""
    Kc, A, B = G.shape[1], G.shape[3], G.shape[4]
    for m in range(G.shape[0]):
        out = padded[span[m]]
        e = np.uint64(slot[m] * Kc * Kc * A * B)
        for s in index_range(0, Kc):
            for t in index_range(0, Kc):
                for a in index_range(0, A):
                    for b in index_range(0, B):
                        out[e] = G[m, s, t, a, b] + C[m, s, t, a, b] if C.shape[0] else \
                            G[m, s, t, a, b]
                        e += np.uint64(1)


@jit_kernel
def _sum_span_products(span_first, Y, blocks):
    """blocks[first + a, b - a] += Y[span, a (p+1) + b] for b >= a, span by span
    (:meth:`SplineChain.hessian_blocks`); blocks (n_c, p+1, X), Y (n_spans, (p+1)^2, X)."""
    n_local, X = blocks.shape[1], blocks.shape[2]
    for span in range(Y.shape[0]):
        first = span_first[span]
        for a in range(n_local):
            for b in range(a, n_local):
                row, out = Y[span, a * n_local + b], blocks[first + a, b - a]
                for x in index_range(0, X):
                    out[x] += row[x]


@jit_kernel
def _add_blocks_to_band(blocks, ab):
    """ab[u + r - c, c] += blocks[i, delta, j, k], r = i nv + j, c = (i + delta) nv + k, for
    the entries on or above the diagonal of the matrix (:meth:`SplineChain.band`); blocks
    (n_c, p+1, nv, nv), ab (u+1, n_c nv): along a diagonal d = u + r - c the columns c of
    one row r are consecutive."""
    n_c, n_local, nv = blocks.shape[0], blocks.shape[1], blocks.shape[2]
    u = ab.shape[0] - 1
    for i in range(n_c):
        for delta in range(min(n_local, n_c - i)):
            for j in range(nv):
                r = i * nv + j
                for k in range(j if delta == 0 else 0, nv):
                    c = (i + delta) * nv + k
                    ab[u + r - c, c] += blocks[i, delta, j, k]


def static_sizes(*sizes):
    """Tuples of zeros of the lengths ``sizes``: a compiled kernel taking them reads the
    lengths (``len``) as constants of its compiled form (a tuple's length is part of its
    type), so that its short loops have constant trip counts, which the compiler unrolls
    and vectorizes; one compiled form per distinct set of sizes."""
    return tuple((0,) * size for size in sizes)


@jit_kernel
def _chain_gradient(first, values, gs, weights, orders, out, out_gross, sizes):
    """out[first_m + a, i Y + y] += values[m, s, a] gs[m, s, i Y + y] over the samples m and
    the orders s, in that order, for the terms i where orders[s, i] (gs (N, K, T Y), the
    terms' columns in turn; :meth:`SplineChain.gradient`), and where weights.size = T,
    out_gross[first_m + a, y] += |values[m, s, a]| gross, gross = sum_i weights[i]
    |gs[m, s, i Y + y]| over the terms where orders[s, i], summed in the order of i from
    +0 (skipped where no term is); out (n_c, T Y) and out_gross (n_c, Y) zeros (no columns
    without weights). ``sizes`` (:func:`static_sizes`): the lengths p+1, Y and T as
    constants of the compiled form."""
    n_local, Y, T = len(sizes[0]), len(sizes[1]), len(sizes[2])
    for m in range(gs.shape[0]):
        row = first[m]
        for s in range(gs.shape[1]):
            g, v = gs[m, s], values[m, s]
            nonzero = False
            for i in range(T):
                if orders[s, i]:
                    nonzero = True
                    for a in range(n_local):
                        column = out[row + a]
                        for y in range(Y):
                            column[i * Y + y] += v[a] * g[i * Y + y]
            if nonzero and weights.size:
                for y in range(Y):
                    gross = 0.0
                    for i in range(T):
                        if orders[s, i]:
                            gross += weights[i] * abs(g[i * Y + y])
                    for a in range(n_local):
                        out_gross[row + a, y] += abs(v[a]) * gross


class BandLayout:
    """Sizes of the band matrices of a spline problem: ``u`` = (p+1) nv - 1 upper diagonals
    over ``size`` = n_c nv variables."""

    def __init__(self, n_control, degree, nv):
        self.nv, self.n_local = nv, degree + 1
        self.size = n_control * nv
        self.u = self.n_local * nv - 1

    def restrict(self, ab, start, stop):
        """The band of the principal submatrix of variables start..stop-1: its columns,
        with the entries above the submatrix (rows before ``start``) zeroed, in one compiled
        call (:func:`_restricted_band`)."""
        sub = np.empty((ab.shape[0], stop - start))
        _restricted_band(np.asarray(ab, dtype=np.float64), start, sub)
        return sub

    def add_diagonal(self, ab, values):
        """ab + diag(values), in place."""
        ab[self.u] += values
        return ab


@jit_kernel
def _restricted_band(ab, start, sub):
    """sub[d, c] = ab[d, start + c], or 0 where d < u - c (above the submatrix's row 0: a
    row before ``start``), for the columns c of sub (:meth:`BandLayout.restrict`)."""
    u = ab.shape[0] - 1
    for d in range(ab.shape[0]):
        for c in range(sub.shape[1]):
            sub[d, c] = 0.0 if d < u - c else ab[d, start + c]


def add_row_grams(ab, A, scale):
    """ab += scale sum_k a_k a_k^T / |a_k|^2 over the rows a_k of the sparse matrix A (each
    row's nonzeros within the band), in place: a curvature of ``scale`` along each row."""
    norms = np.sqrt(np.asarray(A.multiply(A).sum(axis=1)).ravel())
    rows = A.multiply(1.0 / np.maximum(norms, 1e-300)[:, None]).tocsr()
    gram = (rows.T @ rows).tocoo()
    upper = gram.row <= gram.col
    r, c = gram.row[upper], gram.col[upper]
    u = ab.shape[0] - 1
    if np.any(c - r > u):
        raise ValueError(f"A: expected rows within the band's {u} upper diagonals")
    np.add.at(ab, (u + r - c, c), scale * gram.data[upper])
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
    """A x for A in upper band storage, x (n,) or (n, r): BLAS's symmetric band product
    (dsbmv) per column."""
    u = ab.shape[0] - 1
    if x.ndim == 2:
        return np.stack([band_matvec(ab, column) for column in x.T], axis=1)
    return dsbmv(u, 1.0, ab, np.asarray(x, dtype=np.float64))


class BandedCholesky:
    """Cholesky factor U^T U of a symmetric positive definite band matrix (upper band
    storage); ``solve(b)``. The factor of a band of at most UNBLOCKED_BANDWIDTH upper
    diagonals by :func:`_unblocked_band_cholesky` (LAPACK's dpbtf2, which dpbtrf runs
    there, with the fused multiply-adds of OpenBLAS's kernels: the same bits), wider ones
    by LAPACK's dpbtrf; solves by dpbtrs, called directly: the routines of
    ``scipy.linalg.cholesky_banded`` / ``cho_solve_banded`` (the same bits), without their
    argument handling, which took most of a small solve's time (measured, 138 variables of
    bandwidth 17, one BLAS thread: factor 24 -> 18 us, solve 12.3 -> 2.9 us; the compiled
    factor in bench_peers' case (a), medians of 21 solves: 14.0 -> 6.7 us back to back,
    32.5 -> 10.7 us right after an IPOPT solve). ValueError on a NaN or inf entry (as
    scipy's check_finite), LinAlgError where the matrix is not positive definite."""

    def __init__(self, ab):
        ab = np.asarray(ab, dtype=np.float64)
        if ab.shape[0] - 1 > UNBLOCKED_BANDWIDTH:
            _check_finite("band", ab)
            self.factor, info = dpbtrf(ab, lower=0)
        else:
            factor = np.empty((ab.shape[1], ab.shape[0]))   # its transpose: Fortran order
            info = _unblocked_band_cholesky(ab, factor, np.empty(ab.shape[0]))
            if info < 0:                # a NaN or inf entry
                _check_finite("band", ab)
            self.factor = factor.T
        if info > 0:
            raise LinAlgError(f"{info}-th leading minor not positive definite")
        if info < 0:
            raise ValueError(f"dpbtrf: illegal value in argument {-info}")

    def solve(self, b):
        """H^-1 b for b (n,) or (n, r)."""
        _check_finite("right-hand side", b)
        x, info = dpbtrs(self.factor, b, lower=0)
        if info < 0:
            raise ValueError(f"dpbtrs: illegal value in argument {-info}")
        return x


UNBLOCKED_BANDWIDTH = 64
"""The bandwidths kd that LAPACK's dpbtrf factors by the unblocked dpbtf2 (its block size
from ILAENV is 1 for kd <= 64), and so :func:`_unblocked_band_cholesky`."""


@intrinsic
def _fused_multiply_add(typingctx, a, b, c):
    """a b + c rounded once (LLVM's fma: the processor's instruction where it has one)."""
    signature = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, sig, args):
        double = ir.DoubleType()
        fma = builder.module.declare_intrinsic("llvm.fma", [double],
                                               ir.FunctionType(double, [double] * 3))
        return builder.call(fma, args)
    return signature, codegen


@jit_kernel
def _unblocked_band_cholesky(ab, factor, work):
    """LAPACK's dpbtf2 (upper): the Cholesky factor U of the band ab (kd+1, n) (upper band
    storage) written transposed to factor (n, kd+1) (factor.T is LAPACK's band of U);
    returns 0, j + 1 where the leading minor of order j + 1 is not positive definite, or
    -1 for a NaN or inf entry of ab. Column j: u_jj = sqrt(a_jj), the row to its right
    scaled by 1 / u_jj (dscal), then the rank-one update A -= x x^T of the trailing block
    (dsyr, skipped for x_c = 0), each entry a fused multiply-add fma(-x_c, x_r, a) as
    OpenBLAS's axpy kernels compute it: dpbtrf's bits on this machine (SkylakeX kernels;
    tests/test_banded.py compares them). work (kd+1,): the scaled row."""
    kd, n = ab.shape[0] - 1, ab.shape[1]
    finite = True
    for c in range(n):
        for d in range(kd + 1):
            x = ab[d, c]
            finite &= np.isfinite(x)
            factor[c, d] = x
    if not finite:
        return -1
    for j in range(n):
        ajj = factor[j, kd]
        if not ajj > 0.0:
            return j + 1
        ajj = np.sqrt(ajj)
        factor[j, kd] = ajj
        kn = min(kd, n - j - 1)
        r = 1.0 / ajj
        for i in range(kn):
            x = factor[j + 1 + i, kd - 1 - i] * r
            factor[j + 1 + i, kd - 1 - i] = x
            work[i] = x
        for c in range(kn):
            if work[c] != 0.0:
                minus_x = -work[c]
                column = factor[j + 1 + c]
                base = np.uint64(kd - c)
                for d in index_range(0, c + 1):
                    column[base + d] = _fused_multiply_add(minus_x, work[d], column[base + d])
    return 0


def _check_finite(name, array):
    if not np.isfinite(array).all():
        raise ValueError(f"{name}: expected finite values, got NaN or inf")


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
