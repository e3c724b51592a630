"""Classic order-0 algorithms on rotations and translations, batched over samples and split
across threads: the recursive Newton-Euler inverse dynamics (Featherstone's ``ID.m``) and
the composite-rigid-body mass matrix (``HandC.m``).

The comprehensive engine at k = 0 computes the same torques with 6x6 CMTM blocks; these
kernels are written on the pose (R, p) of each link in its parent for speed. Angular-first,
body frames (DESIGN.md); X_i below is the motion transform from the parent of i to link i,
A_i^{-1} with A_i = [[R, 0], [[p x] R, R]], and X_i^T = A_i^* maps link i's forces to the
parent. The base moves with v_0 = 0 and a_0 = [0; -g], which puts gravity in every force.

RNEA, per sample (one line of code per line of maths)::

    vJ  = S_i q'_i                               joint velocity
    v_i = X_i v_lambda(i) + vJ                   link twist
    a_i = X_i a_lambda(i) + S_i q''_i + v_i x vJ link acceleration
    f_i = I_i a_i + v_i x^* I_i v_i              link wrench (children first ...)
    tau_i = S_i^T f_i,  f_lambda(i) += X_i^T f_i (... then through the joint to the parent)

CRBA, per sample::

    I^C_i = I_i + sum over children c of X_c^T I^C_c X_c    (children first)
    F = I^C_i S_i,  H_ii = S_i^T F,  then along the support j = lambda(i), lambda(j), ...:
    F = X_child^T F,  H_ij = H_ji = S_j^T F                   (zero off the support)

The spatial inertia about the link origin is kept as (m, m c, I_O) and its composite
likewise (``inertia_times``, ``composite_inertia_to_parent_add``).

==================  ===============  ================  ==================================
symbol              code             shape (per slot)  meaning
==================  ===============  ================  ==================================
s                   ``sample``       index             the sample
R, p                ``R, p``         (n,3,3), (n,3)    pose of link i in its parent
                                                       (R = R_0 E(q), p = p_0 (+ R_0 a q))
S_i                 ``S``            (6,)              joint screw, link frame
vJ                  ``vJ``           (6,)              S_i q'_i
v_0, a_0            ``w_v0, w_a0``   (6,)              base twist 0 and acceleration -g
v_i, a_i            ``v, a``         (n, 6)            body twist, acceleration (+ a_0)
h_i = I_i v_i       ``h``            (6,)              link momentum
f_i                 ``f``            (n, 6)            wrench on link i, then through joint i
m, m c, I_O         ``m_C, mc_C,     (n,1),(n,3),      composite mass, first moment and
of I^C_i            I_C``            (n,3,3)           rotational inertia about the origin
                                                       (m_C[i] a (1,) array to add into)
F                   ``F``            (n, 6)            F[j]: column i's I^C_i S_i carried to j
==================  ===============  ================  ==================================

Each workspace array has a leading chunk axis ("per slot" shapes above): a thread runs
the samples it claims with a slot of its own (``cmtm.api.run_chunks``), and every sample
runs the same instructions whatever its thread, so results do not depend on the thread
count.
"""
import math
from typing import NamedTuple

import numpy as np

from cmtm._jit import claim_samples, jit, jit_inline, jit_kernel, jit_leaf
from cmtm.spatial import (JOINT_REVOLUTE, force_cross_add, joint_screw_add,
                          joint_screw_into, motion_cross_add)


class RneaWorkspace(NamedTuple):
    """Work arrays of :func:`rnea_kernel`, slot c (leading axis) for chunk c."""

    E: np.ndarray
    R: np.ndarray
    p: np.ndarray
    vJ: np.ndarray
    w_v0: np.ndarray
    w_a0: np.ndarray
    v: np.ndarray
    a: np.ndarray
    h: np.ndarray
    f: np.ndarray


