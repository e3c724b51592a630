"""Joint and torque subsets, the base wrench and the point terms of ioc.costs.

References: the engine's stacks read directly (cmtm.motion, cmtm.point_motion) for the
values, the "finite_differences" Jacobian source (central differences of the engine's
forward passes) for the stack Jacobians, central differences of the problem's cost for the
gradients, and Flash and Hogan's (1985) closed form for the minimum hand jerk: a straight
line with the quintic speed profile s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5.
"""
import numpy as np
import pytest

import cmtm
import kinematic_trees as kt
from cmtm.naive import rnea_naive
from conftest import random_stack
from ioc.bspline import DD
from ioc.costs import parse_term, parse_terms, stack_orders, term_values
from ioc.direct import solve
from ioc.problem import MotionProblem


@pytest.fixture(scope="module")
def floating():
    """A 4-joint branching tree on a floating base: 10 joints, the six virtual ones first."""
    return kt.compile_tree(kt.random_tree(4, branching=0.5, prismatic_fraction=0.25, seed=2,
                                          floating_base="xyz_zyx"))


def test_subsets_keep_the_named_joints_sorted_and_r_goes_before_or_after(floating):
    names = floating.joint_names
    term = parse_term(f"joint_torque_rate[{names[8]},{names[7]}]", floating)
    assert (term.kind, term.derivative, term.joints, term.size) == ("torque", 1, (7, 8), 2)
    for spec in (f"joint_velocity:2[{names[9]}]", f"joint_velocity[{names[9]}]:2"):
        term = parse_term(spec, floating)
        assert (term.kind, term.derivative, term.joints) == ("joint", 3, (9,))


def test_floating_base_torque_terms_cover_real_joints_and_base_wrench_the_virtual_ones(floating):
    assert kt.floating_base_joints(floating) == (0, 1, 2, 3, 4, 5)
    assert parse_term("joint_torque", floating).joints == (6, 7, 8, 9)
    assert parse_term("joint_torque:2", floating).joints == (6, 7, 8, 9)
    assert parse_term("joint_jerk", floating).joints == tuple(range(10))
    wrench = parse_term("base_wrench:1", floating)
    assert (wrench.kind, wrench.derivative, wrench.joints) == ("torque", 1, (0, 1, 2, 3, 4, 5))
    fixed = kt.compile_tree(kt.serial_chain(3))
    assert parse_term("joint_torque", fixed).joints == (0, 1, 2)


def test_point_terms_resolve_names_and_merged_frames():
    panda = kt.compile_tree(kt.panda())
    term = parse_term("point_jerk[panda_hand_tcp@0,0,0.01;panda_link3@1,-2,3e-1]", panda)
    assert (term.kind, term.derivative, term.size) == ("point", 2, 6)
    (tcp, r_tcp), (link3, r3) = term.points
    assert (tcp, link3, r3) == (6, 2, (1.0, -2.0, 0.3))
    # the hand's TCP frame sits 0.107 + 0.1034 m along link 7's z axis
    np.testing.assert_allclose(r_tcp, (0.0, 0.0, 0.2204), rtol=0, atol=1e-15)
    assert parse_term("point_velocity[panda_link3@0,0,0]:3", panda).derivative == 3


@pytest.mark.parametrize("spec, message", [
    ("joint_torque[nosuch]", "expected joint names of the model"),
    ("joint_torque[]", "expected joint names of the model .*got none"),
    ("joint_jerk[ , ]", "got none"),
    ("link_velocity[]", "expected link names of the model .*got none"),
    ("base_wrench", "expected a model with a floating base"),
    ("point_jerk", r"expected points \[LINK@x,y,z"),
    ("point_jerk[]", r"expected points \[LINK@x,y,z"),
    ("point_jerk[link1]", "expected points LINK@x,y,z, several separated by ';', got 'link1'"),
    ("point_jerk[link1@0,0]", "got 'link1@0,0'"),
    ("point_jerk[link1@0,0,x]", "got 'link1@0,0,x'"),
    ("point_jerk[link1@0,0,0;hand@0,0,0]", "points: expected a link of the model"),
    ("point_jerk[base@0,0,0]", "expected a link that moves, got 'base'"),
    ("point_jerk[link1@0,0,nan]", "expected finite values"),
    ("point_jerk:1[link1@0,0,0]:1", "cost: expected one of"),
    ("joint_acceleration:1", "the ':r' form takes a stack name"),
])
def test_bad_subsets_and_points_are_clear_value_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_term(spec, kt.compile_tree(kt.serial_chain(3)))


