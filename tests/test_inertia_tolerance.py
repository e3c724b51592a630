"""The inertia policy of kinematic_trees (graph.py docstring): rounding passes silently,
inconsistent inertias within the tolerance are kept (or projected) and reported once per
link by an InertiaWarning, ``strict=True`` and gross errors give a ModelError; and the
projection ``inertia.consistent_inertia`` itself.

References: hand values, the definition of consistency (Sigma = tr(I)/2 E - I positive
semi-definite), random sampling (nearness), example-robot-data's PR2.
"""
import re
import warnings

import numpy as np
import pytest
from test_kinematic_trees import arm_tree, graph_of
from test_urdf import robot

import kinematic_trees as kt
from kinematic_trees.inertia import consistent_inertia, rpy_matrix

LINE = np.diag([0.1, 0.1, 0.3])
"""Violates the triangle inequality: Sigma = (0.15, 0.15, -0.05) -> (0.15, 0.15, 0), the
moments become (0.15, 0.15, 0.3), a correction of 0.05 kg m^2 (16.7% of 0.3)."""
LINE_MESSAGE = ("link 'arm2': inertia is not physically consistent (principal moments "
                "[0.1, 0.1, 0.3] kg m^2); the nearest consistent inertia changes a moment by "
                "0.05 kg m^2 (16.7% of the largest)")


def covariance(inertia):
    """Sigma = tr(I)/2 E - I, the mass distribution's second moment about the COM."""
    return 0.5 * np.trace(inertia) * np.eye(3) - inertia


def random_symmetric(rng):
    """R diag(d) R^T, d uniform in [-0.2, 1] (often inconsistent), R a random rotation."""
    R = rpy_matrix(rng.uniform(-np.pi, np.pi, 3))
    return R @ np.diag(rng.uniform(-0.2, 1.0, 3)) @ R.T


def inertia_warnings(action):
    """The InertiaWarning messages raised while running ``action()``, every one kept."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", kt.InertiaWarning)
        action()
    assert all(issubclass(w.category, kt.InertiaWarning) for w in caught)
    return [str(w.message) for w in caught]


# --- the projection ---

@pytest.mark.parametrize("moments, expected, correction", [
    ((0.0, 0.0, 1.0), (0.5, 0.5, 1.0), 0.5),      # a line of mass: the largest correction
    ((0.1, 0.1, 0.3), (0.15, 0.15, 0.3), 0.05),   # the triangle inequality, violated
    ((-0.1, 1.0, 1.0), (0.0, 1.05, 1.05), 0.1),   # a negative moment
    ((1.0, 2.0, 3.0), (1.0, 2.0, 3.0), 0.0),      # consistent (on the boundary)
])
def test_consistent_inertia_by_hand_keeps_the_principal_axes(moments, expected, correction):
    """Tolerance 1e-14: an eigendecomposition and two rotations of moments <= 3."""
    R = rpy_matrix((0.3, -1.1, 2.0))
    projected, size = consistent_inertia(R @ np.diag(moments) @ R.T)
    np.testing.assert_allclose(R.T @ projected @ R, np.diag(expected), rtol=0, atol=1e-14)
    assert size == pytest.approx(correction, rel=0, abs=1e-14)


def test_projection_is_consistent_idempotent_and_the_nearest_covariance():
    """Sigma of the projection is PSD, projecting again changes it only by rounding (1e-14:
    an eigendecomposition of moments <= 2), and no consistent inertia among 300 random ones
    near it has a covariance closer to the input's."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        inertia = random_symmetric(rng)
        projected, _ = consistent_inertia(inertia)
        assert np.linalg.eigvalsh(covariance(projected))[0] >= -1e-15
        again, correction = consistent_inertia(projected)
        assert correction <= 1e-14
        np.testing.assert_allclose(again, projected, rtol=0, atol=1e-14)
        distance = np.linalg.norm(covariance(projected) - covariance(inertia))
        for _ in range(300):
            sigma = covariance(projected) + 0.05 * random_symmetric(rng)
            moments, axes = np.linalg.eigh(sigma)
            sigma = axes @ np.diag(np.maximum(moments, 0.0)) @ axes.T  # a consistent one
            assert np.linalg.norm(sigma - covariance(inertia)) >= distance - 1e-15


# --- the policy ---

@pytest.mark.parametrize("inertia", [
    np.diag([-2.4e-35, 0.0, 2.4e-35]),                           # iCub's head: rounding
    np.diag([-1e-10, 0.2, 0.2]),                                 # 5e-10 of the largest
    rpy_matrix((0.3, -1.2, 2.0)) @ np.diag([0.0, 1.0, 1.0]) @ rpy_matrix((0.3, -1.2, 2.0)).T,
])
def test_rounding_level_inconsistency_is_kept_silently(inertia):
    tree = kt.KinematicTree(strict=True)
    tree.add_link("arm", mass=1.0, inertia=inertia)
    np.testing.assert_array_equal(tree.graph.nodes["arm"]["inertia"], 0.5 * (inertia + inertia.T))


