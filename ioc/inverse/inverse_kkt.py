"""Inverse KKT: the cost weights that make a motion stationary (cmtm_math.md §10; Englert,
Vien & Toussaint's inverse KKT; ioc_calibration.md).

At an optimum of min_x sum_i w_i c_i(x) s.t. g(x) = 0, A x <= b the KKT conditions read
C^T w + G^T lambda + H_act^T mu = 0 with mu >= 0, where C (n_terms, n_free) stacks the
sub-cost gradients. The estimate solves

    min ||C^T w + G^T lambda + H_act^T mu||  s.t.  w >= 0, sum(w) = 1, mu >= 0,

with lambda eliminated by the projector P = E - G^T (G G^T)^+ G (equality constraints enforced
by penalties need nothing more: at a penalty optimum their gradient lies in range(G^T)).
Following the calibration, the problem is **row-scaled** (each projected gradient and each
active-limit row divided by its norm, so that the spectrum reads on a fixed scale) and solved
by the SVD (the right singular vector of the smallest singular value, when it has one sign)
or by NNLS with the normalisation as a heavily weighted row, never by eig(C C^T), which
squares the conditioning, nor by SLSQP.

Identifiability: with the multipliers projected out too, the row-scaled gradients' singular
values sigma_1 <= sigma_2 <= ... must show one (near) null direction, the weights, and no
second: the weights are called identifiable when sigma_2 >= IDENTIFIABILITY_GAP and
sigma_1 <= IDENTIFIABILITY_GAP * sigma_2. A term whose gradient vanishes on the motion has
an undetermined weight (reported as 0 and undetermined).
"""
from dataclasses import dataclass, field
from numbers import Real

import numpy as np
from scipy.optimize import nnls

from ioc._blas import single_threaded_blas
from ioc.optimize.direct import _Limits
from ioc.optimize.problem import check_problem, check_theta

IDENTIFIABILITY_GAP = 1e-3
"""Row-scaled rows have unit norm, so singular values lie in [0, sqrt(n_terms)]; a second
singular value below 1e-3 means a second combination of weights is stationary to within
0.1 % of a term's gradient."""

ZERO_GRADIENT = 1e-12
"""A projected term gradient below this fraction of the largest one counts as zero."""


@dataclass
class KKTResult:
    """Weights recovered by :func:`recover_weights`.

    weights (n_terms,) sum 1; multipliers: list of dicts (time, joint, bound, value) of the
    active limits; residual_abs / residual_rel: |C^T w + ...| and that over
    max_i |w_i P grad c_i|; spectrum: row-scaled singular values, ascending; identifiable;
    undetermined: list of {"direction": {name: coefficient}, "singular_value": s} for the
    weight combinations the motion does not determine; terms: name, weight, raw, weighted.
    """
    weights: np.ndarray
    names: tuple
    residual_abs: float
    residual_rel: float
    spectrum: np.ndarray
    identifiable: bool
    method: str
    terms: list
    multipliers: list = field(default_factory=list)
    undetermined: list = field(default_factory=list)


def constraint_rows(problem, theta, tolerance=1e-9):
    """(G over the free variables or None, active-limit rows H_act (signed so that the KKT
    condition reads + H^T mu, mu >= 0), their descriptions)."""
    G = _boundary_rows(problem) if problem.constraints == "penalty" else None
    limits = _Limits(problem, theta)
    active = limits.active(tolerance) if problem.constraints == "exact" else np.zeros(0, int)
    H = limits.A[active].toarray() if len(active) else np.zeros((0, problem.n_free))
    return G, H, [limits.describe(k, 0.0, problem) for k in active]


def _boundary_rows(problem):
    """d/dtheta of the boundary conditions q^(r)(0), q^(r)(T), r = 0..R, all joints."""
    nv, R = problem.model.nv, problem.rest_order
    first, values = problem.spline.local_basis(np.array([0.0, problem.spline.duration]), R)
    rows = []
    for end in range(2):
        for r in range(R + 1):
            for j in range(nv):
                row = np.zeros((problem.spline.n_control, nv))
                row[first[end]:first[end] + values.shape[2], j] = values[end, r]
                rows.append(row.ravel()[problem.free_slice])
    return np.array(rows)


def _projector(G, n):
    """P = E - G^T (G G^T)^+ G as a function applied to the rows of a matrix."""
    if G is None or len(G) == 0:
        return lambda M: M
    Q, s, _ = np.linalg.svd(G.T, full_matrices=False)
    Q = Q[:, s > s[0] * 1e-12]
    return lambda M: M - (M @ Q) @ Q.T


