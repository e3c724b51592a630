"""The structured Jacobians (cmtm.jacobian, paper Table 4, cmtm_math.md §7-§8) against
independent references.

References, each named in the test names:

* ``richardson_fd``: cmtm.reference.fd_jacobian(method="richardson"), Richardson-extrapolated
  central differences of the engine's forward passes, good to ~1e-12 of max|J| (its
  accuracy is demonstrated here on functions with known Jacobians, including Pinocchio's
  analytic RNEA derivatives);
* ``central_fd``: plain central differences, h = eps**(1/3) max(1, |x|) (the paper's Table 6);
* ``pinocchio``: computeRNEADerivatives, crba, getJointJacobian and
  getJointVelocityDerivatives (LOCAL) through tests/pinocchio_ref.py, along a smooth
  trajectory whose time derivatives are taken by a Chebyshev fit (the §8 identity);
* exact structure: the raw top blocks M(q) and J_b(q), exact zeros above the diagonal
  offset and in the columns of joints that do not support a row.

The FD references run the engine's forward passes, which the Jacobian kernels share; the
naive oracle of tests/test_oracle.py, which shares nothing with the engine, covers that
blind spot (there, single-quantity calls; here, one multi-quantity call per case).

Errors are max-abs / max|J_ref| ("relative") unless a test says otherwise.
"""
import functools
import math

import numpy as np
import pinocchio
import pytest
from numpy.polynomial import chebyshev

import cmtm
import kinematic_trees as kt
import pinocchio_ref
from cmtm import reference
from cmtm.api import jacobians as api_jacobians
from conftest import assert_close, random_stack, relative_error

MODELS = ("chain3", "panda", "tree12")
ORDERS = tuple(range(5))
LINK_ROWS = ("link_tangent", "link_velocity", "link_momentum", "link_momentum_world",
             "link_force")
JOINT_ROWS = ("joint_momentum_world", "joint_momentum", "joint_force", "joint_torque")
OWN_JOINT_ROWS = ("joint_velocity", "joint_tangent")
OFFSET = {name: cmtm.jacobian_input_orders(name, 0) - 1 for name in cmtm.QUANTITIES}


# --- cached Jacobians: one engine call and one reference call per (model, order) ---

@pytest.fixture(scope="module")
def computed(jacobian_models):
    """computed(name, order) -> (model, q_stack, engine, richardson, central), each a dict of
    all quantities; two random samples (seed = order), q^(r) uniform in [-1, 1]."""

    @functools.lru_cache(maxsize=None)
    def get(name, order):
        model = jacobian_models[name]
        q_stack = random_stack(model, order + 3, n_samples=2, seed=order)
        engine = cmtm.jacobians(model, q_stack, cmtm.QUANTITIES, order=order)
        richardson = reference.fd_jacobians(model, q_stack, cmtm.QUANTITIES, order=order,
                                            method="richardson")
        central = reference.fd_jacobians(model, q_stack, cmtm.QUANTITIES, order=order)
        return model, q_stack, engine, richardson, central

    return get


# --- every quantity x orders 0..4 x three models against finite differences ---

@pytest.mark.parametrize("quantity", cmtm.QUANTITIES)
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name", MODELS)
def test_jacobian_matches_richardson_fd(computed, name, order, quantity):
    """1e-9: the reference is good to ~1e-12 (see test_richardson_fd_*); worst seen 7e-13."""
    _, _, engine, richardson, _ = computed(name, order)
    assert_close(engine[quantity], richardson[quantity], rel=1e-9)


@pytest.mark.parametrize("quantity", cmtm.QUANTITIES)
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name", MODELS)
def test_jacobian_matches_central_fd(computed, name, order, quantity):
    """1e-7: central FD error ~ eps**(2/3) (|y| + |y'''|), ~4e-11 times |y| / |J| <= ~1e2
    for torque stacks of order 4 (worst seen 2e-9); max-abs on the Panda ~4e-9 (order 0)
    ... ~7e-7 (order 4)."""
    _, _, engine, _, central = computed(name, order)
    assert_close(engine[quantity], central[quantity], rel=1e-7)


# --- the Richardson reference itself, on functions with known Jacobians ---

