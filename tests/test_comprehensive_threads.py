"""The comprehensive kernels split across threads (cmtm.structured_jacobians.jacobian_kernel,
cmtm.velocity_derivatives.velocity_derivatives_kernel, cmtm.torque_jacobian.torque_jacobian_kernel,
cmtm.comprehensive.motion_kernel and link_cmtm_kernel, run by cmtm.dispatch.run_chunks): the
same bits for any thread count or chunking, one cached workspace per call shape, nothing
allocated inside a kernel.

Reference: the engine itself on one thread (``numba.set_num_threads(1)``) against all of
``numba.config.NUMBA_NUM_THREADS``, and the kernels run directly in 1..7 chunks of
samples, each with a workspace of its own (``conftest.run_in_chunks``). Every sample runs
the same instructions in its chunk's own work arrays, so the results must be equal bit for
bit (np.array_equal), not merely close.
"""
import numba
import numpy as np
import pytest
from conftest import claim_all, random_stack, results_on_threads, run_in_chunks

import cmtm
import kinematic_trees as kt
from cmtm import api, dispatch
from cmtm.comprehensive import (link_cmtm_kernel, link_cmtm_workspace, motion_kernel,
                                motion_workspace)
from cmtm.structured_jacobians import (INPUT_OFFSET, JOINT_TORQUE, QUANTITIES,
                                       jacobian_kernel, jacobian_sizes, jacobian_workspace)
from cmtm.taylor import taylor_from_raw
from cmtm.torque_jacobian import torque_jacobian_kernel, torque_workspace
from cmtm.velocity_derivatives import velocity_derivatives_kernel, velocity_derivatives_workspace

ORDER = 2
SAMPLES = 9
JACOBIAN_SETS = {"kinematic": ("link_tangent", "link_velocity", "joint_momentum"),
                 "dynamic": ("link_force", "joint_force", "joint_torque"),
                 "all": QUANTITIES}
MOTION_FIELDS = ("v_L", "h_L", "w_h_L", "h_J", "w_h_J", "f_L", "f_J", "tau")


@pytest.fixture(scope="module")
def small_tree():
    """Seven joints on branches, prismatic ones included: supports and subtrees of every
    shape the pair loops walk."""
    return api.check_model(kt.compile_tree(kt.random_tree(7, branching=0.6,
                                                          prismatic_fraction=0.3, seed=9)))


@pytest.mark.parametrize("quantities", sorted(JACOBIAN_SETS))
def test_jacobians_equal_bit_for_bit_on_one_and_all_threads(small_tree, quantities,
                                                            split_every_call):
    q = random_stack(small_tree, ORDER + 3, n_samples=SAMPLES, seed=31)
    single, threaded = results_on_threads(
        (1, numba.config.NUMBA_NUM_THREADS),
        lambda: cmtm.jacobians(small_tree, q, JACOBIAN_SETS[quantities], order=ORDER))
    for name in JACOBIAN_SETS[quantities]:
        assert np.array_equal(single[name], threaded[name]), name


def test_motion_and_torques_equal_bit_for_bit_on_one_and_all_threads(small_tree,
                                                                     split_every_call):
    q = random_stack(small_tree, ORDER + 3, n_samples=SAMPLES, seed=32)

    def call():
        mo = cmtm.motion(small_tree, q, order=ORDER)
        return [getattr(mo, field) for field in MOTION_FIELDS] + \
            [cmtm.inverse_dynamics(small_tree, q, order=ORDER),
             cmtm.link_transform_derivatives(small_tree, q, order=ORDER)]
    single, threaded = results_on_threads((1, numba.config.NUMBA_NUM_THREADS), call)
    names = MOTION_FIELDS + ("inverse_dynamics", "link_transform_derivatives")
    for name, a, b in zip(names, single, threaded):
        assert np.array_equal(a, b), name


def jacobian_outputs(model, n_samples, wanted):
    """Zeroed outputs of jacobian_kernel (empty where not wanted), as cmtm.jacobians
    makes them."""
    nv = model.nv
    return tuple(np.zeros((n_samples, ORDER + 1, nv if q == JOINT_TORQUE else 6 * nv,
                           ORDER + 1 + INPUT_OFFSET[q], nv))
                 if wanted[q] else np.zeros((0,) * 5) for q in range(len(QUANTITIES)))