def test_inconsistent_inertia_warns_once_naming_link_and_correction_and_is_kept():
    tree = arm_tree()
    messages = inertia_warnings(lambda: tree.add_link("arm2", inertia=LINE))
    assert messages == [f"{LINE_MESSAGE}; kept as given (project_inertia=True projects it, "
                        "strict=True refuses it)"]
    tree.add_joint("elbow", "arm", "arm2")
    assert inertia_warnings(tree.validate) == []
    assert inertia_warnings(lambda: kt.compile_tree(tree)) == []
    assert inertia_warnings(lambda: kt.compile_tree(tree, floating_base="xyz_zyx")) == []
    np.testing.assert_array_equal(kt.compile_tree(tree).inertia_com[1], LINE)
    tree.graph.nodes["arm2"]["inertia"] = 2.0 * LINE  # edited: a new value, a new report
    assert len(inertia_warnings(tree.validate)) == 1


def test_urdf_with_inconsistent_links_warns_once_per_link():
    inertial = ('<inertial><mass value="1"/>'
                '<inertia ixx="0.1" iyy="0.1" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial>')
    source = robot('<link name="base"/>', f'<link name="a">{inertial}</link>',
                   f'<link name="b">{inertial}</link>',
                   '<joint name="ja" type="revolute"><parent link="base"/><child link="a"/>'
                   '</joint>',
                   '<joint name="jb" type="revolute"><parent link="a"/><child link="b"/>'
                   '</joint>')
    messages = inertia_warnings(lambda: kt.compile_tree(kt.load_urdf(source)))
    assert [m.split(":")[0] for m in messages] == ["link 'a'", "link 'b'"]
    assert all("0.05 kg m^2 (16.7% of the largest)" in m for m in messages)


def test_project_inertia_stores_the_consistent_inertia_and_says_so():
    tree = kt.KinematicTree(project_inertia=True)
    messages = inertia_warnings(lambda: tree.add_link("arm2", inertia=LINE))
    assert messages == [f"{LINE_MESSAGE}; projected onto it"]
    np.testing.assert_allclose(tree.graph.nodes["arm2"]["inertia"], np.diag([0.15, 0.15, 0.3]),
                               rtol=0, atol=1e-15)
    assert inertia_warnings(tree.validate) == []


@pytest.mark.parametrize("build", [
    lambda: kt.KinematicTree(strict=True).add_link("arm2", inertia=LINE),
    lambda: kt.KinematicTree.from_graph(_graph_with_arm2(LINE), strict=True),
    lambda: kt.load_urdf(robot('<link name="arm2"><inertial><mass value="1"/><inertia '
                               'ixx="0.1" iyy="0.1" izz="0.3" ixy="0" ixz="0" iyz="0"/>'
                               '</inertial></link>'), strict=True),
])
def test_strict_refuses_what_would_warn(build):
    with pytest.raises(kt.ModelError, match=re.escape(f"{LINE_MESSAGE}; refused because "
                                                      "strict=True")):
        build()


def _graph_with_arm2(inertia):
    graph = graph_of(("j1", "base", "arm2"))
    graph.nodes["arm2"]["inertia"] = inertia
    return graph


@pytest.mark.parametrize("inertia, accepted", [
    (np.diag([0.0, 0.0, 1.0]), True),                  # a line of mass: correction 0.5
    (np.diag([-3.5348e-08, 3.5008e-08, 9.087e-08]), True),  # Tiago's antenna: the floor
    (np.diag([-0.5, 1.0, 1.0]), True),                 # correction 0.5: at the tolerance
    (np.diag([-0.51, 1.0, 1.0]), False),
    (np.diag([-1e-3, 0.0, 0.0]), False),               # no positive moment at all
])
def test_tolerance_boundary(inertia, accepted):
    tree = kt.KinematicTree()
    if accepted:
        assert len(inertia_warnings(lambda: tree.add_link("arm2", inertia=inertia))) == 1
    else:
        with pytest.raises(kt.ModelError, match="more than the tolerance 0.5 x the largest"):
            tree.add_link("arm2", inertia=inertia)


def test_the_warning_is_a_user_warning_users_can_turn_into_an_error():
    assert issubclass(kt.InertiaWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error", kt.InertiaWarning)
        with pytest.raises(kt.InertiaWarning):
            kt.KinematicTree().add_link("arm2", inertia=LINE)


def test_pr2_loads_with_a_warning_per_inconsistent_link_and_strict_refuses_it():
    """pr2.urdf: two sensor links with moments (0.001, 0.001, 0.01)."""
    path = kt.example_robots_dir() / "pr2_description" / "urdf" / "pr2.urdf"
    messages = inertia_warnings(lambda: kt.load_urdf(path))
    assert sorted(m.split(":")[0] for m in messages) == ["link 'double_stereo_link'",
                                                         "link 'sensor_mount_link'"]
    assert all("changes a moment by 0.004 kg m^2 (40.0% of the largest)" in m
               for m in messages)
    with pytest.raises(kt.ModelError, match="refused because strict=True"):
        kt.load_urdf(path, strict=True)
