"""The chunked path gives the same Jacobians as one call, and validates its chunk size."""
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
