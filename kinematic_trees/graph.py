"""Kinematic tree schema: a networkx.DiGraph of links (nodes) and joints (edges), validated.

Node attributes (one node per link, keyed by the link name, a str):

    mass     float          kg, >= 0
    com      (3,) float64   centre of mass in the link frame, m
    inertia  (3,3) float64  rotational inertia about the COM, link-frame axes, kg m^2;
                            symmetric, positive semi-definite, principal moments obey the
                            triangle inequality

Edge attributes (one edge parent -> child per joint; the child link frame is the joint frame):

    name          str            unique among joints
    type          str            "revolute", "continuous", "prismatic" or "fixed"
    axis          (3,) float64   unit joint axis in the joint frame
    R, p          (3,3), (3,)    parent_X_joint: pose of the joint frame (at q = 0) in the
                                 parent link frame, R a rotation, p in m
    lower, upper  float          position limits (rad or m), -inf / +inf when absent

Every ``add_*`` call checks what it adds; ``validate()`` checks the whole graph again (for
graphs built or edited by hand) and brings every attribute to the canonical form above.
All failures raise ``ModelError`` naming the link or joint at fault.
"""
from collections import Counter

import networkx as nx
import numpy as np

from .inertia import axis_rotation, rpy_matrix

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")
LINK_FIELDS = ("mass", "com", "inertia")
JOINT_FIELDS = ("name", "type", "axis", "R", "p", "lower", "upper")

ROTATION_TOL = 1e-9
"""Max |R^T R - E| entry accepted for a rotation matrix."""

INERTIA_RTOL = 1e-9
"""Inertia checks tolerate this much, relative to the trace: thin rods sit exactly on the
triangle-inequality boundary and rounding must not reject them."""


class ModelError(ValueError):
    """An invalid kinematic tree; the message names the link or joint and what is wrong."""


# --- attribute checks (shared by add_* and validate) ---

