"""The order-0 kernels split across threads (cmtm.rnea, the order-0 torque and link-velocity
Jacobians, the link poses of cmtm.comprehensive): the same bits for any thread count,
workspaces allocated once and reused, nothing allocated inside a kernel.

Reference: the engine itself run on one thread (``numba.set_num_threads(1)``) against all
of ``numba.config.NUMBA_NUM_THREADS`` (the samples claimed block by block by every
thread). Every sample runs the same instructions whatever its thread, so the results must
be equal bit for bit (np.array_equal), not merely close.
"""
import threading
import time

import numba
import numpy as np
import pytest
from conftest import claim_all, random_stack, results_on_threads, run_in_chunks

import cmtm
import kinematic_trees as kt
from cmtm import api, dispatch, rnea
from cmtm._jit import _fetch_add_python, claim_samples
from cmtm.comprehensive import link_poses_kernel, link_poses_workspace
from cmtm.rnea_derivatives import torque_derivatives_kernel, torque_derivatives_workspace
from cmtm.point_motion import point_kernel, point_workspace
from cmtm.velocity_derivatives import velocity_derivatives_kernel, velocity_derivatives_workspace

SAMPLES = 50

ORDER0 = {"inverse_dynamics": lambda model, q: cmtm.inverse_dynamics(model, q, order=0),
          "mass_matrix": lambda model, q: cmtm.mass_matrix(model, q[:, 0]),
          "link_poses": lambda model, q: cmtm.link_poses(model, q[:, 0]),
          "link_velocity_jacobian": lambda model, q: cmtm.jacobian(model, q, "link_velocity"),
          "point_jacobian": lambda model, q: cmtm.point_jacobian(model, q, POINTS)}
KINDS = {"inverse_dynamics": ("rnea", ()), "mass_matrix": ("crba", ()),
         "link_poses": ("link_poses", ()), "link_velocity_jacobian": ("velocity_derivatives", (0,)),
         "point_jacobian": ("point_jacobian", (0,))}
POINTS = [(0, (0.1, 0.2, 0.3)), (3, (0.0, -0.4, 0.2))]
"""Two points of the point Jacobian's calls (links 0 and 3)."""
"""The api's workspace kind and sizes (the order) of each function's kernel."""


def kernel_run(function, kernel, q, n_chunks):
    """The outputs of the kernel behind ``function`` run directly in n_chunks chunks, each
    with a workspace of its own (as cmtm.api runs them)."""
    n_samples, nv = q.shape[0], q.shape[2]
    q0 = np.ascontiguousarray(q[:, 0])
    if function == "inverse_dynamics":
        kernel_call, allocate, args = rnea.rnea_kernel, rnea.rnea_workspace, \
            (q, np.empty((n_samples, nv)))
    elif function == "mass_matrix":
        kernel_call, allocate, args = rnea.crba_kernel, rnea.crba_workspace, \
            (q0, np.empty((n_samples, nv, nv)))
    elif function == "link_velocity_jacobian":
        kernel_call = velocity_derivatives_kernel

        def allocate(kernel_model, n_slots):
            return velocity_derivatives_workspace(kernel_model, 0, n_slots)
        args = (q, np.zeros((n_samples, 1, 6 * nv, 2, nv)), np.empty(n_samples, np.bool_))
    elif function == "point_jacobian":
        kernel_call = point_kernel

        def allocate(kernel_model, n_slots):
            return point_workspace(kernel_model, 0, n_slots)
        link, r = np.array([i for i, _ in POINTS]), np.array([x for _, x in POINTS])
        args = (q, link, r, np.empty((n_samples, 1, 2, 3)),
                np.zeros((n_samples, 1, 6, 2, nv)), np.empty(n_samples, np.bool_))
    else:
        kernel_call, allocate, args = link_poses_kernel, link_poses_workspace, \
            (q0, np.empty((n_samples, nv, 3, 3)), np.empty((n_samples, nv, 3)))
    run_in_chunks(kernel_call, kernel, [allocate(kernel, 1) for _ in range(n_chunks)],
                  n_samples, *args)
    return args[3:] if function == "point_jacobian" else args[1:]


@pytest.mark.parametrize("function", sorted(ORDER0))
def test_order0_results_equal_bit_for_bit_on_one_and_all_threads(panda, function,
                                                                 split_every_call):
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
    first = kernel_run(function, kernel, q, 1)
    for n_chunks in range(2, 8):
        assert all(np.array_equal(a, b) for a, b in zip(first, kernel_run(function, kernel, q,
                                                                          n_chunks)))


