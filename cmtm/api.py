"""Public entry points of the engine: validate, convert raw <-> Taylor, call the kernels.

Derivative stacks at this boundary are raw derivatives: ``q_stack[..., r, :] = q^(r)``.

A single instant ``(K, nv)`` is accepted where ``(n_samples, K, nv)`` is (the sample axis is
then dropped from the results) when K is at most EXTRA_INSTANT_ORDERS (2) more than the
call needs: a longer 2-D array is refused, since it is most likely ``(n_samples, nv)``
positions.

Every function checks its inputs before a kernel sees them (DESIGN.md "Errors"): the model's
arrays (once per model object), shapes, dtypes, finiteness, the order (at most
:data:`MAX_ORDER`) and the size of the results (at most :func:`memory_budget` bytes), and
raises ValueError saying what was expected and what came.
"""
import functools
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from numbers import Integral
from typing import Optional

import numba
import numpy as np

from cmtm.comprehensive import (link_cmtm_kernel, link_cmtm_workspace, link_poses_kernel,
                                link_poses_workspace, motion_kernel, motion_workspace)
from cmtm.kernel_model import kernel_model
from cmtm.point_motion import point_kernel, point_workspace
from cmtm.rnea import crba_kernel, crba_workspace, rnea_kernel, rnea_workspace
from cmtm.rnea_derivatives import torque_derivatives_kernel, torque_derivatives_workspace
from cmtm.spatial import JOINT_PRISMATIC, JOINT_REVOLUTE
from cmtm.structured_jacobians import (INPUT_OFFSET, JOINT_TORQUE, LINK_VELOCITY, QUANTITIES,
                                       jacobian_kernel, jacobian_sizes, jacobian_workspace)
from cmtm.taylor import factorials, raw_from_taylor, taylor_from_raw
from cmtm.torque_jacobian import torque_jacobian_kernel, torque_workspace
from cmtm.velocity_derivatives import (velocity_derivatives_kernel,
                                       velocity_derivatives_workspace)
from kinematic_trees import CompiledTree

MAX_ORDER = 20
"""Largest derivative order k of every function. An order-k result reads input orders up
to q^(k+2), and 22! is the last factorial that float64 holds exactly, so the raw <-> Taylor
scaling a^(l) = l! a_hat_l is exact up to there; the torques of unit derivative stacks
already reach 1e16 at order 20 (a realistic motion, whose derivatives grow with their
order, overflows float64 not far beyond)."""

EXTRA_INSTANT_ORDERS = 2
"""A single instant ``(K, nv)`` may carry up to this many derivative orders more than the
call needs, so that one stack of order k serves every function of order k (tangents need
k+1 orders, torques k+3). More rows are refused: ``(n_samples, nv)`` positions would be
misread as one instant with n_samples derivative orders."""

MEMORY_BUDGET_VARIABLE = "CMTM_MEMORY_BUDGET"
DEFAULT_MEMORY_BUDGET = 4 * 2**30
"""Bytes the results of one call may take unless ``$CMTM_MEMORY_BUDGET`` says otherwise
(and at most half the physical memory): see :func:`memory_budget`."""

MODEL_TOLERANCE = 1e-9
"""Max deviation of a model's joint axes from unit length and of its placement rotations
from orthonormality (max |R^T R - E|)."""

_MODEL_ARRAYS = (("parent", np.int64, ()), ("subtree_end", np.int64, ()),
                 ("joint_type", np.int64, ()), ("axis", np.float64, (3,)),
                 ("placement_R", np.float64, (3, 3)), ("placement_p", np.float64, (3,)),
                 ("mass", np.float64, ()), ("com", np.float64, (3,)),
                 ("spatial_inertia", np.float64, (6, 6)), ("gravity", np.float64, None))
"""The CompiledTree arrays the kernels read: (field, dtype, row shape; None: shape (3,))."""
_MODEL_FIELDS = tuple(name for name, _, _ in _MODEL_ARRAYS)
_CHECKED_MODELS = {}
"""id -> model of the last models that passed check_model with read-only arrays."""
_CHECKED_MODELS_KEPT = 32


@dataclass(frozen=True)
class Motion:
    """Comprehensive motion of order k: raw time-derivative stacks at every sample.

    Per-link arrays are ``(n_samples, k+1, n_links, 6)`` float64, angular-first, row
    ``[s, j, i]`` = j-th time derivative at sample s of link i's quantity; ``tau`` is
    ``(n_samples, k+1, nv)``. The sample axis is absent when ``q_stack`` was one instant.

    v_L    link body twist (link frame), from a gravity-free pass
    h_L    link momentum I_i v_L about the link origin (link frame)
    w_h_L  link momentum in the world (base) frame
    h_J    momentum of the subtree of link i (link i frame); w_h_J in the world frame
    f_L    wrench on link i other than gravity: d/dt momentum minus the gravity wrench
    f_J    wrench transmitted through joint i into its subtree (link i frame), with gravity
    tau    joint torques / forces S_i^T f_J (inverse dynamics with gravity) and derivatives
    Fields not requested are None.
    """
    order: int
    v_L: Optional[np.ndarray] = None
    h_L: Optional[np.ndarray] = None
    w_h_L: Optional[np.ndarray] = None
    h_J: Optional[np.ndarray] = None
    w_h_J: Optional[np.ndarray] = None
    f_L: Optional[np.ndarray] = None
    f_J: Optional[np.ndarray] = None
    tau: Optional[np.ndarray] = None


