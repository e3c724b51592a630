"""Tests of kinematic_trees.load_urdf: the example-robot-data robots, the features it reads,
what it ignores, and every malformed input (ModelError naming the element).

References: the hand-written panda() builder, Pinocchio's own URDF parser, hand values.
"""
import math
import re

import numpy as np
import pinocchio as pin
import pytest
from robot_data import urdf_path
from test_kinematic_trees import SEEDS, assert_models_equal, assert_same_dynamics

import kinematic_trees as kt

FINGERS_CLOSED = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}


def robot(*elements):
    """URDF text of a <robot> holding the given element strings."""
    return "\n".join(['<robot name="r">', *elements, "</robot>"])


def urdf_of(tree):
    """URDF text of a KinematicTree (a test-only writer; rpy recovered from R)."""
    def numbers(values):
        return " ".join(repr(float(x)) for x in values)

    keys = {"ixx": (0, 0), "ixy": (0, 1), "ixz": (0, 2),
            "iyy": (1, 1), "iyz": (1, 2), "izz": (2, 2)}
    lines = ['<robot name="test">']
    for name, link in tree.graph.nodes(data=True):
        inertia = " ".join(f'{key}="{float(link["inertia"][ij])!r}"' for key, ij in keys.items())
        lines.append(f'<link name="{name}"><inertial><origin xyz="{numbers(link["com"])}"/>'
                     f'<mass value="{link["mass"]!r}"/><inertia {inertia}/></inertial></link>')
    for parent, child, j in tree.graph.edges(data=True):
        limit = ("" if j["type"] == "fixed" else
                 f'<limit lower="{j["lower"]!r}" upper="{j["upper"]!r}" effort="1" velocity="1"/>')
        lines.append(f'<joint name="{j["name"]}" type="{j["type"]}"><parent link="{parent}"/>'
                     f'<child link="{child}"/><axis xyz="{numbers(j["axis"])}"/>'
                     f'<origin xyz="{numbers(j["p"])}" rpy="{numbers(_rpy_of(j["R"]))}"/>'
                     f'{limit}</joint>')
    return "\n".join(lines + ["</robot>"])


def _rpy_of(R):
    """URDF roll, pitch, yaw of a rotation R = Rz(yaw) Ry(pitch) Rx(roll) (|pitch| < 90 deg)."""
    return (math.atan2(R[2, 1], R[2, 2]), -math.asin(R[2, 0]), math.atan2(R[1, 0], R[0, 0]))


# --- the example-robot-data robots ---

def test_panda_builder_equals_locked_panda_urdf():
    from_urdf = kt.compile_tree(kt.load_urdf(urdf_path("panda"), lock=FINGERS_CLOSED))
    assert_models_equal(kt.compile_tree(kt.panda()), from_urdf, atol=1e-12)


def test_locked_panda_has_7_joints_and_keeps_the_hand_frames():
    model = kt.compile_tree(kt.load_urdf(urdf_path("panda"), lock=FINGERS_CLOSED))
    assert model.nv == 7 and model.base_name == "panda_link0"
    assert model.joint_names == tuple(f"panda_joint{i}" for i in range(1, 8))
    assert [(name, i) for name, i, _, _ in model.frames] == [
        ("panda_hand", 6), ("panda_hand_tcp", 6), ("panda_leftfinger", 6), ("panda_link8", 6),
        ("panda_rightfinger", 6)]
    tcp = {name: p for name, _, _, p in model.frames}["panda_hand_tcp"]
    np.testing.assert_allclose(tcp, [0.0, 0.0, 0.107 + 0.1034], atol=1e-15)
    np.testing.assert_allclose(model.mass[6], 0.735522 + 0.73 + 2 * 0.015, rtol=1e-15)


def test_human_urdf_loads_with_36_revolute_joints():
    model = kt.compile_tree(kt.load_urdf(urdf_path("human")))
    assert model.nv == 36 and set(model.joint_type.tolist()) == {kt.JOINT_REVOLUTE}
    assert model.base_name == "middle_pelvis"
    assert np.all(np.isfinite(model.q_lower)) and np.all(model.q_lower < model.q_upper)


def test_human_builder_is_the_human_urdf():
    """The same model, but for gravity: the y-up human's (0, -9.81, 0)."""
    assert_models_equal(kt.compile_tree(kt.human()),
                        kt.compile_tree(kt.load_urdf(urdf_path("human"), gravity=(0, -9.81, 0))),
                        atol=0.0)


def test_human_without_example_robot_data_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(kt.example_robots, "_candidate_robot_dirs",
                        lambda: iter([tmp_path / "nowhere"]))
    with pytest.raises(FileNotFoundError, match="example-robot-data is not installed .*"
                                                "pip install example-robot-data"):
        kt.human()