class CrbaWorkspace(NamedTuple):
    """Work arrays of :func:`crba_kernel`, slot c (leading axis) for chunk c."""

    E: np.ndarray
    R: np.ndarray
    p: np.ndarray
    S: np.ndarray
    m_C: np.ndarray
    mc_C: np.ndarray
    I_C: np.ndarray
    F: np.ndarray


def _slots(n_chunks):
    """Allocator of float64 arrays (n_chunks, *shape)."""
    return lambda *shape: np.empty((n_chunks,) + shape)


def rnea_workspace(kernel_model, n_chunks):
    """An :class:`RneaWorkspace` for ``kernel_model`` split into ``n_chunks`` chunks."""
    n, slot = kernel_model.parent.shape[0], _slots(n_chunks)
    return RneaWorkspace(E=slot(3, 3), R=slot(n, 3, 3), p=slot(n, 3), vJ=slot(6),
                         w_v0=slot(6), w_a0=slot(6), v=slot(n, 6), a=slot(n, 6), h=slot(6),
                         f=slot(n, 6))


def crba_workspace(kernel_model, n_chunks):
    """A :class:`CrbaWorkspace` for ``kernel_model`` split into ``n_chunks`` chunks."""
    n, slot = kernel_model.parent.shape[0], _slots(n_chunks)
    return CrbaWorkspace(E=slot(3, 3), R=slot(n, 3, 3), p=slot(n, 3), S=slot(6),
                         m_C=slot(n, 1), mc_C=slot(n, 3), I_C=slot(n, 3, 3), F=slot(n, 6))


# --- spatial algebra on (R, p) and joint screws ---

@jit_leaf
def link_pose_in_parent(joint_type, axis, R0, p0, q, E, R, p):
    """(R, p) = A_0 E(q): R = R_0 exp(q [a x]) (revolute), p = p_0 + R_0 a q (prismatic);
    E: (3, 3) work array for exp(q [a x]) = cos q E + sin q [a x] + (1 - cos q) a a^T."""
    if joint_type == JOINT_REVOLUTE:
        sin_q, cos_q = math.sin(q), math.cos(q)
        a0, a1, a2 = axis[0], axis[1], axis[2]
        sa0, sa1, sa2 = sin_q * a0, sin_q * a1, sin_q * a2
        t = 1.0 - cos_q
        E[0, 0], E[0, 1], E[0, 2] = cos_q + t * a0 * a0, t * a0 * a1 - sa2, t * a0 * a2 + sa1
        E[1, 0], E[1, 1], E[1, 2] = t * a1 * a0 + sa2, cos_q + t * a1 * a1, t * a1 * a2 - sa0
        E[2, 0], E[2, 1], E[2, 2] = t * a2 * a0 - sa1, t * a2 * a1 + sa0, cos_q + t * a2 * a2
        for r in range(3):
            for col in range(3):
                R[r, col] = R0[r, 0] * E[0, col] + R0[r, 1] * E[1, col] + R0[r, 2] * E[2, col]
            p[r] = p0[r]
    else:
        for r in range(3):
            for col in range(3):
                R[r, col] = R0[r, col]
            p[r] = p0[r] + (R0[r, 0] * axis[0] + R0[r, 1] * axis[1] + R0[r, 2] * axis[2]) * q


@jit_leaf
def world_pose(R_parent, p_parent, R, p, w_R, w_p):
    """Pose of a link in the base: w_R = R_parent R, w_p = R_parent p + p_parent."""
    for r in range(3):
        for c in range(3):
            w_R[r, c] = R_parent[r, 0] * R[0, c] + R_parent[r, 1] * R[1, c] + \
                R_parent[r, 2] * R[2, c]
        w_p[r] = R_parent[r, 0] * p[0] + R_parent[r, 1] * p[1] + R_parent[r, 2] * p[2] + \
            p_parent[r]