# --- values and stack Jacobians --------------------------------------------------------

SPECS = ("joint_velocity[{j7},{j9}]", "joint_torque", "joint_torque_rate[{j6},{j9}]",
         "base_wrench", "base_wrench:1", "point_velocity[{l9}@0.1,0.2,-0.1]",
         "point_jerk[{l7}@0.3,0,0;{l9}@0,0,0]", "point_velocity[{l8}@0,0.5,0]:3")


def specs_of(model):
    names = {f"j{j}": model.joint_names[j] for j in range(6, 10)}
    names.update({f"l{j}": model.link_names[j] for j in range(6, 10)})
    return [spec.format(**names) for spec in SPECS]


def test_term_values_are_the_engine_stacks(floating):
    """The torque terms (alone: no link term) read cmtm.api.torques_and_jacobian's torques
    bit for bit, which are cmtm.motion's up to rounding (1e-13 of the largest, other
    recursions)."""
    terms = parse_terms(specs_of(floating), floating)
    q_stack = random_stack(floating, stack_orders(terms), n_samples=3, seed=1)
    values = [y for y, _ in term_values(floating, terms, q_stack, jacobians=False)]
    tau = cmtm.api.torques_and_jacobian(floating, q_stack[:, :4], order=1, jacobian=False)[0]
    motion = cmtm.motion(floating, q_stack, order=1).tau
    assert np.max(np.abs(tau - motion)) <= 1e-13 * np.max(np.abs(motion))
    np.testing.assert_array_equal(values[0], q_stack[:, 1, [7, 9]])
    np.testing.assert_array_equal(values[1], tau[:, 0, 6:])
    np.testing.assert_array_equal(values[2], tau[:, 1, [6, 9]])
    np.testing.assert_array_equal(values[3], tau[:, 0, :6])
    np.testing.assert_array_equal(values[4], tau[:, 1, :6])
    for y, term in zip(values[5:], terms[5:]):
        r = term.derivative
        expected = cmtm.point_motion(floating, q_stack, term.points, order=r)[:, r]
        np.testing.assert_allclose(y, expected.reshape(3, -1), rtol=1e-14, atol=0)


def test_torque_terms_alone_are_the_naive_rnea(floating):
    """Torque terms without link terms (values from cmtm.api.torques_and_jacobian at order
    0 here): against the naive oracle's RNEA, which shares no code with it (1e-12 of
    max |tau|: two float64 recursions, observed ~1e-16); the same bits with the Jacobians
    asked for (one kernel pass writes both) as without (the torques alone), and the
    Jacobians those of cmtm.jacobians, bit for bit."""
    terms = parse_terms(["joint_torque", "base_wrench"], floating)
    q_stack = random_stack(floating, stack_orders(terms), n_samples=3, seed=4)
    values = [y for y, _ in term_values(floating, terms, q_stack, jacobians=False)]
    tau = rnea_naive(floating, q_stack[:, 0], q_stack[:, 1], q_stack[:, 2])
    scale = np.max(np.abs(tau))
    assert np.max(np.abs(values[0] - tau[:, 6:])) <= 1e-12 * scale
    assert np.max(np.abs(values[1] - tau[:, :6])) <= 1e-12 * scale
    both = term_values(floating, terms, q_stack)
    for y, (y_both, _) in zip(values, both):
        np.testing.assert_array_equal(y_both, y)
    J = cmtm.jacobians(floating, q_stack[:, :3], ("joint_torque",))["joint_torque"][:, 0]
    np.testing.assert_array_equal(both[0][1], J[:, 6:])
    np.testing.assert_array_equal(both[1][1], J[:, :6])


