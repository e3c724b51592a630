"""The engine's Numba options (cmtm._jit): every kernel and helper is compiled without
fastmath, with the GIL released and without Numba's runtime; only the conveniences that
return a new array (``jit_allocating``) have the runtime. Only the functions that Python
calls are cached on disk and have a Python entry point: the kernels of cmtm.api, the two
functions that Python calls besides them, and the allocating conveniences; the helpers only
kernels call have neither, nor machine code of their own: their LLVM modules are linked into
the kernels.

References: the options Numba records on each dispatcher of every cmtm module, the
compiler itself (an allocation under the kernels' options must not compile), and the
modules Numba hands to its JIT engine.
"""
import gc
import importlib
import pkgutil

import numba
import numpy as np
import pytest
from conftest import API_KERNELS, python_entry
from numba.core.dispatcher import Dispatcher
from numba.core.errors import TypingError

import cmtm
from cmtm._jit import TARGET_OPTIONS, HelperCodeLibrary, HelperDispatcher, KernelDispatcher, jit
from cmtm.spatial import motion_cross_add

ALLOCATING = {
    "cmtm.cmtm_matrix.velocity_crosses", "cmtm.cmtm_matrix.cmtm_blocks", "cmtm.spatial.skew",
    "cmtm.spatial.motion_transform_inverse", "cmtm.spatial.joint_screw",
    "cmtm.reference.motion_cross", "cmtm.reference.force_cross",
    "cmtm.reference.motion_transform", "cmtm.reference.cmtm_inverse_blocks",
    "cmtm.reference.comprehensive_velocity"}
"""The jitted functions that return a new array (decorated ``jit_allocating``)."""
LEAVES = {"cmtm.spatial.matvec6", "cmtm.spatial.matTvec6", "cmtm.spatial.motion_cross_add",
          "cmtm.spatial.force_cross_add", "cmtm.taylor.conv_block_vec",
          "cmtm.taylor.motion_cross_conv", "cmtm.taylor.force_cross_conv",
          "cmtm.velocity_derivatives.body_columns",
          "cmtm.velocity_derivatives.comoving_columns", "cmtm.rnea_derivatives.inertia_add",
          "cmtm.rnea_derivatives.inertia_rate_add", "cmtm.rnea_derivatives.all_within",
          "cmtm.rnea_derivatives.joint_torques", "cmtm.torque_jacobian.joint_torque_jets",
          "cmtm._jit.claim_samples", "cmtm._jit.index_range",
          "cmtm.torque_jacobian.dot6_columns", "cmtm.torque_jacobian.scaled_columns",
          "cmtm.spatial.cross3_add", "cmtm.point_motion.point_jet",
          "cmtm.point_motion.column_jet", "cmtm.rnea.link_pose_in_parent",
          "cmtm.rnea.world_pose", "cmtm.rnea.composite_inertia_to_parent_add",
          "cmtm.rnea_derivatives.world_screw", "cmtm.rnea_derivatives.inertia_times6",
          "cmtm.spatial.motion_cross6", "cmtm.spatial.force_cross6",
          "cmtm.rnea_derivatives.plus_scaled6", "cmtm.rnea_derivatives.vector6",
          "cmtm.rnea_derivatives.store6", "cmtm.rnea_derivatives.zero_inertia_parts",
          "cmtm.rnea_derivatives.link_acceleration"}
"""The helpers LLVM always inlines (decorated ``jit_leaf``)."""
CALLED_FROM_PYTHON = {"cmtm.kinematics.joint_geometry",
                      "cmtm.structured_jacobians.jacobian_flags"}
"""Besides the kernels: kernel_model fills the joint geometry, jacobian_sizes reads the flags."""


