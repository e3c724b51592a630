"""Spatial-vector algebra, angular-first (cmtm_math.md §1.1).

Symbol table (paper -> code, shape, float64):

=====================  ==================  =======
[a x_3]                ``skew(a)``         (3, 3)
[u x_6]                ``motion_cross``    (6, 6)
[u x_6^*]              ``force_cross``     (6, 6)   = -[u x_6]^T
[y hat x_6]            ``motion_hat``      (6, 6)   [x x] y = [y hat x] x
[h hat x_6^*]          ``force_hat``       (6, 6)   [x x^*] h = [h hat x^*] x
A (motion transform)   ``motion_transform(R, p)``   [[R, 0], [[p x] R, R]]
=====================  ==================  =======

Small dense products are written as loops: Numba compiles them to straight-line code,
far cheaper than a BLAS call on 6x6 operands.
"""
import numpy as np

from cmtm._jit import jit

JOINT_REVOLUTE = 0
JOINT_PRISMATIC = 1


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


@jit
def skew(a):
    """[a x_3] as a new array (see ``skew_into``)."""
    out = np.empty((3, 3))
    skew_into(a, out)
    return out


@jit
def motion_cross(u):
    """[u x_6] = [[w x, 0], [v x, w x]] for the twist u = [w; v] (§1.1), as a new array."""
    out = np.empty((6, 6))
    motion_cross_into(u, out)
    return out


@jit
def force_cross(u):
    """[u x_6^*] = -[u x_6]^T = [[w x, v x], [0, w x]] (§1.1)."""
    out = np.zeros((6, 6))
    w = skew(u[:3])
    v = skew(u[3:])
    out[:3, :3] = w
    out[3:, 3:] = w
    out[:3, 3:] = v
    return out


@jit
def motion_hat(y):
    """[y hat x_6] = -[y x_6], so that [x x_6] y = [y hat x_6] x (hat-swap, §1.1)."""
    return -motion_cross(y)


@jit
def force_hat(h):
    """[h hat x_6^*] = -[[n x, f x], [f x, 0]] for h = [n; f], so [x x^*] h = [h hat x^*] x."""
    out = np.zeros((6, 6))
    n = skew(h[:3])
    f = skew(h[3:])
    out[:3, :3] = -n
    out[:3, 3:] = -f
    out[3:, :3] = -f
    return out


@jit
def motion_transform(R, p):
    """A = [[R, 0], [[p x] R, R]]: maps twists in frame c to frame p, (R, p) = pose of c in p."""
    out = np.zeros((6, 6))
    pxR = skew(p) @ R
    out[:3, :3] = R
    out[3:, 3:] = R
    out[3:, :3] = pxR
    return out


@jit
def motion_transform_inverse(R, p):
    """A^{-1} = [[R^T, 0], [-R^T [p x], R^T]] (§1.1)."""
    out = np.zeros((6, 6))
    Rt = R.T.copy()
    out[:3, :3] = Rt
    out[3:, 3:] = Rt
    out[3:, :3] = -(Rt @ skew(p))
    return out


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


@jit
def joint_screw(joint_type, axis):
    """S: [a; 0] for a revolute joint, [0; a] for a prismatic one (joint frame)."""
    S = np.zeros(6)
    if joint_type == JOINT_REVOLUTE:
        S[:3] = axis
    else:
        S[3:] = axis
    return S


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


@jit
def matvec6(A, x, out, scale=1.0):
    """out += scale * A @ x for a 6x6 block and a 6-vector (accumulates)."""
    for r in range(6):
        acc = 0.0
        for m in range(6):
            acc += A[r, m] * x[m]
        out[r] += scale * acc


@jit
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
    out[:] = 0.0
    motion_block_mul_add(X, Y, 1.0, out)


@jit
def motion_cross_into(u, out):
    """out = [u x_6] = [[w x, 0], [v x, w x]] for u = [w; v], without allocating."""
    out[:] = 0.0
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
