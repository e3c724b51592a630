"""Floating base: six virtual one-DoF joints under the root (kinematic_trees.floating_base),
offered by load_urdf, the builders, human() and compile_tree.

References: Pinocchio with the equivalent root joint, a JointModelComposite of PX, PY, PZ,
R<a1>, R<a2>, R<a3> (torques, mass matrix, Richardson FD of its rnea), and with the same six
as separate joints (computeRNEADerivatives); central and Richardson finite differences
(structured Jacobians of orders 1-2); scipy's intrinsic Euler angles (the root pose); the
direct solver and the inverse KKT; hand values (structure, massless links, singularity).
"""
import re

import numpy as np
import pytest
from robot_data import urdf_path
from scipy.spatial.transform import Rotation
from test_kinematic_trees import assert_models_equal

import cmtm
import kinematic_trees as kt
import pinocchio_ref
from cmtm import reference
from conftest import random_stack
from ioc.direct import solve
from ioc.inverse_kkt import recover_weights
from ioc.problem import MotionProblem
from ioc.spline.banded import band_to_dense
from ioc.spline.bspline import DD

HUMAN_ORDERS = ("xyz_zxy", "xyz_rpy")
PINOCCHIO_RTOL = 1e-9
"""Torques, mass matrix and RNEA derivatives, max-abs / max|reference|: exact recursions
on both sides (seen <= 1e-14)."""


@pytest.fixture(scope="module")
def floating_human():
    """{option: compiled floating-base human} for the orders tested against Pinocchio."""
    return {option: kt.compile_tree(kt.human(floating_base=option)) for option in HUMAN_ORDERS}


def relative_error(actual, desired):
    return np.max(np.abs(actual - desired)) / np.max(np.abs(desired))


# --- structure and pose ---

def test_human_floating_base_adds_six_massless_virtual_joints_first(floating_human):
    model = floating_human["xyz_zxy"]
    fixed = kt.compile_tree(kt.human())
    assert (fixed.nv, model.nv) == (36, 42) and model.base_name == "middle_pelvis_world"
    assert model.joint_names[:6] == tuple(f"middle_pelvis_{c}"
                                          for c in ("tx", "ty", "tz", "rz", "rx", "ry"))
    assert model.link_names[:6] == model.joint_names[:5] + ("middle_pelvis",)
    assert model.parent[:6].tolist() == [-1, 0, 1, 2, 3, 4]
    assert model.joint_type[:6].tolist() == [kt.JOINT_PRISMATIC] * 3 + [kt.JOINT_REVOLUTE] * 3
    np.testing.assert_array_equal(model.axis[:6], np.eye(3)[[0, 1, 2, 2, 0, 1]])
    assert not model.spatial_inertia[:5].any() and model.mass[5] == 10.65
    assert np.all(np.isinf(model.q_lower[:6])) and np.all(np.isinf(model.q_upper[:6]))
    np.testing.assert_array_equal(model.spatial_inertia[6:], fixed.spatial_inertia)
    assert model.joint_names[6:] == fixed.joint_names


@pytest.mark.parametrize("option", kt.FLOATING_BASES)
def test_root_pose_is_the_translation_then_the_intrinsic_rotations(option):
    """Root link pose = (q[0:3], R_a1(q3) R_a2(q4) R_a3(q5)); scipy's upper-case Euler
    sequences are intrinsic (body axes)."""
    model = kt.compile_tree(kt.serial_chain(1, floating_base=option))
    axes = "XYZ" if option == "xyz_rpy" else option[4:].upper()
    for q in np.random.default_rng(2).uniform(-1.5, 1.5, (3, model.nv)):
        root = cmtm.link_poses(model, q)[5]
        np.testing.assert_allclose(root[:3, 3], q[:3], rtol=0, atol=1e-15)
        np.testing.assert_allclose(root[:3, :3], Rotation.from_euler(axes, q[3:6]).as_matrix(),
                                   rtol=0, atol=1e-14)


def test_option_of_builders_load_urdf_human_and_compile_tree_agree():
    tree = kt.human()
    via_compile = kt.compile_tree(tree, floating_base="xyz_zyx")
    assert kt.compile_tree(tree).nv == 36  # compile_tree floats a copy
    for model in (kt.compile_tree(kt.human(floating_base="xyz_zyx")),
                  kt.compile_tree(kt.load_urdf(urdf_path("human"), floating_base="xyz_zyx",
                                               gravity=(0, -9.81, 0)))):
        assert_models_equal(model, via_compile, atol=0.0)
    for builder in (kt.two_link_planar, kt.panda, lambda **o: kt.serial_chain(3, **o),
                    lambda **o: kt.random_tree(5, **o)):
        assert_models_equal(kt.compile_tree(builder(floating_base="xyz_xyz")),
                            kt.compile_tree(builder(), floating_base="xyz_xyz"), atol=0.0)


