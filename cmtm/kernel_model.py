"""The arrays-only model the kernels take (the Model of a Model / Data split; each kernel
module defines its workspace, the Data).

A :class:`KernelModel` holds every array a kernel reads, built once per model by
:func:`kernel_model` from a ``kinematic_trees.CompiledTree``: the tree (parents, subtree
ranges and the support of every link, so that no kernel writes its own ancestor walk),
the joints and the mass properties in the forms the order-0 kernels use. Kernels take a
KernelModel and a workspace instead of a dozen positional arrays.

Tree traversal (links in depth-first pre-order, ``parent[i] < i``):

* subtree of link i: ``range(i, subtree_end[i])``;
* support of link i (the joints that move it, i first, the root last):
  ``support[support_start[i]:support_start[i + 1]]``;
* the same joints from the root, cut into runs of consecutive joints:
  ``runs[run_start[i]:run_start[i + 1]]``, rows (first joint, length), so that a loop over
  the support of i reads and writes contiguous entries (one run for a serial chain, one
  more per branch the path leaves in a tree).

Threads. A kernel batched over samples, ``kernel(model, workspace, chunk, claim, last,
...)``, computes the samples below ``last`` that it claims, a block at a time, from the
counter ``claim`` that every thread of the call shares (``cmtm._jit.claim_samples``),
with slot ``chunk`` of every workspace array (leading axis), and returns how many it
computed.
``cmtm.api.run_chunks`` gives each thread a workspace of its own (one slot, so that two
threads never write one cache line) and runs at most one per thread of
``numba.get_num_threads()`` (Numba's ``NUMBA_NUM_THREADS`` environment variable or
``numba.set_num_threads``), and fewer when a call holds little work
(``cmtm.api.chunk_count``). Every sample is computed by the same instructions whatever
thread claims it, so results are identical bit for bit for any thread count.
"""
from typing import NamedTuple

import numpy as np

from cmtm.kinematics import joint_geometry


class KernelModel(NamedTuple):
    """Read-only arrays of a compiled tree for the kernels (n links, nv = n).

    ===================  ==============  ==============================================
    field                shape, dtype    meaning
    ===================  ==============  ==============================================
    parent               (n,) int64      parent link, -1 for the base
    subtree_end          (n,) int64      subtree of i is range(i, subtree_end[i])
    support_start        (n+1,) int64    support of i is support[support_start[i]:
    support              (total,) int64  support_start[i+1]]: i, parent[i], ..., root
    run_start            (n+1,) int64    runs of i are runs[run_start[i]:run_start[i+1]]:
    runs                 (r, 2) int64    (first joint, length), root first
    joint_type           (n,) int64      kinematic_trees.joint_types codes
    axis                 (n, 3)          unit joint axis in the link frame
    placement_R          (n, 3, 3)       pose of joint i's frame in the parent link
    placement_p          (n, 3)          at q = 0
    mass                 (n,)            kg
    first_moment         (n, 3)          m c, c the centre of mass in the link frame
    rotational_inertia   (n, 3, 3)       about the link origin, link axes
    spatial_inertia      (n, 6, 6)       about the link origin, angular-first
    gravity              (3,)            in the base frame, m/s^2
    screw                (n, 6)          joint screw S_i in the link frame
    placement_inverse    (n, 6, 6)       A_0,i^{-1}, inverse joint placement (motion)
    ===================  ==============  ==============================================
    """

    parent: np.ndarray
    subtree_end: np.ndarray
    support_start: np.ndarray
    support: np.ndarray
    run_start: np.ndarray
    runs: np.ndarray
    joint_type: np.ndarray
    axis: np.ndarray
    placement_R: np.ndarray
    placement_p: np.ndarray
    mass: np.ndarray
    first_moment: np.ndarray
    rotational_inertia: np.ndarray
    spatial_inertia: np.ndarray
    gravity: np.ndarray
    screw: np.ndarray
    placement_inverse: np.ndarray


def support_arrays(parent):
    """(support_start, support) of a pre-ordered parent array: the support of link i,
    i first and the root last, is support[support_start[i]:support_start[i + 1]]."""
    chains = []
    for i in range(len(parent)):
        chain = [i]
        while parent[chain[-1]] >= 0:
            chain.append(int(parent[chain[-1]]))
        chains.append(chain)
    start = np.zeros(len(parent) + 1, dtype=np.int64)
    start[1:] = np.cumsum([len(chain) for chain in chains])
    flat = np.array([j for chain in chains for j in chain], dtype=np.int64)
    return start, flat


def support_runs(support_start, support):
    """(run_start, runs): the support of each link i from the root (i last: its support
    list reversed) cut into runs of consecutive joints, rows (first joint, length) of
    runs[run_start[i]:run_start[i + 1]]."""
    run_start, runs = [0], []
    for i in range(len(support_start) - 1):
        path = support[support_start[i]:support_start[i + 1]][::-1]
        for t, joint in enumerate(path):
            if t > 0 and joint == path[t - 1] + 1:
                runs[-1][1] += 1
            else:
                runs.append([int(joint), 1])
        run_start.append(len(runs))
    return np.array(run_start, dtype=np.int64), np.array(runs, dtype=np.int64).reshape(-1, 2)


def _frozen(array, dtype=np.float64):
    array = np.ascontiguousarray(array, dtype=dtype)
    array.flags.writeable = False
    return array


def kernel_model(tree):
    """The :class:`KernelModel` of a checked ``CompiledTree`` (``cmtm.api.check_model``);
    the joint screws and inverse placements filled by ``cmtm.kinematics.joint_geometry``."""
    start, support = support_arrays(tree.parent)
    run_start, runs = support_runs(start, support)
    mass, n = np.asarray(tree.mass), len(tree.parent)
    model = KernelModel(
        parent=tree.parent, subtree_end=tree.subtree_end,
        support_start=_frozen(start, np.int64), support=_frozen(support, np.int64),
        run_start=_frozen(run_start, np.int64), runs=_frozen(runs, np.int64),
        joint_type=tree.joint_type, axis=tree.axis, placement_R=tree.placement_R,
        placement_p=tree.placement_p, mass=tree.mass,
        first_moment=_frozen(mass[:, None] * np.asarray(tree.com)),
        rotational_inertia=_frozen(np.asarray(tree.spatial_inertia)[:, :3, :3]),
        spatial_inertia=tree.spatial_inertia, gravity=tree.gravity,
        screw=np.empty((n, 6)), placement_inverse=np.empty((n, 6, 6)))
    joint_geometry(model, model.screw, model.placement_inverse)
    model.screw.flags.writeable = False
    model.placement_inverse.flags.writeable = False
    return model

