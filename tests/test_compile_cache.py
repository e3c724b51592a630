"""cmtm.precompile (cmtm/compile_cache.py): every kernel of the public API compiled into
Numba's cache by several processes at once, each kernel by one process only.

References: the kernels that the public functions actually call and the Numba types of
their arguments (spies on cmtm.api's kernels), Numba's own compile events in a fresh
interpreter (after the units, with the disk cache then switched off, public calls on other
models must compile nothing), and the processes' exit status.
"""
import collections
import json
import subprocess
import sys
from itertools import combinations

import numba
import numpy as np
import pytest
from conftest import API_KERNELS

import kinematic_trees as kt

import cmtm
from cmtm import api, compile_cache, dispatch
from cmtm.compile_cache import UNITS, balanced_groups, check_jobs, small_model_and_stack
from ioc import cli
from ioc.costs import engine_units, parse_terms, stack_orders, term_values


@pytest.fixture
def kernel_calls(monkeypatch):
    """name -> the set of argument types (Numba's) of the calls of each cmtm.api kernel since
    the fixture started (cleared by the test), plus "jacobian_sizes", the one Python caller
    of the cached jacobian_flags. cmtm.api's record of compiled entry points starts empty,
    so that no call goes around the spies."""
    calls = collections.defaultdict(set)

    def spy(name, function):
        def call(*args):
            calls[name].add(tuple(numba.typeof(arg) for arg in args))
            return function(*args)
        return call
    for name in [*API_KERNELS, "jacobian_sizes"]:
        monkeypatch.setattr(api, name, spy(name, getattr(api, name)))
    monkeypatch.setattr(dispatch, "_KERNEL_CALLS", {})
    return calls


def test_units_run_disjoint_kernels_that_cover_the_api(kernel_calls):
    assert len(API_KERNELS) == 10
    model, q_stack = small_model_and_stack()
    for name, unit in UNITS.items():
        kernel_calls.clear()
        unit.calls(model, q_stack)
        expected = set(unit.kernels) | ({"jacobian_sizes"} if "jacobian_kernel" in unit.kernels
                                        else set())
        assert set(kernel_calls) == expected, name
    for (a, unit_a), (b, unit_b) in combinations(UNITS.items(), 2):
        assert not set(unit_a.kernels) & set(unit_b.kernels), (a, b)
    assert sorted(k for unit in UNITS.values() for k in unit.kernels) == list(API_KERNELS)


def input_variants(array):
    """The same array (n_samples, ...) as callers may hold it: plain, read-only, Fortran-ordered,
    strided, integer-valued, one sample without the sample axis."""
    frozen = array.copy()
    frozen.flags.writeable = False
    wide = np.zeros(array.shape[:-1] + (2 * array.shape[-1],))
    wide[..., ::2] = array
    return [array, frozen, np.asfortranarray(array), wide[..., ::2],
            np.rint(array).astype(np.int64), array[0]]


def test_each_kernel_sees_one_signature_over_models_and_inputs(kernel_calls):
    """The premise of cmtm.dispatch.compiled_entry, which calls a kernel's machine code without
    Numba's type checks: the public functions pass every kernel arguments of the same Numba
    types whatever the model, the order and the caller's arrays (and so compile each kernel
    once)."""
    rng = np.random.default_rng(5)
    for tree in (kt.serial_chain(2), kt.random_tree(5, seed=2),
                 kt.serial_chain(2, floating_base="xyz_zyx")):
        model = kt.compile_tree(tree)
        stack = rng.uniform(-1.0, 1.0, (3, 4, model.nv))

        def each(function, K, *args, **kwargs):
            """function(model, variant, ...) for the variants of the K orders of stack (of
            the positions for K None)."""
            for variant in input_variants(stack[:, 0] if K is None else stack[:, :K]):
                function(model, variant, *args, **kwargs)
        each(cmtm.link_poses, None)
        each(cmtm.mass_matrix, None)
        for order in (0, 1):
            each(cmtm.link_transform_derivatives, order + 1, order=order)
            each(cmtm.inverse_dynamics, order + 3, order=order)
            each(cmtm.motion, order + 3, order=order)
            each(cmtm.jacobians, order + 3, cmtm.QUANTITIES, order=order)
            for quantity in cmtm.QUANTITIES:
                each(cmtm.jacobian, cmtm.jacobian_input_orders(quantity, order), quantity,
                     order=order)
            points = [(0, (0.1, 0.2, 0.3)), (model.link_names[-1], [0, 0, 1])]
            each(cmtm.point_motion, order + 2, points, order=order)
            each(cmtm.point_jacobian, order + 2, points, order=order)
    assert set(kernel_calls) == {*API_KERNELS, "jacobian_sizes"}
    assert {name: len(types) for name, types in kernel_calls.items()
            if name != "jacobian_sizes"} == dict.fromkeys(API_KERNELS, 1)


