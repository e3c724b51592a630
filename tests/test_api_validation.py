"""Input validation at the public boundary of cmtm (DESIGN.md "Errors", STYLE.md 6).

Every public function rejects wrong shapes, too few derivative orders, non-finite values,
non-real dtypes, bad orders and non-models with a ValueError whose message says what was
expected and what came; accepted inputs: a single instant (the sample axis is dropped),
integer arrays, Python lists.
"""
import pickle
import re

import numpy as np
import pytest
from conftest import random_stack, relative_error

import cmtm
import cmtm.api
import cmtm.dispatch
import cmtm.validation
import kinematic_trees as kt

NV = 3
K_ORDER = 1


@pytest.fixture(scope="module")
def model():
    return kt.compile_tree(kt.serial_chain(NV))


def jacobians_of(quantity):
    """cmtm.jacobians with one quantity, returning its array."""
    return lambda m, q, order=0: cmtm.jacobians(m, q, [quantity], order=order)[quantity]


# name -> (call(model, x, order), number of raw input orders needed at order k)
STACK_FUNCTIONS = {
    "motion": (lambda m, q, order=0: cmtm.motion(m, q, order=order).tau, lambda k: k + 3),
    "motion_kinematics": (lambda m, q, order=0: cmtm.motion(m, q, order=order,
                                                            dynamics=False).v_L,
                          lambda k: k + 2),
    "inverse_dynamics": (lambda m, q, order=0: cmtm.inverse_dynamics(m, q, order=order),
                         lambda k: k + 3),
    "link_transform_derivatives": (
        lambda m, q, order=0: cmtm.link_transform_derivatives(m, q, order=order),
        lambda k: k + 1),
    "jacobian_joint_torque": (
        lambda m, q, order=0: cmtm.jacobian(m, q, "joint_torque", order=order),
        lambda k: k + 3),
    "jacobian_link_velocity": (
        lambda m, q, order=0: cmtm.jacobian(m, q, "link_velocity", order=order),
        lambda k: k + 2),
    "jacobian_joint_tangent": (
        lambda m, q, order=0: cmtm.jacobian(m, q, "joint_tangent", order=order),
        lambda k: k + 1),
    "jacobians_link_force": (jacobians_of("link_force"), lambda k: k + 3),
}
POSITION_FUNCTIONS = {
    "link_poses": lambda m, q: cmtm.link_poses(m, q),
    "mass_matrix": lambda m, q: cmtm.mass_matrix(m, q),
}
ALL_FUNCTIONS = {**{name: call for name, (call, _) in STACK_FUNCTIONS.items()},
                 **{name: (lambda call: lambda m, q, order=0: call(m, q))(call)
                    for name, call in POSITION_FUNCTIONS.items()}}


def good_input(name, model, n_samples=2):
    """A valid input of function ``name``: a stack (n_samples, K, nv) or positions
    (n_samples, nv)."""
    if name in POSITION_FUNCTIONS:
        return random_stack(model, 1, n_samples=n_samples, seed=1)[:, 0]
    return random_stack(model, STACK_FUNCTIONS[name][1](K_ORDER), n_samples=n_samples, seed=1)


def raises_expected_got(match=None):
    """pytest.raises(ValueError) whose message has 'expected' ... 'got' (and ``match``)."""
    return pytest.raises(ValueError, match=match or r"expected .*got")


# --- shapes ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(STACK_FUNCTIONS))
@pytest.mark.parametrize("shape", [(2, 4, NV + 1), (4, NV - 1), (4 * NV,), (1, 2, 4, NV), ()],
                         ids=["wrong-nv", "wrong-nv-single", "flat", "4d", "scalar"])
def test_stack_functions_reject_wrong_shapes(model, name, shape):
    call = STACK_FUNCTIONS[name][0]
    with raises_expected_got(r"q_stack: expected shape .* got .*nv=3"):
        call(model, np.zeros(shape), K_ORDER)


@pytest.mark.parametrize("name", list(POSITION_FUNCTIONS))
@pytest.mark.parametrize("shape", [(NV + 1,), (2, NV - 1), (2, 2, NV)],
                         ids=["wrong-nv", "wrong-nv-batch", "3d"])
def test_position_functions_reject_wrong_shapes(model, name, shape):
    with raises_expected_got(r"q: expected shape .* got \(" + ", ".join(map(str, shape))):
        POSITION_FUNCTIONS[name](model, np.zeros(shape))


