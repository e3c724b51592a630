"""World-frame motion of points fixed to links: the raw time derivatives p', ..., p^(k+1)
of p = o_L + R_L r (r fixed in the frame of link L) and their Jacobians
d p^(l+1) / d q^(r), batched over samples (in chunks on threads, ``cmtm.api.run_chunks``),
without allocation. The quantities of the point terms of ``ioc.optimize.costs`` (a hand's jerk).

World frame, spatial vectors at the world origin (angular-first), base at rest. Per link i,
parents first: the pose (R_i, o_i) and the jets of the world joint screw s_m and of the
world twist v_m = [w_m; u_m] (``cmtm.rnea_derivatives``: ``link_world_pose`` and
``screw_twist_jets``, cmtm_math.md §2.5 in world coordinates, as in
``cmtm.velocity_derivatives``). A point fixed to link i moves with the link's twist,
p' = u + w x p (the twist's linear velocity at the point; in the link's body twist
(omega, v) the same p' = R_i (v + omega x r)). On Taylor coefficients (§1.3, J1 and J2):

    P_0 = o_i + R_i r,        (m+1) P_{m+1} = u_m + sum_{a<=m} w_a x P_{m-a},

so p^(l+1) = (l+1)! P_{l+1} needs the twist jet up to v_l: q up to q^(l+1), K_in = k+2
input orders, as for link velocities (§7.1).

Jacobian (§8 with r = 0: the Jacobian of a jet is the jet of the Jacobian). The position
depends on q alone, p = f(q), with G = d p / d q, whose column j is the linear velocity at
the point of the world joint screw s_j = [w_j; u_j] (the world form of the link-tangent
Jacobian of §7.3, moved to the point): c_j = u_j + w_j x p for every joint j that supports
link i, zero for the others. So d p^(n) / d q^(r) = C(n, r) G^(n-r), that is

    d p^(l+1) / d q_j^(r) = (l+1)!/r! c_j,l+1-r    (r <= l+1, else 0),

with the Taylor coefficients c_j,m = u_j,m + sum_{a<=m} w_j,a x P_{m-a} of c_j(t): a
Toeplitz product of the jet of s_j(t) with the point's jet.

=================  ============  ===========  ==========================================
symbol             code          shape        meaning (world frame)
=================  ============  ===========  ==========================================
R_i, o_i           ``w_R, w_p``  (n,3,3)...   pose of link i in the base
s_m, v_m           ``w_S, w_V``  (n,K+1,6)    screw and twist jets (v: K = k+1 rows)
r                  ``point_r``   (n_pts, 3)   point in its link's frame, m
P_m                ``P``         (K+1, 3)     Taylor coefficients of p(t)
c_j,m              ``c``         (K+1, 3)     Taylor coefficients of column j of G
=================  ============  ===========  ==========================================
"""
from typing import NamedTuple

import numpy as np

from cmtm._jit import claim_samples, jit_inline, jit_kernel, jit_leaf
from cmtm.rnea_derivatives import link_world_pose, screw_twist_jets
from cmtm.spatial import cross3_add
from cmtm.taylor import factorials


class PointWorkspace(NamedTuple):
    """Work arrays of :func:`point_kernel` for n links and order k (K = k+1 twist
    coefficients): identity, origin, rest, inverse_factorial and factorial shared by the
    chunks, the others with a leading chunk axis."""

    identity: np.ndarray            # (3, 3) pose of the base
    origin: np.ndarray              # (3,)
    rest: np.ndarray                # (K, 6) twist jet of the base (at rest)
    inverse_factorial: np.ndarray   # (K,) 1 / b!
    factorial: np.ndarray           # (K+1,) b!
    E: np.ndarray                   # (3, 3) joint rotation
    R: np.ndarray                   # (3, 3) link pose in its parent
    p: np.ndarray                   # (3,)
    w_R: np.ndarray                 # (n, 3, 3)
    w_p: np.ndarray                 # (n, 3)
    w_S: np.ndarray                 # (n, K+1, 6) screw jets s_m
    w_V: np.ndarray                 # (n, K, 6) twist jets v_m
    P: np.ndarray                   # (K+1, 3) the point's jet
    c: np.ndarray                   # (K+1, 3) one Jacobian column's jet


def point_workspace(kernel_model, order, n_chunks):
    """A :class:`PointWorkspace` for a KernelModel, order k and n_chunks chunks."""
    n, K = kernel_model.parent.shape[0], order + 1

    def work(*shape):
        return np.empty((n_chunks,) + shape)
    return PointWorkspace(
        identity=np.eye(3), origin=np.zeros(3), rest=np.zeros((K, 6)),
        inverse_factorial=1.0 / factorials(K), factorial=np.array(factorials(K + 1)),
        E=work(3, 3), R=work(3, 3), p=work(3), w_R=work(n, 3, 3), w_p=work(n, 3),
        w_S=work(n, K + 1, 6), w_V=work(n, K, 6), P=work(K + 1, 3), c=work(K + 1, 3))