def known_function(x):
    """A batched map R^3 -> R^(2x2) mixing trigonometric, exponential and polynomial terms."""
    a, b, c = x[:, 0], x[:, 1], x[:, 2]
    return np.stack([np.stack([np.sin(a) * np.cos(2 * b) + a * c ** 3, np.exp(0.5 * b) * c], -1),
                     np.stack([np.cos(a * b), (a + b) ** 5 - c ** 2 * np.sin(c)], -1)], axis=1)


def known_jacobian(x):
    """d known_function / d x, (n, 2, 2, 3), by hand."""
    a, b, c = x[:, 0], x[:, 1], x[:, 2]
    zero = np.zeros_like(a)
    rows = [[np.cos(a) * np.cos(2 * b) + c ** 3, -2 * np.sin(a) * np.sin(2 * b), 3 * a * c ** 2],
            [zero, 0.5 * np.exp(0.5 * b) * c, np.exp(0.5 * b)],
            [-b * np.sin(a * b), -a * np.sin(a * b), zero],
            [5 * (a + b) ** 4, 5 * (a + b) ** 4, -2 * c * np.sin(c) - c ** 2 * np.cos(c)]]
    return np.stack([np.stack(row, -1) for row in rows], axis=1).reshape(len(a), 2, 2, 3)


def test_richardson_fd_of_known_function():
    """Richardson 1e-13 (error model: round-off ~100 eps |f| / |J|); central 1e-9
    (~eps**(2/3) (|f| + |f'''|) / |J|); the extrapolation must gain >= 1000x."""
    x = np.random.default_rng(5).uniform(-1.5, 1.5, size=(4, 3))
    exact = known_jacobian(x)
    richardson = reference.central_jacobian(known_function, x, method="richardson")
    central = reference.central_jacobian(known_function, x)
    assert richardson.shape == exact.shape == (4, 2, 2, 3)
    assert_close(richardson, exact, rel=1e-13)
    assert_close(central, exact, rel=1e-9)
    assert relative_error(richardson, exact) * 1e3 < relative_error(central, exact)


@pytest.mark.parametrize("name", ["panda", "tree12"])
def test_richardson_fd_of_pinocchio_rnea_matches_pinocchio_derivatives(jacobian_models, name):
    """Pinocchio's analytic computeRNEADerivatives vs Richardson FD of Pinocchio's rnea (a
    multibody function with a known Jacobian, independent of our engine): 1e-12."""
    model = jacobian_models[name]
    pin_model = pinocchio_ref.to_pinocchio(model)
    x = random_stack(model, 3, n_samples=2, seed=11)

    def rnea(points):
        return np.array([pinocchio_ref.rnea(pin_model, *point) for point in points])

    J = reference.central_jacobian(rnea, x, method="richardson")      # (2, nv, 3, nv)
    for s in range(2):
        expected = pinocchio_ref.rnea_derivatives(pin_model, *x[s])
        for r in range(3):
            assert_close(J[s, :, r, :], expected[r], rel=1e-12)


def test_richardson_fd_reproduces_exact_torque_structure(jacobian_models):
    """The raw top blocks d tau^(j)/d q^(j+2) are M(q) (Pinocchio crba) to 1e-12 of max|J|
    (round-off ~100 eps |tau^(j)|, and tau^(3) is ~1e3 |M|: ~2e-12 of max|M| itself), and
    the blocks r > j + 2 are exactly zero (the perturbed outputs are bitwise equal)."""
    model = jacobian_models["panda"]
    pin_model = pinocchio_ref.to_pinocchio(model)
    order = 3
    q_stack = random_stack(model, order + 3, seed=2)
    J = reference.fd_jacobian(model, q_stack, "joint_torque", order=order, method="richardson")
    M = pinocchio_ref.mass_matrix(pin_model, q_stack[0])
    for j in range(order + 1):
        np.testing.assert_allclose(J[j, :, j + 2, :], M, rtol=0, atol=1e-12 * np.max(np.abs(J)))
        assert np.all(J[j, :, j + 3:, :] == 0.0)


def test_fd_joint_velocity_and_tangent_are_the_screws(jacobian_models):
    """Lemma 1: nu_J^(l) = S q^(l+1), dx_J^(l) = S dq^(l); linear maps, FD exact to round-off
    of the step (x + h) - (x - h), ~eps / h ~ 1e-13."""
    model = jacobian_models["tree12"]
    order = 2
    q_stack = random_stack(model, order + 2, seed=3)
    Js = reference.fd_jacobians(model, q_stack, OWN_JOINT_ROWS, order=order, method="richardson")
    nv = model.nv
    S = np.array([np.r_[model.axis[i], np.zeros(3)] if model.joint_type[i] == 0
                  else np.r_[np.zeros(3), model.axis[i]] for i in range(nv)])
    for name, shift in (("joint_velocity", 1), ("joint_tangent", 0)):
        expected = np.zeros((order + 1, 6 * nv, order + 1 + shift, nv))
        for l in range(order + 1):
            for i in range(nv):
                expected[l, 6 * i:6 * i + 6, l + shift, i] = S[i]
        np.testing.assert_allclose(Js[name], expected, rtol=0, atol=1e-13)


