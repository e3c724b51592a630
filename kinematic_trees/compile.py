"""Compile a KinematicTree into immutable flat arrays (``CompiledTree``) for the engine.

Compilation merges every fixed joint into its parent link (lumping the inertias with the
parallel-axis theorem and composing the placements of what hangs below), then numbers the
remaining moving links in depth-first pre-order from the base, visiting children sorted by
link name. Hence ``parent[i] < i`` and the subtree of link i is ``range(i, subtree_end[i])``,
and the result does not depend on the order in which links and joints were added.

A model whose joints are all fixed compiles to nv = 0: its mass properties are the base_*
fields (the engine, which needs nv >= 1, refuses it).
"""
from typing import NamedTuple

import networkx as nx
import numpy as np

from .floating_base import add_floating_base
from .graph import KinematicTree, ModelError, checked_gravity, no_overflow
from .inertia import lump, rotate_inertia, spatial_inertia
from .joint_types import JOINT_PRISMATIC, JOINT_REVOLUTE


class CompiledTree(NamedTuple):
    """Immutable model: read-only C-contiguous arrays, one row per moving link / joint.

    n = nv = number of movable joints = number of moving links (the fixed base is not a
    row; n = 0 when every joint is fixed). Link i is the child of joint i; its frame is
    joint i's frame.

    ===============  ==============  =====================================================
    field            shape, dtype    meaning
    ===============  ==============  =====================================================
    parent           (n,) int64      parent link index, -1 for the base; parent[i] < i
    subtree_end      (n,) int64      subtree of link i (i and descendants) is
                                     range(i, subtree_end[i])
    joint_type       (n,) int64      JOINT_REVOLUTE (revolute, continuous) or
                                     JOINT_PRISMATIC
    axis             (n,3) float64   unit joint axis in the joint (= link) frame
    placement_R      (n,3,3) float64 parent_X_joint at q = 0: rotation and position
    placement_p      (n,3) float64   (m) of joint i's frame in the parent link frame
    mass             (n,) float64    kg, fixed-joint children lumped in
    com              (n,3) float64   centre of mass in the link frame, m
    inertia_com      (n,3,3) float64 rotational inertia about the COM, link axes, kg m^2
    spatial_inertia  (n,6,6) float64 about the link origin, angular-first (cmtm_math §5)
    gravity          (3,) float64    gravity acceleration in the base frame, m/s^2
    q_lower          (n,) float64    position limits (rad or m), -inf when none
    q_upper          (n,) float64    position limits (rad or m), +inf when none
    mimic_leader     (n,) int64      index of the joint that joint i follows
                                     (``KinematicTree.couple_joint``), -1 if independent
    mimic_multiplier (n,) float64    q_i = mimic_multiplier[i] q_leader + mimic_offset[i]
    mimic_offset     (n,) float64    (rad or m); both 0 for independent joints
    base_mass        () float64      kg, the base and every link fixed to it (lumped)
    base_com         (3,) float64    their centre of mass in the base frame, m
    base_inertia_com (3,3) float64   their rotational inertia about it, base axes, kg m^2
    joint_names      tuple of str    n joint names
    link_names       tuple of str    n link names (the child link of each joint)
    base_name        str             name of the root link (the fixed base)
    frames           tuple           (name, link_index, R (3,3), p (3,)) for every link
                                     merged away by a fixed joint: its pose in link
                                     ``link_index``'s frame (-1 = the base)
    ===============  ==============  =====================================================
    """

    parent: np.ndarray
    subtree_end: np.ndarray
    joint_type: np.ndarray
    axis: np.ndarray
    placement_R: np.ndarray
    placement_p: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    inertia_com: np.ndarray
    spatial_inertia: np.ndarray
    gravity: np.ndarray
    q_lower: np.ndarray
    q_upper: np.ndarray
    mimic_leader: np.ndarray
    mimic_multiplier: np.ndarray
    mimic_offset: np.ndarray
    base_mass: np.ndarray
    base_com: np.ndarray
    base_inertia_com: np.ndarray
    joint_names: tuple
    link_names: tuple
    base_name: str
    frames: tuple

    @property
    def nv(self):
        """Number of degrees of freedom (= number of moving links)."""
        return len(self.parent)


