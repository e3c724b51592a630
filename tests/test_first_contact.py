"""What a new user runs into first (issue 36), in this process: default start and goal
within every model's limits, the compile notice, a result.json's own costs and candidate
costs, --degrees, the files' model sha256 and a moved result, --version and --help,
warnings as notices (none after an error), a common factor of the weights, absurd model
sizes refused at once and linear tree building, joint names and files that read back.
The signal, lock and batch-file cases run as subprocesses in test_cli_robustness.py."""
import cProfile
import hashlib
import json
import os
import pstats
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cmtm
import kinematic_trees as kt
from conftest import ROOT
from ioc import cli
from ioc.data import read_motion
from ioc.direct import solve
from ioc.models import (MAX_JOINTS, PAPER_GOAL, PAPER_START, default_boundary,
                        resolve_model)
from ioc.problem import MotionProblem
from ioc.results import MotionSamples, _write_trajectory, load_result, write_atomically
from ioc_synthetic import COSTS, NAMES, WEIGHTS, build, ioc_argv, run, write_csv
from robot_data import urdf_path

ARM2 = ROOT / "tests" / "data" / "arm2.urdf"
SMALL = ["--samples", "40", "--control-points", "12"]
JOINT_COSTS = ["--costs", "joint_velocity,joint_jerk", "--weights", "1,1"]
"""Joint-only costs: no engine kernel runs."""


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """The optimized synthetic motion (ioc_synthetic: chain3, weights 0.4, 0.3, 0.2, 0.1)."""
    return build(tmp_path_factory.mktemp("first_contact"))


# --- 1: default start and goal within every model's limits --------------------------------

def expected_boundary(lower, upper):
    """The rule of ioc.models.BOUNDARY_RULE written out joint by joint (the reference)."""
    start, goal = [], []
    for lo, hi in zip(lower, upper):
        if lo <= PAPER_GOAL and PAPER_START <= hi:
            start.append(PAPER_START)
            goal.append(PAPER_GOAL)
            continue
        if not np.isfinite(lo):
            lo = hi - np.pi
        if not np.isfinite(hi):
            hi = lo + np.pi
        start.append(lo + 0.3 * (hi - lo))
        goal.append(lo + 0.7 * (hi - lo))
    return np.array(start), np.array(goal)


MODELS = {"two_link_planar": lambda: resolve_model("two_link_planar"),
          "chain3": lambda: resolve_model("chain3"), "panda": lambda: resolve_model("panda"),
          "panda URDF": lambda: kt.compile_tree(kt.load_urdf(urdf_path("panda"))),
          "human URDF": lambda: kt.compile_tree(kt.load_urdf(urdf_path("human"))),
          "human": lambda: kt.compile_tree(kt.human()),
          "arm2 URDF": lambda: resolve_model(str(ARM2))}


@pytest.mark.parametrize("name", MODELS)
def test_default_boundary_is_the_rule_and_lies_within_every_models_limits(name):
    model = MODELS[name]()
    start, goal = default_boundary(model.q_lower, model.q_upper)
    reference = expected_boundary(model.q_lower, model.q_upper)
    assert np.allclose(start, reference[0], rtol=0, atol=1e-15)  # same sums, other order
    assert np.allclose(goal, reference[1], rtol=0, atol=1e-15)
    for q in (start, goal):
        assert np.all((model.q_lower <= q) & (q <= model.q_upper))
    MotionProblem(model, "joint_velocity", start=start, goal=goal)   # valid: no ValueError


@given(st.lists(st.tuples(st.floats(-10, 10), st.floats(0.01, 20), st.sampled_from(
    ["both", "lower", "upper", "none"])), min_size=1, max_size=6))
def test_default_boundary_lies_within_any_limits(joints):
    """Random limits, some open on one side or both: the rule's values lie inside."""
    lower = np.array([lo if side in ("both", "lower") else -np.inf for lo, _, side in joints])
    upper = np.array([lo + width if side in ("both", "upper") else np.inf
                      for lo, width, side in joints])
    start, goal = default_boundary(lower, upper)
    assert np.all(np.isfinite(start)) and np.all(np.isfinite(goal))
    assert np.all((lower <= start) & (start <= upper) & (lower <= goal) & (goal <= upper))
    assert np.allclose(np.c_[start, goal], np.c_[expected_boundary(lower, upper)],
                       rtol=0, atol=1e-12)


