"""Link-velocity Jacobian of every order (paper Table 4 row J_{v_L}, Lemma 2; cmtm_math.md
§7.2, §8) with the columns of each link's supporting joints side by side in memory.

The rule is the one of ``cmtm.structured_jacobians`` (tangent_sweep, velocity_rule): the
first column of J_{x_{L_i}} for joint j is the jet Gx[i, j] = (^pX_i)^{-1} Gx[p(i), j]
(Gx[i, i] = S_i at order 0), and by §8 the velocity's first columns are

    V_0 = Gx' + [nu_i x] Gx     (d nu / d q)        V_1 = Gx     (d nu / d q')

with raw blocks d nu^(l) / d q_j^(r) = sum_s l!/(r-s)! V_s[l-r+s]. Here the columns of
one link are stored as the last axis of ``G[m, c, :]``, over its path from the root:
joint j of the path of link i sits at column ``support_start[i] + depth(j)`` (the
KernelModel's support ranges: the path is link i's support, reversed), and the path of
i is the path of its parent with i appended (the links are numbered in preorder). So one
step of the recursion is a 6x6 jet block times a contiguous row of columns, a loop that
the compiler vectorizes, and the columns are written to the output in runs of consecutive
joints (contiguous row segments; one run per link on a serial chain). Only the blocks of
supporting joints are written (the output is zero-initialised).

The kernel also reports, per sample, whether every entry it wrote is finite (``finite``),
so that the caller need not scan an output that can be megabytes per sample.

=================  ==============  =====================  ================================
paper              code            shape (one chunk)      meaning
=================  ==============  =====================  ================================
(^p X_i)^{-1}      ``Xup``         (n, k+2, 6, 6)         relative CMTM blocks
v_{L_i}            ``nu``          (n, k+1, 6)            link body-velocity stacks
J_{x_L} columns    ``G``           (k+2, 6, n_path)       Gx of every (link, path joint)
V_0                ``V0``          (k+1, 6, n_path)       d nu / d q columns, as G
=================  ==============  =====================  ================================
"""
from typing import NamedTuple

import numpy as np

from cmtm._jit import jit, jit_inline, jit_kernel
from cmtm.kinematics import base_velocity_stacks, relative_cmtm_inverse, velocity_pass
from cmtm.spatial import motion_cross_into
from cmtm.taylor import raw_block_coefficients


class VelocityJacobianWorkspace(NamedTuple):
    """Arrays of :func:`velocity_jacobian_kernel`: root ... coef shared by every chunk, the
    others with a leading chunk axis (shapes in the module docstring)."""

    root: np.ndarray        # (k+1, 6) base velocity stack (at rest: zero)
    run_start: np.ndarray   # (n+1,) int64, runs[run_start[i]:run_start[i+1]] of link i
    runs: np.ndarray        # (n_runs, 3) int64: first joint, first path column, length
    coef: np.ndarray        # (k+1, k+2, 2) raw_block_coefficients
    Xup: np.ndarray
    XJinv: np.ndarray       # (k+2, 6, 6) work arrays of relative_cmtm_inverse
    sin_q: np.ndarray
    cos_q: np.ndarray
    skew_axis: np.ndarray
    nu: np.ndarray
    G: np.ndarray
    V0: np.ndarray
    crosses: np.ndarray     # (k+1, 6, 6) the [nu_m x] of one link


def velocity_jacobian_workspace(model, order, n_chunks):
    """A :class:`VelocityJacobianWorkspace` for a KernelModel, order k and n_chunks chunks;
    the path columns of each link as in :func:`support_runs`."""
    n = model.parent.shape[0]
    k1, L = order + 1, order + 2
    start = np.asarray(model.support_start)
    root = base_velocity_stacks(model, k1)
    run_start, runs = support_runs(model)

    def work(*shape):
        return np.zeros((n_chunks,) + shape)
    return VelocityJacobianWorkspace(
        root=root[0], run_start=run_start, runs=runs,
        coef=raw_block_coefficients(k1, L, 2), Xup=work(n, L, 6, 6), XJinv=work(L, 6, 6),
        sin_q=work(L), cos_q=work(L), skew_axis=work(3, 3), nu=work(n, k1, 6),
        G=work(L, 6, start[n]), V0=work(k1, 6, start[n]), crosses=work(k1, 6, 6))


def support_runs(model):
    """(run_start, runs) of a KernelModel: the path of each link i (its support from the
    root, i last: the KernelModel's support list of i reversed, at columns
    support_start[i]:support_start[i+1]) cut into runs of consecutive joints, row (first
    joint, first column of the run, length), runs[run_start[i]:run_start[i+1]]; a serial
    chain has one run per link, a tree one more per branch the path leaves. A kernel writes
    a run as one contiguous row segment of its output."""
    path_start = np.asarray(model.support_start)
    path = np.concatenate([np.asarray(model.support[path_start[i]:path_start[i + 1]])[::-1]
                           for i in range(len(path_start) - 1)])
    run_start, runs = [0], []
    for i in range(len(path_start) - 1):
        for t in range(path_start[i], path_start[i + 1]):
            if t > path_start[i] and path[t] == path[t - 1] + 1:
                runs[-1][2] += 1
            else:
                runs.append([path[t], t, 1])
        run_start.append(len(runs))
    return np.array(run_start, dtype=np.int64), np.array(runs, dtype=np.int64).reshape(-1, 3)


