"""Dispatch of the engine's batched kernels over threads and compiled entries: the kernel
model of each checked model (built once per model object), the workspaces (made once per
Python thread and call shape), the chunks of samples that the calling thread and a shared
pool of Python threads claim (the kernels release the GIL), the measured cost per sample
that decides how many chunks a call gets, and the machine code that later calls run
without Numba's dispatch. Results are identical bit for bit for any thread count.

Imports numba, numpy, the kernel model and the overflow error of :mod:`cmtm.validation`.
"""
import queue
import threading
import time

import numba
import numpy as np

from cmtm.kernel_model import kernel_model
from cmtm.validation import MODELS_KEPT, overflow_error


def _memo(cache, key, owner, build, kept):
    """cache[key] = (owner, build()) unless it holds a value built for this very ``owner``
    object (keys hold ids, which Python reuses once an object is gone), and that value;
    the cache is emptied when it reaches ``kept`` entries."""
    entry = cache.get(key)
    if entry is not None and entry[0] is owner:
        return entry[1]
    if len(cache) >= kept:
        cache.clear()
    value = build()
    cache[key] = (owner, value)
    return value


_KERNEL_MODELS = {}
"""id -> (model, its KernelModel) for the last MODELS_KEPT models seen."""


def kernel_model_of(model):
    """The :class:`~cmtm.kernel_model.KernelModel` of a checked model, built once per model
    object (the support arrays take O(n^2) Python work)."""
    return _memo(_KERNEL_MODELS, id(model), model, lambda: kernel_model(model),
                 MODELS_KEPT)


_WORKSPACES = threading.local()
_WORKSPACES_KEPT = 16 * max(1, numba.config.NUMBA_NUM_THREADS)
"""Workspaces kept per Python thread: one per chunk of a call, for 16 call shapes."""


def workspace(kernel, kind, shape_key, allocate):
    """The workspace ``allocate()`` of a kernel model for ``kind`` and ``shape_key``, made
    once per Python thread and reused by every later call with the same key (so that an
    optimizer's repeated calls allocate nothing but their results). Per thread, because
    callers may run the nogil kernels from several Python threads at once."""
    if not hasattr(_WORKSPACES, "cache"):
        _WORKSPACES.cache = {}
    return _memo(_WORKSPACES.cache, (id(kernel), kind, shape_key), kernel, allocate,
                 _WORKSPACES_KEPT)


def thread_slots(n_samples):
    """Most chunks of a call (each with a workspace of its own): one per Numba thread
    (``numba.get_num_threads``, set by ``NUMBA_NUM_THREADS`` or ``numba.set_num_threads``),
    at most one per sample (a workspace can be megabytes); one under NUMBA_DISABLE_JIT
    (Python kernels hold the GIL, and claim their samples without an atomic add:
    ``cmtm._jit.fetch_add``)."""
    if numba.config.DISABLE_JIT:
        return 1
    return max(1, min(numba.get_num_threads(), n_samples))


MIN_CHUNK_SECONDS = 1e-4
"""Least kernel time, by the estimate, that a chunk of samples must hold to run on a thread
of its own: handing a chunk to the pool and collecting it costs 30-70 us on this project's
machine, so a call of less work stays on the calling thread (a 2-sample torque Jacobian of
the Panda: 23 us on one thread, 71 us split in two; 50 samples of its order-1
link-velocity Jacobian: 327 us on one, 214 us on two)."""

_KERNEL_CALLS = {}
"""(id(kernel model), kind, sizes) -> (kernel model, seconds per sample, entry): the cost
per sample of each kernel, the least measured on its own calls, and what to call it by
(:func:`compiled_entry`); emptied at _KERNEL_CALLS_KEPT keys."""
_KERNEL_CALLS_KEPT = 256


def chunk_count(n_samples, seconds_per_sample, slots=None):
    """Chunks of a call: as many as ``slots`` (None: :func:`thread_slots`) and the samples
    allow, each holding at least MIN_CHUNK_SECONDS of work by the estimate
    ``seconds_per_sample``; at least one. The slots are looked up only for work that fills
    two chunks: ``numba.get_num_threads`` took 5 us of a 45 us one-instant call (the
    Panda's order-0 torque Jacobian, measured by leaving it out, alternating)."""
    worth = min(n_samples, int(n_samples * seconds_per_sample / MIN_CHUNK_SECONDS))
    if worth < 2:
        return 1
    return min(worth, thread_slots(n_samples) if slots is None else slots)


BLOCK_SECONDS = 2e-5
"""Work, by the estimate, that a thread claims at a time from a split call's samples
(:func:`run_chunks`): at least one sample. Measured on this project's machine, the
200-sample order-0 torque Jacobian of the Panda (3-4 us per sample) on two threads, six
alternating rounds: speed-up over one thread 1.00-1.55 claiming 1 sample at a time (the
two threads contend for the counter's cache line), 1.06-1.89 with 2, 1.07-1.91 with 4,
1.07-1.99 with 8 and 1.08-1.98 with 16."""