@jit
def joint_screw_dot(joint_type, axis, f):
    """S^T f: the component of the wrench f = [n; f_l] along the joint (a.n or a.f_l)."""
    offset = 0 if joint_type == JOINT_REVOLUTE else 3
    return axis[0] * f[offset] + axis[1] * f[offset + 1] + axis[2] * f[offset + 2]


@jit
def inertia_times(I, m, mc, x, out):
    """out = I x for the spatial inertia about the link origin,
    I = [[I_O, m [c x]], [m [c x]^T, m E]]: [I_O w + mc x v; m v - mc x w]."""
    w0, w1, w2, v0, v1, v2 = x[0], x[1], x[2], x[3], x[4], x[5]
    for r in range(3):
        out[r] = I[r, 0] * w0 + I[r, 1] * w1 + I[r, 2] * w2
    out[0] += mc[1] * v2 - mc[2] * v1
    out[1] += mc[2] * v0 - mc[0] * v2
    out[2] += mc[0] * v1 - mc[1] * v0
    out[3] = m * v0 - (mc[1] * w2 - mc[2] * w1)
    out[4] = m * v1 - (mc[2] * w0 - mc[0] * w2)
    out[5] = m * v2 - (mc[0] * w1 - mc[1] * w0)


@jit
def motion_to_child(R, p, x, out):
    """out = A^{-1} x = [R^T w; R^T (v - p x w)] for the twist x = [w; v] of the parent."""
    w0, w1, w2 = x[0], x[1], x[2]
    u0 = x[3] - (p[1] * w2 - p[2] * w1)
    u1 = x[4] - (p[2] * w0 - p[0] * w2)
    u2 = x[5] - (p[0] * w1 - p[1] * w0)
    for r in range(3):
        out[r] = R[0, r] * w0 + R[1, r] * w1 + R[2, r] * w2
        out[r + 3] = R[0, r] * u0 + R[1, r] * u1 + R[2, r] * u2


@jit
def force_in_parent(R, p, f):
    """A^* f = [R n + p x (R f_l); R f_l] for the wrench f = [n; f_l] of the child, as a
    6-tuple."""
    n0 = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2]
    n1 = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2]
    n2 = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2]
    g0 = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5]
    g1 = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5]
    g2 = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5]
    return (n0 + p[1] * g2 - p[2] * g1, n1 + p[2] * g0 - p[0] * g2,
            n2 + p[0] * g1 - p[1] * g0, g0, g1, g2)


@jit
def force_to_parent_add(R, p, f, out):
    """out += A^* f (:func:`force_in_parent`): the child's wrench passed to its parent."""
    f_parent = force_in_parent(R, p, f)
    for r in range(6):
        out[r] += f_parent[r]


@jit
def force_to_parent(R, p, f, out):
    """out = A^* f (:func:`force_in_parent`)."""
    f_parent = force_in_parent(R, p, f)
    for r in range(6):
        out[r] = f_parent[r]


