"""The one place that fixes Numba's options for every kernel of the engine.

All kernels are float64, compiled on first call and cached on disk (``cache=True``);
``fastmath`` stays off so that results are reproducible and comparisons against
Pinocchio and finite differences stay meaningful. Numba's default error model is kept;
public wrappers validate inputs and check outputs with ``np.isfinite``.

Kernels are compiled without Numba's runtime (NRT, ``_nrt=False``): they cannot allocate
(``np.empty`` in a kernel is a compile error, so "no allocation in hot loops" is enforced
by the compiler) and carry no reference counting. Every array they touch is an argument,
held by the caller for the whole call. Without NRT, Numba emits no incref/decref for the
arrays of the KernelModel and workspace NamedTuples at every inlined call and view (in the
order-0 torque kernel's LLVM IR they were 1,800 runtime calls and 26,000 extractvalue
instructions out of 47,000 lines). Measured cold compile of every public function together
in one interpreter, same run: 38.6 s -> 33.0 s; results identical bit for bit.
"""
import gc

import numba
from numba.core import codegen, compiler, types
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic

TARGET_OPTIONS = dict(fastmath=False, nogil=True, _nrt=False)
"""What every kernel and helper is compiled with."""


class KernelDispatcher(CPUDispatcher):
    """Numba's dispatcher for the functions Python calls, which compiles (or loads from the
    disk cache) with Python's cyclic garbage collector paused, then turns it on again if it
    was on before (nested compiles, and a caller who turned it off, are left as they were).

    Numba's compiler makes millions of Python objects, many of which stay alive until the
    compile ends, so each of the collector's full passes walks a larger heap: in a cold
    compile of the CMTM family of kernels (``cmtm.compile_cache``) the collector took ~10 %
    of ``perf``'s samples (``gc_collect_main``, ``visit_decref``, ``visit_reachable`` ...).
    Measured with ``gc.callbacks`` in fresh processes, cold cache, on this project's 2-core
    machine, time in the collector: that family 1.8 -> 0.6 s; every public kernel in one
    process 3.5-4.4 -> 1.2-1.4 s (full passes 23 -> 1). The compile of all of them in one
    process, five alternating pairs, 36.3-41.8 s (median 37.4) -> 35.6-37.5 s (median 36.2),
    faster in each pair; ``cmtm.precompile()`` (two processes at once): no difference within
    the noise of three pairs. Peak resident memory of the CMTM family's process 285 -> 346
    MB. The garbage is freed by the collector's first pass after the compile. Paused inside
    Numba's compiler lock, so that compiles on several Python threads take turns at it.
    """

    def compile(self, sig):
        with global_compiler_lock:
            was_enabled = gc.isenabled()
            gc.disable()
            try:
                return super().compile(sig)
            finally:
                if was_enabled:
                    gc.enable()


def numba_decorator(dispatcher_class, targetoptions, cache=False, **dispatcher_args):
    """Decorator: a ``dispatcher_class`` of the function, compiled in nopython mode with
    ``targetoptions`` and cached on disk if ``cache`` (the plain function itself when
    NUMBA_DISABLE_JIT is set, as numba.njit does); what :func:`python_callable` and
    :func:`helper` make."""
    def decorate(py_func):
        if numba.config.DISABLE_JIT:
            return py_func
        options = {**targetoptions, "nopython": True}
        dispatcher = dispatcher_class(py_func, targetoptions=options, **dispatcher_args)
        if cache:
            dispatcher.enable_caching()
        return dispatcher
    return decorate


def python_callable(**options):
    """Decorator: a :class:`KernelDispatcher` with TARGET_OPTIONS and ``options``, cached
    on disk, for the functions Python calls (``jit_kernel``, ``jit_allocating``). Each
    kernel is compiled by one process only when :func:`cmtm.compile_cache.precompile` fills
    the cache with several processes: Numba's cache index is not safe against two processes
    writing different signatures of one function at the same time, and helpers, compiled by
    every process that needs them, write no index."""
    return numba_decorator(KernelDispatcher, {**TARGET_OPTIONS, **options}, cache=True)


jit_kernel = python_callable()
"""The kernels: the functions Python calls (``cmtm.api``, ``cmtm.kernel_model``)."""

HELPER_OPTIONS = {**TARGET_OPTIONS, "no_cpython_wrapper": True, "no_cfunc_wrapper": True,
                  "forceinline": False}
"""Numba target options of the helpers (``jit``, ``jit_inline``, ``jit_leaf``): the
functions only kernels call. ``forceinline`` is set (False but for ``jit_leaf``) because
Numba otherwise inherits it from the function being compiled when a helper is first met.

Not cached on disk: a kernel's cache holds the machine code of every helper linked into it,
so a process that loads the kernels from the cache never compiles a helper, and only the
kernels' cache files are written (~75 helper files fewer in a cold compile).

No Python entry point (``no_cpython_wrapper``, ``no_cfunc_wrapper``): Numba would otherwise
generate and compile, for every helper, a wrapper that unboxes each argument from Python
objects, which no kernel uses. Measured cold compile of every public function together in
one interpreter, alternating runs: 27.7 / 25.7 s with the wrappers, 24.2 / 22.9 s without.
A helper therefore cannot be called from Python: its dispatcher (:class:`HelperDispatcher`)
raises TypeError instead of jumping to a wrapper that does not exist."""