# --- §8: Jacobians of derivative stacks are time derivatives of ordinary Jacobians ---

CHEB_HALF_WIDTH = 0.5
CHEB_NODES = 30


def smooth_trajectory(nv, seed=0):
    """q(t, r) = r-th derivative of a + b t + c t^2 + d sin(w t + phi), per joint."""
    rng = np.random.default_rng(seed)
    a, b, c = rng.uniform(-1.0, 1.0, size=(3, nv))
    d, w, phi = rng.uniform(0.3, 1.0, nv), rng.uniform(0.5, 2.0, nv), rng.uniform(0, 6.3, nv)

    def q(t, r):
        polynomial = (a + b * t + c * t ** 2, b + 2 * c * t, 2 * c + 0 * t)[r] if r < 3 else 0.0
        return polynomial + d * w ** r * np.sin(w * t + phi + r * np.pi / 2)

    return q


def chebyshev_derivatives(f, order, half_width=CHEB_HALF_WIDTH, nodes=CHEB_NODES):
    """[f(0), f'(0), ..., f^(order)(0)] of an array-valued f(t), by interpolating f at the
    Chebyshev nodes of [-half_width, half_width] and differentiating the series."""
    u = np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes)
    values = np.array([np.asarray(f(half_width * ui)) for ui in u])
    coefficients = chebyshev.chebfit(u, values.reshape(nodes, -1), nodes - 1)
    return [chebyshev.chebval(0.0, chebyshev.chebder(coefficients, p)).reshape(values.shape[1:])
            / half_width ** p for p in range(order + 1)]


def binomial_assembly(G, order, n_inputs):
    """Raw blocks d y^(j)/d q^(r) = sum_s C(j, r-s) G_s^(j-r+s), with G[p][s] = G_s^(p)."""
    rows, nv = G[0][0].shape
    J = np.zeros((order + 1, rows, n_inputs, nv))
    for j in range(order + 1):
        for r in range(n_inputs):
            for s in range(len(G[0])):
                if 0 <= r - s <= j:
                    J[j, :, r, :] += math.comb(j, r - s) * G[j - r + s][s]
    return J


def velocity_derivatives_pinocchio(pin_model, q, v):
    """(d nu/dq, d nu/dq' = J_b), each (6 nv, nv) link-major angular-first, LOCAL frames,
    from computeForwardKinematicsDerivatives + getJointVelocityDerivatives."""
    data = pin_model.createData()
    pinocchio.computeForwardKinematicsDerivatives(pin_model, data, q, v, np.zeros_like(q))
    blocks = [pinocchio.getJointVelocityDerivatives(pin_model, data, joint,
                                                    pinocchio.ReferenceFrame.LOCAL)
              for joint in range(1, pin_model.njoints)]
    return tuple(np.vstack([np.vstack([block[s][3:], block[s][:3]]) for block in blocks])
                 for s in range(2))


