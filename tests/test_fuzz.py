"""Property-based fuzzing (hypothesis) of the public boundary, on random trees
(kinematic_trees.random_tree) and random URDF text:

* random valid inputs give finite results that agree with the naive references
  (cmtm.reference: the body-frame RNEA, its mass matrix, link poses and velocities, and
  Richardson finite differences for the structured Jacobians), at orders <= 2;
* random invalid inputs (shapes, dtypes, NaN placements, orders, names, tampered models,
  corrupt URDF fragments, builder arguments) give ValueError (ModelError for models), never
  another exception, a crash, NaN or a hang.

Default run: the counts in ``fuzz(...)`` below (2140 examples in all, about 8 s once the
kernels are compiled); ``--hypothesis-profile=long`` (registered in the root conftest.py)
runs 2000 examples per test, about a minute. Numba compiles a kernel at its first call, so
the tests have no deadline.
"""
import re
import warnings
from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import cmtm
import kinematic_trees as kt
from cmtm import reference

LONG = settings.get_current_profile_name() == "long"


def fuzz(examples):
    """Hypothesis settings of a fuzz test: ``examples`` examples by default, the "long"
    profile's count under --hypothesis-profile=long; no deadline; the slow generation of
    whole models is expected."""
    return settings(**({} if LONG else {"max_examples": examples}), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --- random trees --------------------------------------------------------------------------

@cache
def random_model(n, seed, branching, prismatic, fixed):
    return kt.compile_tree(kt.random_tree(n, branching=branching, prismatic_fraction=prismatic,
                                          fixed_fraction=fixed, seed=seed))


MODELS = st.builds(random_model, n=st.integers(1, 4), seed=st.integers(0, 2**16),
                   branching=st.sampled_from([0.0, 0.5, 1.0]),
                   prismatic=st.sampled_from([0.0, 0.5, 1.0]),
                   fixed=st.sampled_from([0.0, 0.5]))


def stacks(model, n_orders, n_samples=st.integers(1, 2)):
    """Raw stacks (n_samples, n_orders, nv) with entries in [-2, 2]."""
    return n_samples.flatmap(lambda n: hnp.arrays(
        np.float64, (n, n_orders, model.nv),
        elements=st.floats(-2.0, 2.0, allow_subnormal=False)))


@fuzz(100)
@given(model=MODELS, data=st.data())
def test_random_trees_agree_with_the_naive_references(model, data):
    """Order 0 against the body-frame RNEA, its mass matrix, link poses and velocities
    (round-off of a few links: 1e-10 relative to the largest entry)."""
    q = data.draw(stacks(model, 3))
    q0, q1, q2 = q[:, 0], q[:, 1], q[:, 2]
    pairs = [(cmtm.inverse_dynamics(model, q)[:, 0], reference.rnea_naive(model, q0, q1, q2)),
             (cmtm.mass_matrix(model, q0), reference.mass_matrix_naive(model, q0)),
             (cmtm.link_poses(model, q0), reference.link_poses_naive(model, q0)),
             (cmtm.motion(model, q, dynamics=False).v_L[:, 0],
              reference.link_velocities_naive(model, q0, q1))]
    for engine, naive in pairs:
        assert np.all(np.isfinite(engine))
        scale = max(1.0, np.abs(naive).max())
        np.testing.assert_allclose(engine, naive, rtol=0, atol=1e-10 * scale)


@fuzz(40)
@given(model=MODELS, order=st.integers(0, 2), data=st.data())
def test_random_trees_jacobians_agree_with_richardson_differences(model, order, data):
    """Structured Jacobians of orders <= 2 against Richardson-extrapolated central
    differences of the engine's motion (good to ~1e-12 of max |J|; 1e-8 leaves room for
    prismatic trees), and the top block of the torque Jacobian is the mass matrix."""
    names = ("joint_torque", "link_velocity", "link_momentum")
    q = data.draw(stacks(model, order + 3, n_samples=st.just(1)))
    structured = cmtm.jacobians(model, q, names, order=order)
    fd = reference.fd_jacobians(model, q, names, order=order, method="richardson")
    for name in names:
        scale = max(1.0, np.abs(fd[name]).max())
        np.testing.assert_allclose(structured[name], fd[name], rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(structured["joint_torque"][:, order, :, order + 2],
                               cmtm.mass_matrix(model, q[:, 0]), rtol=0, atol=1e-12)


# --- random invalid inputs of the engine ---------------------------------------------------

FUNCTIONS = {
    "motion": lambda m, x, k: cmtm.motion(m, x, order=k).tau,
    "inverse_dynamics": lambda m, x, k: cmtm.inverse_dynamics(m, x, order=k),
    "link_transform_derivatives": lambda m, x, k: cmtm.link_transform_derivatives(m, x, order=k),
    "jacobian": lambda m, x, k: cmtm.jacobian(m, x, "joint_torque", order=k),
    "jacobians": lambda m, x, k: cmtm.jacobians(m, x, ("link_force", "joint_tangent"),
                                                order=k)["link_force"],
    "chunks": lambda m, x, k: np.concatenate([J["link_velocity"] for _, _, J in
                                              cmtm.jacobian_chunks(m, x, "link_velocity",
                                                                   order=k, chunk=2)]),
    "link_poses": lambda m, x, k: cmtm.link_poses(m, x),
    "mass_matrix": lambda m, x, k: cmtm.mass_matrix(m, x),
    "flatten_jacobian": lambda m, x, k: cmtm.flatten_jacobian(x, taylor=k == 1),
}
DTYPES = [np.float64, np.float32, np.int64, np.uint8, np.bool_, np.complex128, np.str_,
          np.object_, np.datetime64]
ANY_ORDER = st.one_of(st.integers(-3, cmtm.MAX_ORDER + 3), st.floats(allow_nan=True),
                      st.none(), st.text(max_size=2), st.booleans(),
                      st.sampled_from([np.int32(1), np.float64(1.0), 2**70, [1]]))


def any_array(max_side=5):
    """Arrays of any dtype and shape (0-4 axes), with any values of the dtype."""
    return st.sampled_from(DTYPES).flatmap(lambda dtype: hnp.arrays(
        dtype, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=max_side)))


ANY_INPUT = st.one_of(any_array(), st.none(), st.text(max_size=3),
                      st.lists(st.lists(st.floats(), max_size=3), max_size=3),
                      st.floats(), st.integers())


def finite_result(call):
    """The result of ``call``, asserted finite, or None when it raised a ValueError."""
    try:
        result = call()
    except ValueError:
        return None
    assert np.all(np.isfinite(np.asarray(result, dtype=np.float64)))
    return result


@fuzz(500)
@given(model=MODELS, name=st.sampled_from(list(FUNCTIONS)), x=ANY_INPUT, order=ANY_ORDER)
def test_random_inputs_give_finite_results_or_a_value_error(model, name, x, order):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)  # hypothesis' own casts
        finite_result(lambda: FUNCTIONS[name](model, x, order))