def check_model(model):
    """``model`` checked for the kernels, else ValueError: a CompiledTree
    (kinematic_trees.compile_tree) whose arrays the kernels read have their dtypes, shapes
    and C layout, finite values, links numbered in depth-first pre-order with matching
    subtree ends, known joint types, unit axes and rotation placements.

    The kernels trust these arrays, so a model edited by hand (``model._replace``) must pass
    too. A model whose arrays are read-only (as compile_tree makes them) is checked once per
    object; one with writeable arrays (edited, or unpickled) at every call, and it is
    returned with read-only views of them, so that the kernels always see the same array
    types (Numba compiles every new combination of types).
    """
    if model is not None and _CHECKED_MODELS.get(id(model)) is model:
        return model
    if not isinstance(model, CompiledTree):
        raise ValueError(f"model: expected a CompiledTree (kinematic_trees.compile_tree), "
                         f"got {type(model).__name__}")
    n = _check_model_arrays(model)
    if n == 0:
        raise ValueError("model: expected at least one movable joint, got nv = 0 (every "
                         "joint is fixed); its mass properties are model.base_mass, "
                         "base_com and base_inertia_com")
    _check_numbering(model.parent, model.subtree_end)
    _check_model_values(model)
    writeable = [name for name in _MODEL_FIELDS if getattr(model, name).flags.writeable]
    if writeable:
        return model._replace(**{name: _read_only(getattr(model, name)) for name in writeable})
    if len(_CHECKED_MODELS) >= _CHECKED_MODELS_KEPT:
        _CHECKED_MODELS.clear()
    _CHECKED_MODELS[id(model)] = model
    return model


def _read_only(array):
    """A read-only view of ``array``."""
    view = array.view()
    view.flags.writeable = False
    return view


def _check_model_arrays(model):
    """The number of links n, after checking every array of _MODEL_ARRAYS: an ndarray of
    its dtype and shape (n, *row) ((3,) for gravity), C-contiguous; ValueError otherwise."""
    if not (isinstance(model.parent, np.ndarray) and model.parent.ndim == 1):
        raise ValueError(f"model.parent: expected a 1-D int64 array, got "
                         f"{_array_text(model.parent)}")
    n = len(model.parent)
    for name, dtype, row in _MODEL_ARRAYS:
        array = getattr(model, name)
        shape = (3,) if row is None else (n, *row)
        if not (isinstance(array, np.ndarray) and array.dtype == dtype
                and array.shape == shape and array.flags.c_contiguous):
            raise ValueError(f"model.{name}: expected a C-contiguous {np.dtype(dtype)} array "
                             f"of shape {shape}, got {_array_text(array)}; the model has "
                             f"nv={n}")
    return n


def _array_text(value):
    """'a float64 array of shape (3, 3)' (or the type name of a non-array) for messages."""
    if not isinstance(value, np.ndarray):
        return type(value).__name__
    layout = "" if value.flags.c_contiguous else "non-contiguous "
    return f"a {layout}{value.dtype} array of shape {value.shape}"


def _check_numbering(parent, subtree_end):
    """ValueError unless parent[i] is in [-1, i) and every subtree is the contiguous range
    range(i, subtree_end[i]) (compile_tree's depth-first pre-order)."""
    n = len(parent)
    bad = np.flatnonzero((parent < -1) | (parent >= np.arange(n)))
    if bad.size:
        i = bad[0]
        raise ValueError(f"model.parent: expected parent[i] in [-1, i) (links numbered from "
                         f"the base), got parent[{i}] = {parent[i]}")
    ends = _preorder_subtree_ends(parent.tolist())
    if ends is None:
        raise ValueError(f"model.parent: expected links in depth-first pre-order (every "
                         f"subtree a contiguous range, as compile_tree numbers them), got "
                         f"parent = {parent.tolist()}")
    bad = np.flatnonzero(subtree_end != ends)
    if bad.size:
        i = bad[0]
        raise ValueError(f"model.subtree_end: expected subtree_end[{i}] = {ends[i]} (one "
                         f"past the last descendant of link {i}), got {subtree_end[i]}")


def _preorder_subtree_ends(parent):
    """[i + size of i's subtree] for a list ``parent`` with parent[i] < i, or None when a
    subtree is not a contiguous range of indices (not a depth-first pre-order)."""
    size = [1] * len(parent)
    last = list(range(len(parent)))
    for i in reversed(range(len(parent))):
        if parent[i] >= 0:
            size[parent[i]] += size[i]
            last[parent[i]] = max(last[parent[i]], last[i])
    ends = [i + s for i, s in enumerate(size)]
    return ends if all(end == l + 1 for end, l in zip(ends, last)) else None


def _check_model_values(model):
    """ValueError for non-finite numbers, unknown joint types, axes that are not unit
    vectors and placements that are not rotations."""
    for name, dtype, _ in _MODEL_ARRAYS:
        if dtype == np.float64 and not np.all(np.isfinite(getattr(model, name))):
            raise ValueError(f"model.{name}: expected finite values, got NaN or inf")
    codes = (JOINT_REVOLUTE, JOINT_PRISMATIC)
    bad = np.flatnonzero(~np.isin(model.joint_type, codes))
    if bad.size:
        raise ValueError(f"model.joint_type: expected codes {codes} (revolute, prismatic), "
                         f"got joint_type[{bad[0]}] = {model.joint_type[bad[0]]}")
    norm_error = np.abs(np.linalg.norm(model.axis, axis=1) - 1.0)
    R = model.placement_R
    rotation_error = np.abs(np.einsum("nki,nkj->nij", R, R) - np.eye(3)).max(axis=(1, 2))
    for name, error, what in (("axis", norm_error, "unit vectors"),
                              ("placement_R", rotation_error, "rotation matrices")):
        if error.max() > MODEL_TOLERANCE:
            i = int(np.argmax(error))
            raise ValueError(f"model.{name}: expected {what}, got row {i} off by {error[i]:.3g}")
    if np.any(np.linalg.det(R) < 0.0):
        raise ValueError(f"model.placement_R: expected rotation matrices, got a reflection "
                         f"in row {int(np.argmax(np.linalg.det(R) < 0.0))}")


def check_order(order):
    """Raise ValueError unless ``order`` is an integer in 0..MAX_ORDER (a plain int is let
    through first: the test against numbers.Integral costs about a microsecond)."""
    integer = type(order) is int or (isinstance(order, Integral) and not isinstance(order, bool))
    if not integer or order < 0:
        raise ValueError(f"order: expected a non-negative integer, got {order!r}")
    if order > MAX_ORDER:
        raise ValueError(f"order: expected at most cmtm.MAX_ORDER = {MAX_ORDER}, got {order}")
    return int(order)


