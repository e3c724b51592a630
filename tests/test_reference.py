"""The naive references of cmtm.reference against Pinocchio and closed forms.

These references are the oracle for the engine's tests, so they are checked here against
an independent implementation (Pinocchio 4, through tests/pinocchio_ref.py) on a serial
chain, a random tree with prismatic and fixed joints, and the Panda URDF parsed by
Pinocchio itself; and against closed forms (Taylor series, the two-link arm).

Tolerance 1e-10 relative (to the largest reference entry): round-off of two different
O(n) recursions over at most 30 links stays orders of magnitude below it.
"""
import math

import numpy as np
import pinocchio
import pytest

import kinematic_trees as kt
import pinocchio_ref
from cmtm import reference
from robot_data import urdf_path

REL = 1e-10
PANDA_LOCK = {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02}


def assert_close(actual, desired, rel=REL):
    """max |actual - desired| <= rel * max |desired|, with shapes equal."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    assert actual.shape == desired.shape
    error, scale = np.max(np.abs(actual - desired)), np.max(np.abs(desired))
    assert error <= rel * scale, f"max error {error:.3e} > {rel:.0e} * {scale:.3e}"


def _case(name):
    """(model, pin_model, perm) for a named test model."""
    if name == "panda_urdf":
        path = urdf_path("panda")
        model = kt.compile_tree(kt.load_urdf(path, lock=PANDA_LOCK))
        return (model, *pinocchio_ref.pinocchio_from_urdf(path, model.joint_names, PANDA_LOCK))
    model = kt.compile_tree({"serial_chain7": lambda: kt.serial_chain(7),
                             "random_tree30": lambda: kt.random_tree(30, seed=3)}[name]())
    return model, pinocchio_ref.to_pinocchio(model), None


@pytest.fixture(scope="module", params=["serial_chain7", "random_tree30", "panda_urdf"])
def case(request):
    return _case(request.param)


def samples(model, count=2, seed=0):
    """``count`` random (q, qd, qdd) triples, each (n,), of order one."""
    rng = np.random.default_rng(seed)
    return [tuple(rng.uniform(-1.5, 1.5, size=(3, model.nv))) for _ in range(count)]


def test_random_tree_has_prismatic_and_merged_fixed_joints():
    """The premise of the random_tree30 case: both joint types, and fixed joints merged away."""
    model = _case("random_tree30")[0]
    assert set(model.joint_type.tolist()) == {0, 1}
    assert len(model.frames) > 0


# --- against Pinocchio ---

def test_tau_matches_pinocchio_rnea(case):
    model, pin_model, perm = case
    for q, qd, qdd in samples(model):
        assert_close(reference.rnea_naive(model, q, qd, qdd),
                     pinocchio_ref.rnea(pin_model, q, qd, qdd, perm))


def test_mass_matrix_matches_pinocchio_crba(case):
    model, pin_model, perm = case
    for q, _, _ in samples(model):
        assert_close(reference.mass_matrix_naive(model, q),
                     pinocchio_ref.mass_matrix(pin_model, q, perm))


def test_link_velocities_match_pinocchio_data_v(case):
    model, pin_model, perm = case
    for q, qd, _ in samples(model):
        assert_close(reference.link_velocities_naive(model, q, qd),
                     pinocchio_ref.body_velocities(pin_model, q, qd, perm))


def test_link_accelerations_match_pinocchio_data_a(case):
    """data.a is the derivative of the body twist components, gravity-free, like ours."""
    model, pin_model, perm = case
    for q, qd, qdd in samples(model):
        assert_close(reference.link_accelerations_naive(model, q, qd, qdd),
                     pinocchio_ref.body_accelerations(pin_model, q, qd, qdd, perm))


def test_link_poses_match_pinocchio_oMi(case):
    model, pin_model, perm = case
    for q, _, _ in samples(model):
        assert_close(reference.link_poses_naive(model, q),
                     pinocchio_ref.link_poses(pin_model, q, perm))


def test_link_momenta_match_pinocchio_inertia_times_velocity(case):
    model, pin_model, perm = case
    for q, qd, _ in samples(model):
        assert_close(reference.link_momenta_naive(model, q, qd),
                     pinocchio_ref.body_momenta(pin_model, q, qd, perm))


def test_model_spatial_inertia_matches_reference_momenta(case):
    """The compiled spatial_inertia field agrees with mass, com, inertia_com (cmtm_math §5)."""
    model = case[0]
    q, qd, _ = samples(model, count=1)[0]
    v = reference.link_velocities_naive(model, q, qd)
    assert_close(np.einsum("nij,nj->ni", model.spatial_inertia, v),
                 reference.link_momenta_naive(model, q, qd))


def test_rnea_derivatives_match_complex_step_of_rnea_naive(case):
    """Complex step d tau/dx_j = Im tau(x + i h e_j) / h: no cancellation, h = 1e-30."""
    model, pin_model, perm = case
    q, qd, qdd = samples(model, count=1)[0]
    h, unit = 1e-30, np.eye(model.nv)
    dtau_dq = np.column_stack([reference.rnea_naive(model, q + 1j * h * e, qd, qdd).imag / h
                               for e in unit])
    dtau_dv = np.column_stack([reference.rnea_naive(model, q, qd + 1j * h * e, qdd).imag / h
                               for e in unit])
    M = reference.mass_matrix_naive(model, q)
    expected = pinocchio_ref.rnea_derivatives(pin_model, q, qd, qdd, perm)
    for actual, desired in zip((dtau_dq, dtau_dv, M), expected):
        assert_close(actual, desired)


BRANCH_URDF = """<robot name="branch">
  <link name="base"/>
  <link name="link_a"><inertial><origin xyz="0 0.1 0"/><mass value="0.7"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.005"/></inertial></link>
  <link name="link_b"><inertial><origin xyz="0.1 0 0.2" rpy="0.1 0.2 0.3"/><mass value="1.5"/>
    <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.025" iyz="0.002" izz="0.015"/></inertial></link>
  <link name="link_c"><inertial><origin xyz="0.2 0 0"/><mass value="0.9"/>
    <inertia ixx="0.006" ixy="0" ixz="0.001" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <link name="link_d"><inertial><origin xyz="0 0 0.1"/><mass value="0.4"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.001"/></inertial></link>
  <link name="tool"><inertial><origin xyz="0 0 0.05"/><mass value="0.3"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
  <joint name="z_slide" type="prismatic"><parent link="base"/><child link="link_a"/>
    <origin xyz="0.2 0 0" rpy="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="a_hinge" type="revolute"><parent link="base"/><child link="link_b"/>
    <origin xyz="0 0 0.3" rpy="0 0.4 0"/><axis xyz="0.6 0 0.8"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="c_hinge" type="revolute"><parent link="link_b"/><child link="link_c"/>
    <origin xyz="0.4 0 0" rpy="0.5 -0.2 1.0"/><axis xyz="1 0 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="tool_fixed" type="fixed"><parent link="link_c"/><child link="tool"/>
    <origin xyz="0.3 0 0" rpy="0 0 0.7"/></joint>
  <joint name="d_hinge" type="revolute"><parent link="link_a"/><child link="link_d"/>
    <origin xyz="0 0.2 0"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
