"""The README as a user runs it: every ```python block executes, and the quick start's
``cmtm`` commands succeed as subprocesses of the installed console script, plus a URDF
model with --lock.

Blocks whose first line is ``# not run`` are skipped; the others run in a fresh folder,
each in a namespace of its own, as if pasted into a new interpreter.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT
from robot_data import urdf_path

README = (ROOT / "README.md").read_text(encoding="utf-8")
NOT_RUN = "# not run"


def code_blocks(language, text=README):
    """The bodies of the ```language fenced blocks of ``text``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def quick_start_commands(text=README):
    """The ``cmtm ...`` commands of the Quick start section's shell block: each line cut at
    ``#`` (a comment), split at ``&&``. ``cmtm demo`` gets ``--quick``: the full demo is
    the paper's tables, minutes long; --quick runs the same path on the 3-DoF cases."""
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in code_blocks("bash", section):
        for line in block.splitlines():
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


def test_readme_has_python_blocks_and_quick_start_commands():
    assert len(code_blocks("python")) >= 2
    assert quick_start_commands()


@pytest.mark.parametrize("index", range(len(code_blocks("python"))))
def test_readme_python_block_runs(index, tmp_path, monkeypatch):
    block = code_blocks("python")[index]
    if block.startswith(NOT_RUN):
        pytest.skip(f"marked {NOT_RUN!r}")
    monkeypatch.chdir(tmp_path)
    exec(compile(block, f"README.md python block {index}", "exec"), {})


@pytest.mark.parametrize("words", quick_start_commands(), ids=" ".join)
def test_readme_quick_start_command_succeeds(words, tmp_path):
    done = run_cli(words, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_jacobians_on_a_urdf_with_locked_fingers(tmp_path):
    """The Panda URDF with both finger joints locked: the 7-DoF arm, every quantity within
    the command's tolerance."""
    words = ["cmtm", "check-jacobians", "--model", str(urdf_path("panda")), "--lock",
             "panda_finger_joint1=0.01", "--lock", "panda_finger_joint2=0.01", "--order", "1"]
    done = run_cli(words, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(nv=7)" in done.stdout and "all within tolerance" in done.stdout
