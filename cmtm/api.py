"""Public entry points of the engine: validate (:mod:`cmtm.validation`), convert raw <->
Taylor, run the kernels on threads (:mod:`cmtm.dispatch`).

Derivative stacks at this boundary are raw derivatives: ``q_stack[..., r, :] = q^(r)``; a
single instant ``(K, nv)`` is accepted where ``(n_samples, K, nv)`` is (the sample axis is
then dropped from the results). Every function checks its inputs before a kernel sees them
and raises ValueError saying what was expected and what came.

The names of those two modules that tests and ``ioc`` read as ``cmtm.api.X`` stay
importable from here; the others live in their modules only.
"""
from dataclasses import dataclass
from numbers import Integral
from typing import Optional

import numpy as np

from cmtm.comprehensive import (link_cmtm_kernel, link_cmtm_workspace, link_poses_kernel,
                                link_poses_workspace, motion_kernel, motion_workspace)
from cmtm.dispatch import (MIN_CHUNK_SECONDS, chunk_count, kernel_model_of,  # noqa: F401
                           run_chunks, run_flagging_finite, run_on_threads, workspace)
from cmtm.point_motion import point_kernel, point_workspace
from cmtm.rnea import crba_kernel, crba_workspace, rnea_kernel, rnea_workspace
from cmtm.rnea_derivatives import torque_derivatives_kernel, torque_derivatives_workspace
from cmtm.structured_jacobians import (INPUT_OFFSET, JOINT_TORQUE, LINK_VELOCITY, QUANTITIES,
                                       jacobian_kernel, jacobian_sizes, jacobian_workspace)
from cmtm.taylor import factorials, taylor_from_raw
from cmtm.torque_jacobian import torque_jacobian_kernel, torque_workspace
from cmtm.validation import (DEFAULT_MEMORY_BUDGET, EXTRA_INSTANT_ORDERS,  # noqa: F401
                             MAX_ORDER, MEMORY_BUDGET_VARIABLE, SAMPLES_SPLIT,
                             SMALL_FINITE_CHECK, all_finite, as_float_array, check_finite,
                             check_flag, check_joint_positions, check_model, check_order,
                             check_points, check_stack, memory_budget, quantity_indices,
                             raw_results, reserve)
from cmtm.velocity_derivatives import (velocity_derivatives_kernel,
                                       velocity_derivatives_workspace)


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
            SAMPLES_SPLIT)
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


def link_poses(model, q):
    """World (base-frame) homogeneous poses of the link frames: (n_samples, n_links, 4, 4)
    for q of shape (n_samples, nv), or (n_links, 4, 4) for q of shape (nv,)."""
    model = check_model(model)
    q2, single = check_joint_positions(model, q)
    n_samples, nv = q2.shape
    reserve("link_poses", n_samples, 8 * nv * (9 + 3 + 16), SAMPLES_SPLIT)
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
            SAMPLES_SPLIT)
    X_L = np.empty((stack.shape[0], stack.shape[2], k + 1, 6, 6))
    run_on_threads(model, link_cmtm_kernel, "link_cmtm", (k,),
                   lambda kmodel, slots: link_cmtm_workspace(kmodel, k + 1, slots),
                   stack.shape[0], taylor_from_raw(stack), X_L)
    A = raw_results({"A_L": X_L.transpose(0, 2, 1, 3, 4)})["A_L"]
    return A[0] if single else A


