"""The order-0 torque Jacobian kernel (cmtm/rnea_derivatives.py) against the Lemma 6 jet
kernel at k = 0 (cmtm/torque_jacobian.py, which the API runs for k >= 1: other pair
formulas on Taylor jets, sharing only the world pose, screw and inertia leaves), on trees
with branches, prismatic joints and a floating base; its zeros off the branches; its
threads and its workspace; the torques that it and the Lemma 6 kernel write with their
Jacobians (cmtm.api.torques_and_jacobian). Agreement with Pinocchio's
computeRNEADerivatives, the naive oracle and finite differences is tested in
test_jacobians.py and test_oracle.py through cmtm.jacobian, which runs this kernel at
order 0.
"""
import numba
import numpy as np
import pytest

import cmtm
import kinematic_trees as kt
from cmtm import api
from cmtm.rnea_derivatives import torque_derivatives_kernel, torque_derivatives_workspace
from cmtm.taylor import taylor_from_raw
from cmtm.torque_jacobian import torque_jacobian_kernel, torque_workspace
from conftest import claim_all, random_stack, relative_error, results_on_threads


def lemma6_order0(model, q_stack):
    """d tau / d(q, q', q'') (n_samples, nv, 3, nv) from the Lemma 6 jet kernel at k = 0."""
    kernel, n_samples, nv = api.kernel_model_of(model), q_stack.shape[0], model.nv
    out = np.zeros((n_samples, 1, nv, 3, nv))
    torque_jacobian_kernel(kernel, torque_workspace(kernel, 0, 1), 0, claim_all(n_samples),
                           n_samples, taylor_from_raw(q_stack[:, :3]),
                           np.empty((0, 1, nv)), out)
    return out[:, 0]


@pytest.fixture(scope="module")
def models(panda, tree12):
    """Models with branches (tree12), prismatic joints (random_tree with prismatic
    probability) and a floating base (six virtual joints, prismatic and revolute)."""
    return {"panda": panda, "tree12": tree12,
            "prismatic_tree": kt.compile_tree(kt.random_tree(7, seed=5, prismatic_fraction=0.5)),
            "floating_chain": kt.compile_tree(kt.serial_chain(3), floating_base="xyz_zyx")}


@pytest.mark.parametrize("order", [0, 1, 2])
@pytest.mark.parametrize("name", ["panda", "tree12", "prismatic_tree", "floating_chain"])
def test_torques_and_jacobian_from_one_pass(models, name, order):
    """cmtm.api.torques_and_jacobian: the torques against cmtm.motion's (other recursions,
    the comprehensive passes on CMTMs: 1e-12 relative to the largest, seen ~1e-15), the
    same bits alone as with the Jacobian, and the Jacobian that of cmtm.jacobian bit for
    bit (the same kernel); a single instant drops the sample axis."""
    model = models[name]
    q_stack = random_stack(model, order + 3, n_samples=5, seed=11)
    tau, J = api.torques_and_jacobian(model, q_stack, order)
    assert relative_error(tau, cmtm.motion(model, q_stack, order).tau) < 1e-12
    alone, none = api.torques_and_jacobian(model, q_stack, order, jacobian=False)
    assert none is None and np.array_equal(alone, tau)
    assert api.torques_and_jacobian(model, q_stack, order, values=False)[0] is None
    np.testing.assert_array_equal(J, cmtm.jacobian(model, q_stack, "joint_torque", order))
    one = api.torques_and_jacobian(model, q_stack[2], order)
    np.testing.assert_array_equal(one[0], tau[2])
    np.testing.assert_array_equal(one[1], J[2])


