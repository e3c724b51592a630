"""Tests of kinematic_trees: validation, compilation invariants, lumping, builders.

References: hand computations, networkx (descendants), and Pinocchio (mass matrix and
gravity torques of the compiled model against Pinocchio's own URDF parser).
"""
import re

import networkx as nx
import numpy as np
import pinocchio as pin
import pytest

import kinematic_trees as kt
from kinematic_trees.inertia import rpy_matrix

SEEDS = [0, 1, 2, 3, 4]
ROD = np.diag([0.0, 1.0 / 12.0, 1.0 / 12.0])


def arm_tree():
    """Valid base -> "arm" tree used as the starting point of the bad-model cases."""
    tree = kt.KinematicTree()
    tree.add_link("base")
    tree.add_link("arm", mass=1.0, com=(0.5, 0.0, 0.0), inertia=ROD)
    tree.add_joint("shoulder", "base", "arm")
    return tree


def graph_of(*joints):
    """DiGraph with valid default attributes for joints given as (name, parent, child)."""
    graph = nx.DiGraph()
    for name, parent, child in joints:
        graph.add_edge(parent, child, name=name, type="revolute")
    return graph


def world_poses(parents_and_placements, base=None):
    """{key: (R, p)} world poses from (key, parent_key, R, p) rows, parents listed first."""
    poses = {base: (np.eye(3), np.zeros(3))}
    for key, parent, R, p in parents_and_placements:
        R0, p0 = poses[parent]
        poses[key] = (R0 @ R, R0 @ p + p0)
    return poses


def mass_moments(bodies):
    """(total mass, first moment (3,), rotational inertia about the origin (3,3)) of
    (m, c_world, I_c_world) bodies, by the textbook formula I_O = I_c + m (|c|^2 E - c c^T)."""
    mass = sum(m for m, _, _ in bodies)
    first = sum(m * c for m, c, _ in bodies)
    second = sum(I + m * (c @ c * np.eye(3) - np.outer(c, c)) for m, c, I in bodies)
    return mass, first, second


# --- validation: every bad model raises ModelError naming the offender ---

