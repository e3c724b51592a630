"""ioc.bspline: clamped B-spline bases, raw derivative stacks, double-double arithmetic (§9).

References: scipy.interpolate.BSpline; a naive Cox-de Boor recursion with the §9 derivative
formula written here (``naive_basis``, float or exact); exact rational arithmetic
(fractions.Fraction); Marsden's identity for polynomials. Tolerances are in units of
EPS = 2**-52 of the largest value compared, each with its reason.
"""
import functools
import re
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy.interpolate import BSpline

from ioc.bspline import (DD, ClampedBSpline, _dd_div, _derivative_values, clamped_knots, dd_add,
                         dd_add_floats, dd_mul, dd_sub)

EPS = np.finfo(np.float64).eps
T = 2.0
BASIS_TOL = 64 * EPS
"""Both sides run O(p^2) roundings on terms of size max|D^(r)| (observed <= 2 EPS)."""


def naive_basis(u, t):
    """b(i, d, r) = b^(r)_{i,d}(t) by the §9 recursions, memoised; u and t floats or Fractions.

    b_{i,0} = 1 on [u_i, u_{i+1}), the last non-empty span closed at t_e; 0/0 := 0;
    b^(r)_{i,d} = d [b^(r-1)_{i,d-1} / (u_{i+d} - u_i) - b^(r-1)_{i+1,d-1} / (u_{i+d+1} - u_{i+1})].
    """
    last = max(i for i in range(len(u) - 1) if u[i] < u[i + 1])

    def ratio(num, den):
        return num / den if den != 0 else 0

    @functools.cache
    def b(i, d, r):
        if d == 0:
            inside = u[i] <= t < u[i + 1] or (i == last and t == u[-1])
            return int(inside and r == 0)
        if r == 0:
            return (ratio(t - u[i], u[i + d] - u[i]) * b(i, d - 1, 0)
                    + ratio(u[i + d + 1] - t, u[i + d + 1] - u[i + 1]) * b(i + 1, d - 1, 0))
        return d * (ratio(b(i, d - 1, r - 1), u[i + d] - u[i])
                    - ratio(b(i + 1, d - 1, r - 1), u[i + d + 1] - u[i + 1]))
    return b


def nonuniform_knots(p, n_c, seed):
    """Clamped knots on [0, T] with random interior knots, one of them double when p >= 2."""
    interior = np.sort(np.random.default_rng(seed).uniform(0.05, 0.95, n_c - p - 1)) * T
    if p >= 2:
        interior[2] = interior[1]
    return np.concatenate([np.zeros(p + 1), interior, np.full(p + 1, T)])


def make_space(p, kind):
    n_c = p + 6
    return ClampedBSpline(p, n_c, T, None if kind == "uniform" else nonuniform_knots(p, n_c, p))


SPACES = [(p, kind) for p in range(1, 8) for kind in ("uniform", "nonuniform")]
SPACE_IDS = [f"p{p}-{kind}" for p, kind in SPACES]


def sample_times(space, n_random=12, seed=0):
    """0, T, every knot (right limits there) and random interior times."""
    random = np.random.default_rng(seed).uniform(0, T, n_random)
    return np.concatenate([[0.0, T], np.unique(space.knots), random])


def scipy_basis(space, t, r):
    """Dense (N, n_c) b^(r)_i(t_m) from scipy's BSpline with unit control points."""
    return BSpline(space.knots, np.eye(space.n_control), space.degree)(t, nu=r)


def max_error(actual, expected):
    """max |actual - expected| / max |expected| (1 where expected is all zero)."""
    return np.max(np.abs(actual - expected)) / max(np.max(np.abs(expected)), 1.0)


# --- basis functions ----------------------------------------------------------------------

@pytest.mark.parametrize("p, kind", SPACES, ids=SPACE_IDS)
def test_design_matrix_matches_scipy_bspline(p, kind):
    space = make_space(p, kind)
    t = sample_times(space)
    for r in range(p + 1):
        assert max_error(space.design_matrix(t, r).toarray(), scipy_basis(space, t, r)) \
            <= BASIS_TOL, f"r={r}"


