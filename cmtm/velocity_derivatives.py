"""Link-velocity Jacobian d nu^(l) / d q^(r) of every order l <= k (paper Table 4 row
J_{v_L}, Lemma 2; cmtm_math.md §7.2, §8) in world coordinates, batched over samples (in
chunks on threads, ``cmtm.api.run_chunks``), with no CMTM block and no allocation, as
``cmtm.rnea_derivatives`` and ``cmtm.torque_jacobian`` are for the joint torque.

World frame, spatial vectors at the world origin (angular-first), base at rest. Per link i,
parents first, with p = p(i) and the pose (R_i, p_i) of link i in the base:

    s_i  = [R_i a_i; p_i x R_i a_i] (revolute) or [0; R_i a_i]   world joint screw
    s'_i = v_p x s_i                                             its rate
    v_i  = v_p + s_i q'_i                                        world twist

and on Taylor coefficients (m+1) s_{m+1} = sum_a v_p,a x s_{m-a}, v_m = v_p,m + sum_a s_a
q'_{m-a}. The body velocity of link i is nu_i = Ad_i^{-1} v_i, with Ad_i^{-1} [w; u] =
[R_i^T w; R_i^T (u + w x p_i)], and v_i = sum_j s_j q'_j over the support of i. So for
every joint j of that support, at order 0,

    B = d nu_i / d q'_j = Ad_i^{-1} s_j,        A = d nu_i / d q_j = Ad_i^{-1} s'_j

(moving q_j turns everything beyond joint j about s_j: d v_i / d q_j = s_j x (v_i - v_j)
and d Ad_i^{-1} / d q_j = -Ad_i^{-1} [s_j x], which sum to Ad_i^{-1} (v_j x s_j), and
v_j x s_j = v_p(j) x s_j = s'_j). Higher orders follow from the binomial rule of §8,

    d nu^(l) / d q^(r) = C(l, r) A^(l-r) + C(l, r-1) B^(l-r+1),

and from d/dt (Ad_i^{-1} x) = Ad_i^{-1} (x' - v_i x x) =: Ad_i^{-1} D x: the time
derivatives A^(m) = Ad_i^{-1} (D^m s'_j)_0 and B^(m) = Ad_i^{-1} (D^m s_j)_0, D the
derivative seen from link i, computed on the jets (``comoving_columns``). The world columns
are laid out side by side (last axis: the joint); each link maps the columns of its support,
run by run of consecutive joints (the KernelModel's ``runs``), into contiguous row segments
of the output. The kernel zeroes each sample's blocks before it writes them, so that the
columns of other joints are zero: a zero-initialised output of the caller (``np.zeros``)
took 265 us of each 600-sample call of the Panda's order-1 Jacobian (8.5 MB), 5 ms of
bench_peers' case link. The kernel reports, per sample, whether every entry it wrote is finite, so
that the caller need not scan an output that can be megabytes per sample.

Measured against the CMTM kernel it replaces (one thread, 200 samples, through
``cmtm.jacobian``, same sitting, us per sample): 2-link chain k = 1..4 1.06-2.42 against
1.29-3.64, Panda 4.56-15.7 against 5.72-21.6, 4- and 8-link chains 1.2-1.5x faster,
16-link chain and a 12-link tree 1.0-1.08x; the two agree to 2e-15 relative, identical at
k = 0 (the order-0 kernel before).

==================  =============  ===========  ======================================
symbol              code           shape        meaning (world frame)
==================  =============  ===========  ======================================
R_i, p_i (parent)   ``R, p``       (3,3), (3)   link_pose_in_parent, one link
R_i, p_i (world)    ``w_R, w_p``   (n,3,3)...   pose of link i in the base
s_m, v_m            ``w_S, w_V``   (n,K+1,6)    screw and twist jets (v_m: K rows)
D^m s', D^m s       ``w_cols``     (2,K,6,n)    world columns of A^(m), B^(m) (at t=0)
==================  =============  ===========  ======================================
"""
import math
from typing import NamedTuple

