"""``cmtm optimize`` end to end: the files and their keys, the files against each other,
the engine and the spline, the stdout/stderr contract, one-line errors that write nothing."""
import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from types import SimpleNamespace

import numpy as np
import pytest

import cmtm
from ioc import cli
from ioc.cli import main
from ioc.costs import split_names
from ioc.data import read_motion
from ioc.results import load_result

SMALL = ["--model", "chain3", "--samples", "40", "--control-points", "12",
         "--costs", "joint_velocity,joint_jerk,joint_torque", "--weights", "1,1,0.01"]
DATA_FILES = ("result.json", "trajectory.csv", "motion.npz")
PLOT_FILES = ("joint_angles.png", "joint_velocities.png", "joint_jerks.png", "joint_torques.png",
              "joint_torque_rates.png", "motion.html")


def run(argv):
    """Exit status of ``main(argv)``, returned or raised by argparse."""
    try:
        return main(argv)
    except SystemExit as stop:
        return stop.code


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """One small optimization written with --out: its folder, exit status, stdout, stderr
    and parsed result.json."""
    out = tmp_path_factory.mktemp("optimize") / "run"
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(["optimize", *SMALL, "--out", str(out)])
    record = json.loads((out / "result.json").read_text(encoding="utf-8"))
    return SimpleNamespace(out=out, code=code, stdout=stdout.getvalue(),
                           stderr=stderr.getvalue(), record=record)


