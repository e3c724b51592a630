"""The code blocks of the README and the user guide (docs/), as a user runs them.

A Markdown page is read as a sequence of steps in page order: every ```python block, every
``cmtm ...`` command of its ```bash blocks, and after a bash block an optional ```output
block, the standard output of that block's last command as the page shows it. Blocks in
other languages (``text``: illustrative output, formats) are not run.

The files a user brings, which the pages name, are made by :func:`write_users_files`.
"""
import json
import math
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pybullet_data

import ioc
import kinematic_trees as kt
from conftest import ROOT
from ioc.cli import main as cli_main
from ioc.models import default_boundary

NOT_RUN = "# not run"
"""A python block whose first line is this is shown, not run."""
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", flags=re.MULTILINE | re.DOTALL)


def fenced_blocks(text):
    """(language, body) of every fenced block of ``text``, in order."""
    return FENCE.findall(text)


def code_blocks(language, text):
    """The bodies of the ```language fenced blocks of ``text``, in order."""
    return [body for lang, body in fenced_blocks(text) if lang == language]


def block_commands(block):
    """The ``cmtm ...`` commands of one shell block, in order: lines continued by a
    backslash joined, each cut at ``#`` (a comment), split at ``&&`` and into words as the
    shell does (quotes removed: ``"point_jerk[hand@0,0,0]"``). ``cmtm demo``
    gets ``--quick``: the full demo is the paper's tables, minutes long; --quick runs the
    same path on the 3-DoF cases."""
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        for part in line.split("#", 1)[0].split("&&"):
            words = shlex.split(part)
            if words[:1] == ["cmtm"]:
                commands.append(words + (["--quick"] if words[1:2] == ["demo"]
                                         and "--quick" not in words else []))
    return commands


def page_commands(text):
    """Every ``cmtm`` command of the page's bash blocks, in order."""
    return [words for block in code_blocks("bash", text) for words in block_commands(block)]


def page_steps(text):
    """The page as a user follows it: ("python", body, None) for a python block and
    ("cmtm", words, shown output or None) for each command of a bash block, an ```output
    block right after a bash block attached to its last command."""
    steps = []
    for language, body in fenced_blocks(text):
        if language == "python":
            steps.append(("python", body, None))
        elif language == "bash":
            steps.extend(("cmtm", words, None) for words in block_commands(body))
        elif language == "output":
            assert steps and steps[-1][0] == "cmtm" and steps[-1][2] is None, \
                f"an output block must follow a bash block's command: {body[:60]!r}"
            steps[-1] = ("cmtm", steps[-1][1], body)
    return steps


NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
SECONDS = re.compile(r"^s[,;.)]?$")
ROUNDING_LEVEL = 1e-9
"""Numbers below this in magnitude (stationarities, L1 errors of exact optima) are at the
rounding level: they change with the BLAS and the machine, so any such value matches."""
RELATIVE = 0.02
"""Other numbers match to 2 %: the shown figures are rounded to 3 significant digits."""


def _number(token):
    """The float of a numeric token (trailing punctuation stripped), or None."""
    text = token.rstrip(",;:)").lstrip("([")
    return float(text) if NUMBER.match(text) else None


def _same_line(shown, printed):
    """A shown line matches a printed one: the same words, numbers within RELATIVE (both
    below ROUNDING_LEVEL also match), a number followed by ``s`` (a duration) not compared."""
    a, b = shown.split(), printed.split()
    if len(a) != len(b):
        return False
    for i, (x, y) in enumerate(zip(a, b)):
        u, v = _number(x), _number(y)
        if u is None or v is None:
            if x != y:
                return False
        elif i + 1 < len(a) and SECONDS.match(a[i + 1]):
            continue
        elif not (max(abs(u), abs(v)) < ROUNDING_LEVEL
                  or math.isclose(u, v, rel_tol=RELATIVE)):
            return False
    return True


def output_mismatch(shown, printed):
    """None if the shown output is what was printed, line by line (:func:`_same_line`; a
    shown line ``...`` stands for any lines), else a message naming the first mismatch."""
    wanted = [line for line in shown.splitlines() if line.strip()]
    got = [line for line in printed.splitlines() if line.strip()]
    i = 0
    for n, line in enumerate(wanted):
        if line.strip() == "...":
            rest = wanted[n + 1:]
            i = max(i, len(got) - len(rest))
            continue
        if i >= len(got) or not _same_line(line, got[i]):
            return f"shown {line!r}, printed {got[i] if i < len(got) else '(nothing)'!r}"
        i += 1
    return None if i == len(got) else f"printed more lines than shown: {got[i]!r}"


def run_cli(words, cwd):
    """Run the ``cmtm`` console script with this checkout first on the import path."""
    executable = shutil.which("cmtm")
    assert executable, "the cmtm console script is not installed: pip install -e ."
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([executable, *words[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def run_python(block, name):
    """Execute one python block in a namespace of its own, as if pasted into a new
    interpreter."""
    exec(compile(block, name, "exec"), {})


def run_command(words, folder, shown=None):
    """Run one ``cmtm`` command in ``folder``; AssertionError unless it exits 0 without a
    traceback and prints what the page shows (``shown``, if any)."""
    done = run_cli(words, folder)
    assert done.returncode == 0, (" ".join(words), done.stdout + done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    if shown is not None:
        mismatch = output_mismatch(shown, done.stdout)
        assert mismatch is None, (" ".join(words), mismatch)
    return done


def run_in_process(words, capsys, shown=None):
    """Run one ``cmtm`` command through ``ioc.cli.main`` in this process (the console
    script's entry; kernels already loaded, no interpreter start-up) in the current
    folder; AssertionError unless it returns 0 and prints what the page shows."""
    capsys.readouterr()
    try:
        status = cli_main(words[1:])
    except SystemExit as stop:          # argparse's own exits: --version, --help
        status = stop.code
    done = capsys.readouterr()
    assert status == 0, (" ".join(words), done.out + done.err)
    if shown is not None:
        mismatch = output_mismatch(shown, done.out)
        assert mismatch is None, (" ".join(words), mismatch)
    return done


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
    problem = ioc.MotionProblem(model, "joint_velocity,joint_jerk,joint_torque_rate",
                                start=default_boundary(model.q_lower, model.q_upper)[0],
                                goal=default_boundary(model.q_lower, model.q_upper)[1])
    times = np.linspace(0.0, 2.0, 201)
    q_deg = np.rad2deg(ioc.solve(problem, [1.0, 0.5, 0.01]).sample(times, 0)[:, 0])
    (folder / "trials").mkdir()
    for seed, name in enumerate(["trial01.csv", "trials/trial01.csv", "trials/trial02.csv"]):
        noisy = q_deg + 0.1 * np.random.default_rng(seed).normal(size=q_deg.shape)
        rows = ["time," + ",".join(model.joint_names)] + [
            ",".join(repr(float(x)) for x in (t, *row)) for t, row in zip(times, noisy)]
        (folder / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
