"""The README as a user runs it: at most 250 lines, the two commands and the first example
in its first 80; every ```python block executes (printing no numpy 2 reprs such as
``np.float64(...)``), and a new user's sequence, every ``cmtm`` command of the README's
shell blocks in order in one folder, succeeds as subprocesses of the installed console
script, the Panda's ``cmtm optimize`` with its defaults included, each printing what the
```output block under it shows; plus a URDF model with --lock.

Blocks whose first line is ``# not run`` are skipped; the others run in a fresh folder,
each in a namespace of its own, as if pasted into a new interpreter. The user's own robot
and motion files that the README names (robot.urdf, trial01.csv, trials/) are
tests/data/arm2.urdf and samples of its optimum in degrees with 0.1 deg of noise
(doc_blocks.write_users_files). The guide's blocks: tests/test_docs.py.
"""
import json

import numpy as np
import pytest

import kinematic_trees as kt
from conftest import ROOT
from doc_blocks import (NOT_RUN, code_blocks, output_mismatch, page_commands, page_steps,
                        run_cli, run_command, run_python, write_users_files)
from ioc.models import default_boundary
from robot_data import urdf_path

README = (ROOT / "README.md").read_text(encoding="utf-8")
README_LINES = 250
"""A README a user reads in five minutes (issue 41)."""
FIRST_LINES = 80
"""The two commands and the first example sit within the README's first 80 lines."""

PANDA_OPTIMIZE = ["cmtm", "optimize", "--model", "panda", "--costs",
                  "joint_velocity,joint_jerk,joint_torque_rate", "--weights", "1,0.5,0.01"]
"""The new user's first optimization: the Panda with every other option at its default."""


def test_readme_has_python_blocks_and_the_new_users_commands():
    assert len(code_blocks("python", README)) >= 2
    commands = page_commands(README)
    assert any(words[:len(PANDA_OPTIMIZE)] == PANDA_OPTIMIZE
               and not {"--start", "--goal", "--limits"} & set(words) for words in commands)
    assert {words[1] for words in commands} >= {"demo", "optimize", "ioc"}


def test_readme_is_short_with_the_two_commands_and_first_example_up_front():
    """At most 250 lines; within the first 80 the install-and-demo and install-and-test
    commands (the ones CI runs: .ci/run) and the first python example."""
    lines = README.splitlines()
    assert len(lines) <= README_LINES, len(lines)
    head = "\n".join(lines[:FIRST_LINES])
    assert 'pip install -e ".[plot]" && cmtm demo' in head
    assert 'pip install -e ".[test]" && pytest' in head
    first_python = head.find("```python\n")
    assert first_python >= 0 and head.find("\n```", first_python + 10) >= 0


@pytest.mark.parametrize("index", range(len(code_blocks("python", README))))
def test_readme_python_block_runs(index, tmp_path, monkeypatch, capsys):
    block = code_blocks("python", README)[index]
    if block.startswith(NOT_RUN):
        pytest.skip(f"marked {NOT_RUN!r}")
    monkeypatch.chdir(tmp_path)
    run_python(block, f"README.md python block {index}")
    assert "np.float64(" not in capsys.readouterr().out  # numpy 2's repr of a scalar


def test_output_comparison_tells_a_changed_figure_from_rounding():
    """The shown-output check (doc_blocks.output_mismatch) bites: a changed weight, word or
    line count fails; a duration, a rounding-level figure and 3-digit rounding do not."""
    printed = "converged after 8 iterations in 0.157 s; stationarity 1.15e-13\n  w  0.662252\n"
    assert output_mismatch("converged after 8 iterations in 9.9 s; stationarity 3e-14\n"
                           "  w  0.662\n", printed) is None
    assert output_mismatch("converged after 8 iterations in 0.157 s; stationarity 1.15e-13\n"
                           "  w  0.7\n", printed)
    assert output_mismatch("stalled after 8 iterations in 0.157 s; stationarity 1.15e-13\n"
                           "  w  0.662252\n", printed)
    assert output_mismatch("converged after 9 iterations in 0.157 s; stationarity 1.15e-13\n"
                           "  w  0.662252\n", printed)
    assert output_mismatch("...\n  w  0.662252\n", printed) is None
    assert output_mismatch("  w  0.662252\n", printed)


def test_new_users_sequence_of_readme_commands_succeeds(tmp_path):
    """Every README command in order in one folder, as a new user pastes them: each exits 0
    and prints the output the README shows under it; the Panda optimum (default start and
    goal: inside the Panda's limits) gives its weights back, [1, 0.5, 0.01] / 1.51, through
    ``cmtm ioc`` with the recorded costs."""
    write_users_files(tmp_path)
    for kind, words, shown in page_steps(README):
        if kind == "cmtm":
            run_command(words, tmp_path, shown)
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