@jit_leaf
def composite_inertia_to_parent_add(R, p, m, mc, I_O, m_out, mc_out, I_out):
    """(m_out, mc_out, I_out) += A^* (m, mc, I_O) A^{-1} (HandC.m's X^T I^C X): a subtree
    inertia (mass m, first moment mc = m c, rotational inertia I_O about the child origin,
    child axes) added to its parent's about the parent origin in parent axes. With
    Rh = R mc: mc' = Rh + m p, I' = R I_O R^T - m [p x]^2 - [p x][Rh x] - [Rh x][p x]."""
    Rh0 = R[0, 0] * mc[0] + R[0, 1] * mc[1] + R[0, 2] * mc[2]
    Rh1 = R[1, 0] * mc[0] + R[1, 1] * mc[1] + R[1, 2] * mc[2]
    Rh2 = R[2, 0] * mc[0] + R[2, 1] * mc[1] + R[2, 2] * mc[2]
    pp = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
    ph = p[0] * Rh0 + p[1] * Rh1 + p[2] * Rh2
    for col in range(3):
        # column col of I_O R^T, then R times it: R I_O R^T in 54 products
        t0 = I_O[0, 0] * R[col, 0] + I_O[0, 1] * R[col, 1] + I_O[0, 2] * R[col, 2]
        t1 = I_O[1, 0] * R[col, 0] + I_O[1, 1] * R[col, 1] + I_O[1, 2] * R[col, 2]
        t2 = I_O[2, 0] * R[col, 0] + I_O[2, 1] * R[col, 1] + I_O[2, 2] * R[col, 2]
        Rh_col = Rh0 if col == 0 else Rh1 if col == 1 else Rh2
        for r in range(3):
            Rh_r = Rh0 if r == 0 else Rh1 if r == 1 else Rh2
            delta = 1.0 if r == col else 0.0
            # -m [p x]^2 = m (|p|^2 E - p p^T); -[p x][Rh x] - [Rh x][p x] = 2 (p.Rh) E - p Rh^T - Rh p^T
            I_out[r, col] += R[r, 0] * t0 + R[r, 1] * t1 + R[r, 2] * t2 \
                + m * (pp * delta - p[r] * p[col]) + 2.0 * ph * delta - p[r] * Rh_col \
                - Rh_r * p[col]
        mc_out[col] += Rh_col + m * p[col]
    m_out[0] += m


# --- RNEA (ID.m) ---

@jit
def base_motion(gravity, v_0, a_0):
    """v_0 = 0, a_0 = [0; -g]: the base at rest but accelerating against gravity, so that
    every link's acceleration and wrench include it (ID.m's a_0 = -a_grav)."""
    for r in range(3):
        v_0[r] = 0.0
        v_0[r + 3] = 0.0
        a_0[r] = 0.0
        a_0[r + 3] = -gravity[r]


@jit_inline
def rnea_sample(model, ws, chunk, q, qd, qdd, tau):
    """tau = ID(q, q', q'') with gravity for one sample (q, qd, qdd, tau: (n,)), in slot
    ``chunk`` of the workspace: the forward and backward loops of the module docstring."""
    R, p, vJ, v, a, h, f = ws.R[chunk], ws.p[chunk], ws.vJ[chunk], ws.v[chunk], \
        ws.a[chunk], ws.h[chunk], ws.f[chunk]
    joint_type, axis, parent = model.joint_type, model.axis, model.parent
    n = parent.shape[0]
    base_motion(model.gravity, ws.w_v0[chunk], ws.w_a0[chunk])   # v_0 = 0, a_0 = -a_grav
    for i in range(n):
        link_pose_in_parent(joint_type[i], axis[i], model.placement_R[i],
                            model.placement_p[i], q[i], ws.E[chunk], R[i], p[i])
        par = parent[i]
        v_par = ws.w_v0[chunk] if par < 0 else v[par]
        a_par = ws.w_a0[chunk] if par < 0 else a[par]
        joint_screw_into(joint_type[i], axis[i], qd[i], vJ)       # vJ = S q'
        motion_to_child(R[i], p[i], v_par, v[i])                  # v = X v_par
        joint_screw_add(joint_type[i], axis[i], qd[i], v[i])      #     + S q'
        motion_to_child(R[i], p[i], a_par, a[i])                  # a = X a_par
        joint_screw_add(joint_type[i], axis[i], qdd[i], a[i])     #     + S q''
        motion_cross_add(v[i], vJ, 1.0, a[i])                     #     + v x vJ
        I_O, m, mc = model.rotational_inertia[i], model.mass[i], model.first_moment[i]
        inertia_times(I_O, m, mc, a[i], f[i])                     # f = I a
        inertia_times(I_O, m, mc, v[i], h)                        # h = I v
        force_cross_add(v[i], h, 1.0, f[i])                       #     + v x^* h
    for i in range(n - 1, -1, -1):
        tau[i] = joint_screw_dot(joint_type[i], axis[i], f[i])    # tau = S^T f
        if parent[i] >= 0:
            force_to_parent_add(R[i], p[i], f[i], f[parent[i]])   # f_par += X^T f


