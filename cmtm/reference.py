"""References for tests: the naive numpy algorithms of :mod:`cmtm.naive`, finite
differences of the engine's forward passes, and the dense forms of the engine's operators.

The naive references (``rnea_naive``, ``link_velocities_naive``, ..., ``taylor_coefficients``,
``central_jacobian``, the oracle ``oracle_jacobians``) live in :mod:`cmtm.naive`, which
shares no code with the engine (tests/test_layering.py keeps it off every engine module);
their names are re-exported here.

The finite-difference Jacobians (``fd_jacobian``) are different: they differentiate the
engine's own forward passes numerically, so that the structured Jacobians (cmtm.jacobian,
cmtm.jacobians) are checked against the nonlinear map they linearize; they use the public
forward passes of cmtm.api, never the Jacobian kernels. A bug in a forward pass that the
Jacobian kernels share is invisible to them: the naive oracle catches those.

The dense forms (``motion_cross``, ``force_cross``, ``motion_transform``, ``toeplitz``,
``shift_matrix``, ``tangent_matrix``) and the CMTM recursions that the engine only runs in
other shapes (``cmtm_inverse_blocks``, ``comprehensive_velocity``) write the paper's
operators whole, cmtm_math.md §1-§2, §6.3, in forms that no kernel uses; the tests compare
the kernels' loops against them. They are Numba functions or plain numpy (float64),
Taylor-scaled where a stack is involved, like the kernel modules they came from.
"""
import math

import numpy as np

from cmtm._jit import jit_allocating
from cmtm.api import (check_model, check_order, check_points, check_stack, inverse_dynamics,
                      link_transform_derivatives, motion, point_motion)
from cmtm.cmtm_matrix import cmtm_inverse_blocks_from_crosses, velocity_crosses
from cmtm.naive import (CENTRAL_STEP, FD_METHODS, FIELD_OF, RICHARDSON_LEVELS,
                        RICHARDSON_STEP, central_jacobian, factorial_column, joint_screws,
                        link_accelerations_naive, link_momenta_naive, link_poses_naive,
                        link_velocities_naive, mass_matrix_naive, rnea_naive,
                        tangent_jacobian, taylor_coefficients)
from cmtm.naive import INPUT_OFFSET as FD_INPUT_OFFSET
from cmtm.spatial import skew

__all__ = ["CENTRAL_STEP", "FD_INPUT_OFFSET", "FD_METHODS", "RICHARDSON_LEVELS",
           "RICHARDSON_STEP", "central_jacobian", "cmtm_inverse_blocks",
           "comprehensive_velocity", "fd_jacobian", "fd_jacobians", "fd_point_jacobian",
           "force_cross",
           "link_accelerations_naive", "link_momenta_naive", "link_poses_naive",
           "link_velocities_naive", "mass_matrix_naive", "motion_cross", "motion_transform",
           "rnea_naive", "shift_matrix", "tangent_matrix", "taylor_coefficients", "toeplitz"]


# --- Finite-difference Jacobians of the engine (a reference for cmtm.jacobian) ---
#
# Unlike the naive functions of cmtm.naive, these references *call* the engine's forward passes
# (cmtm.motion, cmtm.link_transform_derivatives): they differentiate the nonlinear map
# q_stack -> output stack numerically, so they check the structured Jacobians
# (cmtm.jacobian / cmtm.jacobians, Lemmas 1-6) and nothing else; they never import the
# Jacobian kernels.

def _joint_stack_values(model, stacks, order, offset):
    """S_i q_i^(l + offset), l = 0..order: (N, order+1, 6 nv), link-major, angular-first.

    offset 1 is the joint velocity nu_J^(l) = S q^(l+1); offset 0 is the linear map whose
    Jacobian is the joint tangent's definition dx_J^(l) = S dq^(l) (§3.1, Lemma 1).
    """
    S = joint_screws(model)
    rows = stacks[:, offset:order + 1 + offset, :, None] * S   # (N, k+1, nv, 6)
    return rows.reshape(rows.shape[:2] + (-1,))


