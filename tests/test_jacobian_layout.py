"""Jacobian layouts: the chunked path, the paper's flattened block matrix (raw and Taylor)."""
import numpy as np
import pytest

import cmtm
from conftest import random_stack


def test_chunks_reassemble_the_full_jacobians(chain3):
    q = random_stack(chain3, 4, n_samples=5, seed=2)
    quantities = ("link_velocity", "joint_torque")
    full = cmtm.jacobians(chain3, q, quantities, order=1)
    chunks = list(cmtm.jacobian_chunks(chain3, q, quantities, order=1, chunk=2))
    assert [(a, b) for a, b, _ in chunks] == [(0, 2), (2, 4), (4, 5)]
    for name in quantities:
        np.testing.assert_array_equal(np.concatenate([J[name] for _, _, J in chunks]),
                                      full[name])


@pytest.mark.parametrize("chunk", [0, -3, 2.5, True])
def test_bad_chunk_size_is_rejected(chain3, chunk):
    with pytest.raises(ValueError, match="chunk: expected a positive integer"):
        list(cmtm.jacobian_chunks(chain3, random_stack(chain3, 4, n_samples=2), "joint_torque",
                                  chunk=chunk))


def test_flattened_blocks_sit_order_major(tree12):
    q = random_stack(tree12, 5, n_samples=2, seed=3)
    J = cmtm.jacobian(tree12, q, "joint_torque", order=2)
    flat = cmtm.flatten_jacobian(J)
    nv = tree12.nv
    assert flat.shape == (2, 3 * nv, 5 * nv)
    np.testing.assert_array_equal(flat[:, 2 * nv:3 * nv, 4 * nv:5 * nv], J[:, 2, :, 4, :])


def test_taylor_scaled_link_tangent_jacobian_is_block_toeplitz(tree12):
    """cmtm_math.md §8: the link-tangent Jacobian is T(J_b), the block-Toeplitz matrix of
    the Taylor coefficients of J_b; raw blocks carry binomial weights instead."""
    k, nv, m = 3, tree12.nv, 6 * tree12.nv
    q = random_stack(tree12, k + 1, seed=8)
    J = cmtm.jacobian(tree12, q, "link_tangent", order=k)
    taylor = cmtm.flatten_jacobian(J, taylor=True)
    block = lambda l, r: taylor[l * m:(l + 1) * m, r * nv:(r + 1) * nv]
    for l in range(k + 1):
        for r in range(k + 1):
            if r > l:
                assert not block(l, r).any()
            else:  # a few ulps: the raw blocks are rescaled by r!/l!
                np.testing.assert_allclose(block(l, r), block(l - r, 0), rtol=1e-12, atol=1e-14)
    raw = cmtm.flatten_jacobian(J)
    assert np.abs(raw[2 * m:3 * m, nv:2 * nv] - raw[m:2 * m, :nv]).max() > 1e-3  # C(2,1) = 2


def test_flatten_rejects_a_non_jacobian():
    with pytest.raises(ValueError, match="expected shape"):
        cmtm.flatten_jacobian(np.zeros((3, 4)))
