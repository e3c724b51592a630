"""ioc.data: motion file readers against the values written, and the P-spline fit against
independent references (scipy quad, dense normal equations, numpy polyfit, scipy BSpline
derivatives)."""
import re

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.interpolate import BSpline

from ioc.data import MotionData, fit_spline, penalty_matrix, read_motion

JOINTS = ("hip", "knee")


def clamped_knots(n_control, degree, duration, interior=None):
    """Full clamped knot vector, uniform interior knots unless given."""
    if interior is None:
        interior = np.linspace(0.0, duration, n_control - degree + 1)[1:-1]
    return np.r_[np.zeros(degree + 1), interior, np.full(degree + 1, duration)]


def minimum_jerk(t, duration=2.0, start=1.57, goal=-1.57):
    """The quintic minimum-jerk motion start -> goal with zero end velocity and acceleration."""
    s = t / duration
    return start + (goal - start) * (10 * s**3 - 15 * s**4 + 6 * s**5)


def spline_values(knots, degree, control_points, t, nu=0):
    """q^(nu)(t) (len(t), nv) of the fitted spline, by scipy's BSpline."""
    return BSpline(knots, control_points, degree)(t, nu=nu)


# --- Readers ------------------------------------------------------------------------------

DATA = np.array([[0.00, 10.0, -20.0],
                 [0.01, 12.5, -19.0],
                 [0.02, 15.0, -17.25]])      # time, hip, knee


