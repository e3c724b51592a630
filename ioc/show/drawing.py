"""What the figures of a motion draw, free of any plotting library (shared by ioc.show.plots'
PNG files and ioc.show.view's motion page): the time curves with their units, joints whose
curves coincide, the stick figure of a model and the view it is drawn from.

Curves (:data:`CURVES`): joint angles q, velocities q', jerks q''', torques tau and torque
rates tau' against time, one line per joint.

A stick figure is one polyline through points in the base frame, broken where a branch of
the tree starts again:

==================  ===================  ===================================================
code                shape                meaning
==================  ===================  ===================================================
point table         (..., 1 + n + t, 3)  the base origin, the n link origins (cmtm.link_poses
                                         column 3: the joints, since each link frame is its
                                         joint's frame), then t leaf tips, m
``Stick.path``      (P,) int             indices into the table in drawing order, BREAK
                                         where the polyline is cut
polyline            (..., P, 3)          the table's points along ``path``, NaN at BREAK
==================  ===================  ===================================================

Links are in depth-first pre-order (parent[i] < i), so link i continues the polyline when its
parent is the previous link and starts a new piece at its parent's origin (or the base's)
otherwise: every segment joins a link origin to its parent's. A leaf link has no child
origin to end at, so it ends at a **tip**: the origin of the farthest frame merged into it
by a fixed joint (the Panda's hand TCP), else the point twice its centre of mass from its
origin (a uniform rod's far end: the serial chain's and the planar arm's link ends).
"""
from typing import NamedTuple

import numpy as np

import cmtm
from kinematic_trees import JOINT_PRISMATIC


class Curve(NamedTuple):
    """One time curve: name (its PNG file's stem), field (``q`` or ``tau`` of a motion),
    order (the raw derivative drawn), quantity (axis text), unit for a revolute and for a
    prismatic joint."""
    name: str
    field: str
    order: int
    quantity: str
    revolute_unit: str
    prismatic_unit: str

    def label(self, model):
        """Axis label with the units of ``model``'s joints, e.g. "joint angle (rad)"."""
        prismatic = set((np.asarray(model.joint_type) == JOINT_PRISMATIC).tolist())
        units = [unit for kind, unit in ((False, self.revolute_unit),
                                         (True, self.prismatic_unit)) if kind in prismatic]
        return f"{self.quantity} ({' or '.join(units)})"


CURVES = (Curve("joint_angles", "q", 0, "joint angle", "rad", "m"),
          Curve("joint_velocities", "q", 1, "joint velocity", "rad/s", "m/s"),
          Curve("joint_jerks", "q", 3, "joint jerk", "rad/s³", "m/s³"),
          Curve("joint_torques", "tau", 0, "joint torque", "N m", "N"),
          Curve("joint_torque_rates", "tau", 1, "joint torque rate", "N m/s", "N/s"))
"""The curves of a motion: q, q', q''', tau, tau' (tau with gravity)."""
OVERLAP = 1e-3
"""Two joints' curves closer than this fraction of the plot's value range everywhere lie on
one line on screen (0.1 % of an axis is below a line's width)."""


def coinciding_joints(values):
    """Groups of the columns of ``values`` (N, nv) whose curves coincide on screen (within
    OVERLAP of the value range everywhere, to the group's first column): a list of index
    lists, in column order."""
    values = np.asarray(values, dtype=float)
    tolerance = OVERLAP * (np.ptp(values) if values.size else 0.0)
    groups = []
    for column in range(values.shape[1]):
        same = (group for group in groups
                if np.max(np.abs(values[:, column] - values[:, group[0]])) <= tolerance)
        group = next(same, None)
        if group is None:
            groups.append([column])
        else:
            group.append(column)
    return groups


def motion_title(model_spec, costs, weights):
    """A figure title naming the model and the weighted costs.

    >>> motion_title("chain3", ["joint_velocity", "joint_torque"], [1.0, 0.01])
    'chain3, costs: joint_velocity 1, joint_torque 0.01'
    """
    return f"{model_spec}, costs: " + ", ".join(f"{name} {weight:.3g}"
                                                for name, weight in zip(costs, weights))