@pytest.mark.parametrize("name", list(POSITION_FUNCTIONS))
def test_position_functions_reject_a_scalar(model, name):
    with raises_expected_got(r"q: expected shape"):
        POSITION_FUNCTIONS[name](model, 0.5)


@pytest.mark.parametrize("name", list(STACK_FUNCTIONS))
@pytest.mark.parametrize("k", [0, 1, 3])
def test_too_few_orders_say_how_many_are_needed(model, name, k):
    call, needed = STACK_FUNCTIONS[name]
    q = random_stack(model, needed(k) - 1, n_samples=2)
    message = rf"expected at least {needed(k)} derivative orders .*got {needed(k) - 1}"
    with raises_expected_got(message):
        call(model, q, k)
    with raises_expected_got(message):
        call(model, q[0], k)
    assert np.all(np.isfinite(call(model, random_stack(model, needed(k), n_samples=2), k)))


def test_motion_needs_one_order_less_without_dynamics(model):
    q = random_stack(model, 3, n_samples=2)
    assert cmtm.motion(model, q, order=1, dynamics=False).tau is None
    with raises_expected_got(r"at least 4 derivative orders"):
        cmtm.motion(model, q, order=1)


# --- values and dtypes -------------------------------------------------------------------

@pytest.mark.parametrize("name", list(ALL_FUNCTIONS))
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_are_rejected(model, name, bad):
    x = good_input(name, model)
    x[1, ..., -1] = bad
    with raises_expected_got(r"expected finite values, got NaN or inf"):
        ALL_FUNCTIONS[name](model, x, K_ORDER)


@pytest.mark.parametrize("name", list(ALL_FUNCTIONS))
@pytest.mark.parametrize("dtype", [np.complex128, object, str, np.bool_])
def test_non_real_dtypes_are_rejected(model, name, dtype):
    x = good_input(name, model).astype(dtype)
    with raises_expected_got(r"expected a real float array, got dtype"):
        ALL_FUNCTIONS[name](model, x, K_ORDER)


@pytest.mark.parametrize("name", list(ALL_FUNCTIONS))
def test_integer_and_list_inputs_are_accepted(model, name):
    x = np.rint(3 * good_input(name, model))
    expected = ALL_FUNCTIONS[name](model, x, K_ORDER)
    for converted in (x.astype(np.int64), x.astype(np.int32), x.tolist()):
        np.testing.assert_array_equal(ALL_FUNCTIONS[name](model, converted, K_ORDER), expected)


@pytest.mark.parametrize("name", list(ALL_FUNCTIONS))
def test_single_instant_drops_the_sample_axis(model, name):
    x = good_input(name, model)
    batch = ALL_FUNCTIONS[name](model, x, K_ORDER)
    for s in range(2):
        single = ALL_FUNCTIONS[name](model, x[s], K_ORDER)
        assert single.shape == batch.shape[1:]
        np.testing.assert_array_equal(single, batch[s])


def test_motion_single_instant_drops_the_sample_axis_of_every_field(model):
    q = random_stack(model, 5, n_samples=2)
    batch, single = cmtm.motion(model, q, order=2), cmtm.motion(model, q[1], order=2)
    for field in ("v_L", "h_L", "w_h_L", "h_J", "w_h_J", "f_L", "f_J", "tau"):
        np.testing.assert_array_equal(getattr(single, field), getattr(batch, field)[1])
    assert single.v_L.shape == (3, NV, 6) and single.tau.shape == (3, NV)


def test_output_shapes(model):
    q = random_stack(model, 6, n_samples=4)
    mo = cmtm.motion(model, q, order=3)
    assert mo.order == 3 and mo.v_L.shape == (4, 4, NV, 6) and mo.tau.shape == (4, 4, NV)
    assert cmtm.link_transform_derivatives(model, q, order=2).shape == (4, 3, NV, 6, 6)
    assert cmtm.link_poses(model, q[:, 0]).shape == (4, NV, 4, 4)
    assert cmtm.mass_matrix(model, q[:, 0]).shape == (4, NV, NV)
    assert cmtm.jacobian(model, q, "joint_torque", order=2).shape == (4, 3, NV, 5, NV)
    assert cmtm.jacobian(model, q, "link_velocity", order=2).shape == (4, 3, 6 * NV, 4, NV)
    without_world = cmtm.motion(model, q, order=1, world=False)
    assert without_world.w_h_L is None and without_world.w_h_J is None


# --- orders ------------------------------------------------------------------------------

ORDER_FUNCTIONS = [name for name in STACK_FUNCTIONS]


