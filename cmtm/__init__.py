"""cmtm: higher-order time derivatives of multibody kinematics and dynamics, with exact
structured Jacobians, built on comprehensive motion transformation matrices (CMTM)."""
from cmtm import reference
from cmtm.api import (Motion, flatten_jacobian, inverse_dynamics, jacobian, jacobian_chunks,
                      jacobian_input_orders, jacobians, link_poses, link_transform_derivatives,
                      mass_matrix, motion)
from cmtm.structured_jacobians import QUANTITIES

__all__ = ["Motion", "QUANTITIES", "flatten_jacobian", "inverse_dynamics", "jacobian",
           "jacobian_chunks", "jacobian_input_orders", "jacobians", "link_poses",
           "link_transform_derivatives", "mass_matrix", "motion", "reference"]