def test_stack_jacobians_match_finite_differences(floating):
    terms = parse_terms(specs_of(floating), floating)
    q_stack = random_stack(floating, stack_orders(terms), n_samples=2, seed=2)
    structured = term_values(floating, terms, q_stack)
    fd = term_values(floating, terms, q_stack, source="finite_differences")
    for term, (_, J), (_, J_fd) in zip(terms, structured, fd):
        # central FD, h = eps**(1/3): ~1e-9 of max|J| for torque stacks
        assert np.max(np.abs(J - J_fd)) <= 1e-7 * np.max(np.abs(J_fd)), term.name


def _fd_gradient(problem, theta, weights, h=1e-6):
    """Central differences of the problem's cost, one control-point entry at a time."""
    base = theta.value()
    grad = np.zeros_like(base)
    for index in np.ndindex(base.shape):
        plus, minus = base.copy(), base.copy()
        plus[index] += h
        minus[index] -= h
        grad[index] = (problem.cost(DD.of(plus), weights)
                       - problem.cost(DD.of(minus), weights)) / (2 * h)
    return grad


@pytest.mark.parametrize("index", range(len(SPECS)), ids=SPECS)
def test_new_term_gradient_matches_central_fd(floating, index):
    spec = specs_of(floating)[index]
    problem = MotionProblem(floating, spec, duration=1.0, samples=5, degree=5,
                            control_points=7, rest_order=0, limits="none",
                            constraints="penalty", penalty=0.0)
    theta = DD.of(np.random.default_rng(3).uniform(-1, 1, (7, floating.nv)))
    gradient = problem.evaluate(theta, [1.0]).grads[0]
    fd = _fd_gradient(problem, theta, [1.0])
    # central FD, h = 1e-6: truncation h^2 |c'''| and round-off eps |c| / h
    assert np.max(np.abs(gradient - fd)) <= 1e-6 * max(np.max(np.abs(fd)), 1.0)


# --- Flash and Hogan: the minimum hand jerk of a planar arm --------------------------------

def test_minimum_hand_jerk_is_a_straight_line_with_the_quintic_speed_profile():
    """point_jerk alone, rest to rest (q', q'' = 0 at both ends), the planar two-link arm
    from q = (0.3, 1.2) to (1.1, 0.6) in 1 s: the hand p(t) = p0 + (p1 - p0) s(t / T).
    Gauss quadrature integrates the jerk of the spline exactly; 50 control points leave
    the discretization's error at ~6e-10 m (seen), below the 1e-6 m asked."""
    arm = kt.compile_tree(kt.two_link_planar())
    problem = MotionProblem(arm, "point_jerk[link2@1,0,0]", duration=1.0, samples=100,
                            control_points=50, start=[0.3, 1.2], goal=[1.1, 0.6],
                            rest_order=2, limits="none", integration="gauss")
    result = solve(problem, [1.0])
    assert result.status == "converged" and result.stationarity_rel <= 1e-9
    times = np.linspace(0.0, 1.0, 401)
    T = cmtm.link_poses(arm, result.sample(times, 0)[:, 0])
    hand = T[:, 1, :3, 0] + T[:, 1, :3, 3]            # (1, 0, 0) in link 2's frame
    p0, p1 = hand[0], hand[-1]
    s = times ** 3 * (10 - 15 * times + 6 * times ** 2)
    assert np.max(np.linalg.norm(hand - (p0 + s[:, None] * (p1 - p0)), axis=1)) <= 1e-6
    direction = (p1 - p0) / np.linalg.norm(p1 - p0)
    off_line = (hand - p0) - np.outer((hand - p0) @ direction, direction)
    assert np.max(np.linalg.norm(off_line, axis=1)) <= 1e-6
    speed = np.linalg.norm(cmtm.point_motion(arm, result.sample(times, 1),
                                             [("link2", (1, 0, 0))])[:, 0, 0], axis=1)
    ds = 30 * times ** 2 * (1 - times) ** 2 * np.linalg.norm(p1 - p0)
    assert np.max(np.abs(speed - ds)) <= 1e-5 * np.max(ds)