import numpy as np

from cmtm._jit import claim_samples, jit, jit_inline, jit_kernel, jit_leaf
from cmtm.rnea_derivatives import link_world_pose, screw_twist_jets
from cmtm.spatial import motion_cross_add
from cmtm.taylor import factorials


class VelocityDerivativesWorkspace(NamedTuple):
    """Work arrays of :func:`velocity_derivatives_kernel` for n links and K = k+1 output
    orders: identity, origin, rest, binomial and inverse_factorial shared by the chunks,
    the others with a leading chunk axis."""

    identity: np.ndarray    # (3, 3) pose of the base
    origin: np.ndarray      # (3,)
    rest: np.ndarray        # (K, 6) twist jet of the base (at rest)
    binomial: np.ndarray    # (K, K) binomial[l, r] = C(l, r)
    inverse_factorial: np.ndarray   # (K,) 1 / n!
    E: np.ndarray           # (3, 3) joint rotation
    R: np.ndarray           # (3, 3) link pose in its parent
    p: np.ndarray           # (3,)
    w_R: np.ndarray         # (n, 3, 3)
    w_p: np.ndarray         # (n, 3)
    w_S: np.ndarray         # (n, K+1, 6) screw jets s_m
    w_V: np.ndarray         # (n, K, 6) twist jets v_m
    jets: np.ndarray        # (2, K, 6) two jets of one co-moving derivative
    w_cols: np.ndarray      # (2, K, 6, n) columns (D^m s')_0 and (D^m s)_0
    body: np.ndarray        # (K, 6, n) Ad^{-1} (D^m s)_0 of one link, m >= 1


def velocity_derivatives_workspace(kernel_model, order, n_chunks):
    """A :class:`VelocityDerivativesWorkspace` for a KernelModel, order k and n_chunks
    chunks."""
    n, K = kernel_model.parent.shape[0], order + 1
    binomial = np.array([[math.comb(l, r) for r in range(K)] for l in range(K)], dtype=float)

    def work(*shape):
        return np.empty((n_chunks,) + shape)
    return VelocityDerivativesWorkspace(
        identity=np.eye(3), origin=np.zeros(3), rest=np.zeros((K, 6)), binomial=binomial,
        inverse_factorial=1.0 / factorials(K),
        E=work(3, 3), R=work(3, 3), p=work(3), w_R=work(n, 3, 3), w_p=work(n, 3),
        w_S=work(n, K + 1, 6), w_V=work(n, K, 6), jets=work(2, K, 6),
        w_cols=work(2, K, 6, n), body=work(K, 6, n))


@jit_inline
def world_jets(model, ws, chunk, q_rows):
    """Poses, screw jets s_0..s_K and twist jets v_0..v_{K-1} of every link (K = k+1, the
    rows of ws.w_V), and the order-0 columns s'_i = s_1 (``w_cols[0, 0]``) and s_i
    (``w_cols[1, 0]``): the per-link recursion of the module docstring on Taylor
    coefficients (``screw_twist_jets``, shared with the torque kernel), with q_rows the raw
    derivatives of one sample (q' coefficients q^(m+1) / m!)."""
    for i in range(model.parent.shape[0]):
        par = model.parent[i]
        S, V = ws.w_S[chunk, i], ws.w_V[chunk, i]
        link_world_pose(model, i, q_rows[0, i], ws.E[chunk], ws.R[chunk], ws.p[chunk],
                        ws.identity, ws.origin, ws.w_R[chunk], ws.w_p[chunk], S[0])
        screw_twist_jets(ws.rest if par < 0 else ws.w_V[chunk, par], q_rows, i,
                         ws.inverse_factorial, S, V)
        for r in range(6):
            ws.w_cols[chunk, 0, 0, r, i] = S[1, r]
            ws.w_cols[chunk, 1, 0, r, i] = S[0, r]


