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
import importlib
import importlib.util
import sys

EXPORTS = {"MotionProblem": "ioc.problem", "SolverOptions": "ioc.direct",
           "estimate_weights": "ioc.estimate", "prepare_trial": "ioc.estimate",
           "read_motion": "ioc.data", "recover_weights": "ioc.inverse_kkt",
           "solve": "ioc.direct"}
"""The names of ``import ioc`` -> the module that defines each, imported at the first use
of one of its names (PEP 562), so that importing a light module of the package (the
command line, ``ioc.models``) does not import the solvers and scipy."""

__all__ = sorted(EXPORTS)


def __getattr__(name):
    """An exported name, from its module (:data:`EXPORTS`)."""
    if name not in EXPORTS:
        raise AttributeError(f"module 'ioc' has no attribute {name!r}")
    return getattr(importlib.import_module(EXPORTS[name]), name)


def __dir__():
    """The module's names and the exported ones."""
    return sorted(set(globals()) | set(EXPORTS))


def lazy_module(name):
    """The module ``name``, executed at the first access to one of its attributes
    (``importlib.util.LazyLoader``; the module as it is if already imported): the command
    line names the solver modules at its top and loads only those its command uses.
    Measured, a fresh ``import ioc.cli``: 1.7-2.2 s with every module loaded, 0.7-1.1 s
    like this."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)    # as an import sets ``ioc.batch``
    return module