def as_float_array(name, value):
    """``value`` as a C-contiguous float64 array of the same shape; integers are accepted,
    other dtypes (bool, complex, object, strings), ragged lists and masked arrays rejected;
    NaN and inf rejected (:func:`all_finite`). A plain ndarray skips the conversion checks of
    :func:`_plain_array`."""
    array = value if type(value) is np.ndarray else _plain_array(name, value)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name}: expected a real float array, got dtype {array.dtype}")
    array = np.asarray(array, dtype=np.float64, order="C")
    if not all_finite(array):
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return array


def _plain_array(name, value):
    """``value`` (not a plain ndarray) as one, for :func:`as_float_array`; ValueError for a
    masked array and for what numpy cannot convert."""
    if isinstance(value, np.ma.MaskedArray):
        raise ValueError(f"{name}: expected a plain array, got a masked array (its mask "
                         f"would be ignored; fill or drop the masked entries first)")
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}: expected a real float array, got {type(value).__name__} "
                         f"({error})") from None


def check_flag(name, value):
    """Raise ValueError unless ``value`` is a bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}: expected True or False, got {value!r}")
    return bool(value)


def check_stack(model, q_stack, n_orders):
    """Validate a raw derivative stack; return it as (n_samples, n_orders, nv), C-contiguous
    and read-only (kernels that read it directly are compiled for one array type, whatever
    the caller's flags), and whether the input was a single instant (K, nv). Extra
    derivative orders are ignored; a single instant may have at most EXTRA_INSTANT_ORDERS of
    them."""
    nv = len(model.parent)
    q_stack = as_float_array("q_stack", q_stack)
    single = q_stack.ndim == 2
    if q_stack.ndim not in (2, 3) or q_stack.shape[-1] != nv:
        raise ValueError(f"q_stack: expected shape (n_samples, K, {nv}) or (K, {nv}), got "
                         f"{q_stack.shape}; the model has nv={nv}")
    if q_stack.shape[-2] < n_orders:
        raise ValueError(f"q_stack: expected at least {n_orders} derivative orders "
                         f"(q, q', ..., q^({n_orders - 1})), got {q_stack.shape[-2]}")
    most = n_orders + EXTRA_INSTANT_ORDERS
    if single and q_stack.shape[0] > most:
        raise ValueError(f"q_stack: expected one instant (K, {nv}) with {n_orders} <= K <= "
                         f"{most} derivative orders, or samples (n_samples, K, {nv}), got "
                         f"{q_stack.shape}; a trajectory of n positions needs the layout "
                         f"(n, K, {nv}) with q_stack[:, r] = q^(r)")
    stack = q_stack.reshape((-1,) + q_stack.shape[-2:])[:, :n_orders]
    return _read_only(np.ascontiguousarray(stack)), single


# --- memory -------------------------------------------------------------------------------

def memory_budget():
    """Bytes that the results of one call may take: ``$CMTM_MEMORY_BUDGET`` (a number of
    bytes, e.g. 8e9) if set, else DEFAULT_MEMORY_BUDGET (4 GiB) or half the physical
    memory, whichever is smaller. Larger results are refused before anything is allocated.
    """
    text = os.environ.get(MEMORY_BUDGET_VARIABLE)
    if text is None:
        return min(DEFAULT_MEMORY_BUDGET, _physical_memory() // 2)
    try:
        budget = float(text)
    except ValueError:
        budget = float("nan")
    if not (np.isfinite(budget) and budget > 0):
        raise ValueError(f"{MEMORY_BUDGET_VARIABLE}: expected a positive number of bytes, "
                         f"got {text!r}")
    return int(budget)


@functools.cache
def _physical_memory():
    """Bytes of physical memory (os.sysconf, read once per process), or twice the default
    budget where unknown."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 2 * DEFAULT_MEMORY_BUDGET


def reserve(what, count, unit_bytes, split, unit="samples"):
    """Raise ValueError unless ``count`` items (samples) of ``unit_bytes`` each fit in the
    memory budget; ``split`` formats the advice with ``chunk``, the count that fits."""
    budget = memory_budget()
    if count * unit_bytes <= budget:
        return
    chunk = budget // unit_bytes
    advice = (split.format(chunk=chunk) if chunk else
              f"one of them alone needs {_gib(unit_bytes)}: lower the order or the model size")
    raise ValueError(f"{what}: expected results within the memory budget of {_gib(budget)} "
                     f"(${MEMORY_BUDGET_VARIABLE}), got {count} {unit} needing "
                     f"{_gib(count * unit_bytes)}; {advice}")


def _gib(n_bytes):
    return f"{n_bytes / 2**30:.3g} GiB"


def jacobians_nbytes(model, quantities, order=0, n_samples=1):
    """Bytes of the Jacobians :func:`jacobians` returns for ``n_samples`` samples, to size
    the chunks of :func:`jacobian_chunks` (float64; see :func:`jacobians` for the shapes).

    >>> import kinematic_trees as kt
    >>> jacobians_nbytes(kt.compile_tree(kt.panda()), "joint_torque", order=4)  # per sample
    13720
    """
    model = check_model(model)
    return n_samples * _jacobian_sample_bytes(len(model.parent), check_order(order),
                                              _quantity_indices(quantities))


def _jacobian_sample_bytes(nv, k, indices):
    """Bytes per sample of the Jacobians of the quantities ``indices`` at order k."""
    return 8 * sum((k + 1) * _rows_of(q, nv) * (k + 1 + INPUT_OFFSET[q]) * nv
                   for q in indices)


def _rows_of(q, nv):
    """m, the rows of quantity index q: nv for the joint torque, else 6 nv."""
    return nv if QUANTITIES[q] == "joint_torque" else 6 * nv


_SAMPLES_SPLIT = "call it on at most {chunk} samples at a time (q_stack[i:i + {chunk}])"


def raw_results(taylor, axis=1):
    """{name: raw derivatives} of a kernel's Taylor-scaled results {name: array}, in their
    order; ValueError naming the first non-finite one instead of returning it (overflow on
    extreme inputs or very high orders). One floating-point error state for all of them:
    entering one took 1.5 us, and the eight of a one-instant ``cmtm.motion`` 12 us of its
    125 (measured by leaving them out, alternating)."""
    with np.errstate(over="ignore", invalid="ignore"):
        raw = {name: raw_from_taylor(array, axis=axis) for name, array in taylor.items()}
    return {name: check_finite(name, array) for name, array in raw.items()}


SMALL_FINITE_CHECK = 2 ** 15
"""Entries up to which :func:`all_finite` tests with a mask (``np.isfinite`` reduced by
``np.logical_and``: a Python-level call less than ``.all()``) rather than a sum: the mask
is at most 32 KB, and the sum's floating-point error state costs more. Measured on this
project's machine: 147 entries 1.9 against 4.2 us, 16,384 entries 5.1 against 7.9 us,
65,536 entries 16.5 against 19.4 us."""


def all_finite(array):
    """Whether every entry of a float64 array is finite, in one pass and, for arrays of more
    than SMALL_FINITE_CHECK entries, without a mask as large as the array: the sum of the
    entries (numpy's own pairwise sum) is finite only if every entry is (NaN and inf
    propagate, and inf - inf is NaN), so a finite sum proves it; a non-finite one (NaN or
    inf, or an overflow of the sum, which takes entries near 1e308) is decided by max and
    min, which propagate NaN and reach inf.

    Not a BLAS dot product x . x, as before: it was faster on two cores (a 78 MB Jacobian
    4.2 against 6.5 ms for the sum), but OpenBLAS's worker thread then spins for a while
    after the call, on the core that cmtm's next call hands a chunk of samples to. Measured
    through cmtm.jacobian, 200 samples, alternating rounds in one process, median speed-up
    of two Numba threads over one with OpenBLAS on two threads and on one: the order-1
    torque Jacobian of the Panda 1.00 against 1.81, the order-0 one of a 32-link chain 0.94
    against 1.68; the sum matches the one-thread dot (6.5 against 6.8 ms on 78 MB)."""
    flat = array.reshape(-1)
    if flat.size <= SMALL_FINITE_CHECK:
        return bool(np.logical_and.reduce(np.isfinite(flat)))
    with np.errstate(over="ignore", invalid="ignore"):    # overflow is an answer here
        if np.isfinite(np.add.reduce(flat)):
            return True
    return bool(np.isfinite(flat.max()) and np.isfinite(flat.min()))


def check_finite(name, array):
    """Raise ValueError instead of returning a non-finite result (:func:`all_finite`)."""
    if not all_finite(array):
        raise overflow_error(name)
    return array


def overflow_error(name):
    """The ValueError of a non-finite result ``name``."""
    return ValueError(f"{name}: expected a finite result, got overflow (inputs or order too "
                      f"large for float64)")


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
"""id -> (model, its KernelModel) for the last models seen (as _CHECKED_MODELS)."""


def kernel_model_of(model):
    """The :class:`~cmtm.kernel_model.KernelModel` of a checked model, built once per model
    object (the support arrays take O(n^2) Python work)."""
    return _memo(_KERNEL_MODELS, id(model), model, lambda: kernel_model(model),
                 _CHECKED_MODELS_KEPT)


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


_POOL = []
_POOL_LOCK = threading.Lock()


def _thread_pool():
    """The shared pool of Python threads that runs the chunks after the first (created on
    first use, NUMBA_NUM_THREADS - 1 workers)."""
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(
                max_workers=max(1, numba.config.NUMBA_NUM_THREADS - 1),
                thread_name_prefix="cmtm"))
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
    90th percentile (three runs of 60 calls, the calling thread busy in a nogil loop):
    the other vCPU has to be woken. A pool thread that has not started when the calling
    thread finds no sample left is cancelled, not waited for. Returns the seconds per
    sample of the calling thread's kernel call (the kernel's own cost, without handing
    work to the pool and waiting for it), None if it ran no sample.

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
    others = []
    if len(works) > 1:
        pool = _thread_pool()
        others = [pool.submit(kernel, kernel_model, work, 0, claim, n_samples, *arrays)
                  for work in works[1:]]
    began = time.perf_counter()
    done = kernel(kernel_model, works[0], 0, claim, n_samples, *arrays)
    seconds = time.perf_counter() - began
    for other in others:
        if not other.cancel():
            other.result()
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
    if known is not None and known[0] is kmodel:
        seconds_per_sample, entry = known[1:]
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
        seconds_per_sample = min(seconds_per_sample, measured or np.inf)
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


