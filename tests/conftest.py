"""Session-wide fixtures: small compiled models shared by every test module.

Numba compiles each kernel once per process (and caches it on disk), so tests share these
models and keep to few samples; the large sizes belong in bench/.
"""
import numpy as np
import pytest

import kinematic_trees as kt
from ioc.direct import solve
from ioc.problem import MotionProblem

PAPER = dict(duration=2.0, samples=200, degree=5, control_points=50, start=1.57, goal=-1.57,
             rest_order=1, limits=(-np.pi, np.pi))
"""The paper's §8.3 setting: T = 2 s, 200 samples, quintic spline, 50 control points,
1.57 -> -1.57 rad with zero end velocities, limits [-pi, pi]."""
CASES = {"a": ("joint_velocity", "joint_acceleration", "joint_jerk"),
         "b": ("joint_velocity", "joint_acceleration", "joint_jerk", "joint_torque"),
         "c": ("joint_velocity", "joint_acceleration", "joint_jerk", "joint_torque",
               "joint_torque_rate")}
PANDA_WEIGHTS = (1.0, 1.0, 1.0, 0.01)
"""The paper's 7-DoF weights: velocity, acceleration, jerk, torque / 100."""


@pytest.fixture(scope="session")
def two_link():
    """The background reference's planar arm, gravity along -y."""
    return kt.compile_tree(kt.two_link_planar(), gravity=(0.0, -9.81, 0.0))


@pytest.fixture(scope="session")
def chain3():
    return kt.compile_tree(kt.serial_chain(3))


@pytest.fixture(scope="session")
def panda():
    return kt.compile_tree(kt.panda())


@pytest.fixture(scope="session")
def tree12():
    """A branching tree with 12 joints, prismatic joints and merged fixed joints."""
    return kt.compile_tree(kt.random_tree(12, branching=0.5, prismatic_fraction=0.3, seed=4))


@pytest.fixture(scope="session")
def jacobian_models(chain3, panda, tree12):
    """The three models on which every Jacobian claim is tested."""
    return {"chain3": chain3, "panda": panda, "tree12": tree12}


def random_stack(model, n_orders, n_samples=None, seed=0, scale=1.0):
    """A random raw derivative stack (n_samples, n_orders, nv) or (n_orders, nv)."""
    rng = np.random.default_rng(seed)
    shape = (n_orders, model.nv) if n_samples is None else (n_samples, n_orders, model.nv)
    return scale * rng.uniform(-1.0, 1.0, size=shape)


@pytest.fixture(scope="session")
def paper_solutions(chain3):
    """The paper's 3-DoF cases (a), (b), (c), equal weights, solved once per session."""
    return {case: solve(MotionProblem(chain3, costs, **PAPER), np.ones(len(costs)))
            for case, costs in CASES.items()}


@pytest.fixture(scope="session")
def panda_solution(panda):
    """The paper's 7-DoF case: case (b)'s terms with the torque weight / 100."""
    return solve(MotionProblem(panda, CASES["b"], **PAPER), PANDA_WEIGHTS)
