"""ioc.results: result.json written and read back rebuilds the exact problem (gradients
bit-identical, stationarity recomputed equal); atomic writes; reader errors."""
import json

import numpy as np
import pytest

from ioc.direct import SolverOptions, solve
from ioc.models import resolve_model
from ioc.problem import MotionProblem
from ioc.results import load_result, motion_samples, result_record, write_atomically, \
    write_result

CASES = {
    # exact boundary conditions, sampled costs, a limit that binds (a multiplier recorded)
    "exact-limits": dict(spec="chain3", lock={}, costs=("joint_velocity", "joint_torque"),
                         weights=[1.0, 0.01],
                         options=dict(samples=30, control_points=10, start=1.2, goal=-1.2,
                                      limits=(-2.0, 2.0))),
    # penalties, Gauss rule, non-uniform knots, a locked joint, per-joint boundary values
    "penalty-gauss-knots-lock": dict(
        spec="chain3", lock={"joint2": 0.4}, costs=("joint_acceleration", "joint_jerk"),
        weights=[1.0, 0.5],
        options=dict(samples=20, degree=4, control_points=9, duration=1.5, start=[0.5, -0.2],
                     goal=[-0.4, 0.3], rest_order=2, integration="gauss", limits="none",
                     constraints="penalty", penalty=1e8,
                     knots=np.r_[np.zeros(5), 0.2, 0.5, 0.7, 1.1, np.full(5, 1.5)])),
    # ends moving: boundary "data", start and goal stacks (q, q')
    "data-boundary": dict(spec="chain3", lock={}, costs=("joint_jerk", "joint_torque"),
                          weights=[1.0, 0.01],
                          options=dict(samples=20, control_points=10, boundary="data",
                                       start=[[0.5, -0.2, 0.1], [1.0, 0.0, -0.5]],
                                       goal=[[-0.4, 0.3, 0.0], [0.0, 0.5, 0.2]],
                                       limits="none")),
}


@pytest.fixture(scope="module", params=CASES.values(), ids=CASES.keys())
def written(request, tmp_path_factory):
    """A small problem solved, written by write_result and loaded back."""
    case = request.param
    model = resolve_model(case["spec"], case["lock"])
    problem = MotionProblem(model, case["costs"], **case["options"])
    result = solve(problem, case["weights"])
    out = tmp_path_factory.mktemp("result")
    write_result(out, result_record(result, case["spec"], case["lock"]), motion_samples(result))
    return result, load_result(out / "result.json")


def test_load_result_rebuilds_the_problem_and_control_points(written):
    result, (model, problem, weights, theta, record) = written
    original = result.problem
    assert model.joint_names == original.model.joint_names
    assert np.array_equal(theta.hi, result.theta.hi) and np.array_equal(theta.lo, result.theta.lo)
    assert np.array_equal(weights, result.weights)
    assert np.array_equal(problem.spline.knots, original.spline.knots)
    assert np.array_equal(problem.quadrature.times, original.quadrature.times)
    assert np.array_equal(problem.quadrature.weights, original.quadrature.weights)
    assert (problem.constraints, problem.penalty, problem.rest_order, problem.samples,
            problem.boundary) == (original.constraints, original.penalty,
                                  original.rest_order, original.samples, original.boundary)
    for name in ("start", "goal", "lower", "upper"):
        assert np.array_equal(getattr(problem, name), getattr(original, name)), name
    assert record["status"] == result.status


def test_loaded_gradient_is_bit_identical(written):
    result, (_, problem, weights, theta, _) = written
    before = result.problem.evaluate(result.theta, result.weights)
    after = problem.evaluate(theta, weights)
    assert np.array_equal(after.gradient, before.gradient)
    assert np.array_equal(after.costs, before.costs)


def test_recomputed_stationarity_equals_the_recorded_one(written):
    result, (_, problem, weights, theta, record) = written
    # no iterations: solve only evaluates the KKT residual at theta0
    again = solve(problem, weights, theta0=theta, options=SolverOptions(max_iterations=0))
    assert again.stationarity_rel == record["stationarity"]["relative"]
    assert again.stationarity_abs == record["stationarity"]["absolute"]
    assert len(again.multipliers) == len(record["limits"]["multipliers"])


def test_binding_limits_are_recorded_with_multipliers(written):
    result, (*_, record) = written
    if not result.problem.has_limits:
        assert record["limits"]["lower"] == [None] * result.problem.model.nv
        return
    assert record["limits"]["upper"] == [2.0] * 3
    assert record["limits"]["multipliers"] and all(
        m["value"] > 0 and m["bound"] in ("lower", "upper")
        for m in record["limits"]["multipliers"])


@pytest.fixture
def result_file(tmp_path, written):
    """A copy of a written result.json to corrupt."""
    text = json.dumps(written[1][4])
    path = tmp_path / "result.json"
    path.write_text(text, encoding="utf-8")
    return path, json.loads(text)


@pytest.mark.parametrize("change, message", [
    (lambda r: r.pop("knots"), "expected the key 'knots'"),
    (lambda r: r["quadrature"].pop("rule"), "expected the key 'quadrature.rule'"),
    (lambda r: r.update(schema=99), "of schema 1"),
    (lambda r: r.update(model="chain4"), "expected joints"),
    (lambda r: r.update(control_points_lo=[[0.0]]), "control_points_lo of shape"),
])
def test_load_result_rejects_a_damaged_record(result_file, change, message):
    path, record = result_file
    change(record)
    path.write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_result(path)


def test_load_result_rejects_a_file_that_is_not_json(tmp_path):
    path = tmp_path / "result.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="expected JSON"):
        load_result(tmp_path)


def test_write_atomically_keeps_the_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "result.json"
    path.write_text("old", encoding="utf-8")

    def fail(file):
        file.write("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomically(path, fail)
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]