@jit_kernel
def rnea_kernel(model, ws, chunk, claim, last, q_stack, tau):
    """tau[s] = ID(q, q', q'') with gravity at the samples s it claims: q_stack
    (n_samples, >= 3, n) raw derivatives (q_stack[s, r] = q^(r)), tau (n_samples, n)
    output; model a KernelModel, ws an :class:`RneaWorkspace`, ``chunk`` its slot
    (``cmtm.api.run_chunks`` runs the chunks on threads)."""
    done = 0
    first, stop = claim_samples(claim, last)
    while first < stop:
        for sample in range(first, stop):
            rnea_sample(model, ws, chunk, q_stack[sample, 0], q_stack[sample, 1],
                        q_stack[sample, 2], tau[sample])
        done += stop - first
        first, stop = claim_samples(claim, last)
    return done


# --- CRBA (HandC.m) ---

@jit_inline
def crba_sample(model, ws, chunk, q, M):
    """M = H(q) for one sample (q: (n,), M: (n, n)), in slot ``chunk`` of the workspace:
    composite inertias children first, then the columns of the module docstring along
    each link's support (model.support_start / support)."""
    R, p, S, F = ws.R[chunk], ws.p[chunk], ws.S[chunk], ws.F[chunk]
    m_C, mc_C, I_C = ws.m_C[chunk], ws.mc_C[chunk], ws.I_C[chunk]
    joint_type, axis, parent = model.joint_type, model.axis, model.parent
    support, support_start = model.support, model.support_start
    n = parent.shape[0]
    for i in range(n):
        link_pose_in_parent(joint_type[i], axis[i], model.placement_R[i],
                            model.placement_p[i], q[i], ws.E[chunk], R[i], p[i])
        m_C[i, 0] = model.mass[i]                                 # I^C = I
        for r in range(3):
            mc_C[i, r] = model.first_moment[i, r]
            for col in range(3):
                I_C[i, r, col] = model.rotational_inertia[i, r, col]
    for i in range(n - 1, -1, -1):
        par = parent[i]
        if par >= 0:                                              # I^C_par += X^T I^C X
            composite_inertia_to_parent_add(R[i], p[i], m_C[i, 0], mc_C[i], I_C[i],
                                            m_C[par], mc_C[par], I_C[par])
    for i in range(n):                                            # off the supports
        for j in range(n):
            M[i, j] = 0.0
    for i in range(n):
        joint_screw_into(joint_type[i], axis[i], 1.0, S)          # S_i
        inertia_times(I_C[i], m_C[i, 0], mc_C[i], S, F[i])         # F = I^C S
        M[i, i] = joint_screw_dot(joint_type[i], axis[i], F[i])   # H_ii = S^T F
        for k in range(support_start[i] + 1, support_start[i + 1]):
            child, j = support[k - 1], support[k]
            force_to_parent(R[child], p[child], F[child], F[j])   # F = X^T F
            M[i, j] = joint_screw_dot(joint_type[j], axis[j], F[j])   # H_ij = S_j^T F
            M[j, i] = M[i, j]


@jit_kernel
def crba_kernel(model, ws, chunk, claim, last, q, M):
    """M[s] = H(q[s]), the joint-space mass matrix at the samples s it claims:
    q (n_samples, n), M (n_samples, n, n) output; model a KernelModel, ws a
    :class:`CrbaWorkspace`, ``chunk`` its slot (``cmtm.api.run_chunks``)."""
    done = 0
    first, stop = claim_samples(claim, last)
    while first < stop:
        for sample in range(first, stop):
            crba_sample(model, ws, chunk, q[sample], M[sample])
        done += stop - first
        first, stop = claim_samples(claim, last)
    return done
