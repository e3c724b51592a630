"""cmtm: higher-order time derivatives of multibody kinematics and dynamics, with exact
structured Jacobians, built on comprehensive motion transformation matrices (CMTM)."""
from cmtm.api import Motion, inverse_dynamics, link_poses, mass_matrix, motion

__all__ = ["Motion", "motion", "inverse_dynamics", "link_poses", "mass_matrix"]