def engine_dispatchers():
    """{dotted name: dispatcher} of every jitted function defined in a cmtm module."""
    found = {}
    for info in pkgutil.iter_modules(cmtm.__path__):
        module = importlib.import_module(f"cmtm.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, Dispatcher) and value.py_func.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = value
    return found


def test_runtime_and_cache_options_of_every_dispatcher():
    dispatchers = engine_dispatchers()
    assert len(dispatchers) > 100 and ALLOCATING <= set(dispatchers)
    for name, dispatcher in dispatchers.items():
        options = dispatcher.targetoptions
        assert options["_nrt"] is (name in ALLOCATING), name
        assert options["fastmath"] is False and options["nogil"] is True, name
        cached = type(dispatcher._cache).__name__ == "FunctionCache"
        called_from_python = name in ALLOCATING | CALLED_FROM_PYTHON | api_kernels()
        assert cached is called_from_python, name
        assert options.get("no_cpython_wrapper", False) is not called_from_python, name
        assert isinstance(dispatcher, HelperDispatcher) is not called_from_python, name
        assert isinstance(dispatcher, KernelDispatcher) is called_from_python, name
        assert options.get("forceinline", False) is (name in LEAVES), name


@pytest.mark.parametrize("enabled", [True, False])
def test_a_kernel_compiles_with_the_collector_paused(monkeypatch, enabled):
    """KernelDispatcher.compile runs Numba's compile with the cyclic collector off and
    leaves it as it found it, also when the compile fails."""
    seen, compile_ = [], numba.core.registry.CPUDispatcher.compile

    def spy(self, sig):
        seen.append(gc.isenabled())
        return compile_(self, sig)
    monkeypatch.setattr(numba.core.registry.CPUDispatcher, "compile", spy)

    def twice(x):
        return 2.0 * x
    kernel = KernelDispatcher(twice, targetoptions={**TARGET_OPTIONS, "nopython": True})
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert kernel(1.5) == 3.0
        assert seen == [False] and gc.isenabled() is enabled
        with pytest.raises(TypingError):
            kernel("text")
        assert seen == [False, False] and gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_a_helper_called_from_python_raises_instead_of_crashing():
    """A helper has no Python entry point: its dispatcher raises TypeError (calling the
    missing wrapper would crash the interpreter); from jitted code it runs."""
    a, b = np.array([0.0, 0.0, 1.0, 1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0, 1.0, 0.0])
    out = np.zeros(6)
    with pytest.raises(TypeError, match="cmtm.spatial.motion_cross_add is a kernel helper"):
        motion_cross_add(a, b, 1.0, out)
    python_entry(motion_cross_add)(a, b, 1.0, out)
    # [w; u] x [w'; u'] = [w x w'; w x u' + u x w'] with w = e3, u = e1, w' = e1, u' = e2
    assert np.array_equal(out, [0.0, 1.0, 0.0, -1.0, 0.0, 0.0])


def api_kernels():
    """Dotted names of the kernels cmtm.api calls."""
    return {f"{value.py_func.__module__}.{name}" for name, value in API_KERNELS.items()}


def test_the_kernels_are_the_ten_of_the_api():
    assert len(api_kernels()) == 10 and api_kernels() <= set(engine_dispatchers())


def test_an_allocation_under_the_kernel_options_does_not_compile():
    def ramp(n):
        out = np.empty(n)
        for i in range(n):
            out[i] = i
        return out

    with pytest.raises(TypingError):
        numba.njit(**TARGET_OPTIONS)(ramp)(3)
    assert np.array_equal(numba.njit(**{**TARGET_OPTIONS, "_nrt": True})(ramp)(3),
                          [0.0, 1.0, 2.0])


def test_only_the_caller_of_a_helper_gets_machine_code(monkeypatch):
    """Numba hands a finalized library's module to its JIT engine, which emits machine code;
    a helper's library (cmtm._jit.HelperCodeLibrary) is finalized without that, and its
    optimized module is linked into its callers, which run it."""
    def twice_plus(x, out):
        for i in range(x.shape[0]):
            out[i] += 2.0 * x[i]
    helper = jit(twice_plus)
    codegen = numba.core.registry.cpu_target.target_context.codegen()
    added, add_module = [], codegen._add_module
    monkeypatch.setattr(codegen, "_add_module",
                        lambda module: added.append(module.name) or add_module(module))
    out = np.ones(3)
    python_entry(helper)(np.array([1.0, 2.0, 3.0]), out)
    assert np.array_equal(out, [3.0, 5.0, 7.0])
    (library,) = [overload.library for overload in helper.overloads.values()]
    assert isinstance(library, HelperCodeLibrary) and library._finalized
    assert any("python_entry" in name for name in added), added
    assert not any("twice_plus" in name for name in added), added