def test_optimize_writes_data_files_and_plots_and_nothing_else(solved):
    assert solved.code == 0 and solved.record["status"] == "converged"
    assert sorted(p.name for p in solved.out.iterdir()) == sorted(DATA_FILES + PLOT_FILES)
    for name in PLOT_FILES[:-1]:
        assert (solved.out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (solved.out / "motion.html").read_text().startswith("<!DOCTYPE html>")


def test_result_json_keys_and_types(solved):
    r = solved.record
    nv, n_c, p, n = 3, 12, 5, 40
    scalars = {"schema": int, "status": str, "iterations": int, "solve_seconds": float,
               "model": str, "model_lock": dict, "degree": int, "duration": float,
               "samples": int, "rest_order": int, "constraints": str, "penalty": float,
               "cost": float}
    for key, kind in scalars.items():
        assert isinstance(r[key], kind), key
    assert (r["model"], r["model_lock"], r["degree"], r["samples"]) == ("chain3", {}, p, n)
    assert r["joint_names"] == ["joint1", "joint2", "joint3"]
    assert r["costs"] == ["joint_velocity", "joint_jerk", "joint_torque"]
    assert r["weights"] == [1.0, 1.0, 0.01]
    assert len(r["knots"]) == n_c + p + 1
    assert np.shape(r["control_points"]) == np.shape(r["control_points_lo"]) == (n_c, nv)
    assert r["quadrature"]["rule"] == "samples"
    assert len(r["quadrature"]["times"]) == len(r["quadrature"]["weights"]) == n
    assert r["start"] == [1.57] * nv and r["goal"] == [-1.57] * nv
    # chain3 has no joint limits: infinite bounds are JSON null
    assert r["limits"] == {"lower": [None] * nv, "upper": [None] * nv, "multipliers": []}
    assert set(r["stationarity"]) == {"absolute", "relative"}
    assert len(r["history"]) == r["iterations"]
    assert set(r["history"][0]) == {"iteration", "mode", "cost", "step", "alpha",
                                    "stationarity"}
    assert set(r["versions"]) == {"cmtm", "numpy", "scipy", "numba"}


def test_result_json_is_strict_json(solved):
    def reject(constant):
        raise AssertionError(f"non-standard JSON constant {constant}")

    json.loads((solved.out / "result.json").read_text(encoding="utf-8"),
               parse_constant=reject)


def test_terms_weighted_is_weight_times_raw_and_sum_to_the_cost(solved):
    terms = solved.record["terms"]
    assert [t["name"] for t in terms] == solved.record["costs"]
    assert all(t["weighted"] == t["weight"] * t["raw"] for t in terms)
    # cost = weights @ costs: a dot product, summed in another order than this sum
    assert sum(t["weighted"] for t in terms) == pytest.approx(solved.record["cost"], rel=1e-14)


def test_trajectory_csv_equals_motion_npz_and_the_loaded_spline(solved):
    model, problem, _, theta, record = load_result(solved.out)
    data = read_motion(solved.out / "trajectory.csv", model.joint_names)
    motion = np.load(solved.out / "motion.npz")
    times = np.linspace(0.0, record["duration"], record["samples"])
    assert np.array_equal(data.times, times) and np.array_equal(motion["times"], times)
    assert np.array_equal(data.q, motion["q"][:, 0])  # repr text round-trips float64
    assert np.array_equal(motion["q"], problem.spline.evaluate(theta, times, 3))
    assert data.q[0].tolist() == record["start"] and data.q[-1].tolist() == record["goal"]


def test_motion_npz_torques_are_the_engine_inverse_dynamics(solved):
    model = load_result(solved.out)[0]
    motion = np.load(solved.out / "motion.npz")
    assert motion["q"].shape == (40, 4, 3) and motion["tau"].shape == (40, 2, 3)
    assert motion["joint_names"].tolist() == list(model.joint_names)
    assert np.array_equal(motion["tau"], cmtm.inverse_dynamics(model, motion["q"], order=1))


def test_progress_on_stderr_and_summary_on_stdout(solved):
    progress = solved.stderr.splitlines()
    assert len(progress) == solved.record["iterations"]
    assert all(line.startswith("iteration") and "stationarity" in line for line in progress)
    assert solved.stdout.startswith("converged after")
    assert all(name in solved.stdout for name in solved.record["costs"])
    assert "result.json" in solved.stdout


def test_json_quiet_prints_the_result_object_alone(tmp_path, capsys):
    assert main(["optimize", *SMALL, "--out", str(tmp_path), "--json", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.count("\n") == 1
    assert json.loads(captured.out) == json.loads((tmp_path / "result.json").read_text())


def test_console_script_prints_one_json_object():
    command = [sys.executable, "-m", "ioc.cli", "optimize", *SMALL, "--json", "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == ""
    record = json.loads(done.stdout)
    assert record["status"] == "converged" and record["joint_names"] == ["joint1", "joint2",
                                                                          "joint3"]


def test_without_matplotlib_plots_are_skipped_with_one_notice(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "find_spec", lambda name: None)
    assert main(["optimize", *SMALL, "--out", str(tmp_path)]) == 0
    notices = [line for line in capsys.readouterr().err.splitlines() if "notice" in line]
    assert len(notices) == 1 and "matplotlib and plotly not installed" in notices[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(DATA_FILES)


def test_no_view_writes_the_plots_but_no_page(tmp_path):
    assert main(["optimize", *SMALL, "--out", str(tmp_path), "--no-view", "--quiet"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(DATA_FILES + PLOT_FILES[:-1])


def test_costs_split_at_commas_outside_link_subsets():
    assert split_names("link_velocity[link1,link3], joint_jerk") == \
        ["link_velocity[link1,link3]", "joint_jerk"]


JERK = ["--costs", "joint_jerk", "--weights", "1"]
BAD_INPUTS = {  # extra arguments, part of the message
    "unknown cost": (["--costs", "joint_snap", "--weights", "1"], "cost: expected"),
    "weights count": (["--costs", "joint_jerk", "--weights", "1,2"], "weights: expected 1"),
    "negative weight": (["--costs", "joint_jerk", "--weights", "-1"], "non-negative"),
    "NaN weight": (["--costs", "joint_jerk", "--weights", "nan"], "non-negative"),
    "weight text": (["--costs", "joint_jerk", "--weights", "one"], "--weights"),
    "missing weights": (["--costs", "joint_jerk"], "--weights"),
    "start outside limits": ([*JERK, "--limits", "-1,1", "--start", "1.57"],
                             "start: expected values within"),
    "goal outside limits": ([*JERK, "--limits", "-1,2", "--start", "0", "--goal", "-1.57"],
                            "goal: expected values within"),
    "too few samples": ([*JERK, "--samples", "1"], "--samples"),
    "too few control points": ([*JERK, "--control-points", "5"], "n_control: expected"),
    "derivative beyond degree": ([*JERK, "--degree", "3"], "use degree >= 4"),
    "NaN start": ([*JERK, "--start", "nan"], "start: expected one finite value"),
    "start count": ([*JERK, "--start", "1,2"], "start: expected one finite value or 3"),
    "limits text": ([*JERK, "--limits", "wide"], "--limits: expected model, none or LO,HI"),
    "limits reversed": ([*JERK, "--limits", "2,-2"], "lower < upper"),
    "unknown model": ([*JERK, "--model", "robot9000"], "--model: expected"),
    "unknown lock joint": ([*JERK, "--lock", "joint9=0"], "joint9"),
    "rest order too large": ([*JERK, "--rest-order", "5"], "rest_order: expected < degree 5"),
    "unknown option": ([*JERK, "--speed", "2"], "unrecognized arguments"),
    "bad integer": ([*JERK, "--samples", "many"], "--samples"),
}


@pytest.mark.parametrize("extra, message", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_is_one_line_exit_2_and_writes_nothing(extra, message, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["optimize", "--model", "chain3", "--samples", "40", "--control-points", "12",
            "--out", str(out), *extra]
    assert run(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("cmtm optimize: error: ") and captured.err.count("\n") == 1
    assert message in captured.err
    assert not out.exists()


def test_out_naming_a_file_is_an_error_that_leaves_it_alone(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("keep")
    assert run(["optimize", *SMALL, "--out", str(target)]) == 2
    assert "--out: expected a folder" in capsys.readouterr().err
    assert target.read_text() == "keep"
