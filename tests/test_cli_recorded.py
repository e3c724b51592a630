"""``cmtm ioc`` on recorded motion in other conventions: --boundary, --map (columns renamed
against the same data under the model's names), --window (against the same rows cut into
a file), a DeepMimic clip on human.urdf, and bad input (one line, exit 2, nothing written).
"""
import json

import pytest

import kinematic_trees as kt
from ioc.direct import solve
from ioc.problem import MotionProblem
from ioc_synthetic import (COSTS, JOINTS, NAMES, NOISE_RAD, TIMES, WEIGHTS, build, ioc_argv,
                           noisy, run, write_csv)

pybullet_data = pytest.importorskip("pybullet_data")     # the test extra: data files only
KICK = f"{pybullet_data.getDataPath()}/data/motions/humanoid3d_kick.txt"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The synthetic motion with noise (seed 0) under the model's names, and renamed."""
    case = build(tmp_path_factory.mktemp("recorded"))
    case.q_noisy = noisy(case.q, seed=0)
    case.csv = write_csv(case.folder / "walk.csv", case.q_noisy)
    case.renamed = write_csv(case.folder / "renamed.csv", case.q_noisy[:, [2, 0, 1]],
                             names=("ankle", "hip", "knee"))
    case.map = case.folder / "map.json"
    case.map.write_text(json.dumps({"hip": "joint1", "knee": "joint2", "ankle": "joint3"}),
                        encoding="utf-8")
    return case


def weights(argv):
    code, stdout, stderr = run([*argv, "--json"])
    assert code == 0, stderr
    return json.loads(stdout)


KKT = ["--estimator", "kkt"]
"""Inverse KKT on the fit: the cheapest estimator shows that the same samples came in."""


def test_mapped_columns_give_the_weights_of_the_models_names(recorded):
    plain = weights(ioc_argv(recorded.csv, extra=KKT))
    mapped = weights(ioc_argv(recorded.renamed, extra=[*KKT, "--map", str(recorded.map)]))
    assert mapped["weights"] == plain["weights"]
    assert mapped["joint_names"] == list(JOINTS) and mapped["settings"]["map"] == \
        str(recorded.map)


def test_window_gives_the_weights_of_the_cut_rows(recorded):
    keep = (TIMES >= 0.3 - 1e-9) & (TIMES <= 1.7 + 1e-9)
    cut = write_csv(recorded.folder / "cut.csv", recorded.q_noisy[keep], times=TIMES[keep])
    windowed = weights(ioc_argv(recorded.csv, extra=[*KKT, "--window", "0.3,1.7"]))
    assert windowed["weights"] == weights(ioc_argv(cut, extra=KKT))["weights"]
    assert windowed["settings"]["window"] == [0.3, 1.7]


def test_data_boundary_follows_a_motion_whose_ends_move(recorded):
    """The synthetic problem's optimum with end velocities (0.5, -0.3, 0.4) and
    (-0.2, 0.6, -0.1) rad/s, sampled with 0.001 deg noise: with --boundary data the
    re-optimized motion follows the data to the noise level (measured: 0.93 sigma, L1 0.012;
    --boundary rest: 1797 sigma, L1 0.8; tests/test_boundary_data.py has the rest bias)."""
    start = [[1.0, 1.0, 1.0], [0.5, -0.3, 0.4]]
    goal = [[-1.0, -1.0, -1.0], [-0.2, 0.6, -0.1]]
    problem = MotionProblem(kt.compile_tree(kt.serial_chain(3)), COSTS, duration=2.0,
                            samples=40, control_points=12, start=start, goal=goal,
                            boundary="data")
    q = noisy(solve(problem, WEIGHTS).sample(TIMES, 0)[:, 0], seed=1)
    path = write_csv(recorded.folder / "moving.csv", q)
    record = weights(ioc_argv(path, extra=["--boundary", "data", "--noise", str(NOISE_RAD),
                                           "--reoptimize"]))
    assert record["settings"]["boundary"] == "data"
    assert abs(record["reoptimized_rms"][0] / NOISE_RAD - 1) <= 0.3
    assert sum(abs(record["weights"][n] - w) for n, w in zip(NAMES, WEIGHTS)) <= 0.1


@pytest.fixture(scope="module")
def human_urdf():
    return str(kt.example_robots_dir() / kt.example_robots.HUMAN_URDF)


