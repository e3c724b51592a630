"""ioc: the optimization layer on the cmtm engine: clamped B-spline motions, sub-costs with
exact gradients from the structured Jacobians, the direct problem (damped Gauss-Newton and
a Newton polish), inverse KKT, weights from noisy data, and the ``cmtm`` command line.

    problem = MotionProblem(model, "joint_velocity,joint_jerk,joint_torque_rate",
                            start=1.57, goal=-1.57)
    result = solve(problem, [1.0, 0.5, 0.01])           # the direct problem
    kkt = recover_weights(problem, result.theta)        # inverse KKT on the optimum
    trial = prepare_trial(model, costs, read_motion(path, model.joint_names))
    estimate = estimate_weights([trial])                 # weights from measured data
"""
from ioc.data import read_motion
from ioc.direct import SolverOptions, solve
from ioc.estimate import estimate_weights, prepare_trial
from ioc.inverse_kkt import recover_weights
from ioc.problem import MotionProblem

__all__ = ["MotionProblem", "SolverOptions", "estimate_weights", "prepare_trial",
           "read_motion", "recover_weights", "solve"]