@jit_leaf
def comoving_columns(S, V, jets, cols, t):
    """cols[0, m, :, t] = (D^m s')_0 and cols[1, m, :, t] = (D^m s)_0 for m = 1..K-1, with
    D x = x' - v x x the derivative seen from a link of twist jet V (K, 6): (d/dt)^m
    (Ad^{-1} x) = Ad^{-1} D^m x. S (K+1, 6): the screw jet of joint t; on coefficients,
    (D x)_n = (n+1) x_{n+1} - sum_a v_a x x_{n-a}; jets (2, K, 6) work."""
    K = V.shape[0]
    for which in range(2):
        first = jets[0]
        for n in range(K):
            for r in range(6):
                first[n, r] = (n + 1) * S[n + 1, r] if which == 0 else S[n, r]
        for m in range(1, K):
            x, dx = jets[(m - 1) % 2], jets[m % 2]
            for n in range(K - m):
                for r in range(6):
                    dx[n, r] = (n + 1) * x[n + 1, r]
                for a in range(n + 1):
                    motion_cross_add(V[a], x[n - a], -1.0, dx[n])
            for r in range(6):
                cols[which, m, r, t] = dx[0, r]


@jit
def binomial_blocks(out, body, binomial, row0, first, length):
    """The blocks of orders l >= 1 of one link's rows row0..row0+5 over the joints
    first..first+length-1, from its order-0 blocks and its B derivatives ``body``
    (Ad^{-1} (D^m s)_0, m >= 1): d nu^(l) / d q^(r) = C(l, r) A^(l-r) + C(l, r-1) B^(l-r+1)
    with A^(m) = out[m, :, 0] and B^(0) = out[0, :, 1] (the binomial rule of cmtm_math.md
    §8). out (K, 6 n, K+1, n) of one sample; returns False if an entry is not finite.

    The joint index is the innermost loop, contiguous in out and body: a run of joints is
    one scaled sum of two row segments per block. Measured against the joint outermost
    (same sums, identical bits; one thread, 200 samples, the kernel alone, us per sample,
    two alternating runs in separate processes): orders 1, 2, 4 of a 4-link chain
    2.9-3.3 / 4.6-4.7 / 10-15 -> 2.2 / 3.3-3.4 / 7.1-10.3, Panda 6.9-7.2 / 10.7-15.8 /
    28.5-31.5 -> 4.8-5.2 / 7.8-8.1 / 24-25.5, 16-link chain 33 / 55 / 135-140 -> 24-25 /
    41-42 / 103-104; order 0 does not run it."""
    finite = True
    for l in range(1, out.shape[0]):
        for row in range(6):
            for t in range(first, first + length):
                out[l, row0 + row, l + 1, t] = out[0, row0 + row, 1, t]
            for r in range(1, l + 1):
                c_A, c_B = binomial[l, r], binomial[l, r - 1]
                A, B = out[l - r, row0 + row, 0], body[l - r + 1, row]
                dst = out[l, row0 + row, r]
                for t in range(first, first + length):
                    x = c_A * A[t] + c_B * B[t]
                    dst[t] = x
                    finite &= x - x == 0.0
    return finite