def test_bad_floating_base_options():
    with pytest.raises(ValueError, match=re.escape("floating_base: expected None or one of "
                                                   "xyz_xyz, xyz_xzy")):
        kt.serial_chain(2, floating_base="xyz")
    tree = kt.serial_chain(2)
    tree.add_link("base_tx")
    tree.add_joint("base_rz", "base", "base_tx", "fixed")
    with pytest.raises(kt.ModelError, match=re.escape(
            "floating_base: the model already uses the names ['base_rz', 'base_tx']")):
        kt.compile_tree(tree, floating_base="xyz_zyx")


# --- against Pinocchio's composite root joint ---

@pytest.mark.parametrize("option", HUMAN_ORDERS)
def test_floating_human_torques_and_mass_matrix_match_pinocchio_composite(floating_human,
                                                                          option):
    model = floating_human[option]
    pin_model, perm = pinocchio_ref.floating_from_urdf(
        urdf_path("human"), kt.floating_base.rotation_axes(option), model.joint_names,
        gravity=model.gravity)
    q_stack = random_stack(model, 3, n_samples=3, seed=7)
    tau = cmtm.inverse_dynamics(model, q_stack)[:, 0]
    M = cmtm.mass_matrix(model, q_stack[:, 0])
    for s, (q, v, a) in enumerate(q_stack):
        assert relative_error(tau[s], pinocchio_ref.rnea(pin_model, q, v, a, perm)) \
            <= PINOCCHIO_RTOL
        assert relative_error(M[s], pinocchio_ref.mass_matrix(pin_model, q, perm)) \
            <= PINOCCHIO_RTOL


@pytest.mark.parametrize("option", HUMAN_ORDERS)
def test_floating_human_rnea_derivatives_match_pinocchio(floating_human, option):
    """d tau / d(q, q', q'') (the structured Jacobian of order 0) against Pinocchio's
    computeRNEADerivatives on the six floating joints as separate joints, and against
    Richardson FD of the composite model's rnea (good to ~1e-12): Pinocchio's analytic
    derivatives of the composite joint itself are off in the rotation columns (see
    pinocchio_ref.floating_from_urdf). Seen <= 1e-13."""
    model = floating_human[option]
    axes = kt.floating_base.rotation_axes(option)
    separate, perm = pinocchio_ref.floating_from_urdf(urdf_path("human"), axes,
                                                      model.joint_names, composite=False,
                                                      gravity=model.gravity)
    composite, composite_perm = pinocchio_ref.floating_from_urdf(urdf_path("human"), axes,
                                                                 model.joint_names,
                                                                 gravity=model.gravity)
    q_stack = random_stack(model, 3, n_samples=2, seed=8)
    dtau = cmtm.jacobian(model, q_stack, "joint_torque", order=0)[:, 0]  # (2, nv, 3, nv)

    def composite_rnea(points):
        return np.array([pinocchio_ref.rnea(composite, *point, composite_perm)
                         for point in points])

    numeric = reference.central_jacobian(composite_rnea, q_stack, method="richardson")
    assert relative_error(dtau, numeric) <= PINOCCHIO_RTOL
    for s, (q, v, a) in enumerate(q_stack):
        expected = pinocchio_ref.rnea_derivatives(separate, q, v, a, perm)
        for r in range(3):
            assert relative_error(dtau[s, :, r], expected[r]) <= PINOCCHIO_RTOL, f"q^({r})"


# --- structured Jacobians against finite differences ---

@pytest.mark.parametrize("quantity", ["link_velocity", "joint_torque"])
@pytest.mark.parametrize("order", [1, 2])
def test_floating_human_structured_jacobians_match_fd(floating_human, quantity, order):
    """Central FD 1e-7 (as test_jacobians.py; seen <= 2e-9), Richardson 1e-9 (seen ~1e-12)."""
    model = floating_human["xyz_zxy"]
    q_stack = random_stack(model, order + 3, n_samples=2, seed=order)
    J = cmtm.jacobian(model, q_stack, quantity, order=order)
    assert relative_error(J, reference.fd_jacobian(model, q_stack, quantity, order=order)) \
        <= 1e-7
    richardson = reference.fd_jacobian(model, q_stack, quantity, order=order,
                                       method="richardson")
    assert relative_error(J, richardson) <= 1e-9


# --- massless links and the singularity ---

