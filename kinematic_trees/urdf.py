"""Read a URDF robot description into a KinematicTree (``xml.etree.ElementTree`` only).

Read: ``<link>`` with its ``<inertial>`` (origin xyz/rpy, mass, inertia; links without one
are massless) and ``<joint>`` of type revolute, continuous, prismatic or fixed with origin,
axis (default (1, 0, 0), as URDF says; ignored for fixed joints), limit lower/upper
(-inf/+inf when absent) and mimic (joint, multiplier 1 and offset 0 by default).
Ignored: visuals, collisions, meshes, materials, transmissions, gazebo, dynamics and any
unknown tag. Never touches the network (no external entities, meshes are not opened).

What Pinocchio's ``buildModelFromUrdf`` reads, this reads too, with the same degrees of
freedom under the default options, except planar and floating joints (a ModelError naming
the joint; the ``floating_base`` option gives a root six coordinates).
"""
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .floating_base import add_floating_base
from .graph import KinematicTree, ModelError
from .inertia import inertia_matrix, rotate_inertia, rpy_matrix

_UNSUPPORTED = ("floating", "planar")
MIMIC_MODES = ("independent", "lock", "couple")
"""What ``load_urdf`` makes of a joint with a <mimic> tag (see there)."""


def load_urdf(source, *, lock=None, mimic="independent", floating_base=None, strict=False,
              project_inertia=False, gravity=None):
    """Build a KinematicTree from a URDF file path (str or Path) or an XML string.

    lock : {joint name: position (rad or m)}; those joints become fixed at that position
        (e.g. to remove gripper fingers).
    mimic : what a joint with <mimic joint=leader multiplier=m offset=o> becomes:
        "independent" (default, as Pinocchio's default parse) an ordinary joint, the tag
        ignored; "lock" fixed at m q_leader + o, q_leader the leader's ``lock`` position
        or 0; "couple" a joint coupled to its leader, q = m q_leader + o
        (``KinematicTree.couple_joint``; ``kinematic_trees.coupling`` maps the independent
        joints to all), or fixed like "lock" when its leader is locked or fixed (at 0).
        A joint in ``lock`` is locked at that position in every mode; tags on fixed
        joints mean nothing and are skipped. "lock" and "couple" refuse a tag whose
        leader is not a joint of the file; "independent" does not read the tags.
    floating_base : None (the root link is the fixed base) or one of ``FLOATING_BASES``:
        six virtual joints carry the root link (``add_floating_base``).
    strict, project_inertia : the inertia policy of the tree (``KinematicTree``):
        inconsistent inertias within the tolerance are kept and reported once per link by
        an ``InertiaWarning``, refused with ``strict=True``, projected onto the nearest
        consistent inertia with ``project_inertia=True``.
    gravity : the gravity the tree carries (``KinematicTree.gravity``), m/s^2 in the root
        link's frame; None: (0, 0, -9.81), URDF's z-up convention (a y-up file such as
        example-robot-data's human needs (0, -9.81, 0): ``kinematic_trees.human`` says so).

    >>> tree = load_urdf('''<robot name="pendulum">
    ...   <link name="base"/>
    ...   <link name="rod"><inertial><mass value="2"/><origin xyz="0 0 -0.5"/>
    ...     <inertia ixx="0.1" iyy="0.1" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>
    ...   <joint name="hinge" type="continuous"><parent link="base"/><child link="rod"/>
    ...     <axis xyz="0 1 0"/></joint>
    ... </robot>''')
    >>> tree.graph.nodes["rod"]["mass"], tree.graph.edges["base", "rod"]["axis"]
    (2.0, array([0., 1., 0.]))
    """
    if mimic not in MIMIC_MODES:
        raise ValueError(f"mimic: expected one of {', '.join(MIMIC_MODES)}, got {mimic!r}")
    robot = _parse(source)
    lock = _lock_positions(lock)
    joints = robot.findall("joint")
    unknown = sorted(set(lock) - {joint.get("name") for joint in joints})
    if unknown:
        raise ModelError(f"lock: no joint named {unknown} in the URDF")
    tree = KinematicTree(strict=strict, project_inertia=project_inertia, gravity=gravity)
    for link in robot.findall("link"):
        _add_link(tree, link)
    for joint in joints:
        _add_joint(tree, joint)
    if mimic != "independent":
        lock = _couple_or_lock_mimics(tree, joints, mimic, lock)
    for name, position in lock.items():
        tree.lock_joint(name, position)
    tree.validate()
    return add_floating_base(tree, floating_base)


def _lock_positions(lock):
    """{joint name: position} of the ``lock`` option (None: no joint), else ModelError."""
    try:
        return dict(lock or {})
    except (TypeError, ValueError):
        raise ModelError(f"lock: expected {{joint name: position}}, got {lock!r}") from None


def _parse(source):
    """The <robot> root element of a URDF path or XML string; ModelError if unreadable."""
    if not isinstance(source, (str, os.PathLike)):
        hint = " (decode XML bytes to str first)" if isinstance(source, bytes) else ""
        raise ModelError(f"URDF: expected a file path (str or Path) or XML text (str), got "
                         f"{type(source).__name__}{hint}")
    is_xml = isinstance(source, str) and source.lstrip().startswith("<")
    try:
        root = ET.fromstring(source) if is_xml else ET.parse(Path(source)).getroot()
    except ET.ParseError as error:
        raise ModelError(f"URDF: malformed XML ({error})") from None
    except (OSError, ValueError) as error:
        raise ModelError(f"URDF: cannot read file {str(source)!r} ({error})") from None
    if root.tag != "robot":
        raise ModelError(f"URDF: the root element is <{root.tag}>, expected <robot>")
    return root