def motion(model, q_stack, order=0, *, dynamics=True, world=True):
    """Comprehensive kinematics and dynamics of order k at every sample (§4-§5).

    q_stack : (n_samples, K, nv) or (K, nv) float64, raw derivatives q, q', ..., q^(K-1);
        K >= order+3 with ``dynamics`` (torques of order k need q^(k+2)), else K >= order+2;
        a single instant (K, nv) has at most EXTRA_INSTANT_ORDERS (2) rows more.
    order : k in 0..MAX_ORDER (20).
    Returns a :class:`Motion` of raw derivative stacks of orders 0..order; with
    ``dynamics=False`` f_L, f_J and tau are None, with ``world=False`` w_h_L and w_h_J.
    ValueError on invalid input, or when the results exceed :func:`memory_budget`.

    >>> import kinematic_trees as kt, numpy as np
    >>> model = kt.compile_tree(kt.two_link_planar(), gravity=(0, -9.81, 0))
    >>> q = np.array([[np.pi / 6, np.pi / 3], [0, 0], [0, 0]])
    >>> np.round(motion(model, q).tau[0], 4)
    array([12.7436,  0.    ])
    """
    model = check_model(model)
    k = check_order(order)
    dynamics = check_flag("dynamics", dynamics)
    world = check_flag("world", world)
    stack, single = check_stack(model, q_stack, k + 3 if dynamics else k + 2)
    n_samples, nv = stack.shape[0], stack.shape[2]
    link_fields = 3 + 2 * world + 2 * dynamics
    # each field twice: the kernel's Taylor-scaled output and its raw copy
    reserve("motion", n_samples, 16 * (k + 1) * nv * (6 * link_fields + dynamics),
            _SAMPLES_SPLIT)
    link_shape = (n_samples, k + 1, nv, 6)
    empty = np.empty((0, 0, 0, 6))
    kin = [np.empty(link_shape) for _ in range(3)]
    world_out = [np.empty(link_shape) if world else empty for _ in range(2)]
    dyn = [np.empty(link_shape) if dynamics else empty for _ in range(2)]
    tau = np.empty((n_samples, k + 1, nv)) if dynamics else np.empty((0, k + 1, 0))
    run_on_threads(model, motion_kernel, "motion", (k, dynamics),
                   lambda kmodel, slots: motion_workspace(kmodel, k, dynamics, slots),
                   n_samples, taylor_from_raw(stack), True, world, dynamics,
                   (kin[0], kin[1], world_out[0], kin[2], world_out[1], dyn[0], dyn[1], tau))

    fields = (("v_L", kin[0], True), ("h_L", kin[1], True), ("w_h_L", world_out[0], world),
              ("h_J", kin[2], True), ("w_h_J", world_out[1], world),
              ("f_L", dyn[0], dynamics), ("f_J", dyn[1], dynamics), ("tau", tau, dynamics))
    raw = raw_results({name: array for name, array, wanted in fields if wanted})
    return Motion(order=k, **{name: array[0] if single else array for name, array in raw.items()})