def compile_tree(tree, gravity=None, floating_base=None):
    """Validate ``tree`` and compile it into a ``CompiledTree``.

    gravity : None (the tree's own, ``tree.gravity``: (0, 0, -9.81) for a z-up robot,
        (0, -9.81, 0) for the y-up human) or (3,) gravity acceleration in the base frame,
        m/s^2, which overrides it; the model states it as ``model.gravity``.
    floating_base : None (fixed base) or one of ``FLOATING_BASES``: compile a copy of the
        tree with six virtual joints carrying its root (``add_floating_base``); ``tree``
        itself is not changed.

    >>> from kinematic_trees import serial_chain
    >>> model = compile_tree(serial_chain(3))
    >>> model.nv, model.parent.tolist(), model.subtree_end.tolist()
    (3, [-1, 0, 1], [3, 3, 3])
    >>> compile_tree(serial_chain(3), floating_base="xyz_zyx").nv
    9
    >>> compile_tree(serial_chain(3), gravity=(0, -9.81, 0)).gravity.tolist()
    [0.0, -9.81, 0.0]
    """
    if not isinstance(tree, KinematicTree):
        raise ModelError(f"tree: expected a KinematicTree (a builder, load_urdf or "
                         f"KinematicTree()), got {type(tree).__name__}")
    if floating_base is not None:
        tree = add_floating_base(tree.copy(), floating_base)
    tree.validate()
    gravity = checked_gravity(tree.gravity if gravity is None else gravity)
    with no_overflow("compile_tree"):
        return _compile(tree, gravity)


def _compile(tree, gravity):
    """The CompiledTree of a validated tree (see compile_tree)."""
    graph, base = tree.graph, tree.root
    body_of, pose_in_body = _merge_fixed_joints(graph, base)
    joints = {child: joint for _, child, joint in graph.edges(data=True)
              if joint["type"] != "fixed"}
    links = _preorder(base, joints, graph, body_of)
    index = {link: i for i, link in enumerate(links)}
    index[base] = -1
    parent = [index[body_of[_parent_link(graph, link)]] for link in links]
    placements = [_joint_placement(graph, link, pose_in_body) for link in links]
    (base_mass, base_com, base_inertia), *inertials = _lumped_inertials(
        [base, *links], graph, body_of, pose_in_body)
    leader, multiplier, offset = _mimic_rows([joints[link] for link in links])
    return CompiledTree(
        parent=_rows(parent, np.int64),
        subtree_end=_rows(_subtree_end(parent), np.int64),
        joint_type=_rows([_joint_type_code(joints[link]["type"]) for link in links],
                         np.int64),
        axis=_rows([joints[link]["axis"] for link in links], np.float64, (3,)),
        placement_R=_rows([R for R, _ in placements], np.float64, (3, 3)),
        placement_p=_rows([p for _, p in placements], np.float64, (3,)),
        mass=_rows([m for m, _, _ in inertials], np.float64),
        com=_rows([c for _, c, _ in inertials], np.float64, (3,)),
        inertia_com=_rows([I for _, _, I in inertials], np.float64, (3, 3)),
        spatial_inertia=_rows([spatial_inertia(*inertial) for inertial in inertials],
                              np.float64, (6, 6)),
        gravity=gravity,
        q_lower=_rows([joints[link]["lower"] for link in links], np.float64),
        q_upper=_rows([joints[link]["upper"] for link in links], np.float64),
        mimic_leader=_rows(leader, np.int64),
        mimic_multiplier=_rows(multiplier, np.float64),
        mimic_offset=_rows(offset, np.float64),
        base_mass=_frozen(base_mass, np.float64),
        base_com=_frozen(base_com, np.float64),
        base_inertia_com=_frozen(base_inertia, np.float64),
        joint_names=tuple(joints[link]["name"] for link in links),
        link_names=tuple(links),
        base_name=base,
        frames=_merged_frames(graph, base, body_of, pose_in_body, index),
    )


def _frozen(values, dtype):
    """Read-only C-contiguous copy of ``values`` with the given dtype."""
    array = np.array(values, dtype=dtype, order="C")
    array.setflags(write=False)
    return array


