"""kinematic_trees: robot and human models as networkx trees, compiled to flat arrays.

    tree = serial_chain(3)          # or two_link_planar(), panda(), random_tree(n, seed=...),
                                    # human(), load_urdf(path, lock=..., mimic=...),
                                    # or KinematicTree() by hand; floating_base="xyz_zyx"
                                    # gives any of them a free root (six virtual joints)
    model = compile_tree(tree)      # immutable CompiledTree for the cmtm engine; gravity:
                                    # the tree's own (tree.gravity; the human's is y-up)
    coupling(model)                 # q = C q_ind + c when joints mimic others

This package is the bottom layer: it imports neither ``cmtm`` nor ``ioc``.
"""
from .builders import panda, random_tree, serial_chain, two_link_planar
from .compile import CompiledTree, compile_tree
from .example_robots import example_robots_dir, human
from .floating_base import FLOATING_BASES, add_floating_base, floating_base_joints
from .graph import (JOINT_TYPES, Y_UP_GRAVITY, Z_UP_GRAVITY, InertiaWarning, KinematicTree,
                    ModelError)
from .joint_types import JOINT_PRISMATIC, JOINT_REVOLUTE
from .mimic import Coupling, coupling
from .urdf import MIMIC_MODES, load_urdf

__all__ = [
    "FLOATING_BASES", "JOINT_PRISMATIC", "JOINT_REVOLUTE", "JOINT_TYPES", "MIMIC_MODES",
    "Y_UP_GRAVITY", "Z_UP_GRAVITY",
    "CompiledTree", "Coupling", "InertiaWarning", "KinematicTree", "ModelError",
    "add_floating_base", "compile_tree", "coupling", "example_robots_dir",
    "floating_base_joints", "human",
    "load_urdf", "panda", "random_tree", "serial_chain", "two_link_planar",
]
