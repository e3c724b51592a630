"""``cmtm demo --quick`` end to end: exit status, demo.json, the printed tables against it,
the case folders (usable by the inverse problem), the figures; --json, failures, bad --out."""
import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from importlib.util import find_spec
from types import SimpleNamespace

import numpy as np
import pytest

import cmtm
from ioc import demo
from ioc.cli import main
from ioc.inverse_kkt import recover_weights
from ioc.results import load_result

QUICK_CASES = ("case_a", "case_b", "case_c")
CASE_FILES = ("result.json", "trajectory.csv", "motion.npz")
PNG = b"\x89PNG\r\n\x1a\n"


def run(argv):
    """(exit status, stdout, stderr) of ``main(argv)`` in this process."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(argv)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One ``cmtm demo --quick`` run: its folder, exit status, stdout, stderr, demo.json."""
    out = tmp_path_factory.mktemp("demo") / "out"
    code, stdout, stderr = run(["demo", "--quick", "--out", str(out)])
    record = json.loads((out / "demo.json").read_text(encoding="utf-8"))
    return SimpleNamespace(out=out, code=code, stdout=stdout, stderr=stderr, record=record)


@pytest.fixture
def tiny_plan(monkeypatch):
    """--quick reduced to Table 6 at order 0 (no optimization): the output paths alone."""
    monkeypatch.setattr(demo, "QUICK", demo.Plan((), (0,), 1))


def table_rows(text, first_header):
    """Cells (split at two or more spaces) of the table whose header starts with
    ``first_header``, up to the first empty line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first_header + " "))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip() or line.startswith("demo.json"):
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def test_quick_demo_passes_with_the_three_3dof_cases(quick):
    assert quick.code == 0, quick.stderr
    table7 = quick.record["table7"]
    assert [entry["case"] for entry in table7] == list(QUICK_CASES)
    for entry in table7:
        assert entry["l1_error"] <= 1e-9 and entry["status"] == "converged"
        assert entry["true"] == pytest.approx([1 / len(entry["costs"])] * len(entry["costs"]))
        assert sum(entry["estimated"]) == pytest.approx(1.0, abs=1e-15)
    assert [entry["paper_l1_error"] for entry in table7] == [2.56e-8, 6.87e-7, 3.89e-6]
    assert list(quick.record["table6"]) == list(cmtm.QUANTITIES)
    for row in quick.record["table6"].values():
        assert list(row) == ["0", "1"] and all(0 <= value <= 1e-6 for value in row.values())
    assert quick.record["quick"] is True and quick.record["versions"]["numpy"]


def test_demo_says_which_limits_it_uses(quick):
    """The paper's [-pi, pi], not the models' own: in the first case's progress line, the
    Table 7 caption and demo.json."""
    assert "limits [-pi, pi]: the paper's, not the Panda's own" in quick.stdout.splitlines()[0]
    assert "case_a: chain3, every joint 1.57 -> -1.57 rad, limits [-pi, pi]" in quick.stderr
    assert quick.record["limits"] == [-np.pi, np.pi]


def test_printed_tables_equal_demo_json(quick):
    rows = table_rows(quick.stdout, "case")
    assert len(rows) == len(quick.record["table7"])
    for cells, entry in zip(rows, quick.record["table7"]):
        case, model, true, estimated, l1, paper, seconds, iterations, stationarity = cells
        assert (case, model) == (entry["case"], entry["model"])
        assert [float(w) for w in true.split()] == [float(f"{w:.6f}") for w in entry["true"]]
        assert [float(w) for w in estimated.split()] == \
            [float(f"{w:.6f}") for w in entry["estimated"]]
        for text, key in ((l1, "l1_error"), (paper, "paper_l1_error"),
                          (stationarity, "stationarity")):
            assert float(text) == float(f"{entry[key]:.2e}")
        assert float(seconds) == float(f"{entry['solve_seconds']:.2f}")
        assert int(iterations) == entry["iterations"]
    rows = table_rows(quick.stdout, "quantity")
    assert {cells[0]: [float(text) for text in cells[1:]] for cells in rows} == \
        {name: [float(f"{value:.2e}") for value in row.values()]
         for name, row in quick.record["table6"].items()}
    assert quick.stdout.rstrip().endswith(f"demo.json written to {quick.out / 'demo.json'}")


def test_progress_is_one_line_per_step_on_stderr(quick):
    steps = re.findall(r"^cmtm demo: \[(\d+)/(\d+)\]", quick.stderr, re.MULTILINE)
    total = len(steps)
    assert total >= 7 and steps == [(str(i), str(total)) for i in range(1, total + 1)]


def test_case_folders_hold_results_the_inverse_problem_reads(quick):
    for case in QUICK_CASES:
        folder = quick.out / case
        assert all((folder / name).is_file() for name in CASE_FILES)
        model, problem, weights, theta, record = load_result(folder)
        assert record["model"] == "chain3" and problem.samples == 200
        assert np.array_equal(weights, np.ones(len(record["costs"])))
    *_, problem, weights, theta, _ = load_result(quick.out / "case_b")
    assert np.sum(np.abs(recover_weights(problem, theta).weights - 0.25)) <= 1e-9


def test_figures_are_written(quick):
    pytest.importorskip("matplotlib")
    pictures = [quick.out / case / name for case in QUICK_CASES
                for name in ("joint_angles.png", "joint_velocities.png", "joint_jerks.png",
                             "joint_torques.png", "joint_torque_rates.png")]
    for path in pictures + [quick.out / "fig7_3dof.png", quick.out / "fig6_3dof.png"]:
        assert path.read_bytes()[:8] == PNG
    assert not (quick.out / "fig9_panda.png").exists()
    assert not (quick.out / "fig8_panda.png").exists()
    if find_spec("plotly"):
        assert all((quick.out / case / "motion.html").is_file() for case in QUICK_CASES)


def test_json_prints_demo_json_alone_on_stdout(tiny_plan, tmp_path):
    code, stdout, stderr = run(["demo", "--quick", "--json", "--quiet", "--out",
                                str(tmp_path)])
    assert code == 0
    assert json.loads(stdout) == json.loads((tmp_path / "demo.json").read_text())
    assert "Table 6" in stderr and "[1/" not in stderr


def test_a_failed_check_exits_1_with_one_line_saying_which(tiny_plan, tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "DEFAULT_TOLERANCE", 0.0)
    code, _, stderr = run(["demo", "--quick", "--quiet", "--out", str(tmp_path)])
    assert code == 1
    failed = [line for line in stderr.splitlines() if "FAILED" in line]
    assert len(failed) == 1 and "link_tangent at order 0" in failed[0]


def test_failures_name_cases_and_jacobians():
    record = {"table7": [{"case": "case_a", "l1_error": 1e-12},
                         {"case": "case_c", "l1_error": 2e-9}],
              "table6": {"joint_torque": {"0": 1e-9, "2": float("nan")}}}
    assert demo.failures(record) == ["weight L1 error above 1e-09 for case_c",
                                     "Jacobian difference above 1e-06 for joint_torque at "
                                     "order 2"]


def test_out_naming_a_file_is_an_error_that_writes_nothing(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    code, stdout, stderr = run(["demo", "--quick", "--out", str(path)])
    assert code == 2 and stdout == "" and stderr.startswith("cmtm demo: error: --out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
