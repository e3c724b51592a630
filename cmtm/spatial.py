"""Spatial-vector algebra, angular-first (cmtm_math.md §1.1).

Symbol table (paper -> code, shape, float64):

========  ==================================  ======  ==================================
paper     code                                shape
========  ==================================  ======  ==================================
[a x_3]   ``skew(a)``, ``skew_into(a, out)``  (3, 3)
[u x_6]   ``motion_cross_into(u, out)``       (6, 6)  [[w x, 0], [v x, w x]], u = [w; v]
u x x     ``motion_cross6(u, x)``             (6,)    [u x_6] x, a tuple
          ``motion_cross_add(u, x, s, out)``          out += s [u x_6] x
u x^* f   ``force_cross6(u, f)``              (6,)    [u x_6^*] f, a tuple
          ``force_cross_add(u, f, s, out)``           out += s [u x_6^*] f
w x x     ``cross3_add(w, x, s, out)``        (3,)    out += s w x x (3-vectors)
A^{-1}    ``motion_transform_inverse(R, p)``  (6, 6)  [[R^T, 0], [-R^T [p x], R^T]]
          ``placement_inverse_into``
S         ``joint_screw(joint_type, axis)``   (6,)    [a; 0] revolute, [0; a] prismatic
          ``joint_screw_into``, ``_add``              (times a scale, e.g. S q')
========  ==================================  ======  ==================================

``joint_type`` holds the codes of kinematic_trees.joint_types (JOINT_REVOLUTE,
JOINT_PRISMATIC), which Numba freezes into the kernels as compile-time constants.

Small dense products are written as loops: Numba compiles them to straight-line code,
far cheaper than a BLAS call on 6x6 operands. Kernels call the ``_into`` forms, which
write into a given array: the allocating forms are for tests and references. The dense
operators that no kernel builds ([u x_6] as a new array, [u x_6^*], the motion transform
A) are in cmtm.reference.
"""
import numpy as np

from cmtm._jit import jit, jit_leaf, jit_allocating
from kinematic_trees.joint_types import JOINT_PRISMATIC, JOINT_REVOLUTE  # noqa: F401 (re-exported)


@jit
def skew_into(a, out):
    """out = [a x_3], the 3x3 matrix with out @ b = cross(a, b), without allocating."""
    out[0, 0] = 0.0
    out[1, 1] = 0.0
    out[2, 2] = 0.0
    out[0, 1] = -a[2]
    out[0, 2] = a[1]
    out[1, 0] = a[2]
    out[1, 2] = -a[0]
    out[2, 0] = -a[1]
    out[2, 1] = a[0]


@jit_allocating
def skew(a):
    """[a x_3] as a new array (see ``skew_into``)."""
    out = np.empty((3, 3))
    skew_into(a, out)
    return out


@jit_allocating
def motion_transform_inverse(R, p):
    """A^{-1} = [[R^T, 0], [-R^T [p x], R^T]] (§1.1) as a new array (see
    ``placement_inverse_into``)."""
    out = np.empty((6, 6))
    placement_inverse_into(R, p, out)
    return out


@jit
def placement_inverse_into(R, p, out):
    """out = A^{-1} = [[R^T, 0], [-R^T [p x], R^T]] for the pose (R, p) (§1.1), without
    allocating; row r of -R^T [p x] is (p x R[:, r])^T."""
    for r in range(3):
        for c in range(3):
            out[r, c] = R[c, r]
            out[r + 3, c + 3] = R[c, r]
            out[r, c + 3] = 0.0
        out[r + 3, 0] = p[1] * R[2, r] - p[2] * R[1, r]
        out[r + 3, 1] = p[2] * R[0, r] - p[0] * R[2, r]
        out[r + 3, 2] = p[0] * R[1, r] - p[1] * R[0, r]


@jit
def motion_transform_inverse_into(A, out):
    """out = A^{-1} for a motion transform A = [[R, 0], [B, R]] (R a rotation):
    [[R^T, 0], [-R^T B R^T, R^T]]."""
    for r in range(3):
        for c in range(3):
            out[r, c] = A[c, r]
            out[r + 3, c + 3] = A[c, r]
            out[r, c + 3] = 0.0
    for r in range(3):
        for c in range(3):
            acc = 0.0
            for m in range(3):
                for t in range(3):
                    acc += A[m, r] * A[m + 3, t] * A[c, t]
            out[r + 3, c] = -acc


@jit_allocating
def joint_screw(joint_type, axis):
    """S: [a; 0] for a revolute joint, [0; a] for a prismatic one (joint frame)."""
    S = np.empty(6)
    joint_screw_into(joint_type, axis, 1.0, S)
    return S


@jit
def joint_screw_into(joint_type, axis, scale, out):
    """out = S scale (see ``joint_screw``), without allocating."""
    for r in range(6):
        out[r] = 0.0
    joint_screw_add(joint_type, axis, scale, out)


@jit
def joint_screw_add(joint_type, axis, scale, out):
    """out += S scale: axis * scale added to the angular (revolute) or linear (prismatic)
    half."""
    offset = 0 if joint_type == JOINT_REVOLUTE else 3
    out[offset] += axis[0] * scale
    out[offset + 1] += axis[1] * scale
    out[offset + 2] += axis[2] * scale