@pytest.mark.parametrize("function", sorted(ORDER0))
def test_second_call_reuses_the_cached_workspace(panda, function):
    """The api's per-thread workspace cache holds one object for (kernel model, kind, chunk);
    a second call finds chunk 0's and allocates no new one. The cache starts empty: it is
    emptied whenever it fills (dispatch._WORKSPACES_KEPT), which the tests before this one may
    leave it one entry short of, between this call's chunks."""
    dispatch._WORKSPACES.cache = {}
    q = random_stack(panda, 3, n_samples=SAMPLES, seed=22)
    ORDER0[function](panda, q)
    kernel = api.kernel_model_of(api.check_model(panda))
    kind, sizes = KINDS[function]
    key = (id(kernel), kind, (0,) + sizes)
    first = dispatch._WORKSPACES.cache[key][1]
    ORDER0[function](panda, q)
    assert dispatch._WORKSPACES.cache[key][1] is first

    def allocate():
        raise AssertionError("workspace allocated again")
    assert api.workspace(kernel, kind, key[2], allocate) is first


def test_kernels_allocate_nothing(panda, kernel_allocations):
    """The kernels allocate nothing (NRT counters equal to a no-op's,
    ``conftest.kernel_allocations``), whatever the number of samples or chunks."""
    kernel = api.kernel_model_of(api.check_model(panda))
    for n_samples, n_chunks in ((1, 1), (SAMPLES, 1), (SAMPLES, 2)):
        q = random_stack(panda, 3, n_samples=n_samples, seed=23)
        q0 = np.ascontiguousarray(q[:, 0])
        tau, M = np.empty((n_samples, panda.nv)), np.empty((n_samples, panda.nv, panda.nv))
        J = np.empty((n_samples, panda.nv, 3, panda.nv))
        R, p = np.empty((n_samples, panda.nv, 3, 3)), np.empty((n_samples, panda.nv, 3))
        J_v = np.zeros((n_samples, 1, 6 * panda.nv, 2, panda.nv))
        finite = np.empty(n_samples, dtype=np.bool_)
        point_arrays = (np.array([0, 3]), np.array([x for _, x in POINTS]),
                        np.empty((n_samples, 1, 2, 3)), np.zeros((n_samples, 1, 6, 2, panda.nv)),
                        finite)
        for kernel_call, ws, arrays in (
                (rnea.rnea_kernel, rnea.rnea_workspace(kernel, n_chunks), (q, tau)),
                (rnea.crba_kernel, rnea.crba_workspace(kernel, n_chunks), (q0, M)),
                (torque_derivatives_kernel,
                 torque_derivatives_workspace(kernel, n_chunks), (q, tau, J, finite)),
                (link_poses_kernel, link_poses_workspace(kernel, n_chunks), (q0, R, p)),
                (velocity_derivatives_kernel,
                 velocity_derivatives_workspace(kernel, 0, n_chunks), (q, J_v, finite)),
                (point_kernel, point_workspace(kernel, 0, n_chunks), (q, *point_arrays))):
            last = n_samples // n_chunks                     # the first of n_chunks chunks
            args = (kernel, ws, 0, claim_all(last), last) + arrays
            kernel_count, no_op_count = kernel_allocations(kernel_call, args)
            assert kernel_count == no_op_count, kernel_call.__name__


def test_chunk_count_keeps_little_work_on_one_thread():
    """Chunks hold MIN_CHUNK_SECONDS of estimated work each, at most one per slot and
    sample, at least one."""
    least = api.MIN_CHUNK_SECONDS
    assert api.chunk_count(100, least / 200, 2) == 1           # half a chunk's work
    assert api.chunk_count(100, 2.5 * least / 100, 2) == 2     # two chunks' work
    assert api.chunk_count(100, 8.5 * least / 100, 4) == 4
    assert api.chunk_count(100, 8.5 * least / 100, 2) == 2     # capped by the slots
    assert api.chunk_count(3, 1.0, 8) == 3                     # capped by the samples
    assert api.chunk_count(0, 1.0, 8) == 1


def test_chunk_count_asks_for_the_threads_only_for_work_that_fills_two_chunks(monkeypatch):
    """Without slots given, chunk_count looks up thread_slots (numba.get_num_threads, some
    microseconds) only when the work fills two chunks, and then caps the chunks by it."""
    least = api.MIN_CHUNK_SECONDS

    def no_lookup(n_samples):
        raise AssertionError("thread_slots looked up for a call that cannot split")
    monkeypatch.setattr(dispatch, "thread_slots", no_lookup)
    assert api.chunk_count(100, least / 200) == 1
    assert api.chunk_count(1, 1.0) == 1
    monkeypatch.setattr(dispatch, "thread_slots", lambda n_samples: 3)
    assert api.chunk_count(100, 8.5 * least / 100) == 3
    assert api.chunk_count(100, 2.5 * least / 100) == 2


@numba.njit(nogil=True)
def claim_every_sample(claim, last, hits):
    """hits[s] += 1 for every sample s this thread claims (a batched kernel's loop with no
    work in it); returns how many it claimed."""
    done = 0
    first, stop = claim_samples(claim, last)
    while first < stop:
        for s in range(first, stop):
            hits[s] += 1
        done += stop - first
        first, stop = claim_samples(claim, last)
    return done


