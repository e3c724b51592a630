"""The ``cmtm`` command line: exit codes, one-line errors, --debug, JSON output, atomic
writes."""
import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cmtm
from ioc import cli
from ioc.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_check_jacobians_json_reports_every_quantity_within_tolerance(capsys):
    assert main(["check-jacobians", "--model", "chain3", "--order", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [row["quantity"] for row in report["rows"]] == list(cmtm.QUANTITIES)
    assert report["passed"] and report["nv"] == 3
    assert all(row["rel_diff"] <= report["tolerance"] for row in report["rows"])
    assert all(row["max_abs_J"] > 0 for row in report["rows"])


def test_check_jacobians_fails_when_tolerance_is_impossible(capsys):
    # central differences cannot reach 1e-30 relative: the command must say FAILED, exit 1
    assert main(["check-jacobians", "--model", "chain3", "--order", "0",
                 "--tolerance", "1e-30"]) == 1
    assert "FAILED" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["check-jacobians", "--model", "robot9000", "--order", "1"], "--model: expected"),
    (["check-jacobians", "--model", "chain0", "--order", "1"], "--model: expected"),
])
def test_bad_model_is_a_one_line_error(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_negative_order_is_rejected_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["check-jacobians", "--model", "chain3", "--order", "-1"])
    assert exit_info.value.code == 2


# --- errors: one line, exit 2; --debug shows the traceback --------------------------------

BAD = ["check-jacobians", "--model", "chain3", "--order", "0", "--lock", "joint1=inf"]


@pytest.mark.parametrize("argv", [["--debug", *BAD], [*BAD, "--debug"]],
                         ids=["before the command", "after it"])
def test_debug_lets_the_error_through_with_its_traceback(argv):
    with pytest.raises(ValueError, match="lock position: expected finite numbers, got inf"):
        main(argv)


def test_unexpected_exception_is_one_line_exit_2_with_a_hint(capsys, monkeypatch):
    """An exception other than ValueError or OSError is a bug: one line naming it."""
    def broken(*args):
        raise KeyError("rows")
    monkeypatch.setattr(cli, "jacobian_discrepancies", broken)
    assert main(["check-jacobians", "--model", "chain3", "--order", "0"]) == 2
    err = capsys.readouterr().err
    assert err == ("cmtm check-jacobians: internal error: KeyError: 'rows' (a bug: rerun with "
                   "--debug for the traceback and report it)\n")
    with pytest.raises(KeyError):
        main(["--debug", "check-jacobians", "--model", "chain3", "--order", "0"])


def test_json_output_is_strict_json(capsys, monkeypatch):
    """A NaN in a report is an error, never the non-JSON token NaN."""
    monkeypatch.setattr(cli, "jacobian_discrepancies", lambda *args: [{"rel_diff": np.nan,
                                                                      "quantity": "x"}])
    assert main(["check-jacobians", "--model", "chain3", "--order", "0", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Out of range float values are not JSON compliant" in err


WRITERS = {"write_text", "write_bytes", "savefig", "save", "savez", "savez_compressed",
           "savetxt", "dump", "to_csv"}


def test_every_file_the_cli_writes_is_written_atomically():
    """ioc opens files for writing only in ioc.results.write_atomically, and its writer calls
    (np.savez, json.dump, savefig, Path.write_*, ...) write only into the temporary file that
    write_atomically hands to them (an argument named ``file``)."""
    found = []
    for path in sorted((ROOT / "ioc").glob("*.py")):
        tree = ast.parse(path.read_text())
        atomic = {id(node) for function in ast.walk(tree) if isinstance(function, ast.FunctionDef)
                  and function.name == "write_atomically" for node in ast.walk(function)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or id(node) in atomic:
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            into_file = bool(node.args) and getattr(node.args[0], "id", None) == "file"
            mode = node.args[1] if name == "open" and len(node.args) > 1 else None
            if (name in WRITERS and not into_file) or (
                    isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax")):
                found.append(f"{path.name}:{node.lineno} {name}")
    assert found == []


def test_precompile_reports_its_processes(capsys, monkeypatch):
    assert main(["precompile", "--jobs", "1"]) == 0   # the session has every kernel
    n = len(cmtm.compile_cache.UNITS)
    assert f": 0 unit(s) compiled by 0 process(es), {n} found compiled or cached" in \
        capsys.readouterr().out
    monkeypatch.setattr(cmtm.compile_cache, "unit_ready", lambda name: False)
    assert main(["precompile", "--jobs", "1"]) == 0
    assert f": {n} unit(s) compiled by 1 process(es), 0 found compiled or cached" in \
        capsys.readouterr().out


def fresh_interpreter(code):
    """What ``code`` prints in a new Python (the modules this test process has imported
    would hide what a command loads)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT).stdout.strip()


SOLVER_MODULES = ("joblib", "scipy.interpolate", "scipy.optimize", "scipy.sparse")


def test_the_parser_and_check_jacobians_load_no_solver_module():
    # ioc.cli names the solver layer through ioc.lazy_module: building the parser (every
    # command, --help) and running check-jacobians must not execute it (the kernels come
    # from the test session's cache, NUMBA_CACHE_DIR being inherited)
    loaded = fresh_interpreter(
        "import sys; from ioc import cli; "
        "cli.main(['check-jacobians', '--model', 'chain2', '--order', '0']); "
        f"print([name for name in {SOLVER_MODULES!r} if name in sys.modules])").splitlines()[-1]
    assert loaded == "[]"


def test_a_lazy_module_is_the_module_an_import_gives_and_runs_at_first_use():
    printed = fresh_interpreter(
        "import sys, ioc; m = ioc.lazy_module('ioc.weights_io'); "
        "before = 'joblib' in sys.modules or 'scipy.sparse' in sys.modules; "
        "import ioc.weights_io; from ioc import weights_io; "
        "print(before, m is ioc.weights_io is weights_io, m.WEIGHTS_FILE, "
        "ioc.lazy_module('ioc.weights_io') is m)")
    assert printed == "False True weights.json True"