@jit_leaf
def body_columns(R, p, cols, first, length, row0, out):
    """out[row0 + c, first + t] = (Ad^{-1} cols[:, first + t])_c for t < length, with
    Ad^{-1} [w; u] = [R^T w; R^T (u + w x p)] (the body frame of a link at pose (R, p));
    returns False if an entry is not finite (x - x is 0 for finite x, NaN otherwise).

    A leaf (``jit_leaf``: LLVM inlines it at its four sites in :func:`link_rows`), with the
    finiteness of a column folded in without a branch (``&``, not ``and``). Measured
    against a separate ``jit`` function with ``and``: kernel alone, one thread, 200
    samples, 15 rounds alternating in one process, identical bits: median ratio 1.60
    (2-link chain, order 0), 1.20 (order 2), 1.34 / 1.16 / 1.13 (4-link chain, orders
    0-2), 1.17 / 1.08 / 1.07 (8-link chain, orders 0-2), 1.22 / 1.07 / 1.15 / 1.09 (Panda,
    orders 0, 1, 2, 4), faster in every round but one; the ``&`` alone is ~2 % of it."""
    finite = True
    for t in range(first, first + length):
        w0, w1, w2 = cols[0, t], cols[1, t], cols[2, t]
        u0 = cols[3, t] + w1 * p[2] - w2 * p[1]
        u1 = cols[4, t] + w2 * p[0] - w0 * p[2]
        u2 = cols[5, t] + w0 * p[1] - w1 * p[0]
        for r in range(3):
            angular = R[0, r] * w0 + R[1, r] * w1 + R[2, r] * w2
            linear = R[0, r] * u0 + R[1, r] * u1 + R[2, r] * u2
            out[row0 + r, t] = angular
            out[row0 + 3 + r, t] = linear
            finite &= (angular - angular == 0.0) & (linear - linear == 0.0)
    return finite


@jit_inline
def link_rows(model, ws, chunk, i, out):
    """The rows of link i of one sample's output (K, 6 n, K+1, n): every order, every
    joint of its support, run by run; returns False if an entry is not finite.

    The order-0 blocks first, then, for K > 1, everything the higher orders need, with
    ``comoving_columns`` a leaf (``jit_leaf``). Against the orders interleaved and
    comoving_columns a call (kernel alone, one thread, 200 samples, 15 rounds alternating
    in one process, two runs, identical bits), median ratios: order 0 1.00-1.04; order 1
    1.11-1.18 (4- and 8-link chains, Panda); order 2 1.00-1.06; Panda order 4 0.98-0.99.
    Inlining comoving_columns alone, orders interleaved, had lost 2-7 % at order 0 (which
    does not call it); inlining binomial_blocks gained nothing measurable."""
    K, ok = out.shape[0], True
    R, p, cols, body = ws.w_R[chunk, i], ws.w_p[chunk, i], ws.w_cols[chunk], ws.body[chunk]
    for u in range(model.run_start[i], model.run_start[i + 1]):
        joint, length = model.runs[u, 0], model.runs[u, 1]
        ok = body_columns(R, p, cols[0, 0], joint, length, 6 * i, out[0, :, 0]) and ok
        ok = body_columns(R, p, cols[1, 0], joint, length, 6 * i, out[0, :, 1]) and ok
        if K > 1:
            for t in range(joint, joint + length):
                comoving_columns(ws.w_S[chunk, t], ws.w_V[chunk, i], ws.jets[chunk], cols, t)
            for m in range(1, K):
                ok = body_columns(R, p, cols[0, m], joint, length, 6 * i, out[m, :, 0]) and ok
                ok = body_columns(R, p, cols[1, m], joint, length, 0, body[m]) and ok
            ok = binomial_blocks(out, body, ws.binomial, 6 * i, joint, length) and ok
    return ok


@jit_kernel
def velocity_derivatives_kernel(model, ws, chunk, claim, last, q_stack, out, finite):
    """out[s, l, 6 i + c, r, j] = d nu_i,c^(l) / d q_j^(r) (l <= k, r <= k+1) for j in the
    support of link i, at the samples s it claims of q_stack (n_samples, >= k+2, n)
    raw, with work slot ``chunk``; ``out`` (n_samples, k+1, 6 n, k+2, n), whose blocks of
    the claimed samples it zeroes first (the entries of other joints and orders stay zero);
    finite[s] whether every entry of sample s is finite."""
    done = 0
    first, stop = claim_samples(claim, last)
    while first < stop:
        for sample in range(first, stop):
            out[sample] = 0.0
            world_jets(model, ws, chunk, q_stack[sample])
            ok = True
            for i in range(model.parent.shape[0]):
                ok = link_rows(model, ws, chunk, i, out[sample]) and ok
            finite[sample] = ok
        done += stop - first
        first, stop = claim_samples(claim, last)
    return done
