"""Session-wide fixtures: small compiled models shared by every test module.

Numba compiles each kernel once per process (and caches it on disk), so tests share these
models and keep to few samples; the large sizes belong in bench/.
"""
import numpy as np
import pytest

import kinematic_trees as kt


@pytest.fixture(scope="session")
def two_link():
    """The background reference's planar arm, gravity along -y."""
    return kt.compile_tree(kt.two_link_planar(), gravity=(0.0, -9.81, 0.0))


@pytest.fixture(scope="session")
def chain3():
    return kt.compile_tree(kt.serial_chain(3))


@pytest.fixture(scope="session")
def panda():
    return kt.compile_tree(kt.panda())


@pytest.fixture(scope="session")
def tree12():
    """A branching tree with 12 joints, prismatic joints and merged fixed joints."""
    return kt.compile_tree(kt.random_tree(12, branching=0.5, prismatic_fraction=0.3, seed=4))


@pytest.fixture(scope="session")
def jacobian_models(chain3, panda, tree12):
    """The three models on which every Jacobian claim is tested."""
    return {"chain3": chain3, "panda": panda, "tree12": tree12}


def random_stack(model, n_orders, n_samples=None, seed=0, scale=1.0):
    """A random raw derivative stack (n_samples, n_orders, nv) or (n_orders, nv)."""
    rng = np.random.default_rng(seed)
    shape = (n_orders, model.nv) if n_samples is None else (n_samples, n_orders, model.nv)
    return scale * rng.uniform(-1.0, 1.0, size=shape)
