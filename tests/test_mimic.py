"""Mimic joints: the three load_urdf modes, the coupling q = C q_ind + c and its chain rule.

References: Pinocchio's URDF parser with ``mimic=True`` (torques and mass matrix of the
coupled model in the independent coordinates), central finite differences of the engine
along the coupling (Jacobians), load_urdf with explicit ``lock`` (the lock mode) and hand
values.
"""
import contextlib
import re

import numpy as np
import pinocchio
import pytest
from robot_data import urdf_path
from test_kinematic_trees import assert_models_equal, graph_of
from test_urdf import robot

import cmtm
import kinematic_trees as kt
import pinocchio_ref
from cmtm import reference
from conftest import random_stack

PANDA_MIMIC = '<mimic joint="panda_finger_joint1"/>'
SCALED_MIMIC = '<mimic joint="panda_finger_joint1" multiplier="-0.5" offset="0.01"/>'
FD_RTOL = 1e-7
"""Central FD, h = eps**(1/3): error ~ eps**(2/3) (|y| + |y'''|) / |J| (as
test_jacobians.py's central-FD tolerance)."""


def panda_text(mimic_tag=PANDA_MIMIC):
    """panda.urdf, its finger mimic tag replaced by ``mimic_tag``."""
    text = urdf_path("panda").read_text()
    assert text.count(PANDA_MIMIC) == 1
    return text.replace(PANDA_MIMIC, mimic_tag)


def coupled_tree():
    """random_tree(6) with a revolute joint following another (-2 x, +0.3 rad) and a
    prismatic joint following a revolute one (0.1 m/rad)."""
    tree = kt.random_tree(6, seed=2, prismatic_fraction=0.4, fixed_fraction=0.2)
    types = {j["name"]: j["type"] for _, _, j in tree.graph.edges(data=True)}
    assert [types[name] for name in ("joint1", "joint2", "joint4", "joint5")] == [
        "revolute", "revolute", "revolute", "prismatic"]
    tree.couple_joint("joint4", "joint1", multiplier=-2.0, offset=0.3)
    tree.couple_joint("joint5", "joint2", multiplier=0.1)
    return tree


# --- the three modes ---

def test_default_mode_keeps_mimic_joints_independent_as_pinocchio_does():
    model = kt.compile_tree(kt.load_urdf(urdf_path("panda")))
    assert model.nv == pinocchio.buildModelFromUrdf(str(urdf_path("panda"))).nv == 9
    assert np.all(model.mimic_leader == -1) and not model.mimic_multiplier.any()


@pytest.mark.parametrize("lock, expected", [
    ({}, {"panda_finger_joint2": 0.0}),
    ({"panda_finger_joint1": 0.03}, {"panda_finger_joint1": 0.03, "panda_finger_joint2": 0.03}),
    ({"panda_finger_joint2": 0.01}, {"panda_finger_joint2": 0.01}),
])
def test_lock_mode_fixes_a_mimic_joint_at_multiplier_times_leader_plus_offset(lock, expected):
    """q_leader is the leader's lock position or 0; a joint locked by the user keeps it."""
    locked = kt.compile_tree(kt.load_urdf(urdf_path("panda"), mimic="lock", lock=lock))
    explicit = kt.compile_tree(kt.load_urdf(urdf_path("panda"), lock=expected))
    assert_models_equal(locked, explicit, atol=0.0)