@pytest.mark.parametrize("p, kind", SPACES, ids=SPACE_IDS)
def test_design_matrix_matches_naive_cox_de_boor(p, kind):
    space = make_space(p, kind)
    t = sample_times(space, n_random=6, seed=1)
    u = list(space.knots)
    naive = np.array([[[naive_basis(u, tm)(i, p, r) for i in range(space.n_control)]
                       for tm in t] for r in range(p + 1)], dtype=float)
    for r in range(p + 1):
        assert max_error(space.design_matrix(t, r).toarray(), naive[r]) <= BASIS_TOL, f"r={r}"


@pytest.mark.parametrize("p, kind", SPACES, ids=SPACE_IDS)
def test_partition_of_unity(p, kind):
    space = make_space(p, kind)
    t = sample_times(space)
    np.testing.assert_allclose(space.design_matrix(t).sum(axis=1), 1.0, rtol=0,
                               atol=8 * EPS)  # p + 1 non-negative terms (observed <= 2.5 EPS)
    for r in range(1, p + 1):
        D = space.design_matrix(t, r).toarray()
        assert np.max(np.abs(D.sum(axis=1))) <= BASIS_TOL * np.max(np.abs(D)), f"r={r}"


@pytest.mark.parametrize("p, kind", SPACES, ids=SPACE_IDS)
def test_local_basis_scattered_matches_scipy_and_design_matrix(p, kind):
    space = make_space(p, kind)
    t = sample_times(space)
    first, values = space.local_basis(t, p)
    assert first.dtype == np.int64 and values.shape == (t.size, p + 1, p + 1)
    span = first + p  # u_s <= t < u_{s+1}, t = T in the last non-empty span
    u = space.knots
    assert np.all((u[span] <= t) & ((t < u[span + 1]) | ((t == T) & (span == space.n_control - 1))))
    rows = np.arange(t.size)[:, None]
    for r in range(p + 1):
        scattered = np.zeros((t.size, space.n_control))
        scattered[rows, first[:, None] + np.arange(p + 1)] = values[:, r]
        assert max_error(scattered, scipy_basis(space, t, r)) <= BASIS_TOL, f"r={r}"
        np.testing.assert_array_equal(scattered, space.design_matrix(t, r).toarray())


def test_local_basis_first_index_at_the_ends():
    space = ClampedBSpline(3, 9, T)
    first, _ = space.local_basis([0.0, T], 1)
    np.testing.assert_array_equal(first, [0, space.n_control - space.degree - 1])


# --- trajectories -------------------------------------------------------------------------

@pytest.mark.parametrize("p, kind", SPACES, ids=SPACE_IDS)
def test_evaluate_matches_scipy_bspline(p, kind):
    space = make_space(p, kind)
    t = sample_times(space)
    theta = np.random.default_rng(p).normal(size=(space.n_control, 3)) * 10
    stack = space.evaluate(theta, t, p)
    assert stack.shape == (t.size, p + 1, 3)
    spline = BSpline(space.knots, theta, p)
    for r in range(p + 1):
        # random theta: little cancellation in scipy's float64 de Boor (observed <= 3 EPS)
        assert max_error(stack[:, r], spline(t, nu=r)) <= 64 * EPS, f"r={r}"
    np.testing.assert_array_equal(space.evaluate(theta[:, 1], t, p), stack[..., 1])
    np.testing.assert_array_equal(space.evaluate(DD.of(theta), t, p), stack)


@pytest.mark.parametrize("p, kind", SPACES, ids=SPACE_IDS)
def test_stack_evaluator_is_evaluate_bit_for_bit(p, kind):
    """The solvers' fixed-time evaluator computes the same derivative control points and
    the same products as ``evaluate``, in one sparse product: equal to the last bit, also
    for a DD theta with a nonzero lo part and one whose lo is not below hi's last bit
    (``evaluate`` renormalises it first, the evaluator does not need to)."""
    space = make_space(p, kind)
    t = sample_times(space)
    rng = np.random.default_rng(p)
    hi = rng.normal(size=(space.n_control, 3)) * 10
    for lo in (np.zeros_like(hi), rng.uniform(-0.5, 0.5, hi.shape) * np.spacing(hi),
               rng.normal(size=hi.shape) * 1e-3):
        theta = DD(hi, lo)
        for K in range(p + 1):
            np.testing.assert_array_equal(space.stack_evaluator(t, K)(theta),
                                          space.evaluate(theta, t, K))


