"""Input validation of the engine's public functions (DESIGN.md "Errors"), and the checks of
their results: the model's arrays (once per model object), shapes, dtypes, finiteness, the
order (at most :data:`MAX_ORDER`), the points fixed to links, the quantity names, the size of
the results (at most :func:`memory_budget` bytes) and their finiteness. Every check raises
ValueError saying what was expected and what came.

Derivative stacks at this boundary are raw derivatives: ``q_stack[..., r, :] = q^(r)``.

A single instant ``(K, nv)`` is accepted where ``(n_samples, K, nv)`` is (the sample axis is
then dropped from the results) when K is at most EXTRA_INSTANT_ORDERS (2) more than the
call needs: a longer 2-D array is refused, since it is most likely ``(n_samples, nv)``
positions.

Imports numpy, the joint-type codes and the raw <-> Taylor scaling: no kernel runs here.
"""
import functools
import os
from numbers import Integral

import numpy as np

from cmtm.spatial import JOINT_PRISMATIC, JOINT_REVOLUTE
from cmtm.structured_jacobians import QUANTITIES
from cmtm.taylor import raw_from_taylor
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
MODELS_KEPT = 32
"""Models whose checks (and kernel models, :mod:`cmtm.dispatch`) are kept by id."""


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
    if len(_CHECKED_MODELS) >= MODELS_KEPT:
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
    stack = q_stack[None] if single else q_stack
    if stack.shape[1] > n_orders:
        stack = np.ascontiguousarray(stack[:, :n_orders])
    return _read_only(stack), single


def check_joint_positions(model, q):
    """Validate q: (n_samples, nv) or (nv,) -> (n_samples, nv), read-only (as
    :func:`check_stack`), and the single flag."""
    nv = len(model.parent)
    q = as_float_array("q", q)
    if q.ndim not in (1, 2) or q.shape[-1] != nv:
        raise ValueError(f"q: expected shape (n_samples, {nv}) or ({nv},), got {q.shape}; "
                         f"the model has nv={nv}")
    return _read_only(q.reshape(-1, nv)), q.ndim == 1


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


SAMPLES_SPLIT = "call it on at most {chunk} samples at a time (q_stack[i:i + {chunk}])"
"""The advice of :func:`reserve` for a per-sample function."""


# --- results ------------------------------------------------------------------------------

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


# --- quantities ---------------------------------------------------------------------------

def quantity_indices(quantities):
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