def _add_link(tree, link):
    """Add a <link>: mass, COM and rotational inertia (rotated into the link frame)."""
    name = link.get("name")
    if not name:
        raise ModelError("URDF: a <link> has no 'name' attribute")
    inertial = link.find("inertial")
    if inertial is None:
        tree.add_link(name)
        return
    where = f"link '{name}': <inertial>"
    xyz, rpy = _origin(inertial, where)
    mass = _number(inertial.find("mass"), "value", where, default=0.0)
    element = inertial.find("inertia")
    components = [_number(element, key, where, default=0.0)
                  for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")]
    tree.add_link(name, mass=mass, com=xyz,
                  inertia=rotate_inertia(rpy_matrix(rpy), inertia_matrix(*components)))


def _add_joint(tree, joint):
    """Add a <joint>; ModelError for missing attributes and unsupported types."""
    name = joint.get("name")
    if not name:
        raise ModelError("URDF: a <joint> has no 'name' attribute")
    where = f"joint '{name}'"
    joint_type = joint.get("type")
    if not joint_type:
        raise ModelError(f"{where}: missing attribute 'type'")
    if joint_type in _UNSUPPORTED:
        raise ModelError(f"{where}: {joint_type} joints are not supported; model them as "
                         "chains of revolute and prismatic joints (for a free root link, "
                         "drop the joint and load with floating_base=...)")
    parent, child = (_required_link(joint, role, where) for role in ("parent", "child"))
    xyz, rpy = _origin(joint, where)
    axis = _numbers(joint.find("axis"), "xyz", 3, where, default=(1.0, 0.0, 0.0))
    limit = joint.find("limit")
    lower = _number(limit, "lower", where, default=-np.inf, finite=False)
    upper = _number(limit, "upper", where, default=np.inf, finite=False)
    tree.add_joint(name, parent, child, joint_type, axis=axis, xyz=xyz, rpy=rpy,
                   lower=lower, upper=upper)


def _couple_or_lock_mimics(tree, joints, mode, lock):
    """Couple (mode "couple") the mimic joints of ``tree`` whose leader moves; return
    ``lock`` extended by the others (all of them in mode "lock") at m q_leader + o, q_leader
    the leader's lock position, 0 for a fixed leader or one that is not locked."""
    held = {joint.get("name"): 0.0 for joint in joints if joint.get("type") == "fixed"}
    held.update(lock)  # the joints that do not move, at their positions
    lock = dict(lock)
    for name, (leader, multiplier, offset) in _mimics(joints).items():
        if name in held:
            continue
        if mode == "couple" and leader not in held:
            tree.couple_joint(name, leader, multiplier, offset)
        else:
            lock[name] = multiplier * held.get(leader, 0.0) + offset
    return lock


def _mimics(joints):
    """{joint name: (leader, multiplier, offset)} of the <joint>s with a <mimic> tag;
    ModelError when the leader is missing or is not a joint of the file."""
    names = {joint.get("name") for joint in joints}
    mimics = {}
    for joint in joints:
        tag = joint.find("mimic")
        if tag is None:
            continue
        where = f"joint '{joint.get('name')}': <mimic>"
        leader = tag.get("joint")
        if not leader:
            raise ModelError(f"{where} has no 'joint' attribute")
        if leader not in names:
            raise ModelError(f"{where} follows joint '{leader}', which is not in the URDF")
        mimics[joint.get("name")] = (leader, _number(tag, "multiplier", where, default=1.0),
                                     _number(tag, "offset", where, default=0.0))
    return mimics


def _required_link(joint, role, where):
    """The link name in <parent link=...> or <child link=...>, else ModelError."""
    element = joint.find(role)
    link = None if element is None else element.get("link")
    if not link:
        raise ModelError(f"{where}: missing <{role} link=...>")
    return link


def _origin(element, where):
    """(xyz, rpy) of the <origin> child of ``element``, zeros when absent."""
    origin = element.find("origin")
    return (_numbers(origin, "xyz", 3, where, default=(0.0, 0.0, 0.0)),
            _numbers(origin, "rpy", 3, where, default=(0.0, 0.0, 0.0)))


def _number(element, attribute, where, default, finite=True):
    """One float from an attribute of ``element`` (which may be None); ``default`` if absent."""
    return float(_numbers(element, attribute, 1, where, default, finite)[0])


def _numbers(element, attribute, count, where, default, finite=True):
    """``count`` floats from a whitespace-separated attribute; ``default`` if it is absent.
    ``finite``: refuse inf and NaN (only limits may be infinite)."""
    text = None if element is None else element.get(attribute)
    if text is None:
        return np.broadcast_to(np.asarray(default, dtype=float), (count,))
    try:
        values = [float(word) for word in text.split()]
    except ValueError:
        values = []
    if len(values) != count:
        raise ModelError(f"{where}: <{element.tag} {attribute}=\"{text}\"> "
                         f"expected {count} number(s)")
    if finite and not np.all(np.isfinite(values)):
        raise ModelError(f"{where}: <{element.tag} {attribute}=\"{text}\"> "
                         f"expected {count} finite number(s)")
    return np.array(values)