AFTER_UNITS = """
import json, sys
import numpy as np
from numba.core import event
import cmtm, kinematic_trees as kt
from numba.core.caching import NullCache
from numba.core.dispatcher import Dispatcher
from cmtm.compile_cache import UNITS, compile_units
compile_units(list(UNITS))
for module in [m for name, m in sys.modules.items() if name.startswith("cmtm.")]:
    for value in vars(module).values():
        if isinstance(value, Dispatcher):
            value._cache = NullCache()   # a signature the units missed must compile now
compiled = []
class Recorder(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__module__ + "." +
                        ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
models = [kt.compile_tree(kt.panda()), kt.compile_tree(kt.random_tree(9, seed=3)),
          kt.compile_tree(kt.serial_chain(3, floating_base="xyz_zyx"))]
rng = np.random.default_rng(1)
with event.install_listener("numba:compile", Recorder()):
    for model in models:
        stack = rng.uniform(-1, 1, (3, 6, model.nv))
        cmtm.link_poses(model, stack[0, 0])
        cmtm.link_poses(model, stack[:, 0])
        cmtm.mass_matrix(model, stack[:, 0])
        cmtm.link_transform_derivatives(model, stack, order=2)
        for order in (0, 2):
            cmtm.inverse_dynamics(model, stack, order=order)
            cmtm.motion(model, stack, order=order)
            cmtm.jacobians(model, stack, cmtm.QUANTITIES, order=order)
            for quantity in cmtm.QUANTITIES:
                K = cmtm.jacobian_input_orders(quantity, order)
                cmtm.jacobian(model, stack[0, :K], quantity, order=order)
        list(cmtm.jacobian_chunks(model, stack, ("joint_force", "joint_torque"), 1, chunk=2))
        for order in (0, 3):
            cmtm.point_motion(model, stack, [(model.nv - 1, (0, 0, 1))], order=order)
            cmtm.point_jacobian(model, stack[0, :order + 2], [(0, (1, 0, 0))] * 2, order=order)
print(json.dumps(compiled))
"""


def test_after_the_units_public_calls_on_other_models_compile_nothing():
    run = subprocess.run([sys.executable, "-c", AFTER_UNITS], capture_output=True, text=True,
                         env=compile_cache.child_environment())
    assert run.returncode == 0, run.stderr
    compiled = json.loads(run.stdout.splitlines()[-1])
    assert [name for name in compiled if name.startswith("cmtm")] == []


