"""cmtm.point_motion and cmtm.point_jacobian (cmtm/point_motion.py): world velocities
p', ..., p^(k+1) of points fixed to links and their structured Jacobians.

References: the naive oracle of cmtm.naive (forward kinematics of the point in plain
numpy, time derivatives by the Cauchy integral, Jacobians by Richardson-extrapolated
central differences; it shares no code with the engine), the planar two-link arm's hand
path in closed form, central differences of cmtm.point_motion, the exact blocks of §8 and
the same point on a link merged by a fixed joint and on a movable joint held at zero.
Errors are max-abs / max|reference| ("relative").
"""
import numpy as np
import pytest

import cmtm
import kinematic_trees as kt
from cmtm import naive
from conftest import assert_close, random_stack

ORACLE_REL = 1e-10
"""Orders 0-3: the oracle's Cauchy round-off (~1e-14 of max|p| on the circle) amplified by
the Richardson steps; worst seen 3e-13."""


@pytest.fixture(scope="module")
def tree6():
    """Six joints, a branch point, two root children, a prismatic joint (test_oracle.py's)."""
    model = kt.compile_tree(kt.random_tree(6, branching=0.5, prismatic_fraction=0.3, seed=4))
    assert np.sum(model.parent < 0) == 2 and np.sum(model.joint_type == kt.JOINT_PRISMATIC) >= 1
    return model


def points_on_every_link(model, seed=0):
    """One point per link, coordinates uniform in [-0.5, 0.5] m, links by name."""
    rng = np.random.default_rng(seed)
    return [(name, rng.uniform(-0.5, 0.5, 3)) for name in model.link_names]


@pytest.mark.parametrize("order", range(4))
def test_point_motion_matches_naive_oracle(tree6, order):
    q_stack = random_stack(tree6, order + 2, n_samples=2, seed=order)
    points = points_on_every_link(tree6, order)
    expected = naive.oracle_point_stacks(tree6, q_stack, points, order)
    assert_close(cmtm.point_motion(tree6, q_stack, points, order), expected, ORACLE_REL)


@pytest.mark.parametrize("order", range(4))
def test_point_jacobian_matches_naive_oracle(tree6, order):
    q_stack = random_stack(tree6, order + 2, n_samples=2, seed=10 + order)
    points = points_on_every_link(tree6, order)
    expected = naive.oracle_point_jacobian(tree6, q_stack, points, order)
    assert_close(cmtm.point_jacobian(tree6, q_stack, points, order), expected, ORACLE_REL)


def test_oracle_point_positions_are_link_poses_times_the_point(tree6):
    """The oracle's forward kinematics against the engine's link poses (order 0)."""
    q = random_stack(tree6, 1, n_samples=3, seed=5)[:, 0]
    points = points_on_every_link(tree6)
    T = cmtm.link_poses(tree6, q)
    expected = np.stack([T[:, i, :3, :3] @ r + T[:, i, :3, 3]
                         for i, (_, r) in enumerate(points)], 1)
    assert_close(naive.point_positions_naive(tree6, q, points), expected, 1e-14)


# --- the planar arm's hand in closed form -------------------------------------------------

def hand_derivatives(q, qd, qdd, qddd):
    """Closed form of the hand p = e^{i q1} + e^{i (q1 + q2)} (unit links, complex plane):
    d/dt e^{i th} = i th' e^{i th}, then (i th'' - th'^2) e^{i th}, then
    (i th''' - 3 th' th'' - i th'^3) e^{i th}; returns p', p'', p''' as (3, 3) rows."""
    rows = np.zeros((3, 3))
    for th, d1, d2, d3 in ((q[0], qd[0], qdd[0], qddd[0]),
                           (q[0] + q[1], qd[0] + qd[1], qdd[0] + qdd[1], qddd[0] + qddd[1])):
        e = np.exp(1j * th)
        for row, z in enumerate((1j * d1 * e, (1j * d2 - d1 ** 2) * e,
                                 (1j * d3 - 3 * d1 * d2 - 1j * d1 ** 3) * e)):
            rows[row, :2] += z.real, z.imag
    return rows


def test_planar_hand_velocity_acceleration_jerk_match_closed_form():
    arm = kt.compile_tree(kt.two_link_planar())
    q_stack = random_stack(arm, 4, n_samples=5, seed=2)
    motion = cmtm.point_motion(arm, q_stack, [("link2", (1.0, 0.0, 0.0))], order=2)
    for s in range(5):
        # exact trigonometric expressions: rounding only
        assert_close(motion[s, :, 0], hand_derivatives(*q_stack[s]), 1e-14, f"sample {s}")


def test_planar_hand_jacobian_in_rates_is_the_textbook_jacobian():
    """d p' / d q' = [[-s1 - s12, -s12], [c1 + c12, c12], [0, 0]], also d p^(l+1) / d
    q^(l+1) for every l (§8: the top blocks are the ordinary Jacobian)."""
    arm = kt.compile_tree(kt.two_link_planar())
    q_stack = random_stack(arm, 5, n_samples=3, seed=3)
    J = cmtm.point_jacobian(arm, q_stack, [("link2", (1.0, 0.0, 0.0))], order=3)
    for s in range(3):
        q1, q12 = q_stack[s, 0, 0], q_stack[s, 0].sum()
        textbook = np.array([[-np.sin(q1) - np.sin(q12), -np.sin(q12)],
                             [np.cos(q1) + np.cos(q12), np.cos(q12)], [0.0, 0.0]])
        for l in range(4):
            assert_close(J[s, l, :, l + 1, :], textbook, 1e-14, f"sample {s}, l = {l}")