def test_deepmimic_clip_right_arm_on_the_human(tmp_path, human_urdf):
    """The kick's right arm (shoulder Z-X-Y, elbow Z) moves; the rest of the body is locked
    at the clip's mean pose, the joints the clip lacks at 0."""
    arm = tmp_path / "arm.csv"
    arm.write_text("right_shoulder,right_shoulder_Z\nright_shoulder,right_shoulder_X\n"
                   "right_shoulder,right_shoulder_Y\nright_elbow,right_elbow_Z\n",
                   encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, stderr = run(["ioc", "--model", human_urdf, "--motion", KICK, "--map",
                                str(arm), "--window", "0.2,1.3", "--boundary", "data",
                                "--costs", "joint_acceleration,joint_jerk", "--control-points",
                                "10", "--samples", "40", "--limits", "none", "--out", str(out)])
    assert code == 0, stderr
    record = json.loads((out / "weights.json").read_text(encoding="utf-8"))
    assert record["joint_names"] == ["right_shoulder_Z", "right_shoulder_X",
                                     "right_shoulder_Y", "right_elbow_Z"]
    assert "locked at 0 (no data): middle_lumbar_Z, middle_lumbar_X" in stderr
    assert "right_ankle onto right_ankle_Z, right_ankle_X: the pose differs" in stderr


BAD = {  # extra arguments (MAP, CLIP, URDF stand for files), part of the message
    "map names an unknown joint": (["--map", "MAP:{\"hip\": \"elbow\"}"],
                                   "got unknown elbow (the model has joint1, joint2, joint3)"),
    "map names an unknown column": (["--map", "MAP:{\"hip\": \"joint1\"}"], "missing hip"),
    "window outside the data": (["--window", "1.5,2.5"],
                                "expected a window inside the time axis [0, 2] s"),
    "window shorter than the spline": (["--window", "0.1,0.15"],
                                       "expected at least 12 samples (the spline's control "
                                       "points), got 6"),
    "window backwards": (["--window", "1.0,0.5"], "--window: expected T0,T1 in s with T0 < T1"),
    "clip frame length": (["CLIP"], "frame 1: expected 44 values"),
    "boundary on a result": (["RESULT", "--boundary", "data"],
                             "--map, --window, --boundary: apply to measured motions"),
}


@pytest.mark.parametrize("extra, message", BAD.values(), ids=BAD.keys())
def test_bad_input_is_one_line_exit_2_and_writes_nothing(recorded, tmp_path, extra, message):
    motion = recorded.csv
    if extra[0] == "CLIP":
        frame = [0.03] + [0.0] * 43
        motion = tmp_path / "clip.txt"
        motion.write_text(json.dumps({"Frames": [frame, frame[:-1], frame]}), encoding="utf-8")
        extra = extra[1:]
    if extra[:1] == ["RESULT"]:
        motion, extra = recorded.optimized / "result.json", extra[1:]
    if extra[:1] == ["--map"]:
        path = tmp_path / "map.json"
        path.write_text(extra[1].removeprefix("MAP:"), encoding="utf-8")
        extra = ["--map", str(path)]
    out = tmp_path / "out"
    code, stdout, stderr = run(ioc_argv(motion, extra=[*extra, "--out", str(out)]))
    assert code == 2 and stdout == ""
    assert stderr.startswith("cmtm ioc: error: ") and stderr.count("\n") == 1
    assert message in stderr, stderr
    assert not out.exists()


CLIP_BAD = {  # a DeepMimic clip on the human: map (JSON) and window, part of the message
    "map names an unknown clip joint": ({"right_wing": ["right_shoulder_Z"]}, None,
                                        "expected DeepMimic joints"),
    "map names an unknown model joint": ({"right_elbow": ["right_elbow_Q"]}, None,
                                         "got unknown right_elbow_Q"),
    "window outside the clip": (None, "1.0,2.0",
                                "expected a window inside the time axis [0, 1.53333] s"),
    "window shorter than the spline": (None, "0.2,0.5",
                                       "expected at least 10 samples (the spline's control "
                                       "points), got 9"),
}


@pytest.mark.parametrize("mapping, window, message", CLIP_BAD.values(), ids=CLIP_BAD.keys())
def test_bad_clip_input_is_one_line_exit_2_and_writes_nothing(tmp_path, mapping, window,
                                                             message):
    extra = []
    if mapping is not None:
        path = tmp_path / "map.json"
        path.write_text(json.dumps(mapping), encoding="utf-8")
        extra += ["--map", str(path)]
    if window is not None:
        extra += ["--window", window]
    out = tmp_path / "out"
    code, stdout, stderr = run(["ioc", "--model", "human", "--motion", KICK, *extra,
                                "--costs", "joint_jerk", "--control-points", "10",
                                "--out", str(out)])
    assert code == 2 and stdout == ""
    assert stderr.startswith("cmtm ioc: error: ") and stderr.count("\n") == 1
    assert message in stderr, stderr
    assert not out.exists()
