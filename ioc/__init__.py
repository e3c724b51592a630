"""ioc: the optimization layer on the cmtm engine: clamped B-spline motions, sub-costs with
exact gradients from the structured Jacobians, the direct problem (damped Gauss-Newton and
a Newton polish), inverse KKT, weights from noisy data, and the ``cmtm`` command line.

    problem = MotionProblem(model, "joint_velocity,joint_jerk,joint_torque_rate",
                            start=1.57, goal=-1.57)
    result = solve(problem, [1.0, 0.5, 0.01])           # the direct problem
    kkt = recover_weights(problem, result.theta)        # inverse KKT on the optimum
    trial = prepare_trial(model, costs, read_motion(path, model.joint_names))
    estimate = estimate_weights([trial])                 # weights from measured data

Its groups, lowest first, each importing only the groups before it (tests/test_layering.py):
``ioc.spline`` (B-splines, banded systems), ``ioc.optimize`` (costs, the direct problem and
its solver), ``ioc.files`` (models, measured data, result and weight files),
``ioc.inverse`` (inverse KKT, weights from data), ``ioc.show`` (drawings, figures, the motion
page) and ``ioc.commands`` (the ``cmtm`` command line). ``ioc.choices`` and ``ioc._blas``, at
the top, import nothing of ioc.
"""
import importlib
import importlib.abc
import importlib.util
import sys

EXPORTS = {"MotionProblem": "ioc.optimize.problem", "SolverOptions": "ioc.optimize.direct",
           "estimate_weights": "ioc.inverse.estimate", "prepare_trial": "ioc.inverse.estimate",
           "read_motion": "ioc.files.data", "recover_weights": "ioc.inverse.inverse_kkt",
           "solve": "ioc.optimize.direct"}
"""The names of ``import ioc`` -> the module that defines each, imported at the first use
of one of its names (PEP 562), so that importing a light module of the package (the
command line, ``ioc.files.models``) does not import the solvers and scipy."""

__all__ = sorted(EXPORTS)


def __getattr__(name):
    """An exported name, from its module (:data:`EXPORTS`), or a module by its old path
    (``ioc.data`` is ioc.files.data: :data:`MOVED`)."""
    if f"ioc.{name}" in MOVED:
        return importlib.import_module(f"ioc.{name}")
    if name not in EXPORTS:
        raise AttributeError(f"module 'ioc' has no attribute {name!r}")
    return getattr(importlib.import_module(EXPORTS[name]), name)


def __dir__():
    """The module's names and the exported ones."""
    return sorted(set(globals()) | set(EXPORTS))


MOVED = {
    "ioc.bspline": "ioc.spline.bspline", "ioc.banded": "ioc.spline.banded",
    "ioc.costs": "ioc.optimize.costs", "ioc.problem": "ioc.optimize.problem",
    "ioc.direct": "ioc.optimize.direct", "ioc.models": "ioc.files.models",
    "ioc.data": "ioc.files.data", "ioc.results": "ioc.files.results",
    "ioc.weights_io": "ioc.files.weights_io", "ioc.inverse_kkt": "ioc.inverse.inverse_kkt",
    "ioc.estimate": "ioc.inverse.estimate", "ioc.drawing": "ioc.show.drawing",
    "ioc.plots": "ioc.show.plots", "ioc.view": "ioc.show.view",
    "ioc.messages": "ioc.commands.messages", "ioc.demo": "ioc.commands.demo",
    "ioc.batch": "ioc.commands.batch", "ioc.cli": "ioc.commands.cli"}
"""The modules' paths before ioc was grouped (issue 41) -> their paths now. An old path
imports the module itself (:class:`MovedModuleFinder`): ``import ioc.problem`` and
``from ioc.problem import MotionProblem`` keep working, and give one module object under
both names, so that patching either patches both; ``python -m ioc.cli`` runs the command
line."""


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED`, first on ``sys.meta_path``: before an editable
    install's finder, which would find the old files of the checkout it points at."""

    def find_spec(self, fullname, path=None, target=None):
        """The spec of an old path: loaded by :class:`MovedModuleLoader`."""
        if fullname not in MOVED:
            return None
        moved = importlib.util.find_spec(MOVED[fullname])
        return importlib.util.spec_from_loader(fullname, MovedModuleLoader(moved),
                                               origin=moved.origin)


class MovedModuleLoader(importlib.abc.Loader):
    """Loads an old path as the moved module itself (imported under its own name first)."""

    def __init__(self, moved):
        self.moved = moved

    def create_module(self, spec):
        """The moved module, imported."""
        module = importlib.import_module(self.moved.name)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module):
        """Nothing to run; the module's own spec back (the import system has set the old
        path's)."""
        module.__spec__ = self.own_spec

    def get_code(self, fullname):
        """The moved module's code, for ``python -m OLD.PATH`` (runpy)."""
        return self.moved.loader.get_code(self.moved.name)


if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, MovedModuleFinder())


def lazy_module(name):
    """The module ``name``, executed at the first access to one of its attributes
    (``importlib.util.LazyLoader``; the module as it is if already imported): the command
    line names the solver modules at its top and loads only those its command uses.
    Measured, a fresh ``import ioc.cli`` (now ioc.commands.cli): 1.7-2.2 s with every
    module loaded, 0.7-1.1 s like this. An old path of :data:`MOVED` gives the moved
    module."""
    name = MOVED.get(name, name)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)    # as an import sets ``ioc.commands.batch``
    return module
