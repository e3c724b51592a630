"""The comprehensive motion engine (cmtm.motion, cmtm.inverse_dynamics, link_poses,
mass_matrix, link_transform_derivatives) against independent references.

References:

* order 0 and the first time derivative: Pinocchio 4 (tests/pinocchio_ref.py), on the
  Panda and human URDFs parsed by Pinocchio itself and on our models converted to
  Pinocchio (kt.panda(), serial_chain(7), a 32-joint random tree with prismatic, fixed and
  branching joints);
* every order up to 6: Taylor coefficients in time of the plain-numpy naive references of
  cmtm.naive, taken by the Cauchy integral on a complex circle (FFT) along polynomial
  and trigonometric joint trajectories;
* the textbook two-link arm (printed values);
* internal consistency: orders nest, world joint momenta are subtree sums; the fast path
  (inverse_dynamics) and the full pass (motion) are each compared with the naive references
  above, and every field up to order 8 in tests/test_oracle.py.
"""
import math

import numpy as np
import pytest
from conftest import assert_close, random_stack, relative_error
from robot_data import urdf_path

import cmtm
import kinematic_trees as kt
import pinocchio_ref
from cmtm import naive

REL_PIN = 1e-10
"""Against Pinocchio: round-off of two different O(n) recursions over <= 36 links is
orders of magnitude below this (measured <= 1e-14)."""
REL_TAYLOR = 1e-11
"""Against Cauchy/FFT Taylor coefficients (radius 0.5, 64 points): the reference's
round-off on the l-th coefficient is ~ eps max|f on the circle| / r^l, measured <= 1e-13
relative up to order 6 on these trajectories; 1e-11 leaves a factor ~50."""
REL_SAME = 1e-12
"""Two evaluations of the same quantity by the engine (different orders or paths)."""
PANDA_LOCK = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}
SAMPLES = 3


# --- Pinocchio models ------------------------------------------------------------------

def random_tree32():
    """32 joints, ~30 % prismatic, branching, with fixed joints merged away."""
    return kt.compile_tree(kt.random_tree(32, branching=0.4, prismatic_fraction=0.3,
                                          fixed_fraction=0.2, seed=11))


def pin_case(name):
    """(model, pin_model, perm) of a named model; perm None when built by to_pinocchio."""
    if name in ("panda_urdf", "human_urdf"):
        path = urdf_path(name.split("_")[0])
        lock = PANDA_LOCK if name == "panda_urdf" else None
        model = kt.compile_tree(kt.load_urdf(path, lock=lock))
        return (model, *pinocchio_ref.pinocchio_from_urdf(path, model.joint_names, lock))
    model = {"panda_builder": lambda: kt.compile_tree(kt.panda()),
             "serial_chain7": lambda: kt.compile_tree(kt.serial_chain(7)),
             "random_tree32": random_tree32}[name]()
    return model, pinocchio_ref.to_pinocchio(model), None


@pytest.fixture(scope="module", params=["panda_urdf", "panda_builder", "human_urdf",
                                        "serial_chain7", "random_tree32"])
def case(request):
    return pin_case(request.param)


def pin_stack(model, seed=0):
    """(SAMPLES, 4, nv) raw stack q, q', q'', q''' of order one."""
    return random_stack(model, 4, n_samples=SAMPLES, seed=seed, scale=1.5)


def test_random_tree32_has_prismatic_fixed_and_branching_joints():
    """The premise of the random_tree32 case."""
    model = random_tree32()
    assert model.nv == 32
    assert 0.15 < np.mean(model.joint_type == kt.JOINT_PRISMATIC) < 0.45
    assert len(model.frames) > 0
    assert np.any(model.parent[1:] != np.arange(model.nv - 1))


def test_human_urdf_has_36_joints():
    assert pin_case("human_urdf")[0].nv == 36


# --- order 0 (and the acceleration) against Pinocchio ------------------------------------