def inverse_dynamics(model, q_stack, order=0):
    """Joint torque stacks tau, tau', ..., tau^(k) with gravity: (n_samples, k+1, nv) raw.

    The fast path of :func:`motion` when only torques are wanted; q_stack needs k+3 orders.
    Order 0 runs the classic recursive Newton-Euler kernel (``cmtm.rnea``), higher orders
    the comprehensive passes.
    """
    model = check_model(model)
    k = check_order(order)
    stack, single = check_stack(model, q_stack, k + 3)
    n_samples, nv = stack.shape[0], stack.shape[2]
    if k == 0:
        tau = np.empty((n_samples, nv))
        run_on_threads(model, rnea_kernel, "rnea", (), rnea_workspace, n_samples, stack, tau)
        tau = check_finite("tau", tau)[:, None, :]
    else:
        tau = _motion_kernel_torques(model, stack, k)
    return tau[0] if single else tau


def motion_torques(model, q_stack, order=0):
    """The joint torque stacks of :func:`motion` (its ``tau``, bit for bit) at any order,
    from its kernel with the torques alone written: :func:`inverse_dynamics` at orders
    >= 1, while its order 0 runs the RNEA kernel, whose rounding differs (~1e-16). For
    solvers that difference torques against the Jacobians of the same kernels."""
    model = check_model(model)
    k = check_order(order)
    stack, single = check_stack(model, q_stack, k + 3)
    tau = _motion_kernel_torques(model, stack, k)
    return tau[0] if single else tau


def _motion_kernel_torques(model, stack, k):
    """(n_samples, k+1, nv) raw torques of a checked stack by the motion kernel."""
    n_samples, nv = stack.shape[0], stack.shape[2]
    tau = np.empty((n_samples, k + 1, nv))
    none = np.empty((0, 0, 0, 6))
    run_on_threads(model, motion_kernel, "motion", (k, True),
                   lambda kmodel, slots: motion_workspace(kmodel, k, True, slots),
                   n_samples, taylor_from_raw(stack), False, False, True,
                   (none, none, none, none, none, none, none, tau))
    return raw_results({"tau": tau})["tau"]


def _joint_positions(model, q):
    """Validate q: (n_samples, nv) or (nv,) -> (n_samples, nv), read-only (as
    :func:`check_stack`), and the single flag."""
    nv = len(model.parent)
    q = as_float_array("q", q)
    if q.ndim not in (1, 2) or q.shape[-1] != nv:
        raise ValueError(f"q: expected shape (n_samples, {nv}) or ({nv},), got {q.shape}; "
                         f"the model has nv={nv}")
    return _read_only(q.reshape(-1, nv)), q.ndim == 1


def link_poses(model, q):
    """World (base-frame) homogeneous poses of the link frames: (n_samples, n_links, 4, 4)
    for q of shape (n_samples, nv), or (n_links, 4, 4) for q of shape (nv,)."""
    model = check_model(model)
    q2, single = _joint_positions(model, q)
    n_samples, nv = q2.shape
    reserve("link_poses", n_samples, 8 * nv * (9 + 3 + 16), _SAMPLES_SPLIT)
    R = np.empty((n_samples, nv, 3, 3))
    p = np.empty((n_samples, nv, 3))
    run_on_threads(model, link_poses_kernel, "link_poses", (), link_poses_workspace, n_samples,
                   q2, R, p)
    T = np.zeros((n_samples, nv, 4, 4))
    T[..., :3, :3] = R
    T[..., :3, 3] = check_finite("link_poses", p)
    T[..., 3, 3] = 1.0
    return T[0] if single else T


def link_transform_derivatives(model, q_stack, order=0):
    """Raw time derivatives A_L, A_L', ..., A_L^(k) of every link's 6x6 motion transform
    (world <- link, base at rest): (n_samples, k+1, n_links, 6, 6), or without the sample
    axis for a single instant. q_stack needs k+1 orders. Divided by l! these are the link
    CMTM blocks X_l of cmtm_math.md §2.1.
    """
    model = check_model(model)
    k = check_order(order)
    stack, single = check_stack(model, q_stack, k + 1)
    reserve("link_transform_derivatives", stack.shape[0], 16 * (k + 1) * stack.shape[2] * 36,
            _SAMPLES_SPLIT)
    X_L = np.empty((stack.shape[0], stack.shape[2], k + 1, 6, 6))
    run_on_threads(model, link_cmtm_kernel, "link_cmtm", (k,),
                   lambda kmodel, slots: link_cmtm_workspace(kmodel, k + 1, slots),
                   stack.shape[0], taylor_from_raw(stack), X_L)
    A = raw_results({"A_L": X_L.transpose(0, 2, 1, 3, 4)})["A_L"]
    return A[0] if single else A


