"""Joint-torque Jacobian by Lemma 6 in world coordinates (cmtm_math.md §5, §7-§8).

tau_i = S_i^T f_J_i = s_i^T f~_J_i with the world screw s_i = A_{L_i} S_i and the world
joint force f~_J_i = d/dt h~_J_i (the time derivative of the world subtree momentum,
h~_J_i = sum_{l in C(i)} I~_l v~_l). The world frame is the inertial frame of the
base-acceleration trick (§3.3), so gravity is exact.

Under dq_j every link of the subtree of j turns by the world tangent s_j dq_j, so for
j in P(i) (cmtm_math.md §6.4 with world-frame tangents)

    d s_i      = [s_j x] s_i dq_j,
    d h~_J_i   = ([s_j x^*] h~_J_i - I~^C_i [s_j x] v~_{p(j)}) dq_j + I~^C_i s_j dq_j',

and for a strict descendant j of i the subtree momentum of i moves only through that of
j: d h~_J_i = d h~_J_j. With the hat swaps s_i . [s_j x^*] h = -s_j . [s_i x^*] h and
([s_j x] s_i) . f = s_j . [s_i x^*] f, and f~ = d/dt h~ (the time-derivative rule of
``cmtm.structured_jacobians``), the first columns G_s of d tau_i / d q_j^(s) (§8) are
jet products of a per-link and a per-joint jet; Leibniz' rule on the jets cancels the
terms in d/dt [s_i x^*] h~_J_i against [s_i' x^*] h~ + [s_i x^*] f~, leaving

    T_0 = -(s_j' . e_i + a_j . gamma_i + a_j' . b_i),
    T_1 = s_j . (gamma_i - e_i) + (s_j' - a_j) . b_i,
    T_2 = s_j . b_i                                          (j in P(i)),
    T_s = s_i . (y0_j', b_j' + y0_j, b_j)[s]                 (j a strict descendant),

with a_j = [s_j x] v~_{p(j)} = -s_j' (the screw rate s' = v~_p x s), so that, with
c_i = gamma_i - e_i and y0_j = e_j + I~^C_j s_j' (the order-0 kernel's pair formulas,
``cmtm.rnea_derivatives``, on jets),

    T_0 = s_j' . c_i + s_j'' . b_i,   T_1 = s_j . c_i + 2 s_j' . b_i,   T_2 = s_j . b_i,

and, as b_i' = gamma_i + I~^C_i s_i', c_i = b_i' - y0_i: no product with d/dt I~^C_i.
Products of jets taken as convolutions: no 6x6 product per pair. The jets of s, v~, I~
and h~ themselves come from the link poses and cross products (``link_world_jets``: the
rates s' = v~_p x s, I~' = v~ x^* I~ - I~ v~ x), not from the link CMTMs: 1.5-1.7x faster
than their CMTM forms (A S, A v, A^{-T} I A^{-1} as 6x6 jet products), to 4e-14.

=================  ============  ============  ==========================================
symbol             code          shape         meaning (all world frame, Taylor-scaled)
=================  ============  ============  ==========================================
s_i                ``s``         (n, L+1, 6)   joint screws
v~_i               ``v_w``       (n, L, 6)     link twists (with the fictitious base motion)
h~_J_i             ``hJ_w``      (n, L, 6)     subtree momenta
I~^C_i             ``Ic_m``,     (n, 1),       composite (subtree) spatial inertias:
                   ``Ic_mc``,    (n, L, 3),    mass, first moment, rotational inertia
                   ``Ic_IO``     (n, L, 3, 3)  (``cmtm.rnea_derivatives.inertia_add``)
e_i                ``e``                       [s_i x^*] h~_J_i
b_i                (row_i)                     I~^C_i s_i
c_i                (row_i)                     gamma_i - e_i = b_i' - y0_i, with
                                               gamma_i = (d/dt I~^C_i) s_i
s_j, s_j', s_j''   (col)                       screw jets of input joint j
y0_j               (desc)                      [s_j x^*] h~_J_j + I~^C_j s_j'
=================  ============  ============  ==========================================

L = k + 2 coefficients for a torque Jacobian of order k.
"""
from typing import NamedTuple

import numpy as np