def test_tau_order0_matches_pinocchio_rnea(case):
    model, pin_model, perm = case
    q = pin_stack(model)
    tau = cmtm.motion(model, q[:, :3], order=0).tau[:, 0]
    expected = [pinocchio_ref.rnea(pin_model, *q[s, :3], perm) for s in range(SAMPLES)]
    assert_close(tau, expected, REL_PIN, "tau")
    assert_close(cmtm.inverse_dynamics(model, q[:, :3])[:, 0], expected, REL_PIN, "fast tau")


def test_link_velocity_and_acceleration_match_pinocchio_data_v_and_a(case):
    """v_L at order 1 is [v; v']; v' is the gravity-free body acceleration, Pinocchio data.a."""
    model, pin_model, perm = case
    q = pin_stack(model)
    v_L = cmtm.motion(model, q[:, :3], order=1, dynamics=False).v_L
    assert v_L.shape == (SAMPLES, 2, model.nv, 6)
    velocity = [pinocchio_ref.body_velocities(pin_model, *q[s, :2], perm) for s in range(SAMPLES)]
    acceleration = [pinocchio_ref.body_accelerations(pin_model, *q[s, :3], perm)
                    for s in range(SAMPLES)]
    assert_close(v_L[:, 0], velocity, REL_PIN, "v")
    assert_close(v_L[:, 1], acceleration, REL_PIN, "v'")


def test_link_momenta_match_pinocchio_inertia_times_velocity(case):
    model, pin_model, perm = case
    q = pin_stack(model)
    h_L = cmtm.motion(model, q[:, :2], order=0, dynamics=False).h_L[:, 0]
    expected = [pinocchio_ref.body_momenta(pin_model, *q[s, :2], perm) for s in range(SAMPLES)]
    assert_close(h_L, expected, REL_PIN, "h_L")


def test_mass_matrix_matches_pinocchio_crba(case):
    model, pin_model, perm = case
    q = pin_stack(model)[:, 0]
    expected = [pinocchio_ref.mass_matrix(pin_model, q[s], perm) for s in range(SAMPLES)]
    assert_close(cmtm.mass_matrix(model, q), expected, REL_PIN, "M")


def test_link_poses_match_pinocchio_oMi(case):
    model, pin_model, perm = case
    q = pin_stack(model)[:, 0]
    expected = [pinocchio_ref.link_poses(pin_model, q[s], perm) for s in range(SAMPLES)]
    assert_close(cmtm.link_poses(model, q), expected, REL_PIN, "poses")


def test_panda_builder_and_panda_urdf_give_the_same_torques():
    """Tolerance: the builder's numbers equal the URDF's; only the lumping order differs."""
    builder = kt.compile_tree(kt.panda())
    from_urdf = kt.compile_tree(kt.load_urdf(urdf_path("panda"), lock=PANDA_LOCK))
    assert builder.joint_names == from_urdf.joint_names
    q = random_stack(builder, 6, n_samples=SAMPLES, seed=5, scale=1.5)
    assert_close(cmtm.inverse_dynamics(builder, q, order=3),
                 cmtm.inverse_dynamics(from_urdf, q, order=3), REL_SAME, "tau")


@pytest.mark.parametrize("name", ["panda_urdf", "random_tree32"])
def test_tau_first_derivative_matches_pinocchio_rnea_derivatives(name):
    """tau' = dtau/dq q' + dtau/dq' q'' + M q''' (chain rule through Pinocchio's analytic
    RNEA derivatives)."""
    model, pin_model, perm = pin_case(name)
    q = pin_stack(model, seed=3)
    tau = cmtm.inverse_dynamics(model, q, order=1)
    expected = []
    for s in range(SAMPLES):
        dtau_dq, dtau_dv, M = pinocchio_ref.rnea_derivatives(pin_model, *q[s, :3], perm)
        expected.append(dtau_dq @ q[s, 1] + dtau_dv @ q[s, 2] + M @ q[s, 3])
    assert_close(tau[:, 1], expected, REL_PIN, "tau'")


# --- the textbook two-link arm -----------------------------------------------------------

