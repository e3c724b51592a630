"""The algebra of comprehensive motion transformation matrices (cmtm_math.md §1-§3, §6.3)
as tests: cmtm.cmtm_matrix, cmtm.taylor and cmtm.spatial, and the dense forms of
cmtm.reference they are compared with.

References: dense linear algebra on the Toeplitz matrices (numpy.linalg.inv, products),
the recursions of the spec written out again here in plain numpy, and Cauchy/FFT Taylor
coefficients of the naive link poses and link velocities of cmtm.naive (no engine
code). Most checks are exact identities; tolerances are round-off of a few dozen 6x6
products on entries of order one (1e-12 absolute, relative to the largest entry) unless
stated.
"""
import math

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cmtm
from cmtm import naive, taylor
from cmtm._jit import jit_allocating
from cmtm.cmtm_matrix import cmtm_blocks
from cmtm.reference import (cmtm_inverse_blocks, comprehensive_velocity, force_cross,
                            motion_cross, motion_transform, shift_matrix, tangent_matrix,
                            toeplitz)
from cmtm.spatial import motion_transform_inverse, skew
from cmtm.taylor import conv_block_vec, derivative_stack, raw_from_taylor, taylor_from_raw
from conftest import python_entry

TOL = 1e-12
"""Round-off of O(k^2) products of 6x6 blocks with entries of order one."""
ORDERS = [0, 1, 2, 4, 6]
FEW = settings(max_examples=8, deadline=None)
conv_blocks, motion_cross_conv, force_cross_conv = (
    python_entry(taylor.conv_blocks), python_entry(taylor.motion_cross_conv),
    python_entry(taylor.force_cross_conv))
"""The engine's kernel helpers, callable from the tests."""