def _point_pass(model, q_stack, points, order, jacobian):
    """(motion, J, single) of :func:`point_motion` and :func:`point_jacobian` (J None
    unless ``jacobian``)."""
    model = check_model(model)
    k = check_order(order)
    point_link, point_r = check_points(model, points)
    stack, single = check_stack(model, q_stack, k + 2)
    n_samples, nv = stack.shape[0], stack.shape[2]
    n_points = len(point_link)
    name = "point_jacobian" if jacobian else "point_motion"
    unit = 8 * (k + 1) * 3 * n_points * (1 + (k + 2) * nv * jacobian)
    reserve(name, n_samples, unit, SAMPLES_SPLIT)
    motion_out = np.empty((n_samples, k + 1, n_points, 3))
    J = np.zeros((n_samples, k + 1, 3 * n_points, k + 2, nv) if jacobian else (0,) * 5)
    run_flagging_finite(name, model, point_kernel, name, (k,),
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
    q2, single = check_joint_positions(model, q)
    reserve("mass_matrix", q2.shape[0], 8 * q2.shape[1] ** 2, SAMPLES_SPLIT)
    M = np.empty((q2.shape[0], q2.shape[1], q2.shape[1]))
    run_on_threads(model, crba_kernel, "crba", (), crba_workspace, q2.shape[0], q2, M)
    M = check_finite("mass_matrix", M)
    return M[0] if single else M


def jacobian_input_orders(quantity, order):
    """K_in: the number of raw input orders q, ..., q^(K_in-1) that ``quantity`` of order k
    depends on (§7.1): k+1 for tangents, k+2 velocities and momenta, k+3 forces and torques."""
    return check_order(order) + 1 + INPUT_OFFSET[quantity_indices(quantity)[0]]


def _jacobian_inputs(model, q_stack, quantities, order):
    """Validated (model, k, quantity indices, stack (n_samples, K, nv), single) of a
    Jacobian call."""
    model = check_model(model)
    k = check_order(order)
    indices = quantity_indices(quantities)
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
    torque, velocity, rest = _jacobian_routes(quantity_indices(quantities))
    torque_kernel = "torque_derivatives_kernel" if check_order(order) == 0 \
        else "torque_jacobian_kernel"
    return [name for name, runs in ((torque_kernel, torque),
                                    ("velocity_derivatives_kernel", velocity),
                                    ("jacobian_kernel", rest)) if runs]


def _torque_jacobian(model, stack, k):
    """d tau / d q_stack of a validated stack: (n_samples, k+1, nv, k+3, nv), at order 0 by
    the world-frame kernel of Pinocchio's form (``cmtm.rnea_derivatives``), above by the
    world-frame jets of Lemma 6 (``cmtm.torque_jacobian``)."""
    return _torque_pass(model, stack, k, False, True)[1]


def _torque_pass(model, stack, k, values, jacobian):
    """(tau or None, J or None) of a validated stack from one call of the torque Jacobian's
    kernel of order k (:func:`_torque_derivatives_pass` at 0, :func:`_torque_jacobian_pass`
    above)."""
    if k == 0:
        return _torque_derivatives_pass(model, stack, k, values, jacobian)
    return _torque_jacobian_pass(model, stack, k, values, jacobian)


def _torque_jacobian_pass(model, stack, k, values, jacobian):
    """(tau (n_samples, k+1, nv) raw or None, J (n_samples, k+1, nv, k+3, nv) or None) of
    a validated stack, k >= 1, by the Lemma 6 kernel (one call; the cost per sample is
    kept apart for the torques alone, which skip the pairs)."""
    n_samples, nv = stack.shape[0], stack.shape[2]
    tau = np.empty((n_samples if values else 0, k + 1, nv))
    J = np.zeros((n_samples if jacobian else 0, k + 1, nv, k + 3, nv))
    run_on_threads(model, torque_jacobian_kernel, "torque_jacobian", (k, jacobian),
                   lambda kmodel, slots: torque_workspace(kmodel, k, slots),
                   n_samples, taylor_from_raw(stack[:, :k + 3]), tau, J)
    return (raw_results({"tau": tau})["tau"] if values else None,
            check_finite("joint_torque", J) if jacobian else None)


def torques_and_jacobian(model, q_stack, order=0, *, values=True, jacobian=True):
    """The joint torque stacks tau, ..., tau^(k) with gravity (n_samples, k+1, nv) raw and,
    from the same pass, their Jacobian (n_samples, k+1, nv, k+3, nv), the layout of
    :func:`jacobians`: (tau, J), either None if not asked for (``values``, ``jacobian``).

    For solvers that need both, or the torques of the points where they read both: the
    world-frame kernels of the torque Jacobian (``cmtm.rnea_derivatives`` at order 0,
    ``cmtm.torque_jacobian`` above) write tau = s . F (and its jets) from the recursions
    they run anyway, and their torques are the same bits with or without the Jacobian.
    They differ from :func:`inverse_dynamics`' and :func:`motion`'s by rounding (other
    recursions: world frame, moments about the world origin). q_stack needs k+3 orders;
    the sample axis is dropped for a single instant.
    """
    model = check_model(model)
    k = check_order(order)
    values = check_flag("values", values)
    jacobian = check_flag("jacobian", jacobian)
    stack, single = check_stack(model, q_stack, k + 3)
    nv = stack.shape[2]
    reserve("torques_and_jacobian", stack.shape[0],
            8 * (k + 1) * nv * (values + (k + 3) * nv * jacobian), SAMPLES_SPLIT)
    tau, J = _torque_pass(model, stack, k, values, jacobian)
    if single:
        return None if tau is None else tau[0], None if J is None else J[0]
    return tau, J


def _torque_derivatives_pass(model, stack, k, values, jacobian):
    """(tau (n_samples, 1, nv) or None, J (n_samples, 1, nv, 3, nv) or None) of a
    validated stack, k = 0, by the order-0 torque derivatives kernel (one call; the cost
    per sample is kept apart for the torques alone, which skip the blocks)."""
    n_samples, nv = stack.shape[0], stack.shape[2]
    tau = np.empty((n_samples if values else 0, nv))
    J = np.empty((n_samples if jacobian else 0, nv, 3, nv))
    run_flagging_finite("joint_torque", model, torque_derivatives_kernel,
                        "torque_derivatives", (jacobian,), torque_derivatives_workspace,
                        n_samples, stack, tau, J)
    return (check_finite("tau", tau)[:, None] if values else None,
            J[:, None] if jacobian else None)


def _velocity_jacobian(model, stack, k):
    """d nu / d q_stack of a validated stack: (n_samples, k+1, 6 nv, k+2, nv), by the
    world-frame kernel (``cmtm.velocity_derivatives``), which flags non-finite entries
    itself, per sample (the output can be megabytes per sample), and zeroes the samples'
    blocks before it writes them."""
    n_samples, nv = stack.shape[0], stack.shape[2]
    J = np.empty((n_samples, k + 1, 6 * nv, k + 2, nv))
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


def jacobians_nbytes(model, quantities, order=0, n_samples=1):
    """Bytes of the Jacobians :func:`jacobians` returns for ``n_samples`` samples, to size
    the chunks of :func:`jacobian_chunks` (float64; see :func:`jacobians` for the shapes).

    >>> import kinematic_trees as kt
    >>> jacobians_nbytes(kt.compile_tree(kt.panda()), "joint_torque", order=4)  # per sample
    13720
    """
    model = check_model(model)
    return n_samples * _jacobian_sample_bytes(len(model.parent), check_order(order),
                                              quantity_indices(quantities))


def _jacobian_sample_bytes(nv, k, indices):
    """Bytes per sample of the Jacobians of the quantities ``indices`` at order k."""
    return 8 * sum((k + 1) * _rows_of(q, nv) * (k + 1 + INPUT_OFFSET[q]) * nv
                   for q in indices)


def _rows_of(q, nv):
    """m, the rows of quantity index q: nv for the joint torque, else 6 nv."""
    return nv if QUANTITIES[q] == "joint_torque" else 6 * nv
