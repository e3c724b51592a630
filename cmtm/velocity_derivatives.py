"""Order-0 link-velocity Jacobian d nu / d(q, q') in world coordinates, batched over samples
(in chunks on threads, ``cmtm.api.run_chunks``): the k = 0 case of Lemma 2 (cmtm_math.md
§7.2, §8) written on rotations and translations, with no CMTM block and no allocation,
as ``cmtm.rnea_derivatives`` is for the joint torque.

World frame, spatial vectors at the world origin (angular-first), base at rest. Per link i,
parents first, with p = p(i) and the pose (R_i, p_i) of link i in the base:

    s_i  = [R_i a_i; p_i x R_i a_i] (revolute) or [0; R_i a_i]   world joint screw
    s'_i = v_p x s_i                                             its rate
    v_i  = v_p + s_i q'_i                                        world twist

The body velocity of link i is nu_i = Ad_i^{-1} v_i, with Ad_i^{-1} [w; u] =
[R_i^T w; R_i^T (u + w x p_i)], and v_i = sum_j s_j q'_j over the support of i. So for
every joint j of that support

    d nu_i / d q'_j = Ad_i^{-1} s_j,        d nu_i / d q_j = Ad_i^{-1} s'_j

(moving q_j turns everything beyond joint j about s_j: d v_i / d q_j = s_j x (v_i - v_j)
and d Ad_i^{-1} / d q_j = -Ad_i^{-1} [s_j x], which sum to Ad_i^{-1} (v_j x s_j), and
v_j x s_j = v_p(j) x s_j = s'_j). The world columns s'_j, s_j are computed once per joint;
each link maps the columns of its support, run by run of consecutive joints (the runs of
``cmtm.velocity_jacobian.support_runs``), into contiguous row segments of the output. Columns
of other joints are left as they are (the caller zero-initialises the output).

==================  =============  ===========  ======================================
symbol              code           shape        meaning (world frame)
==================  =============  ===========  ======================================
R_i, p_i (parent)   ``R, p``       (3,3), (3)   link_pose_in_parent, one link
R_i, p_i (world)    ``w_R, w_p``   (n,3,3)...   pose of link i in the base
s', s               ``w_cols``     (2, 6, n)    columns of d nu / d q and d nu / d q'
v                   ``w_v``        (n, 6)       world twist of each link
==================  =============  ===========  ======================================
"""
from typing import NamedTuple

import numpy as np

from cmtm._jit import jit, jit_inline, jit_kernel
from cmtm.rnea_derivatives import link_world_pose
from cmtm.spatial import motion_cross_add
from cmtm.velocity_jacobian import support_runs


class VelocityDerivativesWorkspace(NamedTuple):
    """Work arrays of :func:`velocity_derivatives_kernel`: run_start, runs, identity,
    origin and rest shared by the chunks, the others with a leading chunk axis."""

    run_start: np.ndarray   # (n+1,) int64, runs[run_start[i]:run_start[i+1]] of link i
    runs: np.ndarray        # (n_runs, 3) int64: first joint, (unused) path column, length
    identity: np.ndarray    # (3, 3) pose of the base
    origin: np.ndarray      # (3,)
    rest: np.ndarray        # (6,) twist of the base
    E: np.ndarray           # (3, 3) joint rotation
    R: np.ndarray           # (3, 3) link pose in its parent
    p: np.ndarray           # (3,)
    w_R: np.ndarray
    w_p: np.ndarray
    w_s: np.ndarray         # (2, 6) s_i, s'_i of one joint, as computed
    w_cols: np.ndarray
    w_v: np.ndarray


def velocity_derivatives_workspace(kernel_model, n_chunks):
    """A :class:`VelocityDerivativesWorkspace` for a KernelModel and n_chunks chunks."""
    n = kernel_model.parent.shape[0]
    run_start, runs = support_runs(kernel_model)

    def work(*shape):
        return np.empty((n_chunks,) + shape)
    return VelocityDerivativesWorkspace(
        run_start=run_start, runs=runs, identity=np.eye(3), origin=np.zeros(3),
        rest=np.zeros(6), E=work(3, 3), R=work(3, 3), p=work(3), w_R=work(n, 3, 3),
        w_p=work(n, 3), w_s=work(2, 6), w_cols=work(2, 6, n), w_v=work(n, 6))


@jit_inline
def world_columns(model, ws, c, q, qd):
    """Poses, twists and the world columns s'_i, s_i of every joint (``w_cols[0]``,
    ``w_cols[1]``): the per-link recursion of the module docstring."""
    for i in range(model.parent.shape[0]):
        par = model.parent[i]
        s, ds, v = ws.w_s[c, 0], ws.w_s[c, 1], ws.w_v[c, i]
        link_world_pose(model, i, q[i], ws.E[c], ws.R[c], ws.p[c], ws.identity, ws.origin,
                        ws.w_R[c], ws.w_p[c], s)
        v_par = ws.rest if par < 0 else ws.w_v[c, par]
        for r in range(6):
            ds[r] = 0.0
        motion_cross_add(v_par, s, 1.0, ds)             # s' = v_p x s
        for r in range(6):
            v[r] = v_par[r] + s[r] * qd[i]              # v = v_p + s q'
            ws.w_cols[c, 0, r, i] = ds[r]
            ws.w_cols[c, 1, r, i] = s[r]


@jit
def body_columns(R, p, cols, first, length, row0, out):
    """out[row0 + c, first + t] = (Ad^{-1} cols[:, first + t])_c for t < length, with
    Ad^{-1} [w; u] = [R^T w; R^T (u + w x p)] (the body frame of a link at pose (R, p));
    returns False if an entry is not finite (x - x is 0 for finite x, NaN otherwise)."""
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
            finite &= angular - angular == 0.0 and linear - linear == 0.0
    return finite


@jit_kernel
def velocity_derivatives_kernel(model, ws, c, first, last, q_stack, out, finite):
    """out[s, 0, 6 i + c, r, j] = d nu_i,c / d q_j^(r) (r = 0, 1) for j in the support of
    link i, at the samples s = first..last-1 of q_stack (n_samples, >= 2, n) raw, with
    work slot c; ``out`` (n_samples, 1, 6 n, 2, n) zero-initialised; finite[s] whether
    every entry of sample s is finite."""
    cols = ws.w_cols[c]
    for smp in range(first, last):
        world_columns(model, ws, c, q_stack[smp, 0], q_stack[smp, 1])
        ok = True
        for i in range(model.parent.shape[0]):
            R, p = ws.w_R[c, i], ws.w_p[c, i]
            for u in range(ws.run_start[i], ws.run_start[i + 1]):
                joint, length = ws.runs[u, 0], ws.runs[u, 2]
                for r in range(2):
                    ok = body_columns(R, p, cols[r], joint, length, 6 * i,
                                      out[smp, 0, :, r]) and ok
        finite[smp] = ok