class _Chunk:
    """A chunk of a call handed to a pool thread (:func:`run_chunks`): ``call(*args)`` once,
    on the pool thread that takes it first, unless the calling thread has withdrawn it by
    then. Two locks, not a ``concurrent.futures.Future``: submitting to a
    ThreadPoolExecutor and waiting on its future took 21 and 23 us (medians) of a
    600-sample call of the order-0 torque Jacobian on two threads (3-link chain, 240 us)."""

    __slots__ = ("call", "args", "error", "_taken", "_finished")

    def __init__(self, call, args):
        self.call, self.args, self.error = call, args, None
        self._taken = threading.Lock()
        self._finished = threading.Lock()
        self._finished.acquire()

    def run(self):
        """On a pool thread: the call, unless withdrawn (:meth:`join`); an exception is
        kept for the calling thread."""
        if not self._taken.acquire(blocking=False):
            return
        try:
            self.call(*self.args)
        except BaseException as error:
            self.error = error
        finally:
            self._finished.release()

    def join(self):
        """On the calling thread: withdraw the chunk if no pool thread has started it, else
        wait until it is done (and raise its exception, if any)."""
        if self._taken.acquire(blocking=False):
            return
        self._finished.acquire()
        if self.error is not None:
            raise self.error


_POOL = []
_POOL_LOCK = threading.Lock()


def _serve(chunks):
    """A pool thread's life: run the chunks of ``chunks`` (a queue) as they come."""
    while True:
        chunks.get().run()


def _thread_pool():
    """The queue of chunks of the shared pool of Python threads that runs the chunks after
    the first (created on first use, NUMBA_NUM_THREADS - 1 daemon threads)."""
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(queue.SimpleQueue())
            for index in range(max(1, numba.config.NUMBA_NUM_THREADS - 1)):
                threading.Thread(target=_serve, args=(_POOL[0],), name=f"cmtm-{index}",
                                 daemon=True).start()
        return _POOL[0]


def run_chunks(kernel, kernel_model, works, n_samples, *arrays, start=0, block=1):
    """kernel(kernel_model, work, 0, claim, n_samples, *arrays) for every workspace ``work``
    of ``works`` (slot 0 of each) at the same time: ``works[0]`` on the calling thread, the
    others on the shared thread pool (the kernels release the GIL). The threads share the
    samples start..n_samples-1 through one counter, ``claim`` = [next sample, ``block``]:
    each takes the next ``block`` samples until none is left
    (:func:`cmtm._jit.claim_samples`), so that a thread that starts late or shares its core
    with another process does less of the work. On this project's machine a pool thread
    started running a task a median 140-250 us after it was submitted, and 1.4 ms at the
    90th percentile (three runs of 60 calls, the calling thread busy in a nogil loop): the
    other vCPU has to be woken; on 2026-12-04, 28 us after :class:`_Chunk` queued it
    (median of 200 calls of the 3-link chain's order-0 torque Jacobian, 200 and 600
    samples, one call per millisecond). A chunk that no pool thread has started when the
    calling thread finds no sample left is withdrawn, not waited for (:class:`_Chunk`).
    Returns the seconds per sample of the calling thread's kernel call (the kernel's own
    cost, without handing work to the pool and waiting for it), None if it ran no sample.

    A thread writes only the samples it claims and its own workspace, and every sample
    runs the same instructions whatever thread runs it, so the results are identical bit
    for bit for any thread count. Claimed blocks rather than one fixed share per thread:
    the 200-sample order-0 torque Jacobian's kernel on two threads, alternating rounds,
    speed-up over one thread with one block of half the samples per thread against blocks
    of 4 samples: Panda 0.80-1.77 against 1.03-1.85, 1.08-1.64 against 1.18-1.79 and
    0.85-1.27 against 0.69-1.41 (blocks faster in 6 of 6, 6 of 6 and 7 of 8 rounds);
    32-link chain 1.14-1.72 against 1.52-1.96 and 1.20-1.75 against 1.39-1.95 (5 of 6 and
    4 of 6).
    Plain threads rather than Numba's ``parallel=True``: the same speed-up, and half the
    cold compile time. A workspace of its own per thread rather than one slot each of one
    workspace: neighbouring slots of the small scratch arrays shared cache lines between
    the threads (measured: the 200-sample order-0 torque Jacobian on two threads 8 % faster
    on the Panda, 5 % on a 32-link chain, with the slots 8 apart)."""
    claim = np.array([start, block], dtype=np.int64)
    others = [_Chunk(kernel, (kernel_model, work, 0, claim, n_samples, *arrays))
              for work in works[1:]]
    if others:
        pool = _thread_pool()
        for other in others:
            pool.put(other)
    began = time.perf_counter()
    done = kernel(kernel_model, works[0], 0, claim, n_samples, *arrays)
    seconds = time.perf_counter() - began
    for other in others:
        other.join()
    return seconds / done if done else None