def _link_tangent_jacobian(model, stack, order, step, method, levels):
    """d a^(l) / d q^(r) (n_samples, k+1, 6 n, k+1, nv) of the link tangent stacks (§6.2):
    :func:`cmtm.naive.tangent_jacobian` of the link CMTM blocks X_l = A_L^(l) / l! of
    :func:`cmtm.link_transform_derivatives` and of their finite-difference derivatives with
    respect to each raw input q^(r)_j."""
    def transforms(points):
        A = link_transform_derivatives(model, points, order=order)   # (N, k+1, n, 6, 6) raw
        return A / factorial_column(order + 1, 4)

    dX = central_jacobian(transforms, stack, step, method, levels)  # (S, k+1, n, 6, 6, K, nv)
    return tangent_jacobian(transforms(stack), dX)


def _fd_group(quantity):
    """Quantities that one set of perturbed evaluations serves: 'motion', 'joint' or the
    link tangent on its own."""
    if quantity in FIELD_OF:
        return "motion"
    return "joint" if quantity.startswith("joint_") else "link_tangent"


def _fd_quantity_names(quantities):
    """Tuple of validated quantity names (a str is one name)."""
    if isinstance(quantities, str):
        quantities = (quantities,)
    quantities = tuple(quantities)
    if not quantities:
        raise ValueError("quantities: expected at least one quantity name, got none")
    for name in quantities:
        if name not in FD_INPUT_OFFSET:
            raise ValueError(f"quantity: expected one of {', '.join(FD_INPUT_OFFSET)}, "
                             f"got {name!r}")
    return quantities


def fd_jacobians(model, q_stack, quantities, order=0, step=None, method="central",
                 levels=RICHARDSON_LEVELS):
    """Finite-difference Jacobians of several quantities, in the layout of cmtm.jacobians.

    Same arguments as :func:`fd_jacobian` with a sequence of names; the quantities read
    from :func:`cmtm.motion` share one set of perturbed motion calls (perturbing the
    deepest input order any of them needs; each result keeps its own K_in columns, which
    are computed exactly as by :func:`fd_jacobian`). Returns a dict name -> J.
    """
    check_model(model)
    k = check_order(order)
    names = _fd_quantity_names(quantities)
    depth = max(FD_INPUT_OFFSET[name] for name in names)
    stack, single = check_stack(model, q_stack, k + 1 + depth)
    result = {}
    for group in ("joint", "link_tangent", "motion"):
        members = [name for name in names if _fd_group(name) == group]
        if not members:
            continue
        K = k + 1 + max(FD_INPUT_OFFSET[name] for name in members)
        points = np.ascontiguousarray(stack[:, :K])
        if group == "link_tangent":
            result["link_tangent"] = _link_tangent_jacobian(model, points, k, step, method,
                                                            levels)
            continue
        if group == "joint":
            def values(batch, members=members):
                return np.concatenate([_joint_stack_values(model, batch, k,
                                                           FD_INPUT_OFFSET[name])
                                       for name in members], axis=-1)
        elif members == ["joint_torque"]:
            # the engine's fastest torque path, so that FD timings are a fair baseline
            def values(batch):
                return inverse_dynamics(model, batch, order=k)
        else:
            dynamics = any(FD_INPUT_OFFSET[name] == 2 for name in members)
            world = any(name.endswith("_world") for name in members)

            def values(batch, members=members, dynamics=dynamics, world=world):
                mo = motion(model, batch, order=k, dynamics=dynamics, world=world)
                fields = [getattr(mo, FIELD_OF[name]) for name in members]
                return np.concatenate([f.reshape(f.shape[:2] + (-1,)) for f in fields], axis=-1)

        J = central_jacobian(values, points, step, method, levels)   # (S, k+1, M, K, nv)
        start = 0
        for name in members:
            width = len(model.parent) if name == "joint_torque" else 6 * len(model.parent)
            result[name] = J[:, :, start:start + width, :k + 1 + FD_INPUT_OFFSET[name]]
            start += width
    return {name: (result[name][0] if single else result[name]).copy() for name in names}