def test_panda_optimize_with_defaults_starts_inside_its_limits_and_says_where(tmp_path):
    """The first-hour command on the Panda (joint costs only here; test_readme runs the
    README's): exit 0, start and goal by the rule, a notice naming the moved joints."""
    out = tmp_path / "out"
    code, _, stderr = run(["optimize", "--model", "panda", *JOINT_COSTS, *SMALL, "--out",
                           str(out)])
    assert code == 0, stderr
    record = json.loads((out / "result.json").read_text(encoding="utf-8"))
    model = resolve_model("panda")
    start, goal = default_boundary(model.q_lower, model.q_upper)
    assert record["start"] == start.tolist() and record["goal"] == goal.tolist()
    notice, = [line for line in stderr.splitlines() if "notice" in line]
    assert "panda_joint4, panda_joint6" in notice and "30 % and 70 %" in notice


def test_help_of_start_states_the_rule(capsys):
    with pytest.raises(SystemExit):
        cli.main(["optimize", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "1.57 -> -1.57 (the paper's) where both lie within the joint's limits, else 30 % " \
           "-> 70 % of its range" in help_text


# --- 2: what compiles, and for how long ---------------------------------------------------

def test_compile_notice_names_the_cold_units_and_a_time_from_the_unit_table(monkeypatch):
    """The units not ready are named with the number of processes and a range from the
    unit table's seconds (the slowest process's sum, halved to doubled in 5 s steps); none
    when every unit is ready."""
    assert cli.compile_notice(["motion", "torque jacobian"]) is None   # the session's cache
    monkeypatch.setattr(cmtm.compile_cache, "unit_ready", lambda name: name != "motion")
    notice = cli.compile_notice(["motion", "torque jacobian"], jobs=2)
    seconds = cmtm.compile_cache.UNITS["motion"].seconds              # 4.0 in the table
    assert notice.startswith("compiling the engine's kernels (motion) in 1 process(es)")
    assert f"usually {5 * max(1, round(seconds / 10))}-{5 * max(2, round(seconds / 5))} s" \
        in notice


def test_optimize_prints_the_compile_notice_before_compiling(monkeypatch, tmp_path):
    compiled = []
    monkeypatch.setattr(cmtm.compile_cache, "unit_ready", lambda name: False)
    monkeypatch.setattr(cmtm, "precompile", lambda jobs=None, units=None: compiled.append(units))
    code, _, stderr = run(["optimize", "--model", "chain3", "--costs", "joint_torque_rate",
                           "--weights", "1", *SMALL])
    assert code == 0 and compiled == [["torque jacobian"]]     # it writes the torques too
    assert stderr.startswith("cmtm optimize: compiling the engine's kernels (torque "
                             "jacobian) in ")


# --- 4, 5: what cmtm ioc reports and which costs it takes ---------------------------------

def test_a_result_json_needs_no_costs_and_gives_its_weights_back(synthetic):
    code, stdout, _ = run(["ioc", "--motion", str(synthetic.optimized), "--json"])
    record = json.loads(stdout)
    assert code == 0 and record["l1_error"] <= 1e-9   # exact optimum (ioc_calibration.md)
    assert list(record["weights"]) == NAMES and record["settings"]["costs"] is None


def test_candidate_costs_that_include_the_recorded_ones_get_zero_weight(synthetic):
    """A hypothesis test on an optimum: a superset of the recorded costs recovers the
    recorded weights and ~0 for the extra cost."""
    candidates = COSTS + ",joint_torque_rate"
    code, stdout, _ = run(["ioc", "--motion", str(synthetic.optimized), "--costs",
                           candidates, "--json"])
    record = json.loads(stdout)
    assert code == 0
    assert record["true_weights"] == pytest.approx({**dict(zip(NAMES, WEIGHTS)),
                                                    "joint_torque_rate": 0.0}, abs=1e-15)
    assert record["l1_error"] <= 1e-6  # the extra term's gradient adds conditioning
    assert record["stationarity"]["relative"] <= 1e-9


def test_candidate_costs_that_leave_recorded_ones_out_say_so(synthetic):
    code, stdout, stderr = run(["ioc", "--motion", str(synthetic.optimized), "--costs",
                                "joint_velocity,joint_jerk", "--json"])
    record = json.loads(stdout)
    assert code == 0 and "true_weights" not in record and "l1_error" not in record
    assert record["stationarity"]["relative"] > 1e-3   # they do not explain this optimum
    assert "leave out recorded ones (joint_acceleration, joint_torque)" in stderr


def test_measured_motions_need_costs(synthetic, tmp_path):
    path = write_csv(tmp_path / "walk.csv", synthetic.q)
    code, stdout, stderr = run(["ioc", "--model", "chain3", "--motion", str(path)])
    assert code == 2 and stdout == "" and stderr.count("\n") == 1
    assert "--costs: required for measured motions" in stderr


# --- 6: units of the angles -------------------------------------------------------------

def test_angles_in_degrees_without_degrees_suggest_it(synthetic, tmp_path):
    """The synthetic motion (1 -> -1 rad) written in degrees, limits +-3 rad: the error
    says to add --degrees; with it the trial runs."""
    path = write_csv(tmp_path / "deg.csv", np.rad2deg(synthetic.q))
    code, _, stderr = run(ioc_argv(path, extra=["--limits", "-3,3", "--estimator", "kkt"]))
    assert code == 2 and stderr.count("\n") == 1
    assert f"{path}: joint1 reaches 57.2958 at t = 0 s, outside its limits [-3, 3] rad" in stderr
    assert "add --degrees (then --noise is in degrees too)" in stderr
    code, _, _ = run(ioc_argv(path, extra=["--limits", "-3,3", "--estimator", "kkt",
                                           "--degrees"]))
    assert code == 0


def test_help_says_degrees_apply_to_noise_too(capsys):
    with pytest.raises(SystemExit):
        cli.main(["ioc", "--help"])
    assert "and so is --noise" in " ".join(capsys.readouterr().out.split())


# --- 8: files that move, --version, --help, missing models --------------------------------

def test_result_records_the_model_files_sha256_and_loads_after_moving(tmp_path, monkeypatch):
    """result.json of a URDF model keeps the path as given and the file's sha256: copied
    with the URDF to another folder (the original gone), it loads from there; a URDF with
    other contents is refused."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ARM2, work / "arm2.urdf")
    monkeypatch.chdir(work)
    code, _, _ = run(["optimize", "--model", "arm2.urdf", *JOINT_COSTS, *SMALL, "--out",
                      "out", "--quiet"])
    record = json.loads((work / "out" / "result.json").read_text(encoding="utf-8"))
    assert code == 0 and record["model"] == "arm2.urdf"
    assert record["model_sha256"] == hashlib.sha256(ARM2.read_bytes()).hexdigest()
    moved = tmp_path / "elsewhere"
    shutil.copytree(work / "out", moved)
    shutil.copy(ARM2, moved / "arm2.urdf")
    shutil.rmtree(work)
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "other")
    model, *_ = load_result(moved)
    assert model.joint_names == ("shoulder", "elbow")
    (moved / "arm2.urdf").write_text(ARM2.read_text().replace('mass value="2"',
                                                              'mass value="3"'))
    with pytest.raises(ValueError, match="expected the recorded file .*found other contents"):
        load_result(moved)


def test_version_and_help_speak_to_the_user(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == f"cmtm {cli.version()}\n"
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert cli.DESCRIPTION in text and "DESIGN.md" not in text


@pytest.mark.parametrize("spec, message", [
    ("robot.urdf", "--model: the file 'robot.urdf' does not exist"),
    ("models/arm.urdf", "--model: the file 'models/arm.urdf' does not exist"),
    ("robot9000", "--model: expected two_link_planar, chainN"),
])
def test_a_missing_model_file_is_reported_as_missing(spec, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, stderr = run(["optimize", "--model", spec, *JOINT_COSTS])
    assert code == 2 and stderr.count("\n") == 1
    assert stderr.startswith(f"cmtm optimize: error: {message}")


def test_gitignore_holds_the_demo_folder():
    assert "cmtm-demo/" in (ROOT / ".gitignore").read_text().splitlines()


# --- 15: warnings -------------------------------------------------------------------------

def test_angles_near_overflow_are_one_line_without_numpy_warnings(tmp_path):
    """A subprocess, whose stderr is what a user sees (pytest would capture the warnings
    of this process): the smoothing fit of 1e200 rad overflows (4 RuntimeWarnings) before
    the start is refused."""
    path = write_csv(tmp_path / "huge.csv", np.full((201, 3), 1e200))
    done = subprocess.run([sys.executable, "-m", "ioc.cli", *ioc_argv(path, extra=[
        "--estimator", "kkt"])], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
            "PYTHONPATH", "")])})
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"cmtm ioc: error: {path}: start: expected")


@pytest.mark.filterwarnings("default")  # a user's shell, not -W error
def test_absurd_weights_are_one_line(tmp_path):
    code, stdout, stderr = run(["optimize", "--model", "chain3", "--costs",
                                "joint_velocity,joint_jerk", "--weights", "1e300,1e300",
                                *SMALL, "--out", str(tmp_path / "out")])
    assert code == 2 and stdout == "" and stderr.count("\n") == 1
    assert "weights: expected a sum within [1e-300, 1e+200], got 2e+300" in stderr
    assert not (tmp_path / "out").exists()


GLYPH_URDF = """<robot name="glyphs"><link name="base"/>
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0"
    ixz="0" iyz="0"/></inertial></link>
  <joint name="肩" type="continuous"><parent link="base"/><child link="a"/>
    <axis xyz="0 0 1"/></joint></robot>"""


@pytest.mark.filterwarnings("default")  # a user's shell, not -W error
def test_matplotlib_warnings_are_notices_once_and_none_with_quiet(tmp_path):
    """A joint named in CJK: DejaVu Sans lacks the glyph; matplotlib warns on every draw."""
    pytest.importorskip("matplotlib")
    urdf = tmp_path / "glyphs.urdf"
    urdf.write_text(GLYPH_URDF, encoding="utf-8")
    argv = ["optimize", "--model", str(urdf), *JOINT_COSTS, *SMALL]
    code, _, stderr = run([*argv, "--out", str(tmp_path / "loud")])
    warned = [line for line in stderr.splitlines() if "warning" in line]
    assert code == 0 and len(warned) == 1
    assert warned[0].startswith("cmtm optimize: warning: Glyph 32937")
    code, _, stderr = run([*argv, "--out", str(tmp_path / "quiet"), "--quiet"])
    assert code == 0 and stderr == ""


# --- 16: a common factor of the weights ---------------------------------------------------

@pytest.fixture(scope="module")
def scaled_problem(chain3):
    problem = MotionProblem(chain3, "joint_velocity,joint_jerk,joint_torque", samples=40,
                            control_points=12, start=1.57, goal=-1.57)
    return problem, solve(problem, [1.0, 0.5, 0.01])


def test_a_power_of_two_factor_of_the_weights_gives_the_same_bits(scaled_problem):
    """Normalised to sum 1, weights times 2^-600 are the same numbers: the same solve."""
    problem, base = scaled_problem
    scaled = solve(problem, np.array([1.0, 0.5, 0.01]) * 2.0 ** -600)
    assert np.array_equal(scaled.theta.hi, base.theta.hi)
    assert np.array_equal(scaled.theta.lo, base.theta.lo)
    assert scaled.iterations == base.iterations and scaled.cost == base.cost * 2.0 ** -600
    assert scaled.stationarity_rel == base.stationarity_rel


@pytest.mark.parametrize("factor", [1e-200, 1e150])
def test_tiny_and_huge_weights_reach_the_same_optimum(scaled_problem, factor):
    problem, base = scaled_problem
    scaled = solve(problem, np.array([1.0, 0.5, 0.01]) * factor)
    assert scaled.status == "converged" and scaled.iterations == base.iterations > 0
    # normalised weights within an ulp of the unscaled ones: the optimum moves by ~1e-13
    assert np.max(np.abs(scaled.control_points - base.control_points)) <= 1e-10
    assert scaled.cost == pytest.approx(base.cost * factor, rel=1e-12)
    assert json.loads(json.dumps(scaled.history, allow_nan=False))   # no NaN, no inf


def test_the_cli_solves_huge_weights_and_writes_their_files(tmp_path):
    out = tmp_path / "out"
    code, _, stderr = run(["optimize", "--model", "chain3", *SMALL, "--costs",
                           "joint_velocity,joint_jerk", "--weights", "1e150,5e149", "--out",
                           str(out), "--quiet"])
    record = json.loads((out / "result.json").read_text(encoding="utf-8"))
    assert code == 0 and record["status"] == "converged" and record["iterations"] > 0


# --- 17: model sizes ----------------------------------------------------------------------

def test_an_absurd_chain_is_refused_before_anything_is_built(monkeypatch):
    def never(n, *args, **kwargs):
        raise AssertionError(f"serial_chain({n}) built")
    monkeypatch.setattr(kt, "serial_chain", never)
    code, _, stderr = run(["check-jacobians", "--model", "chain100000", "--order", "0"])
    assert code == 2 and stderr.count("\n") == 1
    assert f"--model chain100000: expected at most {MAX_JOINTS} joints, got 100000" in stderr


def test_a_urdf_with_too_many_joints_is_refused_before_it_is_built(tmp_path, monkeypatch):
    links = "".join(f'<link name="l{i}"/>' for i in range(MAX_JOINTS + 2))
    joints = "".join(f'<joint name="j{i}" type="continuous"><parent link="l{i}"/>'
                     f'<child link="l{i + 1}"/></joint>' for i in range(MAX_JOINTS + 1))
    urdf = tmp_path / "long.urdf"
    urdf.write_text(f'<robot name="long">{links}{joints}</robot>', encoding="utf-8")
    monkeypatch.setattr(kt, "load_urdf", lambda *args, **kwargs: pytest.fail("built"))
    code, _, stderr = run(["check-jacobians", "--model", str(urdf), "--order", "0"])
    assert code == 2 and f"expected at most {MAX_JOINTS} joints, got {MAX_JOINTS + 1}" in stderr


def calls_to_build_chain(n):
    """Python function calls (a count, not a time) of kinematic_trees.serial_chain(n)."""
    profile = cProfile.Profile()
    profile.runcall(kt.serial_chain, n)
    return pstats.Stats(profile).total_calls


def test_building_a_chain_is_linear_in_its_joints():
    """Twice the joints, twice the work: 1.99x the function calls at 200 -> 400 joints
    (3.16x with the scan of every joint per add_joint that the joint index replaced)."""
    ratio = calls_to_build_chain(400) / calls_to_build_chain(200)
    assert ratio < 2.2, ratio


def test_joint_index_follows_joints_renamed_by_hand():
    tree = kt.serial_chain(3)
    tree.graph.edges["link1", "link2"]["name"] = "elbow"
    assert tree.joint_links("elbow") == ("link1", "link2")
    with pytest.raises(kt.ModelError, match="joint 'joint2' does not exist"):
        tree.joint_links("joint2")
    tree.add_link("hand")
    with pytest.raises(kt.ModelError, match="a joint with this name already exists"):
        tree.add_joint("elbow", "link3", "hand")


# --- 18: what optimize writes, ioc reads --------------------------------------------------

NAME_CHARACTERS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.just("time"), st.text(NAME_CHARACTERS, min_size=1,
                                                  max_size=12).filter(
    lambda name: name.strip() and name.strip() == name)), min_size=1, max_size=4, unique=True))
def test_trajectory_csv_reads_back_for_any_joint_names(tmp_path_factory, names):
    """Joint names as URDFs allow them (any text; here without surrounding spaces, which
    a label match strips): 'time', commas, quotes, newlines, non-Latin."""
    folder = tmp_path_factory.mktemp("names")
    times = np.linspace(0.0, 1.0, 5)
    q = np.arange(5.0 * len(names)).reshape(5, len(names)) / 7.0
    motion = MotionSamples(times, q[:, None, :], None, tuple(names))
    path = folder / "trajectory.csv"
    write_atomically(path, lambda file: _write_trajectory(file, motion))
    data = read_motion(path, names)
    assert np.array_equal(data.times, times) and np.array_equal(data.q, q)


def test_joints_named_time_and_with_spaces_round_trip_through_optimize_and_ioc(tmp_path):
    urdf = tmp_path / "named.urdf"
    urdf.write_text(ARM2.read_text().replace('"shoulder"', '"time"').replace(
        '"elbow"', '"hip flexion"'), encoding="utf-8")
    out = tmp_path / "out"
    code, _, stderr = run(["optimize", "--model", str(urdf), *JOINT_COSTS, *SMALL, "--out",
                           str(out), "--quiet"])
    assert code == 0, stderr
    code, stdout, stderr = run(["ioc", "--model", str(urdf), "--motion",
                                str(out / "trajectory.csv"), "--costs",
                                "joint_velocity,joint_jerk", *SMALL, "--estimator", "kkt",
                                "--json"])
    assert code == 0, stderr
    assert json.loads(stdout)["joint_names"] == ["time", "hip flexion"]


def test_a_csv_with_a_byte_order_mark_is_read(synthetic, tmp_path):
    """Excel's "CSV UTF-8" starts with EF BB BF; the header's first label is 'time'."""
    plain = write_csv(tmp_path / "plain.csv", synthetic.q)
    marked = tmp_path / "marked.csv"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes().replace(b"\n", b"\r\n"))
    expected = read_motion(plain, ("joint1", "joint2", "joint3"))
    data = read_motion(marked, ("joint1", "joint2", "joint3"))
    assert np.array_equal(data.q, expected.q) and np.array_equal(data.times, expected.times)
    code, _, stderr = run(ioc_argv(marked, extra=["--estimator", "kkt"]))
    assert code == 0, stderr