def run_on_threads(model, kernel, kind, sizes, allocate, n_samples, *arrays):
    """A batched kernel over n_samples samples of a checked model: its KernelModel, one
    workspace ``allocate(kernel_model, 1)`` per chunk from the per-thread cache (key:
    ``kind``, the chunk and ``sizes``, what else the workspace's shapes depend on), the
    chunks on threads (:func:`run_chunks`), at most :func:`thread_slots` of them and as
    many as hold MIN_CHUNK_SECONDS of work each (:func:`chunk_count`), each thread claiming
    BLOCK_SECONDS of work at a time. The cost per sample is the least measured on the
    earlier calls of this kernel, model and sizes, by the calling thread
    (:func:`run_chunks`); on the first, sample 0 runs alone, through Numba's dispatcher,
    and is timed, and later calls go straight to the machine code it ran
    (:func:`compiled_entry`). The least, not the last: a call's measurement is only ever
    too long (the thread descheduled, or waiting for the GIL while the pool's thread
    unboxes its chunk's arguments), and one inflated estimate split the next tiny call,
    whose calling-thread chunk then waited for the GIL again and kept the estimate high
    (seen: two 2-sample torque Jacobians of the Panda in a row split in two, in a test
    run on a busy host).

    The cost is the calling thread's kernel time, not the call's wall time: the wall time
    of a split call counts handing the chunks over and waiting for them, which inflated
    the estimate of small calls enough to keep splitting them. Measured through
    cmtm.jacobian, 200 samples, two threads, before this: the order-0 link-velocity
    Jacobian of a 2-link chain estimated 1.3-1.6 us per sample (against ~0.3), stayed split
    in two and took 212-291 us per call, against 100 us on one thread."""
    if not n_samples:
        return
    kmodel = kernel_model_of(model)
    key, start = (id(kmodel), kind, sizes), 0
    known = _KERNEL_CALLS.get(key)
    record = known is None or known[0] is not kmodel    # a new estimate to keep
    if not record:
        seconds_per_sample, entry = known[1], known[2]
    else:
        args = (kmodel, chunk_workspace(kmodel, kind, sizes, allocate, 0), 0,
                np.array([0, 1], dtype=np.int64), 1, *arrays)
        began = time.perf_counter()
        kernel(*args)
        seconds_per_sample, start = time.perf_counter() - began, 1
        entry = compiled_entry(kernel, args)
    if n_samples > start:
        n_chunks = chunk_count(n_samples - start, seconds_per_sample)
        works = [chunk_workspace(kmodel, kind, sizes, allocate, c) for c in range(n_chunks)]
        measured = run_chunks(entry, kmodel, works, n_samples, *arrays, start=start,
                              block=max(1, int(BLOCK_SECONDS / seconds_per_sample)))
        if measured is not None and measured < seconds_per_sample:
            seconds_per_sample, record = measured, True
    if record:
        if len(_KERNEL_CALLS) >= _KERNEL_CALLS_KEPT:
            _KERNEL_CALLS.clear()
        _KERNEL_CALLS[key] = (kmodel, seconds_per_sample, entry)


def run_flagging_finite(name, model, kernel, kind, sizes, allocate, n_samples, *arrays):
    """:func:`run_on_threads` for a kernel that flags, per sample, whether every entry it
    wrote is finite (a bool array after ``arrays``, its last argument), so that no one reads
    an output of megabytes per sample again; the overflow ValueError of ``name`` if a sample
    is not."""
    finite = np.empty(n_samples, dtype=np.bool_)
    run_on_threads(model, kernel, kind, sizes, allocate, n_samples, *arrays, finite)
    if not finite.all():
        raise overflow_error(name)


def compiled_entry(kernel, args):
    """The machine code of ``kernel`` for the types of ``args``, as a callable that skips
    Numba's dispatch (which works out the type of every argument at every call: ~5 us for
    the KernelModel and workspace tuples, a tenth of a one-sample call on this project's
    machine); ``kernel`` itself if it has no compiled version for them or is not a Numba
    dispatcher (NUMBA_DISABLE_JIT, test spies). The entry point does not check the types it
    is given: :func:`run_on_threads` calls it again only with the same KernelModel,
    workspaces of one key, and arrays that the same code made (outputs it allocates, stacks
    that :func:`check_stack` makes C-contiguous, float64 and read-only), so of the same
    types; tests/test_compile_cache.py checks that each kernel sees one signature over
    varied models and inputs."""
    try:
        return kernel.overloads[tuple(numba.typeof(arg) for arg in args)].entry_point
    except (AttributeError, KeyError):
        return kernel


def chunk_workspace(kmodel, kind, sizes, allocate, chunk):
    """The cached workspace ``allocate(kmodel, 1)`` of chunk ``chunk`` (:func:`workspace`,
    key ``(chunk, *sizes)``)."""
    return workspace(kmodel, kind, (chunk, *sizes), lambda: allocate(kmodel, 1))
