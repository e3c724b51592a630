"""Clamped B-spline joint trajectories and their raw derivative stacks (cmtm_math.md §9).

A joint trajectory is q_j(t) = sum_i b_{i,p}(t) theta[i, j] on [0, T]. The optimizer needs
q, q', ..., q^(K) at sample times to full float64 accuracy. With knot spacing h the entries
of D^(r) grow like 1/h^r, so the naive product ``D^(r) @ theta`` cancels and loses about
log10(|theta| / (h^r |q^(r)|)) digits (~7 for theta ~ 1e3, h ~ 0.05, r = 3). This module
avoids that by the derivative-control-point route of §9: q^(r) is the degree-(p-r) spline on
the knots u[r:len(u)-r] with control points

    c^(0) = theta,   c^(l+1)_i = (p - l) / (u_{i+p+1} - u_{i+l+1}) * (c^(l)_{i+1} - c^(l)_i),

computed in double-double arithmetic (a pair hi + lo of float64 arrays; the scale factors
from exact knot differences and a double-double division) and rounded to float64 only at the
end, so the error is eps * |c^(r)|. The degree-(p-r) basis is non-negative and sums to one,
so evaluating it adds no cancellation.

Symbols (cmtm_math.md §9; raw derivatives throughout):

=================================  ======================================  =====================
maths                              code                                    shape
=================================  ======================================  =====================
p (degree)                         ``degree``                              int
n_c (number of control points)     ``n_control``                           int
[t_s, t_e] = [0, T]                ``duration``                            float
u_0 .. u_{n_c+p} (clamped knots)   ``knots``                               (n_c+p+1,)
theta_{j,i} (control points)       ``theta[i, j]``                         (n_c, nv)
b_{i,p}(t_m)                       ``design_matrix(times)``                (N, n_c) sparse
D^(k), entries b^(k)_{i,p}(t_m)    ``design_matrix(times, k)``             (N, n_c) sparse
b^(r)_{first_m+a,p}(t_m)           ``local_basis(times, K)[1][m, r, a]``   (N, K+1, p+1)
c^(r) (derivative control points)  ``derivative_control_points(theta, r)`` (n_c-r, nv) DD
q^(r)(t_m)                         ``evaluate(theta, times, K)[m, r]``     (N, K+1, nv)
=================================  ======================================  =====================

Note the order of theta's axes: §9 writes theta_{j,i} (joint j, control point i) and stacks
joints first for the chain rule; here ``theta[i, j]`` has the control points on the rows.

Double-double (DD) arithmetic: Knuth's two-sum and Dekker's two-product with Veltkamp's
splitting give exact float64 error terms; the sums and products below are the "accurate"
double-word algorithms, with relative errors of a few u**2 (u = 2**-53, u**2 ~ 1.2e-32),
also under cancellation; a test checks each against exact Fractions to 1e-30. The primitives
are plain Python on numpy arrays, and the same source compiles into the kernels that take
the solvers' steps (``numba.extending.register_jitable``: one definition, the same
operations in both). Veltkamp's split overflows for |x| > ~1e300 and the error terms
underflow below ~1e-290; trajectories are far from both.
"""
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from numba.extending import register_jitable
from scipy import sparse

from cmtm._jit import jit_kernel
from ioc.spline.banded import static_sizes

_VELTKAMP = 134217729.0  # 2**27 + 1: splits a float64 into two 26-bit halves
_CACHED_TIME_GRIDS = 4  # quadrature nodes, limit nodes, the two ends, and one spare


class DD(NamedTuple):
    """A double-double array: the value is hi + lo exactly, with |lo| <= ulp(hi) / 2.

    hi, lo : float64 arrays of one shape (or broadcastable).

    >>> DD.of(np.array([1.0, 2.0])).value()
    array([1., 2.])
    """
    hi: np.ndarray
    lo: np.ndarray

    @classmethod
    def of(cls, x):
        """The DD (x, 0) of a float64 array ``x``."""
        x = np.asarray(x, dtype=np.float64)
        return cls(x, np.zeros(x.shape))

    def value(self):
        """hi + lo rounded to float64."""
        return self.hi + self.lo


