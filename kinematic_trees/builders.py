"""Ready-made kinematic trees: the textbook planar arm, the paper's serial chain, random trees
for testing, and the Franka Emika Panda arm.

Every builder returns a ``KinematicTree``; pass it to ``compile_tree`` for the engine.
``floating_base`` (None, fixed base, by default) puts six virtual joints under the base
link (``add_floating_base``; e.g. "xyz_zyx"). ``gravity`` (None: (0, 0, -9.81), the z-up
default) is the gravity the tree carries (``KinematicTree.gravity``), which
``compile_tree`` uses unless given another.
"""
from numbers import Real

import numpy as np

from .floating_base import add_floating_base
from .graph import KinematicTree
from .inertia import inertia_matrix, rpy_matrix


def two_link_planar(floating_base=None, gravity=None):
    """The classic planar two-link arm (rods of 1 m and 1 kg, both joints about z).

    Base "base"; "joint1" at the base origin moves "link1"; "joint2" at (1, 0, 0) in link1
    moves "link2". Each link: m = 1 kg, COM at (0.5, 0, 0), rotational inertia about the
    COM diag(0, 1/12, 1/12) kg m^2 (a thin rod along x, so I_zz = m l^2 / 12).

    The arm moves in the x-y plane, so the textbook numbers need gravity along -y: build it
    with ``two_link_planar(gravity=(0, -9.81, 0))`` (it carries (0, 0, -9.81), gravity
    along its joint axes, by default, as every builder does). At q = (30 deg,
    60 deg) the joint-space inertia matrix is then M = [[2.16667, 0.58333], [0.58333,
    0.33333]] and the gravity torque g(q) = (12.7436, 0) N m.

    >>> from kinematic_trees import compile_tree
    >>> model = compile_tree(two_link_planar(gravity=(0, -9.81, 0)))
    >>> model.link_names, model.placement_p.tolist(), model.gravity.tolist()
    (('link1', 'link2'), [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [0.0, -9.81, 0.0])
    """
    tree = KinematicTree(gravity=gravity)
    tree.add_link("base")
    rod = np.diag([0.0, 1.0 / 12.0, 1.0 / 12.0])
    for i, parent, xyz in ((1, "base", (0.0, 0.0, 0.0)), (2, "link1", (1.0, 0.0, 0.0))):
        tree.add_link(f"link{i}", mass=1.0, com=(0.5, 0.0, 0.0), inertia=rod)
        tree.add_joint(f"joint{i}", parent, f"link{i}", "revolute", axis=(0, 0, 1), xyz=xyz)
    return add_floating_base(tree, floating_base)


def serial_chain(n, floating_base=None, gravity=None):
    """The paper's serial chain of ``n`` revolute links.

    Each link is 1 m long along its local x, with m = 5 kg, COM at (0.5, 0, 0) and
    rotational inertia diag(0.1, 0.1, 0.1) kg m^2 about the COM. Joint 1 sits at the base
    origin, joint i+1 at (1, 0, 0) in link i. The joint axes alternate z, y, z, y, ... so
    the chain moves in space (not in a plane) and is not degenerate. Names are "base",
    "link1".."linkN", "joint1".."jointN", zero-padded to a common width when n >= 10
    ("link01", ...) so that sorting the names keeps the chain order.

    >>> serial_chain(12).joint_links("joint03")
    ('link02', 'link03')
    """
    n = _count("serial_chain", n)
    width = len(str(n))
    tree = KinematicTree(gravity=gravity)
    tree.add_link("base")
    parent = "base"
    for i in range(1, n + 1):
        link = f"link{i:0{width}d}"
        tree.add_link(link, mass=5.0, com=(0.5, 0.0, 0.0), inertia=0.1 * np.eye(3))
        axis = (0.0, 0.0, 1.0) if i % 2 == 1 else (0.0, 1.0, 0.0)
        xyz = (0.0, 0.0, 0.0) if i == 1 else (1.0, 0.0, 0.0)
        tree.add_joint(f"joint{i:0{width}d}", parent, link, "revolute", axis=axis, xyz=xyz)
        parent = link
    return add_floating_base(tree, floating_base)


