"""The README as a user runs it: every ```python block executes (printing no numpy 2
reprs such as ``np.float64(...)``), and a new user's sequence, every ``cmtm`` command of the
README's shell blocks in order in one folder, succeeds as subprocesses of the installed
console script, the Panda's ``cmtm optimize`` with its defaults included; plus a URDF model
with --lock.

Blocks whose first line is ``# not run`` are skipped; the others run in a fresh folder,
each in a namespace of its own, as if pasted into a new interpreter. The user's own robot
and motion files that the README names (robot.urdf, trial01.csv, trials/) are
tests/data/arm2.urdf and samples of its optimum in degrees with 0.1 deg of noise.
"""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pybullet_data
import pytest

import kinematic_trees as kt
from conftest import ROOT
from ioc.direct import solve
from ioc.models import default_boundary
from ioc.problem import MotionProblem
from robot_data import urdf_path

README = (ROOT / "README.md").read_text(encoding="utf-8")
NOT_RUN = "# not run"


def code_blocks(language, text=README):
    """The bodies of the ```language fenced blocks of ``text``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def readme_commands(text=README):
    """The ``cmtm ...`` commands of the README's shell blocks, in order: lines continued by
    a backslash joined, each cut at ``#`` (a comment) and split at ``&&``. ``cmtm demo``
    gets ``--quick``: the full demo is the paper's tables, minutes long; --quick runs the
    same path on the 3-DoF cases."""
    commands = []
    for block in code_blocks("bash", text):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("#", 1)[0].split("&&"):
                words = part.split()
                if words[:1] == ["cmtm"]:
                    commands.append(words + (["--quick"] if words[1:2] == ["demo"]
                                             and "--quick" not in words else []))
    return commands


def run_cli(words, cwd):
    """Run the ``cmtm`` console script with this checkout first on the import path."""
    executable = shutil.which("cmtm")
    assert executable, "the cmtm console script is not installed: pip install -e ."
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([executable, *words[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


PANDA_OPTIMIZE = ["cmtm", "optimize", "--model", "panda", "--costs",
                  "joint_velocity,joint_jerk,joint_torque_rate", "--weights", "1,0.5,0.01"]
"""The new user's first optimization: the Panda with every other option at its default."""


def test_readme_has_python_blocks_and_the_new_users_commands():
    assert len(code_blocks("python")) >= 2
    commands = readme_commands()
    assert any(words[:len(PANDA_OPTIMIZE)] == PANDA_OPTIMIZE
               and not {"--start", "--goal", "--limits"} & set(words) for words in commands)
    assert {words[1] for words in commands} >= {"demo", "optimize", "ioc"}


@pytest.mark.parametrize("index", range(len(code_blocks("python"))))
def test_readme_python_block_runs(index, tmp_path, monkeypatch, capsys):
    block = code_blocks("python")[index]
    if block.startswith(NOT_RUN):
        pytest.skip(f"marked {NOT_RUN!r}")
    monkeypatch.chdir(tmp_path)
    exec(compile(block, f"README.md python block {index}", "exec"), {})
    assert "np.float64(" not in capsys.readouterr().out  # numpy 2's repr of a scalar


RIGHT_ARM_MAP = {"right_shoulder": ["right_shoulder_Z", "right_shoulder_X", "right_shoulder_Y"],
                 "right_elbow": "right_elbow_Z"}
"""The README's right_arm.json: the DeepMimic clip's right shoulder and elbow onto the
human's right arm."""


def write_users_files(folder):
    """The files a user brings: robot.urdf (tests/data/arm2.urdf), and trial01.csv,
    trials/trial01.csv and trials/trial02.csv: its optimum for the README's costs (weights
    1, 0.5, 0.01; 2 s at 100 Hz) in degrees, seeded Gaussian noise of 0.1 deg added; the
    DeepMimic kick (pybullet_data's humanoid3d_kick.txt) and right_arm.json."""
    shutil.copy(ROOT / "tests" / "data" / "arm2.urdf", folder / "robot.urdf")
    shutil.copy(Path(pybullet_data.getDataPath()) / "data" / "motions" / "humanoid3d_kick.txt",
                folder / "humanoid3d_kick.txt")
    (folder / "right_arm.json").write_text(json.dumps(RIGHT_ARM_MAP), encoding="utf-8")
    model = kt.compile_tree(kt.load_urdf(folder / "robot.urdf"))
    problem = MotionProblem(model, "joint_velocity,joint_jerk,joint_torque_rate",
                            start=default_boundary(model.q_lower, model.q_upper)[0],
                            goal=default_boundary(model.q_lower, model.q_upper)[1])
    times = np.linspace(0.0, 2.0, 201)
    q_deg = np.rad2deg(solve(problem, [1.0, 0.5, 0.01]).sample(times, 0)[:, 0])
    (folder / "trials").mkdir()
    for seed, name in enumerate(["trial01.csv", "trials/trial01.csv", "trials/trial02.csv"]):
        noisy = q_deg + 0.1 * np.random.default_rng(seed).normal(size=q_deg.shape)
        rows = ["time," + ",".join(model.joint_names)] + [
            ",".join(repr(float(x)) for x in (t, *row)) for t, row in zip(times, noisy)]
        (folder / name).write_text("\n".join(rows) + "\n", encoding="utf-8")


def test_new_users_sequence_of_readme_commands_succeeds(tmp_path):
    """Every README command in order in one folder, as a new user pastes them: each exits 0;
    the Panda optimum (default start and goal: inside the Panda's limits) gives its weights
    back, [1, 0.5, 0.01] / 1.51, through ``cmtm ioc`` with the recorded costs."""
    write_users_files(tmp_path)
    for words in readme_commands():
        done = run_cli(words, tmp_path)
        assert done.returncode == 0, (" ".join(words), done.stdout + done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
    panda = json.loads((tmp_path / "panda" / "result.json").read_text(encoding="utf-8"))
    model = kt.compile_tree(kt.panda())
    start, goal = default_boundary(model.q_lower, model.q_upper)
    assert panda["status"] == "converged"
    assert panda["start"] == start.tolist() and panda["goal"] == goal.tolist()
    assert np.all((model.q_lower <= start) & (start <= model.q_upper))
    recovered = run_cli(["cmtm", "ioc", "--motion", "panda", "--json"], tmp_path)
    weights = json.loads(recovered.stdout)["weights"]
    # an exact optimum (stationarity ~1e-13): inverse KKT to ~1e-12 (ioc_calibration.md)
    assert np.allclose(list(weights.values()), np.array([1, 0.5, 0.01]) / 1.51, atol=1e-9)


def test_check_jacobians_on_a_urdf_with_locked_fingers(tmp_path):
    """The Panda URDF with both finger joints locked: the 7-DoF arm, every quantity within
    the command's tolerance."""
    words = ["cmtm", "check-jacobians", "--model", str(urdf_path("panda")), "--lock",
             "panda_finger_joint1=0.01", "--lock", "panda_finger_joint2=0.01", "--order", "1"]
    done = run_cli(words, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(nv=7)" in done.stdout and "all within tolerance" in done.stdout