from cmtm._jit import claim_samples, index_range, jit_inline, jit_kernel, jit_leaf
from cmtm.kinematics import base_velocity_stacks
from cmtm.rnea import composite_inertia_to_parent_add
from cmtm.rnea_derivatives import (inertia_conv, inertia_rate_add, link_world_pose,
                                   screw_twist_jets)
from cmtm.taylor import (add_blocks, add_stack, copy_stack, force_cross_conv,
                         raw_block_coefficients, zero_blocks, zero_stack)


class TorqueWorkspace(NamedTuple):
    """Work arrays of :func:`torque_jacobian_kernel`: terms ... rotational_inertia shared
    by the chunks, the others with a leading axis, slot c for chunk c of the samples; n
    links, L = k+2 coefficients (the symbol table above; ``E`` ... ``w_IO`` and ``e`` ...
    ``T`` are scratch of one link or of one output row)."""

    terms: np.ndarray               # (n_terms, 4) raw_block_terms: l, r, s, add
    weights: np.ndarray             # (n_terms,) their weights
    rate_scale: np.ndarray          # (L,) b + 1: q' coefficients from q's (Taylor-scaled)
    root: np.ndarray                # (L, 6) base velocity stack of the gravity trick (§3.3)
    identity: np.ndarray            # (3, 3) pose of the base
    origin: np.ndarray              # (3,)
    first_moment: np.ndarray        # (n, 3) writable copies of the KernelModel's (as in
    rotational_inertia: np.ndarray  # (n, 3, 3) cmtm.rnea_derivatives)
    E: np.ndarray         # (3, 3) joint rotation
    R: np.ndarray         # (3, 3) link pose in its parent
    p: np.ndarray         # (3,)
    w_R: np.ndarray       # (n, 3, 3) link poses in the base
    w_p: np.ndarray       # (n, 3)
    s: np.ndarray         # (n, L+1, 6)
    v_w: np.ndarray       # (n, L, 6)
    hJ_w: np.ndarray      # (n, L, 6)
    Ic_m: np.ndarray      # (n, 1) composite inertia jets: mass (constant),
    Ic_mc: np.ndarray     # (n, L, 3) first moment,
    Ic_IO: np.ndarray     # (n, L, 3, 3) rotational inertia about the world origin
    e: np.ndarray         # (L, 6) the jets of per_link_jets
    b: np.ndarray         # (L, 6)
    ds: np.ndarray        # (L, 6) s'
    y0: np.ndarray        # (L, 6)
    row_i: np.ndarray     # (n, L-1, 12) per output joint i
    col: np.ndarray       # (L-1, 18, n) per input joint j in a support, component-major
    desc: np.ndarray      # (L-1, 18, n) per input joint j as a descendant, component-major
    T: np.ndarray         # (3, L-1, n) first columns of row i against input joints j


def raw_block_terms(coef):
    """(terms, weights): the nonzero weights of ``cmtm.taylor.raw_block_coefficients``
    coef[l, r, s] as rows (l, r, s, add) of an int64 array, l, then r, then s ascending,
    add = 0 for the first term of each block (l, r) and 1 for the others, and the weights
    (float64) in that order: the loop of :func:`write_raw_rows` over the terms only (k = 1:
    9 of 24 weights), without a test of each weight (the same sums in the same order as
    that test's loop, identical bits)."""
    terms = []
    for l, r, s in zip(*np.nonzero(coef)):
        terms.append((l, r, s, int(s > np.flatnonzero(coef[l, r])[0])))
    return np.array(terms, dtype=np.int64).reshape(-1, 4), \
        np.array([coef[l, r, s] for l, r, s, _ in terms])


