"""Coupled (mimic) joints: the map from the independent joints to all joints of a model.

A joint coupled to a leader (URDF ``<mimic>`` loaded with ``mimic="couple"``, or
``KinematicTree.couple_joint``) stays an ordinary joint of the compiled model: the engine
computes every stack and Jacobian for all nv joints. Its position follows its leader,

    q_i = m_i q_leader(i) + o_i,      so      q = C q_ind + c,

with q_ind the n independent joints (in model order), C (nv, n) holding a 1 for every
independent joint and m_i in the leader's column for every coupled one, and c the offsets.
Time derivatives of order r >= 1 drop the offset: q^(r) = C q_ind^(r). By the chain rule,
a Jacobian with respect to q_ind is the Jacobian with respect to q times C (each coupled
joint's column, times its multiplier, added to its leader's), and by virtual work the
generalized forces on q_ind are C^T tau.
"""
from typing import NamedTuple

import numpy as np

from .compile import CompiledTree
from .graph import ModelError


class Coupling(NamedTuple):
    """q = C q_ind + c for a compiled model (module docstring).

    C            (nv, n) float64   d q / d q_ind
    c            (nv,) float64     offsets (rad or m)
    independent  (n,) int64        model indices of the independent joints (q_ind order)
    """

    C: np.ndarray
    c: np.ndarray
    independent: np.ndarray

    def full_stack(self, q_stack):
        """Raw derivative stack of all joints from that of the independent ones.

        q_stack : (..., K, n) float64, raw derivatives q_ind, q_ind', ... Returns
        (..., K, nv): C q_ind^(r), plus c at order r = 0.

        >>> import kinematic_trees as kt
        >>> tree = kt.serial_chain(2)
        >>> tree.couple_joint("joint2", "joint1", multiplier=-2.0, offset=0.5)
        >>> coupling(kt.compile_tree(tree)).full_stack([[1.0], [3.0]]).tolist()
        [[1.0, -1.5], [3.0, -6.0]]
        """
        n = self.C.shape[1]
        try:
            q_stack = np.asarray(q_stack, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"q_stack: expected numbers of shape (..., K, {n}), got "
                             f"{q_stack!r}") from None
        if q_stack.ndim < 2 or q_stack.shape[-1] != n:
            raise ValueError(f"q_stack: expected shape (..., K, {n}) over the {n} "
                             f"independent joints, got {q_stack.shape}")
        full = q_stack @ self.C.T
        full[..., 0, :] += self.c
        return full

    def pull_back(self, covectors):
        """Contract the last axis, over the nv joints, with C: (..., nv) -> (..., n).

        On a Jacobian J[..., r, :] = d y / d q^(r) (the layout of ``cmtm.jacobian``) this
        is the chain rule, d y / d q_ind^(r) = J C; on joint torques tau it gives the
        generalized forces on the independent joints, C^T tau.
        """
        covectors = np.asarray(covectors, dtype=np.float64)
        if covectors.ndim < 1 or covectors.shape[-1] != self.C.shape[0]:
            raise ValueError(f"covectors: expected a last axis over the {self.C.shape[0]} "
                             f"joints of the model, got shape {covectors.shape}")
        return covectors @ self.C


def coupling(model):
    """The Coupling q = C q_ind + c of a CompiledTree (identity when nothing is coupled).

    >>> import kinematic_trees as kt
    >>> tree = kt.serial_chain(3)
    >>> tree.couple_joint("joint3", "joint1", multiplier=0.5)
    >>> coupling(kt.compile_tree(tree)).C.tolist()
    [[1.0, 0.0], [0.0, 1.0], [0.5, 0.0]]
    """
    if not isinstance(model, CompiledTree):
        raise ModelError(f"model: expected a CompiledTree (compile_tree), got "
                         f"{type(model).__name__}")
    leader = np.asarray(model.mimic_leader)
    nv = len(leader)
    bad = [i for i, j in enumerate(leader.tolist())
           if not (j == -1 or (0 <= j < nv and j != i and leader[j] == -1))]
    if bad:
        raise ModelError(f"model.mimic_leader: expected -1 or an independent joint's index "
                         f"in 0..{nv - 1}, got {leader[bad[0]]} for joint {bad[0]}")
    independent = np.flatnonzero(leader < 0)
    column = np.full(nv, -1, dtype=np.int64)
    column[independent] = np.arange(len(independent))
    C = np.zeros((nv, len(independent)))
    C[independent, column[independent]] = 1.0
    coupled = np.flatnonzero(leader >= 0)
    C[coupled, column[leader[coupled]]] = np.asarray(model.mimic_multiplier)[coupled]
    c = np.array(model.mimic_offset, dtype=np.float64)
    return Coupling(C=C, c=c, independent=independent)