class EnvironmentFreeCodegen:
    """Numba's codegen as a helper's library shows it: ``set_env``, which writes a
    function's environment pointer into its machine code, does nothing (a helper has no
    machine code; its environment is unused: kernels loaded from the disk cache run
    without their helpers' environments too)."""

    def __init__(self, shared_codegen):
        self._shared_codegen = shared_codegen

    def set_env(self, env_name, env):
        """Nothing to set: see the class docstring."""

    def __getattr__(self, name):
        return getattr(self._shared_codegen, name)


class HelperCodeLibrary(codegen.JITCodeLibrary):
    """The code library of a helper: its LLVM module, optimized as Numba optimizes any
    library, for kernels (and other helpers) to link in, without machine code of its own.

    Numba finalizes every compiled function by handing its module to the JIT engine, which
    emits machine code for it and for every library linked into it. A helper is only ever
    linked into its callers (it has no Python entry point), so that code was never run:
    emitting it took ~2.3 s of the ~25 s that the comprehensive Jacobian kernel's cold
    compile took on this project's machine. Finalizing here stops before the JIT engine
    (Numba's private ``_finalize_final_module``, less ``_add_module`` and
    ``_finalize_specific``). The module the kernels link in is the same, so the kernels'
    machine code is too."""

    @property
    def codegen(self):
        """The shared codegen, less ``set_env`` (:class:`EnvironmentFreeCodegen`)."""
        return EnvironmentFreeCodegen(self._codegen)

    def _finalize_final_module(self):
        """Numba's checks of the final module, then finalized, without machine code."""
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        self._finalized = True


class HelperCompiler(compiler.Compiler):
    """Numba's compiler pipeline, with a :class:`HelperCodeLibrary` for the function."""

    def compile_extra(self, func):
        self.state.library = HelperCodeLibrary(self.state.targetctx.codegen(),
                                               func.__qualname__)
        return super().compile_extra(func)


class HelperDispatcher(CPUDispatcher):
    """The dispatcher of a helper compiled without a Python entry point: kernels call it,
    calling it from Python raises TypeError (tests wrap a helper in a jitted function)."""

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.py_func.__module__}.{self.py_func.__qualname__} is a kernel "
                        "helper with no Python entry point: call it from jitted code")


def helper(**options):
    """Decorator: a :class:`HelperDispatcher` with HELPER_OPTIONS and ``options``, compiled
    by :class:`HelperCompiler`."""
    return numba_decorator(HelperDispatcher, {**HELPER_OPTIONS, **options},
                           pipeline_class=HelperCompiler)


jit = helper()

jit_leaf = helper(forceinline=True)
"""A helper that LLVM always inlines into its callers (``forceinline``: the alwaysinline
attribute; no effect on Numba's typing, unlike ``jit_inline``): the 6-vector operations of
``cmtm.spatial`` (matvec6, matTvec6, the motion and force cross products) and the jet
convolutions of ``cmtm.taylor`` built on them (conv_block_vec, motion_cross_conv,
force_cross_conv), ``body_columns`` and ``comoving_columns`` of
``cmtm.velocity_derivatives``, the inertia product and rate of ``cmtm.rnea_derivatives``
(inertia_add, inertia_rate_add) and its all_within, the column loops of
``cmtm.torque_jacobian`` (dot6_columns, scaled_columns), the point jets of
``cmtm.point_motion`` (point_jet, column_jet, on ``cmtm.spatial.cross3_add``), the link
pose, world pose and inertia transform of ``cmtm.rnea`` (link_pose_in_parent, world_pose,
composite_inertia_to_parent_add) and the world screw of ``cmtm.rnea_derivatives``
(world_screw), :func:`claim_samples` (an atomic add and a min) and :func:`index_range`.
Left to LLVM's own choice they stayed calls, each passing its arrays as ~25 scalar
arguments, for a few dozen multiply-adds. One thread, us per sample, two alternating
runs, identical bits: order-0 torque Jacobian Panda 2.30-2.36 against 2.57-2.76, 32-link
chain 14.9-15.0 against 15.8-17.4; order 1 Panda 8.1-8.5 against 8.7-9.6; the
comprehensive Jacobians 5-10 % faster;
cold compile of every public function 22.3 against 21.9 s (within noise). Forcing the taylor
block helpers too (write_raw_blocks, add_blocks, copy and zero) made the order-1 torque
Jacobian ~20 % faster but cost 1.7 s of the comprehensive kernel's compile, which calls them
at many sites. The four pose and inertia helpers were the last calls left in the order-0
torque Jacobian's per-sample loop (one each per link, with ~40 scalar arguments): 3-link
chain, one thread, 600 samples, two alternating rounds, 720-737 -> 638-667 ns per sample,
identical bits for every public function (3-link chain, Panda, example-robot-data's human)."""

