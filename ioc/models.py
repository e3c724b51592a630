"""Models named on the command line: a built-in name or a URDF path (DESIGN.md).

=====================  ==========================================================
spec                   model
=====================  ==========================================================
``two_link_planar``    kinematic_trees.two_link_planar(), gravity along -y
``chainN``             kinematic_trees.serial_chain(N), N >= 1 (``chain3``)
``panda``              kinematic_trees.panda()
``human``              kinematic_trees.human(): 36 joints, pelvis fixed, y-up
a file path            kinematic_trees.load_urdf(path)
=====================  ==========================================================

``lock`` {joint name: position} fixes joints of any of them (gripper fingers, a joint
of a chain, the virtual joints of a floating base); ``floating_base`` (one of
kinematic_trees.FLOATING_BASES) frees the root first; ``gravity`` (3 numbers, m/s^2)
overrides the gravity the model carries (the human's (0, -9.81, 0), the planar arm's
(0, -9.81, 0), (0, 0, -9.81) otherwise).
"""
import re
from pathlib import Path

import kinematic_trees as kt

PLANAR_GRAVITY = (0.0, -9.81, 0.0)
"""two_link_planar moves in the x-y plane: gravity along -y gives the textbook numbers."""


def _tree(spec, floating_base):
    """The KinematicTree of a built-in name or a URDF path, with ``floating_base``;
    ValueError for anything else."""
    chain = re.fullmatch(r"chain(\d+)", spec)
    if chain and int(chain.group(1)) >= 1:
        return kt.serial_chain(int(chain.group(1)), floating_base)
    if spec == "two_link_planar":
        return kt.two_link_planar(floating_base, gravity=PLANAR_GRAVITY)
    if spec == "panda":
        return kt.panda(floating_base)
    if spec == "human":
        return kt.human(floating_base)
    if Path(spec).is_file():
        return kt.load_urdf(Path(spec), floating_base=floating_base)
    raise ValueError(f"--model: expected two_link_planar, chainN (N >= 1), panda, human or a "
                     f"URDF file, got {spec!r}")


def resolve_model(spec, lock=(), floating_base=None, gravity=None):
    """CompiledTree for a built-in name or a URDF path (with ``floating_base``), the joints
    of ``lock`` (pairs or dict name -> position, rad or m) fixed, compiled with ``gravity``
    (None: the model's own); ValueError (ModelError) on anything else.

    >>> resolve_model("chain3", {"joint2": 0.5}).joint_names
    ('joint1', 'joint3')
    >>> resolve_model("human").gravity.tolist()
    [0.0, -9.81, 0.0]
    """
    lock = dict(lock)
    tree = _tree(spec, floating_base)
    joints = model_joints(tree)
    unknown = sorted(set(lock) - set(joints))
    if unknown:
        raise kt.ModelError(f"--lock: expected joints of {spec} ({', '.join(joints)}), "
                            f"got {unknown}")
    for name, position in lock.items():
        tree.lock_joint(name, position)
    return kt.compile_tree(tree, gravity=gravity)


def model_lock(spec, lock=(), floating_base=None, joints=None, positions=None):
    """The {joint: position} that keeps only ``joints`` of a model movable (``--joints``):
    ``lock``, and every other movable joint of the model (with ``floating_base``) at
    ``positions[name]`` (a mapping; missing names and None: 0) unless ``lock`` gives it;
    ``lock`` alone when ``joints`` is None. ValueError for an empty ``joints``, a name
    that is not a movable joint of the model, or one that ``lock`` also names.

    >>> model_lock("chain3", {"joint3": 0.5}, joints=["joint1"])
    {'joint2': 0.0, 'joint3': 0.5}
    """
    lock = dict(lock)
    if joints is None:
        return lock
    names = model_joints(_tree(spec, floating_base))
    unknown = [name for name in joints if name not in names]
    if not joints or unknown:
        raise ValueError(f"--joints: expected movable joints of {spec} ({', '.join(names)}), "
                         f"got {', '.join(unknown) or 'none'}")
    both = sorted(set(joints) & set(lock))
    if both:
        raise ValueError(f"--joints, --lock: expected a joint movable or locked, got "
                         f"{', '.join(both)} in both")
    positions = positions or {}
    fixed = {name: float(positions.get(name, 0.0)) for name in names if name not in joints}
    return {**fixed, **lock}


def model_joints(tree):
    """The names of the movable joints of a KinematicTree, in the graph's order."""
    return [joint["name"] for _, _, joint in tree.graph.edges(data=True)
            if joint["type"] != "fixed"]
