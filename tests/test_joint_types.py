"""The joint-type codes have one definition, kinematic_trees/joint_types.py, and the layers
that write and read them agree (DESIGN.md: one definition per fact, and a test where two
layers must agree).

References: the parsed source of every module (no other module binds a code name to an
integer literal), and a hand-built tree whose joint types are known.
"""
import ast
import re
from pathlib import Path

import numpy as np
import pytest

import kinematic_trees as kt
from cmtm import naive
from cmtm.spatial import joint_screw
from kinematic_trees import joint_types
from kinematic_trees.joint_types import JOINT_PRISMATIC, JOINT_REVOLUTE

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("kinematic_trees", "cmtm", "ioc", "tests", "bench")
HOME = "kinematic_trees/joint_types.py"
CODE_NAME = re.compile(r"(?:^|_)(?:REVOLUTE|PRISMATIC|Revolute|Prismatic)(?:_|$)")
"""Names of a joint-type code: JOINT_REVOLUTE, PRISMATIC, _REVOLUTE, Revolute (enum member);
not lower-case locals such as ``revolute = model.joint_type == JOINT_REVOLUTE``."""


def _is_int_literal(node):
    """True for an int literal, signed or not (bools are not codes)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _is_range_call(node):
    """True for range(...) of int literals, the ``A, B = range(2)`` way to number codes."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "range" and all(map(_is_int_literal, node.args)))


def _bindings(target, value):
    """(target, value) pairs of the names that ``target = value`` binds to literal ints;
    value None for an element of a tuple unpacked from range(...)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
            return [pair for t, v in zip(target.elts, value.elts) for pair in _bindings(t, v)]
        return [(t, None) for t in target.elts] if _is_range_call(value) else []
    return [(target, value)] if _is_int_literal(value) else []


def code_definitions(source):
    """["line: NAME"] of every code name that ``source`` binds to an int literal, in module,
    class (enum) or function bodies: ``NAME = 0``, ``NAME: int = 1``, ``A, B = 0, 1``,
    ``A, B = range(2)``, ``self.NAME = 0``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign):
            pairs = [pair for target in node.targets for pair in _bindings(target, node.value)]
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            pairs = _bindings(node.target, node.value)
        else:
            continue
        for target, _ in pairs:
            name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
            if CODE_NAME.search(name):
                found.append(f"{node.lineno}: {name}")
    return found


def python_files(root=ROOT):
    """Every .py file under root's FOLDERS, as paths relative to root (posix)."""
    return sorted(path.relative_to(root).as_posix()
                  for folder in FOLDERS for path in (root / folder).rglob("*.py"))


def test_joint_type_codes_are_defined_only_in_kinematic_trees_joint_types():
    files = python_files()
    assert HOME in files and "cmtm/spatial.py" in files and "tests/pinocchio_ref.py" in files
    redefined = [f"{path}:{where}" for path in files if path != HOME
                 for where in code_definitions((ROOT / path).read_text())]
    assert redefined == [], "import the codes from kinematic_trees.joint_types instead"
    home = code_definitions((ROOT / HOME).read_text())
    assert [where.split(": ")[1] for where in home] == ["JOINT_REVOLUTE", "JOINT_PRISMATIC"]


@pytest.mark.parametrize("source, expected", [
    ("JOINT_REVOLUTE = 0", ["1: JOINT_REVOLUTE"]),
    ("x = 1\nPRISMATIC: int = 1", ["2: PRISMATIC"]),
    ("REVOLUTE, PRISMATIC = 0, 1", ["1: REVOLUTE", "1: PRISMATIC"]),
    ("_REVOLUTE, _PRISMATIC = range(2)", ["1: _REVOLUTE", "1: _PRISMATIC"]),
    ("class JointType(enum.IntEnum):\n    Revolute = 0\n    Prismatic = 1",
     ["2: Revolute", "3: Prismatic"]),
    ("def f(self):\n    self.JOINT_PRISMATIC = -1", ["2: JOINT_PRISMATIC"]),
    ("A = REVOLUTE = 0", ["1: REVOLUTE"]),
    # not definitions: imports, comparisons, non-literals, other names
    ("from kinematic_trees.joint_types import JOINT_REVOLUTE", []),
    ("revolute = model.joint_type == JOINT_REVOLUTE", []),
    ("JOINT_REVOLUTE = joint_types.JOINT_REVOLUTE", []),
    ("JOINT_TYPES = ('revolute', 'prismatic')\nREVOLUTE_NAME = 'revolute'", []),
    ("n_revolute = 0\nIS_PRISMATIC = True\nJOINT_TORQUE = 10", []),
])
def test_code_definitions_finds_codes_bound_to_int_literals(source, expected):
    assert code_definitions(source) == expected


def test_python_files_walks_every_folder(tmp_path):
    for name in ("cmtm/a.py", "cmtm/sub/b.py", "bench/c.py", "docs/d.py", "tests/e.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert python_files(tmp_path) == ["bench/c.py", "cmtm/a.py", "cmtm/sub/b.py"]


def test_joint_types_are_two_distinct_ints_reexported_by_kinematic_trees():
    assert type(JOINT_REVOLUTE) is int and type(JOINT_PRISMATIC) is int
    assert JOINT_REVOLUTE != JOINT_PRISMATIC
    assert (kt.JOINT_REVOLUTE, kt.JOINT_PRISMATIC) == (JOINT_REVOLUTE, JOINT_PRISMATIC)
    assert [name for name in vars(joint_types) if not name.startswith("__")] == [
        "JOINT_REVOLUTE", "JOINT_PRISMATIC"]


def small_tree():
    """base -revolute-> a -prismatic-> b -continuous-> c, plus d fixed to a."""
    tree = kt.KinematicTree()
    for link in "base", "a", "b", "c", "d":
        tree.add_link(link, mass=1.0, inertia=np.eye(3) * 0.1)
    tree.add_joint("j_a", "base", "a", "revolute", axis=(0, 0, 1))
    tree.add_joint("j_b", "a", "b", "prismatic", axis=(1, 0, 0), xyz=(0.5, 0, 0))
    tree.add_joint("j_c", "b", "c", "continuous", axis=(0, 1, 0), xyz=(0.5, 0, 0))
    tree.add_joint("j_d", "a", "d", "fixed", xyz=(0, 0.2, 0))
    return tree


def test_compiled_joint_type_codes_match_the_hand_built_tree():
    model = kt.compile_tree(small_tree())
    assert model.joint_names == ("j_a", "j_b", "j_c")
    assert model.joint_type.tolist() == [JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_REVOLUTE]


def test_engine_and_naive_oracle_read_the_codes_as_the_model_writes_them():
    """The screw of the prismatic joint is [0; axis] in the Numba kernel and in the oracle,
    the revolute ones [axis; 0]: both layers interpret the model's codes the same way."""
    model = kt.compile_tree(small_tree())
    expected = np.array([[0, 0, 1, 0, 0, 0], [0, 0, 0, 1, 0, 0], [0, 1, 0, 0, 0, 0]], float)
    engine = [joint_screw(model.joint_type[i], model.axis[i]) for i in range(model.nv)]
    np.testing.assert_array_equal(engine, expected)
    np.testing.assert_array_equal(naive.joint_screws(model), expected)