jit_inline = helper(inline="always")
"""The same options, inlined into the caller at Numba's IR level. The rule: a function
that calls other kernels' helpers and is called from one or two places (a kernel's
per-sample body, its passes, its pair rules) is ``jit_inline``; leaves (the small helpers
of ``cmtm.spatial`` and ``cmtm.taylor``, called from many places) stay ``jit``.

Why: Numba links the optimized LLVM module of every separately compiled callee into its
caller and optimizes the linked module again (and emitted machine code for it at every
level before :class:`HelperCodeLibrary`), so each compiled level repeats the work of the
whole call tree below it. Inlining the middle layers leaves two levels per kernel (the
kernel, then its leaves). Inlining the leaves instead costs more than it saves (each call
site is typed again: +13 s on ``cmtm.jacobian``). Measured cold compile of every public
function together: 36.3 s -> 31.4 s, identical results bit for bit; the helpers that are
shared by several rows of the Jacobian kernel (``cmtm.structured_jacobians`` rules,
``cmtm.dynamics``) stay ``jit``: inlining them at each of their call sites cost 4 s. So do
the passes of ``cmtm.kinematics``, which four kernels share (motion, link CMTMs, the
comprehensive and the link-velocity Jacobians): compiled once and linked, they took ~2 s
less than inlined into each (28.7-31.2 s against 30.8-33.0 s in three alternating cold
runs of every public function), at the same speed per sample."""


@jit_leaf
def index_range(start, stop):
    """range(start, stop) on unsigned integers (start, stop >= 0), for the innermost loops
    over consecutive entries of an array. Numba wraps a negative signed index around (i +
    length, a select at every access) and LLVM, unable to prove a signed loop index is
    non-negative, then loads and stores each lane of a vectorized loop separately
    (``vmovsd``/``vmovhpd`` pairs) instead of as one vector; an unsigned index has no
    wrap-around. Measured on a loop of cmtm.rnea_derivatives' form (three rows of 6-term
    dot products over j > i, n = 128): 78-82 us -> 25 us per call, identical bits.

    The index is uint64: arithmetic with a signed integer would make it float64, so a loop
    over it only indexes."""
    return range(numba.uint64(start), numba.uint64(stop))


jit_allocating = python_callable(_nrt=True)
"""With Numba's runtime, for the conveniences that return a new array (``skew``,
``joint_screw``, ``velocity_crosses`` ...; the jitted references of ``cmtm.reference``):
tests and references call them, kernels do not. They may call the kernels' helpers (their
``_into`` forms), which borrow the caller's arrays."""


# --- Samples claimed by the threads of a call ---

def _fetch_add_codegen(context, builder, signature, args):
    """LLVM ``atomicrmw add`` on the first entry of an int64 array, returning the entry
    before the add (monotonic ordering: each claim only needs to be unique; the threads'
    results are published to the caller by the thread pool's own synchronisation)."""
    counter = context.make_array(signature.args[0])(context, builder, args[0])
    amount = context.cast(builder, args[1], signature.args[1], types.int64)
    return builder.atomic_rmw("add", counter.data, amount, "monotonic")


@intrinsic
def _fetch_add(typingctx, counter, amount):
    """Typing of :func:`fetch_add`: an int64 array and an integer."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64
            and isinstance(amount, types.Integer)):
        return None
    return types.int64(counter, amount), _fetch_add_codegen


def _fetch_add_python(counter, amount):
    """:func:`fetch_add` for NUMBA_DISABLE_JIT, a plain read and write: the kernels are then
    Python functions holding the GIL, and ``cmtm.dispatch.thread_slots`` keeps every call on
    one thread."""
    before = int(counter[0])
    counter[0] = before + amount
    return before


fetch_add = _fetch_add_python if numba.config.DISABLE_JIT else _fetch_add
"""fetch_add(counter, amount): counter[0] += amount as one atomic step, returning the value
before it, so that threads adding to one counter each get a range of their own."""


@jit_leaf
def claim_samples(claim, last):
    """(first, stop): the next block of samples of a call for the calling thread, taken
    from the shared int64 array ``claim`` = [next unclaimed sample, samples per block]
    (:func:`fetch_add`), stop <= last; first >= stop once every sample below ``last`` is
    taken. Each batched kernel runs the blocks it claims until none is left, so a thread
    that starts late or runs on a busier core simply takes fewer
    (``cmtm.api.run_chunks``)."""
    first = fetch_add(claim, claim[1])
    return first, min(first + claim[1], last)