# --- exact error-free transformations -----------------------------------------------------

@register_jitable
def _two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e = a + b exactly (Knuth), any magnitudes."""
    s = a + b
    b_virtual = s - a
    return s, (a - (s - b_virtual)) + (b - b_virtual)


@register_jitable
def _fast_two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e = a + b exactly, given |a| >= |b| (Dekker)."""
    s = a + b
    return s, b - (s - a)


@register_jitable
def _split(a):
    """(high, low) halves of 26 bits with high + low = a exactly (Veltkamp)."""
    scaled = _VELTKAMP * a
    high = scaled - (scaled - a)
    return high, a - high


@register_jitable
def _two_prod(a, b):
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (Dekker)."""
    p = a * b
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def _as_dd(x):
    """A DD of float64 arrays from a DD or anything ``np.asarray`` makes float64."""
    if isinstance(x, DD):
        return DD(np.asarray(x.hi, dtype=np.float64), np.asarray(x.lo, dtype=np.float64))
    return DD.of(x)


# --- double-double arithmetic ------------------------------------------------------------

def dd_add(a, b):
    """a + b for DD or float64 arrays (broadcasting) -> DD; relative error <= 3 u**2 of
    |a + b| (u = 2**-53), also under cancellation: the accurate double-word sum, i.e. exact
    two-sums of the hi and of the lo parts, then two renormalisations."""
    a, b = _as_dd(a), _as_dd(b)
    return DD(*_add_parts(a.hi, a.lo, b.hi, b.lo))


@register_jitable
def _add_parts(a_hi, a_lo, b_hi, b_lo):
    """:func:`dd_add` on the float64 parts, returns (hi, lo)."""
    s_hi, s_lo = _two_sum(a_hi, b_hi)
    t_hi, t_lo = _two_sum(a_lo, b_lo)
    v_hi, v_lo = _fast_two_sum(s_hi, s_lo + t_hi)
    return _fast_two_sum(v_hi, t_lo + v_lo)


def dd_sub(a, b):
    """a - b for DD or float64 arrays (broadcasting) -> DD, as ``dd_add(a, -b)``."""
    b = _as_dd(b)
    return dd_add(a, DD(-b.hi, -b.lo))


def dd_add_floats(a, b, first_row=0):
    """a + b for a DD ``a`` of float64 arrays and a float64 array ``b`` of its shape, or of
    its rows first_row .. first_row + len(b) - 1 (the others gain +0) -> DD: :func:`dd_add`
    of b padded with zeros (the same bits) in one compiled call (:func:`_dd_add_floats`),
    for the solvers' steps theta + dx on the free rows (~20 numpy operations otherwise)."""
    hi, lo = np.ascontiguousarray(a.hi, np.float64), np.ascontiguousarray(a.lo, np.float64)
    b = np.ascontiguousarray(b, np.float64)
    if hi.shape != lo.shape or hi.ndim == 0 or b.shape[1:] != hi.shape[1:] \
            or not 0 <= first_row <= len(hi) - len(b):
        raise ValueError(f"dd_add_floats: expected arrays of one shape, or rows of it from "
                         f"row {first_row}, got {hi.shape}, {lo.shape} and {b.shape}")
    out = DD(np.empty(hi.shape), np.empty(hi.shape))
    row_size = hi[0].size
    _dd_add_floats(hi.reshape(-1), lo.reshape(-1), b.reshape(-1), first_row * row_size,
                   out.hi.reshape(-1), out.lo.reshape(-1))
    return out


def dd_mul(a, c):
    """a * c for a DD ``a`` and a float64 array ``c`` (broadcasting) -> DD.

    The leading product a.hi * c is exact (two-product); adding a.lo * c and renormalising
    leaves a relative error <= 2 u**2 (u = 2**-53).
    """
    c = np.asarray(c, dtype=np.float64)
    return _dd_mul_dd(_as_dd(a), DD(c, np.zeros(())))