</robot>
"""


def test_pinocchio_urdf_order_is_permuted_to_ours(tmp_path):
    """Pinocchio orders sibling joints by joint name, we by child link name; perm maps them.

    (urdfdom, which Pinocchio uses, rejects revolute and prismatic joints without <limit>.)
    """
    path = tmp_path / "branch.urdf"
    path.write_text(BRANCH_URDF)
    lock = {"d_hinge": 0.3}
    model = kt.compile_tree(kt.load_urdf(path, lock=lock))
    pin_model, perm = pinocchio_ref.pinocchio_from_urdf(path, model.joint_names, lock)
    assert model.joint_names == ("z_slide", "a_hinge", "c_hinge")
    assert perm.tolist() == [2, 0, 1]
    q, qd, qdd = samples(model, count=1)[0]
    assert_close(reference.rnea_naive(model, q, qd, qdd),
                 pinocchio_ref.rnea(pin_model, q, qd, qdd, perm))
    assert_close(reference.mass_matrix_naive(model, q),
                 pinocchio_ref.mass_matrix(pin_model, q, perm))
    assert_close(reference.link_accelerations_naive(model, q, qd, qdd),
                 pinocchio_ref.body_accelerations(pin_model, q, qd, qdd, perm))
    assert_close(reference.link_poses_naive(model, q),
                 pinocchio_ref.link_poses(pin_model, q, perm))
    in_our_order = pinocchio_ref.to_pinocchio(model)
    for actual, desired in zip(pinocchio_ref.rnea_derivatives(pin_model, q, qd, qdd, perm),
                               pinocchio_ref.rnea_derivatives(in_our_order, q, qd, qdd)):
        assert_close(actual, desired)


# --- closed forms and identities ---

def test_mass_matrix_is_the_kinetic_energy_form_of_link_velocities_and_momenta():
    """qd^T M qd = sum_i v_i^T I_i v_i, so M[j, k] = sum_i v_i(e_j) . h_i(e_k) with v, h the
    link velocities and momenta at unit joint velocities: the composite-rigid-body view,
    from the forward pass alone, against the mass matrix from RNEA columns."""
    model = _case("random_tree30")[0]
    q = samples(model, count=1)[0][0]
    unit = np.eye(model.nv)
    v = reference.link_velocities_naive(model, q, unit)           # (nv, n, 6): one e_j per row
    h = reference.link_momenta_naive(model, q, unit)
    assert_close(reference.mass_matrix_naive(model, q), np.einsum("jnx,knx->jk", v, h))


def test_link_accelerations_are_time_derivatives_of_velocities():
    """Along q(t) = q0 + qd t + qdd t^2 / 2, d/dt v(t) at t = 0 (Cauchy integral) is a(0)."""
    model = _case("random_tree30")[0]
    q0, qd, qdd = samples(model, count=1)[0]

    def velocities(t):
        return reference.link_velocities_naive(model, q0 + qd * t + qdd * t**2 / 2, qd + qdd * t)

    # r = 0.5: v(t) grows like exp(|Im q(t)|) off the real axis; error ~ eps max|v| / r
    c = reference.taylor_coefficients(velocities, 0.0, 1, radius=0.5)
    assert_close(c[1], reference.link_accelerations_naive(model, q0, qd, qdd), rel=1e-12)


def test_pinocchio_classical_acceleration_adds_omega_cross_v():
    """Pinocchio's classical acceleration (of the frame origin) is data.a + [0; omega x v]."""
    model, pin_model, _ = _case("serial_chain7")
    q, qd, qdd = samples(model, count=1)[0]
    data = pin_model.createData()
    pinocchio.forwardKinematics(pin_model, data, q, qd, qdd)
    v = reference.link_velocities_naive(model, q, qd)
    a = reference.link_accelerations_naive(model, q, qd, qdd)
    classical = [pinocchio.getClassicalAcceleration(pin_model, data, i + 1, pinocchio.LOCAL).linear
                 for i in range(model.nv)]
    assert_close(np.array(classical), a[:, 3:] + np.cross(v[:, :3], v[:, 3:]))


