"""Inverse KKT on exact optima of our own direct solutions: the paper's Table 7 (its L1
errors 2.56e-8, 6.87e-7, 3.89e-6, 1.07e-7; ours must be <= 1e-9), unequal weights on a
branching URDF tree with a prismatic joint, active limits, and unidentifiable problems."""
from pathlib import Path

import numpy as np
import pytest
from conftest import CASES, PANDA_WEIGHTS

import kinematic_trees as kt
from ioc.direct import solve
from ioc.inverse_kkt import recover_weights
from ioc.problem import MotionProblem

URDF = Path(__file__).parent / "data" / "branching_prismatic.urdf"


def l1_error(estimated, true):
    true = np.asarray(true, dtype=float)
    return float(np.sum(np.abs(estimated - true / true.sum())))


@pytest.fixture(scope="module")
def urdf_tree():
    return kt.compile_tree(kt.load_urdf(URDF))


@pytest.mark.parametrize("case", ["a", "b", "c"])
def test_table7_3dof_weights_recovered_to_1e9(paper_solutions, case):
    result = paper_solutions[case]
    kkt = recover_weights(result.problem, result.theta)
    assert l1_error(kkt.weights, np.ones(len(CASES[case]))) <= 1e-9
    assert kkt.identifiable and kkt.method == "svd"
    assert kkt.residual_rel <= 1e-9
    assert np.isclose(sum(kkt.weights), 1.0, rtol=0, atol=1e-15)


def test_table7_panda_weights_recovered_to_1e9(panda_solution):
    kkt = recover_weights(panda_solution.problem, panda_solution.theta)
    assert l1_error(kkt.weights, PANDA_WEIGHTS) <= 1e-9 and kkt.identifiable


def test_recovered_terms_report_raw_and_weighted_costs(paper_solutions):
    result = paper_solutions["b"]
    kkt = recover_weights(result.problem, result.theta)
    for term, raw in zip(kkt.terms, result.costs):
        assert term["raw"] == pytest.approx(raw, rel=1e-12)
        assert term["weighted"] == pytest.approx(term["weight"] * raw, rel=1e-15)


@pytest.mark.parametrize("costs, weights", [
    (("joint_velocity", "joint_jerk", "joint_torque_rate"), (1.0, 0.05, 0.01)),
    (("link_velocity", "link_acceleration", "joint_torque", "joint_acceleration"),
     (0.2, 1.0, 0.01, 0.5)),
])
def test_unequal_weights_on_branching_urdf_tree_with_prismatic_joint(urdf_tree, costs, weights):
    problem = MotionProblem(urdf_tree, costs, duration=1.5, samples=60, control_points=14,
                            start=[0.5, -0.1, 0.8, -0.6, 0.4],
                            goal=[-0.5, 0.1, -0.4, 0.7, -0.3], rest_order=1)
    result = solve(problem, weights)
    assert result.status == "converged" and result.stationarity_rel <= 1e-11
    kkt = recover_weights(problem, result.theta)
    assert l1_error(kkt.weights, weights) <= 1e-9 and kkt.identifiable


def test_active_limit_gives_a_nonnegative_multiplier_and_the_weights(chain3):
    kwargs = dict(duration=2.0, samples=60, control_points=14, start=[0.0, 1.0, 0.0],
                  goal=[0.0, -1.0, 0.0], rest_order=1)
    costs, weights = ("joint_acceleration", "joint_jerk", "joint_torque"), (1.0, 0.1, 1.0)
    problem = MotionProblem(chain3, costs, limits=([-3, -3, -3], [3, 1.6, 3]), **kwargs)
    result = solve(problem, weights)
    assert result.multipliers, "the limit must be active"
    kkt = recover_weights(problem, result.theta)
    assert l1_error(kkt.weights, weights) <= 1e-9
    assert kkt.multipliers and all(m["value"] >= 0 for m in kkt.multipliers)
    assert kkt.method == "nnls" and kkt.identifiable


def test_penalty_constraints_are_projected_out(chain3):
    costs, weights = ("joint_velocity", "joint_jerk"), (1.0, 0.02)
    problem = MotionProblem(chain3, costs, samples=50, control_points=12, start=0.5,
                            goal=-0.5, constraints="penalty", penalty=1e6, limits="none")
    result = solve(problem, weights)
    kkt = recover_weights(problem, result.theta)
    # the penalty leaves boundary residuals ~ gradient / rho; projection removes them
    assert l1_error(kkt.weights, weights) <= 1e-9


def test_the_same_term_twice_is_not_identifiable(paper_solutions, chain3):
    costs = ("joint_velocity", "joint_velocity", "joint_jerk")
    problem = MotionProblem(chain3, costs, samples=40, control_points=12, start=1.0, goal=-1.0)
    result = solve(problem, (0.5, 0.5, 0.01))
    kkt = recover_weights(problem, result.theta)
    assert not kkt.identifiable
    assert kkt.undetermined and kkt.spectrum[1] < 1e-10


def test_a_term_zero_on_the_motion_is_not_identifiable(chain3):
    """Joint 1 does not move, so link 1's twist S_1 q_1' is zero: its cost and gradient
    vanish and its weight is undetermined."""
    costs = ("joint_velocity", "joint_jerk", "link_velocity[link1]")
    problem = MotionProblem(chain3, costs, samples=40, control_points=12,
                            start=[0.0, 1.0, -1.0], goal=[0.0, -1.0, 1.0])
    result = solve(problem, (1.0, 0.01, 1.0))
    kkt = recover_weights(problem, result.theta)
    assert not kkt.identifiable and kkt.weights[2] == 0.0
    assert any(d["direction"] == {"link_velocity[link1]": 1.0} for d in kkt.undetermined)
