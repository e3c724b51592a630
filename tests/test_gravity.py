"""Gravity belongs to the model (DESIGN.md): every KinematicTree carries one, z-up
(0, 0, -9.81) unless told otherwise, the y-up human (0, -9.81, 0); compile_tree uses it
unless given another, and the compiled model states it.

References: the values given; statics in closed form (the torque a joint needs to hold
its subtree still is minus the moment of the subtree's weights about the joint axis,
from the naive link poses and the links' centres of mass, no engine pass).
"""
import math

import numpy as np
import pytest

import cmtm
import kinematic_trees as kt
from cmtm import naive
from ioc.models import PLANAR_GRAVITY, resolve_model

Z_UP, Y_UP = (0.0, 0.0, -9.81), (0.0, -9.81, 0.0)

BUILDERS = {"serial_chain": lambda **kw: kt.serial_chain(3, **kw),
            "two_link_planar": kt.two_link_planar, "panda": kt.panda,
            "random_tree": lambda **kw: kt.random_tree(5, seed=1, **kw)}


@pytest.mark.parametrize("builder", BUILDERS)
def test_builders_carry_z_up_gravity_unless_given_one(builder):
    assert BUILDERS[builder]().gravity.tolist() == list(Z_UP)
    assert kt.compile_tree(BUILDERS[builder]()).gravity.tolist() == list(Z_UP)
    tree = BUILDERS[builder](gravity=(1.0, 2.0, 3.0), floating_base="xyz_zyx")
    assert kt.compile_tree(tree).gravity.tolist() == [1.0, 2.0, 3.0]


def test_human_carries_y_up_gravity_also_with_a_floating_base():
    assert kt.human().gravity.tolist() == list(Y_UP)
    assert kt.compile_tree(kt.human()).gravity.tolist() == list(Y_UP)
    assert kt.compile_tree(kt.human(floating_base="xyz_zxy")).gravity.tolist() == list(Y_UP)
    assert kt.compile_tree(kt.human(gravity=Z_UP)).gravity.tolist() == list(Z_UP)


def test_load_urdf_gravity_copy_and_compile_override():
    path = kt.example_robots_dir() / kt.example_robots.HUMAN_URDF
    assert kt.load_urdf(path).gravity.tolist() == list(Z_UP)       # URDF's convention
    tree = kt.load_urdf(path, gravity=Y_UP)
    assert tree.copy().gravity.tolist() == list(Y_UP)
    assert kt.compile_tree(tree, floating_base="xyz_zxy").gravity.tolist() == list(Y_UP)
    assert kt.compile_tree(tree, gravity=(0, 0, -1.62)).gravity.tolist() == [0, 0, -1.62]
    assert not kt.compile_tree(tree).gravity.flags.writeable


def test_command_line_models_keep_their_gravity():
    """two_link_planar on the command line keeps the gravity it had (PLANAR_GRAVITY)."""
    assert resolve_model("two_link_planar").gravity.tolist() == list(PLANAR_GRAVITY)
    assert resolve_model("chain3").gravity.tolist() == list(Z_UP)
    assert resolve_model("human").gravity.tolist() == list(Y_UP)
    assert resolve_model("human", gravity=(0, 0, -9.81)).gravity.tolist() == list(Z_UP)


@pytest.mark.parametrize("gravity", [(0.0, np.nan, 0.0), (0.0, 1.0), "down", (0, np.inf, 0)])
def test_bad_gravity_is_a_model_error(gravity):
    with pytest.raises(kt.ModelError, match=r"gravity: expected 3 finite numbers"):
        kt.KinematicTree(gravity=gravity)
    tree = kt.serial_chain(2)
    with pytest.raises(kt.ModelError, match=r"gravity: expected 3 finite numbers"):
        tree.gravity = gravity
    with pytest.raises(kt.ModelError, match=r"gravity: expected 3 finite numbers"):
        kt.compile_tree(tree, gravity=gravity)


def static_torques(model, q):
    """tau_j = -a_j . sum_{k in subtree(j)} (c_k - o_j) x m_k g at rest (world frame):
    the torque that holds joint j's subtree still against gravity (a revolute joint's
    world axis a_j through its origin o_j; prismatic joints: -a_j . sum m_k g)."""
    T = naive.link_poses_naive(model, q)
    g = np.asarray(model.gravity)
    tau = np.zeros(model.nv)
    for j in range(model.nv):
        axis = T[j, :3, :3] @ model.axis[j]
        subtree = range(j, model.subtree_end[j])
        weights = [model.mass[k] * g for k in subtree]
        if model.joint_type[j] == kt.JOINT_PRISMATIC:
            tau[j] = -axis @ np.sum(weights, axis=0)
            continue
        centres = [T[k, :3, :3] @ model.com[k] + T[k, :3, 3] for k in subtree]
        moment = sum(np.cross(c - T[j, :3, 3], w) for c, w in zip(centres, weights))
        tau[j] = -axis @ moment
    return tau


@pytest.mark.parametrize("seed", [None, 3])
def test_human_gravity_torques_match_statics(seed):
    """At q = 0 (standing, legs straight down) and at a random posture, with the human's
    own gravity; rounding only (sums of ~40 products of ~100 N m)."""
    human = kt.compile_tree(kt.human())
    q = np.zeros(human.nv) if seed is None else \
        np.random.default_rng(seed).uniform(-1.0, 1.0, human.nv)
    tau = cmtm.inverse_dynamics(human, np.stack([q, 0 * q, 0 * q]))[0]
    np.testing.assert_allclose(tau, static_torques(human, q), rtol=0, atol=1e-12)


def test_standing_human_hip_flexion_torques_are_small():
    """Legs straight down under y-up gravity: the hips' flexion joints (about z) hold
    1.77 N m, the leg's weight (13.7 kg) acting 1.3 cm in front of the hip, less than 3 %
    of the weight times the thigh's length; gravity along -z (the compile_tree default
    before gravity was the model's) gave 46.9 N m about the hips' x axes."""
    human = kt.compile_tree(kt.human())
    rest = np.zeros((3, human.nv))
    tau = cmtm.inverse_dynamics(human, rest)[0]
    leg = ["left_upperleg", "left_lowerleg", "left_foot"]
    weight = sum(human.mass[human.link_names.index(link)] for link in leg) * 9.81
    thigh = np.linalg.norm(human.placement_p[human.joint_names.index("left_knee_Z")])
    for side in ("left", "right"):
        flexion = tau[human.joint_names.index(f"{side}_hip_Z")]
        assert abs(flexion) < 0.03 * weight * thigh
        assert math.isclose(abs(flexion), 1.7693, abs_tol=1e-4)
    sideways = cmtm.inverse_dynamics(kt.compile_tree(kt.human(), gravity=Z_UP), rest)[0]
    assert abs(sideways[human.joint_names.index("left_hip_X")]) > 0.7 * weight * thigh