def torque_workspace(model, order, n_chunks):
    """A :class:`TorqueWorkspace` for a KernelModel, order k and n_chunks chunks (the API
    runs the kernel for k >= 1; k = 0 is ``cmtm.rnea_derivatives``)."""
    n, k1, L = model.parent.shape[0], order + 1, order + 2

    def slots(*shape):
        return np.zeros((n_chunks,) + shape)
    vector, jet = (n, L, 6), (L, 6)
    return TorqueWorkspace(
        *raw_block_terms(raw_block_coefficients(k1, k1 + 2, 3)),
        rate_scale=np.arange(1.0, L + 1),
        root=base_velocity_stacks(model, L)[1],
        identity=np.eye(3), origin=np.zeros(3),
        first_moment=np.array(model.first_moment),
        rotational_inertia=np.array(model.rotational_inertia),
        E=slots(3, 3), R=slots(3, 3), p=slots(3), w_R=slots(n, 3, 3), w_p=slots(n, 3),
        s=slots(n, L + 1, 6), v_w=slots(*vector), hJ_w=slots(*vector), Ic_m=slots(n, 1),
        Ic_mc=slots(n, L, 3), Ic_IO=slots(n, L, 3, 3),
        e=slots(*jet), b=slots(*jet), ds=slots(*jet), y0=slots(*jet), row_i=slots(n, L - 1, 12),
        col=slots(L - 1, 18, n), desc=slots(L - 1, 18, n), T=slots(3, L - 1, n))


@jit_inline
def link_world_jets(model, tw, chunk, i, q, v_parent):
    """World jets of link i (L coefficients, L+1 for s) from its pose and its parent's twist
    jets v_parent (§2.5, §5 in world coordinates, Taylor-scaled; q'_b = (b+1) q_{b+1}):

        s_0 = world screw of the pose,  s_{m+1} = 1/(m+1) sum_{a<=m} v_p,a x s_{m-a}
        v_m = v_p,m + sum_{a<=m} s_a q'_{m-a}                          (v = v_p + s q')
        I_0 = A^{-T} I A^{-1},  I_{m+1} = 1/(m+1) sum_{a<=m} (v_a x^* I_{m-a} - I_{m-a} v_a x)
        h_m = sum_{a<=m} I_a v_{m-a}                                   (h = I v)

    into tw.s, v_w, Ic_m, Ic_mc, Ic_IO and hJ_w (the link's own inertia, in the ten numbers
    of ``cmtm.rnea_derivatives.inertia_add``, and momentum); s and v by
    ``screw_twist_jets``, shared with ``cmtm.velocity_derivatives``. The mass is constant:
    I_{m+1} has only a first moment and a rotational inertia (``inertia_rate_add``)."""
    s, v, h = tw.s[chunk, i], tw.v_w[chunk, i], tw.hJ_w[chunk, i]
    mass, mc, I_O = tw.Ic_m[chunk, i], tw.Ic_mc[chunk, i], tw.Ic_IO[chunk, i]
    link_world_pose(model, i, q[0, i], tw.E[chunk], tw.R[chunk], tw.p[chunk], tw.identity,
                    tw.origin, tw.w_R[chunk], tw.w_p[chunk], s[0])
    screw_twist_jets(v_parent, q, i, tw.rate_scale, s, v)
    mass[0] = 0.0
    zero_stack(mc)
    zero_blocks(I_O)
    composite_inertia_to_parent_add(tw.w_R[chunk, i], tw.w_p[chunk, i], model.mass[i],
                                    tw.first_moment[i], tw.rotational_inertia[i], mass,
                                    mc[0], I_O[0])                      # I_0 = A^{-T} I A^{-1}
    for m in range(v.shape[0] - 1):
        for a in range(m + 1):
            inertia_rate_add(v[a], mass[0] if a == m else 0.0, mc[m - a], I_O[m - a],
                             mc[m + 1], I_O[m + 1])
        for r in range(3):
            mc[m + 1, r] /= m + 1
            for col in range(3):
                I_O[m + 1, r, col] /= m + 1
    zero_stack(h)
    inertia_conv(mass[0], mc, I_O, v, 1.0, h)


@jit_inline
def world_state(model, tw, chunk, q):
    """World jets of every link (:func:`link_world_jets`, parents first, the base moving
    with tw.root: at rest, accelerating at -g, §3.3), then composite inertias I~^C and
    subtree momenta h~_J summed over the subtrees (children first)."""
    parent = model.parent
    for i in range(parent.shape[0]):
        v_parent = tw.root if parent[i] < 0 else tw.v_w[chunk, parent[i]]
        link_world_jets(model, tw, chunk, i, q, v_parent)
    for child in range(parent.shape[0] - 1, -1, -1):
        par = parent[child]
        if par >= 0:
            tw.Ic_m[chunk, par, 0] += tw.Ic_m[chunk, child, 0]
            add_stack(tw.Ic_mc[chunk, child], tw.Ic_mc[chunk, par])
            add_blocks(tw.Ic_IO[chunk, child], tw.Ic_IO[chunk, par])
            add_stack(tw.hJ_w[chunk, child], tw.hJ_w[chunk, par])