@pytest.mark.parametrize("name, lock", [("panda", FINGERS_CLOSED), ("human", {})])
def test_compiled_urdf_matches_pinocchio_urdf_parser(name, lock):
    """Mass matrix and gravity torques at random q against Pinocchio's own URDF parser
    (which merges fixed joints by itself)."""
    model = kt.compile_tree(kt.load_urdf(urdf_path(name), lock=lock))
    reference = pin.buildModelFromUrdf(str(urdf_path(name)))
    locked = [reference.getJointId(joint) for joint in lock]
    assert_same_dynamics(model, pin.buildReducedModel(reference, locked, pin.neutral(reference)))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_tree_matches_pinocchio_via_urdf(seed):
    """random_tree written as URDF and parsed by Pinocchio: lumping of rotated fixed children,
    composed placements and prismatic joints, against independent code."""
    tree = kt.random_tree(25, seed=seed, fixed_fraction=0.4)
    assert_same_dynamics(kt.compile_tree(tree), pin.buildModelFromXML(urdf_of(tree)))


@pytest.mark.parametrize("seed", SEEDS)
def test_urdf_round_trip_of_random_tree(seed):
    """Tolerance: rpy recovered from R in the writer loses ~1e-16 per angle."""
    tree = kt.random_tree(25, seed=seed, fixed_fraction=0.4)
    assert_models_equal(kt.compile_tree(kt.load_urdf(urdf_of(tree))), kt.compile_tree(tree),
                        atol=1e-12)


def test_path_str_and_xml_string_give_the_same_model():
    path = urdf_path("human")
    models = [kt.compile_tree(kt.load_urdf(source))
              for source in (path, str(path), path.read_text())]
    for model in models[1:]:
        assert_models_equal(model, models[0], atol=0.0)


def test_opening_the_fingers_moves_them_along_their_axes():
    model = kt.compile_tree(kt.load_urdf(
        urdf_path("panda"), lock={"panda_finger_joint1": 0.04, "panda_finger_joint2": 0.04}))
    frames = {name: (R, p) for name, _, R, p in model.frames}
    R_hand, p_hand = frames["panda_hand"]
    for finger, side in (("panda_leftfinger", 1.0), ("panda_rightfinger", -1.0)):
        np.testing.assert_allclose(frames[finger][1],
                                   p_hand + R_hand @ [0.0, side * 0.04, 0.0584], atol=1e-15)


# --- what is read, and what is ignored ---

def test_inertial_origin_rpy_rotates_the_inertia_into_the_link_frame():
    """Principal moments (1, 2, 3) about the inertial frame, turned 90 deg about z: the
    link-frame inertia is diag(2, 1, 3)."""
    tree = kt.load_urdf(robot(
        '<link name="base"/>',
        '<link name="arm"><inertial><origin xyz="0.1 0.2 0.3" rpy="0 0 1.5707963267948966"/>'
        '<mass value="2.5"/><inertia ixx="1" iyy="2" izz="3" ixy="0" ixz="0" iyz="0"/>'
        '</inertial></link>',
        '<joint name="j" type="revolute"><parent link="base"/><child link="arm"/></joint>'))
    arm = tree.graph.nodes["arm"]
    assert arm["mass"] == 2.5
    np.testing.assert_array_equal(arm["com"], [0.1, 0.2, 0.3])
    np.testing.assert_allclose(arm["inertia"], np.diag([2.0, 1.0, 3.0]), atol=1e-15)


def test_defaults_massless_links_default_axis_and_missing_limits():
    tree = kt.load_urdf(robot(
        '<link name="base"/>', '<link name="a"/>', '<link name="b"/>',
        '<joint name="ja" type="revolute"><parent link="base"/><child link="a"/></joint>',
        '<joint name="jb" type="continuous"><parent link="a"/><child link="b"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'))
    a, ja, jb = tree.graph.nodes["a"], tree.graph.edges["base", "a"], tree.graph.edges["a", "b"]
    assert a["mass"] == 0.0 and not a["com"].any() and not a["inertia"].any()
    np.testing.assert_array_equal(ja["axis"], [1.0, 0.0, 0.0])  # URDF default axis
    np.testing.assert_array_equal(ja["R"], np.eye(3))
    assert (ja["lower"], ja["upper"]) == (-np.inf, np.inf)
    assert (jb["lower"], jb["upper"]) == (-np.inf, np.inf)  # continuous joints have no limits


def test_visuals_collisions_transmissions_gazebo_and_unknown_tags_are_ignored():
    tree = kt.load_urdf(robot(
        '<material name="blue"><color rgba="0 0 1 1"/></material>',
        '<link name="base"><visual><origin xyz="9 9 9"/><geometry><mesh filename='
        '"package://nowhere/base.dae"/></geometry></visual></link>',
        '<link name="arm"><collision><geometry><box size="1 1 1"/></geometry></collision>'
        '<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>'
        '</inertial><sensor name="s"/></link>',
        '<joint name="j" type="prismatic"><parent link="base"/><child link="arm"/>'
        '<axis xyz="0 0 1"/><dynamics damping="1"/><safety_controller k_velocity="1"/>'
        '<calibration rising="0"/></joint>',
        '<transmission name="t"><joint name="j"/></transmission>',
        '<gazebo reference="arm"><mu1>0.2</mu1></gazebo>', '<anything_else/>'))
    model = kt.compile_tree(tree)
    assert model.link_names == ("arm",) and model.joint_type.tolist() == [kt.JOINT_PRISMATIC]


