"""Recorded motion in other conventions (ioc.data): DeepMimic clips mapped onto the human's
joints against forward kinematics of the engine (cmtm.link_poses) and the clips' own
quaternions (read here by the published frame layout, converted by scipy), the Tait-Bryan
decomposition against scipy's Euler angles, column maps, mean-locking, windows and
movement segments against a minimum-jerk closed form."""
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import cmtm
import kinematic_trees as kt
from ioc.data import (DEEPMIMIC_HINGE_AXIS, HUMAN_CLIP_MAP, Clip, MotionData, chain_angles,
                      clip_motion, clip_trial, cut_window, joint_locks, read_clip, read_map,
                      read_mapped, segments)

pybullet_data = pytest.importorskip("pybullet_data")   # the test extra: data files only
MOTIONS = Path(pybullet_data.getDataPath()) / "data" / "motions"
CLIPS = sorted(path.stem.removeprefix("humanoid3d_") for path in MOTIONS.glob("humanoid3d_*.txt"))
SINGULAR = {"cartwheel": ("left_shoulder",), "dance_a": ("right_shoulder",),
            "dance_b": ("left_shoulder",), "punch": ("right_shoulder",),
            "spin": ("root", "left_shoulder")}
"""Clip joints whose model chain (human.urdf's Z-X-Y) comes within 5 deg of its singularity
(measured: 85.0-86.5 deg on the middle axis); the other clips stay clear."""
QUATERNION_AT = {"root": 4, "chest": 8, "neck": 12, "right_hip": 16, "right_ankle": 21,
                 "right_shoulder": 25, "left_hip": 30, "left_ankle": 35, "left_shoulder": 39}
HINGE_AT = {"right_knee": 20, "right_elbow": 29, "left_knee": 34, "left_elbow": 43}
"""The DeepMimic frame layout as pybullet_envs/deep_mimic/env/humanoid_pose_interpolator.py
reads it (quaternions w, x, y, z), written out here independently of ioc.data."""
EXACT = [name for name in HUMAN_CLIP_MAP if not name.endswith("ankle")]
"""Clip joints the human represents exactly (the ankles are Z-X only)."""


def clip_path(name):
    return MOTIONS / f"humanoid3d_{name}.txt"


@pytest.fixture(scope="module")
def floating_human():
    return kt.compile_tree(kt.human(floating_base="xyz_zxy"))


def clip_reference(name):
    """(root position (N, 3), {clip joint: Rotation (N,)}) from the file by the layout."""
    frames = np.array(json.loads(clip_path(name).read_text())["Frames"])
    rotations = {joint: Rotation.from_quat(frames[:, [at + 1, at + 2, at + 3, at]])
                 for joint, at in QUATERNION_AT.items()}
    rotations |= {joint: Rotation.from_rotvec(frames[:, at, None] * [0.0, 0.0, 1.0])
                  for joint, at in HINGE_AT.items()}
    return frames[:, 1:4], rotations


def pose_errors(model, data, name, joints):
    """Per clip joint: the largest rotation angle between the model's link relative to its
    parent link (forward kinematics of the mapped angles, the others 0) and the clip's."""
    names = model.joint_names
    q = np.zeros((len(data.times), model.nv))
    q[:, [names.index(n) for n in data.joint_names]] = data.q
    T = cmtm.link_poses(model, q)
    position, reference = clip_reference(name)
    errors = {}
    for joint in joints:
        chain = [names.index(n) for n in HUMAN_CLIP_MAP[joint]]
        first = next(i for i in chain if model.joint_type[i] == kt.JOINT_REVOLUTE)
        parent = model.parent[first]
        R_parent = T[:, parent, :3, :3] if parent >= 0 else np.eye(3)
        relative = Rotation.from_matrix(np.swapaxes(R_parent, 1, 2) @ T[:, chain[-1], :3, :3])
        errors[joint] = float(np.max((relative.inv() * reference[joint]).magnitude()))
    if "root" in joints:
        pelvis = names.index(HUMAN_CLIP_MAP["root"][-1])
        errors["root position"] = float(np.max(np.abs(T[:, pelvis, :3, 3] - position)))
    return errors


# --- the clip's skeleton and the decomposition ---