def _dd_mul_dd(a, b):
    """a * b for two DDs -> DD: exact a.hi * b.hi plus the first-order cross terms; the
    dropped a.lo * b.lo and the roundings leave a relative error of a few u**2."""
    return DD(*_mul_parts(a.hi, a.lo, b.hi, b.lo))


@register_jitable
def _mul_parts(a_hi, a_lo, b_hi, b_lo):
    """:func:`_dd_mul_dd` on the float64 parts, returns (hi, lo)."""
    p_hi, p_lo = _two_prod(a_hi, b_hi)
    t_hi, t_lo = _fast_two_sum(p_hi, a_hi * b_lo + a_lo * b_hi)
    return _fast_two_sum(t_hi, t_lo + p_lo)


def _dd_div(a, b):
    """a / b for two DDs with b.hi != 0 -> DD: q1 = a.hi / b.hi corrected by the DD residual
    (a - q1 b) / b.hi; relative error of a few u**2."""
    q1 = a.hi / b.hi
    residual = dd_sub(a, _dd_mul_dd(b, DD.of(q1)))
    return DD(*_fast_two_sum(q1, residual.hi / b.hi))


# --- validation ---------------------------------------------------------------------------

def check_int(name, value, lowest):
    """``value`` as an int if it is an integer >= lowest, else ValueError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral) or value < lowest:
        raise ValueError(f"{name}: expected an integer >= {lowest}, got {value!r}")
    return int(value)


def _check_space(degree, n_control, duration):
    """(p, n_c, T) validated: p >= 1, n_c >= p + 1, T finite and > 0."""
    p = check_int("degree", degree, 1)
    n_c = check_int("n_control", n_control, p + 1)
    if isinstance(duration, (bool, np.bool_)) or not isinstance(duration, Real) \
            or not np.isfinite(duration) or duration <= 0:
        raise ValueError(f"duration: expected a finite number > 0, got {duration!r}")
    return p, n_c, float(duration)


def _check_knots(knots, p, n_c, T):
    """The full clamped knot vector (n_c+p+1,) float64, or ValueError "knots: expected ..."."""
    u = np.asarray(knots)
    if u.dtype.kind not in "iuf" or u.shape != (n_c + p + 1,):
        raise ValueError(f"knots: expected a real array of shape ({n_c + p + 1},) = "
                         f"n_control + degree + 1, got {u.dtype} of shape {u.shape}")
    u = u.astype(np.float64)
    if not np.all(np.isfinite(u)):
        raise ValueError(f"knots: expected finite values, got {u[~np.isfinite(u)]}")
    if np.any(np.diff(u) < 0):
        where = int(np.argmax(np.diff(u) < 0))
        raise ValueError(f"knots: expected non-decreasing values, got u[{where}] = {u[where]} "
                         f"> u[{where + 1}] = {u[where + 1]}")
    if np.any(u[:p + 1] != 0) or np.any(u[n_c:] != T):
        raise ValueError(f"knots: expected the first {p + 1} equal to 0 and the last {p + 1} "
                         f"equal to duration = {T}, got {u[:p + 1]} and {u[n_c:]}")
    interior = u[p + 1:n_c]
    if np.any(interior <= 0) or np.any(interior >= T):
        raise ValueError(f"knots: expected interior knots u[{p + 1}:{n_c}] strictly inside "
                         f"(0, {T}), got {interior}")
    values, counts = np.unique(interior, return_counts=True)
    if np.any(counts > p):
        raise ValueError(f"knots: expected interior multiplicity <= degree = {p}, got "
                         f"{counts.max()} copies of {values[np.argmax(counts)]}")
    return u


def clamped_knots(degree, n_control, duration):
    """Clamped knots with uniform interior knots (cmtm_math.md §9): p + 1 zeros,
    u_{p+k} = k T / (n_c - p) for k = 1 .. n_c - p - 1, and p + 1 copies of T.

    Returns (n_c + p + 1,) float64. Example: ``clamped_knots(2, 4, 1.0)`` is
    [0, 0, 0, 0.5, 1, 1, 1].
    """
    p, n_c, T = _check_space(degree, n_control, duration)
    n_spans = n_c - p
    interior = T * np.arange(1, n_spans) / n_spans
    return np.concatenate([np.zeros(p + 1), interior, np.full(p + 1, T)])


def _ratio(num, den):
    """num / den elementwise with 0 where den == 0 (the 0/0 := 0 convention of §9)."""
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)


def _banded_rows(first, values, n_columns):
    """csr_array (N, n_columns) with row m holding values[m, a] at column first[m] + a;
    first : (N,) int, values : (N, w) float64 (w stored entries per row, zeros included)."""
    n, width = values.shape
    columns = first[:, None] + np.arange(width)
    return sparse.csr_array((values.ravel(), columns.ravel(), np.arange(0, n * width + 1, width)),
                            shape=(n, n_columns))


# --- the spline space ---------------------------------------------------------------------

class ClampedBSpline:
    """Clamped B-spline space of degree p with n_c control points on [0, T] (cmtm_math §9).

    degree : int >= 1; n_control : int >= degree + 1; duration : T, finite > 0;
    knots : optional full knot vector (n_c + p + 1,); uniform interior knots by default.
    Attributes ``degree``, ``n_control``, ``duration`` and ``knots`` (a read-only array).

    >>> space = ClampedBSpline(5, 10, 2.0)
    >>> space.evaluate(np.arange(10.0), [0.0, 2.0], 1).shape      # (N, K+1), theta (n_c,)
    (2, 2)
    """

    def __init__(self, degree, n_control, duration, knots=None):
        p, n_c, T = _check_space(degree, n_control, duration)
        u = clamped_knots(p, n_c, T) if knots is None else _check_knots(knots, p, n_c, T)
        u.setflags(write=False)
        self.degree, self.n_control, self.duration, self.knots = p, n_c, T, u
        self._scales = [self._difference_scales(l) for l in range(p)]
        self._sample_cache = []  # [(times, first, bases, matrices)], most recent first

    def __repr__(self):
        return (f"ClampedBSpline(degree={self.degree}, n_control={self.n_control}, "
                f"duration={self.duration})")

    def _difference_scales(self, l):
        """DD factors (p - l) / (u_{i+p+1} - u_{i+l+1}), i = 0 .. n_c - l - 2, of the step
        c^(l) -> c^(l+1); 0 where the knot difference is 0 (those basis functions vanish)."""
        u, p = self.knots, self.degree
        i = np.arange(self.n_control - l - 1)
        gap = DD(*_two_sum(u[i + p + 1], -u[i + l + 1]))  # exact knot difference
        empty = gap.hi == 0
        scale = _dd_div(DD.of(np.full(i.shape, float(p - l))),
                        DD(np.where(empty, 1.0, gap.hi), gap.lo))
        return DD(np.where(empty, 0.0, scale.hi), np.where(empty, 0.0, scale.lo))

    # --- validation -----------------------------------------------------------------------

    def check_derivative(self, r, what="a cost"):
        """r as an int if 0 <= r < degree; q^(p) is piecewise constant and higher orders vanish,
        so a cost on q^(r) needs degree >= r + 1 (§9 "Continuity")."""
        if isinstance(r, (bool, np.bool_)) or not isinstance(r, Integral) or r < 0:
            raise ValueError(f"{what}: expected a derivative order r >= 0, got {r!r}")
        if r >= self.degree:
            raise ValueError(f"{what} needs q^({r}), which a degree-{self.degree} spline gives "
                             f"only as a piecewise constant or zero; use degree >= {r + 1}")
        return int(r)

    def _check_order(self, name, r):
        """r as an int if 0 <= r <= degree, else ValueError."""
        if isinstance(r, (bool, np.bool_)) or not isinstance(r, Integral) \
                or not 0 <= r <= self.degree:
            raise ValueError(f"{name}: expected an integer 0 .. degree = {self.degree}, "
                             f"got {r!r}")
        return int(r)

    def check_times(self, times):
        """Sample times as a new (N,) float64 array in [0, T]; values within 1e-12 T outside
        are clipped, anything else (not 1-D, not real, NaN/inf, outside) is a ValueError."""
        t = np.asarray(times)
        if t.dtype.kind not in "iuf" or t.ndim != 1:
            raise ValueError(f"times: expected a real 1-D array, got {t.dtype} of shape "
                             f"{t.shape}")
        t = t.astype(np.float64)
        if not np.all(np.isfinite(t)):
            raise ValueError(f"times: expected finite values, got {t[~np.isfinite(t)]}")
        slack = 1e-12 * self.duration
        if t.size and (t.min() < -slack or t.max() > self.duration + slack):
            raise ValueError(f"times: expected values in [0, {self.duration}], got "
                             f"[{t.min()}, {t.max()}]")
        return np.clip(t, 0.0, self.duration)

    def _as_theta(self, theta):
        """Control points as a renormalised DD of shape (n_c,) or (n_c, nv), or ValueError."""
        hi, lo = (np.asarray(x) for x in (theta if isinstance(theta, DD) else (theta, 0.0)))
        if hi.dtype.kind not in "iuf" or lo.dtype.kind not in "iuf":
            raise ValueError(f"theta: expected real float arrays, got {hi.dtype} / {lo.dtype}")
        n_c = self.n_control
        if hi.ndim not in (1, 2) or hi.shape[0] != n_c:
            raise ValueError(f"theta: expected shape ({n_c},) or ({n_c}, nv) with "
                             f"n_control = {n_c}, got {hi.shape}")
        if isinstance(theta, DD) and lo.shape != hi.shape:
            raise ValueError(f"theta: expected lo of the shape of hi {hi.shape}, got {lo.shape}")
        hi, lo = hi.astype(np.float64), np.broadcast_to(lo, hi.shape).astype(np.float64)
        if not (np.all(np.isfinite(hi)) and np.all(np.isfinite(lo))):
            raise ValueError("theta: expected finite values, got NaN or inf")
        return DD(*_two_sum(hi, lo))

    # --- basis functions ------------------------------------------------------------------

    def _first_index(self, t):
        """first = s - p for the span u_s <= t < u_{s+1} (t = T in the last non-empty span),
        clipped to 0 .. n_c - p - 1; t: (N,) checked times -> (N,) int64."""
        p = self.degree
        span = np.searchsorted(self.knots, t, side="right") - 1
        return np.clip(span, p, self.n_control - 1).astype(np.int64) - p

    def _cox_de_boor_step(self, t, span, lower):
        """Degree-d values b_{s-d+a,d}(t), a = 0..d, (N, d+1), from the degree-(d-1) values
        ``lower`` (N, d) by the §9 recursion (all terms non-negative on the span s)

            b_{i,d} = (t - u_i) / (u_{i+d} - u_i) b_{i,d-1}
                      + (u_{i+d+1} - t) / (u_{i+d+1} - u_{i+1}) b_{i+1,d-1}.
        """
        u, d = self.knots, lower.shape[1]
        i = span[:, None] - d + np.arange(d + 1)
        padded = np.pad(lower, ((0, 0), (1, 1)))  # b_{i,d-1} = padded[:, a], b_{i+1,d-1} = [a+1]
        rising = _ratio(t[:, None] - u[i], u[i + d] - u[i])
        falling = _ratio(u[i + d + 1] - t[:, None], u[i + d + 1] - u[i + 1])
        return rising * padded[:, :-1] + falling * padded[:, 1:]

    def _sample_bases(self, times, max_derivative):
        """(first, bases, matrices) at checked ``times``, for r = 0..max_derivative:
        bases[r] (N, p-r+1) holds the degree-(p-r) values b_{first+r+a, p-r}(t_m) of the knots
        u, which are b_{first+a, p-r} of the knots u[r:len(u)-r] (all non-negative), and
        matrices[r] is the same as a csr_array (N, n_c - r), ready to multiply c^(r).

        The last few distinct time arrays and their bases are kept (read-only copies) and
        reused on equal times: an optimizer samples the same few time grids every iteration.
        """
        t = self.check_times(times)
        hit = next((entry for entry in self._sample_cache
                    if entry[0].shape == t.shape and np.array_equal(entry[0], t)), None)
        if hit is None:
            hit = (t, *self._bases_at(t))
        self._sample_cache = [hit] + [e for e in self._sample_cache if e is not hit]
        del self._sample_cache[_CACHED_TIME_GRIDS:]
        _, first, bases, matrices = hit
        return first, bases[:max_derivative + 1], matrices[:max_derivative + 1]

    def _bases_at(self, t):
        """(first, bases, matrices) of ``_sample_bases`` for all r = 0..p, read-only."""
        p, first = self.degree, self._first_index(t)
        bases = [np.ones((t.size, 1))]
        for _ in range(p):
            bases.append(self._cox_de_boor_step(t, first + p, bases[-1]))
        bases = bases[::-1]
        matrices = [_banded_rows(first, b, self.n_control - r) for r, b in enumerate(bases)]
        for array in (t, first, *bases):
            array.setflags(write=False)
        return first, bases, matrices

    def local_basis(self, times, max_derivative):
        """Nonzero basis values and derivatives at each sample (§9 D^(r), row by row).

        times : (N,) in [0, T]; max_derivative : K in 0..degree.
        Returns first : (N,) int64, the first control point whose basis is nonzero at t_m
        (span index - p), and values : (N, K+1, p+1) float64 with
        values[m, r, a] = b^(r)_{first[m]+a,p}(t_m) = d q^(r)(t_m) / d theta[first[m]+a];
        every other basis function vanishes at t_m.

        The derivative rows follow §9's control-point route applied to the unit vectors:
        the local differences of e_first..e_{first+p}, scaled as in c^(l+1), weighted by the
        degree-(p-r) basis.
        """
        K = self._check_order("max_derivative", max_derivative)
        first, bases, _ = self._sample_bases(times, K)
        p = self.degree
        values = np.empty((first.size, K + 1, p + 1))
        coefficients = np.broadcast_to(np.eye(p + 1), (first.size, p + 1, p + 1))
        for r in range(K + 1):
            if r:
                scale = self._scales[r - 1].hi[first[:, None] + np.arange(p + 1 - r)]
                coefficients = scale[:, :, None] * np.diff(coefficients, axis=1)
            values[:, r] = np.einsum("ma,mab->mb", bases[r], coefficients)
        return first.copy(), values

    def design_matrix(self, times, derivative=0):
        """D^(r) of §9 as a scipy.sparse.csr_array (N, n_c): entries b^(r)_{i,p}(t_m), with
        p + 1 stored entries per row; derivative r in 0..degree (r = p is piecewise constant)."""
        r = self._check_order("derivative", derivative)
        first, values = self.local_basis(times, r)
        return _banded_rows(first, values[:, r], self.n_control)

    # --- trajectories ---------------------------------------------------------------------

    def derivative_control_points(self, theta, r):
        """c^(r) of §9 in double-double: c^(0) = theta and
        c^(l+1)_i = (p-l) / (u_{i+p+1} - u_{i+l+1}) * (c^(l)_{i+1} - c^(l)_i).

        theta : DD or float64, (n_c, nv) or (n_c,); r : 0..degree.
        Returns a DD of shape (n_c - r, nv) or (n_c - r,): the control points of q^(r), a
        degree-(p-r) spline on the knots u[r:len(u)-r].
        """
        r = self._check_order("r", r)
        c = self._as_theta(theta)
        for l in range(r):
            c = self._difference_step(c, l)
        return c

    def _difference_step(self, c, l):
        """c^(l) -> c^(l+1) in double-double (one step of ``derivative_control_points``)."""
        scale = self._scales[l]
        trailing = (slice(None),) + (None,) * (c.hi.ndim - 1)
        difference = _add_parts(c.hi[1:], c.lo[1:], -c.hi[:-1], -c.lo[:-1])
        return DD(*_mul_parts(*difference, scale.hi[trailing], scale.lo[trailing]))

    def evaluate(self, theta, times, max_derivative):
        """Raw derivative stack q^(r)(t_m), r = 0..K, by the derivative-control-point route.

        theta : DD or float64, (n_c, nv) or (n_c,); times : (N,) in [0, T];
        max_derivative : K in 0..degree.
        Returns (N, K+1, nv) float64 raw derivatives ((N, K+1) for theta of shape (n_c,)),
        q^(r)(t_m) = sum_a b_{first+r+a, p-r}(t_m) c^(r)_{first+a} with c^(r) rounded from
        double-double: error ~ eps * max|c^(r)|, free of the 1/h^r cancellation of D^(r) theta.
        """
        K = self._check_order("max_derivative", max_derivative)
        c = self._as_theta(theta)
        _, _, matrices = self._sample_bases(times, K)
        out = np.empty((matrices[0].shape[0], K + 1) + c.hi.shape[1:])
        for r in range(K + 1):
            if r:
                c = self._difference_step(c, r - 1)
            out[:, r] = matrices[r] @ c.value()
        return out

    def stack_evaluator(self, times, max_derivative):
        """A :class:`StackEvaluator`: ``evaluate(theta, times, max_derivative)`` at these
        fixed times, for solver loops (checked here once, not at every call)."""
        K = self._check_order("max_derivative", max_derivative)
        return StackEvaluator(self, *self._sample_bases(times, K)[:2])

    def boundary_derivatives(self, theta, max_derivative):
        """(start, end) = (q^(r)(0), q^(r)(T)) for r = 0..K, each (K+1, nv) float64 raw
        derivatives ((K+1,) for theta (n_c,)).

        The derivative spline of order r is clamped on u[r:len(u)-r], so (§9 "Clamped boundary
        values") q^(r)(0) = c^(r)_0 and q^(r)(T) = c^(r)_{n_c-r-1}; e.g. q(0) = theta_0 and
        q'(0) = p / (u_{p+1} - u_1) (theta_1 - theta_0).
        """
        K = self._check_order("max_derivative", max_derivative)
        c = self._as_theta(theta)
        start, end = [c.value()[0]], [c.value()[-1]]
        for l in range(K):
            c = self._difference_step(c, l)
            start.append(c.value()[0])
            end.append(c.value()[-1])
        return np.array(start), np.array(end)


class StackEvaluator:
    """q^(r)(t_m), r = 0..K, at fixed times from double-double control points, as
    :meth:`ClampedBSpline.evaluate` computes them (the same derivative control points
    c^(r), rounded, times the degree-(p-r) bases), in one compiled call
    (:func:`_stack_values`) and without the checks of the times and of theta: ``theta``
    must be a DD of float64 (n_c, nv) arrays (as the solvers keep them). Measured on the
    paper's 200 samples, K = 3, 3 joints (min of repeated calls on a shared machine): ~145
    -> ~100 us a call with one sparse product for all orders, ~94 -> ~30 us with the
    compiled differences; the products compiled with them (no scipy dispatch): 12.3 ->
    11.1 us warm, and in bench_peers' case (a) right after a pass over 64 MB 33 -> 27 us.

    spline : ClampedBSpline; first (N,) and bases [(N, p-r+1) for r = 0..K] (its
    ``_sample_bases``)."""

    def __init__(self, spline, first, bases):
        self.spline, self.K = spline, len(bases) - 1
        self.first = np.ascontiguousarray(first, dtype=np.int64)
        self.bases = np.zeros((len(first), self.K + 1, spline.degree + 1))
        for r, b in enumerate(bases):
            self.bases[:, r, :b.shape[1]] = b
        n_c = spline.n_control
        self._scales = [np.zeros((self.K, n_c - 1)) for _ in range(2)]
        for l in range(self.K):
            for part, scale in zip(self._scales, spline._scales[l]):
                part[l, :n_c - l - 1] = scale

    def __call__(self, theta):
        """(N, K+1, nv) raw derivatives at the times from the DD ``theta`` (n_c, nv)."""
        hi, lo = np.ascontiguousarray(theta.hi), np.ascontiguousarray(theta.lo)
        n_c, nv = hi.shape
        values = np.empty(((self.K + 1) * n_c - self.K * (self.K + 1) // 2, nv))
        out = np.empty((len(self.first), self.K + 1, nv))
        _stack_values(hi, lo, *self._scales, np.empty(hi.shape), np.empty(hi.shape), values,
                      self.first, self.bases, out,
                      static_sizes(self.K + 1, self.bases.shape[2], nv))
        return out


@jit_kernel
def _stack_values(hi, lo, scale_hi, scale_lo, c_hi, c_lo, values, first, bases, out, sizes):
    """out[m, r] = sum_a bases[m, r, a] c^(r)_(first[m] + a), a = 0..p-r, summed from +0
    in the order of a: the products of ``evaluate``'s sparse rows, the same bits (scipy's
    CSR product sums a row's stored entries so), c^(r) the rounded derivative control
    points of the DD (hi, lo) that :func:`_derivative_values` stacks in ``values``
    (:class:`StackEvaluator`); bases (N, K+1, p+1), out (N, K+1, nv); ``sizes``
    (:func:`static_sizes`): K+1, p+1 and nv as constants of the compiled form (constant
    trip counts: 10.0 -> 6.6 us a call on bench_peers' case (a))."""
    _derivative_values(hi, lo, scale_hi, scale_lo, c_hi, c_lo, values)
    orders, n_local, nv = len(sizes[0]), len(sizes[1]), len(sizes[2])
    n_c = hi.shape[0]
    for m in range(first.size):
        row = first[m]                      # c^(r)_first[m] in values
        for r in range(orders):
            for j in range(nv):
                total = 0.0
                for a in range(n_local - r):
                    total += bases[m, r, a] * values[row + a, j]
                out[m, r, j] = total
            row += n_c - r


@jit_kernel
def _derivative_values(hi, lo, scale_hi, scale_lo, c_hi, c_lo, out):
    """The rounded derivative control points c^(0), ..., c^(K) of the DD (hi, lo)
    (n_c, nv), their rows stacked in ``out`` (sum_r (n_c - r), nv), by the steps of
    :meth:`ClampedBSpline._difference_step` with the same float64 operations in the same
    order (the same bits; unrenormalised hi + lo as there): c^(l+1)_i =
    scale_l,i * (c^(l)_(i+1) - c^(l)_i). scale_hi / scale_lo (K, n_c - 1): row l the
    factors of step l; c_hi / c_lo (n_c, nv): work arrays, overwritten in place (row i of
    c^(l+1) needs rows i and i + 1 of c^(l) only)."""
    n_c, nv = hi.shape
    for i in range(n_c):
        for j in range(nv):
            c_hi[i, j], c_lo[i, j] = hi[i, j], lo[i, j]
            out[i, j] = hi[i, j] + lo[i, j]
    row, n = n_c, n_c
    for l in range(scale_hi.shape[0]):
        n -= 1
        for i in range(n):
            for j in range(nv):
                d_hi, d_lo = _add_parts(c_hi[i + 1, j], c_lo[i + 1, j], -c_hi[i, j],
                                        -c_lo[i, j])
                c_hi[i, j], c_lo[i, j] = _mul_parts(d_hi, d_lo, scale_hi[l, i], scale_lo[l, i])
                out[row + i, j] = c_hi[i, j] + c_lo[i, j]
        row += n


@jit_kernel
def _dd_add_floats(a_hi, a_lo, b, first, out_hi, out_lo):
    """out = a + b' for the DD (a_hi, a_lo) and the float64 b' = b at first .. first +
    b.size - 1, +0 elsewhere, 1-D: dd_add's operations (the same bits)."""
    for k in range(a_hi.size):
        x = b[k - first] if first <= k < first + b.size else 0.0
        out_hi[k], out_lo[k] = _add_parts(a_hi[k], a_lo[k], x, 0.0)