@jit
def matmul6(A, B, out):
    """out += A @ B for 6x6 blocks (accumulates)."""
    for r in range(6):
        for c in range(6):
            acc = 0.0
            for m in range(6):
                acc += A[r, m] * B[m, c]
            out[r, c] += acc


@jit
def matTmul6(A, B, out):
    """out += A^T @ B for 6x6 blocks (accumulates)."""
    for r in range(6):
        for c in range(6):
            acc = 0.0
            for m in range(6):
                acc += A[m, r] * B[m, c]
            out[r, c] += acc


@jit_leaf
def matvec6(A, x, out, scale=1.0):
    """out += scale * A @ x for a 6x6 block and a 6-vector (accumulates)."""
    for r in range(6):
        acc = 0.0
        for m in range(6):
            acc += A[r, m] * x[m]
        out[r] += scale * acc


@jit_leaf
def matTvec6(A, x, out):
    """out += A^T @ x for a 6x6 block and a 6-vector (accumulates)."""
    for r in range(6):
        acc = 0.0
        for m in range(6):
            acc += A[m, r] * x[m]
        out[r] += acc


@jit
def motion_block_mul_add(X, Y, scale, out):
    """out += scale * X @ Y for 6x6 blocks of the form [[P, 0], [Q, P]] (motion transforms,
    their time derivatives and [u x] all have it): [[P1 P2, 0], [Q1 P2 + P1 Q2, P1 P2]]."""
    for r in range(3):
        for c in range(3):
            top = 0.0
            low = 0.0
            for m in range(3):
                top += X[r, m] * Y[m, c]
                low += X[r + 3, m] * Y[m, c] + X[r, m] * Y[m + 3, c]
            out[r, c] += scale * top
            out[r + 3, c + 3] += scale * top
            out[r + 3, c] += scale * low


@jit
def motion_block_mul(X, Y, out):
    """out = X @ Y for blocks of the form [[P, 0], [Q, P]] (see motion_block_mul_add)."""
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    motion_block_mul_add(X, Y, 1.0, out)


@jit
def motion_cross_into(u, out):
    """out = [u x_6] = [[w x, 0], [v x, w x]] for u = [w; v], without allocating."""
    for r in range(6):
        for c in range(6):
            out[r, c] = 0.0
    w0, w1, w2, v0, v1, v2 = u[0], u[1], u[2], u[3], u[4], u[5]
    for d in (0, 3):
        out[d + 0, d + 1] = -w2
        out[d + 0, d + 2] = w1
        out[d + 1, d + 0] = w2
        out[d + 1, d + 2] = -w0
        out[d + 2, d + 0] = -w1
        out[d + 2, d + 1] = w0
    out[3, 1] = -v2
    out[3, 2] = v1
    out[4, 0] = v2
    out[4, 2] = -v0
    out[5, 0] = -v1
    out[5, 1] = v0


@jit_leaf
def motion_cross6(v, x):
    """v x x as a 6-tuple: the spatial motion cross product [w x w_x; w x u_x + u x w_x] of
    v = [w; u] and x = [w_x; u_x] (``crm(v) x``), every input read before a caller stores
    (a kernel keeps the result in registers)."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    return (w1 * x[2] - w2 * x[1], w2 * x[0] - w0 * x[2], w0 * x[1] - w1 * x[0],
            u1 * x[2] - u2 * x[1] + w1 * x[5] - w2 * x[4],
            u2 * x[0] - u0 * x[2] + w2 * x[3] - w0 * x[5],
            u0 * x[1] - u1 * x[0] + w0 * x[4] - w1 * x[3])


@jit_leaf
def motion_cross_add(v, x, scale, out):
    """out += scale (v x x) (:func:`motion_cross6`)."""
    product = motion_cross6(v, x)
    for r in range(6):
        out[r] += scale * product[r]


@jit_leaf
def cross3_add(w, x, scale, out):
    """out += scale (w x x) for 3-vectors (w may be a longer vector: its first three
    entries, the angular part of a twist, are used)."""
    out[0] += scale * (w[1] * x[2] - w[2] * x[1])
    out[1] += scale * (w[2] * x[0] - w[0] * x[2])
    out[2] += scale * (w[0] * x[1] - w[1] * x[0])


@jit_leaf
def force_cross6(v, f):
    """v x^* f as a 6-tuple: the spatial force cross product [w x n + u x f_l; w x f_l] of
    v = [w; u] and f = [n; f_l] (``crf(v) f``), every input read before a caller stores."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    return (w1 * f[2] - w2 * f[1] + u1 * f[5] - u2 * f[4],
            w2 * f[0] - w0 * f[2] + u2 * f[3] - u0 * f[5],
            w0 * f[1] - w1 * f[0] + u0 * f[4] - u1 * f[3],
            w1 * f[5] - w2 * f[4], w2 * f[3] - w0 * f[5], w0 * f[4] - w1 * f[3])


@jit_leaf
def force_cross_add(v, f, scale, out):
    """out += scale (v x^* f) (:func:`force_cross6`)."""
    product = force_cross6(v, f)
    for r in range(6):
        out[r] += scale * product[r]
