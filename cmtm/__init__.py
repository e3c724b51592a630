"""cmtm: higher-order time derivatives of multibody kinematics and dynamics, with exact
structured Jacobians, built on comprehensive motion transformation matrices (CMTM)."""
from cmtm import reference
from cmtm.api import (MAX_ORDER, Motion, flatten_jacobian, inverse_dynamics, jacobian,
                      jacobian_chunks, jacobian_input_orders, jacobians, jacobians_nbytes,
                      link_poses, link_transform_derivatives, mass_matrix, memory_budget,
                      motion, point_jacobian, point_motion)
from cmtm.compile_cache import precompile
from cmtm.structured_jacobians import QUANTITIES

__all__ = ["MAX_ORDER", "Motion", "QUANTITIES", "flatten_jacobian", "inverse_dynamics",
           "jacobian", "jacobian_chunks", "jacobian_input_orders", "jacobians",
           "jacobians_nbytes", "link_poses", "link_transform_derivatives", "mass_matrix",
           "memory_budget", "motion", "point_jacobian", "point_motion", "precompile",
           "reference"]
