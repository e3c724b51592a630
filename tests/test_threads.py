"""The order-0 kernels split across threads (cmtm.rnea): the same bits for any thread count,
workspaces allocated once and reused, nothing allocated inside a kernel.

Reference: the engine itself run on one thread (``numba.set_num_threads(1)``, one chunk of
samples) against all of ``numba.config.NUMBA_NUM_THREADS`` (one chunk per thread). Every
sample runs the same instructions whatever its chunk, so the results must be equal bit
for bit (np.array_equal), not merely close.
"""
import numba
import numpy as np
import pytest
from conftest import random_stack

import cmtm
import kinematic_trees as kt
from cmtm import api, rnea
from cmtm.rnea_derivatives import torque_derivatives_kernel, torque_derivatives_workspace

SAMPLES = 50

ORDER0 = {"inverse_dynamics": lambda model, q: cmtm.inverse_dynamics(model, q, order=0),
          "mass_matrix": lambda model, q: cmtm.mass_matrix(model, q[:, 0])}
KINDS = {"inverse_dynamics": "rnea", "mass_matrix": "crba"}


def results_on_threads(thread_counts, call):
    """[call() with n Numba threads for n in thread_counts]; the count (per calling
    thread) is restored afterwards."""
    before = numba.get_num_threads()
    results = []
    try:
        for n in thread_counts:
            numba.set_num_threads(n)
            results.append(call())
    finally:
        numba.set_num_threads(before)
    return results


@pytest.mark.parametrize("function", sorted(ORDER0))
def test_order0_results_equal_bit_for_bit_on_one_and_all_threads(panda, function):
    """Panda, 50 samples: one chunk on one thread vs one chunk per Numba thread."""
    q = random_stack(panda, 3, n_samples=SAMPLES, seed=21, scale=2.0)
    single, threaded = results_on_threads((1, numba.config.NUMBA_NUM_THREADS),
                                          lambda: ORDER0[function](panda, q))
    assert np.array_equal(single, threaded)


@pytest.mark.parametrize("function", sorted(ORDER0))
def test_order0_results_do_not_depend_on_the_chunking(function):
    """A branching tree with prismatic joints, 7 samples in 1..7 chunks of the workspace
    (the kernel called directly: more chunks than threads is allowed)."""
    model = api.check_model(kt.compile_tree(kt.random_tree(12, branching=0.5,
                                                           prismatic_fraction=0.3, seed=4)))
    kernel = api.kernel_model_of(model)
    q = random_stack(model, 3, n_samples=7, seed=3)
    results = []
    for n_chunks in range(1, 8):
        if function == "inverse_dynamics":
            out = np.empty((7, model.nv))
            api.run_chunks(rnea.rnea_kernel, kernel, rnea.rnea_workspace(kernel, n_chunks),
                           n_chunks, 7, q, out)
        else:
            out = np.empty((7, model.nv, model.nv))
            api.run_chunks(rnea.crba_kernel, kernel, rnea.crba_workspace(kernel, n_chunks),
                           n_chunks, 7, np.ascontiguousarray(q[:, 0]), out)
        results.append(out)
    assert all(np.array_equal(results[0], result) for result in results[1:])


@pytest.mark.parametrize("function", sorted(ORDER0))
def test_second_call_reuses_the_cached_workspace(panda, function):
    """The api's per-thread workspace cache holds one object for (kernel model, kind, number
    of chunks); a second call finds it and allocates no new one."""
    q = random_stack(panda, 3, n_samples=SAMPLES, seed=22)
    ORDER0[function](panda, q)
    kernel = api.kernel_model_of(api.check_model(panda))
    key = (id(kernel), KINDS[function], api.thread_chunks(SAMPLES))
    first = api._WORKSPACES.cache[key][1]
    ORDER0[function](panda, q)
    assert api._WORKSPACES.cache[key][1] is first

    def allocate():
        raise AssertionError("workspace allocated again")
    assert api.workspace(kernel, KINDS[function], key[2], allocate) is first


def test_kernels_allocate_nothing(panda):
    """Numba's NRT allocation counters over a kernel call equal those of a no-op jit
    function taking the same arguments (the meminfos of the unboxed arrays): the kernels
    themselves allocate nothing, whatever the number of samples or chunks."""
    nrt = pytest.importorskip("numba.core.runtime._nrt_python")
    from numba.core.runtime import rtsys
    if not hasattr(nrt, "memsys_enable_stats"):
        pytest.skip("this Numba has no NRT allocation statistics")

    @numba.njit
    def no_op(model, ws, chunk, first, last, q, out):
        pass

    def allocations(call):
        before = rtsys.get_allocation_stats().alloc
        call()
        return rtsys.get_allocation_stats().alloc - before

    kernel = api.kernel_model_of(api.check_model(panda))
    was_enabled = nrt.memsys_stats_enabled()
    nrt.memsys_enable_stats()
    try:
        for n_samples, n_chunks in ((1, 1), (SAMPLES, 1), (SAMPLES, 2)):
            q = random_stack(panda, 3, n_samples=n_samples, seed=23)
            q0 = np.ascontiguousarray(q[:, 0])
            tau, M = np.empty((n_samples, panda.nv)), np.empty((n_samples, panda.nv, panda.nv))
            J = np.empty((n_samples, panda.nv, 3, panda.nv))
            for kernel_call, ws, x, out in (
                    (rnea.rnea_kernel, rnea.rnea_workspace(kernel, n_chunks), q, tau),
                    (rnea.crba_kernel, rnea.crba_workspace(kernel, n_chunks), q0, M),
                    (torque_derivatives_kernel,
                     torque_derivatives_workspace(kernel, n_chunks), q, J)):
                last = n_samples // n_chunks        # chunk 0 of n_chunks
                kernel_call(kernel, ws, 0, 0, last, x, out)   # compiled outside the count
                no_op(kernel, ws, 0, 0, last, x, out)
                assert allocations(lambda: kernel_call(kernel, ws, 0, 0, last, x, out)) == \
                    allocations(lambda: no_op(kernel, ws, 0, 0, last, x, out)), \
                    kernel_call.__name__
    finally:
        if not was_enabled:
            nrt.memsys_disable_stats()