def test_chebyshev_fit_recovers_trajectory_derivatives():
    """The fit used by the §8 tests, on q(t) whose derivatives are known: 1e-13 * 30**p
    relative for the p-th derivative, p <= 3 (degree-29 interpolation on |t| <= 0.5:
    truncation negligible, round-off amplified ~(N / T)**p; seen 1e-15, 3e-14, 5e-13, 6e-11)."""
    q = smooth_trajectory(7)
    fitted = chebyshev_derivatives(lambda t: q(t, 0), 3)
    for p in range(4):
        assert_close(fitted[p], q(0.0, p), rel=1e-13 * 30 ** p)


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("name", ["panda", "tree12"])
def test_binomial_identity_torque_matches_pinocchio_chebyshev(jacobian_models, name, order):
    """d tau^(j)/d q^(r) = sum_s C(j, r-s) G_s^(j-r+s), G = (dtau/dq, dtau/dq', M) from
    Pinocchio along q(t): 1e-9 (fit error <= 1e-11 relative per derivative, times the
    binomial weights and the ~1e2 spread of entry sizes; worst seen ~1e-11)."""
    model = jacobian_models[name]
    pin_model = pinocchio_ref.to_pinocchio(model)
    q = smooth_trajectory(model.nv)
    G = chebyshev_derivatives(
        lambda t: np.array(pinocchio_ref.rnea_derivatives(pin_model, q(t, 0), q(t, 1), q(t, 2))),
        order)
    q_stack = np.array([q(0.0, r) for r in range(order + 3)])
    J = cmtm.jacobian(model, q_stack, "joint_torque", order=order)
    assert_close(J, binomial_assembly(G, order, order + 3), rel=1e-9)


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("name", ["panda", "tree12"])
def test_binomial_identity_link_velocity_matches_pinocchio_chebyshev(jacobian_models, name,
                                                                     order):
    """d nu^(j)/d q^(r) = sum_s C(j, r-s) G_s^(j-r+s), G = (d nu/dq, J_b) from Pinocchio's
    LOCAL velocity derivatives along q(t): 1e-9 (fit error as above; worst seen ~1e-11)."""
    model = jacobian_models[name]
    pin_model = pinocchio_ref.to_pinocchio(model)
    q = smooth_trajectory(model.nv)
    G = chebyshev_derivatives(
        lambda t: np.array(velocity_derivatives_pinocchio(pin_model, q(t, 0), q(t, 1))), order)
    q_stack = np.array([q(0.0, r) for r in range(order + 2)])
    J = cmtm.jacobian(model, q_stack, "link_velocity", order=order)
    assert_close(J, binomial_assembly(G, order, order + 2), rel=1e-9)


# --- exact structure in raw variables ---

@pytest.mark.parametrize("name", MODELS)
def test_top_torque_blocks_are_mass_matrix(computed, name):
    """d tau^(j)/d q^(j+2) = M(q) for j <= 4, vs cmtm.mass_matrix and Pinocchio crba: 1e-12
    (M enters the top block directly; round-off of two O(n) recursions)."""
    model, q_stack, engine, _, _ = computed(name, 4)
    pin_model = pinocchio_ref.to_pinocchio(model)
    J = engine["joint_torque"]
    for s in range(q_stack.shape[0]):
        M = cmtm.mass_matrix(model, q_stack[s, 0])
        assert_close(M, pinocchio_ref.mass_matrix(pin_model, q_stack[s, 0]), rel=1e-12)
        for j in range(5):
            assert_close(J[s, j, :, j + 2, :], M, rel=1e-12)


@pytest.mark.parametrize("name", MODELS)
def test_top_velocity_blocks_are_body_jacobian(computed, name):
    """d nu^(j)/d q^(j+1) = J_b(q) for j <= 4: equal to the order-0 block to 1e-14 (the same
    first column, scaled by j!/j!) and to Pinocchio's getJointJacobian LOCAL to 1e-12."""
    model, q_stack, engine, _, _ = computed(name, 4)
    pin_model = pinocchio_ref.to_pinocchio(model)
    J = engine["link_velocity"]
    for s in range(q_stack.shape[0]):
        data = pin_model.createData()
        pinocchio.computeJointJacobians(pin_model, data, q_stack[s, 0])
        J_b = np.vstack([np.roll(pinocchio.getJointJacobian(pin_model, data, joint,
                                                            pinocchio.ReferenceFrame.LOCAL),
                                 3, axis=0)
                         for joint in range(1, pin_model.njoints)])
        assert_close(J[s, 0, :, 1, :], J_b, rel=1e-12)
        for j in range(1, 5):
            assert_close(J[s, j, :, j + 1, :], J[s, 0, :, 1, :], rel=1e-14)


@pytest.mark.parametrize("quantity", cmtm.QUANTITIES)
@pytest.mark.parametrize("name", MODELS)
def test_blocks_above_input_offset_are_exactly_zero(computed, name, quantity):
    """y^(j) depends on q^(0..j+s) only (§7.1): every block r > j + s is 0.0 exactly."""
    _, _, engine, _, _ = computed(name, 4)
    J, s = engine[quantity], OFFSET[quantity]
    for j in range(5):
        assert np.all(J[:, j, :, j + s + 1:, :] == 0.0), f"order {j}"