def test_massless_links_give_exact_zeros_and_finite_jacobians():
    """A floating chain whose every link is massless: no force anywhere, nothing divided by
    a mass (no NaN)."""
    tree = kt.serial_chain(2)
    for link in tree.graph:
        tree.graph.nodes[link].update(mass=0.0, inertia=np.zeros((3, 3)))
    model = kt.compile_tree(tree, floating_base="xyz_zyx")
    q_stack = random_stack(model, 5, n_samples=2)
    assert not cmtm.inverse_dynamics(model, q_stack, order=2).any()
    assert not cmtm.mass_matrix(model, q_stack[:, 0]).any()
    J = cmtm.jacobians(model, q_stack, ("link_velocity", "joint_torque"), order=2)
    assert np.all(np.isfinite(J["link_velocity"])) and not J["joint_torque"].any()


@pytest.mark.parametrize("option, middle", [("xyz_zyx", 4), ("xyz_zxy", 4)])
def test_mass_matrix_is_singular_exactly_when_the_middle_rotation_is_90_degrees(option, middle):
    """One rigid body (the panda's base link): at q_middle = +-90 deg the first and last
    rotation axes line up, and M loses rank (its rotation block spans two axes only)."""
    model = kt.compile_tree(kt.KinematicTree.from_graph(kt.panda().graph.subgraph(
        ["panda_link0"]).copy()), floating_base=option)
    q = np.array([0.3, -0.2, 0.5, 0.7, 0.0, -0.4])
    for angle, singular in ((0.4, False), (np.pi / 2, True), (-np.pi / 2, True)):
        q[middle] = angle
        eigenvalues = np.linalg.eigvalsh(cmtm.mass_matrix(model, q))
        assert (eigenvalues[0] < 1e-12 * eigenvalues[-1]) == singular, eigenvalues


def test_torque_subset_newton_hessian_at_a_singular_mass_matrix_matches_fd():
    """chain3 on a Z-Y-X floating base near every joint at 0.5, where the free chain's M is
    singular (least eigenvalue 6e-15 against 78.5 at q = 0.5): the Newton Hessian of
    base_wrench (a torque subset) needs no inverse of M (MotionProblem._curvature reads
    the differences of M itself; it used to solve M lambda = b, a one-line error here):
    against central differences of the exact gradient."""
    model = kt.compile_tree(kt.serial_chain(3), floating_base="xyz_zyx")
    problem = MotionProblem(model, ("joint_acceleration", "base_wrench"), duration=1.0,
                            samples=5, degree=6, control_points=8, rest_order=0,
                            limits="none", constraints="penalty", penalty=0.0)
    theta = 0.5 + 0.1 * np.random.default_rng(2).uniform(-1, 1, (8, model.nv))
    M = cmtm.mass_matrix(model, np.full((1, model.nv), 0.5))[0]
    assert np.linalg.eigvalsh(M)[0] < 1e-12 * np.linalg.eigvalsh(M)[-1]
    H = band_to_dense(problem.evaluate(DD.of(theta), [1.0, 1.0], hessian="newton").band)
    fd = np.zeros_like(H)
    for k in range(theta.size):
        e = np.zeros(theta.size)
        e[k] = 1e-5
        gradients = [problem.evaluate(DD.of(theta + sign * e.reshape(theta.shape)),
                                      [1.0, 1.0]).gradient for sign in (1, -1)]
        fd[:, k] = (gradients[0] - gradients[1]).ravel() / 2e-5
    # a forward difference (relative step 1.5e-8) against a central one (step 1e-5)
    assert np.max(np.abs(H - fd)) <= 1e-5 * np.max(np.abs(H))


# --- the optimizer and the inverse KKT, unchanged ---

def test_floating_human_optimizes_and_weights_are_recovered():
    """The pelvis moves 0.3 m forward while the left knee bends: direct solution for
    (joint acceleration, joint torque) weights (1, 0.01), then the inverse KKT recovers them
    (normalized to sum 1) to 1e-9, as the paper's Table 7 tests (seen ~1e-16)."""
    model = kt.compile_tree(kt.human(floating_base="xyz_zxy"))
    start = np.clip(np.zeros(model.nv), model.q_lower, model.q_upper)
    goal = start.copy()
    goal[0] = 0.3
    goal[model.joint_names.index("left_knee_Z")] = 0.5
    problem = MotionProblem(model, ("joint_acceleration", "joint_torque"), duration=1.0,
                            samples=20, control_points=11, start=start, goal=goal)
    result = solve(problem, (1.0, 0.01))
    kkt = recover_weights(problem, result.theta)
    assert result.status == "converged" and kkt.identifiable
    np.testing.assert_allclose(kkt.weights, np.array([1.0, 0.01]) / 1.01, rtol=0, atol=1e-9)
