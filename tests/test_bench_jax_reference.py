"""The JAX automatic-differentiation reference of bench/ against the engine.

bench/jax_reference.py (a classical RNEA in jax.numpy, Taylor mode by jax.experimental.jet,
jacfwd with respect to the raw input stack) shares no code with cmtm, so agreement checks
both: the structured Jacobians of cmtm.jacobian (Lemmas 1-6, Table 4) and the benchmark's
JAX baseline that bench/bench_jacobians.py times against them.

Models: a 3-link serial chain and a 6-joint random tree with prismatic joints and merged
fixed joints; orders 0..2. The JAX functions run eagerly (jit=False): primitive by
primitive, which skips XLA's compilation of the unrolled graph and keeps this module fast.

Tolerance 1e-9 relative to the largest entry: both sides are exact derivatives evaluated in
float64 by different recursions, so they agree to round-off (~1e-14 measured); 1e-9 leaves
room for conditioning on other models and still catches any wrong term.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

import cmtm  # noqa: E402
import kinematic_trees as kt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import jax_reference  # noqa: E402

REL = 1e-9
ORDERS = (0, 1, 2)
QUANTITIES = ("joint_torque", "link_velocity")
N_SAMPLES = 2


@pytest.fixture(scope="module", params=["serial_chain3", "random_tree6"])
def model(request):
    tree = {"serial_chain3": lambda: kt.serial_chain(3),
            "random_tree6": lambda: kt.random_tree(6, seed=1)}[request.param]()
    return kt.compile_tree(tree)


def random_stack(model, n_orders, seed=0):
    """(N_SAMPLES, n_orders, nv) raw derivative stack, entries in [-1, 1]."""
    return np.random.default_rng(seed).uniform(-1.0, 1.0, (N_SAMPLES, n_orders, model.nv))


def assert_close(actual, desired, rel=REL):
    """max |actual - desired| <= rel * max |desired|, with shapes equal."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    assert actual.shape == desired.shape
    error, scale = np.max(np.abs(actual - desired)), np.max(np.abs(desired))
    assert error <= rel * scale, f"max error {error:.3e} > {rel:.0e} * {scale:.3e}"


def test_random_tree6_has_prismatic_and_revolute_joints():
    """The premise of the random_tree6 case: both joint types are exercised."""
    model = kt.compile_tree(kt.random_tree(6, seed=1))
    assert set(model.joint_type.tolist()) == {0, 1}


@pytest.mark.parametrize("order", ORDERS)
def test_jax_torque_stack_matches_inverse_dynamics(model, order):
    """tau, ..., tau^(k) of jet on the JAX RNEA equal cmtm.inverse_dynamics."""
    q_stack = random_stack(model, order + 3, seed=order)
    tau = jax_reference.stack_function(model, "joint_torque", order, jit=False)(q_stack)
    assert_close(tau, cmtm.inverse_dynamics(model, q_stack, order=order))


@pytest.mark.parametrize("order", ORDERS)
def test_jax_velocity_stack_matches_motion(model, order):
    """v_L, ..., v_L^(k) (gravity-free, link-major) equal cmtm.motion's v_L."""
    q_stack = random_stack(model, order + 2, seed=order)
    v_L = jax_reference.stack_function(model, "link_velocity", order, jit=False)(q_stack)
    expected = cmtm.motion(model, q_stack, order=order, dynamics=False, world=False).v_L
    assert_close(v_L, expected.reshape(N_SAMPLES, order + 1, -1))


@pytest.mark.parametrize("quantity", QUANTITIES)
@pytest.mark.parametrize("order", ORDERS)
def test_jax_jacobian_matches_structured(model, quantity, order):
    """jacfwd of the jet stack equals cmtm.jacobian, block for block (raw derivatives)."""
    q_stack = random_stack(model, jax_reference.input_orders(quantity, order), seed=10 + order)
    J_jax = jax_reference.jacobian_function(model, quantity, order, jit=False)(q_stack)
    assert_close(J_jax, cmtm.jacobian(model, q_stack, quantity, order=order))


def test_jitted_jacobian_matches_eager(chain3):
    """The jitted, vmapped function the benchmark times gives the eager result."""
    q_stack = random_stack(chain3, jax_reference.input_orders("joint_torque", 1))
    jitted = jax_reference.jacobian_function(chain3, "joint_torque", 1)(q_stack)
    eager = jax_reference.jacobian_function(chain3, "joint_torque", 1, jit=False)(q_stack)
    assert_close(jitted, eager, rel=1e-13)   # same operations, possibly fused differently


def test_jax_point_jacobian_matches_cmtm_point_jacobian():
    """The hand-jerk bench's JAX baseline (forward kinematics of the points, Taylor mode,
    jacfwd) against cmtm.point_jacobian at order 2 (the jerk), two points of a 4-joint tree
    with a prismatic joint (one model and order: eager Taylor mode takes seconds each)."""
    model = kt.compile_tree(kt.random_tree(4, seed=3, prismatic_fraction=0.5))
    assert set(model.joint_type.tolist()) == {0, 1}
    points = [(1, (0.1, -0.2, 0.3)), (model.nv - 1, (0.0, 0.4, -0.1))]
    q_stack = random_stack(model, 4, seed=4)
    J_jax = jax_reference.point_jacobian_function(model, points, 2, jit=False)(q_stack)
    assert_close(J_jax, cmtm.point_jacobian(model, q_stack, points, 2))
