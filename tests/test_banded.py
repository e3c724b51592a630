"""Band storage of spline normal matrices against dense assembly (numpy, scipy)."""
import numpy as np
import pytest
import scipy.sparse as sp

from scipy.linalg import LinAlgError, cho_solve_banded, cholesky_banded
from scipy.linalg.lapack import dpbtrf

from conftest import chain_gradient_matrix
from ioc.banded import (BandedCholesky, BandLayout, SplineChain, add_row_grams, band_matvec,
                        band_to_dense)


def random_local_problem(rng, n_samples=17, n_control=9, degree=3, nv=2, K=3):
    first = rng.integers(0, n_control - degree, n_samples)
    values = rng.normal(size=(n_samples, K, degree + 1))
    return first, values


def dense_chain_matrix(first, values, n_control, nv):
    """B_m (K nv, n_c nv) of every sample, written out densely (the reference)."""
    N, K, n_local = values.shape
    B = np.zeros((N, K, nv, n_control, nv))
    for m in range(N):
        for a in range(n_local):
            for j in range(nv):
                B[m, :, j, first[m] + a, j] = values[m, :, a]
    return B.reshape(N, K * nv, n_control * nv)


def orders_first(G, K, nv):
    return G.reshape(-1, K, nv, K, nv).transpose(0, 1, 3, 2, 4)


@pytest.mark.parametrize("Kc", [3, 2])
def test_spline_chain_gradient_and_hessian_match_dense_products(Kc):
    rng = np.random.default_rng(1)
    n_control, degree, nv, K = 9, 3, 2, 3
    first, values = random_local_problem(rng, n_control=n_control, degree=degree, nv=nv, K=K)
    N = len(first)
    chain = SplineChain(first, values, n_control, nv)
    B = dense_chain_matrix(first, values, n_control, nv)
    gs = rng.normal(size=(N, K, nv))
    expected = np.einsum("mab,ma->b", B, gs.reshape(N, -1)).reshape(n_control, nv)
    # exact products of O(1) numbers: round-off only
    assert np.allclose(chain.gradient(gs), expected, rtol=0, atol=1e-12)
    several = rng.normal(size=(N, K, 4, nv))         # trailing axes carried through
    assert np.allclose(chain.gradient(several)[:, 1], chain.gradient(several[:, :, 1]),
                       rtol=0, atol=1e-12)

    root = rng.normal(size=(N, Kc * nv, Kc * nv))
    G = np.einsum("mab,mcb->mac", root, root)           # symmetric PSD stack Hessians
    Bc = B.reshape(N, K, nv, -1)[:, :Kc].reshape(N, Kc * nv, -1)
    expected = np.einsum("mab,mac,mcd->bd", Bc, G, Bc)
    dense = band_to_dense(chain.hessian(orders_first(G, Kc, nv)))
    assert np.allclose(dense, expected, rtol=0, atol=1e-10)


def upper_band_storage(dense, u):
    """LAPACK's upper band storage of a dense symmetric matrix, entry by entry
    (ab[u + r - c, c] = A[r, c] for max(0, c - u) <= r <= c, zero elsewhere)."""
    n = dense.shape[0]
    ab = np.zeros((u + 1, n))
    for c in range(n):
        for r in range(max(0, c - u), c + 1):
            ab[u + r - c, c] = dense[r, c]
    return ab