def write_csv(path, labels, rows):
    lines = [",".join(labels)] + [",".join(repr(float(v)) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_storage(path, labels, rows, header=("inDegrees=yes",), sep="\t"):
    lines = ["demo", "version=1", f"nRows={len(rows)}", f"nColumns={len(labels)}", *header,
             "endheader", sep.join(labels)]
    lines += [sep.join(repr(float(v)) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_csv_in_degrees_with_extra_columns_gives_radians_in_model_order(tmp_path):
    extra = np.c_[DATA[:, 0], [1.0, 2, 3], DATA[:, 2], DATA[:, 1], [0.5, 0.6, 0.7]]
    path = write_csv(tmp_path / "walk.csv", ["time", "foo", "knee", "hip", "pelvis_tx"], extra)
    motion = read_motion(path, JOINTS, degrees=True)
    assert isinstance(motion, MotionData)
    assert np.array_equal(motion.times, DATA[:, 0])
    assert np.array_equal(motion.q, np.deg2rad(DATA[:, 1:]))
    assert motion.joint_names == JOINTS and motion.source == str(path)
    assert motion.notices == ("ignored columns: foo, pelvis_tx",)


def test_csv_defaults_to_radians_and_skips_blank_lines(tmp_path):
    path = write_csv(tmp_path / "a.csv", ["time", *JOINTS], DATA)
    path.write_text("\n  \n" + path.read_text().replace("\n", "\n\n", 1))
    motion = read_motion(path, JOINTS)
    assert np.array_equal(motion.q, DATA[:, 1:]) and motion.notices == ()


def test_mot_with_tabs_and_indegrees_yes_gives_radians(tmp_path):
    path = write_storage(tmp_path / "walk.mot", ["time", *JOINTS], DATA)
    assert np.array_equal(read_motion(path, JOINTS).q, np.deg2rad(DATA[:, 1:]))


def test_sto_with_spaces_and_indegrees_no_keeps_radians(tmp_path):
    path = write_storage(tmp_path / "walk.sto", ["time", "knee", "hip"], DATA[:, [0, 2, 1]],
                         header=("inDegrees=no",), sep="   ")
    assert np.array_equal(read_motion(path, JOINTS).q, DATA[:, 1:])


def test_storage_without_unit_line_is_radians_unless_degrees_true(tmp_path):
    path = write_storage(tmp_path / "walk.mot", ["time", *JOINTS], DATA, header=())
    assert np.array_equal(read_motion(path, JOINTS).q, DATA[:, 1:])
    assert np.array_equal(read_motion(path, JOINTS, degrees=True).q, np.deg2rad(DATA[:, 1:]))


def test_csv_and_mot_of_the_same_data_agree(tmp_path):
    rng = np.random.default_rng(3)
    rows = np.c_[np.arange(50) * 0.01, rng.uniform(-180, 180, (50, 2))]
    from_csv = read_motion(write_csv(tmp_path / "m.csv", ["time", *JOINTS], rows), JOINTS,
                           degrees=True)
    from_mot = read_motion(write_storage(tmp_path / "m.mot", ["time", *JOINTS], rows), JOINTS)
    # repr() round-trips floats, so both files hold the same numbers: the same arrays
    assert np.max(np.abs(from_csv.q - from_mot.q)) <= 1e-15
    assert np.array_equal(from_csv.times, from_mot.times)


CSV_HEADER = "time,hip,knee\n"
BAD_FILES = [
    ("m.txt", CSV_HEADER + "0,1,2\n", {}, r"expected a file ending in \.csv, \.mot, \.sto, "
                                          r"got '\.txt'"),
    ("m.csv", "", {}, r"expected a header and data rows, got an empty file"),
    ("m.csv", CSV_HEADER, {}, r"expected data rows after the header, got none"),
    ("m.csv", "t,hip,knee\n0,1,2\n1,1,2\n", {}, r"expected a 'time' column, got columns t, "
                                                r"hip, knee"),
    ("m.csv", "time,hip\n0,1\n1,2\n", {}, r"expected a column for every joint, missing knee"),
    ("m.csv", "time,x\n0,1\n1,2\n", {}, r"missing hip, knee"),
    ("m.csv", CSV_HEADER + "0,1,2\n0.1,abc,2\n", {}, r"line 3, column 'hip': expected a "
                                                     r"number, got 'abc'"),
    ("m.csv", CSV_HEADER + "0,1,2\n0.1,1,nan\n", {}, r"line 3, column 'knee': expected a "
                                                     r"finite number, got 'nan'"),
    ("m.csv", CSV_HEADER + "0,1,2\ninf,1,2\n", {}, r"line 3, column 'time': expected a finite "
                                                   r"number, got 'inf'"),
    ("m.csv", CSV_HEADER + "0,1,2\n0.1,1,2\n0.1,1,2\n", {},
     r"expected strictly increasing time, got 0\.1 on line 4 after 0\.1 on line 3"),
    ("m.csv", CSV_HEADER + "0.2,1,2\n0.1,1,2\n", {}, r"got 0\.1 on line 3 after 0\.2 on line 2"),
    ("m.csv", CSV_HEADER + "0,1,2\n0.1,1\n", {}, r"line 3: expected 3 fields as in the header, "
                                                 r"got 2"),
    ("m.csv", CSV_HEADER + "0,1,2\n", {}, r"expected at least 2 data rows, got 1"),
    ("m.csv", "time,hip,hip,knee\n0,1,1,2\n1,1,1,2\n", {}, r"expected one column 'hip' "
                                                           r"\(a joint\), got 2"),
    ("m.csv", "time,time,hip,knee\n0,0,1,2\n1,1,1,2\n", {}, r"expected one column 'time' "
                                                            r"\(the time\), got 2"),
    ("m.csv", 'time,hip,knee\n0,"1,2\n' + "1,1,2\n" * 30000, {},
     r"line \d+: expected CSV, got field larger than field limit \(131072\); an unclosed "),
    ("m.csv", ",,,\n,,,\n", {}, r"expected a header row of column labels, got none"),
    ("m.mot", "inDegrees=yes\nendheader\ntime\thip\tknee\n0\t1\t2\n1\t1\t2\n",
     {"degrees": False}, r"degrees=False contradicts the header line inDegrees=yes"),
    ("m.mot", "inDegrees=no\nendheader\ntime hip knee\n0 1 2\n1 1 2\n",
     {"degrees": True}, r"degrees=True contradicts the header line inDegrees=no"),
    ("m.mot", "inDegrees=maybe\nendheader\ntime hip knee\n0 1 2\n1 1 2\n", {},
     r"inDegrees: expected yes or no, got 'maybe'"),
    ("m.mot", "inDegrees=no\ntime hip knee\n0 1 2\n1 1 2\n", {},
     r"expected a header ending with a line 'endheader', found no such line"),
    ("m.sto", "inDegrees=no\nendheader\n\n", {}, r"expected a line of column labels after "
                                                 r"'endheader', got the end of the file"),
    ("m.sto", "endheader\ntime hip knee\n", {}, r"expected data rows after the header, got none"),
    ("m.sto", "endheader\ntime hip knee\n0 1 2\n0.5 x 2\n", {}, r"line 4, column 'hip': "
                                                                r"expected a number, got 'x'"),
]


@pytest.mark.parametrize("name, text, kwargs, message", BAD_FILES,
                         ids=[m[:40] for *_, m in BAD_FILES])
def test_bad_file_raises_value_error_naming_file_expected_and_found(tmp_path, name, text,
                                                                    kwargs, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(str(path)) + ": .*" + message):
        read_motion(path, JOINTS, **kwargs)


def test_binary_file_raises_value_error(tmp_path):
    path = tmp_path / "m.csv"
    path.write_bytes(b"time,hip,knee\n\xff\xfe,1,2\n")
    with pytest.raises(ValueError, match=re.escape(str(path)) + ": expected a UTF-8 text"):
        read_motion(path, JOINTS)


def test_missing_file_raises_value_error(tmp_path):
    path = tmp_path / "absent.csv"
    with pytest.raises(ValueError, match=re.escape(str(path)) + ": expected an existing "
                                                                "motion file, found none"):
        read_motion(path, JOINTS)


@pytest.mark.parametrize("names", ["hip", (), ("hip", "hip"), ("hip", ""), 3])
def test_bad_joint_names_raise(tmp_path, names):
    path = write_csv(tmp_path / "a.csv", ["time", *JOINTS], DATA)
    with pytest.raises(ValueError, match="joint_names: expected"):
        read_motion(path, names)


# --- Penalty matrix -----------------------------------------------------------------------

@pytest.mark.parametrize("order", [1, 2, 4])
def test_penalty_matrix_matches_adaptive_quadrature(order):
    degree = 5
    knots = clamped_knots(9, degree, 1.5, interior=[0.2, 0.7, 0.8])
    n_c = len(knots) - degree - 1
    basis = [BSpline(knots, np.eye(n_c)[i], degree).derivative(order) for i in range(n_c)]
    breaks = np.unique(knots)
    scale = 1.5 * max(np.max(np.abs(b(np.linspace(0, 1.5, 301)))) for b in basis) ** 2
    expected = np.array([[sum(quad(lambda t: bi(t) * bk(t), a, b, epsabs=1e-14 * scale)[0]
                              for a, b in zip(breaks[:-1], breaks[1:]))
                          for bk in basis] for bi in basis])
    P = penalty_matrix(knots, degree, order)
    # Gauss-Legendre is exact for these polynomials; quad to ~1e-14 of the integrand scale
    assert np.allclose(P, expected, rtol=0, atol=1e-12 * scale)
    assert np.allclose(P, P.T, rtol=0, atol=0)


def test_penalty_matrix_docstring_example():
    P = penalty_matrix(np.r_[0, 0, 0, 1, 1, 1.0], 2, 1)
    assert np.allclose(P, np.array([[4, -2, -2], [-2, 4, -2], [-2, -2, 4]]) / 3, atol=1e-15)


# --- Fit: exactness -----------------------------------------------------------------------

def polynomial_case(n_samples=80):
    """Samples of a random degree-5 polynomial on non-uniform knots (in the spline space)."""
    knots = clamped_knots(12, 5, 2.0, interior=np.sort(np.r_[0.15, 0.4, 0.5, 1.1, 1.6, 1.7]))
    t = np.linspace(0.0, 2.0, n_samples)
    coefficients = np.random.default_rng(7).normal(size=(6, 2))
    return knots, t, np.polynomial.polynomial.polyval(t, coefficients).T, coefficients


@pytest.mark.parametrize("noise", [None, 1e-12])
def test_polynomial_in_the_spline_space_is_reproduced(noise):
    knots, t, q, coefficients = polynomial_case()
    fit = fit_spline(knots, 5, t, q, noise=noise)
    dense = np.linspace(0.0, 2.0, 997)
    truth = np.polynomial.polynomial.polyval(dense, coefficients).T
    assert fit.method == ("gcv" if noise is None else "noise")
    # round-off of a well-conditioned least-squares fit of O(10) values
    assert np.max(np.abs(spline_values(knots, 5, fit.control_points, dense) - truth)) < 1e-10
    assert np.all(fit.fit_rms < 1e-10)


def test_noise_far_above_the_data_gives_the_least_squares_cubic():
    knots = clamped_knots(20, 5, 2.0)
    t = np.linspace(0.0, 2.0, 201)
    q = np.c_[np.sin(3 * t), minimum_jerk(t)]
    fit = fit_spline(knots, 5, t, q, noise=1e3)
    dense = np.linspace(0.0, 2.0, 501)
    snap = spline_values(knots, 5, fit.control_points, dense, nu=4)
    rough = spline_values(knots, 5, fit_spline(knots, 5, t, q).control_points, dense, nu=4)
    # the penalised modes keep <= 1e-12 of their coefficient (LAMBDA_SPAN)
    assert np.max(np.abs(snap)) < 1e-8 * np.max(np.abs(rough))
    cubic = np.stack([np.polyval(np.polyfit(t, q[:, j], 3), dense) for j in range(2)], axis=1)
    assert np.allclose(spline_values(knots, 5, fit.control_points, dense), cubic, atol=1e-9)


def constrained_fit(knots, degree, t, q, lam, rest_order, order=4):
    """The penalised fit by a dense KKT solve with equality constraints
    theta_i = theta_{i+1} at both ends (the reference for rest_order and lambda)."""
    B = BSpline.design_matrix(t, knots, degree).toarray()
    n_c = B.shape[1]
    rows = [i for i in range(rest_order)] + [n_c - 2 - i for i in range(rest_order)]
    C = np.zeros((len(rows), n_c))
    C[np.arange(len(rows)), rows], C[np.arange(len(rows)), np.array(rows, dtype=int) + 1] = 1, -1
    K = np.block([[B.T @ B + lam * penalty_matrix(knots, degree, order), C.T],
                  [C, np.zeros((len(rows), len(rows)))]])
    return np.linalg.solve(K, np.r_[B.T @ q, np.zeros(len(rows))])[:n_c]


@pytest.mark.parametrize("rest_order", [1, 2, 3])
def test_rest_order_derivatives_vanish_and_fit_matches_dense_kkt(rest_order):
    knots = clamped_knots(25, 5, 2.0)
    t = np.linspace(0.0, 2.0, 201)
    q = np.sin(2.5 * t + 0.3) + 1e-3 * np.random.default_rng(2).normal(size=t.size)
    fit = fit_spline(knots, 5, t, q[:, None], noise=1e-3, rest_order=rest_order)
    theta = fit.control_points[:, 0]
    assert np.all(theta[:rest_order + 1] == theta[0])
    assert np.all(theta[-rest_order - 1:] == theta[-1])
    ends = np.array([0.0, 2.0])
    assert np.all(np.abs(spline_values(knots, 5, theta, ends, nu=1)) <= 1e-12)
    for nu in range(2, rest_order + 1):
        # scipy sums b_i^(nu) theta_i: round-off of the terms that cancel
        terms = np.abs(spline_values(knots, 5, np.diag(np.abs(theta)), ends, nu=nu)).sum(axis=1)
        assert np.all(np.abs(spline_values(knots, 5, theta, ends, nu=nu)) <= 1e-14 * terms)
    reference = constrained_fit(knots, 5, t, q, fit.smoothing[0], rest_order)
    # dense KKT solve: conditioning ~1e4 of the bordered matrix at this lambda
    assert np.allclose(theta, reference, rtol=0, atol=1e-9)
    assert np.isclose(fit.fit_rms[0], np.sqrt(np.mean((BSpline(knots, theta, 5)(t) - q)**2)))


# --- Fit: the choice of lambda ------------------------------------------------------------

def dense_smoother(knots, t, lam):
    """Hat matrix S = B (B^T B + lambda P)^-1 B^T written out densely."""
    B = BSpline.design_matrix(t, knots, 5).toarray()
    return B @ np.linalg.solve(B.T @ B + lam * penalty_matrix(knots, 5, 4), B.T)


def test_noise_lambda_is_a_minimum_of_the_dense_ubre():
    knots, t = clamped_knots(50, 5, 2.0), np.arange(201) * 0.01
    q = minimum_jerk(t) + 1e-3 * np.random.default_rng(0).normal(size=t.size)
    fit = fit_spline(knots, 5, t, q[:, None], noise=1e-3)
    lam = fit.smoothing[0]

    def ubre(lam):
        S = dense_smoother(knots, t, lam)
        return np.sum((S @ q - q) ** 2) + 2e-6 * np.trace(S)

    # dense UBRE is computed to ~1e-12 relative; a minimum is lower than its neighbours
    assert ubre(lam) <= min(ubre(lam * 1.2), ubre(lam / 1.2)) * (1 + 1e-9)
    assert np.allclose(fit.control_points[:, 0],
                       constrained_fit(knots, 5, t, q, lam, 0), atol=1e-9)


def test_gcv_lambda_is_a_minimum_of_the_dense_gcv():
    knots, t = clamped_knots(50, 5, 2.0), np.arange(201) * 0.01
    q = minimum_jerk(t) + 1e-3 * np.random.default_rng(1).normal(size=t.size)
    lam = fit_spline(knots, 5, t, q[:, None]).smoothing[0]

    def gcv(lam):
        S = dense_smoother(knots, t, lam)
        return t.size * np.sum((S @ q - q) ** 2) / (t.size - np.trace(S)) ** 2

    # dense GCV is computed to ~1e-12 relative; a minimum is lower than its neighbours
    assert gcv(lam) <= min(gcv(lam * 1.2), gcv(lam / 1.2)) * (1 + 1e-9)


def test_noise_per_joint_equals_separate_fits():
    knots, t = clamped_knots(30, 5, 2.0), np.arange(201) * 0.01
    q = np.c_[minimum_jerk(t), np.cos(t)] + np.random.default_rng(4).normal(size=(201, 2)) \
        * [1e-3, 1e-2]
    both = fit_spline(knots, 5, t, q, noise=[1e-3, 1e-2])
    for j, sigma in enumerate([1e-3, 1e-2]):
        single = fit_spline(knots, 5, t, q[:, [j]], noise=sigma)
        assert np.allclose(both.control_points[:, j], single.control_points[:, 0], atol=1e-12)


# --- Fit: accuracy on noisy data (ioc_calibration.md "Fits") ------------------------------

@pytest.mark.parametrize("noise", [1e-3, None], ids=["noise", "gcv"])
def test_noisy_minimum_jerk_fit_is_within_the_noise(noise):
    sigma, knots, t = 1e-3, clamped_knots(50, 5, 2.0), np.arange(201) * 0.01
    truth = minimum_jerk(t)
    rms, error = [], []
    for seed in range(10):
        q = truth + sigma * np.random.default_rng(seed).normal(size=t.size)
        fit = fit_spline(knots, 5, t, q[:, None], noise=noise, rest_order=2)
        rms.append(fit.fit_rms[0])
        error.append(np.sqrt(np.mean((BSpline(knots, fit.control_points[:, 0], 5)(t)
                                      - truth) ** 2)))
    rms, error = np.array(rms) / sigma, np.array(error) / sigma
    # residual of a smoother with ~10-50 effective parameters out of 201: 0.87-1.0 sigma
    assert np.all(np.abs(rms - 1) < 0.2)
    # 200 seeds (rest_order 2): UBRE mean 0.23 sigma, max 0.43; GCV mean 0.23, max 0.44
    assert np.all(error < 0.45) and np.mean(error) < 0.3


# --- Fit: input errors --------------------------------------------------------------------

KNOTS = clamped_knots(10, 5, 1.0)
T20 = np.linspace(0.0, 1.0, 20)
Q20 = np.zeros((20, 1))
BAD_FITS = [
    (dict(times=np.linspace(0.0, 1.1, 20)), r"times: expected values inside the knot "
                                            r"interval \[0\.0, 1\.0\], got \[0\.0, 1\.1"),
    (dict(times=T20[:8], q=Q20[:8]), r"too few samples for the spline: expected at least 10 "
                                     r"\(free control points\), got 8"),
    (dict(times=T20[:5], q=Q20[:5], rest_order=2), r"too few samples for the spline: "
                                                   r"expected at least 6 .*, got 5"),
    (dict(penalty_order=5), r"penalty_order: expected an integer with 1 <= penalty_order < "
                            r"degree = 5, got 5"),
    (dict(rest_order=5), r"rest_order: expected an integer 0 <= R <= 4"),
    (dict(knots=np.r_[0, 0, 0, 0, 0.5, 1, 1, 1, 1, 1, 1, 1.0]), r"knots: expected exactly 6 "
                                                               r"equal knots at each end"),
    (dict(knots=KNOTS[::-1]), r"knots: expected a finite non-decreasing vector"),
    (dict(q=np.zeros((19, 1))), r"times, q: expected shapes \(N,\) and \(N, nv\), got \(20,\) "
                                r"and \(19, 1\)"),
    (dict(q=np.full((20, 1), np.nan)), r"expected finite values"),
    (dict(noise=0.0), r"noise: expected one positive finite sigma or 1"),
    (dict(degree=0), r"degree: expected an integer >= 1, got 0"),
    (dict(times=np.linspace(0.0, 0.5, 20)), r"expected samples that determine every control "
                                            r"point"),
]


@pytest.mark.parametrize("change, message", BAD_FITS, ids=[m[:30] for _, m in BAD_FITS])
def test_bad_fit_input_raises(change, message):
    args = dict(knots=KNOTS, degree=5, times=T20, q=Q20) | change
    keywords = {k: args.pop(k) for k in ("noise", "rest_order", "penalty_order") if k in args}
    with pytest.raises(ValueError, match=message):
        fit_spline(args["knots"], args["degree"], args["times"], args["q"], **keywords)