def ancestors_of(model, i):
    """Joint i and the joints on its path to the root, from the parent array."""
    path = [i]
    while model.parent[path[-1]] >= 0:
        path.append(int(model.parent[path[-1]]))
    return set(path)


def supporting_joints(model, i, quantity):
    """Joints whose columns may be nonzero in the rows of link/joint i (§7.1 sparsity)."""
    if quantity in OWN_JOINT_ROWS:
        return {i}
    if quantity in LINK_ROWS:
        return ancestors_of(model, i)
    return ancestors_of(model, i) | {j for j in range(model.nv) if i in ancestors_of(model, j)}


def test_tree12_branches_and_has_prismatic_joints(jacobian_models):
    """The premise of the sparsity test: two root children, a branch point below the root,
    prismatic joints (two of them)."""
    model = jacobian_models["tree12"]
    assert np.sum(model.parent < 0) == 2
    children = np.bincount(model.parent[model.parent >= 0], minlength=model.nv)
    assert np.max(children) >= 2
    assert np.sum(model.joint_type == 1) >= 2


@pytest.mark.parametrize("quantity", cmtm.QUANTITIES)
@pytest.mark.parametrize("order", [0, 2, 4])
def test_non_supporting_joint_columns_are_exactly_zero(computed, order, quantity):
    """tree12: rows of link i vanish exactly (0.0) in the columns of non-ancestors (link
    quantities), of non-ancestor-non-descendants (joint quantities), of every other joint
    (joint velocity and tangent); the Richardson reference agrees that they vanish."""
    model, _, engine, richardson, _ = computed("tree12", order)
    J = engine[quantity]
    rows = 1 if quantity == "joint_torque" else 6
    n_zero = 0
    for i in range(model.nv):
        others = [j for j in range(model.nv) if j not in supporting_joints(model, i, quantity)]
        block = J[:, :, rows * i:rows * (i + 1), :, :][..., others]
        assert np.all(block == 0.0), f"row block {i}, columns {others}"
        assert np.all(richardson[quantity][:, :, rows * i:rows * (i + 1), :, :][..., others]
                      == 0.0)
        n_zero += len(others)
    assert n_zero > 0


# --- order 0 against Pinocchio ---

@pytest.mark.parametrize("name", ["panda", "tree12"])
def test_order0_torque_jacobian_matches_pinocchio_rnea_derivatives(computed, name):
    """(dtau/dq, dtau/dq', dtau/dq'') = computeRNEADerivatives (gravity included): 1e-10
    (round-off of two different O(n) recursions)."""
    model, q_stack, engine, _, _ = computed(name, 0)
    pin_model = pinocchio_ref.to_pinocchio(model)
    J = engine["joint_torque"]
    for s in range(q_stack.shape[0]):
        expected = pinocchio_ref.rnea_derivatives(pin_model, *q_stack[s, :3])
        for r in range(3):
            assert_close(J[s, 0, :, r, :], expected[r], rel=1e-10)


@pytest.mark.parametrize("name", ["panda", "tree12"])
def test_order0_link_velocity_jacobian_matches_pinocchio_velocity_derivatives(computed, name):
    """(d nu/dq, d nu/dq') = getJointVelocityDerivatives (LOCAL) of every link (the order-0
    kernel, cmtm.velocity_derivatives): 1e-12 (round-off of two different recursions)."""
    model, q_stack, engine, _, _ = computed(name, 0)
    pin_model = pinocchio_ref.to_pinocchio(model)
    J = engine["link_velocity"]
    for s in range(q_stack.shape[0]):
        expected = velocity_derivatives_pinocchio(pin_model, *q_stack[s, :2])
        for r in range(2):
            assert_close(J[s, 0, :, r, :], expected[r], rel=1e-12)


@pytest.mark.parametrize("order", [0, 2])
@pytest.mark.parametrize("name", ["panda", "tree12"])
def test_link_velocity_alone_equals_link_velocity_with_other_rows(computed, name, order):
    """Asked for alone, the link velocity comes from its own world-frame kernel
    (cmtm.velocity_derivatives); with other rows, from the
    comprehensive kernel's V columns (the engine call of ``computed``): 1e-13 relative."""
    model, q_stack, engine, _, _ = computed(name, order)
    alone = cmtm.jacobian(model, q_stack, "link_velocity", order=order)
    assert relative_error(alone, engine["link_velocity"]) < 1e-13


# --- the paper's Fig. 4: velocity and acceleration Jacobians of serial chains ---

