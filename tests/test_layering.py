"""The layers import only downward (DESIGN.md): ioc -> cmtm -> kinematic_trees.

Every module under kinematic_trees/, cmtm/ and ioc/ is parsed (not imported), and every
import statement, including those inside functions, is resolved to an absolute module name.
The packages may be empty or not exist yet: the rules then hold trivially, and the checker
itself is tested on small synthetic sources. cmtm/naive.py, the engine's independent oracle,
imports no engine module, and cmtm.reference re-exports its functions unchanged.

One module of the model layer is open to the kernels and to the oracle: the joint-type
codes of kinematic_trees.joint_types, a data format that imports nothing. They may import
exactly that module (``from kinematic_trees.joint_types import JOINT_REVOLUTE``) and
nothing else from kinematic_trees (``from kinematic_trees import joint_types`` counts as
importing the package and is refused).
"""
import ast
from pathlib import Path

import pytest

from cmtm import naive, reference

ROOT = Path(__file__).resolve().parent.parent
KERNELS = {"spatial", "taylor", "cmtm_matrix", "kinematics", "dynamics", "comprehensive", "rnea",
           "rnea_derivatives", "kernel_model", "structured_jacobians", "torque_jacobian",
           "velocity_derivatives", "point_motion", "_jit"}
KERNEL_ALLOWED = {"numpy", "numba", "math", "cmtm", "__future__", "typing"}
"""What the kernel modules may import (typing: the NamedTuple workspaces)."""
COMPILER_ALLOWED = {"gc"}
"""What cmtm/_jit.py, which compiles the kernels, may import besides: the garbage
collector, paused while Numba compiles (``KernelDispatcher``)."""
NAIVE_ALLOWED = {"numpy", "math"}
"""What cmtm/naive.py, the engine's independent oracle, may import: no engine module."""
JOINT_TYPES_MODULE = "kinematic_trees.joint_types"
"""The one model module that kernels and cmtm/naive.py may import (besides the above)."""


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
    """["module imports name"] for imports under root/``package`` whose absolute module name
    fails ``allowed(module, name)``."""
    found = []
    for module, source in modules_of(package, root).items():
        for name in imported_modules(source, module):
            if not allowed(module, name):
                found.append(f"{module} imports {name}")
    return found


def _is_kernel(module):
    """True for cmtm/<kernel>.py modules."""
    parts = module.split(".")
    return len(parts) == 2 and parts[1] in KERNELS


def model_allowed(module, name):
    """kinematic_trees imports neither cmtm nor ioc."""
    return name.split(".")[0] not in {"cmtm", "ioc"}


def engine_allowed(module, name):
    """cmtm imports nothing from ioc; its kernels only numpy, numba, math, cmtm and the
    joint-type codes."""
    top = name.split(".")[0]
    return top != "ioc" and (not _is_kernel(module) or top in KERNEL_ALLOWED
                             or name == JOINT_TYPES_MODULE
                             or module == "cmtm._jit" and top in COMPILER_ALLOWED)


def naive_allowed(module, name):
    """cmtm/naive.py imports numpy, math and the joint-type codes: no engine module."""
    return name.split(".")[0] in NAIVE_ALLOWED or name == JOINT_TYPES_MODULE


def test_kinematic_trees_imports_neither_cmtm_nor_ioc():
    assert violations("kinematic_trees", model_allowed) == []


def test_cmtm_imports_no_ioc_and_kernels_only_numpy_numba_math_cmtm_joint_types():
    assert violations("cmtm", engine_allowed) == []


def test_naive_references_import_only_numpy_math_and_joint_types():
    imported = imported_modules(modules_of("cmtm")["cmtm.naive"], "cmtm.naive")
    assert "numpy" in imported
    assert [name for name in imported if not naive_allowed("cmtm.naive", name)] == []


def test_joint_types_module_imports_nothing():
    """Kernels and the oracle may import it because it brings nothing else with it."""
    assert imported_modules(modules_of("kinematic_trees")[JOINT_TYPES_MODULE],
                            JOINT_TYPES_MODULE) == []


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
        "cmtm/spatial.py": "from kinematic_trees.joint_types import JOINT_REVOLUTE\n"
                           "import kinematic_trees.joint_types",
        "cmtm/kinematics.py": "from kinematic_trees.compile import JOINT_REVOLUTE\n"
                              "from kinematic_trees import joint_types\nimport kinematic_trees",
    }
    for name, text in sources.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    assert violations("kinematic_trees", model_allowed, tmp_path) == [
        "kinematic_trees.graph imports cmtm"]
    assert violations("cmtm", engine_allowed, tmp_path) == [
        "cmtm.api imports ioc.costs", "cmtm.dynamics imports scipy.linalg",
        "cmtm.kinematics imports kinematic_trees.compile",
        "cmtm.kinematics imports kinematic_trees", "cmtm.kinematics imports kinematic_trees"]


@pytest.mark.parametrize("name, allowed", [
    ("numpy", True), ("math", True), ("kinematic_trees.joint_types", True),
    ("kinematic_trees", False), ("kinematic_trees.compile", False),
    ("kinematic_trees.joint_types_extra", False), ("cmtm.spatial", False), ("numba", False),
])
def test_naive_rule_allows_exactly_the_joint_types_module(name, allowed):
    assert naive_allowed("cmtm.naive", name) is allowed


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
