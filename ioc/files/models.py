"""Models named on the command line: a built-in name or a URDF path (DESIGN.md), and the
default start and goal of a motion on them.

=====================  ==========================================================
spec                   model
=====================  ==========================================================
``two_link_planar``    kinematic_trees.two_link_planar(), gravity along -y
``chainN``             kinematic_trees.serial_chain(N), 1 <= N <= MAX_JOINTS
``panda``              kinematic_trees.panda()
``human``              kinematic_trees.human(): 36 joints, pelvis fixed, y-up
a file path            kinematic_trees.load_urdf(path), at most MAX_JOINTS joints
=====================  ==========================================================

``lock`` {joint name: position} fixes joints of any of them (gripper fingers, a joint
of a chain, the virtual joints of a floating base); ``floating_base`` (one of
kinematic_trees.FLOATING_BASES) frees the root first; ``gravity`` (3 numbers, m/s^2)
overrides the gravity the model carries (the human's (0, -9.81, 0), the planar arm's
(0, -9.81, 0), (0, 0, -9.81) otherwise).
"""
import hashlib
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

import kinematic_trees as kt

PLANAR_GRAVITY = (0.0, -9.81, 0.0)
"""two_link_planar moves in the x-y plane: gravity along -y gives the textbook numbers."""
MAX_JOINTS = 1000
"""Models of the command line have at most this many joints, refused before anything is
built: one sample of a 1000-joint model's order-1 torque Jacobian takes 64 MB, so a
default problem (200 samples) would exceed any memory budget (cmtm.memory_budget)."""

PAPER_START, PAPER_GOAL = 1.57, -1.57
"""Every joint from 1.57 rad to -1.57 rad: the paper's experiments (§8.3)."""
RANGE_FRACTIONS = (0.3, 0.7)
"""Start and goal as fractions of a joint's range [lower, upper] where the paper's values
do not lie within its limits."""
OPEN_RANGE = np.pi
"""The length given to a range open on one side (one infinite limit), from its finite
bound, when the paper's values do not lie within it."""
BOUNDARY_RULE = ("1.57 -> -1.57 (the paper's) where both lie within the joint's limits, "
                 "else 30 % -> 70 % of its range [lower, upper] (a range open on one "
                 "side counts as pi long from its finite bound)")
"""The default start and goal (:func:`default_boundary`) in words, for the help."""


def default_boundary(lower, upper):
    """The default start and goal of every joint, (nv,) float64 each, from its limits
    ``lower``, ``upper`` (nv,) (-inf / inf: none): :data:`BOUNDARY_RULE`. Every value lies
    within the limits, so the default problem is valid on every model.

    >>> default_boundary(np.array([-np.inf, -3.0718, 0.0]), np.array([np.inf, -0.0698, 0.04]))
    (array([ 1.57  , -2.1712,  0.012 ]), array([-1.57  , -0.9704,  0.028 ]))
    """
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    paper = paper_boundary_fits(lower, upper)
    low = np.where(np.isfinite(lower), lower,
                   np.where(np.isfinite(upper), upper - OPEN_RANGE, 0.0))
    high = np.where(np.isfinite(upper), upper, low + OPEN_RANGE)
    start, goal = (np.where(paper, value, low + fraction * (high - low))
                   for value, fraction in zip((PAPER_START, PAPER_GOAL), RANGE_FRACTIONS))
    return start, goal


def paper_boundary_fits(lower, upper):
    """(nv,) bool: whether the paper's start and goal lie within each joint's limits."""
    return (np.asarray(lower) <= PAPER_GOAL) & (PAPER_START <= np.asarray(upper))


def _tree(spec, floating_base):
    """The KinematicTree of a built-in name or a URDF path, with ``floating_base``;
    ValueError for anything else."""
    chain = re.fullmatch(r"chain(\d+)", spec)
    if chain and int(chain.group(1)) >= 1:
        check_joint_count(int(chain.group(1)), spec)
        return kt.serial_chain(int(chain.group(1)), floating_base)
    if spec == "two_link_planar":
        return kt.two_link_planar(floating_base, gravity=PLANAR_GRAVITY)
    if spec == "panda":
        return kt.panda(floating_base)
    if spec == "human":
        return kt.human(floating_base)
    path = Path(spec)
    if path.is_file():
        return _load_urdf(path, floating_base)
    if path.is_dir():
        raise ValueError(f"--model: expected a URDF file, got the folder {spec!r}")
    if path.suffix or len(path.parts) > 1:
        raise ValueError(f"--model: the file {spec!r} does not exist")
    raise ValueError(f"--model: expected two_link_planar, chainN (N >= 1), panda, human or a "
                     f"URDF file, got {spec!r}")


def check_joint_count(count, spec):
    """ModelError if a model has more than MAX_JOINTS joints."""
    if count > MAX_JOINTS:
        raise kt.ModelError(f"--model {spec}: expected at most {MAX_JOINTS} joints, got "
                            f"{count} (one sample of its torque Jacobian alone would take "
                            f"{64 * (count / 1000) ** 2:.3g} MB)")


def resolve_model(spec, lock=(), floating_base=None, gravity=None):
    """CompiledTree for a built-in name or a URDF path (with ``floating_base``), the joints
    of ``lock`` (pairs or dict name -> position, rad or m) fixed, compiled with ``gravity``
    (None: the model's own); ValueError (ModelError) on anything else, naming a file that
    does not exist as missing.

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


def _load_urdf(path, floating_base):
    """The KinematicTree of the URDF file ``path`` with ``floating_base``; ModelError naming
    the file, also when it holds more than MAX_JOINTS joints (counted before anything is
    built)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise kt.ModelError(f"--model {path}: cannot read it ({error})") from None
    try:
        check_joint_count(len(ET.fromstring(text).findall("joint")), path)
    except ET.ParseError:
        pass                                    # load_urdf says what is malformed
    try:
        return kt.load_urdf(text, floating_base=floating_base)
    except kt.ModelError as error:
        raise kt.ModelError(f"--model {path}: {error}") from None


def model_sha256(spec):
    """The sha256 (hex) of the model file ``spec``; None for a built-in model name (or
    anything that names no file)."""
    if _is_builtin_name(spec) or not Path(spec).is_file():
        return None
    return file_sha256(spec)


def file_sha256(path):
    """The sha256 (hex) of the file ``path``."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _is_builtin_name(spec):
    return spec in ("two_link_planar", "panda", "human") \
        or re.fullmatch(r"chain\d+", spec) is not None


def locate_model(spec, sha256, near):
    """The model spec to rebuild a recorded model from: a built-in name as it is; a file
    as recorded (``spec``, relative to the working folder) or, when that path does not
    hold the file of ``sha256``, the file of that name in the folder ``near`` (the
    recording's folder), so that results move between machines with their model. None
    for ``sha256``: the recorded path alone. ValueError when no candidate holds it."""
    if _is_builtin_name(spec) or sha256 is None:
        return spec
    candidates = list(dict.fromkeys([Path(spec), Path(near) / spec, Path(near) / Path(spec).name]))
    found = [path for path in candidates if path.is_file()]
    for path in found:
        if file_sha256(path) == sha256:
            return str(path)
    if found:
        raise ValueError(f"model file {spec!r}: expected the recorded file (sha256 "
                         f"{sha256[:12]}...), found other contents in "
                         f"{', '.join(map(str, found))}")
    raise ValueError(f"model file {spec!r}: does not exist (looked for "
                     f"{', '.join(map(str, candidates))})")
