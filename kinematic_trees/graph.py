"""Kinematic tree schema: a networkx.DiGraph of links (nodes) and joints (edges), validated.

Node attributes (one node per link, keyed by the link name, a str):

    mass     float          kg, >= 0
    com      (3,) float64   centre of mass in the link frame, m
    inertia  (3,3) float64  rotational inertia about the COM, link-frame axes, kg m^2;
                            symmetric; physically consistent (principal moments >= 0 and
                            obeying the triangle inequality) up to the tolerance below

Edge attributes (one edge parent -> child per joint; the child link frame is the joint frame):

    name          str            unique among joints
    type          str            "revolute", "continuous", "prismatic" or "fixed"
    axis          (3,) float64   unit joint axis in the joint frame (fixed joints: ignored,
                                 kept as given, may be zero)
    R, p          (3,3), (3,)    parent_X_joint: pose of the joint frame (at q = 0) in the
                                 parent link frame, R a rotation, p in m
    lower, upper  float          position limits (rad or m), -inf / +inf when absent
    mimic         None or (str, float, float)
                                 (leader, multiplier, offset): this joint follows
                                 q = multiplier * q_leader + offset (see ``couple_joint``)

Every ``add_*`` call checks what it adds; ``validate()`` checks the whole graph again (for
graphs built or edited by hand) and brings every attribute to the canonical form above.
All failures raise ``ModelError`` naming the link or joint at fault.

Inertia tolerance. Real robot files carry inertias that are not physically consistent:
rounding (moments of -2e-35), point masses and thin rods written loosely, or plain errors.
Let lambda_3 be the link's largest principal moment and ``correction`` the largest change of
a principal moment that makes the inertia consistent (``inertia.consistent_inertia``):

    correction <= INERTIA_RTOL lambda_3 + INERTIA_ATOL            rounding: kept, silently
    correction <= INERTIA_TOLERANCE lambda_3 + INERTIA_TOLERANCE_ATOL
                                                   kept as given (or, with
                                                   ``project_inertia=True``, replaced by the
                                                   consistent inertia) and reported once per
                                                   link by an ``InertiaWarning``; a
                                                   ModelError with ``strict=True``
    larger (e.g. a moment below about -lambda_3 / 2)  ModelError

Every positive semi-definite inertia is within the tolerance (a line of mass, moments
(0, 0, lambda), needs the largest correction, lambda / 2); negative mass is always an error.
"""
import warnings
from collections import Counter
from contextlib import contextmanager

import networkx as nx
import numpy as np

from .inertia import axis_rotation, consistent_inertia, rpy_matrix

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")
LINK_FIELDS = ("mass", "com", "inertia")
JOINT_FIELDS = ("name", "type", "axis", "R", "p", "lower", "upper", "mimic")

ROTATION_TOL = 1e-9
"""Max |R^T R - E| entry accepted for a rotation matrix."""

INERTIA_RTOL = 1e-9
"""Inertia corrections up to this fraction of the largest principal moment (plus
INERTIA_ATOL) are rounding: thin rods sit exactly on the triangle-inequality boundary."""
INERTIA_ATOL = 1e-15
"""kg m^2: the absolute rounding floor of the inertia checks (moments of a point mass
written as +-1e-20 are zero)."""
INERTIA_TOLERANCE = 0.5
"""Inconsistent inertias are accepted (with an InertiaWarning) while the correction is at
most this fraction of the largest principal moment, plus INERTIA_TOLERANCE_ATOL."""
INERTIA_TOLERANCE_ATOL = 1e-9
"""kg m^2 (1 g at a 1 mm radius of gyration): the absolute floor of the tolerance, for the
dummy links of real files (1e-6 kg, moments of 1e-8 kg m^2)."""

Z_UP_GRAVITY = (0.0, 0.0, -9.81)
"""Gravity of a z-up model (robots, URDF's convention), m/s^2 in the base frame: what a
tree carries unless told otherwise."""
Y_UP_GRAVITY = (0.0, -9.81, 0.0)
"""Gravity of a y-up model (OpenSim's axes: example-robot-data's human), m/s^2."""