# --- points fixed to links ------------------------------------------------------------------

def check_points(model, points):
    """Validated points of a checked model: (point_link (n_points,) int64, point_r
    (n_points, 3) float64), both read-only, else ValueError.

    points : a sequence of (link, (x, y, z)) pairs: the point with coordinates (x, y, z) (m)
        in the frame of ``link``, a link name of ``model.link_names``, the name of a link
        merged into another by a fixed joint (``model.frames``: its coordinates are moved
        into the link that carries it) or a link index in 0..nv-1.
    """
    try:
        pairs = [tuple(pair) for pair in points]
    except TypeError:
        pairs = None
    if not pairs or any(len(pair) != 2 for pair in pairs):
        raise ValueError(f"points: expected a non-empty sequence of (link, (x, y, z)) pairs, "
                         f"got {points!r}")
    links, coordinates = [], []
    for link, xyz in pairs:
        r = as_float_array(f"points: coordinates of {link!r}", xyz)
        if r.shape != (3,):
            raise ValueError(f"points: expected 3 coordinates (x, y, z) for {link!r}, got "
                             f"shape {r.shape}")
        index, R, p = _point_frame(model, link)
        links.append(index)
        coordinates.append(R @ r + p)
    return (_read_only(np.array(links, dtype=np.int64)),
            _read_only(np.ascontiguousarray(coordinates, dtype=np.float64)))


def _point_frame(model, link):
    """(link index, R, p): the moving link a point of frame ``link`` is fixed to, and the
    pose of that frame in the link's frame; ValueError for a frame the model lacks or that
    is fixed to the base."""
    if isinstance(link, Integral) and not isinstance(link, bool) and 0 <= link < model.nv:
        return int(link), np.eye(3), np.zeros(3)
    if isinstance(link, str) and link in model.link_names:
        return model.link_names.index(link), np.eye(3), np.zeros(3)
    for name, index, R, p in model.frames:
        if name == link and index >= 0:
            return index, R, p
    on_base = [name for name, index, _, _ in model.frames if index < 0]
    if link == model.base_name or link in on_base:
        raise ValueError(f"points: expected a link that moves, got {link!r}, fixed to the base")
    raise ValueError(f"points: expected a link of the model ({', '.join(model.link_names)}, "
                     f"or an index in 0..{model.nv - 1}), got {link!r}")


def _point_pass(model, q_stack, points, order, jacobian):
    """(motion, J, single) of :func:`point_motion` and :func:`point_jacobian` (J None
    unless ``jacobian``)."""
    model = check_model(model)
    k = check_order(order)
    point_link, point_r = check_points(model, points)
    stack, single = check_stack(model, q_stack, k + 2)
    n_samples, nv = stack.shape[0], stack.shape[2]
    n_points = len(point_link)
    unit = 8 * (k + 1) * 3 * n_points * (1 + (k + 2) * nv * jacobian)
    reserve("point_jacobian" if jacobian else "point_motion", n_samples, unit, _SAMPLES_SPLIT)
    motion_out = np.empty((n_samples, k + 1, n_points, 3))
    J = np.zeros((n_samples, k + 1, 3 * n_points, k + 2, nv) if jacobian else (0,) * 5)
    run_flagging_finite("point_jacobian" if jacobian else "point_motion", model, point_kernel,
                        "point_jacobian" if jacobian else "point_motion", (k,),
                        lambda kmodel, slots: point_workspace(kmodel, k, slots), n_samples,
                        stack, point_link, point_r, motion_out, J)
    return motion_out, J if jacobian else None, single


def point_motion(model, q_stack, points, order=0):
    """World-frame velocity, acceleration, ... of points fixed to links: the raw time
    derivatives p', p'', ..., p^(k+1) of p = o_L + R_L (x, y, z), the point (x, y, z) of
    the frame of link L (``cmtm.point_motion`` module: p' = R_L (v + omega x r) and its
    jets), base at rest.

    q_stack : (n_samples, K, nv) or (K, nv) float64, raw derivatives, K >= order + 2
    points : a sequence of (link, (x, y, z)) pairs (:func:`check_points`)
    order : k in 0..MAX_ORDER.
    Returns (n_samples, k+1, n_points, 3) float64, row [s, l, t] = p_t^(l+1) at sample s
    (world axes, m/s^(l+1)); the sample axis is dropped for a single instant.

    >>> import kinematic_trees as kt
    >>> arm = kt.compile_tree(kt.two_link_planar())
    >>> q = np.array([[0.0, np.pi / 2], [1.0, 0.0]])      # q, q'
    >>> np.round(point_motion(arm, q, [("link2", (1, 0, 0))]), 12) + 0.0  # hand at (1, 1)
    array([[[-1.,  1.,  0.]]])
    """
    values, _, single = _point_pass(model, q_stack, points, order, False)
    return values[0] if single else values


def point_jacobian(model, q_stack, points, order=0):
    """Structured Jacobian of the point velocity stacks of :func:`point_motion`:
    ``J[s, l, 3 t + d, r, j] = d p_t,d^(l+1) / d q_j^(r)`` (raw derivatives), shape
    (n_samples, k+1, 3 n_points, k+2, nv), the layout of :func:`jacobian` with the points'
    world coordinates as rows (point-major); q_stack needs k+2 orders. By §8 with the
    point's position Jacobian G (columns: the world joint screws' linear velocities at the
    point), d p^(l+1) / d q^(r) = C(l+1, r) G^(l+1-r) (``cmtm.point_motion`` module).
    """
    _, J, single = _point_pass(model, q_stack, points, order, True)
    return J[0] if single else J