@pytest.mark.parametrize("name", ORDER_FUNCTIONS)
@pytest.mark.parametrize("order", [-1, 1.5, 1.0, "1", None, True, np.float64(2.0)],
                         ids=["negative", "fraction", "float-integral", "string", "none",
                              "bool", "numpy-float"])
def test_bad_orders_are_rejected(model, name, order):
    q = random_stack(model, 8, n_samples=2)
    with raises_expected_got(r"order: expected a non-negative integer, got"):
        STACK_FUNCTIONS[name][0](model, q, order)


@pytest.mark.parametrize("name", ORDER_FUNCTIONS)
def test_numpy_integer_order_is_accepted(model, name):
    q = random_stack(model, 8, n_samples=2)
    call = STACK_FUNCTIONS[name][0]
    np.testing.assert_array_equal(call(model, q, np.int64(2)), call(model, q, 2))


def test_jacobian_input_orders(model):
    assert cmtm.jacobian_input_orders("joint_torque", 2) == 5
    assert cmtm.jacobian_input_orders("link_momentum", 2) == 4
    assert cmtm.jacobian_input_orders("joint_tangent", 2) == 3
    with raises_expected_got(r"order: expected a non-negative integer, got -1"):
        cmtm.jacobian_input_orders("joint_torque", -1)
    with raises_expected_got(r"quantity: expected one of .*got 'torque'"):
        cmtm.jacobian_input_orders("torque", 1)


# --- models and quantity names -----------------------------------------------------------

@pytest.mark.parametrize("name", list(ALL_FUNCTIONS))
@pytest.mark.parametrize("bad_model", [None, {"parent": [-1]}, "serial_chain", "tree"],
                         ids=["none", "dict", "string", "uncompiled-tree"])
def test_non_models_are_rejected(model, name, bad_model):
    if bad_model == "tree":
        bad_model = kt.serial_chain(NV)
        got = "KinematicTree"
    else:
        got = type(bad_model).__name__
    with raises_expected_got(rf"model: expected a CompiledTree.*got {got}"):
        ALL_FUNCTIONS[name](bad_model, good_input(name, model), K_ORDER)


@pytest.mark.parametrize("name", list(ALL_FUNCTIONS) + ["fd_jacobian"])
def test_models_without_movable_joints_are_rejected(name):
    """A model whose joints are all fixed compiles (nv = 0, for its mass properties) but
    has no motion to compute."""
    tree = kt.serial_chain(1)
    tree.lock_joint("joint1", 0.0)
    rigid = kt.compile_tree(tree)
    call = ALL_FUNCTIONS.get(name, lambda m, q, order=0: cmtm.reference.fd_jacobian(
        m, q, "joint_torque", order=order))
    with raises_expected_got(r"model: expected at least one movable joint, got nv = 0"):
        call(rigid, np.zeros((4, 0)) if name in POSITION_FUNCTIONS else np.zeros((5, 0)),
             K_ORDER)


@pytest.mark.parametrize("quantities", ["torque", ["joint_torque", "speed"]])
def test_unknown_quantity_names_are_rejected(model, quantities):
    q = random_stack(model, 4, n_samples=2)
    with raises_expected_got(r"quantity: expected one of joint_velocity, .*got '(torque|speed)'"):
        cmtm.jacobians(model, q, quantities, order=1)
    if isinstance(quantities, str):
        with raises_expected_got(r"quantity: expected one of"):
            cmtm.jacobian(model, q, quantities, order=1)


def test_empty_quantity_list_is_rejected(model):
    with raises_expected_got(r"quantities: expected at least one quantity name, got none"):
        cmtm.jacobians(model, random_stack(model, 4), [], order=1)


@pytest.mark.parametrize("order", [0, 1])
def test_jacobians_keys_follow_the_request(model, order):
    """The dict lists each requested quantity once, in the order asked, although the
    torque comes from a kernel of its own; a repeated name is computed once. Each equals
    the single-quantity call: bit for bit, except the link velocity, which with other rows
    comes from the comprehensive kernel and alone from its own (round-off, 1e-13)."""
    names = ["link_force", "joint_torque", "joint_velocity", "link_velocity", "joint_torque"]
    q = random_stack(model, order + 3, n_samples=2)
    result = cmtm.jacobians(model, q, names, order=order)
    assert list(result) == ["link_force", "joint_torque", "joint_velocity", "link_velocity"]
    for name in result:
        alone = cmtm.jacobian(model, q, name, order=order)
        if name == "link_velocity":
            assert relative_error(result[name], alone) < 1e-13
        else:
            assert np.array_equal(result[name], alone), name


