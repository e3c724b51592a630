"""The old module paths of ioc (before its modules moved into groups, issue 41) still import:
``ioc.MOVED`` maps each to its new path, and a finder first on ``sys.meta_path`` loads an old
path as the moved module itself.

References: the modules imported by their new paths (the same objects, ``is``), a fresh
interpreter for what an import loads, and ``python -m`` for runpy's path.
"""
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import ioc

ROOT = Path(__file__).resolve().parent.parent
NEEDS = {"ioc.plots": "matplotlib"}
"""Old paths whose modules need a library of the optional plot extra."""


def test_every_old_path_names_a_moved_module_and_no_file():
    for old, new in ioc.MOVED.items():
        assert not (ROOT / (old.replace(".", "/") + ".py")).exists(), old
        assert (ROOT / (new.replace(".", "/") + ".py")).exists(), new
        assert old.rpartition(".")[2] == new.rpartition(".")[2], (old, new)


@pytest.mark.parametrize("old", sorted(ioc.MOVED))
def test_an_old_path_imports_the_moved_module_itself(old):
    """One module object under both names (patching either patches both), which keeps its
    own name and spec."""
    if old in NEEDS:
        pytest.importorskip(NEEDS[old], reason="the plot extra is missing")
    new = ioc.MOVED[old]
    module = importlib.import_module(old)
    assert module is importlib.import_module(new) is sys.modules[old] is sys.modules[new]
    assert module.__name__ == module.__spec__.name == new


def test_from_an_old_path_import_a_name_and_patch_it(monkeypatch):
    from ioc.problem import MotionProblem
    from ioc.optimize import problem
    assert MotionProblem is problem.MotionProblem
    monkeypatch.setattr("ioc.direct.solve", "patched")
    assert importlib.import_module("ioc.optimize.direct").solve == "patched"


def test_the_exported_names_come_from_the_new_paths():
    assert ioc.solve is importlib.import_module("ioc.optimize.direct").solve
    assert all(not path.startswith(tuple(f"{old}." for old in ioc.MOVED)) and
               path not in ioc.MOVED for path in ioc.EXPORTS.values())


def fresh(code, *args):
    """stdout of ``code`` run by a new interpreter in the repository's root."""
    return subprocess.run([sys.executable, *args, "-c", code] if code else
                          [sys.executable, *args], capture_output=True, text=True,
                          check=True, cwd=ROOT).stdout.strip()


def test_an_old_path_loads_only_what_its_module_needs():
    """``import ioc.banded`` loads ioc.spline.banded and nothing of the other groups."""
    printed = fresh("import sys, ioc.banded; "
                    "print(sorted(m for m in sys.modules if m.startswith('ioc')))")
    assert printed == "['ioc', 'ioc.banded', 'ioc.spline', 'ioc.spline.banded']"


def test_an_old_path_runs_as_main():
    assert fresh(None, "-m", "ioc.cli", "--version").startswith("cmtm ")


def test_lazy_module_of_an_old_path_is_the_moved_module():
    printed = fresh("import sys, ioc; m = ioc.lazy_module('ioc.results'); "
                    "loaded = 'scipy.sparse' in sys.modules; import ioc.results; "
                    "print(loaded, m is ioc.results is ioc.files.results, m.RESULT_FILE)")
    assert printed == "False True result.json"


def test_an_old_path_is_an_attribute_of_the_package():
    """``ioc.data.segments`` after ``import ioc`` (an import of ioc.data used to set it)."""
    printed = fresh("import ioc; print(ioc.data is ioc.files.data, "
                    "ioc.data.segments is ioc.files.data.segments, hasattr(ioc, 'nothing'))")
    assert printed == "True True False"
