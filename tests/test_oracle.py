"""The engine against the naive oracle of cmtm.naive, which shares no code with it: every
quantity's Jacobian at orders 0-6, motion stacks to order 8, flatten_jacobian (raw and
Taylor), the 36-joint human and a one-joint model.

The oracle (tests/test_layering.py keeps it off every engine module) takes time-derivative
stacks as Taylor coefficients of the naive numpy quantities along polynomial trajectories
(Cauchy integral, radius 0.5, 32 points, cmtm_math.md §12) and Jacobians as
Richardson-extrapolated central differences of those stacks with respect to the
trajectory's derivatives. Unlike the finite differences of tests/test_jacobians.py it runs
none of the engine's forward passes, so a bug in a pass shared by cmtm.motion and the
Jacobian kernels (gravity, velocities, link CMTMs) shows here. The oracle itself is checked
against Pinocchio and against the exact mass-matrix blocks of §8.

Errors are max-abs / max|J_oracle| ("relative").
"""
import functools

import numpy as np
import pytest

import cmtm
import kinematic_trees as kt
import pinocchio_ref
from cmtm import naive
from conftest import assert_close, random_stack

REL = 1e-9
"""Orders 0-4: the oracle's Cauchy round-off (~1e-14 of max|f| on the circle) amplified
~100x by the Richardson steps and up to ~1e2 by |y| / |J|; worst seen 7e-13."""
REL_HIGH = 1e-8
"""Orders 5-8: the Cauchy round-off on the l-th coefficient grows like 2^l (radius 1/2);
worst seen 6e-11."""
ORACLE_GRAVITY = (1.0, -2.0, -9.0)


@pytest.fixture(scope="module")
def tree6():
    """Six joints: a branch point with three children, two root children, a prismatic
    joint, gravity (1, -2, -9)."""
    return kt.compile_tree(kt.random_tree(6, branching=0.5, prismatic_fraction=0.3, seed=4),
                           gravity=ORACLE_GRAVITY)


def test_tree6_branches_has_a_prismatic_joint_and_non_default_gravity(tree6):
    """The premise of every test below."""
    children = np.bincount(tree6.parent[tree6.parent >= 0], minlength=tree6.nv)
    assert np.sum(tree6.parent < 0) == 2 and np.max(children) >= 2
    assert np.sum(tree6.joint_type == kt.JOINT_PRISMATIC) >= 1
    assert tuple(tree6.gravity) == ORACLE_GRAVITY


@pytest.fixture(scope="module")
def oracle(tree6):
    """oracle(order, n_samples, taylor) -> (q_stack, {quantity: oracle J}) on tree6,
    q^(r) uniform in [-1, 1] (seed = order)."""

    @functools.lru_cache(maxsize=None)
    def get(order, n_samples=2, taylor=False):
        q_stack = random_stack(tree6, order + 3, n_samples=n_samples, seed=order)
        return q_stack, naive.oracle_jacobians(tree6, q_stack, cmtm.QUANTITIES, order=order,
                                               taylor=taylor)

    return get


# --- every quantity against the oracle, single-quantity calls -------------------------

@pytest.mark.parametrize("quantity", cmtm.QUANTITIES)
@pytest.mark.parametrize("order", range(5))
def test_jacobian_matches_naive_oracle(tree6, oracle, order, quantity):
    q_stack, expected = oracle(order)
    assert_close(cmtm.jacobian(tree6, q_stack, quantity, order=order), expected[quantity], REL)


@pytest.mark.parametrize("quantity", cmtm.QUANTITIES)
@pytest.mark.parametrize("order", [5, 6])
def test_high_order_jacobian_matches_naive_oracle(tree6, oracle, order, quantity):
    q_stack, expected = oracle(order, n_samples=1)
    assert_close(cmtm.jacobian(tree6, q_stack, quantity, order=order), expected[quantity],
                 REL_HIGH)


@pytest.mark.parametrize("field", naive.MOTION_FIELDS)
def test_order8_motion_matches_naive_oracle_stacks(tree6, field):
    """Each derivative order relative to its own scale (they span ~5 decades)."""
    order = 8
    q_stack = random_stack(tree6, order + 3, n_samples=2, seed=8)
    actual = getattr(cmtm.motion(tree6, q_stack, order=order), field)
    expected = naive.oracle_stacks(tree6, q_stack, order)[field]
    for l in range(order + 1):
        assert_close(actual[:, l], expected[:, l], REL_HIGH, f"order {l}")


# --- flatten_jacobian: the paper's block matrices, raw and Taylor-scaled ----------------