@fuzz(150)
@given(model=MODELS, name=st.sampled_from(list(FUNCTIONS)), order=st.integers(0, 2),
       bad=st.sampled_from([np.nan, np.inf, -np.inf]), data=st.data())
def test_a_non_finite_entry_anywhere_is_a_value_error(model, name, order, bad, data):
    x = data.draw(stacks(model, order + 3))
    if name in ("link_poses", "mass_matrix"):
        x = x[:, 0]
    index = tuple(data.draw(st.integers(0, side - 1)) for side in x.shape)
    x[index] = bad
    with pytest.raises(ValueError, match="expected finite values, got NaN or inf"):
        FUNCTIONS[name](model, x if name != "flatten_jacobian" else x[..., None], order)


@fuzz(100)
@given(model=MODELS, names=st.one_of(st.text(max_size=12), st.lists(
    st.one_of(st.sampled_from(cmtm.QUANTITIES), st.text(max_size=8), st.integers()),
    max_size=3), st.none(), st.integers()))
def test_quantity_names_are_known_or_a_value_error(model, names):
    q = np.zeros((1, 4, model.nv))
    try:
        result = cmtm.jacobians(model, q, names, order=1)
    except ValueError:
        return
    assert list(result) == list(dict.fromkeys([names] if isinstance(names, str) else names))
    assert all(np.all(np.isfinite(J)) for J in result.values())