@pytest.mark.parametrize("kwargs, message", [
    ({"mass": -1.0}, "link 'arm2': mass is negative"),
    ({"mass": float("nan")}, "link 'arm2': mass: expected finite"),
    ({"com": (0.0, float("nan"), 0.0)}, "link 'arm2': com: expected finite"),
    ({"com": (0.0, 1.0)}, "link 'arm2': com: expected shape (3,)"),
    ({"inertia": [[1.0, 0.03, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]},
     "link 'arm2': inertia is not symmetric (max asymmetry 0.03)"),
    ({"inertia": np.diag([1.0, 1.0, -0.6])},
     "link 'arm2': inertia is not physically consistent (principal moments [-0.6, 1, 1] "
     "kg m^2); the nearest consistent inertia changes a moment by 0.6 kg m^2, more than "
     "the tolerance 0.5 x the largest moment"),
    ({"inertia": -np.eye(3)}, "link 'arm2': inertia is not physically consistent"),
    ({"inertia": np.full((3, 3), np.inf)}, "link 'arm2': inertia: expected finite"),
])
def test_add_link_rejects_bad_attributes(kwargs, message):
    with pytest.raises(kt.ModelError, match=_literal(message)):
        arm_tree().add_link("arm2", **kwargs)


def test_add_link_rejects_duplicate_name():
    with pytest.raises(kt.ModelError, match="link 'arm' already exists"):
        arm_tree().add_link("arm")


@pytest.mark.parametrize("inertia", [ROD, np.zeros((3, 3)), np.diag([1.0, 2.0, 3.0])])
def test_add_link_accepts_triangle_boundary(inertia):
    """A thin rod (I_xx = 0, I_yy = I_zz) sits exactly on the triangle-inequality boundary:
    accepted without an InertiaWarning (warnings are errors) and stored as given, not
    projected (up to the symmetrization of the input: rounding ~1e-18)."""
    R = rpy_matrix((0.3, -1.2, 2.0))  # rotation adds rounding of ~1e-17 to the boundary case
    tree = arm_tree()
    tree.add_link("arm2", mass=1.0, inertia=R @ inertia @ R.T)
    np.testing.assert_allclose(tree.graph.nodes["arm2"]["inertia"], R @ inertia @ R.T,
                               rtol=0, atol=1e-15)


@pytest.mark.parametrize("kwargs, message", [
    ({"axis": (0.0, 0.0, 0.0)}, "joint 'elbow': axis is zero"),
    ({"R": 2.0 * np.eye(3)}, "joint 'elbow': placement rotation R is not orthonormal"),
    ({"R": np.diag([1.0, 1.0, -1.0])}, "joint 'elbow': placement rotation R is a reflection"),
    ({"R": np.eye(3), "rpy": (0.1, 0.0, 0.0)}, "joint 'elbow': give the placement as rpy or"),
    ({"lower": 1.0, "upper": -1.0}, "joint 'elbow': lower limit 1.0 > upper limit -1.0"),
    ({"lower": float("nan")}, "joint 'elbow': lower limit is NaN"),
    ({"xyz": (0.0, float("nan"), 0.0)}, "joint 'elbow': placement p: expected finite"),
    ({"type": "screw"}, "joint 'elbow': unknown type 'screw'"),
    ({"parent": "nowhere"}, "joint 'elbow': parent link 'nowhere' does not exist"),
    ({"child": "nowhere"}, "joint 'elbow': child link 'nowhere' does not exist"),
    ({"parent": "forearm", "child": "arm"},
     "joint 'elbow': link 'arm' already has a parent joint 'shoulder'"),
    ({"parent": "forearm"}, "joint 'elbow': connects link 'forearm' to itself"),
    ({"name": "shoulder"}, "joint 'shoulder': a joint with this name already exists"),
])
def test_add_joint_rejects_bad_joint(kwargs, message):
    tree = arm_tree()
    tree.add_link("forearm")
    joint = {"name": "elbow", "parent": "arm", "child": "forearm", "type": "revolute"} | kwargs
    with pytest.raises(kt.ModelError, match=_literal(message)):
        tree.add_joint(**joint)


@pytest.mark.parametrize("scale", [1e-9, 3.0, 1e308])
def test_add_joint_normalizes_any_nonzero_axis(scale):
    """Axes are stored as unit vectors whatever their scale, 1e308 included (its plain
    2-norm overflows float64; found by test_fuzz)."""
    tree = arm_tree()
    tree.add_link("forearm")
    tree.add_joint("elbow", "arm", "forearm", axis=(scale, scale, scale))
    np.testing.assert_allclose(tree.graph.edges["arm", "forearm"]["axis"],
                               np.full(3, 3 ** -0.5), rtol=1e-15)


def test_add_joint_rejects_cycle():
    tree = arm_tree()
    tree.add_link("forearm")
    tree.add_joint("elbow", "arm", "forearm")
    message = "joint 'loop': link 'base' is an ancestor of 'forearm'"
    with pytest.raises(kt.ModelError, match=_literal(message)):
        tree.add_joint("loop", "forearm", "base")


@pytest.mark.parametrize("graph, message", [
    (graph_of(("j1", "base", "a"), ("j2", "x", "y")),
     "found 2: ['base', 'x'] have no parent joint (is the model disconnected?)"),
    (graph_of(("j1", "base", "a"), ("j2", "b", "c"), ("j3", "c", "b")),
     "form a cycle"),
    (graph_of(("j1", "base", "a"), ("j2", "base", "b"), ("j3", "a", "c"), ("j4", "b", "c")),
     "link 'c' has 2 parent joints ['j3', 'j4']"),
    (graph_of(("j1", "base", "a"), ("j1", "a", "b")),
     "joint names must be unique; used more than once: ['j1']"),
    (nx.DiGraph(), "the model has no links"),
])
def test_from_graph_rejects_bad_structure(graph, message):
    with pytest.raises(kt.ModelError, match=_literal(message)):
        kt.KinematicTree.from_graph(graph)


def test_from_graph_cycle_message_names_the_joints():
    graph = graph_of(("j1", "base", "a"), ("j2", "b", "c"), ("j3", "c", "b"))
    with pytest.raises(kt.ModelError, match=r"joints \['j[23]', 'j[23]'\] form a cycle"):
        kt.KinematicTree.from_graph(graph)


@pytest.mark.parametrize("change, message", [
    (lambda g: g.nodes["a"].update(mass=-2.0), "link 'a': mass is negative"),
    (lambda g: g.edges["base", "a"].pop("type"),
     "joint from 'base' to 'a': missing attribute 'type'"),
    (lambda g: g.edges["base", "a"].update(axis=[0, 0, 0]), "joint 'j1': axis is zero"),
    (lambda g: g.add_edge("a", 7, name="j2", type="fixed"), "link 7: link names must be"),
])
def test_validate_checks_hand_edited_graphs(change, message):
    graph = graph_of(("j1", "base", "a"))
    change(graph)
    with pytest.raises(kt.ModelError, match=_literal(message)):
        kt.KinematicTree.from_graph(graph)


def test_from_graph_canonicalizes_attributes():
    graph = graph_of(("j1", "base", "a"))
    graph.edges["base", "a"]["axis"] = [0, 3, 4]
    tree = kt.KinematicTree.from_graph(graph)
    np.testing.assert_array_equal(tree.graph.edges["base", "a"]["axis"], [0.0, 0.6, 0.8])
    assert tree.graph.nodes["a"]["mass"] == 0.0
    assert "axis" in graph.edges["base", "a"] and graph.edges["base", "a"]["axis"] == [0, 3, 4]


def test_lock_joint_composes_the_joint_motion():
    tree = arm_tree()
    tree.add_link("slider")
    tree.add_joint("slide", "arm", "slider", "prismatic", axis=(0, 1, 0), rpy=(0, 0, np.pi / 2),
                   xyz=(1.0, 0.0, 0.0), lower=-1.0, upper=1.0)
    tree.lock_joint("slide", 0.5)
    tree.lock_joint("shoulder", np.pi / 2)
    slide, shoulder = tree.graph.edges["arm", "slider"], tree.graph.edges["base", "arm"]
    assert slide["type"] == shoulder["type"] == "fixed"
    np.testing.assert_allclose(slide["p"], [0.5, 0.0, 0.0], atol=1e-15)  # (1,0,0) + Rz(90) (0,.5,0)
    np.testing.assert_allclose(shoulder["R"], rpy_matrix((0, 0, np.pi / 2)), atol=1e-15)


@pytest.mark.parametrize("name, position, message", [
    ("shoulder", float("nan"), "joint 'shoulder': lock position: expected finite numbers, "
                                 "got nan"),
    ("nothing", 0.0, "joint 'nothing' does not exist"),
])
def test_lock_joint_rejects(name, position, message):
    with pytest.raises(kt.ModelError, match=_literal(message)):
        arm_tree().lock_joint(name, position)


def test_lock_joint_rejects_positions_outside_limits_and_fixed_joints():
    tree = arm_tree()
    tree.add_link("tool")
    tree.add_joint("wrist", "arm", "tool", lower=-1.0, upper=1.0)
    message = "joint 'wrist': lock position 2.0 is outside the limits [-1.0, 1.0]"
    with pytest.raises(kt.ModelError, match=_literal(message)):
        tree.lock_joint("wrist", 2.0)
    tree.lock_joint("wrist", 0.0)
    with pytest.raises(kt.ModelError, match="joint 'wrist' is already fixed"):
        tree.lock_joint("wrist", 0.0)


def test_model_without_movable_joint_compiles_to_nv0_with_its_mass_properties():
    """base 2 kg at the origin, arm (ROD, 1 kg, COM (0.5, 0, 0)) locked: lumped m = 3 kg,
    c = (1/6, 0, 0), I_c = ROD + parallel-axis terms 2 (1/6)^2 + 1 (1/3)^2 = 1/6 about y, z."""
    tree = arm_tree()
    tree.graph.nodes["base"]["mass"] = 2.0
    tree.lock_joint("shoulder", 0.0)
    model = kt.compile_tree(tree)
    assert model.nv == 0 and model.joint_names == () and model.frames[0][:2] == ("arm", -1)
    assert model.axis.shape == (0, 3) and model.spatial_inertia.shape == (0, 6, 6)
    assert model.base_mass == 3.0
    np.testing.assert_allclose(model.base_com, [1 / 6, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(model.base_inertia_com, ROD + np.diag([0.0, 1 / 6, 1 / 6]),
                               atol=1e-15)


@pytest.mark.parametrize("gravity", [(0.0, 9.81), (0.0, 0.0, float("nan")), "down"])
def test_compile_rejects_bad_gravity(gravity):
    with pytest.raises(kt.ModelError, match="gravity: expected 3 finite numbers"):
        kt.compile_tree(arm_tree(), gravity=gravity)


# --- compilation invariants on random trees ---

@pytest.mark.parametrize("seed", SEEDS)
def test_parent_precedes_child_and_subtrees_are_networkx_descendants(seed):
    tree = kt.random_tree(40, seed=seed)
    model = kt.compile_tree(tree)
    index = {name: i for i, name in enumerate(model.link_names)}
    assert model.nv == 40
    assert all(model.parent[i] < i for i in range(model.nv))
    for i, link in enumerate(model.link_names):
        moving_descendants = {index[d] for d in nx.descendants(tree.graph, link) if d in index}
        assert set(range(i, model.subtree_end[i])) == {i} | moving_descendants


@pytest.mark.parametrize("seed", SEEDS)
def test_children_are_visited_in_name_order(seed):
    model = kt.compile_tree(kt.random_tree(40, seed=seed, branching=0.6))
    for i in range(-1, model.nv):
        children = [model.link_names[j] for j in np.flatnonzero(model.parent == i)]
        assert children == sorted(children)


@pytest.mark.parametrize("seed", SEEDS)
def test_compile_is_independent_of_insertion_order(seed):
    tree = kt.random_tree(40, seed=seed)
    rng = np.random.default_rng(100 + seed)
    links = list(tree.graph.nodes(data=True))
    joints = list(tree.graph.edges(data=True))
    rng.shuffle(links)
    rng.shuffle(joints)
    shuffled = kt.KinematicTree()
    for name, link in links:
        shuffled.add_link(name, **link)
    for parent, child, j in joints:
        shuffled.add_joint(j["name"], parent, child, j["type"], axis=j["axis"], xyz=j["p"],
                           R=j["R"], lower=j["lower"], upper=j["upper"])
    assert_models_equal(kt.compile_tree(tree), kt.compile_tree(shuffled), atol=0.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_compiled_arrays_are_frozen_contiguous_and_typed(seed):
    model = kt.compile_tree(kt.random_tree(40, seed=seed))
    n = model.nv
    shapes = {"parent": (n,), "subtree_end": (n,), "joint_type": (n,), "axis": (n, 3),
              "placement_R": (n, 3, 3), "placement_p": (n, 3), "mass": (n,), "com": (n, 3),
              "inertia_com": (n, 3, 3), "spatial_inertia": (n, 6, 6), "gravity": (3,),
              "q_lower": (n,), "q_upper": (n,), "mimic_leader": (n,), "mimic_multiplier": (n,),
              "mimic_offset": (n,), "base_mass": (), "base_com": (3,), "base_inertia_com": (3, 3)}
    for field, shape in shapes.items():
        array = getattr(model, field)
        is_index = field in ("parent", "subtree_end", "joint_type", "mimic_leader")
        assert array.shape == shape and array.dtype == (np.int64 if is_index else np.float64)
        assert array.flags.c_contiguous and not array.flags.writeable, field
    assert set(model.joint_type.tolist()) == {kt.JOINT_REVOLUTE, kt.JOINT_PRISMATIC}
    np.testing.assert_allclose(np.linalg.norm(model.axis, axis=1), 1.0, rtol=1e-15)
    assert len(model.joint_names) == len(model.link_names) == n


@pytest.mark.parametrize("seed", SEEDS)
def test_lumping_preserves_mass_first_moment_and_inertia_about_the_base_origin(seed):
    """Sum over links at q = 0 in the base frame: the graph (before merging) against the
    compiled model (after). Links fixed to the base are excluded: the base absorbs them."""
    tree = kt.random_tree(40, seed=seed, fixed_fraction=0.4)
    graph, model = tree.graph, kt.compile_tree(tree)
    assert len(model.frames) > 10  # fixed joints really were merged
    original = world_poses([(v, u, graph.edges[u, v]["R"], graph.edges[u, v]["p"])
                            for u, v in nx.bfs_edges(graph, tree.root)], base=tree.root)
    on_base = _links_fixed_to_base(tree)
    before = [_in_world(original[link], graph.nodes[link]["mass"], graph.nodes[link]["com"],
                        graph.nodes[link]["inertia"]) for link in graph if link not in on_base]
    compiled = world_poses([(i, model.parent[i] if model.parent[i] >= 0 else None,
                             model.placement_R[i], model.placement_p[i]) for i in range(model.nv)])
    after = [_in_world(compiled[i], model.mass[i], model.com[i], model.inertia_com[i])
             for i in range(model.nv)]
    for b, a in zip(mass_moments(before), mass_moments(after)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_frames_keep_the_pose_of_merged_links(seed):
    tree = kt.random_tree(40, seed=seed, fixed_fraction=0.4)
    graph, model = tree.graph, kt.compile_tree(tree)
    original = world_poses([(v, u, graph.edges[u, v]["R"], graph.edges[u, v]["p"])
                            for u, v in nx.bfs_edges(graph, tree.root)], base=tree.root)
    compiled = world_poses([(i, model.parent[i] if model.parent[i] >= 0 else None,
                             model.placement_R[i], model.placement_p[i]) for i in range(model.nv)])
    merged = {name for name, _, _, _ in model.frames}
    assert merged == {v for u, v, t in graph.edges(data="type") if t == "fixed"}
    for name, link_index, R, p in model.frames:
        R_body, p_body = compiled[link_index if link_index >= 0 else None]
        np.testing.assert_allclose(R_body @ R, original[name][0], atol=1e-12)
        np.testing.assert_allclose(R_body @ p + p_body, original[name][1], atol=1e-12)


def test_lumping_by_hand_rotated_fixed_child():
    """arm (1 kg point at the origin) carries, fixed at (2, 0, 0) and rotated 90 deg about z,
    a 1 kg body with I_c = diag(1, 2, 3) at its origin. Lumped: m = 2, c = (1, 0, 0),
    I_c = Rz diag(1, 2, 3) Rz^T + 2 * 1 kg * (1 m)^2 about y and z = diag(2, 1 + 2, 3 + 2)."""
    tree = arm_tree()
    tree.graph.nodes["arm"].update(mass=1.0, com=np.zeros(3), inertia=np.zeros((3, 3)))
    tree.add_link("tool", mass=1.0, inertia=np.diag([1.0, 2.0, 3.0]))
    tree.add_joint("mount", "arm", "tool", "fixed", xyz=(2.0, 0.0, 0.0), rpy=(0, 0, np.pi / 2))
    model = kt.compile_tree(tree)
    assert model.nv == 1 and model.mass[0] == 2.0
    np.testing.assert_allclose(model.com[0], [1.0, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(model.inertia_com[0], np.diag([2.0, 3.0, 5.0]), atol=1e-15)
    (name, link_index, R, p), = model.frames
    assert (name, link_index) == ("tool", 0)
    np.testing.assert_allclose(p, [2.0, 0.0, 0.0])


def test_links_fixed_to_the_base_are_merged_into_the_base():
    tree = kt.KinematicTree()
    tree.add_link("world")
    tree.add_link("pedestal", mass=50.0, inertia=np.eye(3))
    tree.add_link("arm", mass=1.0)
    tree.add_joint("bolt", "world", "pedestal", "fixed", xyz=(0.0, 0.0, 0.5), rpy=(0, 0, 0.3))
    tree.add_joint("shoulder", "pedestal", "arm", xyz=(0.1, 0.0, 0.0))
    model = kt.compile_tree(tree)
    assert model.base_name == "world" and model.link_names == ("arm",)
    assert model.parent.tolist() == [-1] and model.mass.tolist() == [1.0]
    np.testing.assert_allclose(model.placement_R[0], rpy_matrix((0, 0, 0.3)))
    np.testing.assert_allclose(model.placement_p[0], [0.1 * np.cos(0.3), 0.1 * np.sin(0.3), 0.5])
    assert [(name, i) for name, i, _, _ in model.frames] == [("pedestal", -1)]


def test_continuous_joints_compile_as_revolute_without_limits():
    tree = arm_tree()
    tree.add_link("wheel")
    tree.add_joint("spin", "arm", "wheel", "continuous", lower=-1.0, upper=1.0)
    model = kt.compile_tree(tree)
    assert model.joint_type.tolist() == [kt.JOINT_REVOLUTE, kt.JOINT_REVOLUTE]
    assert model.q_lower[1] == -np.inf and model.q_upper[1] == np.inf


# --- spatial inertia ---

def test_spatial_inertia_hand_example_angular_first():
    """m = 2, c = (0, 0, 1), I_c = diag(1, 2, 3): [c x] = [[0,-1,0],[1,0,0],[0,0,0]],
    m [c x][c x]^T = diag(2, 2, 0)."""
    tree = arm_tree()
    tree.graph.nodes["arm"].update(mass=2.0, com=np.array([0.0, 0.0, 1.0]),
                                   inertia=np.diag([1.0, 2.0, 3.0]))
    I = kt.compile_tree(tree).spatial_inertia[0]
    expected = np.array([
        [3.0, 0.0, 0.0, 0.0, -2.0, 0.0],
        [0.0, 4.0, 0.0, 2.0, 0.0, 0.0],
        [0.0, 0.0, 3.0, 0.0, 0.0, 0.0],
        [0.0, 2.0, 0.0, 2.0, 0.0, 0.0],
        [-2.0, 0.0, 0.0, 0.0, 2.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 0.0, 2.0],
    ])
    np.testing.assert_array_equal(I, expected)


@pytest.mark.parametrize("seed", SEEDS)
def test_spatial_inertia_symmetric_psd_and_matches_pinocchio(seed):
    """Pinocchio's Inertia.matrix() is linear-first: permute [v; w] -> [w; v]."""
    model = kt.compile_tree(kt.random_tree(40, seed=seed))
    swap = np.r_[3:6, 0:3]
    for m, c, I_c, I in zip(model.mass, model.com, model.inertia_com, model.spatial_inertia):
        np.testing.assert_array_equal(I, I.T)
        assert np.linalg.eigvalsh(I)[0] > -1e-12 * np.trace(I)
        reference = pin.Inertia(float(m), c.copy(), I_c.copy()).matrix()[np.ix_(swap, swap)]
        np.testing.assert_allclose(I, reference, rtol=1e-13, atol=1e-14)


# --- builders and whole-model references ---

def test_two_link_planar_textbook_mass_matrix_and_gravity():
    """Textbook closed form (m = l = 1, l_c = 0.5, I = 1/12, gravity -y), via Pinocchio."""
    model = kt.compile_tree(kt.two_link_planar(), gravity=(0, -9.81, 0))
    q = np.radians([30.0, 60.0])
    M, g = mass_matrix_and_gravity(pinocchio_model(model), q)
    m12 = 1 / 12 + 0.25 + 0.5 * np.cos(q[1])
    np.testing.assert_allclose(M, [[1 / 6 + 1.5 + np.cos(q[1]), m12], [m12, 1 / 12 + 0.25]],
                               atol=1e-12)
    np.testing.assert_allclose(g, [9.81 * (1.5 * np.cos(q[0]) + 0.5 * np.cos(q.sum())), 0.0],
                               atol=1e-12)
    np.testing.assert_allclose(M, [[2.16667, 0.58333], [0.58333, 0.33333]], atol=5e-6)
    np.testing.assert_allclose(g, [12.7436, 0.0], atol=5e-5)


@pytest.mark.parametrize("n", [1, 3, 12])
def test_serial_chain(n):
    model = kt.compile_tree(kt.serial_chain(n))
    assert model.parent.tolist() == list(range(-1, n - 1))
    assert model.link_names[-1] == f"link{n}" and len(set(map(len, model.link_names))) == 1
    expected_axes = [(0, 0, 1) if i % 2 == 0 else (0, 1, 0) for i in range(n)]
    np.testing.assert_array_equal(model.axis, expected_axes)
    np.testing.assert_array_equal(model.placement_p[1:], np.tile([1.0, 0.0, 0.0], (n - 1, 1)))
    np.testing.assert_array_equal(model.mass, 5.0)
    np.testing.assert_array_equal(model.inertia_com, np.tile(0.1 * np.eye(3), (n, 1, 1)))


def test_random_tree_is_deterministic_and_mixed():
    tree = kt.random_tree(40, seed=7)
    types = [t for _, _, t in tree.graph.edges(data="type")]
    assert types.count("fixed") == 6 and len(types) == 46
    assert {"revolute", "prismatic"} <= set(types)
    assert max(nx.shortest_path_length(tree.graph, tree.root).values()) > 10
    assert_models_equal(kt.compile_tree(tree), kt.compile_tree(kt.random_tree(40, seed=7)),
                         atol=0.0)
    assert not np.array_equal(kt.compile_tree(kt.random_tree(40, seed=8)).com,
                              kt.compile_tree(tree).com)


@pytest.mark.parametrize("kwargs", [{"n": 0}, {"n": 2.5}, {"n": 3, "branching": 1.5}])
def test_random_tree_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        kt.random_tree(**kwargs)


# --- helpers ---

def _literal(message):
    """Regex matching ``message`` literally."""
    return re.escape(message)


def _links_fixed_to_base(tree):
    """Links attached to the root through fixed joints only (the root included)."""
    fixed = nx.DiGraph((u, v) for u, v, t in tree.graph.edges(data="type") if t == "fixed")
    fixed.add_node(tree.root)
    return {tree.root} | nx.descendants(fixed, tree.root)


def _in_world(pose, mass, com, inertia_com):
    """(m, c, I_c) of a link at ``pose`` = (R, p), expressed in the world frame."""
    R, p = pose
    return mass, R @ com + p, R @ inertia_com @ R.T


def assert_models_equal(a, b, atol):
    """Every CompiledTree field of a and b agrees (arrays to ``atol``)."""
    for field in a._fields:
        x, y = getattr(a, field), getattr(b, field)
        if field == "frames":
            assert [f[:2] for f in x] == [f[:2] for f in y]
            for (_, _, R1, p1), (_, _, R2, p2) in zip(x, y):
                np.testing.assert_allclose(R1, R2, rtol=0, atol=atol)
                np.testing.assert_allclose(p1, p2, rtol=0, atol=atol)
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, field
            np.testing.assert_allclose(x, y, rtol=0, atol=atol, err_msg=field)
        else:
            assert x == y, field


def pinocchio_model(model):
    """A Pinocchio model with the joints, placements and lumped inertias of ``model``."""
    reference = pin.Model()
    ids = []
    for i in range(model.nv):
        joint = (pin.JointModelPrismaticUnaligned if model.joint_type[i] == kt.JOINT_PRISMATIC
                 else pin.JointModelRevoluteUnaligned)(model.axis[i].copy())
        parent = 0 if model.parent[i] < 0 else ids[model.parent[i]]
        placement = pin.SE3(model.placement_R[i].copy(), model.placement_p[i].copy())
        ids.append(reference.addJoint(parent, joint, placement, model.joint_names[i]))
        inertia = pin.Inertia(float(model.mass[i]), model.com[i].copy(),
                              model.inertia_com[i].copy())
        reference.appendBodyToJoint(ids[-1], inertia, pin.SE3.Identity())
    reference.gravity = pin.Motion(np.concatenate([model.gravity, np.zeros(3)]))
    return reference


def mass_matrix_and_gravity(reference, q):
    """Joint-space inertia matrix (nv, nv) and gravity torques (nv,) from Pinocchio."""
    data = reference.createData()
    M = pin.crba(reference, data, q)
    return np.triu(M) + np.triu(M, 1).T, pin.computeGeneralizedGravity(reference, data, q)


def assert_same_dynamics(model, reference):
    """M(q) and g(q) of ``model`` and the Pinocchio ``reference`` agree at 5 random q,
    matching joints by name (the two number them differently)."""
    order = [reference.joints[reference.getJointId(name)].idx_v for name in model.joint_names]
    ours = pinocchio_model(model)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = rng.uniform(-1.0, 1.0, model.nv)
        q_reference = np.empty(model.nv)
        q_reference[order] = q
        M, g = mass_matrix_and_gravity(ours, q)
        M_ref, g_ref = mass_matrix_and_gravity(reference, q_reference)
        np.testing.assert_allclose(M, M_ref[np.ix_(order, order)], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g, g_ref[order], rtol=1e-10, atol=1e-10)
