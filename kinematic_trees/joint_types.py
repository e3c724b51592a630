"""The joint-type codes of ``CompiledTree.joint_type``: the one definition of this data format.

The model (kinematic_trees.compile) writes these codes and every reader of a compiled tree
compares against them: the engine's Numba kernels (as compile-time constants), the naive
oracle (cmtm.naive), the Pinocchio and JAX references of tests/ and bench/. This module
imports nothing, so that the engine's kernel modules and the oracle may import it without
depending on anything else of the model layer (tests/test_layering.py allows exactly this
module); tests/test_joint_types.py checks that no other module defines the codes again.
"""

JOINT_REVOLUTE = 0
"""``joint_type`` code of revolute and continuous joints: screw S = [axis; 0]."""
JOINT_PRISMATIC = 1
"""``joint_type`` code of prismatic joints: screw S = [0; axis]."""