INDEX_FIELDS = ("parent", "subtree_end", "joint_type")
FLOAT_FIELDS = ("axis", "placement_R", "placement_p", "mass", "com", "spatial_inertia",
                "gravity")


@st.composite
def tampered_models(draw):
    """A random tree with one kernel array replaced: mostly of the right shape and dtype
    with values around the valid ones, else of any shape and dtype."""
    model = draw(MODELS)
    field = draw(st.sampled_from(INDEX_FIELDS + FLOAT_FIELDS))
    shape = getattr(model, field).shape
    if field in INDEX_FIELDS:
        values = st.integers(-3, model.nv + 3)
        dtype = np.int64
    else:
        values = st.floats(-2.0, 2.0) | st.sampled_from([np.nan, np.inf, 0.0, 1.0])
        dtype = np.float64
    right = hnp.arrays(dtype, st.just(shape), elements=values)
    near = hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, max_side=model.nv + 2),
                      elements=values)
    value = draw(st.one_of(right, near, any_array(), st.none(), st.lists(values, max_size=4)))
    return model._replace(**{field: value})


@fuzz(500)
@given(model=tampered_models(), name=st.sampled_from(list(FUNCTIONS)[:-1]))
def test_tampered_models_are_refused_or_give_finite_results(model, name):
    """The kernels trust the model's arrays: a model edited by hand must be refused unless
    it is consistent (the failure this guards against is a crash of the process)."""
    q = np.full((2, 5, len(np.atleast_1d(model.parent))), 0.25)
    x = q[:, 0] if name in ("link_poses", "mass_matrix") else q
    finite_result(lambda: FUNCTIONS[name](model, x, 1))


# --- builders ---------------------------------------------------------------------------

SOME_VALUE = st.one_of(st.integers(-2, 6), st.floats(-2.0, 8.0), st.none(), st.booleans(),
                       st.text(max_size=3), st.sampled_from([np.nan, np.inf, 1.5, [2]]))


@fuzz(150)
@given(n=SOME_VALUE, branching=SOME_VALUE, prismatic=SOME_VALUE, fixed=SOME_VALUE,
       seed=st.one_of(st.integers(-2, 2**31), st.none(), st.text(max_size=2), st.floats()))
def test_builder_arguments_give_a_tree_or_a_value_error(n, branching, prismatic, fixed, seed):
    try:
        tree = kt.random_tree(n, branching=branching, prismatic_fraction=prismatic,
                              fixed_fraction=fixed, seed=seed)
    except ValueError:
        tree = None
    if tree is not None:
        assert kt.compile_tree(tree).nv == n
    try:
        chain = kt.serial_chain(n)
    except ValueError:
        return
    assert kt.compile_tree(chain).nv == n


# --- random URDF text ------------------------------------------------------------------

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")
UNIT = st.floats(-1.0, 1.0)


@st.composite
def robot_specs(draw):
    """Links (name, mass, com, principal moments) and joints (name, type, parent index,
    child index, xyz, rpy, axis, lower, upper) of a random tree of 2-5 links."""
    n = draw(st.integers(2, 5))
    links = []
    for i in range(n):
        a, b = draw(st.floats(0.01, 1.0)), draw(st.floats(0.01, 1.0))
        moments = (a, b, draw(st.floats(abs(a - b), a + b)))  # triangle inequality
        links.append((f"l{i}", draw(st.floats(0.0, 5.0)), draw(st.tuples(UNIT, UNIT, UNIT)),
                      moments))
    joints = []
    for i in range(1, n):
        axis = draw(st.permutations([draw(UNIT), draw(UNIT), draw(st.floats(0.2, 1.0))]))
        lower = draw(st.floats(-3.0, 0.0))
        joints.append((f"j{i}", draw(st.sampled_from(JOINT_TYPES)), draw(st.integers(0, i - 1)),
                       i, draw(st.tuples(UNIT, UNIT, UNIT)), draw(st.tuples(UNIT, UNIT, UNIT)),
                       axis, lower, lower + draw(st.floats(0.1, 3.0))))
    return links, joints


def numbers(values):
    return " ".join(repr(float(v)) for v in values)