@jit
def block_columns_add(M, columns, first, out, out_first, width):
    """out[r, out_first + t] += sum_c M[r, c] columns[c, first + t] for t < width: a 6x6
    block of motion-vector maps (a motion transform, its derivatives, a motion cross
    product: upper-right 3x3 zero, so angular rows read angular inputs only) times a row of
    6-vector columns, all products of an output row in one loop over contiguous columns
    (one store per three or six multiply-adds; the loop vectorizes)."""
    c0, c1, c2 = columns[0, first:first + width], columns[1, first:first + width], \
        columns[2, first:first + width]
    c3, c4, c5 = columns[3, first:first + width], columns[4, first:first + width], \
        columns[5, first:first + width]
    for r in range(3):
        m0, m1, m2 = M[r, 0], M[r, 1], M[r, 2]
        row = out[r, out_first:out_first + width]
        for t in range(width):
            row[t] += m0 * c0[t] + m1 * c1[t] + m2 * c2[t]
    for r in range(3, 6):
        m0, m1, m2, m3, m4, m5 = M[r, 0], M[r, 1], M[r, 2], M[r, 3], M[r, 4], M[r, 5]
        row = out[r, out_first:out_first + width]
        for t in range(width):
            row[t] += m0 * c0[t] + m1 * c1[t] + m2 * c2[t] + m3 * c3[t] + m4 * c4[t] + \
                m5 * c5[t]


@jit_inline
def path_tangent_columns(model, Xup, G):
    """Lemma 2 steps 1-2 on path columns: G[:, :, last of i] = S_i (order 0), and the
    columns of i's parent path mapped by the jet product (^pX_i)^{-1} * Gx[p(i)],
    G_m = sum_mm Xup_{m-mm} Gx[p(i)]_mm."""
    S, path_start = model.screw, model.support_start
    for i in range(model.parent.shape[0]):
        own = path_start[i + 1] - 1
        for m in range(G.shape[0]):
            for r in range(6):
                G[m, r, own] = S[i, r] if m == 0 else 0.0
        p = model.parent[i]
        if p < 0:
            continue
        first, width = path_start[i], own - path_start[i]
        for m in range(G.shape[0]):
            for r in range(6):
                G[m, r, first:own] = 0.0
            for mm in range(m + 1):
                block_columns_add(Xup[i, m - mm], G[mm], path_start[p], G[m], first, width)


@jit_inline
def path_velocity_columns(nu_i, G, first, width, crosses, V0):
    """Lemma 2 step 3 on the path columns first..first+width-1 of one link:
    V_0 = Gx' + [nu_i x] Gx, V_0,m = (m+1) Gx_{m+1} + sum_mm [nu_{i,m-mm} x] Gx_mm;
    crosses: (k+1, 6, 6) work array for the [nu_m x]."""
    for m in range(V0.shape[0]):
        motion_cross_into(nu_i[m], crosses[m])
    for m in range(V0.shape[0]):
        for r in range(6):
            derivative, row = G[m + 1, r, first:first + width], V0[m, r, first:first + width]
            for t in range(width):
                row[t] = (m + 1) * derivative[t]
        for mm in range(m + 1):
            block_columns_add(crosses[m - mm], G[mm], first, V0[m], first, width)


@jit_inline
def write_path_blocks(V0, G, coef, runs, row0, out):
    """out[l, row0 + c, r, j] = coef[l, r, 0] V_0[l-r, c] + coef[l, r, 1] V_1[l-r+1, c] for
    the path joints j of one link, run by run (``runs`` of :func:`support_runs`) (§7.6, §8);
    returns False if an entry is not finite (x - x is 0 for finite x, NaN otherwise)."""
    finite = True
    for l in range(out.shape[0]):
        for r in range(min(l + 2, out.shape[2])):
            w0, w1 = coef[l, r, 0], coef[l, r, 1]
            m0, m1 = max(l - r, 0), l - r + 1
            for c in range(6):
                for u in range(runs.shape[0]):
                    joint, column, length = runs[u, 0], runs[u, 1], runs[u, 2]
                    v0 = V0[m0, c, column:column + length]
                    v1 = G[m1, c, column:column + length]
                    row = out[l, row0 + c, r, joint:joint + length]
                    for t in range(length):
                        value = w0 * v0[t] + w1 * v1[t]
                        row[t] = value
                        finite &= value - value == 0.0
    return finite


@jit_kernel
def velocity_jacobian_kernel(model, ws, chunk, first, last, qhat, out, finite):
    """out[s, l, 6 i + c, r, j] = d nu_i,c^(l) / d q_j^(r) (raw) at the samples first..last-1
    of the Taylor-scaled stacks qhat (n_samples, >= k+2, n), with work slot ``chunk``;
    ``out`` (n_samples, k+1, 6 n, k+2, n) zero-initialised; finite[s] (bool) whether every
    entry of sample s is finite."""
    Xup, nu, G, V0 = ws.Xup[chunk], ws.nu[chunk], ws.G[chunk], ws.V0[chunk]
    for smp in range(first, last):
        finite[smp] = True
        q = qhat[smp]
        relative_cmtm_inverse(model, q, ws.XJinv[chunk], ws.sin_q[chunk],
                              ws.cos_q[chunk], ws.skew_axis[chunk], Xup)
        velocity_pass(model.parent, model.screw, Xup, q, ws.root, nu)
        path_tangent_columns(model, Xup, G)
        for i in range(model.parent.shape[0]):
            start = model.support_start[i]
            path_velocity_columns(nu[i], G, start, model.support_start[i + 1] - start,
                                  ws.crosses[chunk], V0)
            finite[smp] = write_path_blocks(V0, G, ws.coef,
                                            ws.runs[ws.run_start[i]:ws.run_start[i + 1]],
                                            6 * i, out[smp]) and finite[smp]
