"""Internal forms of the engine against the specification's recursions.

The engine builds joint CMTMs in closed form (sin/cos jets, cmtm_math.md §3.1); the spec
defines them by the recursion of §2.2. The torque Jacobian uses Lemma 6 in world
coordinates; the joint-force Jacobian follows Lemmas 4-5 in link coordinates.
"""
import numpy as np
import pytest

import cmtm
import kinematic_trees as kt
from cmtm import kinematics
from cmtm.kernel_model import kernel_model
from cmtm.reference import cmtm_inverse_blocks
from cmtm.spatial import motion_transform_inverse
from kinematic_trees.inertia import axis_rotation
from kinematic_trees.joint_types import JOINT_PRISMATIC, JOINT_REVOLUTE
from conftest import python_entry, random_stack


@pytest.mark.parametrize("joint_type", [JOINT_REVOLUTE, JOINT_PRISMATIC])
def test_closed_form_joint_cmtm_matches_recursion(joint_type):
    rng = np.random.default_rng(7)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    K = 7
    qhat = rng.uniform(-1.5, 1.5, size=K + 1)
    closed = np.empty((K, 6, 6))
    python_entry(kinematics.joint_cmtm_inverse)(joint_type, axis, qhat, closed, np.empty(K),
                                                np.empty(K), np.empty((3, 3)))
    S = np.concatenate([axis, np.zeros(3)]) if joint_type == JOINT_REVOLUTE \
        else np.concatenate([np.zeros(3), axis])
    nuJ = np.array([(m + 1) * qhat[m + 1] * S for m in range(K)])
    if joint_type == JOINT_REVOLUTE:  # E(q) of §3.1, built independently of the engine
        R, p = axis_rotation(axis, qhat[0]), np.zeros(3)
    else:
        R, p = np.eye(3), qhat[0] * axis
    recursive = np.empty((K, 6, 6))
    cmtm_inverse_blocks(motion_transform_inverse(R, p), nuJ, recursive)
    # both are sums of O(K) rounded products of unit-size numbers
    np.testing.assert_allclose(closed, recursive, rtol=0, atol=1e-13)


def test_torque_jacobian_equals_screw_projection_of_joint_force_jacobian(tree12):
    """Lemma 6 two ways: world-coordinate torque path vs S^T (Lemma 4-5 joint force)."""
    k = 2
    q = random_stack(tree12, k + 3, n_samples=2, seed=11)
    J = cmtm.jacobians(tree12, q, ("joint_force", "joint_torque"), order=k)
    S = np.zeros((tree12.nv, 6))
    revolute = tree12.joint_type == JOINT_REVOLUTE
    S[revolute, :3] = tree12.axis[revolute]
    S[~revolute, 3:] = tree12.axis[~revolute]
    f = J["joint_force"].reshape(2, k + 1, tree12.nv, 6, k + 3, tree12.nv)
    projected = np.einsum("ic,sjicrn->sjirn", S, f)
    scale = np.abs(J["joint_torque"]).max()
    # two different roundings of the same sums: agreement at a few ulps of the scale
    np.testing.assert_allclose(J["joint_torque"], projected, rtol=0, atol=1e-12 * scale)


def test_classic_rnea_equals_the_comprehensive_engine_at_order_zero(tree12, panda):
    """inverse_dynamics(order=0) runs cmtm.rnea; motion() runs the 6x6 CMTM passes."""
    for model in (tree12, panda):
        q = random_stack(model, 3, n_samples=4, seed=5, scale=2.0)
        fast = cmtm.inverse_dynamics(model, q, order=0)
        comprehensive = cmtm.motion(model, q, order=0).tau
        # same sums in a different order: agreement to a few ulps of the torque scale
        np.testing.assert_allclose(fast, comprehensive, rtol=0,
                                   atol=1e-13 * np.abs(comprehensive).max())


@pytest.mark.parametrize("seed", range(4))
def test_support_runs_are_the_ancestor_paths_cut_where_joints_jump(seed):
    """The KernelModel's runs of each link, expanded, are its path from the root (walked
    here through the parents), and each run is maximal: the next run's first joint is not
    the last joint + 1 (a serial chain: one run per link)."""
    tree = kt.compile_tree(kt.random_tree(15, branching=0.6, seed=seed))
    kernel = kernel_model(tree)
    assert (np.diff(kernel.run_start) > 1).any()        # a path leaves a branch
    for i in range(tree.nv):
        path, j = [], i
        while j >= 0:
            path.insert(0, j)
            j = int(tree.parent[j])
        runs = kernel.runs[kernel.run_start[i]:kernel.run_start[i + 1]]
        assert [int(f + t) for f, length in runs for t in range(length)] == path
        assert all(runs[u + 1, 0] != runs[u, 0] + runs[u, 1] for u in range(len(runs) - 1))
    chain = kernel_model(kt.compile_tree(kt.serial_chain(5)))
    assert chain.runs.tolist() == [[0, length] for length in range(1, 6)]