@jit_inline
def link_jets(tw, chunk, i):
    """The jets of link i (L coefficients): e_i = [s_i x^*] h~_J_i, b_i = I~^C_i s_i, the
    screw rate s_i' and y0_i = e_i + I~^C_i s_i', into tw.e, b, ds, y0."""
    s, mass, mc, I_O = tw.s[chunk, i], tw.Ic_m[chunk, i, 0], tw.Ic_mc[chunk, i], \
        tw.Ic_IO[chunk, i]
    e, b, ds, y0 = tw.e[chunk], tw.b[chunk], tw.ds[chunk], tw.y0[chunk]
    zero_stack(e)
    force_cross_conv(s, tw.hJ_w[chunk, i], e, 1.0)
    zero_stack(b)
    inertia_conv(mass, mc, I_O, s, 1.0, b)
    for m in range(ds.shape[0]):
        for c in range(6):
            ds[m, c] = (m + 1) * s[m + 1, c]
    copy_stack(e, y0)
    inertia_conv(mass, mc, I_O, ds, 1.0, y0)


@jit_inline
def per_link_jets(model, tw, chunk):
    """Stacked per-link and per-joint jets of the pair formulas (L-1 coefficients).

    With b_i = I~^C_i s_i and y0_j = e_j + I~^C_j s_j' (``link_jets``):
      row_i  = (c_i, b_i),  c_i = gamma_i - e_i = b_i' - y0_i
      col_j  = (s_j, s_j', s_j'')
      desc_j = (y0_j', b_j' + y0_j, b_j)
    so that, for j in P(i), T_0 = s_j' . c_i + s_j'' . b_i, T_1 = s_j . c_i + 2 s_j' . b_i,
    T_2 = s_j . b_i (as jet products), and for a strict descendant j, T_s = s_i . desc_j[s].
    col_j and desc_j are stored component-major (``col[m, :, j]``, ``desc[m, :, j]``), so
    that the pair loops run over consecutive input joints.
    """
    b, y0 = tw.b[chunk], tw.y0[chunk]
    row_i, col, desc = tw.row_i[chunk], tw.col[chunk], tw.desc[chunk]
    for i in range(model.parent.shape[0]):
        link_jets(tw, chunk, i)
        s = tw.s[chunk, i]
        for m in range(row_i.shape[1]):
            for c in range(6):
                row_i[i, m, c] = (m + 1) * b[m + 1, c] - y0[m, c]
                row_i[i, m, 6 + c] = b[m, c]
                col[m, c, i] = s[m, c]
                col[m, 6 + c, i] = (m + 1) * s[m + 1, c]
                col[m, 12 + c, i] = (m + 1) * (m + 2) * s[m + 2, c]
                desc[m, c, i] = (m + 1) * y0[m + 1, c]
                desc[m, 6 + c, i] = (m + 1) * b[m + 1, c] + y0[m, c]
                desc[m, 12 + c, i] = b[m, c]


@jit_leaf
def dot6_columns(a, first_a, scale, B, first_b, first, stop, add, out):
    """out[j] (+)= scale * a[first_a:first_a+6] . B[first_b:first_b+6, j] for j in
    first..stop-1 (added if ``add``, else written): six components of a per-link jet
    coefficient against those of consecutive input joints (component-major), j innermost
    (:func:`cmtm._jit.index_range`: vectorized, as
    ``cmtm.rnea_derivatives.support_blocks``)."""
    a0, a1, a2 = scale * a[first_a], scale * a[first_a + 1], scale * a[first_a + 2]
    a3, a4, a5 = scale * a[first_a + 3], scale * a[first_a + 4], scale * a[first_a + 5]
    for j in index_range(first, stop):
        dot = a0 * B[first_b, j] + a1 * B[first_b + 1, j] + a2 * B[first_b + 2, j] + \
            a3 * B[first_b + 3, j] + a4 * B[first_b + 4, j] + a5 * B[first_b + 5, j]
        out[j] = out[j] + dot if add else dot


