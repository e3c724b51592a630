"""Rigid-body algebra used to build models: rotations, rotational and spatial inertias.

Symbols (cmtm_math.md §1.1, §5), all float64:

    [a x]         skew(a)                     (3,3)  cross-product matrix, skew(a) @ b = a x b
    R(rpy)        rpy_matrix(rpy)             (3,3)  URDF convention Rz(yaw) Ry(pitch) Rx(roll)
    exp(q [a x])  axis_rotation(a, q)         (3,3)  rotation by the angle q about the unit axis a
    m, c, I_c     mass, com, inertia_com      (), (3,), (3,3)  I_c about the centre of mass
    Sigma         tr(I_c)/2 E - I_c           (3,3)  density-weighted covariance of the mass
                                                     about the COM, int rho r r^T dV
    I             spatial_inertia(m, c, I_c)  (6,6)  about the frame origin, angular-first

Nothing here validates its inputs; ``graph.py`` does that at the model boundary.
"""
import numpy as np


def skew(a):
    """Cross-product matrix [a x] of a (3,) vector: ``skew(a) @ b == np.cross(a, b)``, (3,3)."""
    ax, ay, az = a
    return np.array([[0.0, -az, ay], [az, 0.0, -ax], [-ay, ax, 0.0]])


def rpy_matrix(rpy):
    """Rotation matrix of URDF roll-pitch-yaw angles (rad): R = Rz(yaw) Ry(pitch) Rx(roll), (3,3).

    >>> np.round(rpy_matrix((0.0, 0.0, np.pi / 2)) @ [1.0, 0.0, 0.0], 12) + 0.0
    array([0., 1., 0.])
    """
    roll, pitch, yaw = rpy
    return (axis_rotation((0.0, 0.0, 1.0), yaw)
            @ axis_rotation((0.0, 1.0, 0.0), pitch)
            @ axis_rotation((1.0, 0.0, 0.0), roll))


def axis_rotation(axis, angle):
    """Rotation by ``angle`` (rad) about the unit ``axis`` (3,) (Rodrigues): (3,3).

    exp(q [a x]) = E + sin(q) [a x] + (1 - cos(q)) [a x]^2.
    """
    a_x = skew(axis)
    return np.eye(3) + np.sin(angle) * a_x + (1.0 - np.cos(angle)) * (a_x @ a_x)


def inertia_matrix(ixx, ixy, ixz, iyy, iyz, izz):
    """Symmetric (3,3) rotational inertia from its six URDF components (kg m^2)."""
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


def rotate_inertia(R, inertia):
    """Rotational inertia (3,3) given in frame B, re-expressed in frame A: R I R^T with R = A_R_B.

    The result is made exactly symmetric (rounding in the products breaks it by ~1 ulp).
    """
    rotated = R @ inertia @ R.T
    return 0.5 * (rotated + rotated.T)


def lump(bodies):
    """Combine rigidly attached bodies into one (parallel-axis theorem).

    bodies : iterable of (m, c (3,), I_c (3,3)), all expressed in one common frame.
    Returns (m, c, I_c) of the union in that frame, with
    m = sum m_k, c = sum m_k c_k / m (the frame origin when m == 0) and
    I_c = sum I_c,k + m_k [d_k x][d_k x]^T, d_k = c_k - c.
    """
    bodies = [(float(m), np.asarray(c, float), np.asarray(I, float)) for m, c, I in bodies]
    mass = sum(m for m, _, _ in bodies)
    first_moment = sum((m * c for m, c, _ in bodies), np.zeros(3))
    com = first_moment / mass if mass > 0.0 else np.zeros(3)
    inertia_com = np.zeros((3, 3))
    for m, c, I in bodies:
        d_x = skew(c - com)
        inertia_com += I + m * (d_x @ d_x.T)
    return mass, com, inertia_com


def consistent_inertia(inertia_com):
    """The physically consistent rotational inertia nearest to ``inertia_com`` (3,3).

    A rotational inertia about the COM comes from a non-negative mass density exactly when
    its covariance Sigma = tr(I_c)/2 E - I_c is positive semi-definite (principal moments
    non-negative and obeying the triangle inequality lambda_3 <= lambda_1 + lambda_2).
    Sigma and I_c share principal axes, and I_c = tr(Sigma) E - Sigma; clipping Sigma's
    eigenvalues at zero is the Frobenius-nearest PSD covariance, mapped back to an inertia.

    Returns (consistent (3,3), correction), ``correction`` the largest change of a principal
    moment (kg m^2), 0 for a consistent inertia up to rounding.

    >>> I, correction = consistent_inertia(np.diag([0.0, 0.0, 1.0]))  # a line of mass
    >>> np.round(np.diag(I), 12) + 0.0, correction
    (array([0.5, 0.5, 1. ]), 0.5)
    """
    moments, axes = np.linalg.eigh(inertia_com)
    sigma = np.maximum(0.5 * moments.sum() - moments, 0.0)
    consistent_moments = sigma.sum() - sigma
    consistent = rotate_inertia(axes, np.diag(consistent_moments))
    return consistent, float(np.max(np.abs(consistent_moments - moments)))


def spatial_inertia(mass, com, inertia_com):
    """Spatial inertia (6,6) about the frame origin, angular-first (cmtm_math.md §5).

    I = [[I_c + m [c x][c x]^T, m [c x]], [m [c x]^T, m E]].

    >>> spatial_inertia(2.0, (0.0, 0.0, 1.0), np.zeros((3, 3)))[:3, 3:] + 0.0  # m [c x]
    array([[ 0., -2.,  0.],
           [ 2.,  0.,  0.],
           [ 0.,  0.,  0.]])
    """
    c_x = skew(com)
    return np.block([[inertia_com + mass * (c_x @ c_x.T), mass * c_x],
                     [mass * c_x.T, mass * np.eye(3)]])