def test_deepmimic_humanoid_urdf_has_world_frames_at_rest_and_z_hinges():
    """What read_clip assumes of the clip's skeleton, read from pybullet_data's humanoid.urdf:
    every joint origin without rotation, knees and elbows revolute about z."""
    text = (Path(pybullet_data.getDataPath()) / "humanoid" / "humanoid.urdf").read_bytes()
    root = ET.fromstring(text.rstrip(b"\0"))              # the file ends in a NUL byte
    for joint in root.iter("joint"):
        origin = joint.find("origin")
        assert origin is None or np.allclose([float(v) for v in origin.get("rpy").split()], 0)
        if joint.get("type") == "revolute":
            assert joint.get("name") in HINGE_AT
            axis = [float(v) for v in joint.find("axis").get("xyz").split()]
            assert np.array_equal(axis, DEEPMIMIC_HINGE_AXIS)
    assert {j.get("name") for j in root.iter("joint") if j.get("type") == "spherical"} == \
        set(QUATERNION_AT) - {"root"}


def test_chain_angles_match_scipy_intrinsic_euler_angles():
    rotations = Rotation.random(500, random_state=1)
    angles, middle, residual = chain_angles(rotations.as_matrix(), np.eye(3)[[2, 0, 1]])
    difference = angles - rotations.as_euler("ZXY")      # intrinsic z, x, y
    assert np.max(np.abs(np.angle(np.exp(1j * difference)))) <= 1e-12   # atan2 rounding
    assert np.array_equal(middle, angles[:, 1]) and np.max(residual) <= 1e-12


def test_chain_angles_with_signed_axes_rebuild_the_rotation():
    """human.urdf's right shoulder: z, -x, y."""
    axes = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    rotations = Rotation.random(500, random_state=2)
    angles, _, _ = chain_angles(rotations.as_matrix(), axes)
    rebuilt = Rotation.identity(500)
    for axis, angle in zip(axes, angles.T):
        rebuilt = rebuilt * Rotation.from_rotvec(angle[:, None] * axis)
    assert np.max((rebuilt.inv() * rotations).magnitude()) <= 1e-12


def test_two_axis_chain_drops_exactly_the_third_angle():
    """Z-X (the ankles): the residual is the Z-X-Y decomposition's y angle."""
    rotations = Rotation.random(500, random_state=3)
    angles, _, residual = chain_angles(rotations.as_matrix(), np.eye(3)[[2, 0]])
    euler = rotations.as_euler("ZXY")
    assert np.max(np.abs(np.angle(np.exp(1j * (angles - euler[:, :2]))))) <= 1e-12
    assert np.allclose(residual, np.abs(euler[:, 2]), rtol=0, atol=1e-9)


def test_one_axis_chain_takes_the_twist_and_unwraps():
    """A hinge turning steadily through three revolutions about -z."""
    t = np.linspace(0.0, 6 * np.pi, 400)
    angles, middle, residual = chain_angles(
        Rotation.from_rotvec(t[:, None] * [0.0, 0.0, 1.0]).as_matrix(), [[0.0, 0.0, -1.0]])
    assert middle is None and np.max(residual) <= 1e-12
    assert np.allclose(angles[:, 0], -t, rtol=0, atol=1e-12)


# --- clips onto the human ---

CLEAR = [name for name in CLIPS if name not in SINGULAR]


@pytest.mark.parametrize("name", CLEAR)
def test_clip_poses_are_reproduced_by_forward_kinematics(floating_human, name):
    """Every exactly representable joint of every clip that stays clear of the singularity:
    rotation error <= 1e-9 rad (measured <= 3.1e-15 over all 15 clips), root position to
    1e-12 m (measured 0)."""
    data = clip_motion(read_clip(clip_path(name)), floating_human)
    errors = pose_errors(floating_human, data, name, EXACT)
    assert errors.pop("root position") <= 1e-12
    assert max(errors.values()) <= 1e-9, errors


@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_singular_clips_stop_and_their_other_joints_are_reproduced(floating_human, name):
    clip = read_clip(clip_path(name))
    with pytest.raises(ValueError, match="within 5 deg of the chain's singularity"):
        clip_motion(clip, floating_human)
    mapping = {joint: chain for joint, chain in HUMAN_CLIP_MAP.items()
               if joint not in SINGULAR[name]}
    errors = pose_errors(floating_human, clip_motion(clip, floating_human, mapping), name,
                         [joint for joint in EXACT if joint in mapping])
    assert max(errors.values()) <= 1e-9, errors


def test_punch_right_shoulder_error_names_the_joint_and_the_frame(floating_human):
    with pytest.raises(ValueError) as error:
        clip_motion(read_clip(clip_path("punch")), floating_human)
    message = str(error.value)
    assert "humanoid3d_punch.txt: right_shoulder onto right_shoulder_Z, right_shoulder_X, " \
        "right_shoulder_Y: frame 48 (t = 1.6 s): the middle joint right_shoulder_X reaches " \
        "85.2 deg" in message and "\n" not in message