def random_tree(n, branching=0.3, prismatic_fraction=0.25, fixed_fraction=0.15, seed=0,
                floating_base=None, gravity=None):
    """A random, valid tree with ``n`` movable joints, deterministic in ``seed``.

    About ``fixed_fraction * n`` extra fixed joints carry massive links (so fixed-joint
    merging is exercised). Each new link hangs from a random earlier link (base included)
    with probability ``branching``, otherwise from the previous link, so the tree has depth.
    Movable joints are prismatic with probability ``prismatic_fraction``, else revolute,
    with random unit axes and limits. Placements: random rotation, offset 0.1-1 m in a
    random direction. Links: mass 0.5-5 kg, COM within 0.3 m of the origin, inertia
    R diag(s2+s3, s1+s3, s1+s2) R^T with s > 0 (so the triangle inequality holds).
    Names "base", "link<k>", "joint<k>", k = 1.. zero-padded to a common width.
    """
    n = _count("random_tree", n)
    for name, fraction in (("branching", branching), ("prismatic_fraction", prismatic_fraction),
                           ("fixed_fraction", fixed_fraction)):
        if isinstance(fraction, bool) or not isinstance(fraction, Real) \
                or not 0.0 <= fraction <= 1.0:
            raise ValueError(f"random_tree: {name}: expected a number in [0, 1], "
                             f"got {fraction!r}")
    try:
        rng = np.random.default_rng(seed)
    except (TypeError, ValueError):
        raise ValueError(f"random_tree: seed: expected a non-negative integer or None, "
                         f"got {seed!r}") from None
    n_fixed = round(fixed_fraction * n)
    total = n + n_fixed
    fixed = set(rng.choice(total, size=n_fixed, replace=False).tolist())
    width = len(str(total))
    tree = KinematicTree(gravity=gravity)
    links = ["base"]
    tree.add_link("base")
    for k in range(total):
        link = f"link{k + 1:0{width}d}"
        tree.add_link(link, **_random_inertial(rng))
        parent = links[rng.integers(len(links))] if rng.random() < branching else links[-1]
        joint_type = "fixed" if k in fixed else (
            "prismatic" if rng.random() < prismatic_fraction else "revolute")
        half_range = rng.uniform(0.1, 0.5) if joint_type == "prismatic" else rng.uniform(1.0, 3.0)
        tree.add_joint(f"joint{k + 1:0{width}d}", parent, link, joint_type,
                       axis=_random_unit(rng), xyz=rng.uniform(0.1, 1.0) * _random_unit(rng),
                       rpy=rng.uniform(-np.pi, np.pi, 3), lower=-half_range, upper=half_range)
        links.append(link)
    return add_floating_base(tree, floating_base)


def _count(builder, n):
    """``n`` as an int >= 1 (integral floats accepted), else ValueError naming the builder."""
    try:
        valid = not isinstance(n, bool) and int(n) == n and n >= 1
    except (TypeError, ValueError, OverflowError):
        valid = False
    if not valid:
        raise ValueError(f"{builder}: expected a positive integer n, got {n!r}")
    return int(n)


def _random_unit(rng):
    """Uniformly distributed unit vector (3,)."""
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def _random_inertial(rng):
    """Random mass (kg), com (3,) and valid rotational inertia (3,3) as add_link kwargs."""
    mass = rng.uniform(0.5, 5.0)
    s1, s2, s3 = mass * rng.uniform(0.002, 0.05, 3)
    R = rpy_matrix(rng.uniform(-np.pi, np.pi, 3))
    return {"mass": mass, "com": rng.uniform(-0.3, 0.3, 3),
            "inertia": R @ np.diag([s2 + s3, s1 + s3, s1 + s2]) @ R.T}


# --- Franka Emika Panda, numbers from example-robot-data's panda.urdf ---

# link: (mass kg, COM xyz m, (ixx, ixy, ixz, iyy, iyz, izz) kg m^2); all inertial rpy are 0
_PANDA_LINKS = {
    "panda_link0": (0.629769, (-0.041018, -0.00014, 0.049974),
                    (0.00315, 8.2904e-07, 0.00015, 0.00388, 8.2299e-06, 0.004285)),
    "panda_link1": (4.970684, (0.003875, 0.002081, -0.04762),
                    (0.70337, -0.000139, 0.006772, 0.70661, 0.019169, 0.009117)),
    "panda_link2": (0.646926, (-0.003141, -0.02872, 0.003495),
                    (0.007962, -0.003925, 0.010254, 0.02811, 0.000704, 0.025995)),
    "panda_link3": (3.228604, (2.7518e-02, 3.9252e-02, -6.6502e-02),
                    (0.037242, -0.004761, -0.011396, 0.036155, -0.012805, 0.01083)),
    "panda_link4": (3.587895, (-5.317e-02, 1.04419e-01, 2.7454e-02),
                    (0.025853, 0.007796, -0.001332, 0.019552, 0.008641, 0.028323)),
    "panda_link5": (1.225946, (-1.1953e-02, 4.1065e-02, -3.8437e-02),
                    (0.035549, -0.002117, -0.004037, 0.029474, 0.000229, 0.008627)),
    "panda_link6": (1.666555, (6.0149e-02, -1.4117e-02, -1.0517e-02),
                    (0.001964, 0.000109, -0.001158, 0.004354, 0.000341, 0.005433)),
    "panda_link7": (0.735522, (1.0517e-02, -4.252e-03, 6.1597e-02),
                    (0.012516, -0.000428, -0.001196, 0.010027, -0.000741, 0.004815)),
    "panda_link8": (0.0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)),
    "panda_hand": (0.73, (-0.01, 0.0, 0.03), (0.001, 0.0, 0.0, 0.0025, 0.0, 0.0017)),
    "panda_hand_tcp": (0.0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)),
    "panda_leftfinger": (0.015, (0.0, 0.0, 0.0),
                         (2.3749999999999997e-06, 0.0, 0.0, 2.3749999999999997e-06, 0.0, 7.5e-07)),
    "panda_rightfinger": (0.015, (0.0, 0.0, 0.0),
                          (2.3749999999999997e-06, 0.0, 0.0, 2.3749999999999997e-06, 0.0, 7.5e-07)),
}