def test_two_link_arm_matches_textbook_closed_form():
    """Unit masses and lengths, COM at mid-link, I_c = m l^2 / 12 (textbook closed form).

    Values printed to 5 decimals (g to 4); tolerance half a unit of the last printed digit.
    """
    arm = kt.compile_tree(kt.two_link_planar(), gravity=(0.0, -9.81, 0.0))
    q, qd, zero = np.radians([30.0, 60.0]), np.array([0.5, -0.8]), np.zeros(2)
    M = reference.mass_matrix_naive(arm, q)
    Cqd = reference.rnea_naive(arm, q, qd, zero, gravity=False)
    g = reference.rnea_naive(arm, q, zero, zero)
    np.testing.assert_allclose(M, [[2.16667, 0.58333], [0.58333, 0.33333]], rtol=0, atol=5e-6)
    np.testing.assert_allclose(Cqd, [0.06928, 0.10825], rtol=0, atol=5e-6)
    np.testing.assert_allclose(g, [12.7436, 0.0], rtol=0, atol=5e-5)


def test_references_accept_complex_inputs():
    model = _case("serial_chain7")[0]
    q, qd, qdd = samples(model, count=1)[0]
    z = 1e-3j * np.ones(model.nv)
    outputs = [reference.rnea_naive(model, q + z, qd, qdd),
               reference.mass_matrix_naive(model, q + z),
               reference.link_velocities_naive(model, q + z, qd),
               reference.link_momenta_naive(model, q + z, qd),
               reference.link_accelerations_naive(model, q + z, qd, qdd),
               reference.link_poses_naive(model, q + z)]
    assert all(np.iscomplexobj(out) and np.any(out.imag != 0) for out in outputs)


# --- taylor_coefficients ---

def exact_exp(t0, order):
    return np.exp(t0) / np.array([math.factorial(l) for l in range(order + 1)])


def exact_sin(t0, order):
    derivatives = [np.sin(t0), np.cos(t0), -np.sin(t0), -np.cos(t0)]
    return np.array([derivatives[l % 4] / math.factorial(l) for l in range(order + 1)])


@pytest.mark.parametrize("t0", [0.0, 0.7])
@pytest.mark.parametrize("function, exact", [(np.exp, exact_exp), (np.sin, exact_sin)],
                         ids=["exp", "sin"])
def test_taylor_coefficients_of_entire_functions(function, exact, t0):
    """Raw derivatives l! c_l, l <= 8, to 1e-13 relative (round-off ~ l! eps e^r / r^l, r = 3)."""
    order = 8
    factorials = np.array([math.factorial(l) for l in range(order + 1)])
    raw = factorials * reference.taylor_coefficients(function, t0, order)
    assert_close(raw, factorials * exact(t0, order), rel=1e-13)


def test_taylor_coefficients_of_polynomial_are_exact():
    """A vector polynomial of degree 5 (< N): its coefficients, then zeros."""
    coefficients = np.array([[1.0, -2.0], [0.5, 3.0], [-4.0, 0.25],
                             [2.0, 1.0], [0.0, -1.5], [7.0, 0.5]])

    def polynomial(t):
        return sum(c * (t - 0.4) ** l for l, c in enumerate(coefficients))

    c = reference.taylor_coefficients(polynomial, 0.4, 8)
    assert c.shape == (9, 2)
    assert_close(c, np.vstack([coefficients, np.zeros((3, 2))]), rel=1e-13)


def test_taylor_coefficients_rejects_order_not_below_n_points():
    with pytest.raises(ValueError, match="order"):
        reference.taylor_coefficients(np.exp, 0.0, 8, n_points=8)
