"""Public entry points of the engine: validate, convert raw <-> Taylor, call the kernels.

Derivative stacks at this boundary are raw derivatives: ``q_stack[..., r, :] = q^(r)``.
"""
from dataclasses import dataclass
from numbers import Integral
from typing import Optional

import numpy as np

from cmtm.comprehensive import link_cmtm_kernel, link_poses_kernel, motion_kernel
from cmtm.rnea import crba_kernel, rnea_kernel
from cmtm.structured_jacobians import INPUT_OFFSET, QUANTITIES, jacobian_kernel
from cmtm.taylor import factorials, raw_from_taylor, taylor_from_raw

_MODEL_FIELDS = ("parent", "subtree_end", "joint_type", "axis", "placement_R", "placement_p",
                 "mass", "com", "spatial_inertia", "gravity")


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
    """Raise ValueError unless ``model`` looks like a compiled tree (kinematic_trees.compile_tree)."""
    missing = [f for f in _MODEL_FIELDS if not hasattr(model, f)]
    if missing:
        raise ValueError(f"model: expected a CompiledTree (kinematic_trees.compile_tree), "
                         f"got {type(model).__name__} without {', '.join(missing)}")
    if len(model.parent) == 0:
        raise ValueError("model: expected at least one movable joint, got nv = 0 (every "
                         "joint is fixed); its mass properties are model.base_mass, "
                         "base_com and base_inertia_com")


def check_order(order):
    """Raise ValueError unless ``order`` is a non-negative integer."""
    if isinstance(order, bool) or not isinstance(order, Integral) or order < 0:
        raise ValueError(f"order: expected a non-negative integer, got {order!r}")
    return int(order)


def as_float_array(name, value):
    """``value`` as a C-contiguous float64 array of the same shape; integers are accepted,
    other dtypes (bool, complex, object, strings) rejected; NaN and inf rejected."""
    array = np.asarray(value)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name}: expected a real float array, got dtype {array.dtype}")
    array = np.asarray(array, dtype=np.float64, order="C")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return array