def test_restrict_solve_and_matvec_agree_with_dense_linear_algebra():
    rng = np.random.default_rng(2)
    n_control, degree, nv = 10, 2, 3
    first, values = random_local_problem(rng, n_samples=40, n_control=n_control,
                                         degree=degree, nv=nv, K=1)
    G = np.zeros((len(first), 1, 1, nv, nv))
    G[:, 0, 0, np.arange(nv), np.arange(nv)] = 1.0
    layout = BandLayout(n_control, degree, nv)
    ab = layout.add_diagonal(SplineChain(first, values, n_control, nv).hessian(G), 1e-3)
    start, stop = 2 * nv, 8 * nv
    sub = layout.restrict(ab, start, stop)
    dense = band_to_dense(ab)[start:stop, start:stop]
    assert np.array_equal(band_to_dense(sub), dense)
    assert np.array_equal(sub, upper_band_storage(dense, layout.u))
    narrow = layout.restrict(ab, start, start + 4)          # fewer columns than u = 8
    assert np.array_equal(narrow, upper_band_storage(dense[:4, :4], layout.u))
    b = rng.normal(size=(stop - start, 2))
    assert np.allclose(band_matvec(sub, b), dense @ b, rtol=1e-12, atol=1e-12)
    x = BandedCholesky(sub).solve(b)
    # conditioning of a random least-squares normal matrix, ~1e6 at most
    assert np.allclose(dense @ x, b, rtol=0, atol=1e-8)


