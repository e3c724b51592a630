"""Floating base: six virtual one-DoF joints between a new fixed root and the model's root.

A free-floating root link (a pelvis, a drone, a legged robot's trunk) is carried, as in
OpenSim, by six coordinates, each a joint of the one kind the engine knows (cmtm_math.md
§3.1, multi-DoF joints as chains of one-DoF joints with massless links):

    q[0], q[1], q[2]   prismatic along the fixed root's x, y, z axes: the position of the
                       root link's origin in the world (base) frame, m
    q[3], q[4], q[5]   revolute about body axes a1, a2, a3 (each about the axis of the
                       frame the previous rotations produced), rad: the root link's
                       orientation is R = R_a1(q[3]) R_a2(q[4]) R_a3(q[5])

so the engine, its structured Jacobians and everything built on them work unchanged. The
option names the rotation order: ``"xyz_" + a1 a2 a3`` for the six Tait-Bryan orders
("xyz_xyz", "xyz_xzy", "xyz_yxz", "xyz_yzx", "xyz_zxy", "xyz_zyx"); ``"xyz_rpy"`` is
"xyz_xyz" (roll about x, then pitch about the new y, then yaw about the newest z). URDF's
``rpy`` attribute composes the other way round, R = Rz(yaw) Ry(pitch) Rx(roll): that is
"xyz_zyx" with q[3:6] = (yaw, pitch, roll).

Singularity. When the middle rotation reaches +-90 deg, the first and last axes line up
and the three angles lose one degree of freedom (gimbal lock): the mass matrix becomes
singular and the optimizer stalls. Choose the order so that the middle rotation stays
well away from +-90 deg during the motion: put the axis about which the body turns freely
(the heading, about the vertical) first or last, and in the middle an axis whose rotation
stays small. For the y-up human of example-robot-data, "xyz_zxy" (OpenSim's pelvis tilt,
list, rotation: the middle is the sideways list); for a z-up robot, "xyz_zyx" (yaw, pitch,
roll: singular only when pitched upright by 90 deg).

Names, for a root link R: the new fixed root is "R_world"; the joints are "R_tx", "R_ty",
"R_tz" and "R_r<a1>", "R_r<a2>", "R_r<a3>" (e.g. "R_rz"); the five massless links between
them carry the names of the joints that move them; the last joint moves R itself.
``floating_base_joints(model)`` finds them in a compiled model by these names.
"""
from .graph import KinematicTree, ModelError

_TAIT_BRYAN = ("xyz", "xzy", "yxz", "yzx", "zxy", "zyx")
FLOATING_BASES = tuple(f"xyz_{order}" for order in _TAIT_BRYAN) + ("xyz_rpy",)
"""Accepted values of the ``floating_base`` options (None keeps the base fixed)."""

_UNIT = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


def rotation_axes(floating_base):
    """The body rotation axes a1 a2 a3 of a ``floating_base`` option, e.g. "zxy"."""
    if floating_base not in FLOATING_BASES:
        raise ValueError(f"floating_base: expected None or one of {', '.join(FLOATING_BASES)}, "
                         f"got {floating_base!r}")
    return "xyz" if floating_base == "xyz_rpy" else floating_base[4:]


def add_floating_base(tree, floating_base):
    """Give ``tree`` (a KinematicTree) a floating base in place and return it.

    floating_base : None (the tree is returned unchanged: fixed base) or one of
        FLOATING_BASES (module docstring: joints, names, order, singularity).

    >>> from kinematic_trees import compile_tree, serial_chain
    >>> model = compile_tree(add_floating_base(serial_chain(2), "xyz_zyx"))
    >>> model.base_name, model.joint_names[:6], model.mass[:6].tolist()
    ('base_world', ('base_tx', 'base_ty', 'base_tz', 'base_rz', 'base_ry', 'base_rx'), \
[0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    """
    if not isinstance(tree, KinematicTree):
        raise ModelError(f"tree: expected a KinematicTree, got {type(tree).__name__}")
    if floating_base is None:
        return tree
    axes = rotation_axes(floating_base)
    root = tree.root
    world = f"{root}_world"
    joints = ([(f"{root}_t{a}", "prismatic", _UNIT[a]) for a in "xyz"]
              + [(f"{root}_r{a}", "continuous", _UNIT[a]) for a in axes])
    names = [name for name, _, _ in joints]
    taken = sorted(({world} | set(names[:-1])) & set(tree.graph)
                   | set(names) & {joint for _, _, joint in tree.graph.edges(data="name")})
    if taken:
        raise ModelError(f"floating_base: the model already uses the names {taken} of the "
                         "virtual links and joints")
    tree.add_link(world)
    parent = world
    for name, joint_type, axis in joints[:-1]:
        tree.add_link(name)
        tree.add_joint(name, parent, name, joint_type, axis=axis)
        parent = name
    name, joint_type, axis = joints[-1]
    tree.add_joint(name, parent, root, joint_type, axis=axis)
    return tree


def floating_base_joints(model):
    """Indices, in a CompiledTree, of the virtual joints of its floating base (the joints
    "R_tx", ..., "R_r<a3>" that ``add_floating_base`` put under the root link R of a model
    whose base is "R_world"), in joint order; () for a fixed base. Those of them locked
    since are not joints of the model any more, and not listed.

    >>> from kinematic_trees import compile_tree, serial_chain
    >>> floating_base_joints(compile_tree(serial_chain(2, floating_base="xyz_zyx")))
    (0, 1, 2, 3, 4, 5)
    """
    from .compile import CompiledTree   # compile imports this module
    if not isinstance(model, CompiledTree):
        raise ModelError(f"model: expected a CompiledTree (compile_tree), got "
                         f"{type(model).__name__}")
    world = "_world"
    root = model.base_name[:-len(world)] if model.base_name.endswith(world) else None
    if root is None or root not in model.link_names:
        return ()
    names = {f"{root}_t{a}" for a in "xyz"} | {f"{root}_r{a}" for a in "xyz"}
    return tuple(j for j, name in enumerate(model.joint_names) if name in names)