def test_ankles_lose_only_the_rotation_about_the_missing_axis(floating_human):
    """Z-X ankles: the model's foot differs from the clip's by a rotation about the foot's
    y axis (c = z x x), whose largest angle the notice reports."""
    data = clip_motion(read_clip(clip_path("walk")), floating_human)
    names = floating_human.joint_names
    q = np.zeros((len(data.times), floating_human.nv))
    q[:, [names.index(n) for n in data.joint_names]] = data.q
    T = cmtm.link_poses(floating_human, q)
    _, reference = clip_reference("walk")
    shank, foot = names.index("right_knee_Z"), names.index("right_ankle_X")
    model = Rotation.from_matrix(np.swapaxes(T[:, shank, :3, :3], 1, 2) @ T[:, foot, :3, :3])
    dropped = (model.inv() * reference["right_ankle"]).as_rotvec()
    assert np.max(np.abs(dropped[:, [0, 2]])) <= 1e-12
    notice = next(n for n in data.notices if n.startswith("right_ankle"))
    assert f"up to {np.rad2deg(np.max(np.abs(dropped[:, 1]))):.3g} deg" in notice


def test_chain_under_rotated_placements_turns_the_child_as_the_clip_does():
    """A spherical chain with skewed orthonormal axes, behind placements with rotations (so
    the rest frames are not the world's): the child link's rotation from its rest pose is
    the parent's rotation from its rest pose times the clip's Q (the clip's convention),
    by forward kinematics of the engine, whatever the parent's own joint does."""
    u = Rotation.from_rotvec([0.4, -1.1, 0.7]).as_matrix().T      # rows: orthonormal axes
    tree = kt.KinematicTree()
    for link in ("a", "v1", "v2", "b"):
        tree.add_link(link, mass=1.0, inertia=0.01 * np.eye(3))
    tree.add_link("base")
    tree.add_joint("h", "base", "a", axis=(0.0, 1.0, 0.0), rpy=(0.3, -0.5, 1.1))
    tree.add_joint("s1", "a", "v1", axis=u[0], xyz=(0.1, 0.2, -0.3), rpy=(0.7, 0.2, -0.4))
    tree.add_joint("s2", "v1", "v2", axis=-u[1])
    tree.add_joint("s3", "v2", "b", axis=u[2])
    model = kt.compile_tree(tree)
    n = 50
    Q = Rotation.from_rotvec(np.linspace([0.0, 0.0, 0.0], [0.9, -0.6, 0.8], n)).as_matrix()
    clip = Clip(np.linspace(0.0, 1.0, n), np.zeros((n, 3)), {"chest": Q}, "synthetic", ())
    data = clip_motion(clip, model, {"chest": ("s1", "s2", "s3")})
    names = model.joint_names
    q = np.zeros((n, model.nv))
    q[:, names.index("h")] = np.linspace(-0.4, 0.8, n)
    q[:, [names.index(j) for j in data.joint_names]] = data.q
    a, b = model.link_names.index("a"), model.link_names.index("b")
    posed, rest = cmtm.link_poses(model, q)[..., :3, :3], cmtm.link_poses(
        model, np.zeros(model.nv))[:, :3, :3]
    child = posed[:, b] @ rest[b].T
    expected = posed[:, a] @ rest[a].T @ Q
    assert np.max(np.abs(child - expected)) <= 1e-13


def test_fixed_pelvis_human_drops_the_root_with_a_notice():
    data = clip_motion(read_clip(clip_path("walk")), kt.compile_tree(kt.human()))
    assert len(data.joint_names) == 26 and "middle_pelvis_ry" not in data.joint_names
    assert any("root" in notice and "not mapped" in notice for notice in data.notices)


def test_clip_with_an_arm_map_holds_the_rest_at_the_clip_pose(floating_human):
    """clip_trial: the mapped arm moves; the other clip joints come with their default
    decomposition (to be locked at their mean), the singular right shoulder of the punch
    only as a notice when it is held, not moved."""
    arm = {"left_shoulder": HUMAN_CLIP_MAP["left_shoulder"],
           "left_elbow": HUMAN_CLIP_MAP["left_elbow"]}
    clip = read_clip(clip_path("punch"))
    pose, movable = clip_trial(clip, floating_human, arm)
    assert movable == ("left_shoulder_Z", "left_shoulder_X", "left_shoulder_Y", "left_elbow_Z")
    full = {j: c for j, c in HUMAN_CLIP_MAP.items() if j not in SINGULAR["punch"]}
    reference = clip_motion(clip, floating_human, full)
    for n in reference.joint_names:
        assert np.array_equal(pose.q[:, pose.joint_names.index(n)],
                              reference.q[:, reference.joint_names.index(n)]), n
    assert any(n.startswith("right_shoulder (held at its mean): frame 48") for n in pose.notices)


