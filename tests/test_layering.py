"""The layers import only downward (DESIGN.md): bench -> ioc -> cmtm -> kinematic_trees, and
inside ioc its groups: commands -> show -> inverse -> files -> optimize -> spline, with
ioc.choices and ioc._blas at the top for all, and no import circle among ioc's modules.

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


# --- ioc's groups (issue 41): each imports only the groups before it, and no circle ---------

IOC_GROUPS = ("spline", "optimize", "files", "inverse", "show", "commands")
"""The subpackages of ioc, lowest first: a module may import the modules of its own group
and of the groups before it, never of a later one."""
IOC_TOP = {"ioc", "ioc.choices", "ioc._blas"}
"""The package and the modules at its top, which every group may import: the package for
``ioc.lazy_module``, the option vocabularies and the one-thread BLAS (they import nothing of
ioc)."""


def ioc_references(source, module, known):
    """Absolute names of the ioc modules that ``source`` (the module ``module``) refers to:
    its imports as :func:`imported_modules` resolves them, ``from ioc.show import plots``
    counted as ioc.show.plots, and every string constant that is exactly the name of a
    module of ``known`` (``ioc.lazy_module("ioc.files.results")``)."""
    names = [name for name in imported_modules(source, module) if name.split(".")[0] == "ioc"]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names += [f"{node.module}.{alias.name}" for alias in node.names
                      if f"{node.module}.{alias.name}" in known]
        elif isinstance(node, ast.Constant) and node.value in known:
            names.append(node.value)
    return list(dict.fromkeys(names))


def ioc_rank(name):
    """-1 for the package and its top modules, the group's index for a module of a group
    (or the group's package), None for anything else (an old path, a stray module)."""
    if name in IOC_TOP:
        return -1
    parts = name.split(".")
    return IOC_GROUPS.index(parts[1]) if len(parts) > 1 and parts[1] in IOC_GROUPS else None


def ioc_graph(root=ROOT):
    """{module: [ioc modules it refers to]} for every module of ioc/ but the package's
    __init__ (its exported names and old paths are looked up at first use)."""
    sources = {name.removesuffix(".__init__"): source
               for name, source in modules_of("ioc", root).items()}
    sources.pop("ioc")
    known = set(sources)
    return {module: ioc_references(source, module, known)
            for module, source in sources.items()}


def ioc_violations(root=ROOT):
    """["module: why"] for modules outside the groups and references to later groups or to
    paths that are no module of a group."""
    found = []
    for module, names in ioc_graph(root).items():
        rank = ioc_rank(module)
        if rank is None:
            found.append(f"{module}: in no group of {IOC_GROUPS}")
            continue
        for name in names:
            if ioc_rank(name) is None:
                found.append(f"{module}: imports {name}, in no group (an old path?)")
            elif ioc_rank(name) > rank:
                found.append(f"{module}: imports {name}, of a later group")
    return found


def import_circles(graph):
    """The import circles of ``graph`` {module: [modules]}: its strongly connected
    components of more than one module, and modules that import themselves (Tarjan's
    algorithm), each sorted."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for name in graph.get(module, ()):
            if name not in graph:
                continue
            if name not in index:
                visit(name)
                low[module] = min(low[module], low[name])
            elif name in on_stack:
                low[module] = min(low[module], index[name])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1 or module in graph[module]:
                circles.append(sorted(component))
    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


def may_import(docstring):
    """The ioc groups a group's docstring names after 'May import:'."""
    allowed = docstring.split("May import:", 1)[1] if "May import:" in docstring else ""
    return [group for group in IOC_GROUPS if f"ioc.{group}" in allowed]


def test_every_ioc_module_is_in_a_group_and_imports_no_later_group():
    assert {path.name for path in (ROOT / "ioc").iterdir()
            if path.is_dir() and path.name != "__pycache__"} == set(IOC_GROUPS)
    assert ioc_violations() == []


def test_no_import_circle_among_the_ioc_modules():
    graph = ioc_graph()
    assert graph["ioc.commands.cli"] and "ioc.commands.demo" in graph["ioc.commands.cli"]
    assert import_circles(graph) == []


@pytest.mark.parametrize("group", IOC_GROUPS)
def test_each_group_says_what_it_holds_and_may_import(group):
    """A group's __init__ is its docstring alone (importing a group loads nothing), naming
    its modules and, after 'May import:', exactly the groups before it."""
    path = ROOT / "ioc" / group / "__init__.py"
    tree = ast.parse(path.read_text())
    docstring = ast.get_docstring(tree)
    assert len(tree.body) == 1 and docstring, group
    modules = sorted(p.stem for p in path.parent.glob("*.py") if p.stem != "__init__")
    assert all(f"``{module}``" in docstring for module in modules), group
    assert may_import(docstring) == list(IOC_GROUPS[:IOC_GROUPS.index(group)])


@pytest.mark.parametrize("package", ["kinematic_trees", "cmtm", "ioc"])
def test_no_package_imports_bench(package):
    """kinematic_trees <- cmtm <- ioc <- bench: the benchmarks sit on top."""
    assert violations(package, lambda module, name: name.split(".")[0] != "bench") == []


def test_the_ioc_rules_catch_violations(tmp_path):
    sources = {
        "ioc/__init__.py": "import importlib",
        "ioc/choices.py": "",
        "ioc/spline/__init__.py": '"""Splines."""',
        "ioc/spline/bspline.py": "import numpy\nfrom ioc.choices import X",
        "ioc/spline/banded.py": "def f():\n    from ioc.show import plots",
        "ioc/optimize/__init__.py": "",
        "ioc/optimize/problem.py": "from ioc.optimize.direct import solve\n"
                                   "from ioc.spline.bspline import B",
        "ioc/optimize/direct.py": "import ioc\nlazy = ioc.lazy_module('ioc.optimize.problem')",
        "ioc/show/__init__.py": "",
        "ioc/show/plots.py": "from ioc.data import read_motion\nfrom ioc import show",
        "ioc/stray.py": "",
    }
    for name, text in sources.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert ioc_violations(tmp_path) == [
        "ioc.show.plots: imports ioc.data, in no group (an old path?)",
        "ioc.spline.banded: imports ioc.show, of a later group",
        "ioc.spline.banded: imports ioc.show.plots, of a later group",
        "ioc.stray: in no group of ('spline', 'optimize', 'files', 'inverse', 'show', "
        "'commands')"]
    assert import_circles(ioc_graph(tmp_path)) == [["ioc.optimize.direct",
                                                    "ioc.optimize.problem"]]
    assert import_circles({"a": ["a"], "b": ["c"], "c": []}) == [["a"]]


def test_may_import_reads_the_groups_after_its_colon():
    assert may_import("Holds ioc.show things.\n\nMay import: cmtm, ioc.spline and\n"
                      "ioc.files; nothing later.") == ["spline", "files"]
    assert may_import("No such line (ioc.spline).") == []


def test_setuptools_ships_every_package():
    """pyproject.toml lists the packages explicitly: a group missing there would be missing
    from an installed (non-editable) cmtm."""
    tomllib = pytest.importorskip("tomllib")
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = {".".join(path.parent.relative_to(ROOT).parts)
             for top in ("kinematic_trees", "cmtm", "ioc")
             for path in (ROOT / top).rglob("__init__.py")}
    assert sorted(listed) == sorted(found)