def test_two_link_arm_matches_textbook_values(two_link):
    """M(q), C(q, q') q' and g(q) at q = (30, 60) deg, q' = (0.5, -0.8), to the printed
    digits (tolerance: half a unit of the last printed digit)."""
    q, qd = np.radians([30.0, 60.0]), np.array([0.5, -0.8])
    M = cmtm.mass_matrix(two_link, q)
    np.testing.assert_allclose(M, [[2.16667, 0.58333], [0.58333, 0.33333]], rtol=0, atol=5e-6)
    no_gravity = kt.compile_tree(kt.two_link_planar(), gravity=(0.0, 0.0, 0.0))
    coriolis = cmtm.inverse_dynamics(no_gravity, np.array([q, qd, [0.0, 0.0]]))[0]
    np.testing.assert_allclose(coriolis, [0.06928, 0.10825], rtol=0, atol=5e-6)
    g = cmtm.motion(two_link, np.array([q, [0.0, 0.0], [0.0, 0.0]])).tau[0]
    np.testing.assert_allclose(g, [12.7436, 0.0], rtol=0, atol=5e-5)


# --- every order against Cauchy/FFT Taylor coefficients of the naive references ----------

K_MAX = 6
T0 = (0.3, -0.7)
RADIUS, N_POINTS = 0.5, 64


class Polynomial:
    """q(t) = sum_j c_j t^j, degree 6, coefficients ~ 1/j!."""

    def __init__(self, nv, seed):
        rng = np.random.default_rng(seed)
        scale = np.array([1.0 / math.factorial(j) for j in range(7)])[:, None]
        self.c = scale * rng.uniform(-1.0, 1.0, (7, nv))

    def derivative(self, t, r):
        """q^(r)(t) (nv,), t real or complex."""
        out = 0.0 * t * self.c[0]
        for j in range(r, len(self.c)):
            out = out + self.c[j] * (math.factorial(j) / math.factorial(j - r)) * t ** (j - r)
        return out


class Trigonometric:
    """q(t) = a + b sin(w t + phi), w up to 2 rad/s."""

    def __init__(self, nv, seed):
        rng = np.random.default_rng(seed)
        self.a, self.b = rng.uniform(-1.0, 1.0, nv), rng.uniform(0.3, 1.0, nv)
        self.w, self.phi = rng.uniform(0.5, 2.0, nv), rng.uniform(-np.pi, np.pi, nv)

    def derivative(self, t, r):
        wave = self.b * self.w ** r * np.sin(self.w * t + self.phi + r * np.pi / 2)
        return wave + (self.a if r == 0 else 0.0)


def taylor_models():
    return {"panda_gravity_1_-2_-9": kt.compile_tree(kt.panda(), gravity=(1.0, -2.0, -9.0)),
            "tree12": kt.compile_tree(kt.random_tree(12, branching=0.5, prismatic_fraction=0.3,
                                                     seed=4)),
            "serial_chain7": kt.compile_tree(kt.serial_chain(7))}


def raw_taylor(f, t0, order):
    """Raw derivatives f^(l)(t0), l = 0..order, by the Cauchy integral (l! times coefficient)."""
    c = naive.taylor_coefficients(f, t0, order, radius=RADIUS, n_points=N_POINTS)
    factorial = np.array([math.factorial(l) for l in range(order + 1)])
    return c * factorial.reshape((-1,) + (1,) * (c.ndim - 1))