@pytest.mark.parametrize("n", [2, 4, 8, 16, 32, 64, 128])
def test_fig4_chain_velocity_acceleration_jacobians_match_fd(n):
    """link_velocity of order 1 (rows: velocity j = 0, acceleration j = 1), one sample.
    Central FD < 1e-6 (paper Fig. 4 ~1e-7; seen <= 1.4e-10); Richardson <= 1e-12
    (seen <= 4e-14, at 128 DoF)."""
    model = kt.compile_tree(kt.serial_chain(n))
    q_stack = random_stack(model, 3, n_samples=1, seed=n)
    J = cmtm.jacobian(model, q_stack, "link_velocity", order=1)
    central = reference.fd_jacobian(model, q_stack, "link_velocity", order=1)
    richardson = reference.fd_jacobian(model, q_stack, "link_velocity", order=1,
                                       method="richardson")
    for j in range(2):
        assert relative_error(J[:, j], central[:, j]) < 1e-6
        assert relative_error(J[:, j], richardson[:, j]) <= 1e-12


# --- API: shapes, multi-quantity calls, single instants, errors ---

def test_public_jacobians_is_the_api_function():
    """``cmtm.jacobians`` (the public API) is the function, not a kernel module of that name."""
    assert cmtm.jacobians is api_jacobians


def test_reference_input_orders_match_engine():
    assert set(reference.FD_INPUT_OFFSET) == set(cmtm.QUANTITIES)
    for name in cmtm.QUANTITIES:
        assert cmtm.jacobian_input_orders(name, 3) == 4 + reference.FD_INPUT_OFFSET[name]


def test_fd_multi_quantity_call_equals_single_calls(computed):
    """The reference perturbs each column by the same step in both cases: identical."""
    model, q_stack, _, richardson, _ = computed("chain3", 1)
    for quantity in cmtm.QUANTITIES:
        single = reference.fd_jacobian(model, q_stack, quantity, order=1, method="richardson")
        np.testing.assert_array_equal(single, richardson[quantity])


@pytest.mark.parametrize("quantity", cmtm.QUANTITIES)
def test_shapes_and_single_instant_drops_sample_axis(computed, quantity):
    model, q_stack, engine, _, _ = computed("panda", 1)
    nv = model.nv
    m = nv if quantity == "joint_torque" else 6 * nv
    K_in = cmtm.jacobian_input_orders(quantity, 1)
    assert engine[quantity].shape == (2, 2, m, K_in, nv)
    single = cmtm.jacobian(model, q_stack[1], quantity, order=1)
    assert single.shape == (2, m, K_in, nv)
    np.testing.assert_allclose(single, engine[quantity][1], rtol=0,
                               atol=1e-14 * np.max(np.abs(single)))
    fd_single = reference.fd_jacobian(model, q_stack[1], quantity, order=1)
    assert fd_single.shape == (2, m, K_in, nv)


@pytest.mark.parametrize("jacobian_function", [cmtm.jacobian, reference.fd_jacobian],
                         ids=["engine", "fd"])
def test_bad_inputs_raise_value_error(chain3, jacobian_function):
    q_stack = random_stack(chain3, 5)
    with pytest.raises(ValueError, match="quantity: expected one of .*got 'torque'"):
        jacobian_function(chain3, q_stack, "torque", order=1)
    with pytest.raises(ValueError, match="expected at least 4 derivative orders.*got 3"):
        jacobian_function(chain3, q_stack[:3], "joint_torque", order=1)
    bad = q_stack.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        jacobian_function(chain3, bad, "link_velocity", order=1)
    with pytest.raises(ValueError, match="order"):
        jacobian_function(chain3, q_stack, "link_velocity", order=-1)
    with pytest.raises(ValueError, match=r"expected shape \(n_samples, K, 3\)"):
        jacobian_function(chain3, q_stack[:, :2], "link_velocity", order=1)


def test_fd_rejects_bad_method_and_step(chain3):
    q_stack = random_stack(chain3, 3)
    with pytest.raises(ValueError, match="method"):
        reference.fd_jacobian(chain3, q_stack, "link_velocity", method="complex")
    with pytest.raises(ValueError, match="step"):
        reference.fd_jacobian(chain3, q_stack, "link_velocity", step=0.0)
    with pytest.raises(ValueError, match="levels"):
        reference.fd_jacobian(chain3, q_stack, "link_velocity", method="richardson", levels=0)