# --- malformed input ---

_BASE = '<link name="base"/>'
_ARM = '<link name="arm"/>'


@pytest.mark.parametrize("source, message", [
    ("<robot><link name='a'></robot>", "URDF: malformed XML"),
    ("<model/>", "URDF: the root element is <model>, expected <robot>"),
    (robot("<link/>"), "URDF: a <link> has no 'name' attribute"),
    (robot(_BASE, _ARM, '<joint type="fixed"><parent link="base"/><child link="arm"/></joint>'),
     "URDF: a <joint> has no 'name' attribute"),
    (robot(_BASE, _ARM, '<joint name="j"><parent link="base"/><child link="arm"/></joint>'),
     "joint 'j': missing attribute 'type'"),
    (robot(_BASE, _ARM, '<joint name="j" type="fixed"><child link="arm"/></joint>'),
     "joint 'j': missing <parent link=...>"),
    (robot(_BASE, _ARM, '<joint name="j" type="fixed"><parent link="base"/><child/></joint>'),
     "joint 'j': missing <child link=...>"),
    (robot(_BASE, '<joint name="j" type="fixed"><parent link="base"/><child link="hand"/>'
           '</joint>'),
     "joint 'j': child link 'hand' does not exist"),
    (robot(_BASE, _ARM, '<joint name="j" type="ball"><parent link="base"/><child link="arm"/>'
           '</joint>'),
     "joint 'j': unknown type 'ball'"),
    (robot(_BASE, _ARM, '<joint name="j" type="floating"><parent link="base"/>'
           '<child link="arm"/></joint>'),
     "joint 'j': floating joints are not supported"),
    (robot(_BASE, _ARM, '<joint name="j" type="planar"><parent link="base"/>'
           '<child link="arm"/></joint>'),
     "joint 'j': planar joints are not supported"),
    (robot(_BASE, _ARM, '<joint name="j" type="revolute"><parent link="base"/>'
           '<child link="arm"/><origin xyz="1 2"/></joint>'),
     "joint 'j': <origin xyz=\"1 2\"> expected 3 number(s)"),
    (robot(_BASE, '<link name="arm"><inertial><mass value="heavy"/></inertial></link>'),
     "link 'arm': <inertial>: <mass value=\"heavy\"> expected 1 number(s)"),
    (robot(_BASE, '<link name="arm"><inertial><mass value="-1"/></inertial></link>'),
     "link 'arm': mass is negative"),
    (robot(_BASE, _BASE), "link 'base' already exists"),
    (robot(_BASE, _ARM, '<joint name="j" type="revolute"><parent link="base"/>'
           '<child link="arm"/><limit lower="1" upper="0"/></joint>'),
     "joint 'j': lower limit 1.0 > upper limit 0.0"),
    (robot(_BASE, _ARM, '<joint name="j" type="revolute"><parent link="base"/>'
           '<child link="arm"/><axis xyz="0 0 0"/></joint>'),
     "joint 'j': axis is zero"),
    (robot(_BASE, _ARM, '<link name="tool"/>', '<joint name="j" type="revolute">'
           '<parent link="base"/><child link="arm"/></joint>'),
     "a tree has exactly one root link, found 2: ['base', 'tool'] have no parent joint"),
    (robot(_ARM, '<link name="tool"/>',
           '<joint name="j1" type="revolute"><parent link="arm"/><child link="tool"/></joint>',
           '<joint name="j2" type="revolute"><parent link="tool"/><child link="arm"/></joint>'),
     "joint 'j2': link 'arm' is an ancestor of 'tool'; this joint would close a cycle"),
])
def test_malformed_urdf_raises_model_error(source, message):
    with pytest.raises(kt.ModelError, match=re.escape(message)):
        kt.load_urdf(source)


def test_axes_of_fixed_joints_are_ignored():
    """Real files give fixed joints zero axes (Talos, Go2, Tiago Pro, the SO-101 ...)."""
    tree = kt.load_urdf(robot(_BASE, _ARM, '<joint name="j" type="fixed"><parent link="base"/>'
                                           '<child link="arm"/><axis xyz="0 0 0"/></joint>'))
    assert tree.graph.edges["base", "arm"]["type"] == "fixed"
    assert kt.compile_tree(tree).nv == 0


def test_unknown_lock_name_is_rejected():
    with pytest.raises(kt.ModelError, match=re.escape("lock: no joint named ['gripper']")):
        kt.load_urdf(urdf_path("panda"), lock=FINGERS_CLOSED | {"gripper": 0.0})


def test_missing_file_is_a_model_error(tmp_path):
    with pytest.raises(kt.ModelError, match="URDF: cannot read file .*missing.urdf"):
        kt.load_urdf(tmp_path / "missing.urdf")
