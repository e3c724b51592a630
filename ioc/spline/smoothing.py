"""A smoothing spline fit of sampled joint values (cmtm_math.md §9, ioc_calibration.md
"Fits"): :func:`fit_spline` fits a clamped B-spline to the samples by penalised least
squares (a P-spline) and picks the penalty weight per joint from a known noise level (UBRE,
Mallows' C_p) or by generalised cross-validation: the weights from data
(``ioc.inverse.estimate``) fit measured motions (``ioc.files.data``) with it.

=================  ======================  ===============  ================================
maths              code                    shape            meaning
=================  ======================  ===============  ================================
t_m, q_m           ``times``, ``q``        (N,), (N, nv)    samples (s; rad or m)
u, p               ``knots``, ``degree``   (n_c + p + 1,)   full clamped knot vector, degree
theta              ``control_points``      (n_c, nv)        spline control points
B                  ``B``                   (N, n_c) sparse  B_mi = b_{i,p}(t_m)
Z, phi             ``Z``                   (n_c, n_phi)     theta = Z phi (rest conditions)
P                  ``penalty_matrix``      (n_c, n_c)       int b^(d) b^(d)^T dt, d = order
lambda             ``smoothing``           (nv,)            penalty weight per joint
S_lambda           (not formed)            (N, N)           hat matrix, q_hat = S_lambda q
=================  ======================  ===============  ================================
"""
import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.interpolate import BSpline
from scipy.linalg import LinAlgError, cholesky, solve_triangular, svd
from scipy.optimize import minimize_scalar

import cmtm
from ioc._blas import single_threaded_blas
from ioc.spline.bspline import check_int

LAMBDA_SPAN = 1e12
"""The penalty weight is searched over [1e-12 / s_max^2, 1e12 / s_min^2], s the non-zero
singular values of the whitened penalty factor (below): at the low end every mode keeps a
fraction >= 1 - 1e-12 of its least-squares coefficient, at the high end every penalised
mode keeps <= 1e-12."""
GRID_PER_DECADE = 4
"""Coarse grid density in log10(lambda) before the 1-D root find / minimisation."""


class SplineFit(NamedTuple):
    """A penalised least-squares spline fit of sampled joint values.

    control_points : (n_c, nv) float64, unit of q (rad or m), full clamped layout
    fit_rms : (nv,) float64, RMS over the samples of spline(t_m) - q_m, unit of q
    smoothing : (nv,) float64, penalty weight lambda used for each joint
    method : "noise" (UBRE with the given sigma) or "gcv" (generalised cross-validation)
    """
    control_points: np.ndarray
    fit_rms: np.ndarray
    smoothing: np.ndarray
    method: str


class _Modes(NamedTuple):
    """The fit in Demmler-Reinsch form, shared by all lambdas and joints.

    With G = A^T A = R^T R (A = B Z) and Z^T P Z = E^T E, let E R^-1 = U diag(s) V^T. Then
    phi(lambda) = R^-1 V diag(1 / (1 + lambda s^2)) c with c = V^T R^-T A^T q, and since
    A R^-1 V has orthonormal columns:
        RSS(lambda) = RSS_0 + sum_i c_i^2 g_i^2,   N - tr S_lambda = N - n_phi + sum_i g_i,
    g_i = lambda s_i^2 / (1 + lambda s_i^2), RSS_0 the unpenalised least-squares residual.

    R : (n_phi, n_phi) upper Cholesky factor of G; V : (n_phi, n_phi);
    s2 : (n_phi,) s_i^2, exactly 0 for the penalty's null space; c : (n_phi, nv);
    rss0 : (nv,); n_samples : N.
    """
    R: np.ndarray
    V: np.ndarray
    s2: np.ndarray
    c: np.ndarray
    rss0: np.ndarray
    n_samples: int

    def shrink(self, lam):
        """g (..., n_phi) for lambdas of shape (...)."""
        x = np.asarray(lam)[..., None] * self.s2
        return x / (1.0 + x)

    def rss(self, g):
        """Residual sum of squares (..., nv) for shrink factors g (..., n_phi)."""
        return self.rss0 + (g * g) @ (self.c * self.c)

    def residual_dof(self, g):
        """N - tr S_lambda, (...), without cancellation."""
        return self.n_samples - self.s2.size + g.sum(axis=-1)

    def control_points(self, lam):
        """phi (n_phi, nv) for one lambda per joint, lam (nv,)."""
        return solve_triangular(self.R, self.V @ ((1.0 - self.shrink(lam).T) * self.c))