BREAK = -1
"""An index of ``Stick.path`` that cuts the polyline."""
BASE = 0
"""The base origin's row of the point table."""
UP_IN_PLANE = 0.5
"""The view's vertical is the up direction (against gravity) projected on the motion's
principal plane when that projection keeps at least this length (the plane is within 60
degrees of vertical), else the plane's second principal axis."""


class Stick(NamedTuple):
    """How a model's point table is drawn: path (P,) int indices into the table (BREAK
    between pieces); n_links the model's n; tip_link (t,) int the leaf link of each tip;
    tip_offset (t, 3) the tip in that link's frame, m."""
    path: np.ndarray
    n_links: int
    tip_link: np.ndarray
    tip_offset: np.ndarray

    @property
    def joints(self):
        """(P,) bool: the path's points that are joints (link origins, table rows 1..n)."""
        return (self.path > BASE) & (self.path <= self.n_links)


def stick_of(model):
    """The :class:`Stick` of a CompiledTree (module docstring)."""
    n = len(model.parent)
    leaves = [i for i in range(n) if model.subtree_end[i] == i + 1]
    tips = [(i, offset) for i in leaves for offset in [_tip_offset(model, i)]
            if offset is not None]
    tip_row = {link: 1 + n + k for k, (link, _) in enumerate(tips)}
    path = []
    for i in range(n):
        parent_row = 1 + model.parent[i]             # the base (row 0) for a root link
        if not path or path[-1] != parent_row:
            path += [BREAK, parent_row] if path else [parent_row]
        path.append(1 + i)
        if i in tip_row:
            path.append(tip_row[i])
    return Stick(np.array(path, dtype=np.int64), n,
                 np.array([link for link, _ in tips], dtype=np.int64),
                 np.array([offset for _, offset in tips], dtype=float).reshape(-1, 3))


def _tip_offset(model, link):
    """A leaf link's tip in its frame (module docstring), or None when it has neither merged
    frames nor a centre of mass away from its origin."""
    merged = [np.asarray(p, dtype=float) for _, index, _, p in model.frames if index == link]
    if merged:
        return max(merged, key=np.linalg.norm)
    com = np.asarray(model.com[link], dtype=float)
    return 2.0 * com if np.any(com) else None


def point_table(model, stick, q):
    """The point table (n_samples, 1 + n + t, 3) at joint positions q (n_samples, nv), m:
    base origin, link origins of ``cmtm.link_poses`` and the tips."""
    T = cmtm.link_poses(model, np.atleast_2d(np.asarray(q, dtype=float)))
    origins = T[..., :3, 3]
    tips = np.einsum("stij,tj->sti", T[:, stick.tip_link, :3, :3], stick.tip_offset) \
        + origins[:, stick.tip_link]
    base = np.zeros((len(T), 1, 3))
    return np.concatenate([base, origins, tips], axis=1)


def polyline(stick, table):
    """The points of ``table`` (..., rows, 3) along ``stick.path``: (..., P, 3), NaN where
    the path breaks."""
    points = table[..., np.maximum(stick.path, 0), :]
    points[..., stick.path == BREAK, :] = np.nan
    return points


def stick_figure(model, q):
    """(Stick, polyline (n_samples, P, 3) in m) of a model at joint positions q
    (n_samples, nv)."""
    stick = stick_of(model)
    return stick, polyline(stick, point_table(model, stick, q))


def principal_view(points, gravity):
    """Rows (right, up, normal) of an orthonormal right-handed basis that views ``points``
    (..., 3; NaN ignored) from the normal of their principal plane: the plane of the two
    largest principal axes (eigenvectors of the centred points' scatter matrix). Up is
    against ``gravity`` (3,) projected on the plane when that projection is long enough
    (UP_IN_PLANE), else the second principal axis; right = up x normal."""
    flat = np.asarray(points, dtype=float).reshape(-1, 3)
    flat = flat[np.all(np.isfinite(flat), axis=1)]
    centred = flat - flat.mean(axis=0)
    axes = np.linalg.eigh(centred.T @ centred)[1][:, ::-1].T    # rows, largest first
    normal = axes[2]
    g = np.asarray(gravity, dtype=float)
    against = -g / np.linalg.norm(g) if np.any(g) else np.zeros(3)
    up = against - (against @ normal) * normal
    up = up / np.linalg.norm(up) if np.linalg.norm(up) >= UP_IN_PLANE else axes[1]
    return np.array([np.cross(up, normal), up, normal])