# --- reading clips: bad files ---

def frames_text(frames):
    return json.dumps({"Loop": "none", "Frames": frames})


GOOD = [0.5] + [0.0, 0.9, 0.0] + [1.0, 0, 0, 0] + [1.0, 0, 0, 0] * 2 + [1.0, 0, 0, 0, 0.3] \
    + [1.0, 0, 0, 0] * 2 + [0.2] + [1.0, 0, 0, 0, 0.3] + [1.0, 0, 0, 0] * 2 + [0.2]
BAD_CLIPS = {
    "frame length": ([GOOD, GOOD[:-1], GOOD], "frame 1: expected 44 values"),
    "one frame": ([GOOD], "a list of at least 2 frames"),
    "zero duration": ([[0.0] + GOOD[1:], GOOD], "frame 0: expected a duration > 0 s"),
    "zero quaternion": ([GOOD, GOOD[:8] + [0.0] * 4 + GOOD[12:]],
                        "frame 1: chest: expected a rotation quaternion"),
    "not a number": ([GOOD, GOOD[:3] + ["x"] + GOOD[4:]], "frame 1: expected finite numbers"),
}


def test_good_frame_has_the_layout_length():
    assert len(GOOD) == 44


@pytest.mark.parametrize("frames, message", BAD_CLIPS.values(), ids=BAD_CLIPS.keys())
def test_bad_clip_is_a_value_error(tmp_path, frames, message):
    path = tmp_path / "clip.txt"
    path.write_text(frames_text(frames), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_clip(path)


def test_clip_that_is_not_json_is_a_value_error(tmp_path):
    path = tmp_path / "clip.txt"
    path.write_text("Frames: 1 2 3", encoding="utf-8")
    with pytest.raises(ValueError, match="expected a DeepMimic clip .JSON with 'Frames'."):
        read_clip(path)


def test_clip_quaternions_are_normalized_with_a_notice():
    clip = read_clip(clip_path("kick"))
    assert clip.notices == ("quaternions normalized: the largest was 0.417 off unit norm "
                            "(right_hip, frame 27)",)
    R = clip.rotations["right_hip"]
    assert np.allclose(R @ np.swapaxes(R, 1, 2), np.eye(3), rtol=0, atol=1e-14)


# --- column maps, locking, windows, segments ---

def table(tmp_path, labels, q, times):
    path = tmp_path / "motion.csv"
    rows = [",".join(["time", *labels])]
    rows += [",".join(repr(float(x)) for x in (t, *row)) for t, row in zip(times, q)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_json_and_csv_maps_agree(tmp_path):
    (tmp_path / "m.json").write_text('{"hip": "joint1", "R": ["a", "b"]}', encoding="utf-8")
    (tmp_path / "m.csv").write_text("hip,joint1\nR,a\n\nR,b\n", encoding="utf-8")
    assert read_map(tmp_path / "m.json") == read_map(tmp_path / "m.csv") == \
        {"hip": ("joint1",), "R": ("a", "b")}


BAD_MAPS = {
    "joint twice": ("m.json", '{"a": "joint1", "b": "joint1"}', "joint1' from 'a' and 'b'"),
    "three fields": ("m.csv", "a,joint1,x\n", "line 1: expected 2 fields"),
    "empty": ("m.csv", "\n", "got an empty file"),
    "not an object": ("m.json", '["a"]', "expected a non-empty JSON object"),
    "number": ("m.json", '{"a": 3}', "'a': expected a model joint name"),
    "suffix": ("m.txt", "a,joint1\n", "expected a map file ending in .csv, .json"),
}


@pytest.mark.parametrize("name, text, message", BAD_MAPS.values(), ids=BAD_MAPS.keys())
def test_bad_map_is_a_value_error(tmp_path, name, text, message):
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_map(tmp_path / name)


def test_mapped_columns_come_in_model_order(tmp_path):
    times = np.linspace(0.0, 1.0, 5)
    q = np.arange(15.0).reshape(5, 3)
    path = table(tmp_path, ["kn", "extra", "hp"], q, times)
    data = read_mapped(path, ("joint1", "joint2", "joint3"), {"kn": ("joint3",),
                                                              "hp": ("joint1",)})
    assert data.joint_names == ("joint1", "joint3")
    assert np.array_equal(data.q, q[:, [2, 0]]) and data.notices == ("ignored columns: extra",)


@pytest.mark.parametrize("mapping, message", [
    ({"kn": ("joint7",)}, "got unknown joint7"),
    ({"knee": ("joint1",)}, "missing knee"),
    ({"kn": ("joint1", "joint2")}, "expected one model joint per column"),
])
def test_bad_mapping_of_a_table_is_a_value_error(tmp_path, mapping, message):
    path = table(tmp_path, ["kn"], np.zeros((3, 1)), np.arange(3.0))
    with pytest.raises(ValueError, match=message):
        read_mapped(path, ("joint1", "joint2", "joint3"), mapping)


def motion(names, q, times=None):
    times = np.arange(len(q), dtype=float) if times is None else times
    return MotionData(times, np.asarray(q, dtype=float), tuple(names), "test", ())


def test_joint_locks_hold_unmoved_joints_at_their_pooled_mean():
    joints = ("a", "b", "c", "d")
    first = motion(("a", "b", "c"), [[1, 2, 3], [1, 4, 5]])
    second = motion(("a", "b", "c"), [[1, 6, 7], [1, 8, 9], [1, 30, 11]])
    locks, (one, two), notices = joint_locks(joints, [first, second], movable=["a"],
                                             lock={"c": 0.25})
    assert locks == {"b": 10.0, "c": 0.25, "d": 0.0}            # (2 + 4 + 6 + 8 + 30) / 5
    assert one.joint_names == two.joint_names == ("a",) and np.array_equal(two.q, [[1]] * 3)
    assert notices == ("locked at 0 (no data): d",)


@pytest.mark.parametrize("movable, lock, message", [
    (["e"], None, "movable: expected joints of the model, got e"),
    (["d"], None, "movable: expected joints the data cover, got d"),
    (["a"], {"a": 0.0}, "expected disjoint joints, got a in both"),
    (None, {"e": 0.0}, "lock: expected joints of the model, got e"),
])
def test_bad_joint_locks_are_value_errors(movable, lock, message):
    with pytest.raises(ValueError, match=message):
        joint_locks(("a", "b", "c", "d"), motion(("a", "b"), [[0, 0]]), movable, lock)


def test_window_keeps_the_samples_inside_on_the_files_time_axis():
    data = motion(("a",), np.arange(11.0)[:, None], np.linspace(1.0, 2.0, 11))
    cut = cut_window(data, (1.25, 1.7), min_samples=4)
    assert np.allclose(cut.times, [1.3, 1.4, 1.5, 1.6, 1.7]) and np.array_equal(cut.q[:, 0],
                                                                                [3, 4, 5, 6, 7])


@pytest.mark.parametrize("window, message", [
    ((0.5, 1.5), r"expected a window inside the time axis \[1, 2\] s of test"),
    ((1.5, 2.5), r"inside the time axis"),
    ((1.2, 1.5), "expected at least 5 samples .the spline's control points., got 4"),
    ((1.5, 1.2), "expected t0 < t1"),
])
def test_bad_window_is_a_value_error(window, message):
    data = motion(("a",), np.zeros((11, 1)), np.linspace(1.0, 2.0, 11))
    with pytest.raises(ValueError, match=message):
        cut_window(data, window, min_samples=5)


def minimum_jerk(t, start, duration, amplitude):
    s = np.clip((t - start) / duration, 0.0, 1.0)
    return amplitude * s ** 3 * (10 - 15 * s + 6 * s ** 2)


def test_segments_of_minimum_jerk_movements_cross_at_the_closed_form():
    """Two reaches of equal peak speed (amplitude / duration) with rest between: each
    crosses 5 % of its peak speed 30 s^2 (1 - s)^2 = 0.05 * 30 / 16 at
    s = (1 - sqrt(1 - sqrt(0.05)))/2 = 0.0594 and 1 - s of its duration."""
    times = np.arange(0.0, 4.0 + 5e-4, 1e-3)           # 1 kHz
    q = minimum_jerk(times, 0.5, 1.0, 1.0) + minimum_jerk(times, 2.5, 0.8, -0.8)
    data = motion(("a", "b"), np.column_stack([q, 0.5 * q]), times)
    s = (1 - np.sqrt(1 - np.sqrt(0.05))) / 2
    expected = [(0.5 + s * 1.0, 0.5 + (1 - s) * 1.0), (2.5 + s * 0.8, 2.5 + (1 - s) * 0.8)]
    found = segments(data)
    assert len(found) == 2
    assert np.allclose(found, expected, rtol=0, atol=1.5e-3)     # 1 ms sampling
    assert segments(data, min_gap=2.0) == [(found[0][0], found[1][1])]    # merged
    assert segments(data, min_duration=0.8) == [found[0]]      # 0.88 s kept, 0.70 s dropped
    assert segments(motion(("a",), np.ones((5, 1)))) == []