def test_torques_and_jacobian_check_their_inputs(models):
    model = models["panda"]
    q_stack = random_stack(model, 3, n_samples=2, seed=12)
    with pytest.raises(ValueError, match="at least 3 derivative orders"):
        api.torques_and_jacobian(model, q_stack[:, :2])
    with pytest.raises(ValueError, match="at least 4 derivative orders"):
        api.torques_and_jacobian(model, q_stack, 1)
    with pytest.raises(ValueError, match="order: expected a non-negative integer"):
        api.torques_and_jacobian(model, q_stack, -1)
    with pytest.raises(ValueError, match="values: expected True or False"):
        api.torques_and_jacobian(model, q_stack, values=1)
    with pytest.raises(ValueError, match="model: expected a CompiledTree"):
        api.torques_and_jacobian(None, q_stack)
    with pytest.raises(ValueError, match="q_stack: expected finite values"):
        api.torques_and_jacobian(model, np.full_like(q_stack, np.nan))


@pytest.mark.parametrize("name", ["panda", "tree12", "prismatic_tree", "floating_chain"])
def test_matches_lemma6_jet_kernel(models, name):
    """d tau / d(q, q', q'') of the order-0 kernel = the k = 0 rows of the Lemma 6 jet
    kernel: 1e-12 relative to the largest entry (seen ~1e-15)."""
    model = api.check_model(models[name])
    q_stack = random_stack(model, 3, n_samples=3, seed=7)
    fast = cmtm.jacobian(model, q_stack, "joint_torque", order=0)
    assert relative_error(fast[:, 0], lemma6_order0(model, q_stack)) < 1e-12


def test_prismatic_tree_has_prismatic_joints(models):
    """The prismatic case above is not vacuous."""
    assert (models["prismatic_tree"].joint_type == kt.JOINT_PRISMATIC).any()


def test_entries_off_the_branches_are_written_zero(models):
    """The kernel writes every entry of its output (the API allocates it uninitialised):
    pairs on different branches are exactly 0 even over NaN-filled memory, and the others
    are those of the Lemma 6 jet kernel."""
    model = api.check_model(models["tree12"])
    q_stack = random_stack(model, 3, n_samples=2, seed=1)
    out = np.full((2, model.nv, 3, model.nv), np.nan)
    kernel = api.kernel_model_of(model)
    finite = np.zeros(2, dtype=np.bool_)
    tau = np.full((2, model.nv), np.nan)
    torque_derivatives_kernel(kernel, torque_derivatives_workspace(kernel, 1), 0, claim_all(2),
                              2, q_stack, tau, out, finite)
    assert finite.all()
    expected = lemma6_order0(model, q_stack)
    assert np.isfinite(out).all()
    related = np.zeros((model.nv, model.nv), dtype=bool)
    for i in range(model.nv):
        related[i, i:model.subtree_end[i]] = True
        related[i:model.subtree_end[i], i] = True
    assert (~related).any()
    assert (out[:, ~related[:, None, :].repeat(3, axis=1)] == 0.0).all()
    assert relative_error(out, expected) < 1e-12
    assert relative_error(tau, cmtm.inverse_dynamics(model, q_stack)[:, 0]) < 1e-12


def test_identical_bit_for_bit_for_any_thread_count(models, split_every_call):
    """One thread and every thread give the same bits (each sample is computed by the same
    instructions whatever the chunk it falls in); every call split, however small."""
    model = models["tree12"]
    q_stack = random_stack(model, 3, n_samples=9, seed=2)
    results = results_on_threads(
        sorted({1, numba.config.NUMBA_NUM_THREADS}),
        lambda: cmtm.jacobian(model, q_stack, "joint_torque", order=0))
    assert all(np.array_equal(results[0], other) for other in results[1:])


def test_workspace_reused_across_calls(models):
    """A second call with the same model takes the cached workspace (of chunk 0)."""
    model = models["panda"]
    q_stack = random_stack(model, 3, n_samples=4, seed=3)
    cmtm.jacobian(model, q_stack, "joint_torque", order=0)
    kernel = api.kernel_model_of(model)
    first = api.workspace(kernel, "torque_derivatives", (0, True), lambda: None)
    cmtm.jacobian(model, q_stack, "joint_torque", order=0)
    assert first is not None
    assert api.workspace(kernel, "torque_derivatives", (0, True), lambda: None) is first