def penalty_matrix(knots, degree, order):
    """P (n_c, n_c) float64: P_ik = integral over [u_0, u_end] of b_i^(d)(t) b_k^(d)(t) dt,
    d = ``order``, unit s^(1 - 2d); theta^T P theta = integral of (q^(d))^2 dt.

    Exact (up to round-off): Gauss-Legendre with p - d + 1 nodes per knot span integrates
    the degree-2(p - d) products exactly.

    >>> u = np.r_[0, 0, 0, 1, 1, 1.0]; penalty_matrix(u, 2, 1)   # doctest: +NORMALIZE_WHITESPACE
    array([[ 1.33333333, -0.66666667, -0.66666667],
           [-0.66666667,  1.33333333, -0.66666667],
           [-0.66666667, -0.66666667,  1.33333333]])
    """
    knots, degree = _clamped_knots(knots, degree)
    order = _penalty_order(order, degree)
    factor = _penalty_factor(knots, degree, order)
    return factor.T @ factor


def _penalty_factor(knots, degree, order):
    """E (n_nodes, n_c) with E^T E = P: sqrt(w_k) b^(d)(x_k) at Gauss-Legendre nodes x_k."""
    nodes, weights = np.polynomial.legendre.leggauss(degree - order + 1)
    breaks = np.unique(knots)
    half = 0.5 * np.diff(breaks)[:, None]
    x = (half * nodes + (breaks[:-1, None] + half)).ravel()
    w = (half * weights).ravel()
    n_c = len(knots) - degree - 1
    basis_d = BSpline(knots, np.eye(n_c), degree)(x, nu=order)
    return np.sqrt(w)[:, None] * basis_d


def _clamped_knots(knots, degree):
    """Validated (knots float64 (n_c + p + 1,), degree int) of a clamped spline."""
    if isinstance(degree, bool) or not isinstance(degree, (int, np.integer)) or degree < 1:
        raise ValueError(f"degree: expected an integer >= 1, got {degree!r}")
    u = np.asarray(knots, dtype=np.float64)
    p = int(degree)
    if u.ndim != 1 or u.size < 2 * p + 2 or not np.all(np.isfinite(u)) \
            or np.any(np.diff(u) < 0):
        raise ValueError(f"knots: expected a finite non-decreasing vector of length >= "
                         f"{2 * p + 2} (degree {p}), got {np.array2string(u, threshold=12)}")
    clamped = (np.all(u[:p + 1] == u[0]) and np.all(u[-p - 1:] == u[-1])
               and u[p + 1] > u[0] and u[-p - 2] < u[-1])
    if not clamped:
        raise ValueError(f"knots: expected exactly {p + 1} equal knots at each end (clamped, "
                         f"degree {p}) and t_start < t_end, got "
                         f"{np.array2string(u, threshold=12)}")
    return u, p


def _penalty_order(order, degree):
    """Validated penalty derivative order d, 1 <= d < p."""
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) \
            or not 1 <= order < degree:
        raise ValueError(f"penalty_order: expected an integer with 1 <= penalty_order < "
                         f"degree = {degree}, got {order!r}")
    return int(order)


def rest_map(n_control, rest_order):
    """Z (n_c, n_c - 2R) sparse 0-1: theta = Z phi makes the first R + 1 control points
    equal and the last R + 1 equal, so q^(1..R) = 0 at both ends of a clamped spline."""
    n_phi = n_control - 2 * rest_order
    cols = np.clip(np.arange(n_control) - rest_order, 0, n_phi - 1)
    return sp.csr_array((np.ones(n_control), (np.arange(n_control), cols)),
                        shape=(n_control, n_phi))