def mass_matrix(model, q):
    """Joint-space mass matrix M(q): (n_samples, nv, nv) or (nv, nv) for a single q."""
    model = check_model(model)
    q2, single = _joint_positions(model, q)
    reserve("mass_matrix", q2.shape[0], 8 * q2.shape[1] ** 2, _SAMPLES_SPLIT)
    M = np.empty((q2.shape[0], q2.shape[1], q2.shape[1]))
    run_on_threads(model, crba_kernel, "crba", (), crba_workspace, q2.shape[0], q2, M)
    M = check_finite("mass_matrix", M)
    return M[0] if single else M


def _quantity_indices(quantities):
    """Indices of quantity names in QUANTITIES; ValueError naming the valid ones."""
    if isinstance(quantities, str):
        quantities = (quantities,)
    try:
        names = list(quantities)
    except TypeError:
        raise ValueError(f"quantities: expected a name or a sequence of names of "
                         f"{', '.join(QUANTITIES)}, got {quantities!r}") from None
    if not names:
        raise ValueError("quantities: expected at least one quantity name, got none")
    for name in names:
        if not isinstance(name, str) or name not in QUANTITIES:
            raise ValueError(f"quantity: expected one of {', '.join(QUANTITIES)}, got {name!r}")
    return [QUANTITIES.index(name) for name in names]


def jacobian_input_orders(quantity, order):
    """K_in: the number of raw input orders q, ..., q^(K_in-1) that ``quantity`` of order k
    depends on (§7.1): k+1 for tangents, k+2 velocities and momenta, k+3 forces and torques."""
    return check_order(order) + 1 + INPUT_OFFSET[_quantity_indices(quantity)[0]]


def _jacobian_inputs(model, q_stack, quantities, order):
    """Validated (model, k, quantity indices, stack (n_samples, K, nv), single) of a
    Jacobian call."""
    model = check_model(model)
    k = check_order(order)
    indices = _quantity_indices(quantities)
    depth = max(INPUT_OFFSET[q] for q in indices)
    stack, single = check_stack(model, q_stack, k + 1 + depth)
    return model, k, indices, stack, single


def jacobians(model, q_stack, quantities, order=0):
    """Structured Jacobians of several quantities from one pass (shared sweeps).

    Returns a dict name -> J with ``J[s, j, :, r, :] = d y^(j) / d q^(r)`` (raw derivatives),
    shape ``(n_samples, k+1, m, K_in, nv)``: m = 6 n_links for per-link and per-joint
    6-vectors (link-major, angular-first), m = nv for the joint torque; K_in as in
    :func:`jacobian_input_orders`. The sample axis is dropped for a single instant.
    Results beyond :func:`memory_budget` (:func:`jacobians_nbytes`) are refused with a
    ValueError: :func:`jacobian_chunks` computes them a chunk of samples at a time.
    """
    model, k, indices, stack, single = _jacobian_inputs(model, q_stack, quantities, order)
    reserve("jacobians", stack.shape[0], _jacobian_sample_bytes(stack.shape[2], k, indices),
            "compute them in chunks of samples with cmtm.jacobian_chunks(model, q_stack, "
            "quantities, order, chunk={chunk})")
    result = _structured_jacobians(model, stack, k, indices)
    return {name: J[0] if single else J for name, J in result.items()}


def _structured_jacobians(model, stack, k, indices):
    """{name: (n_samples, k+1, m, K_in, nv)} of a validated stack (the kernel calls), in the
    order of ``indices``: the joint torque by its own kernel (:func:`_torque_jacobian`), the
    link velocity by its own (:func:`_velocity_jacobian`) unless other quantities need the
    comprehensive kernel, which then writes it too (its V columns feed their rows: one
    kernel less to run and to compile), the rest by the comprehensive kernel."""
    torque, velocity, rest = _jacobian_routes(indices)
    result = {}
    if torque:
        result["joint_torque"] = _torque_jacobian(model, stack, k)
    if velocity:
        result["link_velocity"] = _velocity_jacobian(model, stack, k)
    if rest:
        result.update(_comprehensive_jacobians(model, stack, k, rest))
    return {QUANTITIES[q]: result[QUANTITIES[q]] for q in indices}


def _jacobian_routes(indices):
    """(torque, velocity, rest) for quantity indices: whether the joint torque's kernel
    runs, whether the link velocity's own kernel runs (the link velocity asked for without
    other rows of the comprehensive kernel), and the indices left to the comprehensive
    kernel (no repeats)."""
    rest = [q for q in dict.fromkeys(indices) if q != JOINT_TORQUE]
    velocity = rest == [LINK_VELOCITY]
    return JOINT_TORQUE in indices, velocity, [] if velocity else rest


def jacobian_kernels(quantities, order=0):
    """Names, in this module, of the kernels that ``jacobians(model, q_stack, quantities,
    order)`` runs (:func:`_jacobian_routes`; the joint torque's by :func:`_torque_jacobian`,
    of order 0 or above)."""
    torque, velocity, rest = _jacobian_routes(_quantity_indices(quantities))
    torque_kernel = "torque_derivatives_kernel" if check_order(order) == 0 \
        else "torque_jacobian_kernel"
    return [name for name, runs in ((torque_kernel, torque),
                                    ("velocity_derivatives_kernel", velocity),
                                    ("jacobian_kernel", rest)) if runs]