def _rows(values, dtype, row_shape=()):
    """Read-only (n, *row_shape) array of n per-joint ``values``, also when n = 0."""
    return _frozen(np.reshape(np.array(values, dtype=dtype), (-1, *row_shape)), dtype)


def _mimic_rows(joints):
    """(leader index, multiplier, offset) lists of the compiled joints (-1, 0, 0 when
    independent), from the joints' ``mimic`` attributes."""
    index = {joint["name"]: i for i, joint in enumerate(joints)}
    mimics = [joint["mimic"] or (None, 0.0, 0.0) for joint in joints]
    return ([index.get(leader, -1) for leader, _, _ in mimics],
            [multiplier for _, multiplier, _ in mimics], [offset for _, _, offset in mimics])


def _joint_type_code(joint_type):
    """JOINT_PRISMATIC for "prismatic", JOINT_REVOLUTE for "revolute" and "continuous"."""
    return JOINT_PRISMATIC if joint_type == "prismatic" else JOINT_REVOLUTE


def _parent_link(graph, link):
    """The parent link of a non-root link."""
    (parent,) = graph.predecessors(link)
    return parent


def _compose(R1, p1, R2, p2):
    """Pose product (R1, p1) (R2, p2) = (R1 R2, R1 p2 + p1): A_X_B, B_X_C -> A_X_C."""
    return R1 @ R2, R1 @ p2 + p1


# --- Step 1: merge fixed joints ---

def _merge_fixed_joints(graph, base):
    """Assign each link to the body it moves with.

    Returns ``body_of`` (link -> the link that owns it: itself for the base and for the
    child of a movable joint, else its parent's body) and ``pose_in_body`` (link ->
    (R, p), the link frame in its body's frame).
    """
    body_of = {base: base}
    pose_in_body = {base: (np.eye(3), np.zeros(3))}
    for parent, child in nx.bfs_edges(graph, base):
        joint = graph.edges[parent, child]
        if joint["type"] == "fixed":
            body_of[child] = body_of[parent]
            pose_in_body[child] = _compose(*pose_in_body[parent], joint["R"], joint["p"])
        else:
            body_of[child] = child
            pose_in_body[child] = (np.eye(3), np.zeros(3))
    return body_of, pose_in_body


def _joint_placement(graph, link, pose_in_body):
    """(R, p) of the joint moving ``link`` in its parent body's frame (q = 0)."""
    parent = _parent_link(graph, link)
    joint = graph.edges[parent, link]
    return _compose(*pose_in_body[parent], joint["R"], joint["p"])


def _lumped_inertials(bodies, graph, body_of, pose_in_body):
    """[(m, c (3,), I_c (3,3))] of each body with every link fixed to it, in the body frame.

    Members are summed in name order so that the rounding does not depend on the order in
    which the graph was built.
    """
    members = {body: [] for body in bodies}
    for link in sorted(graph):
        if body_of[link] in members:
            R, p = pose_in_body[link]
            attributes = graph.nodes[link]
            members[body_of[link]].append((attributes["mass"], R @ attributes["com"] + p,
                                           rotate_inertia(R, attributes["inertia"])))
    return [lump(members[body]) for body in bodies]


# --- Step 2: number the moving links ---

def _preorder(base, joints, graph, body_of):
    """Moving links in depth-first pre-order from the base, children sorted by name."""
    children = {}
    for link in joints:
        children.setdefault(body_of[_parent_link(graph, link)], []).append(link)
    order, stack = [], [base]
    while stack:
        body = stack.pop()
        if body != base:
            order.append(body)
        stack.extend(sorted(children.get(body, ()), reverse=True))
    return order


def _subtree_end(parent):
    """subtree_end[i] = one past the last descendant of i, for a pre-order ``parent`` list."""
    end = list(range(1, len(parent) + 1))
    for i in reversed(range(len(parent))):
        if parent[i] >= 0:
            end[parent[i]] = max(end[parent[i]], end[i])
    return end


def _merged_frames(graph, base, body_of, pose_in_body, index):
    """((name, link_index, R, p), ...) for links merged away, ordered by (link_index, name)."""
    merged = sorted((index[body_of[link]], link) for link in graph
                    if link != base and body_of[link] != link)
    return tuple((link, body_index, *(_frozen(x, np.float64) for x in pose_in_body[link]))
                 for body_index, link in merged)