def block_matrix(J):
    """(n_samples, (k+1) m, K_in nv) with block (l, r) = J[:, l, :, r, :], placed one by one."""
    n_samples, k1, m, K_in, nv = J.shape
    flat = np.zeros((n_samples, k1 * m, K_in * nv))
    for l in range(k1):
        for r in range(K_in):
            flat[:, l * m:(l + 1) * m, r * nv:(r + 1) * nv] = J[:, l, :, r, :]
    return flat


def test_flatten_covers_every_input_order_count():
    """The three K_in of §7.1 (k+1 tangents, k+2 velocities and momenta, k+3 forces)."""
    assert {cmtm.jacobian_input_orders(name, 2) for name in cmtm.QUANTITIES} == {3, 4, 5}


@pytest.mark.parametrize("quantity", cmtm.QUANTITIES)
def test_flatten_jacobian_matches_raw_and_taylor_oracles(tree6, oracle, quantity):
    """Raw: the oracle's raw blocks placed order-major. Taylor: the oracle differentiated
    with respect to q_hat_r = q^(r) / r! and read as y_hat_l (no factorial anywhere)."""
    order = 2
    q_stack, raw = oracle(order)
    _, taylor = oracle(order, taylor=True)
    J = cmtm.jacobian(tree6, q_stack, quantity, order=order)
    assert_close(cmtm.flatten_jacobian(J), block_matrix(raw[quantity]), REL, "raw")
    assert_close(cmtm.flatten_jacobian(J, taylor=True), block_matrix(taylor[quantity]), REL,
                 "taylor")


# --- a large and a minimal model ---------------------------------------------------------

@pytest.mark.slow
def test_human_jacobians_match_naive_oracle():
    """example-robot-data's 36-joint human, order 1, one sample. Cauchy radius 0.25 with
    20 points: chains of up to 13 joints make the complex extension grow fast, and order 1
    needs no more points; worst seen 2e-13."""
    human = kt.compile_tree(kt.human())
    assert human.nv == 36
    q_stack = random_stack(human, 4, n_samples=1, seed=36)
    expected = naive.oracle_jacobians(human, q_stack, cmtm.QUANTITIES, order=1, radius=0.25,
                                      n_points=20)
    actual = cmtm.jacobians(human, q_stack, cmtm.QUANTITIES, order=1)
    for quantity in cmtm.QUANTITIES:
        assert_close(actual[quantity], expected[quantity], REL, quantity)


@pytest.mark.parametrize("order", [0, 3])
def test_one_joint_model_matches_naive_oracle(order):
    """serial_chain(1): one link, no parent, with gravity; Jacobians and motion stacks."""
    model = kt.compile_tree(kt.serial_chain(1))
    assert model.nv == 1
    q_stack = random_stack(model, order + 3, n_samples=2, seed=1)
    expected = naive.oracle_jacobians(model, q_stack, cmtm.QUANTITIES, order=order)
    actual = cmtm.jacobians(model, q_stack, cmtm.QUANTITIES, order=order)
    for quantity in cmtm.QUANTITIES:
        assert_close(actual[quantity], expected[quantity], REL, quantity)
    stacks = naive.oracle_stacks(model, q_stack, order)
    motion = cmtm.motion(model, q_stack, order=order)
    for field in naive.MOTION_FIELDS:
        assert_close(getattr(motion, field), stacks[field], REL, field)


# --- the oracle itself against independent references ---------------------------------

def test_oracle_order0_torque_jacobian_matches_pinocchio_rnea_derivatives(tree6, oracle):
    """(dtau/dq, dtau/dq', dtau/dq'') = computeRNEADerivatives, gravity (1, -2, -9)
    included: 1e-9 (the oracle's error as above)."""
    q_stack, expected = oracle(0)
    pin_model = pinocchio_ref.to_pinocchio(tree6)
    for s in range(q_stack.shape[0]):
        for r, block in enumerate(pinocchio_ref.rnea_derivatives(pin_model, *q_stack[s, :3])):
            assert_close(expected["joint_torque"][s, 0, :, r, :], block, REL, f"r = {r}")


def test_oracle_top_torque_blocks_are_the_naive_mass_matrix(tree6, oracle):
    """d tau^(j) / d q^(j+2) = M(q) for j <= 4 (§8): checks the oracle's raw scaling j!."""
    q_stack, expected = oracle(4)
    for s in range(q_stack.shape[0]):
        M = naive.mass_matrix_naive(tree6, q_stack[s, 0])
        for j in range(5):
            assert_close(expected["joint_torque"][s, j, :, j + 2, :], M, REL, f"j = {j}")