def check_flag(name, value):
    """Raise ValueError unless ``value`` is a bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}: expected True or False, got {value!r}")
    return bool(value)


def check_stack(model, q_stack, n_orders):
    """Validate a raw derivative stack; return it as (n_samples, n_orders, nv) and whether
    the input was a single instant (K, nv). Extra derivative orders are ignored."""
    nv = len(model.parent)
    q_stack = as_float_array("q_stack", q_stack)
    single = q_stack.ndim == 2
    if q_stack.ndim not in (2, 3) or q_stack.shape[-1] != nv:
        raise ValueError(f"q_stack: expected shape (n_samples, K, {nv}) or (K, {nv}), got "
                         f"{q_stack.shape}; the model has nv={nv}")
    if q_stack.shape[-2] < n_orders:
        raise ValueError(f"q_stack: expected at least {n_orders} derivative orders "
                         f"(q, q', ..., q^({n_orders - 1})), got {q_stack.shape[-2]}")
    stack = q_stack.reshape((-1,) + q_stack.shape[-2:])[:, :n_orders]
    return np.ascontiguousarray(stack), single


def raw_result(name, taylor, axis=1):
    """Convert a kernel's Taylor-scaled result to raw derivatives; raise ValueError instead
    of returning a non-finite result (overflow on extreme inputs or very high orders)."""
    with np.errstate(over="ignore", invalid="ignore"):
        raw = raw_from_taylor(taylor, axis=axis)
    return check_finite(name, raw)


def check_finite(name, array):
    """Raise ValueError instead of returning a non-finite result (max and min propagate NaN
    and reach inf, without a mask as large as the array)."""
    if array.size and not (np.isfinite(array.max()) and np.isfinite(array.min())):
        raise ValueError(f"{name}: expected a finite result, got overflow (inputs or order "
                         f"too large for float64)")
    return array


def model_arrays(model):
    """The arrays every kernel takes, in kernel argument order."""
    return (model.parent, model.joint_type, model.axis, model.placement_R, model.placement_p)


def motion(model, q_stack, order=0, *, dynamics=True, world=True):
    """Comprehensive kinematics and dynamics of order k at every sample (§4-§5).

    q_stack : (n_samples, K, nv) or (K, nv) float64, raw derivatives q, q', ..., q^(K-1);
        K >= order+3 with ``dynamics`` (torques of order k need q^(k+2)), else K >= order+2.
    Returns a :class:`Motion` of raw derivative stacks of orders 0..order; with
    ``dynamics=False`` f_L, f_J and tau are None, with ``world=False`` w_h_L and w_h_J.

    >>> import kinematic_trees as kt, numpy as np
    >>> model = kt.compile_tree(kt.two_link_planar(), gravity=(0, -9.81, 0))
    >>> q = np.array([[np.pi / 6, np.pi / 3], [0, 0], [0, 0]])
    >>> np.round(motion(model, q).tau[0], 4)
    array([12.7436,  0.    ])
    """
    check_model(model)
    k = check_order(order)
    dynamics = check_flag("dynamics", dynamics)
    world = check_flag("world", world)
    stack, single = check_stack(model, q_stack, k + 3 if dynamics else k + 2)
    qhat = taylor_from_raw(stack)
    n_samples, nv = stack.shape[0], stack.shape[2]
    link_shape = (n_samples, k + 1, nv, 6)
    empty = np.empty((0, 0, 0, 6))
    kin = [np.empty(link_shape) for _ in range(3)]
    world_out = [np.empty(link_shape) if world else empty for _ in range(2)]
    dyn = [np.empty(link_shape) if dynamics else empty for _ in range(2)]
    tau = np.empty((n_samples, k + 1, nv)) if dynamics else np.empty((0, k + 1, 0))
    motion_kernel(*model_arrays(model), model.spatial_inertia, np.asarray(model.gravity),
                  qhat, True, world, dynamics, kin[0], kin[1], world_out[0], kin[2],
                  world_out[1], dyn[0], dyn[1], tau)

    def finish(name, array, wanted):
        if not wanted:
            return None
        array = raw_result(name, array)
        return array[0] if single else array

    return Motion(order=k, v_L=finish("v_L", kin[0], True), h_L=finish("h_L", kin[1], True),
                  w_h_L=finish("w_h_L", world_out[0], world), h_J=finish("h_J", kin[2], True),
                  w_h_J=finish("w_h_J", world_out[1], world),
                  f_L=finish("f_L", dyn[0], dynamics), f_J=finish("f_J", dyn[1], dynamics),
                  tau=finish("tau", tau, dynamics))


def inverse_dynamics(model, q_stack, order=0):
    """Joint torque stacks tau, tau', ..., tau^(k) with gravity: (n_samples, k+1, nv) raw.

    The fast path of :func:`motion` when only torques are wanted; q_stack needs k+3 orders.
    Order 0 runs the classic recursive Newton-Euler kernel (``cmtm.rnea``), higher orders
    the comprehensive passes.
    """
    check_model(model)
    k = check_order(order)
    stack, single = check_stack(model, q_stack, k + 3)
    n_samples, nv = stack.shape[0], stack.shape[2]
    if k == 0:
        tau = np.empty((n_samples, nv))
        rnea_kernel(*model_arrays(model), model.spatial_inertia, model.mass, model.com,
                    np.asarray(model.gravity),
                    np.ascontiguousarray(stack[:, 0]), np.ascontiguousarray(stack[:, 1]),
                    np.ascontiguousarray(stack[:, 2]), tau)
        tau = check_finite("tau", tau)[:, None, :]
    else:
        tau = np.empty((n_samples, k + 1, nv))
        none = np.empty((0, 0, 0, 6))
        motion_kernel(*model_arrays(model), model.spatial_inertia, np.asarray(model.gravity),
                      taylor_from_raw(stack), False, False, True,
                      none, none, none, none, none, none, none, tau)
        tau = raw_result("tau", tau)
    return tau[0] if single else tau


def _joint_positions(model, q):
    """Validate q: (n_samples, nv) or (nv,) -> (n_samples, nv) and the single flag."""
    nv = len(model.parent)
    q = as_float_array("q", q)
    if q.ndim not in (1, 2) or q.shape[-1] != nv:
        raise ValueError(f"q: expected shape (n_samples, {nv}) or ({nv},), got {q.shape}; "
                         f"the model has nv={nv}")
    return q.reshape(-1, nv), q.ndim == 1


def link_poses(model, q):
    """World (base-frame) homogeneous poses of the link frames: (n_samples, n_links, 4, 4)
    for q of shape (n_samples, nv), or (n_links, 4, 4) for q of shape (nv,)."""
    check_model(model)
    q2, single = _joint_positions(model, q)
    n_samples, nv = q2.shape
    R = np.empty((n_samples, nv, 3, 3))
    p = np.empty((n_samples, nv, 3))
    link_poses_kernel(*model_arrays(model), q2, R, p)
    T = np.zeros((n_samples, nv, 4, 4))
    T[..., :3, :3] = R
    T[..., :3, 3] = p
    T[..., 3, 3] = 1.0
    return T[0] if single else T


def link_transform_derivatives(model, q_stack, order=0):
    """Raw time derivatives A_L, A_L', ..., A_L^(k) of every link's 6x6 motion transform
    (world <- link, base at rest): (n_samples, k+1, n_links, 6, 6), or without the sample
    axis for a single instant. q_stack needs k+1 orders. Divided by l! these are the link
    CMTM blocks X_l of cmtm_math.md §2.1.
    """
    check_model(model)
    k = check_order(order)
    stack, single = check_stack(model, q_stack, k + 1)
    X_L = np.empty((stack.shape[0], stack.shape[2], k + 1, 6, 6))
    link_cmtm_kernel(*model_arrays(model), taylor_from_raw(stack), X_L)
    A = raw_result("A_L", X_L.transpose(0, 2, 1, 3, 4))
    return A[0] if single else A


def mass_matrix(model, q):
    """Joint-space mass matrix M(q): (n_samples, nv, nv) or (nv, nv) for a single q."""
    check_model(model)
    q2, single = _joint_positions(model, q)
    M = np.empty((q2.shape[0], q2.shape[1], q2.shape[1]))
    crba_kernel(*model_arrays(model), model.spatial_inertia, model.mass, model.com, q2, M)
    return M[0] if single else M


def _quantity_indices(quantities):
    """Indices of quantity names in QUANTITIES; ValueError naming the valid ones."""
    if isinstance(quantities, str):
        quantities = (quantities,)
    indices = []
    for name in quantities:
        if name not in QUANTITIES:
            raise ValueError(f"quantity: expected one of {', '.join(QUANTITIES)}, got {name!r}")
        indices.append(QUANTITIES.index(name))
    if not indices:
        raise ValueError("quantities: expected at least one quantity name, got none")
    return indices


def jacobian_input_orders(quantity, order):
    """K_in: the number of raw input orders q, ..., q^(K_in-1) that ``quantity`` of order k
    depends on (§7.1): k+1 for tangents, k+2 velocities and momenta, k+3 forces and torques."""
    return check_order(order) + 1 + INPUT_OFFSET[_quantity_indices(quantity)[0]]


def jacobians(model, q_stack, quantities, order=0):
    """Structured Jacobians of several quantities from one pass (shared sweeps).

    Returns a dict name -> J with ``J[s, j, :, r, :] = d y^(j) / d q^(r)`` (raw derivatives),
    shape ``(n_samples, k+1, m, K_in, nv)``: m = 6 n_links for per-link and per-joint
    6-vectors (link-major, angular-first), m = nv for the joint torque; K_in as in
    :func:`jacobian_input_orders`. The sample axis is dropped for a single instant.
    """
    check_model(model)
    k = check_order(order)
    indices = _quantity_indices(quantities)
    depth = max(INPUT_OFFSET[q] for q in indices)
    stack, single = check_stack(model, q_stack, k + 1 + depth)
    n_samples, nv = stack.shape[0], stack.shape[2]
    wanted = np.zeros(len(QUANTITIES), dtype=np.bool_)
    wanted[indices] = True
    empty = np.zeros((0, 0, 0, 0, 0))
    outputs = tuple(
        np.zeros((n_samples, k + 1, nv if QUANTITIES[q] == "joint_torque" else 6 * nv,
                  k + 1 + INPUT_OFFSET[q], nv)) if wanted[q] else empty
        for q in range(len(QUANTITIES)))
    jacobian_kernel(model.parent, model.subtree_end, model.joint_type, model.axis,
                    model.placement_R, model.placement_p, model.spatial_inertia,
                    np.asarray(model.gravity), taylor_from_raw(stack), k, wanted, outputs)
    result = {}
    for q in indices:
        J = check_finite(QUANTITIES[q], outputs[q])
        result[QUANTITIES[q]] = J[0] if single else J
    return result


def jacobian(model, q_stack, quantity, order=0):
    """Structured Jacobian of one quantity of ``cmtm.QUANTITIES`` (paper Table 4, Lemmas 1-6);
    see :func:`jacobians` for the layout."""
    return jacobians(model, q_stack, (quantity,), order)[quantity]


def jacobian_chunks(model, q_stack, quantities, order=0, chunk=32):
    """Structured Jacobians computed ``chunk`` samples at a time, for trajectories whose
    dense Jacobians do not fit in memory at once (e.g. 128 DoF, order 4: 4.6 MB of torque
    Jacobian per sample). Yields ``(start, stop, jacobians)`` with ``jacobians`` the dict
    :func:`jacobians` returns for samples ``start:stop``.
    """
    if isinstance(chunk, bool) or not isinstance(chunk, Integral) or chunk < 1:
        raise ValueError(f"chunk: expected a positive integer, got {chunk!r}")
    q_stack = as_float_array("q_stack", q_stack)
    if q_stack.ndim != 3:
        raise ValueError(f"q_stack: expected shape (n_samples, K, nv), got {q_stack.shape}")
    for start in range(0, q_stack.shape[0], chunk):
        stop = min(start + chunk, q_stack.shape[0])
        yield start, stop, jacobians(model, q_stack[start:stop], quantities, order)


def flatten_jacobian(J, taylor=False):
    """The paper's block matrix d y_(k) / d q_(K_in - 1) from a Jacobian of :func:`jacobian`.

    J: (..., k+1, m, K_in, nv) raw blocks d y^(l) / d q^(r). Returns (..., (k+1) m, K_in nv)
    with rows and columns order-major (cmtm_math.md §1.4): block (l, r) = J[..., l, :, r, :].
    With ``taylor=True`` the blocks are Taylor-scaled, d y_hat_l / d q_hat_r =
    r!/l! d y^(l) / d q^(r) (§7.6), where every comprehensive Jacobian is a sum of
    block-Toeplitz matrices times shifts (§8).
    """
    J = np.asarray(J, dtype=np.float64)
    if J.ndim < 4:
        raise ValueError(f"J: expected shape (..., k+1, m, K_in, nv), got {J.shape}")
    k1, m, K_in, nv = J.shape[-4:]
    if taylor:
        fact = factorials(max(k1, K_in))
        J = J * (fact[None, :K_in, None] / fact[:k1, None, None, None])
    return J.reshape(J.shape[:-4] + (k1 * m, K_in * nv))