_HALF_PI = np.pi / 2  # the URDF's 1.5707963267948966

# (joint, type, parent, child, origin xyz m, origin rpy rad, axis, lower, upper)
_PANDA_JOINTS = (
    ("panda_joint1", "revolute", "panda_link0", "panda_link1",
     (0.0, 0.0, 0.333), (0.0, 0.0, 0.0), (0, 0, 1), -2.8973, 2.8973),
    ("panda_joint2", "revolute", "panda_link1", "panda_link2",
     (0.0, 0.0, 0.0), (-_HALF_PI, 0.0, 0.0), (0, 0, 1), -1.7628, 1.7628),
    ("panda_joint3", "revolute", "panda_link2", "panda_link3",
     (0.0, -0.316, 0.0), (_HALF_PI, 0.0, 0.0), (0, 0, 1), -2.8973, 2.8973),
    ("panda_joint4", "revolute", "panda_link3", "panda_link4",
     (0.0825, 0.0, 0.0), (_HALF_PI, 0.0, 0.0), (0, 0, 1), -3.0718, -0.0698),
    ("panda_joint5", "revolute", "panda_link4", "panda_link5",
     (-0.0825, 0.384, 0.0), (-_HALF_PI, 0.0, 0.0), (0, 0, 1), -2.8973, 2.8973),
    ("panda_joint6", "revolute", "panda_link5", "panda_link6",
     (0.0, 0.0, 0.0), (_HALF_PI, 0.0, 0.0), (0, 0, 1), -0.0175, 3.7525),
    ("panda_joint7", "revolute", "panda_link6", "panda_link7",
     (0.088, 0.0, 0.0), (_HALF_PI, 0.0, 0.0), (0, 0, 1), -2.8973, 2.8973),
    ("panda_joint8", "fixed", "panda_link7", "panda_link8",
     (0.0, 0.0, 0.107), (0.0, 0.0, 0.0), (1, 0, 0), -np.inf, np.inf),
    ("panda_hand_joint", "fixed", "panda_link8", "panda_hand",
     (0.0, 0.0, 0.0), (0.0, 0.0, -np.pi / 4), (1, 0, 0), -np.inf, np.inf),
    ("panda_hand_tcp_joint", "fixed", "panda_hand", "panda_hand_tcp",
     (0.0, 0.0, 0.1034), (0.0, 0.0, 0.0), (1, 0, 0), -np.inf, np.inf),
    # the prismatic finger joints, locked at their closed position 0
    ("panda_finger_joint1", "fixed", "panda_hand", "panda_leftfinger",
     (0.0, 0.0, 0.0584), (0.0, 0.0, 0.0), (0, 1, 0), -np.inf, np.inf),
    ("panda_finger_joint2", "fixed", "panda_hand", "panda_rightfinger",
     (0.0, 0.0, 0.0584), (0.0, 0.0, 0.0), (0, -1, 0), -np.inf, np.inf),
)


def panda(floating_base=None, gravity=None):
    """The 7-DoF Franka Emika Panda arm, base "panda_link0", joints "panda_joint1".."7".

    Kinematic and inertial parameters are those of example-robot-data's ``panda.urdf``
    (written out here as numbers). The hand, its TCP frame and both fingers (closed, at
    finger position 0) hang from link 7 by fixed joints, so compiling lumps their mass into
    link 7 and keeps "panda_link8", "panda_hand", "panda_hand_tcp" and the fingers as
    ``frames``. Equals ``load_urdf(panda.urdf, lock={"panda_finger_joint1": 0.0,
    "panda_finger_joint2": 0.0})``.

    >>> from kinematic_trees import compile_tree
    >>> model = compile_tree(panda())
    >>> model.nv, round(float(model.mass[6]), 6)
    (7, 1.495522)
    """
    tree = KinematicTree(gravity=gravity)
    for link, (mass, com, inertia) in _PANDA_LINKS.items():
        tree.add_link(link, mass=mass, com=com, inertia=inertia_matrix(*inertia))
    for name, joint_type, parent, child, xyz, rpy, axis, lower, upper in _PANDA_JOINTS:
        tree.add_joint(name, parent, child, joint_type, axis=axis, xyz=xyz, rpy=rpy,
                       lower=lower, upper=upper)
    return add_floating_base(tree, floating_base)