def assert_small(actual, desired, tol=TOL, what=""):
    """max |actual - desired| <= tol * max(1, max |desired|)."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    assert actual.shape == desired.shape, (actual.shape, desired.shape)
    error = np.max(np.abs(actual - desired), initial=0.0)
    scale = max(1.0, np.max(np.abs(desired), initial=0.0))
    assert error <= tol * scale, f"{what}: error {error:.2e} > {tol:.0e} * {scale:.2e}"


def random_rotation(rng):
    """A random proper rotation (3, 3) from the QR decomposition of a Gaussian matrix."""
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q @ np.diag(np.sign(np.diag(R)))
    return Q if np.linalg.det(Q) > 0 else -Q


def random_pose(seed):
    """(A, A^{-1}) 6x6 motion transform of a random pose with |p| ~ 1."""
    rng = np.random.default_rng(seed)
    R, p = random_rotation(rng), rng.uniform(-1.0, 1.0, 3)
    return motion_transform(R, p), motion_transform_inverse(R, p)


def random_nu(n, seed):
    """Taylor-scaled velocity stack (n, 6), entries of order one."""
    return np.random.default_rng(seed + 1000).uniform(-1.0, 1.0, (n, 6))


def blocks(A, nu, n_blocks):
    """CMTM blocks X_0..X_{n_blocks-1} (n_blocks, 6, 6)."""
    out = np.empty((n_blocks, 6, 6))
    cmtm_blocks(A, np.ascontiguousarray(nu), out)
    return out


def inverse_blocks(Ainv, nu, n_blocks):
    out = np.empty((n_blocks, 6, 6))
    cmtm_inverse_blocks(Ainv, np.ascontiguousarray(nu), out)
    return out


@jit_allocating
def motion_hat(y):
    """[y hat x_6] = -[y x_6], so that [x x_6] y = [y hat x_6] x (hat-swap, §1.1)."""
    return -motion_cross(y)


@jit_allocating
def force_hat(h):
    """[h hat x_6^*] = -[[n x, f x], [f x, 0]] for h = [n; f], so [x x^*] h = [h hat x^*] x."""
    out = np.zeros((6, 6))
    n = skew(h[:3])
    f = skew(h[3:])
    out[:3, :3] = -n
    out[:3, 3:] = -f
    out[3:, :3] = -f
    return out


@jit_allocating
def dual_blocks(inverse_blocks):
    """Dual (force) CMTM X^* = T((X-_0)^T, ..., (X-_k)^T): blockwise transpose of X^{-1} (§2.3)."""
    out = np.empty_like(inverse_blocks)
    for l in range(inverse_blocks.shape[0]):
        out[l] = inverse_blocks[l].T
    return out


@numba.njit
def u_operator_apply(M, z, out):
    """U(T(M)) z of §1.3: out[l] = (l+1) z[l+1] + sum_{m<=l} M[l-m] z[m], l < len(out),
    from the engine's kernels derivative_stack (J2) and conv_block_vec (J1).

    The Taylor form of w = z' + M z; z needs len(out)+1 coefficients.
    """
    derivative_stack(z, out)
    conv_block_vec(M, z, out, 1.0)


def cross_blocks(nu, cross=None):
    """([nu_0 x], ..., [nu_k x]) as (k+1, 6, 6) with the given 6x6 operator."""
    return np.array([(cross or motion_cross)(np.ascontiguousarray(n)) for n in nu])


# --- §1.1 spatial identities -------------------------------------------------------------

def test_motion_and_force_cross_are_related_by_minus_transpose():
    u = random_nu(1, 0)[0]
    assert_small(force_cross(u), -motion_cross(u).T, 0.0)
    assert_small(motion_cross(u)[:3, :3], skew(u[:3]), 0.0)
    assert_small(motion_cross(u) @ u, np.zeros(6), 1e-15)


@FEW
@given(seed=st.integers(0, 2**31 - 1))
def test_hat_swap_identities_vectors(seed):
    """[x x] y = [y hat x] x and [x x*] h = [h hat x*] x (§1.1)."""
    x, y = random_nu(2, seed)
    assert_small(motion_cross(x) @ y, motion_hat(y) @ x)
    assert_small(force_cross(x) @ y, force_hat(y) @ x)


@pytest.mark.parametrize("k", ORDERS)
def test_hat_swap_identities_toeplitz(k):
    """T([x_l x]) y = T([y_l hat x]) x, and the dual form (§1.3); the jitted convolutions
    motion_cross_conv / force_cross_conv equal the dense Toeplitz products."""
    x, y = random_nu(k + 1, 1), random_nu(k + 1, 2)
    for cross, hat, conv in ((motion_cross, motion_hat, motion_cross_conv),
                             (force_cross, force_hat,
                              lambda a, h, out: force_cross_conv(a, h, out, 1.0))):
        left = toeplitz(cross_blocks(x, cross)) @ y.ravel()
        assert_small(left, toeplitz(cross_blocks(y, hat)) @ x.ravel())
        out = np.zeros((k + 1, 6))
        conv(x, y, out)
        assert_small(out.ravel(), left)


@FEW
@given(seed=st.integers(0, 2**31 - 1))
def test_adjoint_identities(seed):
    """A [u x] A^{-1} = [(A u) x] and A^* [u x*] A^{*-1} = [(A u) x*] (§1.1)."""
    A, Ainv = random_pose(seed)
    u = random_nu(1, seed)[0]
    assert_small(A @ Ainv, np.eye(6))
    assert_small(A @ motion_cross(u) @ Ainv, motion_cross(A @ u))
    A_star, A_star_inv = Ainv.T, A.T
    assert_small(A_star @ force_cross(u) @ A_star_inv, force_cross(A @ u))


@pytest.mark.parametrize("k", [1, 3, 5])
def test_adjoint_action_on_comprehensive_vectors(k):
    """X T([u x]) X^{-1} = T([(X u) x]) (§2.6)."""
    A, Ainv = random_pose(3)
    nu, u = random_nu(k, 3), random_nu(k + 1, 4)
    X, Xinv = blocks(A, nu, k + 1), inverse_blocks(Ainv, nu, k + 1)
    Xu = (toeplitz(X) @ u.ravel()).reshape(k + 1, 6)
    assert_small(toeplitz(X) @ toeplitz(cross_blocks(u)) @ toeplitz(Xinv),
                 toeplitz(cross_blocks(Xu)))


# --- §1.2-§1.3 Taylor arithmetic ---------------------------------------------------------

def test_taylor_raw_round_trip_and_scaling():
    raw = np.random.default_rng(0).normal(size=(2, 6, 3))
    taylor = taylor_from_raw(raw, axis=1)
    assert_small(taylor[:, 4], raw[:, 4] / 24.0, 0.0)
    assert_small(raw_from_taylor(taylor, axis=1), raw, 1e-15)


def test_factorials_are_exact_read_only_views_of_one_table():
    """taylor.factorials returns views of one table shared by every caller: they must hold
    math.factorial exactly (up to 170!, the last finite in float64) and refuse writes."""
    fact = taylor.factorials(171)
    assert fact.tolist() == [float(math.factorial(r)) for r in range(171)]
    assert np.isfinite(fact).all() and taylor.factorials(23).shape == (23,)
    with pytest.raises(ValueError, match="read-only"):
        taylor.factorials(23)[0] = 2.0
    with pytest.raises(ValueError, match="at most 171"):
        taylor.factorials(172)


@pytest.mark.parametrize("k", ORDERS)
def test_block_convolutions_equal_dense_toeplitz_products(k):
    """conv_blocks: T(A) T(B) = T(A*B); conv_block_vec: T(A) x (J1)."""
    rng = np.random.default_rng(k)
    A, B = rng.normal(size=(2, k + 1, 6, 6))
    x = rng.normal(size=(k + 1, 6))
    out = np.empty((k + 1, 6, 6))
    conv_blocks(A, B, out)
    assert_small(toeplitz(out), toeplitz(A) @ toeplitz(B))
    vec = np.zeros((k + 1, 6))
    python_entry(conv_block_vec)(A, x, vec, 1.0)
    assert_small(vec.ravel(), toeplitz(A) @ x.ravel())


def u_dense(M, k):
    """U(T_(k)(M)) = [T(M) O] + [O B] (§1.3), dense 6(k+1) x 6(k+2), from toeplitz and
    shift_matrix (D_1 = [O B])."""
    return np.hstack([toeplitz(M[:k + 1]), np.zeros((6 * (k + 1), 6))]) + shift_matrix(k, 1, 6)


@pytest.mark.parametrize("k", ORDERS)
def test_u_operator_apply_equals_dense_u(k):
    rng = np.random.default_rng(10 + k)
    M, z = rng.normal(size=(k + 1, 6, 6)), rng.normal(size=(k + 2, 6))
    out = np.empty((k + 1, 6))
    u_operator_apply(M, z, out)
    assert_small(out.ravel(), u_dense(M, k) @ z.ravel())


def test_shift_matrix_is_the_taylor_derivative():
    """D_s maps Taylor coefficients of a polynomial to those of its s-th derivative (J2)."""
    c = np.random.default_rng(5).normal(size=7)          # a(t) = sum c_j t^j about t0 = 0
    d2 = np.polynomial.polynomial.polyder(c, 2)            # a''(t)
    assert_small(shift_matrix(4, 2, 1) @ c, d2[:5], 1e-14)


# --- §2.1-§2.3 CMTM, inverse, dual -------------------------------------------------------

@FEW
@given(seed=st.integers(0, 2**31 - 1), k=st.sampled_from(ORDERS))
def test_cmtm_times_inverse_is_identity(seed, k):
    """T(X) T(X^{-1}) = E = T(X^{-1}) T(X) (§2.2)."""
    A, Ainv = random_pose(seed)
    nu = random_nu(max(k, 1), seed)
    T, Tinv = toeplitz(blocks(A, nu, k + 1)), toeplitz(inverse_blocks(Ainv, nu, k + 1))
    assert_small(T @ Tinv, np.eye(6 * (k + 1)))
    assert_small(Tinv @ T, np.eye(6 * (k + 1)))


@pytest.mark.parametrize("k", ORDERS)
def test_cmtm_inverse_matches_numpy_inv_of_dense_toeplitz(k):
    A, Ainv = random_pose(k)
    nu = random_nu(max(k, 1), k)
    assert_small(toeplitz(inverse_blocks(Ainv, nu, k + 1)),
                 np.linalg.inv(toeplitz(blocks(A, nu, k + 1))))


@pytest.mark.parametrize("k", ORDERS)
def test_comprehensive_velocity_is_inverse_times_time_derivative(k):
    """X^{-1} d_t X = T([nu_0 x], ..., [nu_k x]) with d_t X := T((l+1) X_{l+1}), which needs
    the extra block X_{k+1} (§2.5)."""
    A, Ainv = random_pose(30 + k)
    nu = random_nu(k + 1, 30 + k)
    X = blocks(A, nu, k + 2)
    d_t_X = np.array([(l + 1) * X[l + 1] for l in range(k + 1)])
    assert_small(toeplitz(inverse_blocks(Ainv, nu, k + 1)) @ toeplitz(d_t_X),
                 toeplitz(cross_blocks(nu)))


@FEW
@given(seed=st.integers(0, 2**31 - 1), k=st.sampled_from([1, 2, 4, 6]))
def test_comprehensive_velocity_recovers_nu(seed, k):
    """Extraction of nu_0..nu_{k-1} from X_0..X_k inverts the §2.1 recursion."""
    A, _ = random_pose(seed)
    nu = random_nu(k, seed)
    assert_small(comprehensive_velocity(blocks(A, nu, k + 1)), nu)


# --- CMTM blocks against Cauchy/FFT Taylor coefficients of A(t) --------------------------

class Trajectory:
    """q(t) = c_0 + c_1 t + ... + c_6 t^6 about t0 = 0, coefficients ~ 1/j!."""

    def __init__(self, nv, seed):
        rng = np.random.default_rng(seed)
        self.c = rng.uniform(-1.0, 1.0, (7, nv)) / np.array(
            [math.factorial(j) for j in range(7)])[:, None]

    def __call__(self, t, r=0):
        c = np.polynomial.polynomial.polyder(self.c, r, axis=0) if r else self.c
        return sum(c[j] * t ** j for j in range(len(c)))

    def raw_stack(self, n_orders):
        return np.array([self(0.0, r) for r in range(n_orders)])


CAUCHY = dict(radius=0.5, n_points=64)
"""Radius 0.5 keeps |exp(i q(t))| over the whole chain moderate; measured <= 1e-14 relative."""


@pytest.mark.parametrize("name", ["chain3", "tree12", "panda"])
def test_link_transform_derivatives_match_cauchy_taylor_of_naive_poses(request, name):
    """Engine link CMTM blocks (link_transform_derivatives / l!) = Taylor coefficients of
    A_L(t) built from naive.link_transforms_naive along q(t), k = 5 (§2.1, §2.4)."""
    model = request.getfixturevalue(name)
    k = 5
    traj = Trajectory(model.nv, seed=7)
    X = taylor_from_raw(cmtm.link_transform_derivatives(model, traj.raw_stack(k + 1), order=k),
                        axis=0)
    expected = naive.taylor_coefficients(lambda t: naive.link_transforms_naive(model, traj(t)),
                                         0.0, k, **CAUCHY)
    for l in range(k + 1):
        assert_small(X[l], expected[l], 1e-12, f"X_{l}")


def cauchy_link(model, traj, link, k):
    """(A, nu_hat (k, 6), X_hat (k+1, 6, 6)) of one link from the naive references only."""
    A = naive.link_transforms_naive(model, traj(0.0))[link]
    nu = naive.taylor_coefficients(
        lambda t: naive.link_velocities_naive(model, traj(t), traj(t, 1))[link],
        0.0, k - 1, **CAUCHY)
    X = naive.taylor_coefficients(lambda t: naive.link_transforms_naive(model, traj(t))[link],
                                  0.0, k, **CAUCHY)
    return np.ascontiguousarray(A.real), np.ascontiguousarray(nu), X


def test_cmtm_recursion_matches_cauchy_taylor_of_a_link_transform(tree12):
    """cmtm_blocks(A, nu_hat) with A and nu_hat of a distal link from the naive references
    (Taylor-scaled velocity) reproduces the Taylor coefficients of A(t) (§2.1)."""
    k = 5
    A, nu, expected = cauchy_link(tree12, Trajectory(tree12.nv, seed=2), tree12.nv - 1, k)
    assert_small(blocks(A, nu, k + 1), expected, 1e-12)


def test_negative_control_raw_velocity_in_the_recursion_fails(tree12):
    """Using raw nu^(m) instead of nu^(m)/m! in the §2.1 recursion: X_0..X_2 are unchanged
    (0! = 1! = 1) but X_3 and beyond are wrong, by far more than round-off."""
    k = 5
    A, nu, expected = cauchy_link(tree12, Trajectory(tree12.nv, seed=2), tree12.nv - 1, k)
    wrong = blocks(A, raw_from_taylor(nu, axis=0), k + 1)
    scale = np.abs(expected).max(axis=(1, 2))
    errors = np.abs(wrong - expected).max(axis=(1, 2)) / scale
    assert np.all(errors[:3] < 1e-12), errors
    assert np.all(errors[3:] > 1e-3), errors


@pytest.mark.parametrize("k", [1, 3, 5])
def test_dual_cmtm_matches_cauchy_taylor_of_inverse_transpose(tree12, k):
    """The dual CMTM built from A^{-1} and nu_hat of a distal link (cmtm_inverse_blocks, then
    dual_blocks) holds the Taylor coefficients of A(t)^{-T}, the force transform, from the
    naive poses (§2.3); T(X^*) inverts T(X_0^T, ..., X_k^T)."""
    traj = Trajectory(tree12.nv, seed=3)
    A, nu, X = cauchy_link(tree12, traj, tree12.nv - 1, k)
    dual = dual_blocks(inverse_blocks(np.linalg.inv(A), nu, k + 1))
    expected = naive.taylor_coefficients(
        lambda t: np.linalg.inv(naive.link_transforms_naive(tree12, traj(t))[-1]).T,
        0.0, k, **CAUCHY)
    assert_small(dual, expected)
    assert_small(toeplitz(dual) @ toeplitz(X.transpose(0, 2, 1)), np.eye(6 * (k + 1)))


# --- §6.3 the tangent matrix W -----------------------------------------------------------

@pytest.mark.parametrize("k", [0, 1, 2, 4])
def test_tangent_matrix_rows_1_to_k_are_the_u_operator(k):
    """Block rows 1..k+1 of W_(k+1) equal U([v_(k) x]_T) (§6.3)."""
    nu = random_nu(k + 1, 40 + k)
    W = tangent_matrix(nu, k + 1)
    assert W.shape == (6 * (k + 2), 6 * (k + 2))
    assert_small(W[:6], np.hstack([np.eye(6), np.zeros((6, 6 * (k + 1)))]), 0.0)
    assert_small(W[6:], u_dense(cross_blocks(nu), k), 0.0)


@pytest.mark.parametrize("prismatic", [False, True])
def test_tangent_matrix_collapses_to_selection_for_one_dof_joint(prismatic):
    """W_J^{-1} [S dq_0; 1 S dq_1; ...; k S dq_k] = S dq for nu_J,m = (m+1) q_{m+1} S (§6.3)."""
    k = 5
    rng = np.random.default_rng(int(prismatic))
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    S = np.concatenate([np.zeros(3), axis]) if prismatic else np.concatenate([axis, np.zeros(3)])
    qhat, dq = rng.normal(size=k + 1), rng.normal(size=k + 1)
    nu_J = np.array([(m + 1) * qhat[m + 1] * S for m in range(k)])
    rhs = np.concatenate([max(l, 1) * S * dq[l] for l in range(k + 1)])
    assert_small(np.linalg.solve(tangent_matrix(nu_J, k), rhs), np.kron(dq, S), 1e-14)


def test_tangent_matrix_maps_tangents_to_velocity_variations():
    """W maps the tangent stack dx of a variation to du = [da_0; dnu_0; ...] (§6.3):
    central differences of nu (extracted by comprehensive_velocity) along
    X(eps) = X T(E + eps [dx x]), whose tangent stack is dx to first order.
    Tolerance: h = 1e-6, truncation ~h^2 plus round-off ~eps/h; measured 3e-10 absolute."""
    k = 3
    A, _ = random_pose(50)
    nu = random_nu(k + 1, 50)
    X = blocks(A, nu, k + 2)
    delta = np.random.default_rng(51).normal(size=(k + 2, 6))
    h = 1e-6

    def perturbed(sign):
        Y = np.empty((k + 2, 6, 6))
        conv_blocks(X, np.array([np.eye(6) * (l == 0) + sign * h * motion_cross(delta[l])
                                 for l in range(k + 2)]), Y)
        return comprehensive_velocity(Y)

    d_nu = (perturbed(1.0) - perturbed(-1.0)) / (2 * h)
    W = tangent_matrix(nu, k + 1)
    du = W @ delta.ravel()
    assert_small(du[6:], d_nu.ravel(), 1e-9, "dnu")


@pytest.mark.parametrize("shape, axis", [((7, 1, 3), 1), ((7, 2, 3, 6), 1), ((7, 3, 4), -2),
                                         ((5, 6, 2), 1), ((23, 3), 0), ((4, 2), -1)])
def test_raw_taylor_scalings_are_the_broadcast_product_and_quotient_bit_for_bit(shape, axis):
    """taylor_from_raw and raw_from_taylor against the broadcast of the factorials over the
    order axis (for one or two orders they copy: 0! = 1! = 1), bit for bit on entries from
    1e-300 to 1e300 with NaN, inf and -0, and in the memory layout of their input."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-300, 300, shape)
    x.flat[::5], x.flat[1::7], x.flat[2::11] = np.nan, np.inf, -0.0
    factor = np.array([math.factorial(l) for l in range(shape[axis])], dtype=float)
    factor = factor.reshape([-1 if a == axis % len(shape) else 1 for a in range(len(shape))])
    with np.errstate(over="ignore", invalid="ignore"):
        assert raw_from_taylor(x, axis).tobytes() == (x * factor).tobytes()
        assert taylor_from_raw(x, axis).tobytes() == (x / factor).tobytes()
        swapped = np.swapaxes(x, 0, -1)
        assert raw_from_taylor(swapped, axis).strides == (swapped * 1.0).strides
    assert raw_from_taylor(x, axis) is not x