def comprehensive_wanted():
    """Every quantity the API sends to jacobian_kernel (joint torques have their own)."""
    wanted = np.ones(len(QUANTITIES), dtype=np.bool_)
    wanted[JOINT_TORQUE] = False
    return wanted


def velocity_outputs(model, n_samples):
    """Jacobian and per-sample finite flags of velocity_derivatives_kernel, the Jacobian
    filled with NaN: the kernel writes every entry of the samples it runs (it zeroes their
    blocks first), which the bitwise comparisons of its outputs check."""
    return (np.full((n_samples, ORDER + 1, 6 * model.nv, ORDER + 2, model.nv), np.nan),
            np.zeros(n_samples, dtype=np.bool_))


def motion_outputs(model, n_samples):
    """Outputs (v_L, ..., f_J, tau) of motion_kernel."""
    return tuple(np.zeros((n_samples, ORDER + 1, model.nv, 6)) for _ in range(7)) + \
        (np.zeros((n_samples, ORDER + 1, model.nv)),)


def jacobian_kernel_outputs(model, qhat, wanted, n_chunks):
    """The Taylor outputs of jacobian_kernel run in n_chunks chunks."""
    kernel, outputs = api.kernel_model_of(model), jacobian_outputs(model, qhat.shape[0], wanted)
    run_in_chunks(jacobian_kernel, kernel,
                  [jacobian_workspace(kernel, ORDER, wanted, 1) for _ in range(n_chunks)],
                  qhat.shape[0], qhat, wanted, outputs)
    return outputs


def velocity_kernel_output(model, q, n_chunks):
    """The output of velocity_derivatives_kernel (raw stack q) run in n_chunks chunks."""
    kernel, (out, finite) = api.kernel_model_of(model), velocity_outputs(model, q.shape[0])
    run_in_chunks(velocity_derivatives_kernel, kernel,
                  [velocity_derivatives_workspace(kernel, ORDER, 1) for _ in range(n_chunks)],
                  q.shape[0], q, out, finite)
    assert finite.all()
    return out


def torque_output(model, n_samples):
    """Outputs of torque_jacobian_kernel: the torque jets (uninitialised) and the zeroed
    Jacobian."""
    return (np.empty((n_samples, ORDER + 1, model.nv)),
            np.zeros((n_samples, ORDER + 1, model.nv, ORDER + 3, model.nv)))


def torque_kernel_output(model, qhat, n_chunks):
    """The raw output of torque_jacobian_kernel run in n_chunks chunks."""
    kernel, (tau, out) = api.kernel_model_of(model), torque_output(model, qhat.shape[0])
    run_in_chunks(torque_jacobian_kernel, kernel,
                  [torque_workspace(kernel, ORDER, 1) for _ in range(n_chunks)],
                  qhat.shape[0], qhat, tau, out)
    return out


def link_cmtm_output(model, n_samples):
    """Output of link_cmtm_kernel (ORDER + 1 CMTM blocks)."""
    return np.zeros((n_samples, model.nv, ORDER + 1, 6, 6))


def link_cmtm_kernel_output(model, qhat, n_chunks):
    """The Taylor output of link_cmtm_kernel run in n_chunks chunks."""
    kernel, out = api.kernel_model_of(model), link_cmtm_output(model, qhat.shape[0])
    run_in_chunks(link_cmtm_kernel, kernel,
                  [link_cmtm_workspace(kernel, ORDER + 1, 1) for _ in range(n_chunks)],
                  qhat.shape[0], qhat, out)
    return out


def motion_kernel_outputs(model, qhat, n_chunks):
    """The Taylor outputs of motion_kernel run in n_chunks chunks."""
    kernel, outputs = api.kernel_model_of(model), motion_outputs(model, qhat.shape[0])
    run_in_chunks(motion_kernel, kernel,
                  [motion_workspace(kernel, ORDER, True, 1) for _ in range(n_chunks)],
                  qhat.shape[0], qhat, True, True, True, outputs)
    return outputs