def _torque_jacobian(model, stack, k):
    """d tau / d q_stack of a validated stack: (n_samples, k+1, nv, k+3, nv), at order 0 by
    the world-frame kernel of Pinocchio's form (``cmtm.rnea_derivatives``), above by the
    world-frame jets of Lemma 6 (``cmtm.torque_jacobian``)."""
    n_samples, nv = stack.shape[0], stack.shape[2]
    if k == 0:
        J = np.empty((n_samples, nv, 3, nv))
        run_flagging_finite("joint_torque", model, torque_derivatives_kernel,
                            "torque_derivatives", (), torque_derivatives_workspace, n_samples,
                            stack, J)
        return J[:, None]
    J = np.zeros((n_samples, k + 1, nv, k + 3, nv))
    run_on_threads(model, torque_jacobian_kernel, "torque_jacobian", (k,),
                   lambda kmodel, slots: torque_workspace(kmodel, k, slots),
                   n_samples, taylor_from_raw(stack[:, :k + 3]), J)
    return check_finite("joint_torque", J)


def _velocity_jacobian(model, stack, k):
    """d nu / d q_stack of a validated stack: (n_samples, k+1, 6 nv, k+2, nv), by the
    world-frame kernel (``cmtm.velocity_derivatives``), which flags non-finite entries
    itself, per sample (the output can be megabytes per sample)."""
    n_samples, nv = stack.shape[0], stack.shape[2]
    J = np.zeros((n_samples, k + 1, 6 * nv, k + 2, nv))
    run_flagging_finite("link_velocity", model, velocity_derivatives_kernel,
                        "velocity_derivatives", (k,),
                        lambda kmodel, slots: velocity_derivatives_workspace(kmodel, k, slots),
                        n_samples, stack, J)
    return J


def _comprehensive_jacobians(model, stack, k, indices):
    """{name: (n_samples, k+1, m, K_in, nv)} by the comprehensive kernel."""
    n_samples, nv = stack.shape[0], stack.shape[2]
    wanted = np.zeros(len(QUANTITIES), dtype=np.bool_)
    wanted[indices] = True
    empty = np.zeros((0, 0, 0, 0, 0))
    outputs = tuple(
        np.zeros((n_samples, k + 1, _rows_of(q, nv), k + 1 + INPUT_OFFSET[q], nv))
        if wanted[q] else empty for q in range(len(QUANTITIES)))
    run_on_threads(model, jacobian_kernel, "jacobian", (jacobian_sizes(nv, k, wanted),),
                   lambda kmodel, slots: jacobian_workspace(kmodel, k, wanted, slots),
                   n_samples, taylor_from_raw(stack), wanted, outputs)
    return {QUANTITIES[q]: check_finite(QUANTITIES[q], outputs[q]) for q in indices}


def jacobian(model, q_stack, quantity, order=0):
    """Structured Jacobian of one quantity of ``cmtm.QUANTITIES`` (paper Table 4, Lemmas 1-6);
    see :func:`jacobians` for the layout."""
    if not isinstance(quantity, str):
        raise ValueError(f"quantity: expected one of {', '.join(QUANTITIES)}, got {quantity!r}")
    return jacobians(model, q_stack, (quantity,), order)[quantity]


def jacobian_chunks(model, q_stack, quantities, order=0, chunk=32):
    """Structured Jacobians computed ``chunk`` samples at a time, for trajectories whose
    dense Jacobians do not fit in memory at once (e.g. 128 DoF, order 4: 4.6 MB of torque
    Jacobian per sample). Returns an iterator of ``(start, stop, jacobians)`` with
    ``jacobians`` the dict :func:`jacobians` returns for samples ``start:stop``.

    q_stack : (n_samples, K, nv). Every argument is checked here, before the first chunk,
    and so is the size of one chunk's results against :func:`memory_budget`.
    """
    if isinstance(chunk, bool) or not isinstance(chunk, Integral) or chunk < 1:
        raise ValueError(f"chunk: expected a positive integer, got {chunk!r}")
    q_stack = as_float_array("q_stack", q_stack)
    if q_stack.ndim != 3:
        raise ValueError(f"q_stack: expected shape (n_samples, K, nv), got {q_stack.shape}")
    model, k, indices, stack, _ = _jacobian_inputs(model, q_stack, quantities, order)
    reserve("jacobian_chunks", min(int(chunk), stack.shape[0]),
            _jacobian_sample_bytes(stack.shape[2], k, indices), "choose chunk <= {chunk}")
    return _chunks(model, stack, k, indices, int(chunk))


def _chunks(model, stack, k, indices, chunk):
    """The generator of :func:`jacobian_chunks` over a validated stack."""
    for start in range(0, stack.shape[0], chunk):
        stop = min(start + chunk, stack.shape[0])
        yield start, stop, _structured_jacobians(model, stack[start:stop], k, indices)


def flatten_jacobian(J, taylor=False):
    """The paper's block matrix d y_(k) / d q_(K_in - 1) from a Jacobian of :func:`jacobian`.

    J: (..., k+1, m, K_in, nv) raw blocks d y^(l) / d q^(r), real and finite (masked and
    complex arrays are refused); k <= MAX_ORDER. Returns (..., (k+1) m, K_in nv) with rows
    and columns order-major (cmtm_math.md §1.4): block (l, r) = J[..., l, :, r, :].
    With ``taylor=True`` (a bool) the blocks are Taylor-scaled, d y_hat_l / d q_hat_r =
    r!/l! d y^(l) / d q^(r) (§7.6), where every comprehensive Jacobian is a sum of
    block-Toeplitz matrices times shifts (§8).
    """
    taylor = check_flag("taylor", taylor)
    J = as_float_array("J", J)
    if J.ndim < 4:
        raise ValueError(f"J: expected shape (..., k+1, m, K_in, nv), got {J.shape}")
    k1, m, K_in, nv = J.shape[-4:]
    if k1 > MAX_ORDER + 1 or K_in > MAX_ORDER + 3:
        raise ValueError(f"J: expected at most {MAX_ORDER + 1} output orders k+1 and "
                         f"{MAX_ORDER + 3} input orders K_in (cmtm.MAX_ORDER = {MAX_ORDER}), "
                         f"got {k1} and {K_in}")
    if taylor:
        fact = factorials(max(k1, K_in))
        J = J * (fact[None, :K_in, None] / fact[:k1, None, None, None])
    return J.reshape(J.shape[:-4] + (k1 * m, K_in * nv))