@single_threaded_blas
def recover_weights(problem, theta, tolerance=1e-9):
    """Inverse KKT on a motion given as control points ``theta`` (DD, or an (n_c, nv)
    array) of ``problem``; ``tolerance`` (finite, >= 0) decides which joint limits are
    active."""
    check_problem(problem)
    theta = check_theta(problem, theta)
    if isinstance(tolerance, bool) or not isinstance(tolerance, Real) \
            or not np.isfinite(tolerance) or tolerance < 0:
        raise ValueError(f"tolerance: expected a finite number >= 0, got {tolerance!r}")
    ev = problem.evaluate(theta, np.ones(len(problem.terms)))
    free = problem.free_slice
    C = ev.grads.reshape(len(problem.terms), -1)[:, free]
    G, H, described = constraint_rows(problem, theta, tolerance)
    project = _projector(G, C.shape[1])
    PC, PH = project(C), project(H)
    scale_C = np.linalg.norm(PC, axis=1)
    zero = scale_C <= ZERO_GRADIENT * max(float(np.max(scale_C)), 1e-300)
    if zero.all():
        raise ValueError(f"theta: expected a motion on which some cost has a gradient, got "
                         f"one where every projected cost gradient vanishes (largest "
                         f"{float(np.max(scale_C)):.3g}): any weights make it optimal")
    w_scaled, mu_scaled, method = _solve_scaled(PC[~zero] / scale_C[~zero, None],
                                                _unit_rows(PH), 1.0 / scale_C[~zero])
    weights = np.zeros(len(C))
    weights[~zero] = w_scaled / scale_C[~zero]
    norm = weights.sum()
    weights /= norm
    mu = mu_scaled / np.maximum(np.linalg.norm(PH, axis=1), 1e-300) / norm if len(PH) else mu_scaled
    residual = PC.T @ weights + (PH.T @ mu if len(PH) else 0.0)
    term_scale = max(float(np.max(np.abs(weights) * scale_C)), 1e-300)
    spectrum, directions = _weight_spectrum(PC, PH, scale_C, zero)
    identifiable = bool(not zero.any() and len(spectrum) >= 2
                        and spectrum[1] >= IDENTIFIABILITY_GAP
                        and spectrum[0] <= IDENTIFIABILITY_GAP * spectrum[1]) \
        or bool(len(spectrum) == 1 and not zero.any())
    names = tuple(t.name for t in problem.terms)
    undetermined = _undetermined(names, spectrum, directions, zero)
    terms = [{"name": n, "weight": float(w), "raw": float(c), "weighted": float(w * c)}
             for n, w, c in zip(names, weights, ev.costs)]
    multipliers = [dict(d, value=float(m)) for d, m in zip(described, mu)]
    return KKTResult(weights=weights, names=names, residual_abs=float(np.linalg.norm(residual)),
                     residual_rel=float(np.linalg.norm(residual)) / term_scale,
                     spectrum=spectrum, identifiable=identifiable, method=method, terms=terms,
                     multipliers=multipliers, undetermined=undetermined)


def _unit_rows(M):
    norms = np.linalg.norm(M, axis=1)
    return M / np.maximum(norms, 1e-300)[:, None] if len(M) else M


def _solve_scaled(Cs, Hs, inverse_scale):
    """min |Cs^T v + Hs^T u| over v >= 0, u >= 0, inverse_scale . v = 1 (row-scaled
    weights v_i = w_i |P c_i|): the SVD's null vector when it has one sign and there are no
    active limits, else NNLS with the normalisation as a weighted extra row."""
    A = np.vstack([Cs, Hs]).T
    m = len(Cs)
    if len(Hs) == 0 and m:
        _, s, Vt = np.linalg.svd(A, full_matrices=False)
        v = Vt[-1] * np.sign(Vt[-1] @ inverse_scale or 1.0)
        if np.all(v >= -1e-12 * np.max(np.abs(v))):
            v = np.maximum(v, 0.0)
            return v / (inverse_scale @ v), np.zeros(0), "svd"
    rho = 1e3 * max(np.linalg.norm(A, 2), 1.0)
    c = np.concatenate([inverse_scale, np.zeros(len(Hs))])
    z, _ = nnls(np.vstack([A, rho * c]), np.concatenate([np.zeros(A.shape[0]), [rho]]),
                maxiter=100 * A.shape[1])
    z = z / (c @ z)
    return z[:m], z[m:], "nnls"


def _weight_spectrum(PC, PH, scale_C, zero):
    """Singular values (ascending) of the row-scaled term gradients with the active-limit
    rows projected out, and the matching right singular vectors in unscaled weights."""
    rows = PC[~zero] / scale_C[~zero, None]
    if len(PH):
        Q, s, _ = np.linalg.svd(PH.T, full_matrices=False)
        Q = Q[:, s > s[0] * 1e-10]
        rows = rows - (rows @ Q) @ Q.T
    if not len(rows):
        return np.zeros(0), np.zeros((0, 0))
    _, s, Vt = np.linalg.svd(rows.T, full_matrices=False)
    order = np.argsort(s)
    directions = Vt[order] / scale_C[~zero][None, :]
    return s[order], directions


def _undetermined(names, spectrum, directions, zero):
    """Weight combinations the motion leaves free: every singular direction after the
    first whose singular value is below the gap, and every zero-gradient term."""
    kept = [n for n, z in zip(names, zero) if not z]
    out = []
    for s, d in zip(spectrum[1:], directions[1:]):
        if s < IDENTIFIABILITY_GAP:
            d = d / np.max(np.abs(d))
            out.append({"direction": {n: float(x) for n, x in zip(kept, d)},
                        "singular_value": float(s)})
    for n, z in zip(names, zero):
        if z:
            out.append({"direction": {n: 1.0}, "singular_value": 0.0})
    return out