@jit_leaf
def point_jet(R, o, r, V, P):
    """P[0] = o + R r and (m+1) P[m+1] = u_m + sum_{a<=m} w_a x P[m-a] for m + 1 < len(P):
    the Taylor coefficients of a point fixed to a link of pose (R, o) and world twist jet
    V (>= len(P) - 1, 6) = [w_m; u_m] (module docstring)."""
    for c in range(3):
        P[0, c] = o[c] + R[c, 0] * r[0] + R[c, 1] * r[1] + R[c, 2] * r[2]
    for m in range(P.shape[0] - 1):
        for c in range(3):
            P[m + 1, c] = V[m, 3 + c] / (m + 1)
        for a in range(m + 1):
            cross3_add(V[a], P[m - a], 1.0 / (m + 1), P[m + 1])


@jit_leaf
def column_jet(S, P, c):
    """c[m] = u_m + sum_{a<=m} w_a x P[m-a] for m < len(c): the Taylor coefficients of the
    linear velocity at the point P(t) of the joint screw jet S (>= len(c), 6) = [w_m; u_m]."""
    for m in range(c.shape[0]):
        for d in range(3):
            c[m, d] = S[m, 3 + d]
        for a in range(m + 1):
            cross3_add(S[a], P[m - a], 1.0, c[m])


@jit_inline
def point_rows(model, ws, chunk, i, row0, out):
    """The rows row0..row0+2 of one sample's Jacobian out (k+1, 3 n_points, k+2, n) of the
    point whose jet is ws.P, fixed to link i: d p^(l+1) / d q_j^(r) = (l+1)!/r! c_j,l+1-r
    for every joint j of the support of i (module docstring); returns False if an entry
    is not finite."""
    fact, c, finite = ws.factorial, ws.c[chunk], True
    for u in range(model.support_start[i], model.support_start[i + 1]):
        j = model.support[u]
        column_jet(ws.w_S[chunk, j], ws.P[chunk], c)
        for l in range(out.shape[0]):
            for r in range(l + 2):
                scale = fact[l + 1] / fact[r]
                for d in range(3):
                    x = scale * c[l + 1 - r, d]
                    out[l, row0 + d, r, j] = x
                    finite &= x - x == 0.0
    return finite


@jit_kernel
def point_kernel(model, ws, chunk, claim, last, q_stack, point_link, point_r, motion, jacobian,
                 finite):
    """At the samples s it claims of q_stack (n_samples, >= k+2, n) raw, with work slot
    ``chunk``: motion[s, l, t] = p_t^(l+1) (l <= k) of every point t, fixed to link
    point_link[t] at point_r[t] in its frame; if ``jacobian`` has samples,
    jacobian[s, l, 3 t + d, r, j] = d p_t,d^(l+1) / d q_j^(r) for the joints j that support
    the point (the caller zero-initialises it); finite[s] whether every entry written for
    sample s is finite. Only the links up to the last point's are computed (pre-order: a
    link's support has lower indices)."""
    with_jacobian = jacobian.shape[0] > 0
    n_used = 0
    for t in range(point_link.shape[0]):
        n_used = max(n_used, point_link[t] + 1)
    done = 0
    first, stop = claim_samples(claim, last)
    while first < stop:
        for sample in range(first, stop):
            q = q_stack[sample]
            for i in range(n_used):
                par = model.parent[i]
                link_world_pose(model, i, q[0, i], ws.E[chunk], ws.R[chunk], ws.p[chunk],
                                ws.identity, ws.origin, ws.w_R[chunk], ws.w_p[chunk],
                                ws.w_S[chunk, i, 0])
                screw_twist_jets(ws.rest if par < 0 else ws.w_V[chunk, par], q, i,
                                 ws.inverse_factorial, ws.w_S[chunk, i], ws.w_V[chunk, i])
            ok = True
            for t in range(point_link.shape[0]):
                i = point_link[t]
                P = ws.P[chunk]
                point_jet(ws.w_R[chunk, i], ws.w_p[chunk, i], point_r[t], ws.w_V[chunk, i], P)
                for l in range(motion.shape[1]):
                    for d in range(3):
                        x = ws.factorial[l + 1] * P[l + 1, d]
                        motion[sample, l, t, d] = x
                        ok &= x - x == 0.0
                if with_jacobian:
                    ok = point_rows(model, ws, chunk, i, 3 * t, jacobian[sample]) and ok
            finite[sample] = ok
        done += stop - first
        first, stop = claim_samples(claim, last)
    return done