def test_public_name_cmtm_jacobians_is_the_function():
    """cmtm.jacobians is the API function, not a submodule of the same name shadowing it
    once imported (DESIGN.md public API)."""
    assert cmtm.jacobians is cmtm.api.jacobians


def test_errors_name_the_input_and_the_model_size(model):
    """The STYLE.md example: 'q_stack: expected shape (n_samples, 5, 7), got ...; nv=7'."""
    with pytest.raises(ValueError) as info:
        cmtm.motion(model, np.zeros((2, 5, NV + 2)), order=2)
    message = str(info.value)
    assert message.startswith("q_stack:")
    assert re.search(r"got \(2, 5, 5\)", message) and "nv=3" in message


def test_scalar_input_reports_its_true_shape(chain3):
    with pytest.raises(ValueError, match=r"got \(\)"):
        cmtm.motion(chain3, 1.0)


def test_overflow_is_a_value_error_not_a_warning_or_nan():
    """1e15 rad/s^r at order 20: the raw result overflows float64; the API must say so."""
    model = kt.compile_tree(kt.serial_chain(3))
    with pytest.raises(ValueError, match="expected a finite result"):
        cmtm.motion(model, np.full((23, 3), 1e15), order=20)


def test_motion_overflow_names_its_first_non_finite_field():
    """The motion fields are converted to raw derivatives together and checked in the
    order of Motion: at 3e13 the kinematic fields and f_L stay finite at order 20 and the
    joint force f_J is the first to overflow."""
    model = kt.compile_tree(kt.serial_chain(3))
    with pytest.raises(ValueError, match=r"^v_L: expected a finite result"):
        cmtm.motion(model, np.full((23, 3), 1e15), order=20)
    with pytest.raises(ValueError, match=r"^f_J: expected a finite result"):
        cmtm.motion(model, np.full((23, 3), 3e13), order=20)
    assert np.isfinite(cmtm.motion(model, np.full((23, 3), 3e13), order=20,
                                   dynamics=False).w_h_J).all()


def test_link_velocity_jacobian_overflow_is_a_value_error():
    """The link-velocity kernels flag their own non-finite entries (no scan of the output):
    finite inputs whose order-20 Jacobian overflows float64 must raise, not return inf; at
    order 0 (its own kernel), a first joint's rate of 1e308: d nu / d q = Ad^{-1} (v_p x s)
    sums terms of ~1e308 beyond it (the same rate times 1e-300 is finite)."""
    model = kt.compile_tree(kt.serial_chain(3))
    with pytest.raises(ValueError, match="link_velocity: expected a finite result"):
        cmtm.jacobian(model, np.full((22, 3), 1e15), "link_velocity", order=20)
    q = np.array([[0.3, 0.2, 0.1], [1e308, 1.0, 1.0]])
    assert np.isfinite(cmtm.jacobian(model, q * [[1.0], [1e-300]], "link_velocity")).all()
    with pytest.raises(ValueError, match="link_velocity: expected a finite result"):
        cmtm.jacobian(model, q, "link_velocity")


@pytest.mark.parametrize("n", [3, 20])
def test_torque_jacobian_overflow_is_a_value_error(n):
    """The order-0 torque kernel flags its own non-finite blocks (no scan of the output):
    rates of 1e160 (d tau / d q ~ v^2 beyond float64) in one sample of five must raise,
    not return inf, and rates of 1e151 are finite: on a 3-link chain by reading the blocks
    (fewer than the pair factors), on a 20-link chain by the pair factors, which are
    beyond FACTOR_BOUND at 1e151 (blocks above 18 FACTOR_BOUND^2: the slow path, every
    block read) and at 1e160."""
    model = kt.compile_tree(kt.serial_chain(n))
    q = np.zeros((5, 3, n))
    q[:, 0] = np.linspace(0.3, 0.1, n)
    large = q.copy()
    large[3, 1] = 1e151
    J = cmtm.jacobian(model, large, "joint_torque")
    assert np.isfinite(J).all()
    assert np.abs(J).max() > 18 * cmtm.rnea_derivatives.FACTOR_BOUND ** 2 or n == 3
    q[3, 1] = 1e160
    assert np.isfinite(cmtm.jacobian(model, q[[0, 1, 2, 4]], "joint_torque")).all()
    with pytest.raises(ValueError, match="joint_torque: expected a finite result"):
        cmtm.jacobian(model, q, "joint_torque")