@single_threaded_blas
def fit_spline(knots, degree, times, q, *, noise=None, rest_order=0, penalty_order=4):
    """Fit a clamped B-spline to samples by penalised least squares (a P-spline).

    For each joint, theta = Z phi minimises
        sum_m (B theta - q)_m^2 + lambda theta^T P theta,    P = penalty_matrix(knots, p, d),
    with Z = rest_map(n_c, R): the fitted spline has q^(1..R)(t_start) = q^(1..R)(t_end) = 0
    exactly (R = ``rest_order`` <= p).

    knots : (n_c + p + 1,) full clamped knot vector (s); degree : p
    times : (N,) s, inside [knots[0], knots[-1]], N >= n_c - 2R
    q : (N, nv) samples (rad or m)
    noise : None, or the noise standard deviation sigma > 0 (unit of q), one or (nv,)
    penalty_order : d, 1 <= d < p (default 4: the snap)

    lambda per joint:
    - ``noise`` given (method "noise"): minimise UBRE(lambda) = RSS + 2 sigma^2 tr S_lambda
      (Mallows' C_p), an unbiased estimate of the prediction error for a known sigma. (The
      discrepancy principle RSS = sigma^2 (N - tr S) was tried first: the sampling spread of
      RSS, ~sigma^2 sqrt(2N), exceeds what smoothing changes, so its root tracks the noise
      draw: mean error to the truth 0.38 sigma against 0.23 for UBRE over 200 seeds.)
    - no ``noise`` (method "gcv"): minimise GCV(lambda) = N RSS / (N - tr S_lambda)^2.
    Both by a coarse grid in log lambda, then scipy's bounded minimize_scalar around the
    grid minimum.
    The search interval is [1e-12 / s_max^2, 1e12 / s_min^2] (``LAMBDA_SPAN``).

    All lambdas and joints share one Cholesky factorisation of B^T B (in phi) and one SVD
    of the whitened penalty factor (the Demmler-Reinsch basis, :class:`_Modes`); the SVD
    resolves the penalty's null space to round-off of s, not of s^2. BLAS runs on one
    thread: OpenBLAS's factorisations of 200 control points differ by ~5e-11 between one
    and two threads, and the result must not depend on the process it runs in (ioc.commands.batch).

    Returns :class:`SplineFit` with control points in the full (n_c, nv) layout.
    """
    knots, p = _clamped_knots(knots, degree)
    d = _penalty_order(penalty_order, p)
    n_c = len(knots) - p - 1
    check_fit_size(n_c, p, d)
    R = _rest_order(rest_order, p, n_c)
    times, q = _samples(times, q, knots)
    sigma = None if noise is None else _noise(noise, q.shape[1])
    Z = rest_map(n_c, R)
    if len(times) < Z.shape[1]:
        raise ValueError(f"too few samples for the spline: expected at least {Z.shape[1]} "
                         f"(free control points), got {len(times)}")
    B = BSpline.design_matrix(times, knots, p)
    modes = _modes(B @ Z, _penalty_factor(knots, p, d) @ Z, q)
    lam = _gcv_lambda(modes) if sigma is None else _ubre_lambda(modes, sigma)
    theta = Z @ modes.control_points(lam)
    rms = np.sqrt(np.mean((B @ theta - q) ** 2, axis=0))
    return SplineFit(theta, rms, lam, "gcv" if sigma is None else "noise")


