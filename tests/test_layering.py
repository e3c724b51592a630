"""The layers import only downward (DESIGN.md): ioc -> cmtm -> kinematic_trees.

Every module under kinematic_trees/, cmtm/ and ioc/ is parsed (not imported), and every
import statement, including those inside functions, is resolved to an absolute module name.
The packages may be empty or not exist yet: the rules then hold trivially, and the checker
itself is tested on small synthetic sources. cmtm/naive.py, the engine's independent oracle,
imports numpy and math only, and cmtm.reference re-exports its functions unchanged.
"""
import ast
from pathlib import Path

import pytest

from cmtm import naive, reference

ROOT = Path(__file__).resolve().parent.parent
KERNELS = {"spatial", "taylor", "cmtm_matrix", "kinematics", "dynamics", "comprehensive", "rnea",
           "structured_jacobians", "torque_jacobian", "_jit"}
KERNEL_ALLOWED = {"numpy", "numba", "math", "cmtm", "__future__"}
NAIVE_ALLOWED = {"numpy", "math"}
"""What cmtm/naive.py, the engine's independent oracle, may import: no engine module."""


def imported_modules(source, module):
    """Absolute names of the modules imported by ``source``, the text of the module named
    ``module`` (dotted path of its file, e.g. "cmtm.dynamics" or "cmtm.__init__").

    ``from X import a`` counts as importing X; ``from . import a`` as importing package.a.
    A relative import that climbs above the top-level package resolves from the top level.
    """
    package = module.split(".")[:-1]
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:max(len(package) - node.level + 1, 0)] if node.level else []
            if node.module:
                names.append(".".join(base + [node.module]))
            else:
                names += [".".join(base + [alias.name]) for alias in node.names]
    return names


def modules_of(package, root=ROOT):
    """{dotted module name: source} of every .py file under root/package (may be empty)."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        modules[".".join(parts)] = path.read_text()
    return modules


def violations(package, allowed, root=ROOT):
    """["module imports name"] for imports under root/``package`` whose top-level name fails
    ``allowed(module, top_level_name)``."""
    found = []
    for module, source in modules_of(package, root).items():
        for name in imported_modules(source, module):
            if not allowed(module, name.split(".")[0]):
                found.append(f"{module} imports {name}")
    return found


def _is_kernel(module):
    """True for cmtm/<kernel>.py modules."""
    parts = module.split(".")
    return len(parts) == 2 and parts[1] in KERNELS


def model_allowed(module, top):
    """kinematic_trees imports neither cmtm nor ioc."""
    return top not in {"cmtm", "ioc"}


def engine_allowed(module, top):
    """cmtm imports nothing from ioc; its kernels only numpy, numba, math and cmtm."""
    return top != "ioc" and (not _is_kernel(module) or top in KERNEL_ALLOWED)


def test_kinematic_trees_imports_neither_cmtm_nor_ioc():
    assert violations("kinematic_trees", model_allowed) == []


def test_cmtm_imports_no_ioc_and_kernels_only_numpy_numba_math_cmtm():
    assert violations("cmtm", engine_allowed) == []


def test_naive_references_import_only_numpy_and_math():
    imported = imported_modules(modules_of("cmtm")["cmtm.naive"], "cmtm.naive")
    assert "numpy" in imported
    assert [name for name in imported if name.split(".")[0] not in NAIVE_ALLOWED] == []


def test_reference_reexports_the_naive_references_unchanged():
    """cmtm.reference's naive names are cmtm.naive's functions, not engine-backed copies."""
    names = [name for name in reference.__all__ if hasattr(naive, name)]
    assert "rnea_naive" in names and "taylor_coefficients" in names
    assert all(getattr(reference, name) is getattr(naive, name) for name in names)


def test_the_rules_catch_violations(tmp_path):
    sources = {
        "kinematic_trees/graph.py": "def f():\n    from cmtm import api",
        "cmtm/api.py": "import scipy\nfrom ioc.costs import cost",
        "cmtm/dynamics.py": "import numpy as np\nfrom .taylor import scale\nimport scipy.linalg",
        "cmtm/_jit.py": "from __future__ import annotations\nimport numba",
    }
    for name, text in sources.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    assert violations("kinematic_trees", model_allowed, tmp_path) == [
        "kinematic_trees.graph imports cmtm"]
    assert violations("cmtm", engine_allowed, tmp_path) == [
        "cmtm.api imports ioc.costs", "cmtm.dynamics imports scipy.linalg"]


def test_the_layering_walk_sees_the_model_package():
    assert "kinematic_trees.compile" in modules_of("kinematic_trees")


@pytest.mark.parametrize("source, module, expected", [
    ("import numpy as np\nimport numba.core", "cmtm.spatial", ["numpy", "numba.core"]),
    ("from . import taylor", "cmtm.dynamics", ["cmtm.taylor"]),
    ("from .taylor import scale", "cmtm.dynamics", ["cmtm.taylor"]),
    ("from .. import ioc", "cmtm.dynamics", ["ioc"]),
    ("from ..ioc import costs", "cmtm.sub.dynamics", ["cmtm.ioc"]),
    ("from ...ioc import costs", "cmtm.sub.dynamics", ["ioc"]),
    ("from .graph import ModelError", "kinematic_trees.__init__", ["kinematic_trees.graph"]),
    ("def f():\n    import scipy.linalg", "cmtm.kinematics", ["scipy.linalg"]),
])
def test_imported_modules_resolves_relative_and_nested_imports(source, module, expected):
    assert imported_modules(source, module) == expected