def all_finite_cases():
    """(name, array): finite, one NaN / +inf / -inf, entries near 1e308 (whose sum
    overflows: 1e5 of 1e304, with and without one NaN), entries whose squares overflow (one
    of 1e200), an empty and a strided array; each small (the mask) and large (beyond
    SMALL_FINITE_CHECK: the sum), the large ones also with the entry first."""
    rng = np.random.default_rng(3)
    base = rng.uniform(-1.0, 1.0, (4, 5, 6))
    large = rng.uniform(-1.0, 1.0, 2 * cmtm.api.SMALL_FINITE_CHECK + 7)
    cases = [("finite", base), ("empty", np.zeros((0, 3))), ("strided", base[:, ::2, 1:]),
             ("large", large), ("large strided", large[::2])]
    for name, value in (("nan", np.nan), ("inf", np.inf), ("-inf", -np.inf),
                        ("1e200", 1e200)):
        bad, large_bad = base.copy(), large.copy()
        bad[2, 2, 4] = large_bad[-2] = value
        first_bad = large.copy()
        first_bad[0] = value
        cases += [(name, bad), ("strided " + name, bad[:, ::2, 1:]),
                  ("large " + name, large_bad), ("large strided " + name, large_bad[1::2]),
                  ("large first " + name, first_bad)]
    near_max = np.full(10**5, 1e304)
    near_max_nan = near_max.copy()
    near_max_nan[7] = np.nan
    cases += [("sum overflows", near_max), ("sum overflows, nan", near_max_nan)]
    return cases


@pytest.mark.parametrize("name, array", all_finite_cases(), ids=lambda case: str(case)[:20])
def test_all_finite_agrees_with_numpy_without_warnings(name, array):
    """cmtm.api.all_finite (a mask; for large arrays a sum, then max and min if it is not
    finite) against np.isfinite(array).all(); pytest turns warnings into errors, so an
    overflow of the sum must stay silent."""
    assert cmtm.api.all_finite(array) is bool(np.isfinite(array).all()), name


def test_large_finite_results_are_returned():
    """Results whose sum overflows are finite: the check must return them. The order-0
    torque Jacobian of a 3-link chain with rates of 1e152 has entries up to ~4e305 (d tau /
    d q ~ v^2), whose sum overflows float64; enough samples that the result is checked by
    the sum (more than SMALL_FINITE_CHECK entries), not by the mask."""
    model = kt.compile_tree(kt.serial_chain(3))
    q = np.array([[0.3, 0.2, 0.1], [1e152, 1e152, 1e152], [0.0, 0.0, 0.0]])
    n_samples = cmtm.api.SMALL_FINITE_CHECK // q.size + 1      # J has 3 x 3 x 3 per sample
    J = cmtm.jacobian(model, np.repeat(q[None], n_samples, axis=0), "joint_torque")
    assert J.size > cmtm.api.SMALL_FINITE_CHECK and np.isfinite(J).all()
    with np.errstate(over="ignore"):
        assert not np.isfinite(np.add.reduce(J.reshape(-1)))


def test_link_velocity_overflow_flag_belongs_to_its_call(monkeypatch):
    """An overflow in one call (its last sample on a thread of its own) does not make a
    later finite call with the same shapes, run in one chunk, raise: the kernel's finite
    flags are per sample of the call, not left in the cached workspace."""
    model = kt.compile_tree(kt.serial_chain(3))
    q = np.zeros((3, 22, 3))
    q[:, :2] = 0.1
    overflowing = q.copy()
    overflowing[2] = 1e15
    monkeypatch.setattr(cmtm.dispatch, "MIN_CHUNK_SECONDS", 1e-12)  # split every call
    with pytest.raises(ValueError, match="link_velocity: expected a finite result"):
        cmtm.jacobian(model, overflowing, "link_velocity", order=20)
    monkeypatch.setattr(cmtm.dispatch, "MIN_CHUNK_SECONDS", 1.0)    # one chunk
    assert np.isfinite(cmtm.jacobian(model, q, "link_velocity", order=20)).all()


@pytest.mark.parametrize("flag", ["dynamics", "world"])
@pytest.mark.parametrize("value", ["yes", 1, None])
def test_motion_flags_must_be_booleans(chain3, flag, value):
    with pytest.raises(ValueError, match=f"{flag}: expected True or False"):
        cmtm.motion(chain3, np.zeros((4, 3)), order=0, **{flag: value})