def check_fit_size(n_control, degree, penalty_order=4):
    """ValueError unless the dense matrices of a smoothing fit (the penalty factor, B^T B
    and the SVD: about 8 (2 (p - d + 1) + 3) n_c^2 bytes) fit in the engine's memory
    budget (cmtm.memory_budget)."""
    n_c = check_int("control_points", n_control, 1)
    p = check_int("degree", degree, 1)
    unit = 8 * (2 * max(p - penalty_order + 1, 1) + 3)
    most = math.isqrt(cmtm.memory_budget() // unit)
    if n_c > most:
        raise ValueError(f"control_points: expected at most {most} for a smoothing fit "
                         f"within the memory budget (cmtm.memory_budget(), "
                         f"${cmtm.api.MEMORY_BUDGET_VARIABLE}), got {n_c}")


def _rest_order(rest_order, degree, n_control):
    """Validated R: 0 <= R <= p and 2 (R + 1) <= n_c."""
    top = min(degree, n_control // 2 - 1)
    if isinstance(rest_order, bool) or not isinstance(rest_order, (int, np.integer)) \
            or not 0 <= rest_order <= top:
        raise ValueError(f"rest_order: expected an integer 0 <= R <= {top} (R <= degree and "
                         f"2 (R + 1) <= n_c = {n_control}), got {rest_order!r}")
    return int(rest_order)


def _samples(times, q, knots):
    """Validated times (N,) inside the knot interval and q (N, nv), finite float64."""
    t = np.asarray(times, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if t.ndim != 1 or q.ndim != 2 or q.shape[0] != t.size or q.shape[1] < 1:
        raise ValueError(f"times, q: expected shapes (N,) and (N, nv), got {t.shape} and "
                         f"{q.shape}")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(q))):
        raise ValueError("times, q: expected finite values, got NaN or inf")
    if t.size and (t.min() < knots[0] or t.max() > knots[-1]):
        raise ValueError(f"times: expected values inside the knot interval [{knots[0]}, "
                         f"{knots[-1]}], got [{t.min()}, {t.max()}]")
    return t, q


def _noise(noise, nv):
    """sigma (nv,) > 0 from one value or one per joint."""
    sigma = np.asarray(noise, dtype=np.float64)
    if sigma.ndim > 1 or sigma.size not in (1, nv) or not np.all(np.isfinite(sigma)) \
            or np.any(sigma <= 0):
        raise ValueError(f"noise: expected one positive finite sigma or {nv} (one per "
                         f"joint), got {noise!r}")
    return np.broadcast_to(sigma.ravel(), (nv,))


def _modes(A, E, q):
    """The Demmler-Reinsch form (:class:`_Modes`) of the penalised fit.

    A : (N, n_phi) sparse design matrix in phi; E : (n_nodes, n_phi) penalty factor in phi;
    q : (N, nv).
    """
    G = (A.T @ A).toarray()
    try:
        R = cholesky(G)
    except LinAlgError:
        R = None
    if R is None or np.any(np.diag(R) ** 2 <= 1e-12 * np.diag(G)):
        raise ValueError("times: expected samples that determine every control point (each "
                         "knot span needs samples), got a singular B^T B")
    y = solve_triangular(R, A.T @ q, trans="T")
    phi_ls = solve_triangular(R, y)
    rss0 = np.sum((q - A @ phi_ls) ** 2, axis=0)
    F = solve_triangular(R, E.T, trans="T").T
    _, s, Vt = svd(F, full_matrices=F.shape[0] < F.shape[1])
    s = np.r_[s, np.zeros(Vt.shape[0] - s.size)]
    s[s <= max(F.shape) * np.finfo(float).eps * s.max(initial=0.0)] = 0.0
    return _Modes(R, Vt.T, s * s, Vt @ y, rss0, A.shape[0])


def _log_lambda_grid(modes):
    """(low, high, grid) of log(lambda) covering every penalised mode (``LAMBDA_SPAN``);
    None when the penalty vanishes on the whole fit space."""
    s2 = modes.s2[modes.s2 > 0]
    if s2.size == 0:
        return None
    low, high = np.log(1.0 / (LAMBDA_SPAN * s2.max())), np.log(LAMBDA_SPAN / s2.min())
    n = int(np.ceil((high - low) / np.log(10) * GRID_PER_DECADE)) + 1
    return low, high, np.linspace(low, high, n)


def _gcv_lambda(modes):
    """lambda (nv,) minimising GCV = N RSS / (N - tr S)^2 per joint."""
    def gcv(g):
        return modes.n_samples * modes.rss(g) / modes.residual_dof(g)[..., None] ** 2
    return _minimise_criterion(modes, gcv)


def _ubre_lambda(modes, sigma):
    """lambda (nv,) minimising UBRE = RSS + 2 sigma^2 tr S per joint (Mallows' C_p: an
    unbiased estimate of the prediction error up to a constant, for a known sigma)."""
    def ubre(g):
        trace = modes.n_samples - modes.residual_dof(g)
        return modes.rss(g) + 2.0 * sigma ** 2 * trace[..., None]
    return _minimise_criterion(modes, ubre)


def _minimise_criterion(modes, criterion):
    """lambda (nv,) minimising criterion(g) (..., nv) over log lambda per joint: a coarse
    grid over the search interval, then a bounded 1-D minimisation around its minimum."""
    nv = modes.c.shape[1]
    span = _log_lambda_grid(modes)
    if span is None:
        return np.zeros(nv)
    low, high, grid = span

    def at(log_lam, j=slice(None)):
        return criterion(modes.shrink(np.exp(log_lam)))[..., j]

    table = at(grid)
    out = np.empty(nv)
    for j in range(nv):
        k = int(np.argmin(table[:, j]))
        bounds = (grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)])
        best = minimize_scalar(lambda x: float(at(x, j)), bounds=bounds, method="bounded",
                               options={"xatol": 1e-8})
        out[j] = best.x if best.fun <= table[k, j] else grid[k]
    return np.exp(out)