class ModelError(ValueError):
    """An invalid kinematic tree; the message names the link or joint and what is wrong."""


class InertiaWarning(UserWarning):
    """A link inertia that is physically inconsistent beyond rounding but within the
    tolerance (module docstring): accepted, reported once per link with the size of the
    correction. Filter it with ``warnings.filterwarnings("ignore", category=InertiaWarning)``;
    ``strict=True`` makes it a ModelError."""


@contextmanager
def no_overflow(what):
    """ModelError naming ``what`` instead of an overflow (inf, NaN) in the model's arithmetic,
    e.g. lumping masses placed 1e308 m away."""
    with np.errstate(over="raise", invalid="raise"):
        try:
            yield
        except FloatingPointError as error:
            raise ModelError(f"{what}: expected lengths, masses and inertias whose products "
                             f"fit in float64, got an overflow ({error})") from None


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


def _symmetric_inertia(inertia, what):
    """Symmetric (3,3) inertia (symmetrized to rounding), else ModelError; consistency is
    judged by KinematicTree._accepted_inertia."""
    I = _array(inertia, (3, 3), what)
    with no_overflow(what):
        asymmetry = np.max(np.abs(I - I.T))
        symmetric = 0.5 * (I + I.T)
    if asymmetry > INERTIA_RTOL * np.max(np.abs(I)) + INERTIA_ATOL:
        raise ModelError(f"{what} is not symmetric (max asymmetry {asymmetry:.3g})")
    return symmetric


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
            "inertia": _symmetric_inertia(inertia, f"{where}: inertia")}


def _checked_joint(name, type, axis=(0.0, 0.0, 1.0), R=None, p=(0.0, 0.0, 0.0),
                   lower=-np.inf, upper=np.inf, mimic=None):
    """Canonical joint attributes (see the module table), else ModelError."""
    if not isinstance(name, str) or not name:
        raise ModelError(f"joint {name!r}: joint names must be non-empty strings")
    where = f"joint '{name}'"
    if type not in JOINT_TYPES:
        raise ModelError(f"{where}: unknown type {type!r}; expected one of {JOINT_TYPES}")
    axis = _array(axis, (3,), f"{where}: axis")
    if type != "fixed":
        axis = _unit_axis(axis, where)
    mimic = _checked_mimic(mimic, where)
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
            "lower": lower, "upper": upper, "mimic": mimic}


def _unit_axis(axis, where):
    """``axis`` normalized (unit axes stay bit-for-bit, so validate() is idempotent); the
    norm is taken of the axis divided by its largest entry, so that an axis of huge
    entries (1e308) does not overflow."""
    largest = np.max(np.abs(axis))
    norm = largest * np.linalg.norm(axis / largest) if largest > 0.0 else 0.0
    if norm < 1e-12:
        raise ModelError(f"{where}: axis is zero ({axis.tolist()})")
    return axis / norm if abs(norm - 1.0) > 1e-12 else axis


def _checked_mimic(mimic, where):
    """None, or (leader name, finite multiplier, finite offset), else ModelError."""
    if mimic is None:
        return None
    try:
        leader, multiplier, offset = mimic
    except (TypeError, ValueError):
        raise ModelError(f"{where}: mimic: expected (leader joint name, multiplier, offset), "
                         f"got {mimic!r}") from None
    if not isinstance(leader, str) or not leader:
        raise ModelError(f"{where}: mimic: the leader must be a joint name, got {leader!r}")
    return (leader, float(_array(multiplier, (), f"{where}: mimic multiplier")),
            float(_array(offset, (), f"{where}: mimic offset")))


