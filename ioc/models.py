"""Models named on the command line: a built-in name or a URDF path (DESIGN.md).

=====================  ==========================================================
spec                   model
=====================  ==========================================================
``two_link_planar``    kinematic_trees.two_link_planar(), gravity along -y
``chainN``             kinematic_trees.serial_chain(N), N >= 1 (``chain3``)
``panda``              kinematic_trees.panda()
a file path            kinematic_trees.load_urdf(path)
=====================  ==========================================================

``lock`` {joint name: position} fixes joints of any of them (gripper fingers, a joint
of a chain).
"""
import re
from pathlib import Path

import kinematic_trees as kt

PLANAR_GRAVITY = (0.0, -9.81, 0.0)
"""two_link_planar moves in the x-y plane: gravity along -y gives the textbook numbers."""


def _builtin(spec):
    """(KinematicTree, compile_tree keywords) of a built-in model name, or None."""
    chain = re.fullmatch(r"chain(\d+)", spec)
    if chain and int(chain.group(1)) >= 1:
        return kt.serial_chain(int(chain.group(1))), {}
    if spec == "two_link_planar":
        return kt.two_link_planar(), {"gravity": PLANAR_GRAVITY}
    if spec == "panda":
        return kt.panda(), {}
    return None


def resolve_model(spec, lock=()):
    """CompiledTree for a built-in name or a URDF path with the joints of ``lock`` (pairs
    or dict name -> position, rad or m) fixed; ValueError (ModelError) on anything else.

    >>> resolve_model("chain3", {"joint2": 0.5}).joint_names
    ('joint1', 'joint3')
    """
    lock = dict(lock)
    builtin = _builtin(spec)
    if builtin is not None:
        tree, options = builtin
        joints = [name for _, _, name in tree.graph.edges(data="name")]
        unknown = sorted(set(lock) - set(joints))
        if unknown:
            raise kt.ModelError(f"--lock: expected joints of {spec} ({', '.join(joints)}), "
                                f"got {unknown}")
        for name, position in lock.items():
            tree.lock_joint(name, position)
        return kt.compile_tree(tree, **options)
    if Path(spec).is_file():
        return kt.compile_tree(kt.load_urdf(Path(spec), lock=lock))
    raise ValueError(f"--model: expected two_link_planar, chainN (N >= 1), panda or a URDF "
                     f"file, got {spec!r}")