def test_precompile_runs_the_groups_in_processes_and_loads_every_kernel():
    code = ("import json, cmtm\nfrom cmtm import api\nresult = cmtm.precompile(2)\n"
            "print(json.dumps([result['groups'], result['cached'], "
            f"[len(getattr(api, name).overloads) for name in {list(API_KERNELS)!r}]]))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=compile_cache.child_environment())
    assert run.returncode == 0, run.stderr
    groups, cached, overloads = json.loads(run.stdout.splitlines()[-1])
    cold = [name for name in UNITS if name not in cached]
    assert groups == (balanced_groups(2, {name: UNITS[name] for name in cold}) if cold else [])
    assert all(count >= 1 for count in overloads)


PRECOMPILE_TWO_UNITS = """
import json, sys, cmtm
from cmtm import api
from cmtm.compile_cache import UNITS, unit_ready
ready = [unit_ready(name) for name in UNITS]
result = cmtm.precompile(2, ["link poses", "mass matrix"]) if sys.argv[1] == "run" else {}
print(json.dumps([ready, result.get("groups"), result.get("cached"),
                  [len(getattr(api, kernel).overloads) for kernel in sorted(api.__dict__)
                   if kernel.endswith("_kernel")]]))
"""


def test_precompile_compiles_only_cold_units_in_processes(tmp_path):
    """In an empty disk cache, two units are compiled by two processes; an interpreter
    started later finds them ready and starts no process; with the cache's index files
    garbled, nothing counts as ready."""
    env = {**compile_cache.child_environment(), "NUMBA_CACHE_DIR": str(tmp_path)}

    def interpreter(what):
        run = subprocess.run([sys.executable, "-c", PRECOMPILE_TWO_UNITS, what],
                             capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout.splitlines()[-1])
    units = ["link poses", "mass matrix"]
    loaded = [int(kernel in ("crba_kernel", "link_poses_kernel")) for kernel in API_KERNELS]
    ready, groups, cached, overloads = interpreter("run")
    assert not any(ready) and cached == [] and overloads == loaded
    assert sorted(map(sorted, groups)) == [["link poses"], ["mass matrix"]]
    ready, groups, cached, overloads = interpreter("run")
    assert ready == [name in units for name in UNITS]
    assert groups == [] and cached == units and overloads == loaded
    indexes = [index for index in tmp_path.rglob("*.nbi") if "_kernel-" in index.name]
    assert len(indexes) == 2
    for index in indexes:
        index.write_bytes(b"garbled")
    assert not any(interpreter("check")[0])


def test_in_cache_is_false_for_what_it_cannot_read():
    assert not compile_cache.in_cache(lambda: None)      # a kernel under NUMBA_DISABLE_JIT
    uncached = numba.njit(lambda x: x)                   # Numba's NullCache
    uncached(1)
    assert not compile_cache.in_cache(uncached)


def test_units_are_checked():
    assert compile_cache.check_units(None) == list(UNITS)
    assert compile_cache.check_units(["motion", "link poses", "motion"]) == ["motion",
                                                                              "link poses"]
    assert compile_cache.check_units(name for name in ("motion", "link poses")) == [
        "motion", "link poses"]
    assert compile_cache.check_units(()) == []
    for bad, match in (("motion", "list of names"), ([1], "list of names"),
                       (3, "list of names"),
                       (["motion", "nosuch"], "unknown 'nosuch'")):
        with pytest.raises(ValueError, match=match):
            cmtm.precompile(units=bad)


def test_a_failing_process_raises_with_its_output(monkeypatch):
    monkeypatch.setattr(compile_cache, "unit_ready", lambda name: False)
    monkeypatch.setattr(compile_cache, "balanced_groups",
                        lambda jobs, units: [["link poses"], ["no such unit"]])
    with pytest.raises(RuntimeError, match="(?s)no such unit.*KeyError"):
        cmtm.precompile(2)


def kernels_of(units):
    """The cmtm.api kernel names that the precompile units ``units`` run."""
    return {kernel for name in units for kernel in UNITS[name].kernels}


@pytest.mark.parametrize("order", [0, 2])
def test_check_jacobians_precompiles_the_kernels_it_runs(kernel_calls, monkeypatch, order):
    asked = []
    monkeypatch.setattr(cmtm, "precompile", lambda jobs=None, units=None: asked.append(units))
    cli.jacobian_discrepancies(kt.compile_tree(kt.serial_chain(2)), order, 1, 0)
    assert asked == [cli.check_jacobians_units(order)]
    assert set(kernel_calls) - {"jacobian_sizes"} == kernels_of(asked[0])


@pytest.mark.parametrize("costs", ["joint_velocity,joint_jerk", "link_velocity", "joint_torque",
                                   "joint_torque_rate", "link_jerk,joint_torque",
                                   "joint_acceleration,link_acceleration,joint_torque_rate"])
def test_engine_units_are_the_kernels_the_terms_run(kernel_calls, costs):
    model = kt.compile_tree(kt.serial_chain(2))
    terms = parse_terms(costs, model)
    q_stack = np.random.default_rng(3).uniform(-1.0, 1.0, (2, stack_orders(terms), model.nv))
    term_values(model, terms, q_stack)
    assert set(kernel_calls) == kernels_of(engine_units(terms))


class Precompiled(Exception):
    """Raised by the stand-in of cmtm.precompile: the command stops there."""


@pytest.mark.parametrize("command", [
    ["optimize", "--model", "chain2", "--costs", "joint_jerk,joint_torque_rate",
     "--weights", "1,1e-3"],
    ["ioc", "--model", "chain2", "--motion", "MOTION", "--costs", "link_velocity,joint_torque"]])
def test_optimize_and_ioc_precompile_the_kernels_of_their_costs(monkeypatch, tmp_path, command):
    def stand_in(jobs=None, units=None):
        raise Precompiled(units)
    monkeypatch.setattr(cmtm, "precompile", stand_in)
    motion = tmp_path / "motion.csv"
    motion.write_text("time,joint1,joint2\n" + "".join(f"{0.01 * i},{0.1 * i},{-0.1 * i}\n"
                                                        for i in range(40)))
    argv = ["--debug", *[str(motion) if word == "MOTION" else word for word in command]]
    with pytest.raises(Precompiled) as stopped:
        cli.main(argv)
    costs = command[command.index("--costs") + 1]
    model = kt.compile_tree(kt.serial_chain(2))
    assert stopped.value.args[0] == engine_units(parse_terms(costs, model))


@pytest.mark.parametrize("jobs", [1, 2, 3, 4, 7, 10, 40])
def test_groups_partition_the_units_heaviest_first(jobs):
    groups = balanced_groups(jobs)
    assert len(groups) == min(jobs, len(UNITS))
    assert sorted(name for group in groups for name in group) == sorted(UNITS)
    work = [sum(UNITS[name].seconds for name in group) for group in groups]
    assert work == sorted(work, reverse=True)


def test_two_jobs_compile_one_family_each():
    families = [{UNITS[name].family for name in group} for group in balanced_groups(2)]
    assert sorted(families, key=sorted) == [{compile_cache.CMTM}, {compile_cache.WORLD}]
    assert balanced_groups(1) == [list(UNITS)]


def test_jobs_are_checked():
    assert check_jobs(3) == 3
    assert 1 <= check_jobs(None) <= len(UNITS)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="jobs"):
            check_jobs(bad)