@jit_leaf
def scaled_columns(weight, G, first, stop, add, out):
    """out[j] (+)= weight * G[j] for j in first..stop-1 (added if ``add``, else written)."""
    for j in index_range(first, stop):
        out[j] = out[j] + weight * G[j] if add else weight * G[j]


@jit_inline
def ancestor_columns(row, col, first, stop, T):
    """First columns T[t, m, j] of d tau_i / d q_j^(t) for the input joints j in
    first..stop-1, a run of the support of i (row: ``row_i[i]`` = (c_i, b_i), col: (s_j,
    s_j', s_j'')): T_0 = s_j' . c_i + s_j'' . b_i, T_1 = s_j . c_i + 2 s_j' . b_i,
    T_2 = s_j . b_i, jet products summed six components at a time (``per_link_jets``), the
    first term of each written."""
    for m in range(T.shape[1]):
        for p in range(m + 1):
            a, B = row[p], col[m - p]
            dot6_columns(a, 0, 1.0, B, 6, first, stop, p > 0, T[0, m])
            dot6_columns(a, 6, 1.0, B, 12, first, stop, True, T[0, m])
            dot6_columns(a, 0, 1.0, B, 0, first, stop, p > 0, T[1, m])
            dot6_columns(a, 6, 2.0, B, 6, first, stop, True, T[1, m])
            dot6_columns(a, 6, 1.0, B, 0, first, stop, p > 0, T[2, m])


@jit_inline
def descendant_columns(s_i, desc, first, stop, T):
    """First columns for the strict descendants j in first..stop-1 of i: d h~_J_i = d h~_J_j
    gives T_0 = s_i . y0_j', T_1 = s_i . (b_j' + y0_j), T_2 = s_i . b_j (jet products, the
    first term of each written)."""
    for m in range(T.shape[1]):
        for p in range(m + 1):
            for t in range(3):
                dot6_columns(s_i[p], 0, 1.0, desc[m - p], 6 * t, first, stop, p > 0, T[t, m])


@jit_inline
def write_raw_rows(T, terms, weights, i, first, stop, out):
    """Raw blocks of output joint i from its first columns, for the input joints j in
    first..stop-1 (§8, §7.6; ``cmtm.taylor.write_raw_blocks`` with j innermost):
    out[l, i, r, j] = sum_s coef[l, r, s] T[s, l-r+s, j] over the nonzero weights
    (:func:`raw_block_terms`). Blocks whose weights are all zero (r > l + 2) are left as
    they are: ``out`` is zero-initialised."""
    for t in range(terms.shape[0]):
        l, r, s = terms[t, 0], terms[t, 1], terms[t, 2]
        scaled_columns(weights[t], T[s, l - r + s], first, stop, terms[t, 3] != 0,
                       out[l, i, r])


@jit_leaf
def joint_torque_jets(s, h, tau):
    """tau[m] = sum_{a<=m} s_a . F_{m-a} for m < len(tau), F_b = (b+1) h_{b+1}: the Taylor
    coefficients of one joint's torque tau = s . F, F = h' the rate of its subtree
    momentum, from the jets of its world screw s and of that momentum h (``world_state``;
    gravity included by the base's motion, §3.3), the torques of ``cmtm.motion`` up to
    rounding (world frame, moments about the world origin)."""
    for m in range(tau.shape[0]):
        total = 0.0
        for a in range(m + 1):
            rate = m - a + 1.0
            for c in range(6):
                total += s[a, c] * (rate * h[m - a + 1, c])
        tau[m] = total