def test_lock_mode_uses_multiplier_and_offset():
    """-0.5 x 0.02 + 0.01 = 0.0."""
    locked = kt.compile_tree(kt.load_urdf(panda_text(SCALED_MIMIC), mimic="lock",
                                          lock={"panda_finger_joint1": 0.02}))
    explicit = kt.compile_tree(kt.load_urdf(
        urdf_path("panda"), lock={"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.0}))
    assert_models_equal(locked, explicit, atol=1e-15)


def test_couple_mode_records_leader_multiplier_and_offset():
    model = kt.compile_tree(kt.load_urdf(panda_text(SCALED_MIMIC), mimic="couple"))
    follower = model.joint_names.index("panda_finger_joint2")
    leader = model.joint_names.index("panda_finger_joint1")
    assert model.nv == 9 and np.flatnonzero(model.mimic_leader >= 0).tolist() == [follower]
    assert model.mimic_leader[follower] == leader
    assert (model.mimic_multiplier[follower], model.mimic_offset[follower]) == (-0.5, 0.01)


def test_couple_mode_locks_the_follower_of_a_locked_leader_and_skips_fixed_joints():
    """Talos's gripper tags sit on fixed joints in talos_left_arm.urdf: nothing to couple."""
    coupled = kt.compile_tree(kt.load_urdf(urdf_path("panda"), mimic="couple",
                                           lock={"panda_finger_joint1": 0.02}))
    explicit = kt.compile_tree(kt.load_urdf(
        urdf_path("panda"), lock={"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02}))
    assert_models_equal(coupled, explicit, atol=0.0)
    talos = kt.example_robots_dir() / "talos_data" / "robots" / "talos_left_arm.urdf"
    assert "<mimic" in talos.read_text()
    assert kt.compile_tree(kt.load_urdf(talos, mimic="couple")).nv == 7


# --- the coupling map ---

def test_coupling_by_hand_sums_the_columns_by_the_chain_rule():
    tree = kt.serial_chain(3)
    tree.couple_joint("joint3", "joint1", multiplier=-2.0, offset=0.5)
    coupling = kt.coupling(kt.compile_tree(tree))
    np.testing.assert_array_equal(coupling.C, [[1.0, 0.0], [0.0, 1.0], [-2.0, 0.0]])
    np.testing.assert_array_equal(coupling.c, [0.0, 0.0, 0.5])
    assert coupling.independent.tolist() == [0, 1]
    q_stack = np.array([[0.1, 0.2], [1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(coupling.full_stack(q_stack),
                                  [[0.1, 0.2, 0.3], [1.0, 2.0, -2.0], [3.0, 4.0, -6.0]])
    J = np.array([[1.0, 10.0, 100.0]])
    np.testing.assert_array_equal(coupling.pull_back(J), [[1.0 - 200.0, 10.0]])


def test_uncoupled_model_has_the_identity_coupling(panda):
    coupling = kt.coupling(panda)
    np.testing.assert_array_equal(coupling.C, np.eye(7))
    assert not coupling.c.any() and coupling.independent.tolist() == list(range(7))


@pytest.mark.parametrize("quantity", ["link_velocity", "joint_torque"])
@pytest.mark.parametrize("order", [1, 2])
def test_coupled_jacobian_matches_central_fd_along_the_coupling(quantity, order):
    """d y / d q_ind = (d y / d q) C, against central FD of q_ind -> y(C q_ind + c)."""
    model = kt.compile_tree(coupled_tree())
    coupling = kt.coupling(model)
    n_in = cmtm.jacobian_input_orders(quantity, order)
    x = np.random.default_rng(order).uniform(-1.0, 1.0, (2, n_in, len(coupling.independent)))

    def outputs(batch):
        full = coupling.full_stack(batch)
        if quantity == "joint_torque":
            return cmtm.inverse_dynamics(model, full, order=order)
        v_L = cmtm.motion(model, full, order=order, dynamics=False, world=False).v_L
        return v_L.reshape(v_L.shape[:2] + (-1,))

    structured = coupling.pull_back(
        cmtm.jacobian(model, coupling.full_stack(x), quantity, order=order))
    central = reference.central_jacobian(outputs, x)
    assert structured.shape == central.shape
    error = np.max(np.abs(structured - central)) / np.max(np.abs(central))
    assert error <= FD_RTOL, f"relative error {error:.2e}"


@pytest.mark.parametrize("source", ["panda", "panda_scaled", "pr2"])
def test_coupled_torques_and_mass_matrix_match_pinocchio_mimic_model(source):
    """C^T tau(C q_ind + c) and C^T M C against Pinocchio's mimic=True parse, which has only
    the independent joints: 1e-12 (both exact; seen ~2e-15). pr2: ten couplings with
    multipliers +-1 and continuous joints; panda_scaled: multiplier -0.5, offset 0.01."""
    text = {"panda": panda_text, "panda_scaled": lambda: panda_text(SCALED_MIMIC),
            "pr2": lambda: (kt.example_robots_dir() / "pr2_description" / "urdf" /
                            "pr2.urdf").read_text()}[source]()
    with pytest.warns(kt.InertiaWarning) if source == "pr2" else contextlib.nullcontext():
        model = kt.compile_tree(kt.load_urdf(text, mimic="couple"))
    pin_model = pinocchio.buildModelFromXML(text, mimic=True)
    coupling = kt.coupling(model)
    names = [model.joint_names[i] for i in coupling.independent]
    assert pin_model.nv == len(names) < model.nv
    q, v, a = np.random.default_rng(1).uniform(-1.0, 1.0, (3, len(names)))
    full = coupling.full_stack(np.stack([q, v, a]))
    tau = coupling.pull_back(cmtm.inverse_dynamics(model, full)[0])
    M = coupling.C.T @ cmtm.mass_matrix(model, full[0]) @ coupling.C
    expected_tau = pinocchio_ref.rnea_by_name(pin_model, names, q, v, a)
    q_pin, idx_v = pinocchio_ref.configuration_by_name(pin_model, names, q)
    expected_M = pinocchio_ref.mass_matrix(pin_model, q_pin)[np.ix_(idx_v, idx_v)]
    np.testing.assert_allclose(tau, expected_tau, rtol=0, atol=1e-12 * np.max(np.abs(tau)))
    np.testing.assert_allclose(M, expected_M, rtol=0, atol=1e-12 * np.max(np.abs(M)))


# --- bad input ---

_LEADER = ('<link name="base"/><link name="a"/><link name="b"/>'
           '<joint name="ja" type="revolute"><parent link="base"/><child link="a"/></joint>')


@pytest.mark.parametrize("mode", ["lock", "couple"])
@pytest.mark.parametrize("tag, message", [
    ('<mimic joint="nowhere"/>',
     "joint 'jb': <mimic> follows joint 'nowhere', which is not in the URDF"),
    ('<mimic multiplier="2"/>', "joint 'jb': <mimic> has no 'joint' attribute"),
    ('<mimic joint="ja" multiplier="two"/>',
     "joint 'jb': <mimic>: <mimic multiplier=\"two\"> expected 1 number(s)"),
])
def test_bad_mimic_tag_is_a_model_error(mode, tag, message):
    source = robot(_LEADER, '<joint name="jb" type="revolute"><parent link="a"/>'
                   f'<child link="b"/>{tag}</joint>')
    with pytest.raises(kt.ModelError, match=re.escape(message)):
        kt.load_urdf(source, mimic=mode)


def test_default_mode_does_not_read_mimic_tags_as_pinocchio():
    source = robot(_LEADER, '<joint name="jb" type="revolute"><parent link="a"/>'
                   '<child link="b"/><mimic joint="nowhere"/></joint>')
    assert kt.compile_tree(kt.load_urdf(source)).nv == 2


def test_unknown_mimic_mode_is_a_value_error():
    with pytest.raises(ValueError, match="mimic: expected one of independent, lock, couple"):
        kt.load_urdf(urdf_path("panda"), mimic="follow")


def _chain_with_fixed_joint():
    """serial_chain(3) with joint3 fixed at 0 and joint2 coupled to joint1."""
    tree = kt.serial_chain(3)
    tree.lock_joint("joint3", 0.0)
    tree.couple_joint("joint2", "joint1")
    return tree


@pytest.mark.parametrize("name, leader, message", [
    ("joint1", "joint9", "joint 'joint1' mimics joint 'joint9', which does not exist"),
    ("joint1", "joint1", "joint 'joint1' mimics itself"),
    ("joint1", "joint3", "joint 'joint1' mimics joint 'joint3', which is fixed"),
    ("joint3", "joint1", "joint 'joint3': a fixed joint cannot mimic joint 'joint1'"),
    ("joint1", "joint2", "joint 'joint1' mimics joint 'joint2', which itself mimics 'joint1'"),
    ("joint9", "joint1", "joint 'joint9' does not exist"),
])
def test_couple_joint_rejects(name, leader, message):
    with pytest.raises(kt.ModelError, match=re.escape(message)):
        _chain_with_fixed_joint().couple_joint(name, leader)


@pytest.mark.parametrize("mimic, message", [
    (("j9", 1.0, 0.0), "joint 'j2' mimics joint 'j9', which does not exist"),
    ("j1", "joint 'j2': mimic: expected (leader joint name, multiplier, offset)"),
    (("j1", float("nan"), 0.0), "joint 'j2': mimic multiplier: expected finite"),
    ((3, 1.0, 0.0), "joint 'j2': mimic: the leader must be a joint name, got 3"),
])
def test_validate_checks_mimic_attributes_of_hand_built_graphs(mimic, message):
    graph = graph_of(("j1", "base", "a"), ("j2", "a", "b"))
    graph.edges["a", "b"]["mimic"] = mimic
    with pytest.raises(kt.ModelError, match=re.escape(message)):
        kt.KinematicTree.from_graph(graph)


def test_locking_a_follower_removes_its_coupling_and_locking_a_leader_is_caught():
    tree = _chain_with_fixed_joint()
    tree.lock_joint("joint2", 0.0)
    assert tree.graph.edges["link1", "link2"]["mimic"] is None
    tree = _chain_with_fixed_joint()
    tree.lock_joint("joint1", 0.0)
    with pytest.raises(kt.ModelError, match="joint 'joint2' mimics joint 'joint1', which is"):
        kt.compile_tree(tree)


@pytest.mark.parametrize("method, value, message", [
    ("full_stack", np.zeros((3, 3)), "q_stack: expected shape (..., K, 2) over the 2"),
    ("full_stack", np.zeros(2), "q_stack: expected shape (..., K, 2)"),
    ("pull_back", np.zeros((4, 2)), "covectors: expected a last axis over the 3 joints"),
])
def test_coupling_rejects_wrong_shapes(method, value, message):
    tree = kt.serial_chain(3)
    tree.couple_joint("joint3", "joint1")
    with pytest.raises(ValueError, match=re.escape(message)):
        getattr(kt.coupling(kt.compile_tree(tree)), method)(value)


def test_coupled_model_runs_the_engine_on_all_joints():
    """The engine sees an ordinary nv-joint model; only the map knows the coupling."""
    model = kt.compile_tree(coupled_tree())
    q_stack = random_stack(model, 3, n_samples=2)
    assert cmtm.inverse_dynamics(model, q_stack).shape == (2, 1, model.nv)