# --- single instants, models, memory (issue 12) ------------------------------------------

@pytest.mark.parametrize("name", list(STACK_FUNCTIONS))
def test_single_instant_takes_up_to_two_extra_orders(model, name):
    """One stack of order k serves every function of order k (tangents need k+1 orders,
    torques k+3); a third extra row is refused (tests/test_bad_inputs.py)."""
    call, needed = STACK_FUNCTIONS[name]
    q = random_stack(model, needed(K_ORDER) + cmtm.api.EXTRA_INSTANT_ORDERS, n_samples=1)
    np.testing.assert_array_equal(call(model, q[0], K_ORDER), call(model, q, K_ORDER)[0])
    longer = random_stack(model, needed(K_ORDER) + cmtm.api.EXTRA_INSTANT_ORDERS + 1)
    with raises_expected_got(r"q_stack: expected one instant"):
        call(model, longer, K_ORDER)


TAMPERED = {"subtree_end": np.array([3, 3, 100]), "parent": np.array([-1, 0, 3]),
            "joint_type": np.array([0, 1, 2]), "com": np.zeros((2, 3)),
            "spatial_inertia": np.zeros((3, 6, 6), order="F").transpose(0, 2, 1)}


@pytest.mark.parametrize("name", list(ALL_FUNCTIONS))
@pytest.mark.parametrize("field", list(TAMPERED))
def test_every_function_checks_the_model_arrays(model, name, field):
    """The kernels trust the model's arrays, so every function checks them first."""
    bad = model._replace(**{field: TAMPERED[field]})
    with raises_expected_got(rf"model.{field}: expected"):
        ALL_FUNCTIONS[name](bad, good_input(name, model), K_ORDER)


def test_model_with_writeable_arrays_is_checked_at_every_call(model, monkeypatch):
    """A pickled model comes back with writeable arrays, which could change after a check:
    it is accepted and checked at every call; compile_tree's read-only models once."""
    copy = pickle.loads(pickle.dumps(model))
    calls = []
    check = cmtm.validation._check_model_arrays
    monkeypatch.setattr(cmtm.validation, "_check_model_arrays",
                        lambda m: calls.append(m) or check(m))
    q = good_input("mass_matrix", model)
    for _ in range(3):
        np.testing.assert_array_equal(cmtm.mass_matrix(copy, q), cmtm.mass_matrix(model, q))
    assert [m is copy for m in calls] == [True] * 3


def test_jacobian_chunks_compute_what_the_budget_refuses_at_once(model, monkeypatch):
    q = random_stack(model, 4, n_samples=10)
    expected = cmtm.jacobians(model, q, ("joint_torque", "link_velocity"), order=1)
    per_sample = cmtm.jacobians_nbytes(model, ("joint_torque", "link_velocity"), order=1)
    monkeypatch.setenv("CMTM_MEMORY_BUDGET", str(4 * per_sample))
    with raises_expected_got(r"jacobians: expected results within the memory budget .*"
                             r"cmtm.jacobian_chunks\(.*chunk=4\)"):
        cmtm.jacobians(model, q, ("joint_torque", "link_velocity"), order=1)
    chunks = list(cmtm.jacobian_chunks(model, q, ("joint_torque", "link_velocity"), order=1,
                                       chunk=4))
    assert [(start, stop) for start, stop, _ in chunks] == [(0, 4), (4, 8), (8, 10)]
    for name, J in expected.items():
        np.testing.assert_array_equal(np.concatenate([Js[name] for _, _, Js in chunks]), J)


def test_default_memory_budget_is_4_gib_or_half_the_memory(monkeypatch):
    monkeypatch.delenv("CMTM_MEMORY_BUDGET", raising=False)
    assert 0 < cmtm.memory_budget() <= cmtm.api.DEFAULT_MEMORY_BUDGET
    monkeypatch.setenv("CMTM_MEMORY_BUDGET", "8e9")
    assert cmtm.memory_budget() == 8 * 10**9


def test_max_order_is_accepted_and_refused_one_above(model):
    q = random_stack(model, cmtm.MAX_ORDER + 3, n_samples=1, scale=0.1)
    assert cmtm.inverse_dynamics(model, q, order=cmtm.MAX_ORDER).shape == (1, 21, NV)
    with raises_expected_got(r"order: expected at most cmtm.MAX_ORDER = 20, got 21"):
        cmtm.inverse_dynamics(model, np.concatenate([q, q], axis=1), order=cmtm.MAX_ORDER + 1)