@pytest.mark.parametrize("start, block", [(0, 1), (5, 3)])
def test_claimed_blocks_cover_the_samples_once_on_two_threads(start, block):
    """Two threads claiming from one counter at the same time (each with hits of its own):
    every sample from ``start`` to the end is claimed exactly once, none before ``start``.
    Millions of claims, so that the threads overlap and a counter that is not atomic
    (a load, then a store) hands some samples to both (seen: the test failing in each of
    five runs with such a counter planted in ``cmtm._jit``)."""
    n_samples = 10_000_000
    claim = np.array([start, block], dtype=np.int64)
    hits = np.zeros((2, n_samples), dtype=np.uint8)
    claim_every_sample(np.array([0, 1], dtype=np.int64), 1, np.zeros((1,), np.uint8))
    barrier, done = threading.Barrier(2), [0, 0]

    def run(t):
        barrier.wait()
        done[t] = claim_every_sample(claim, n_samples, hits[t])
    threads = [threading.Thread(target=run, args=(t,)) for t in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = hits.sum(axis=0, dtype=np.int64)
    assert (total[:start] == 0).all() and (total[start:] == 1).all()
    assert sum(done) == n_samples - start and min(done) > 0


@pytest.fixture
def chunk_counts(monkeypatch):
    """The number of chunks of every dispatch.run_chunks call made in the test, in order."""
    chunks = []
    run_chunks = api.run_chunks

    def counting(kernel, kernel_model, works, *args, **kwargs):
        chunks.append(len(works))
        return run_chunks(kernel, kernel_model, works, *args, **kwargs)
    monkeypatch.setattr(dispatch, "run_chunks", counting)
    return chunks


def test_small_calls_stay_on_the_calling_thread(panda, chunk_counts):
    """Two samples of the Panda's torque Jacobian are microseconds of work: after the first
    call has measured the cost, no chunk goes to the thread pool."""
    q = random_stack(panda, 3, n_samples=2, seed=24)
    results_on_threads((numba.config.NUMBA_NUM_THREADS,),
                       lambda: [cmtm.jacobian(panda, q, "joint_torque", order=0)
                                for _ in range(3)])
    assert chunk_counts[1:] == [1, 1]


def test_the_cost_estimate_is_the_calling_threads_kernel_time(monkeypatch, chunk_counts):
    """A split call measures the kernel's cost on the calling thread, not the call's wall
    time: here the pool's thread is slow (a stand-in kernel that sleeps 20 ms off the
    calling thread before claiming), which a wall-time estimate (20 ms x 2 threads / 99
    samples) would read as 0.4 ms per sample and keep splitting; the calling thread's
    samples cost microseconds (one block of all of them: BLOCK_SECONDS raised), so the next
    call runs on one thread."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one Numba thread: nothing to split")
    calling_thread = threading.current_thread()
    monkeypatch.setattr(dispatch, "BLOCK_SECONDS", 1.0)
    lock = threading.Lock()

    def kernel(kernel_model, work, slot, claim, last, out):
        if threading.current_thread() is not calling_thread:
            time.sleep(0.02)
        done = 0
        while True:
            with lock:                                  # claim_samples, in Python
                first = _fetch_add_python(claim, int(claim[1]))
            stop = min(first + int(claim[1]), last)
            if first >= stop:
                return done
            out[first:stop] = 1.0
            done += stop - first
    model, out, default = kt.compile_tree(kt.serial_chain(2)), np.zeros(100), \
        api.MIN_CHUNK_SECONDS

    def call(min_chunk_seconds):
        monkeypatch.setattr(dispatch, "MIN_CHUNK_SECONDS", min_chunk_seconds)
        api.run_on_threads(model, kernel, "stand-in", (), lambda *_: None, 100, out)
    results_on_threads((numba.config.NUMBA_NUM_THREADS,),
                       lambda: (call(1e-12), call(default)))  # split, then by the estimate
    assert chunk_counts == [2, 1] and (out == 1.0).all()


def test_a_chunk_that_no_pool_thread_started_is_withdrawn_and_never_runs():
    """dispatch._Chunk: join() before any pool thread took the chunk returns at once, and
    the pool thread that takes it later skips it."""
    calls = []
    chunk = dispatch._Chunk(calls.append, (1,))
    chunk.join()
    chunk.run()
    assert calls == []


def test_joining_a_started_chunk_waits_for_its_end_and_raises_its_error():
    """A chunk a pool thread has taken is waited for (its call's effect seen after join),
    and an exception raised by its call is raised by join on the calling thread."""
    started, calls = threading.Event(), []

    def slow(value):
        started.set()
        time.sleep(0.05)
        calls.append(value)
    chunk = dispatch._Chunk(slow, (2,))
    dispatch._thread_pool().put(chunk)
    assert started.wait(5.0)
    chunk.join()
    assert calls == [2]

    def failing():
        started.set()
        raise ZeroDivisionError("in the pool")
    started.clear()
    chunk = dispatch._Chunk(failing, ())
    dispatch._thread_pool().put(chunk)
    assert started.wait(5.0)
    with pytest.raises(ZeroDivisionError, match="in the pool"):
        chunk.join()