@jit_kernel
def torque_jacobian_kernel(model, tw, chunk, claim, last, qhat, tau, out):
    """out[s, l, i, r, j] = d tau_i^(l) / d q_j^(r) (raw derivatives, l <= k, r <= k+2) and
    the Taylor coefficients tau[s, l, i] of the torques (:func:`joint_torque_jets`) at
    the samples s it claims of the Taylor-scaled stacks qhat (n_samples, >= k+3, n),
    with work slot ``chunk`` of the :class:`TorqueWorkspace` tw; ``out`` (n_samples, k+1,
    n, k+3, n) zero-initialised, of which only the blocks of supporting joints are written.
    ``tau`` or ``out`` with no rows (shape (0, ...)) is not written: the torques alone skip
    the pair jets and the pairs; they are the same bits either way (the same world jets).

    Per sample: the world jets (``world_state``, ``per_link_jets``), then the pairs of
    joint dynamics, output joint i by output joint, its input joints innermost (vector
    loops over consecutive joints, as the order-0 kernel's): the runs of its support
    (model.runs), then its strict descendants. Against one pair (i, j) at a time
    (``stacked_dot_conv`` and ``write_raw_blocks`` per pair, before 2026-12-02), us per
    sample through ``cmtm.jacobian``, one thread, two alternating rounds, the same results
    to 8e-15 relative: order 1 (2) Panda 10.8 -> 9.8-10.2 (16.6 -> 14.5-15.0), 8-link
    chain 13.1 -> 11.5 (20.1 -> 17.4), 32-link chain 128-131 -> 60 (215-221 -> 100-104),
    128-link chain 1803-1808 -> 431-451 (3111-3126 -> 908-930), example-robot-data's
    36-joint human 73-77 -> 61-63 (117-129 -> 100-101); cold compile of this kernel alone
    (fresh process) 8.4-8.5 -> 9.5-9.6 s in three pairs (the price of the vector loops).
    The passes are called here rather than from a per-sample function inlined into the
    kernel, as in ``cmtm.rnea_derivatives``: one level of Numba's IR inlining less
    (which copies the IR of an inlined function, its own inlined callees included). Cold
    compile of the order-1 torque Jacobian of the Panda, six alternating runs: median 15.4
    -> 14.6 s, Numba's inlining 2.0 -> 0.9 s of it; the same speed (kernel alone, one
    thread, 15 alternating rounds: median ratio 0.99-1.01 on 8- and 32-link chains and the
    Panda, orders 1 and 2), identical bits. With the pair formulas on a_j = -s_j' and
    c_i = b_i' - y0_i (no jet of d/dt I~^C_i s_i) and the raw weights' nonzero terms only
    (:func:`raw_block_terms`), against 476bc10's module: kernel alone, one thread, 200
    samples, each in its own process, five alternating rounds (host load ~3 on 2 cores),
    best us per sample 3.00 -> 2.44 (order 1) and 4.45 -> 3.52 (order 2) on a 3-link chain,
    6.95 -> 6.05 and 10.85 -> 9.42 on the Panda, 46.1 -> 41.2 and 79.6 -> 68.2 on
    example-robot-data's human (median ratios per round 1.20, 1.20, 1.03, 1.13, 1.13,
    1.17); results within 2.9e-15 of the largest entry of the old; cold compile of the kernel
    alone 8.5-13.4 s against 9.8-12.5 s (four pairs, within the noise)."""
    row_i, col, desc, s, T = tw.row_i[chunk], tw.col[chunk], tw.desc[chunk], tw.s[chunk], \
        tw.T[chunk]
    done = 0
    first, stop = claim_samples(claim, last)
    while first < stop:
        for sample in range(first, stop):
            world_state(model, tw, chunk, qhat[sample])
            if tau.shape[0]:
                for i in range(model.parent.shape[0]):
                    joint_torque_jets(s[i], tw.hJ_w[chunk, i], tau[sample, :, i])
            if not out.shape[0]:
                continue
            per_link_jets(model, tw, chunk)
            blocks = out[sample]
            for i in range(model.parent.shape[0]):
                for u in range(model.run_start[i], model.run_start[i + 1]):
                    j0, j1 = model.runs[u, 0], model.runs[u, 0] + model.runs[u, 1]
                    ancestor_columns(row_i[i], col, j0, j1, T)
                    write_raw_rows(T, tw.terms, tw.weights, i, j0, j1, blocks)
                descendant_columns(s[i], desc, i + 1, model.subtree_end[i], T)
                write_raw_rows(T, tw.terms, tw.weights, i, i + 1, model.subtree_end[i],
                               blocks)
        done += stop - first
        first, stop = claim_samples(claim, last)
    return done