@pytest.mark.parametrize("p, kind", SPACES[::3], ids=SPACE_IDS[::3])
def test_compiled_derivative_control_points_are_the_double_double_ones_bit_for_bit(p, kind):
    """The compiled differences (_derivative_values) leave c^(K) in their work arrays as a
    DD: hi and lo equal to derivative_control_points' (numpy) to the last bit, not only
    their rounded sums, for a normalised theta with a nonzero lo part."""
    space = make_space(p, kind)
    rng = np.random.default_rng(10 + p)
    hi = rng.normal(size=(space.n_control, 3)) * 10
    theta = DD(hi, rng.uniform(-0.5, 0.5, hi.shape) * np.spacing(hi))
    evaluator = space.stack_evaluator(sample_times(space), p)
    n_c = space.n_control
    values = np.empty(((p + 1) * n_c - p * (p + 1) // 2, 3))
    c_hi, c_lo = np.empty_like(hi), np.empty_like(hi)
    _derivative_values(theta.hi, theta.lo, *evaluator._scales, c_hi, c_lo, values)
    exact = space.derivative_control_points(theta, p)
    np.testing.assert_array_equal(c_hi[:n_c - p], exact.hi)
    np.testing.assert_array_equal(c_lo[:n_c - p], exact.lo)


@pytest.mark.parametrize("r", range(6))
def test_derivative_control_points_match_scipy_derivative(r):
    space = ClampedBSpline(5, 14, T)
    theta = np.random.default_rng(r).normal(size=(14, 2))
    c = space.derivative_control_points(theta, r)
    assert c.hi.shape == (14 - r, 2)
    expected = BSpline(space.knots, theta, 5).derivative(r).c[:14 - r]  # scipy pads with 0
    assert max_error(c.value(), expected) <= 16 * EPS  # scipy's float64 chain (observed <= 1 EPS)


def test_evaluate_with_changing_times_matches_a_fresh_space():
    """Kept bases are matched by value, survive the caller reusing its buffer, and more
    time grids than are kept still give the right stacks."""
    space = ClampedBSpline(4, 11, T)
    theta = np.random.default_rng(0).normal(size=(11, 2))
    grids = [np.linspace(0.1 * k, T, 7 + k) for k in range(6)]
    expected = [ClampedBSpline(4, 11, T).evaluate(theta, t, 3) for t in grids]
    buffer = np.empty(7)
    for k in [0, 1, 0, 2, 3, 4, 5, 0, 5, 1]:
        buffer = np.resize(buffer, grids[k].size)
        buffer[:] = grids[k]
        np.testing.assert_array_equal(space.evaluate(theta, buffer, 3), expected[k])


def exact_derivative(space, theta, t, r):
    """q^(r)(t) in Fractions by the naive §9 derivative recursion; theta: sequence of Fractions."""
    u = [Fraction(x) for x in space.knots]
    b = naive_basis(u, Fraction(t))
    p = space.degree
    return sum(theta[i] * b(i, p, r) for i in range(space.n_control) if u[i] <= t <= u[i + p + 1])


@pytest.mark.parametrize("with_lo", [False, True], ids=["float64", "dd"])
def test_jerk_with_cancellation_matches_exact_fractions_and_naive_does_not(with_lo):
    """theta_i = 1000 + 0.5 sin(pi xi_i) (Greville abscissae xi_i): D^(3) theta cancels ~7
    digits in float64, the double-double route keeps q''' to a few ulps of max|q'''|."""
    p, n_c = 5, 40
    space = ClampedBSpline(p, n_c, T)
    greville = np.array([space.knots[i + 1:i + p + 1].mean() for i in range(n_c)])
    hi = 1000 + 0.5 * np.sin(np.pi * greville)
    rng = np.random.default_rng(3)
    lo = rng.uniform(-0.25, 0.25, n_c) * np.spacing(hi) if with_lo else np.zeros(n_c)
    exact_theta = [Fraction(h) + Fraction(l) for h, l in zip(hi, lo)]
    t = np.concatenate([[0.0, T], space.knots[p + 1:n_c], rng.uniform(0, T, 10)])
    exact = [exact_derivative(space, exact_theta, tm, 3) for tm in t]
    scale = max(abs(x) for x in exact)

    def error(values):
        return float(max(abs(Fraction(v) - x) for v, x in zip(values, exact)) / scale)

    dd_error = error(space.evaluate(DD(hi, lo), t, 3)[:, 3])
    naive_error = error(space.design_matrix(t, 3) @ hi)
    tolerance = 4 * EPS  # rounding c''' to float64, then a 3-term non-negative basis sum
    assert dd_error <= tolerance
    assert naive_error >= 100 * tolerance, (dd_error, naive_error)


def elementary_symmetric(values):
    """[e_0, ..., e_n] of ``values`` (any number type): the coefficients of prod (1 + v x)."""
    e = [1] + [0] * len(values)
    for v in values:
        e = [e[0]] + [e[k] + v * e[k - 1] for k in range(1, len(e))]
    return e


def to_dd(fractions):
    """The DD nearest to each Fraction: hi = float(x), lo = float(x - hi)."""
    hi = np.array([float(x) for x in fractions])
    return DD(hi, np.array([float(x - Fraction(h)) for x, h in zip(fractions, hi)]))


def test_polynomial_reproduced_with_exact_marsden_control_points():
    """q(t) = 10 s^3 - 15 s^4 + 6 s^5, s = t/T, on knots with a double knot. Marsden's identity
    gives theta_i = sum_k a_k e_k(u_{i+1..i+p} / T) / C(p, k) exactly in Fractions; passed as
    a DD, every derivative comes out to a few ulps of the exact value."""
    p, n_c = 5, 12
    space = ClampedBSpline(p, n_c, T, nonuniform_knots(p, n_c, seed=7))
    a = [0, 0, 0, 10, -15, 6]
    s_knots = [Fraction(x) / Fraction(T) for x in space.knots]
    theta = [sum(Fraction(a[k] * e_k, comb(p, k)) for k, e_k in
                 enumerate(elementary_symmetric(s_knots[i + 1:i + p + 1]))) for i in range(n_c)]
    t = np.linspace(0, T, 31)
    stack = space.evaluate(to_dd(theta), t, p)
    poly = np.polynomial.Polynomial(a)
    for r in range(p + 1):
        derivative = poly.deriv(r)
        exact = [sum(Fraction(c) * (Fraction(tm) / Fraction(T)) ** k for k, c in
                     enumerate(derivative.coef)) / Fraction(T) ** r for tm in t]
        # c^(r) rounded to float64 and a non-negative basis sum; |c^(r)| <~ 2 max|q^(r)|
        assert max_error(stack[:, r], np.array([float(x) for x in exact])) <= 16 * EPS, f"r={r}"


def test_boundary_derivatives_are_the_clamped_end_values():
    space = ClampedBSpline(5, 12, T, nonuniform_knots(5, 12, seed=2))
    theta = np.random.default_rng(5).normal(size=(12, 3))
    start, end = space.boundary_derivatives(theta, 4)
    assert start.shape == end.shape == (5, 3)
    np.testing.assert_array_equal(start[0], theta[0])
    np.testing.assert_array_equal(end[0], theta[-1])
    u, p = space.knots, space.degree
    np.testing.assert_allclose(start[1], p / (u[p + 1] - u[1]) * (theta[1] - theta[0]),
                               rtol=4 * EPS)  # one difference, one scale: two roundings
    stack = space.evaluate(theta, [0.0, T], 4)
    # the basis at the clamped ends is (1, 0, ..., 0) and (0, ..., 0, 1): same c^(r)
    np.testing.assert_array_equal(start, stack[0])
    np.testing.assert_array_equal(end, stack[1])


# --- double-double arithmetic -------------------------------------------------------------

def random_dd(rng, n):
    """Normalised DDs with random signs, magnitudes 1e-20..1e20 and full lo parts."""
    hi = rng.choice([-1, 1], n) * 10.0 ** rng.uniform(-20, 20, n)
    lo = rng.uniform(-0.5, 0.5, n) * np.spacing(hi)
    return DD(hi, lo)


def as_fractions(x):
    return [Fraction(h) + Fraction(l) for h, l in zip(np.ravel(x.hi), np.ravel(x.lo))]


def assert_dd_close(result, exact):
    """Each value within 1e-30 |exact| (the double-word bounds are a few EPS**2 ~ 1e-32),
    and normalised: |lo| <= ulp(hi) / 2."""
    for value, x in zip(as_fractions(result), exact):
        assert abs(value - x) <= Fraction(1e-30) * abs(x)
    assert np.all(np.abs(result.lo) <= np.spacing(np.abs(result.hi)) / 2)


def dd_operands(seed):
    """(a, b) with b = random, and for half the entries b = -a (1 + tiny): heavy cancellation."""
    rng = np.random.default_rng(seed)
    a, b = random_dd(rng, 400), random_dd(rng, 400)
    near = -a.hi * (1 + rng.choice([1e-10, 1e-15, 0.0], 400))
    b_hi = np.where(np.arange(400) % 2 == 0, near, b.hi)
    return a, DD(b_hi, rng.uniform(-0.5, 0.5, 400) * np.spacing(b_hi))


def test_dd_add_and_sub_are_exact_to_1e30_against_fractions():
    a, b = dd_operands(0)
    fa, fb = as_fractions(a), as_fractions(b)
    assert_dd_close(dd_add(a, b), [x + y for x, y in zip(fa, fb)])
    assert_dd_close(dd_sub(a, b), [x - y for x, y in zip(fa, fb)])
    assert_dd_close(dd_add(a, b.hi), [x + Fraction(y) for x, y in zip(fa, b.hi)])


def test_compiled_dd_add_floats_is_dd_add_bit_for_bit_and_exact_against_fractions():
    """The solvers' step theta + dx in one compiled call: the same bits as dd_add (also
    for a lo part that is not below hi's last bit, which neither renormalises first), and
    within 1e-30 of the exact sum (Fractions) for normalised operands under cancellation;
    (n, nv) arrays as the solvers pass them, and a step on some rows only (dd_add of the
    step padded with zeros, bit for bit)."""
    a, b = dd_operands(2)
    fa = as_fractions(a)
    assert_dd_close(dd_add_floats(a, b.hi), [x + Fraction(y) for x, y in zip(fa, b.hi)])
    rough = DD(a.hi, a.hi * 1e-3)
    for x in (a, rough):
        for shape in ((400,), (100, 4)):
            x2, b2 = DD(x.hi.reshape(shape), x.lo.reshape(shape)), b.hi.reshape(shape)
            ours, reference = dd_add_floats(x2, b2), dd_add(x2, b2)
            assert np.array_equal(ours.hi, reference.hi)
            assert np.array_equal(ours.lo, reference.lo)
    rows = DD(a.hi.reshape(100, 4), a.lo.reshape(100, 4))
    padded = np.zeros((100, 4))
    padded[7:37] = b.hi.reshape(100, 4)[:30]
    ours, reference = dd_add_floats(rows, b.hi.reshape(100, 4)[:30], 7), dd_add(rows, padded)
    assert np.array_equal(ours.hi, reference.hi) and np.array_equal(ours.lo, reference.lo)
    with pytest.raises(ValueError, match="one shape"):
        dd_add_floats(rows, b.hi[:3])
    with pytest.raises(ValueError, match="from row 71"):
        dd_add_floats(rows, b.hi.reshape(100, 4)[:30], 71)


def test_dd_mul_and_div_are_exact_to_1e30_against_fractions():
    a, b = dd_operands(1)
    fa, fb = as_fractions(a), as_fractions(b)
    assert_dd_close(dd_mul(a, b.hi), [x * Fraction(y) for x, y in zip(fa, b.hi)])
    assert_dd_close(_dd_div(a, b), [x / y for x, y in zip(fa, fb)])


def test_dd_helpers_broadcast_and_round():
    x = DD.of(np.arange(3.0))
    assert dd_mul(x, 2.0).value().tolist() == [0.0, 2.0, 4.0]
    assert dd_add(x, np.ones((2, 1))).hi.shape == (2, 3)
    assert dd_add(1.0, DD(np.array(1e-20), np.array(0.0))).value() == 1.0


# --- validation ---------------------------------------------------------------------------

def test_clamped_knots_are_uniform_and_clamped():
    np.testing.assert_array_equal(clamped_knots(2, 4, 1.0), [0, 0, 0, 0.5, 1, 1, 1])
    assert clamped_knots(5, 50, 2.0)[-1] == 2.0


GOOD = np.array([0, 0, 0, 0.5, 1.0, 1.0, 1.0])  # degree 2, 4 control points, T = 1


@pytest.mark.parametrize("args, message", [
    ((0, 4, 1.0), "degree: expected an integer >= 1, got 0"),
    ((2.0, 4, 1.0), "degree: expected an integer >= 1, got 2.0"),
    ((3, 3, 1.0), "n_control: expected an integer >= 4, got 3"),
    ((2, 4, 0.0), "duration: expected a finite number > 0, got 0.0"),
    ((2, 4, float("nan")), "duration: expected a finite number > 0, got nan"),
    ((2, 4, 1.0, GOOD[:-1]), "knots: expected a real array of shape (7,)"),
    ((2, 4, 1.0, [0, 0, 0, 0.7, 0.5, 1, 1]), "knots: expected non-decreasing values"),
    ((2, 4, 1.0, [0, 0, 0, 0.5, 2.0, 2.0, 2.0]), "knots: expected the first 3 equal to 0"),
    ((2, 4, 1.0, [0, 0, 0.1, 0.5, 1, 1, 1]), "knots: expected the first 3 equal to 0"),
    ((2, 4, 1.0, [0, 0, 0, np.nan, 1, 1, 1]), "knots: expected finite values"),
    ((2, 4, 1.0, [0, 0, 0, 0, 1, 1, 1]), "knots: expected interior knots u[3:4] strictly"),
    ((1, 4, 1.0, [0, 0, 0.5, 0.5, 1, 1]), "knots: expected interior multiplicity <= degree"),
])
def test_constructor_rejects(args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        ClampedBSpline(*args)


@pytest.fixture(scope="module")
def quintic():
    return ClampedBSpline(5, 10, T)


@pytest.mark.parametrize("times, message", [
    ([0.0, T * (1 + 1e-9)], "times: expected values in [0, 2.0]"),
    ([-1e-6, 1.0], "times: expected values in [0, 2.0]"),
    ([0.0, np.nan], "times: expected finite values"),
    ([[0.0, 1.0]], "times: expected a real 1-D array, got float64 of shape (1, 2)"),
    (0.5, "times: expected a real 1-D array"),
])
def test_check_times_rejects(quintic, times, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        quintic.evaluate(np.zeros(10), times, 1)


def test_check_times_clips_round_off(quintic):
    t = quintic.check_times([-1e-13, T * (1 + 1e-13)])
    np.testing.assert_array_equal(t, [0.0, T])


def test_check_derivative_names_the_degree_it_needs(quintic):
    assert quintic.check_derivative(4) == 4
    with pytest.raises(ValueError, match=re.escape("torque rate needs q^(5), which a degree-5 "
                                                   "spline gives only as a piecewise constant "
                                                   "or zero; use degree >= 6")):
        quintic.check_derivative(5, "torque rate")
    with pytest.raises(ValueError, match=re.escape("use degree >= 8")):
        quintic.check_derivative(7)
    with pytest.raises(ValueError, match="expected a derivative order r >= 0, got -1"):
        quintic.check_derivative(-1)


@pytest.mark.parametrize("call, message", [
    (lambda s: s.evaluate(np.zeros((9, 2)), [0.5], 1),
     "theta: expected shape (10,) or (10, nv) with n_control = 10, got (9, 2)"),
    (lambda s: s.evaluate(np.zeros((10, 2, 1)), [0.5], 1), "theta: expected shape (10,)"),
    (lambda s: s.evaluate(DD(np.zeros((10, 2)), np.zeros(10)), [0.5], 1),
     "theta: expected lo of the shape of hi (10, 2), got (10,)"),
    (lambda s: s.evaluate(np.full(10, np.inf), [0.5], 1), "theta: expected finite values"),
    (lambda s: s.derivative_control_points(np.zeros((11, 1)), 1), "got (11, 1)"),
    (lambda s: s.evaluate(np.zeros(10), [0.5], 6),
     "max_derivative: expected an integer 0 .. degree = 5, got 6"),
    (lambda s: s.design_matrix([0.5], -1), "derivative: expected an integer 0 .. degree = 5"),
    (lambda s: s.local_basis([0.5], 2.0), "max_derivative: expected an integer 0 .. degree"),
])
def test_theta_and_orders_rejected(quintic, call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call(quintic)