def checked_gravity(gravity):
    """``gravity`` as a read-only (3,) float64 array of finite numbers, else ModelError."""
    try:
        g = np.array(gravity, dtype=float)
    except (TypeError, ValueError):
        g = None
    if g is None or g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ModelError(f"gravity: expected 3 finite numbers, got {gravity!r}")
    g.setflags(write=False)
    return g


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

    strict : refuse (ModelError) every inertia that is inconsistent beyond rounding,
        instead of accepting it with an InertiaWarning (module docstring).
    project_inertia : store such inertias projected onto the nearest consistent one
        (``inertia.consistent_inertia``) instead of as given.
    gravity : (3,) the model's gravity acceleration in its base frame, m/s^2, along its
        "down" (None: Z_UP_GRAVITY, (0, 0, -9.81)); ``compile_tree`` uses it unless told
        otherwise. Readable and settable as ``tree.gravity`` (a read-only array).

    >>> tree = KinematicTree()
    >>> tree.add_link("base")
    >>> tree.add_link("arm", mass=1.0, com=(0.5, 0.0, 0.0))
    >>> tree.add_joint("shoulder", "base", "arm", "revolute", axis=(0, 0, 2))
    >>> tree.root, tree.graph.edges["base", "arm"]["axis"], tree.gravity
    ('base', array([0., 0., 1.]), array([ 0.  ,  0.  , -9.81]))
    """

    def __init__(self, *, strict=False, project_inertia=False, gravity=None):
        self.graph = nx.DiGraph()
        self.strict = bool(strict)
        self.project_inertia = bool(project_inertia)
        self.gravity = gravity
        self._reported_inertias = {}  # link -> inertia already reported by an InertiaWarning

    @property
    def gravity(self):
        """The model's gravity acceleration in its base frame, (3,) float64, m/s^2."""
        return self._gravity

    @gravity.setter
    def gravity(self, value):
        self._gravity = checked_gravity(Z_UP_GRAVITY if value is None else value)

    def __repr__(self):
        return (f"KinematicTree({self.graph.number_of_nodes()} links, "
                f"{self.graph.number_of_edges()} joints)")

    @classmethod
    def from_graph(cls, graph, *, strict=False, project_inertia=False, gravity=None):
        """Validated copy of a ``networkx.DiGraph`` that follows the module table.

        Missing link attributes default to a massless link; joints need at least
        ``name`` and ``type``. strict, project_inertia, gravity: as for the constructor.
        ModelError for an undirected graph and for a multigraph with two joints into one
        link (a tree has one joint per link).
        """
        if not isinstance(graph, nx.Graph) or not graph.is_directed():
            kind = ("an undirected " if isinstance(graph, nx.Graph) else "") \
                + type(graph).__name__
            raise ModelError(f"graph: expected a networkx.DiGraph (one edge parent -> child "
                             f"per joint), got {kind}")
        if graph.is_multigraph():
            _check_single_parents(graph)  # before DiGraph() merges parallel joints
        tree = cls(strict=strict, project_inertia=project_inertia, gravity=gravity)
        tree.graph = nx.DiGraph(graph)
        tree.validate()
        return tree

    def copy(self):
        """An independent copy (graph, attribute dicts, options, gravity and the inertias
        reported)."""
        tree = type(self)(strict=self.strict, project_inertia=self.project_inertia,
                          gravity=self.gravity)
        tree.graph = self.graph.copy()
        tree._reported_inertias = dict(self._reported_inertias)
        return tree

    def add_link(self, name, mass=0.0, com=(0.0, 0.0, 0.0), inertia=None):
        """Add a link: mass (kg), com (3,) in the link frame, inertia (3,3) about the COM."""
        attributes = _checked_link(name, mass, com, inertia)
        if name in self.graph:
            raise ModelError(f"link '{name}' already exists")
        attributes["inertia"] = self._accepted_inertia(name, attributes["inertia"])
        self.graph.add_node(name, **attributes)

    def _accepted_inertia(self, link, inertia):
        """The inertia to store for ``link``: as given, or projected onto the nearest
        consistent one; InertiaWarning once per link, ModelError beyond the tolerance or
        with ``strict`` (module docstring)."""
        with no_overflow(f"link '{link}': inertia"):
            consistent, correction = consistent_inertia(inertia)
            moments = np.linalg.eigvalsh(inertia)
        largest = max(float(moments[-1]), 0.0)
        if correction <= INERTIA_RTOL * largest + INERTIA_ATOL:
            return inertia
        problem = (f"link '{link}': inertia is not physically consistent (principal moments "
                   f"{_numbers_text(moments)} kg m^2); the nearest consistent inertia changes "
                   f"a moment by {correction:.3g} kg m^2")
        if correction > INERTIA_TOLERANCE * largest + INERTIA_TOLERANCE_ATOL:
            raise ModelError(f"{problem}, more than the tolerance {INERTIA_TOLERANCE} x the "
                             f"largest moment + {INERTIA_TOLERANCE_ATOL} kg m^2")
        if largest > 0.0:
            problem += f" ({correction / largest:.1%} of the largest)"
        if self.strict:
            raise ModelError(f"{problem}; refused because strict=True")
        reported = self._reported_inertias.get(link)
        if reported is None or not np.array_equal(reported, inertia):
            action = ("projected onto it" if self.project_inertia else
                      "kept as given (project_inertia=True projects it, strict=True refuses it)")
            warnings.warn(f"{problem}; {action}", InertiaWarning, stacklevel=3)
            self._reported_inertias[link] = inertia
        return consistent if self.project_inertia else inertia

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
        if self._find_joint(name, scan=False) is not None:
            raise ModelError(f"{where}: a joint with this name already exists")
        for role, link in (("parent", parent), ("child", child)):
            if not isinstance(link, str) or link not in self.graph:
                raise ModelError(f"{where}: {role} link '{link}' does not exist")
        if parent == child:
            raise ModelError(f"{where}: connects link '{parent}' to itself")
        if self.graph.in_degree(child) > 0:
            (other,) = self.graph.in_edges(child, data="name")
            raise ModelError(f"{where}: link '{child}' already has a parent joint "
                             f"'{other[2]}'; a link has exactly one parent")
        if self.graph.out_degree(child) and nx.has_path(self.graph, child, parent):
            raise ModelError(f"{where}: link '{child}' is an ancestor of '{parent}'; "
                             "this joint would close a cycle")
        self.graph.add_edge(parent, child, **attributes)
        self._joint_index()[name] = (parent, child)

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
        q = float(_array(position, (), f"{where}: lock position"))
        if not joint["lower"] <= q <= joint["upper"]:
            raise ModelError(f"{where}: lock position {q} is outside the limits "
                             f"[{joint['lower']}, {joint['upper']}]")
        with no_overflow(f"{where}: lock position {q}"):
            if joint["type"] == "prismatic":
                joint["p"] = joint["p"] + joint["R"] @ (q * joint["axis"])
            else:
                joint["R"] = joint["R"] @ axis_rotation(joint["axis"], q)
        joint.update(type="fixed", lower=-np.inf, upper=np.inf, mimic=None)

    def couple_joint(self, name, leader, multiplier=1.0, offset=0.0):
        """Make joint ``name`` follow joint ``leader``: q = multiplier * q_leader + offset
        (URDF <mimic>; rad or m, as the two joints are).

        Both stay joints of the compiled model, with their own rows and columns in every
        stack and Jacobian; ``kinematic_trees.coupling(model)`` gives the map from the
        independent joints to all of them (q = C q_ind + c) and sums the Jacobian columns
        by the chain rule. The leader must be movable and not itself coupled.
        """
        parent, child = self.joint_links(name)
        joint = self.graph.edges[parent, child]
        mimic = _checked_mimic((leader, multiplier, offset), f"joint '{name}'")
        _check_mimic(self._joints(), name, mimic)
        joint["mimic"] = mimic

    def _joints(self):
        """{joint name: edge attribute dict} of every joint."""
        return {joint["name"]: joint for _, _, joint in self.graph.edges(data=True)}

    def joint_links(self, name):
        """(parent, child) link names of the joint called ``name``."""
        links = self._find_joint(name)
        if links is None:
            raise ModelError(f"joint '{name}' does not exist")
        return links

    def _joint_index(self):
        """{joint name: (parent, child)}: built in one pass over the joints for each graph
        object and kept up to date by add_joint, so that building a tree of n joints takes
        O(n), not O(n^2). Joints added or renamed by hand in the graph are found by
        :meth:`_find_joint`'s scan."""
        if getattr(self, "_indexed_graph", None) is not self.graph:
            self._index = {}
            for parent, child, name in self.graph.edges(data="name"):
                self._index.setdefault(name, (parent, child))
            self._indexed_graph = self.graph
        return self._index

    def _find_joint(self, name, scan=True):
        """(parent, child) of the joint ``name`` or None: the index's entry where the graph
        confirms it, else (``scan``) a pass over every joint, which rebuilds the index.
        add_joint does not scan for a name it cannot find (the index is complete unless
        joints were added or renamed by hand in the graph, and validate() refuses a name
        given twice)."""
        links = self._joint_index().get(name)
        if links is not None and self.graph.has_edge(*links) \
                and self.graph.edges[links].get("name") == name:
            return links
        if links is None and not scan:
            return None
        self._indexed_graph = None
        return self._joint_index().get(name)

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
            attributes["inertia"] = self._accepted_inertia(name, attributes["inertia"])
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
        _check_single_parents(graph)
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            cycle = None
        if cycle is not None:
            joints = [graph.edges[u, v]["name"] for u, v in cycle]
            raise ModelError(f"joints {joints} form a cycle; a kinematic tree has none")
        _single_root(graph)
        joints = self._joints()
        for name, joint in joints.items():
            if joint["mimic"] is not None:
                _check_mimic(joints, name, joint["mimic"])