@pytest.mark.parametrize("n, u", [(40, 5), (138, 17), (200, 41), (30, 40), (150, 70)])
def test_banded_cholesky_equals_scipy_cholesky_banded_bit_for_bit_and_refuses_indefinite(n, u):
    """The factor (compiled dpbtf2 up to UNBLOCKED_BANDWIDTH upper diagonals, LAPACK's
    dpbtrf beyond) and the direct dpbtrs against scipy.linalg's cholesky_banded /
    cho_solve_banded (identical bits), one and two right-hand sides; band sizes of the
    paper's arms (17), the Panda (41), fewer variables than diagonals, and a blocked one
    (70); an indefinite matrix is a LinAlgError at LAPACK's leading minor (the solver
    shifts it), a NaN a ValueError."""
    rng = np.random.default_rng(3)
    M = rng.normal(size=(n, n)) * np.abs(np.subtract.outer(np.arange(n), np.arange(n))) \
        .__le__(u // 2)
    dense = M @ M.T + np.diag(rng.uniform(0.5, 2.0, n))
    ab = np.array([np.concatenate([np.zeros(u - d), np.diag(dense, u - d)])[-n:]
                   for d in range(u + 1)])
    chol = BandedCholesky(ab)
    assert np.array_equal(chol.factor, cholesky_banded(ab, lower=False))
    for b in (rng.normal(size=n), rng.normal(size=(n, 2))):
        assert np.array_equal(chol.solve(b), cho_solve_banded((chol.factor, False), b))
    indefinite = ab.copy()
    indefinite[u, 7] = -1.0
    with pytest.raises(LinAlgError, match="^8-th"):
        BandedCholesky(indefinite)
    shifted = ab.copy()                     # indefinite, its failing minor further on
    shifted[u] -= np.linalg.eigvalsh(dense)[0] + 0.1
    with pytest.raises(LinAlgError, match=f"^{dpbtrf(shifted, lower=0)[1]}-th"):
        BandedCholesky(shifted)
    with pytest.raises(ValueError, match="finite"):
        BandedCholesky(np.where(ab == ab[u, 3], np.nan, ab))
    with pytest.raises(ValueError, match="finite"):
        chol.solve(np.full(n, np.inf))


def test_band_layout_bandwidth_is_local_support():
    layout = BandLayout(n_control=50, degree=5, nv=3)
    assert layout.u == 6 * 3 - 1 and layout.size == 150


def test_band_matvec_with_fewer_unknowns_than_the_bandwidth():
    rng = np.random.default_rng(6)
    u, n = 7, 4
    ab = rng.normal(size=(u + 1, n))
    dense = band_to_dense(ab)
    x = rng.normal(size=n)
    assert np.allclose(band_matvec(ab, x), dense @ x, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("n", [1, 5])
def test_band_to_dense_of_diagonal(n):
    ab = np.zeros((3, n))
    ab[2] = np.arange(1, n + 1)
    assert np.array_equal(band_to_dense(ab), np.diag(np.arange(1.0, n + 1)))


def test_band_columns_are_the_dense_columns():
    rng = np.random.default_rng(4)
    n, u = 12, 3
    A = rng.normal(size=(n, n))
    A = np.triu(np.tril(A + A.T, u), -u)
    ab = np.zeros((u + 1, n))
    for d in range(u + 1):
        ab[u - d, d:] = np.diag(A, d)
    from ioc.banded import band_columns
    assert np.array_equal(band_columns(ab, [0, 5, 11]), A[:, [0, 5, 11]])


def test_add_row_grams_matches_the_dense_sum_of_normalised_outer_products():
    """Rows within the band (4 upper diagonals): the band gains scale sum_k a_k a_k^T /
    |a_k|^2, against the dense sum (to rounding); a row reaching past the band is refused."""
    rng = np.random.default_rng(0)
    n, u = 12, 4
    dense_rows = np.zeros((3, n))
    for k, first in enumerate((0, 3, 7)):
        dense_rows[k, first:first + u + 1] = rng.normal(size=u + 1)
    band = add_row_grams(np.zeros((u + 1, n)), sp.csr_matrix(dense_rows), 2.5)
    normalised = dense_rows / np.linalg.norm(dense_rows, axis=1)[:, None]
    np.testing.assert_allclose(band_to_dense(band), 2.5 * normalised.T @ normalised,
                               rtol=0, atol=1e-15)
    wide = np.zeros((1, n))
    wide[0, [0, u + 1]] = 1.0
    with pytest.raises(ValueError, match="within the band"):
        add_row_grams(np.zeros((u + 1, n)), sp.csr_matrix(wide), 1.0)


def test_spline_chain_gradient_is_the_sparse_product_bit_for_bit_and_skips_only_zeros():
    """SplineChain.gradient (a compiled loop) against scipy's product with its
    matrix (conftest.chain_gradient_matrix), and the gross gradient of the terms' weighted
    sum of |gs| in the same call against the product with its absolute values: equal bit
    for bit (the same products summed in the same order, zero entries
    included: gs of mixed signs with zeros in some columns of an order); ``orders``
    skipping the orders that are zero, (K,) or per term (K, T), leaves the bits unchanged,
    and skipping a nonzero order changes the result (the mask is read)."""
    rng = np.random.default_rng(7)
    n_control, degree, nv, K = 9, 3, 2, 4
    first, values = random_local_problem(rng, n_control=n_control, degree=degree, nv=nv, K=K)
    chain = SplineChain(first, values, n_control, nv)
    N = len(first)
    gs = rng.normal(size=(N, K, 3, nv))
    gs[:, 0] = gs[:, 1, 1] = gs[:, 2:, 2] = 0.0     # no order 0; term 1 no order 1, ...
    flat = gs.reshape(N * K, -1)
    assert np.array_equal(chain.gradient(gs), (chain_gradient_matrix(chain) @ flat).reshape(
        n_control, 3, nv))
    weights = np.array([0.7, 0.2, 1e-3])
    gross = np.zeros((N, K, nv))
    for i in range(3):
        gross += weights[i] * np.abs(gs[:, :, i])
    gradient, gross_gradient = chain.gradient(gs, weights=weights)
    assert np.array_equal(gradient, chain.gradient(gs))
    assert np.array_equal(gross_gradient, (abs(chain_gradient_matrix(chain))
                                           @ gross.reshape(N * K, nv)))
    orders = np.array([False, True, True, True])
    assert np.array_equal(chain.gradient(gs, orders=orders), chain.gradient(gs))
    orders[1] = False                               # a nonzero order skipped
    assert not np.array_equal(chain.gradient(gs, orders=orders), chain.gradient(gs))
    term_orders = np.any(gs != 0, axis=(0, 3))      # (K, T): the zero terms' orders skipped
    assert not term_orders.all()
    skipping = chain.gradient(gs, orders=term_orders, weights=weights)
    assert np.array_equal(skipping[0], gradient) and np.array_equal(skipping[1], gross_gradient)
    term_orders[1, 0] = False                       # a nonzero term's order skipped
    skipping = chain.gradient(gs, orders=term_orders, weights=weights)
    assert not np.array_equal(skipping[0], gradient)
    assert not np.array_equal(skipping[1], gross_gradient)
    assert np.array_equal(skipping[0][:, 1:], gradient[:, 1:])     # the other terms' columns


def scattered_hessian(chain, G, out):
    """sum_m B_m^T G_m B_m as SplineChain built it before its compiled loops (the
    reference): the samples put in their span's slots by fancy indexing, numpy's product
    per span, the products summed into the blocks by a sparse 0/1 matrix (scipy's CSR
    product: columns in ascending order, from +0) and the blocks added to the band by
    fancy indexing."""
    N, Kc = G.shape[:2]
    n_c, nv, n_local = chain.n_control, chain.nv, chain.values.shape[2]
    n_spans, u = len(chain.span_first), chain.layout.u
    flat = G.reshape(N, Kc * Kc, -1)
    padded = np.zeros((n_spans, chain._slots, Kc * Kc, flat.shape[2]))
    padded[chain._span, chain._slot] = flat
    Y = np.matmul(chain.span_weights(Kc), padded.reshape(n_spans, -1, flat.shape[2]))
    span, a, b = np.meshgrid(np.arange(n_spans), np.arange(n_local), np.arange(n_local),
                             indexing="ij")
    upper = (b >= a).ravel()
    rows = ((chain.span_first[span] + a) * n_local + b - a).ravel()[upper]
    scatter = sp.csr_array((np.ones(rows.size), (rows, np.flatnonzero(upper))),
                           shape=(n_c * n_local, span.size))
    blocks = scatter @ Y.reshape(-1, flat.shape[2])
    i, delta, j, k = np.meshgrid(np.arange(n_c), np.arange(n_local), np.arange(nv),
                                 np.arange(nv), indexing="ij")
    row, col = i * nv + j, (i + delta) * nv + k
    keep = (i + delta < n_c) & (row <= col)
    destination = (u + row - col)[keep] * (n_c * nv) + col[keep]
    out.reshape(-1)[destination] += blocks.reshape(-1)[np.flatnonzero(keep.ravel())]
    return out


@pytest.mark.parametrize("Kc", [3, 2])
def test_spline_chain_hessian_is_the_scattered_products_bit_for_bit(Kc):
    """SplineChain.hessian (samples into the span slots, span products summed, blocks added
    to the band: compiled loops) against the fancy-index and sparse scatters it replaced
    (:func:`scattered_hessian`): the same bits, added to a band given as ``out``, with a
    second stack C added entry by entry (G + C) and with G a strided view (the
    Gauss-Newton stack's); the samples' first control points unsorted, some spans with
    fewer samples than the slots (zero slots)."""
    rng = np.random.default_rng(11)
    n_control, degree, nv = 9, 3, 2
    first, values = random_local_problem(rng, n_samples=23, n_control=n_control,
                                         degree=degree, nv=nv, K=3)
    chain = SplineChain(first, values, n_control, nv)
    assert len(set(np.bincount(chain._span))) > 1
    G, C = rng.normal(size=(2, len(first), Kc, Kc, nv, nv))
    base = rng.normal(size=(chain.layout.u + 1, chain.layout.size))
    assert np.array_equal(chain.hessian(G, out=base.copy()),
                          scattered_hessian(chain, G, base.copy()))
    assert np.array_equal(chain.hessian(G, out=base.copy(), C=C),
                          scattered_hessian(chain, G + C, base.copy()))
    assert np.array_equal(chain.hessian(G), scattered_hessian(chain, G, np.zeros_like(base)))
    W = rng.normal(size=(len(first), Kc * nv, Kc * nv))     # read through a reordering view
    view = W.reshape(-1, Kc, nv, Kc, nv).transpose(0, 1, 3, 2, 4)
    assert np.array_equal(chain.hessian(view, out=base.copy(), C=C),
                          scattered_hessian(chain, np.ascontiguousarray(view) + C, base.copy()))