def fd_jacobian(model, q_stack, quantity, order=0, step=None, method="central",
                levels=RICHARDSON_LEVELS):
    """Finite-difference Jacobian of one quantity of cmtm.QUANTITIES, the oracle of
    :func:`cmtm.jacobian` (same layout and validation).

    model : kinematic_trees.CompiledTree. q_stack : (n_samples, K, nv) or (K, nv) float64,
    raw derivatives q, q', ..., q^(K-1), K >= K_in (= order + 1 + s, s = 0 tangents,
    1 velocities and momenta, 2 forces and torques; extra orders are ignored).
    quantity : name in cmtm.QUANTITIES. order : k >= 0.
    step, method, levels : as in :func:`central_jacobian` (relative step; "central" plain
    central differences with h = eps**(1/3) max(1, |x|), "richardson" the extrapolated
    variant good to ~1e-12 relative).
    Returns J (n_samples, k+1, m, K_in, nv) float64, ``J[s, j, :, r, :] = d y^(j) / d q^(r)``
    (raw derivatives), m = 6 nv (link-major, angular-first) or nv for joint_torque; the
    sample axis is dropped for a single instant.

    What is differentiated, column by column (every perturbed stack of every sample is a
    sample of one engine call):
      * velocities, momenta, forces, torques: :func:`cmtm.motion` (kinematics and momenta
        from its gravity-free pass, forces and torques with gravity);
      * link_tangent: :func:`cmtm.link_transform_derivatives`, turned into the body-frame
        tangent stack by T(X)^{-1} dT(X) = T([da_l x]) (cmtm_math.md §6.2);
      * joint_velocity nu_J^(l) = S q^(l+1) and joint_tangent dx_J^(l) = S dq^(l): their
        definitions (§3.1), differentiated the same way.

    >>> import kinematic_trees as kt
    >>> arm = kt.compile_tree(kt.two_link_planar())
    >>> J = fd_jacobian(arm, np.zeros((3, 2)), "link_velocity", order=0)
    >>> J.shape, float(np.round(J[0, 2, 1, 0], 12))   # d omega_z of link 0 / d q'_0
    ((1, 12, 2, 2), 1.0)
    """
    return fd_jacobians(model, q_stack, (quantity,), order, step, method, levels)[quantity]


def fd_point_jacobian(model, q_stack, points, order=0, step=None, method="central",
                      levels=RICHARDSON_LEVELS):
    """Finite-difference Jacobian of the point velocity stacks of :func:`cmtm.point_motion`,
    the reference of :func:`cmtm.point_jacobian` (same arguments, layout and validation;
    step, method, levels as in :func:`fd_jacobian`): J (n_samples, k+1, 3 n_points, k+2,
    nv), ``J[s, l, 3 t + d, r, j] = d p_t,d^(l+1) / d q_j^(r)``."""
    model = check_model(model)
    k = check_order(order)
    check_points(model, points)
    stack, single = check_stack(model, q_stack, k + 2)

    def values(batch):
        return point_motion(model, batch, points, order=k).reshape(batch.shape[0], k + 1, -1)

    J = central_jacobian(values, stack, step, method, levels)
    return J[0] if single else J


# --- Dense forms of the engine's operators (cmtm_math.md §1-§2, §6.3) ---
#
# The kernels apply these operators in loops (motion_cross_into, the block convolutions of
# cmtm.taylor, the _from_crosses recursions of cmtm.cmtm_matrix); here they are whole
# matrices, for tests and for the paper's flattened forms.

@jit_allocating
def motion_cross(u):
    """[u x_6] = [[w x, 0], [v x, w x]] for the twist u (6,) = [w; v] (§1.1), as a new
    array: the block that ``velocity_crosses`` builds for the one-element stack (u,)."""
    return velocity_crosses(np.ascontiguousarray(u).reshape((1, 6)), 1)[0]


@jit_allocating
def force_cross(u):
    """[u x_6^*] = -[u x_6]^T = [[w x, v x], [0, w x]] (§1.1)."""
    out = np.zeros((6, 6))
    w = skew(u[:3])
    v = skew(u[3:])
    out[:3, :3] = w
    out[3:, 3:] = w
    out[:3, 3:] = v
    return out