def _check_mimic(joints, name, mimic):
    """ModelError unless the movable joint ``name`` may follow mimic[0]: the leader exists,
    is another movable joint and is not coupled itself. joints: {name: attribute dict}."""
    leader = mimic[0]
    where = f"joint '{name}' mimics joint '{leader}'"
    if joints[name]["type"] == "fixed":
        raise ModelError(f"joint '{name}': a fixed joint cannot mimic joint '{leader}'")
    if leader == name:
        raise ModelError(f"joint '{name}' mimics itself")
    if leader not in joints:
        raise ModelError(f"{where}, which does not exist")
    if joints[leader]["type"] == "fixed":
        raise ModelError(f"{where}, which is fixed; lock '{name}' as well")
    if joints[leader]["mimic"] is not None:
        raise ModelError(f"{where}, which itself mimics '{joints[leader]['mimic'][0]}'; "
                         "couple it to that joint directly")


def _check_single_parents(graph):
    """ModelError naming the first link with more than one parent joint."""
    for link, degree in graph.in_degree():
        if degree > 1:
            joints = sorted(str(name) for _, _, name in graph.in_edges(link, data="name"))
            raise ModelError(f"link '{link}' has {degree} parent joints {joints}; "
                             "a link has exactly one parent")


def _single_root(graph):
    """Name of the one link without a parent joint, else ModelError listing them all."""
    roots = sorted(str(v) for v, degree in graph.in_degree() if degree == 0)
    if len(roots) != 1:
        raise ModelError(f"a tree has exactly one root link, found {len(roots)}: "
                         f"{roots} have no parent joint (is the model disconnected?)")
    return roots[0]


def _numbers_text(values):
    """'[a, b, c]' with 4 significant digits."""
    return "[" + ", ".join(f"{x:.4g}" for x in values) + "]"


def _fields(attributes, names):
    """The entries of the dict ``attributes`` whose keys are in ``names``."""
    return {key: attributes[key] for key in names if key in attributes}