def test_kernels_do_not_depend_on_the_chunking(small_tree):
    """7 samples in 1..7 chunks (more chunks than threads)."""
    q = random_stack(small_tree, ORDER + 3, n_samples=7, seed=33)
    qhat = taylor_from_raw(q)
    wanted = comprehensive_wanted()
    first_J = jacobian_kernel_outputs(small_tree, qhat, wanted, 1)
    first_velocity = velocity_kernel_output(small_tree, q, 1)
    first_torque = torque_kernel_output(small_tree, qhat, 1)
    first_motion = motion_kernel_outputs(small_tree, qhat, 1)
    first_cmtm = link_cmtm_kernel_output(small_tree, qhat, 1)
    for n_chunks in range(2, 8):
        assert np.array_equal(first_cmtm, link_cmtm_kernel_output(small_tree, qhat, n_chunks))
        J = jacobian_kernel_outputs(small_tree, qhat, wanted, n_chunks)
        assert all(np.array_equal(a, b) for a, b in zip(first_J, J)), n_chunks
        assert np.array_equal(first_velocity, velocity_kernel_output(small_tree, q,
                                                                     n_chunks)), n_chunks
        assert np.array_equal(first_torque, torque_kernel_output(small_tree, qhat, n_chunks))
        motion = motion_kernel_outputs(small_tree, qhat, n_chunks)
        assert all(np.array_equal(a, b) for a, b in zip(first_motion, motion)), n_chunks


def test_second_call_reuses_the_cached_workspaces(small_tree):
    """The api's per-thread cache holds one workspace per (kernel model, kind, chunk,
    sizes); a second call finds them (chunk 0: every call has it)."""
    q = random_stack(small_tree, ORDER + 3, n_samples=SAMPLES, seed=34)
    kernel = api.kernel_model_of(small_tree)
    wanted = np.zeros(len(QUANTITIES), dtype=np.bool_)
    wanted[QUANTITIES.index("joint_force")] = True
    keys = [(id(kernel), "jacobian", (0, jacobian_sizes(small_tree.nv, ORDER, wanted))),
            (id(kernel), "velocity_derivatives", (0, ORDER)),
            (id(kernel), "torque_jacobian", (0, ORDER, True)),
            (id(kernel), "motion", (0, ORDER, True))]
    calls = (lambda: cmtm.jacobian(small_tree, q, "joint_force", order=ORDER),
             lambda: cmtm.jacobian(small_tree, q, "link_velocity", order=ORDER),
             lambda: cmtm.jacobian(small_tree, q, "joint_torque", order=ORDER),
             lambda: cmtm.motion(small_tree, q, order=ORDER))
    for key, call in zip(keys, calls):
        call()
        first = dispatch._WORKSPACES.cache[key][1]
        call()
        assert dispatch._WORKSPACES.cache[key][1] is first, key[1]


def test_kernels_allocate_nothing(small_tree, kernel_allocations):
    """The kernels allocate nothing (NRT counters equal to a no-op's,
    ``conftest.kernel_allocations``), whatever the number of samples or chunks."""
    kernel = api.kernel_model_of(small_tree)
    wanted = comprehensive_wanted()
    for n_samples, n_chunks in ((1, 1), (SAMPLES, 1), (SAMPLES, 3)):
        q = random_stack(small_tree, ORDER + 3, n_samples=n_samples, seed=35)
        qhat = taylor_from_raw(q)
        J, motion = jacobian_outputs(small_tree, n_samples, wanted), \
            motion_outputs(small_tree, n_samples)
        last = n_samples // n_chunks       # the first of n_chunks chunks
        claim = claim_all(last)
        for name, kernel_call, args in (
                ("jacobian_kernel", jacobian_kernel,
                 (kernel, jacobian_workspace(kernel, ORDER, wanted, n_chunks), 0, claim, last,
                  qhat, wanted, J)),
                ("velocity_derivatives_kernel", velocity_derivatives_kernel,
                 (kernel, velocity_derivatives_workspace(kernel, ORDER, n_chunks), 0, claim,
                  last, q, *velocity_outputs(small_tree, n_samples))),
                ("torque_jacobian_kernel", torque_jacobian_kernel,
                 (kernel, torque_workspace(kernel, ORDER, n_chunks), 0, claim, last, qhat,
                  *torque_output(small_tree, n_samples))),
                ("link_cmtm_kernel", link_cmtm_kernel,
                 (kernel, link_cmtm_workspace(kernel, ORDER + 1, n_chunks), 0, claim, last,
                  qhat, link_cmtm_output(small_tree, n_samples))),
                ("motion_kernel", motion_kernel,
                 (kernel, motion_workspace(kernel, ORDER, True, n_chunks), 0, claim, last,
                  qhat, True, True, True, motion))):
            kernel_count, no_op_count = kernel_allocations(kernel_call, args)
            assert kernel_count == no_op_count, name