# --- structure and finite differences ----------------------------------------------------

@pytest.mark.parametrize("order", [0, 2])
def test_point_jacobian_matches_central_fd_of_point_motion(tree12, order):
    q_stack = random_stack(tree12, order + 2, n_samples=2, seed=7)
    points = points_on_every_link(tree12, 1)
    J = cmtm.point_jacobian(tree12, q_stack, points, order)
    fd = cmtm.reference.fd_point_jacobian(tree12, q_stack, points, order)
    # central FD, h = eps**(1/3): truncation and round-off ~1e-10 of max|J|
    assert_close(J, fd, 1e-7)


def test_point_jacobian_is_zero_beyond_the_support_and_above_order_l_plus_1(tree12):
    order = 2
    q_stack = random_stack(tree12, order + 2, n_samples=2, seed=8)
    points = points_on_every_link(tree12, 2)
    J = cmtm.point_jacobian(tree12, q_stack, points, order)
    for t in range(tree12.nv):
        support = {t}
        while tree12.parent[min(support)] >= 0:
            support.add(int(tree12.parent[min(support)]))
        others = [j for j in range(tree12.nv) if j not in support]
        assert not np.any(J[:, :, 3 * t:3 * t + 3, :, others])
    for l in range(order + 1):
        assert not np.any(J[:, l, :, l + 2:, :])


def test_point_on_merged_link_equals_point_on_a_joint_held_at_zero():
    """A link merged by a fixed joint (model.frames) against the same link moved by a
    revolute joint whose q, q', ... are zero: same point motion, same Jacobian columns
    for the other joints."""
    fixed = kt.KinematicTree()
    fixed.add_link("base")
    fixed.add_link("arm", mass=1.0, com=(0.5, 0.0, 0.0))
    fixed.add_link("tool", mass=0.2)
    fixed.add_joint("shoulder", "base", "arm", axis=(0, 0, 1))
    fixed.add_joint("mount", "arm", "tool", "fixed", xyz=(1.0, 0.2, 0.0), rpy=(0.3, -0.5, 1.1))
    moving = fixed.copy()
    moving.graph.edges["arm", "tool"]["type"] = "revolute"
    A, B = kt.compile_tree(fixed), kt.compile_tree(moving)
    assert A.frames[0][0] == "tool" and B.link_names == ("arm", "tool")
    q_A = random_stack(A, 4, n_samples=2, seed=9)
    q_B = np.concatenate([q_A, np.zeros_like(q_A)], axis=2)
    point = (0.1, -0.3, 0.4)
    motion_A = cmtm.point_motion(A, q_A, [("tool", point)], order=2)
    motion_B = cmtm.point_motion(B, q_B, [("tool", point)], order=2)
    assert_close(motion_A, motion_B, 1e-14)
    J_A = cmtm.point_jacobian(A, q_A, [("tool", point)], order=2)
    J_B = cmtm.point_jacobian(B, q_B, [("tool", point)], order=2)
    assert_close(J_A, J_B[..., :1], 1e-14)


def test_single_instant_drops_the_sample_axis_and_indices_name_links(tree6):
    q = random_stack(tree6, 3, seed=4)
    by_name = cmtm.point_motion(tree6, q, [(tree6.link_names[3], (0.1, 0.2, 0.3))], order=1)
    by_index = cmtm.point_motion(tree6, q[None], [(3, (0.1, 0.2, 0.3))], order=1)
    assert by_name.shape == (2, 1, 3)
    np.testing.assert_array_equal(by_name, by_index[0])
    assert cmtm.point_jacobian(tree6, q, [(3, (0, 0, 0))], order=1).shape == (2, 3, 3, tree6.nv)


@pytest.mark.parametrize("points, message", [
    ([], r"points: expected a non-empty sequence of \(link, \(x, y, z\)\) pairs"),
    ([("link2", (0, 0))], r"points: expected 3 coordinates \(x, y, z\) for 'link2', got "
                          r"shape \(2,\)"),
    ([("hand", (0, 0, 0))], r"points: expected a link of the model \(link1, link2, or an "
                            r"index in 0..1\), got 'hand'"),
    ([("base", (0, 0, 0))], r"points: expected a link that moves, got 'base', fixed to the base"),
    ([(2, (0, 0, 0))], r"got 2$"),
    ([("link1", (0, np.nan, 0))], r"points: coordinates of 'link1': expected finite values"),
    ([("link1", (0, 0, 0), 1)], r"points: expected a non-empty sequence"),
])
def test_bad_points_are_a_clear_value_error(points, message):
    arm = kt.compile_tree(kt.two_link_planar())
    for function in (cmtm.point_motion, cmtm.point_jacobian):
        with pytest.raises(ValueError, match=message):
            function(arm, np.zeros((2, 2)), points)