@jit_allocating
def motion_transform(R, p):
    """A = [[R, 0], [[p x] R, R]]: maps twists in frame c to frame p, (R, p) = pose of c in p."""
    out = np.zeros((6, 6))
    pxR = skew(p) @ R
    out[:3, :3] = R
    out[3:, 3:] = R
    out[3:, :3] = pxR
    return out


def toeplitz(blocks):
    """Dense lower block-Toeplitz matrix T(M_0, ..., M_k) from blocks ``(k+1, r, c)``.

    Block (l, m) is M_{l-m} for m <= l and zero above the diagonal (§1.3); the kernels
    never build it.
    """
    blocks = np.asarray(blocks, dtype=np.float64)
    n, r, c = blocks.shape
    out = np.zeros((n * r, n * c))
    for l in range(n):
        for m in range(l + 1):
            out[l * r:(l + 1) * r, m * c:(m + 1) * c] = blocks[l - m]
    return out


def shift_matrix(order, s, size):
    """D_s of §1.3: maps a_(order+s) to d_(order)(a^(s)); nonzero blocks (l, l+s) = (l+s)!/l! E."""
    out = np.zeros(((order + 1) * size, (order + s + 1) * size))
    eye = np.eye(size)
    for l in range(order + 1):
        scale = math.factorial(l + s) / math.factorial(l)
        out[l * size:(l + 1) * size, (l + s) * size:(l + s + 1) * size] = scale * eye
    return out


@jit_allocating
def cmtm_inverse_blocks(Ainv, nu, out):
    """Inverse CMTM blocks (§2.2): X-_0 = A^{-1}, X-_{l+1} = -1/(l+1) sum_m [nu_m x] X-_{l-m}.

    Ainv: (6, 6); nu: (>=K, 6) Taylor-scaled body velocity; out: (K+1, 6, 6). The kernels
    call ``cmtm_inverse_blocks_from_crosses`` with the [nu_m x] they already hold.
    """
    cmtm_inverse_blocks_from_crosses(Ainv, velocity_crosses(nu, out.shape[0] - 1), out)


@jit_allocating
def comprehensive_velocity(X):
    """Recover nu_0..nu_{K-1} from CMTM blocks X (K+1, 6, 6) (§2.1):
    [nu_l x] = X_0^{-1} ((l+1) X_{l+1} - sum_{m<l} X_{l-m} [nu_m x]).
    """
    K = X.shape[0] - 1
    X0inv = np.linalg.inv(X[0])
    nu = np.zeros((K, 6))
    for l in range(K):
        acc = (l + 1) * X[l + 1]
        for m in range(l):
            acc = acc - X[l - m] @ motion_cross(nu[m])
        cross = X0inv @ acc
        nu[l, 0] = cross[2, 1]
        nu[l, 1] = cross[0, 2]
        nu[l, 2] = cross[1, 0]
        nu[l, 3] = cross[5, 1]
        nu[l, 4] = cross[3, 2]
        nu[l, 5] = cross[4, 0]
    return nu


def tangent_matrix(nu, order):
    """Square tangent matrix W_(k) of §6.3 (dense, Taylor-scaled), mapping the tangent stack
    dx_(k) to du_(k) = [da_0; dnu_0; ...; dnu_{k-1}].

    Blocks: W_00 = E, W_ll = l E (l >= 1), W_lm = [nu_{l-1-m} x] for m < l, zero above.
    nu: (>=order, 6) Taylor-scaled body velocity.
    """
    W = np.zeros((6 * (order + 1), 6 * (order + 1)))
    W[:6, :6] = np.eye(6)
    for l in range(1, order + 1):
        W[6 * l:6 * l + 6, 6 * l:6 * l + 6] = l * np.eye(6)
        for m in range(l):
            W[6 * l:6 * l + 6, 6 * m:6 * m + 6] = motion_cross(np.ascontiguousarray(nu[l - 1 - m]))
    return W