@pytest.fixture(scope="module", params=[(m, t) for m in taylor_models()
                                        for t in ("polynomial", "trigonometric")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def taylor_case(request):
    """(model, q_stack (len(T0), K_MAX+3, nv) raw, {field: reference raw stack
    (len(T0), K_MAX+1, ...)} from the naive references)."""
    name, kind = request.param
    model = taylor_models()[name]
    traj = Polynomial(model.nv, seed=1) if kind == "polynomial" else Trigonometric(model.nv, seed=2)
    q_stack = np.array([[traj.derivative(t0, r) for r in range(K_MAX + 3)] for t0 in T0])
    fields = naive.MOTION_FIELDS
    expected = {field: [] for field in fields}
    for t0 in T0:
        def stacked(t):
            values = naive.motion_naive(model, *(traj.derivative(t, r) for r in range(3)))
            return np.concatenate([values[field].ravel() for field in fields])
        flat = raw_taylor(stacked, t0, K_MAX)
        start = 0
        for field in fields:
            size = model.nv if field == "tau" else 6 * model.nv
            shape = (K_MAX + 1, model.nv) if field == "tau" else (K_MAX + 1, model.nv, 6)
            expected[field].append(flat[:, start:start + size].reshape(shape))
            start += size
    return model, q_stack, {field: np.array(value) for field, value in expected.items()}


def per_order_errors(actual, desired):
    """Relative error per derivative order (axis 1), each relative to that order's scale."""
    return [relative_error(actual[:, l], desired[:, l]) for l in range(actual.shape[1])]


@pytest.mark.parametrize("k", [0, 1, 2, 3, 6])
def test_tau_stack_matches_cauchy_taylor_of_rnea(taylor_case, k):
    model, q_stack, expected = taylor_case
    tau = cmtm.inverse_dynamics(model, q_stack[:, :k + 3], order=k)
    errors = per_order_errors(tau, expected["tau"][:, :k + 1])
    assert max(errors) <= REL_TAYLOR, errors


@pytest.mark.parametrize("field", ["v_L", "h_L", "w_h_L", "h_J", "w_h_J"])
def test_kinematic_stacks_match_cauchy_taylor_of_naive_references(taylor_case, field):
    """Link velocities and link / joint momenta (local and world) up to order 6; they need
    only k+2 input orders (dynamics=False)."""
    model, q_stack, expected = taylor_case
    mo = cmtm.motion(model, q_stack[:, :K_MAX + 2], order=K_MAX, dynamics=False)
    errors = per_order_errors(getattr(mo, field), expected[field])
    assert max(errors) <= REL_TAYLOR, errors


@pytest.mark.parametrize("field", ["f_L", "f_J", "tau"])
def test_force_stacks_match_cauchy_taylor_of_naive_references(taylor_case, field):
    """f_L (wrench other than gravity), f_J (joint wrench) and tau from the full pass."""
    model, q_stack, expected = taylor_case
    mo = cmtm.motion(model, q_stack, order=K_MAX)
    errors = per_order_errors(getattr(mo, field), expected[field])
    assert max(errors) <= REL_TAYLOR, errors


def test_world_joint_momentum_is_subtree_sum_of_world_link_momenta(tree12):
    q = random_stack(tree12, 6, n_samples=SAMPLES, seed=8)
    mo = cmtm.motion(tree12, q, order=4, dynamics=False)
    for i in range(tree12.nv):
        subtree = mo.w_h_L[:, :, i:tree12.subtree_end[i]].sum(axis=2)
        assert_close(mo.w_h_J[:, :, i], subtree, REL_SAME, f"link {i}")


# --- internal consistency ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["tree12", "panda"])
def test_order0_equals_row0_of_order_k(request, name):
    """Rows 0..j of an order-j motion equal the same rows of an order-5 motion (the
    recursions are triangular: lower orders never see higher input orders)."""
    model = request.getfixturevalue(name)
    q = random_stack(model, 8, n_samples=SAMPLES, seed=12)
    full = cmtm.motion(model, q, order=5)
    for j in (0, 1, 3):
        low = cmtm.motion(model, q[:, :j + 3], order=j)
        for field in ("v_L", "h_L", "w_h_L", "h_J", "w_h_J", "f_L", "f_J", "tau"):
            assert_close(getattr(low, field), getattr(full, field)[:, :j + 1], REL_SAME,
                         f"{field} order {j}")


def test_extra_input_orders_are_ignored(panda):
    """A stack with more orders than needed gives the same result as the minimal stack."""
    q = random_stack(panda, 9, n_samples=2, seed=14)
    np.testing.assert_array_equal(cmtm.motion(panda, q, order=2).tau,
                                  cmtm.motion(panda, q[:, :5], order=2).tau)