def _array(value, shape, what):
    """float64 array of the given shape with finite entries, else ModelError naming ``what``."""
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ModelError(f"{what}: expected numbers of shape {shape}, got {value!r}") from None
    if a.shape != shape:
        raise ModelError(f"{what}: expected shape {shape}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ModelError(f"{what}: expected finite numbers, got {a.tolist()}")
    return a


def _check_inertia(inertia, what):
    """Symmetric, PSD, triangle-inequality (3,3) inertia (symmetrized), else ModelError."""
    I = _array(inertia, (3, 3), what)
    tol = INERTIA_RTOL * max(np.trace(I), 0.0)
    asymmetry = np.max(np.abs(I - I.T))
    if asymmetry > tol:
        raise ModelError(f"{what} is not symmetric (max asymmetry {asymmetry:.3g})")
    I = 0.5 * (I + I.T)
    moments = np.linalg.eigvalsh(I)  # ascending principal moments
    if moments[0] < -tol:
        raise ModelError(f"{what} is not positive semi-definite "
                         f"(principal moments {moments.tolist()})")
    if moments[2] > moments[0] + moments[1] + tol:
        raise ModelError(f"{what} violates the triangle inequality: principal moment "
                         f"{moments[2]:.6g} > {moments[0]:.6g} + {moments[1]:.6g}")
    return I


def _check_rotation(R, what):
    """Orthonormal (3,3) matrix with det +1, else ModelError."""
    R = _array(R, (3, 3), what)
    error = np.max(np.abs(R.T @ R - np.eye(3)))
    if error > ROTATION_TOL:
        raise ModelError(f"{what} is not orthonormal (max |R^T R - E| = {error:.3g})")
    if np.linalg.det(R) < 0.0:
        raise ModelError(f"{what} is a reflection (det = -1), not a rotation")
    return R


def _checked_link(name, mass=0.0, com=(0.0, 0.0, 0.0), inertia=None):
    """Canonical link attributes (see the module table), else ModelError."""
    if not isinstance(name, str) or not name:
        raise ModelError(f"link {name!r}: link names must be non-empty strings")
    where = f"link '{name}'"
    mass = float(_array(mass, (), f"{where}: mass"))
    if mass < 0.0:
        raise ModelError(f"{where}: mass is negative ({mass})")
    inertia = np.zeros((3, 3)) if inertia is None else inertia
    return {"mass": mass,
            "com": _array(com, (3,), f"{where}: com"),
            "inertia": _check_inertia(inertia, f"{where}: inertia")}


def _checked_joint(name, type, axis=(0.0, 0.0, 1.0), R=None, p=(0.0, 0.0, 0.0),
                   lower=-np.inf, upper=np.inf):
    """Canonical joint attributes (see the module table), else ModelError."""
    if not isinstance(name, str) or not name:
        raise ModelError(f"joint {name!r}: joint names must be non-empty strings")
    where = f"joint '{name}'"
    if type not in JOINT_TYPES:
        raise ModelError(f"{where}: unknown type {type!r}; expected one of {JOINT_TYPES}")
    axis = _array(axis, (3,), f"{where}: axis")
    norm = np.linalg.norm(axis)
    if norm < 1e-12:
        raise ModelError(f"{where}: axis is zero ({axis.tolist()})")
    if abs(norm - 1.0) > 1e-12:  # unit axes stay bit-for-bit: validate() is idempotent
        axis = axis / norm
    lower, upper = (_limit(x, f"{where}: {side} limit")
                    for x, side in ((lower, "lower"), (upper, "upper")))
    if type in ("continuous", "fixed"):
        lower, upper = -np.inf, np.inf
    if lower > upper:
        raise ModelError(f"{where}: lower limit {lower} > upper limit {upper}")
    R = np.eye(3) if R is None else R
    return {"name": name, "type": type, "axis": axis,
            "R": _check_rotation(R, f"{where}: placement rotation R"),
            "p": _array(p, (3,), f"{where}: placement p"),
            "lower": lower, "upper": upper}


def _limit(value, what):
    """A position limit: any float but NaN (+-inf means no limit)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ModelError(f"{what}: expected a number, got {value!r}") from None
    if np.isnan(x):
        raise ModelError(f"{what} is NaN")
    return x


# --- the tree ---

class KinematicTree:
    """A robot or human as a tree of links joined by joints, stored in ``self.graph``.

    ``graph`` is a ``networkx.DiGraph`` with the node and edge attributes of the module
    table. Build it with ``add_link`` / ``add_joint``, a builder, ``load_urdf`` or
    ``KinematicTree.from_graph``.

    >>> tree = KinematicTree()
    >>> tree.add_link("base")
    >>> tree.add_link("arm", mass=1.0, com=(0.5, 0.0, 0.0))
    >>> tree.add_joint("shoulder", "base", "arm", "revolute", axis=(0, 0, 2))
    >>> tree.root, tree.graph.edges["base", "arm"]["axis"]
    ('base', array([0., 0., 1.]))
    """

    def __init__(self):
        self.graph = nx.DiGraph()

    def __repr__(self):
        return (f"KinematicTree({self.graph.number_of_nodes()} links, "
                f"{self.graph.number_of_edges()} joints)")

    @classmethod
    def from_graph(cls, graph):
        """Validated copy of a ``networkx.DiGraph`` that follows the module table.

        Missing link attributes default to a massless link; joints need at least
        ``name`` and ``type``.
        """
        tree = cls()
        tree.graph = nx.DiGraph(graph)
        tree.validate()
        return tree

    def add_link(self, name, mass=0.0, com=(0.0, 0.0, 0.0), inertia=None):
        """Add a link: mass (kg), com (3,) in the link frame, inertia (3,3) about the COM."""
        if name in self.graph:
            raise ModelError(f"link '{name}' already exists")
        self.graph.add_node(name, **_checked_link(name, mass, com, inertia))

    def add_joint(self, name, parent, child, type="revolute", axis=(0.0, 0.0, 1.0),
                  xyz=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0), R=None,
                  lower=-np.inf, upper=np.inf):
        """Add a joint moving the existing link ``child`` relative to the existing ``parent``.

        The joint frame (= child link frame at q = 0) sits at ``xyz`` (m) in the parent link
        frame, rotated by ``R`` or, when R is None, by URDF ``rpy`` (rad). ``axis`` (3,) is
        in the joint frame and is normalized. Limits in rad or m; continuous and fixed
        joints have none (stored as -inf, +inf).
        """
        attributes = _checked_joint(name, type, axis, self._placement_rotation(name, rpy, R),
                                    xyz, lower, upper)
        where = f"joint '{name}'"
        if any(j == name for _, _, j in self.graph.edges(data="name")):
            raise ModelError(f"{where}: a joint with this name already exists")
        for role, link in (("parent", parent), ("child", child)):
            if link not in self.graph:
                raise ModelError(f"{where}: {role} link '{link}' does not exist")
        if parent == child:
            raise ModelError(f"{where}: connects link '{parent}' to itself")
        if self.graph.in_degree(child) > 0:
            (other,) = self.graph.in_edges(child, data="name")
            raise ModelError(f"{where}: link '{child}' already has a parent joint "
                             f"'{other[2]}'; a link has exactly one parent")
        if nx.has_path(self.graph, child, parent):
            raise ModelError(f"{where}: link '{child}' is an ancestor of '{parent}'; "
                             "this joint would close a cycle")
        self.graph.add_edge(parent, child, **attributes)

    @staticmethod
    def _placement_rotation(name, rpy, R):
        """R if given (then rpy must be zero), else rpy_matrix(rpy)."""
        rpy = _array(rpy, (3,), f"joint '{name}': rpy")
        if R is None:
            return rpy_matrix(rpy)
        if np.any(rpy != 0.0):
            raise ModelError(f"joint '{name}': give the placement as rpy or as R, not both")
        return R

    def lock_joint(self, name, position):
        """Turn a movable joint into a fixed one at ``position`` (rad or m).

        The joint motion at that position (rotation about / translation along the axis) is
        composed into the placement, so the child keeps its pose.
        """
        parent, child = self.joint_links(name)
        joint = self.graph.edges[parent, child]
        where = f"joint '{name}'"
        if joint["type"] == "fixed":
            raise ModelError(f"{where} is already fixed")
        q = _limit(position, f"{where}: lock position")
        if not joint["lower"] <= q <= joint["upper"]:
            raise ModelError(f"{where}: lock position {q} is outside the limits "
                             f"[{joint['lower']}, {joint['upper']}]")
        if joint["type"] == "prismatic":
            joint["p"] = joint["p"] + joint["R"] @ (q * joint["axis"])
        else:
            joint["R"] = joint["R"] @ axis_rotation(joint["axis"], q)
        joint.update(type="fixed", lower=-np.inf, upper=np.inf)

    def joint_links(self, name):
        """(parent, child) link names of the joint called ``name``."""
        for parent, child, joint_name in self.graph.edges(data="name"):
            if joint_name == name:
                return parent, child
        raise ModelError(f"joint '{name}' does not exist")

    @property
    def root(self):
        """Name of the root link (the fixed base); ModelError unless there is exactly one."""
        return _single_root(self.graph)

    def validate(self):
        """Check the whole graph and canonicalize its attributes in place; ModelError if invalid.

        Checks: at least one link; every attribute (see the module table); unique joint
        names; no link with two parent joints; no cycle; exactly one root (so connected).
        """
        graph = self.graph
        if graph.number_of_nodes() == 0:
            raise ModelError("the model has no links")
        for name, attributes in graph.nodes(data=True):
            attributes.update(_checked_link(name, **_fields(attributes, LINK_FIELDS)))
        for parent, child, attributes in graph.edges(data=True):
            for required in ("name", "type"):
                if required not in attributes:
                    raise ModelError(f"joint from '{parent}' to '{child}': "
                                     f"missing attribute '{required}'")
            attributes.update(_checked_joint(**_fields(attributes, JOINT_FIELDS)))
        self._validate_structure()

    def _validate_structure(self):
        """Unique joint names, one parent per link, no cycle, exactly one root."""
        graph = self.graph
        counts = Counter(name for _, _, name in graph.edges(data="name"))
        duplicates = sorted(name for name, count in counts.items() if count > 1)
        if duplicates:
            raise ModelError(f"joint names must be unique; used more than once: {duplicates}")
        for link, degree in graph.in_degree():
            if degree > 1:
                joints = sorted(name for _, _, name in graph.in_edges(link, data="name"))
                raise ModelError(f"link '{link}' has {degree} parent joints {joints}; "
                                 "a link has exactly one parent")
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            cycle = None
        if cycle is not None:
            joints = [graph.edges[u, v]["name"] for u, v in cycle]
            raise ModelError(f"joints {joints} form a cycle; a kinematic tree has none")
        _single_root(graph)


def _single_root(graph):
    """Name of the one link without a parent joint, else ModelError listing them all."""
    roots = sorted(str(v) for v, degree in graph.in_degree() if degree == 0)
    if len(roots) != 1:
        raise ModelError(f"a tree has exactly one root link, found {len(roots)}: "
                         f"{roots} have no parent joint (is the model disconnected?)")
    return roots[0]


def _fields(attributes, names):
    """The entries of the dict ``attributes`` whose keys are in ``names``."""
    return {key: attributes[key] for key in names if key in attributes}
