"""kinematic_trees: robot and human models as networkx trees, compiled to flat arrays.

    tree = serial_chain(3)          # or two_link_planar(), panda(), random_tree(n, seed=...),
                                    # load_urdf(path, lock=...), or KinematicTree() by hand
    model = compile_tree(tree)      # immutable CompiledTree for the cmtm engine

This package is the bottom layer: it imports neither ``cmtm`` nor ``ioc``.
"""
from .builders import panda, random_tree, serial_chain, two_link_planar
from .compile import JOINT_PRISMATIC, JOINT_REVOLUTE, CompiledTree, compile_tree
from .graph import JOINT_TYPES, KinematicTree, ModelError
from .urdf import load_urdf

__all__ = [
    "JOINT_PRISMATIC", "JOINT_REVOLUTE", "JOINT_TYPES", "CompiledTree", "KinematicTree",
    "ModelError", "compile_tree", "load_urdf", "panda", "random_tree", "serial_chain",
    "two_link_planar",
]