def urdf_text(spec):
    """The URDF of a robot spec, one element per line."""
    links, joints = spec
    lines = ['<robot name="fuzz">']
    for name, mass, com, (ixx, iyy, izz) in links:
        lines += [f'<link name="{name}">', "<inertial>", f'<origin xyz="{numbers(com)}"/>',
                  f'<mass value="{mass!r}"/>',
                  f'<inertia ixx="{ixx!r}" ixy="0" ixz="0" iyy="{iyy!r}" iyz="0" izz="{izz!r}"/>',
                  "</inertial>", "</link>"]
    for name, kind, parent, child, xyz, rpy, axis, lower, upper in joints:
        lines += [f'<joint name="{name}" type="{kind}">', f'<parent link="l{parent}"/>',
                  f'<child link="l{child}"/>',
                  f'<origin xyz="{numbers(xyz)}" rpy="{numbers(rpy)}"/>',
                  f'<axis xyz="{numbers(axis)}"/>', f'<limit lower="{lower!r}" upper="{upper!r}"/>',
                  "</joint>"]
    return "\n".join(lines + ["</robot>"])


def spec_tree(spec):
    """The KinematicTree of a robot spec, built by add_link and add_joint."""
    links, joints = spec
    tree = kt.KinematicTree()
    for name, mass, com, moments in links:
        tree.add_link(name, mass=mass, com=com, inertia=np.diag(moments))
    for name, kind, parent, child, xyz, rpy, axis, lower, upper in joints:
        tree.add_joint(name, f"l{parent}", f"l{child}", kind, axis=axis, xyz=xyz, rpy=rpy,
                       lower=lower, upper=upper)
    return tree


ARRAY_FIELDS = [name for name, value in zip(kt.CompiledTree._fields,
                                             kt.compile_tree(kt.serial_chain(1)))
                if isinstance(value, np.ndarray)]


@fuzz(100)
@given(spec=robot_specs())
def test_random_urdf_text_loads_as_the_tree_it_describes(spec):
    from_text = kt.compile_tree(kt.load_urdf(urdf_text(spec)))
    built = kt.compile_tree(spec_tree(spec))
    assert (from_text.joint_names, from_text.link_names) == (built.joint_names, built.link_names)
    for field in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(from_text, field), getattr(built, field), field)


GARBAGE = ["", " ", "nan", "inf", "-inf", "1e400", "-1e400", "1e-400", "abc", "1 2",
           "1 2 3 4", "0x10", "1,2,3", "-0", "l0", "l1", "j1", "revolute", "fixed", "floating",
           "planar", "continuous", "prismatic", "\u00e9", "&amp;", "1e308 1e308 1e308"]
MUTATIONS = ("truncate", "attribute", "delete", "duplicate", "swap", "insert")


def mutate(text, data):
    """``text`` with one random corruption drawn from ``data``."""
    kind = data.draw(st.sampled_from(MUTATIONS))
    lines = text.split("\n")
    if kind == "truncate":
        return text[:data.draw(st.integers(0, len(text) - 1))]
    if kind == "attribute":
        values = list(re.finditer(r'="([^"]*)"', text))
        match = values[data.draw(st.integers(0, len(values) - 1))]
        return text[:match.start(1)] + data.draw(st.sampled_from(GARBAGE)) + text[match.end(1):]
    i, j = (data.draw(st.integers(0, len(lines) - 1)) for _ in range(2))
    if kind == "delete":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[j])
    elif kind == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines[i] += data.draw(st.text(alphabet="<>/=\"' abcl01.-&;!", max_size=12))
    return "\n".join(lines)


@fuzz(500)
@given(spec=robot_specs(), data=st.data())
def test_corrupt_urdf_is_a_model_error_or_a_usable_model(spec, data):
    """A corrupt file is refused with a ModelError, or it still describes a tree whose
    compiled model gives finite torques (or a ValueError on overflow)."""
    text = mutate(urdf_text(spec), data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kt.InertiaWarning)
        try:
            model = kt.compile_tree(kt.load_urdf(text))
        except kt.ModelError:
            return
    if model.nv:
        finite_result(lambda: cmtm.inverse_dynamics(model, np.full((3, model.nv), 0.5)))
