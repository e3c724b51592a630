"""Session-wide setup: a Numba cache keyed by the engine's sources, and small compiled models
shared by every test module.

Numba compiles each kernel once per process and caches it on disk, but a cached kernel is
not invalidated when a kernel it calls in another module changes, so a warm cache can run
old code and pass. The test session therefore caches in ``.numba_cache/<hash>`` at the
repository root, ``<hash>`` a digest of every ``cmtm/*.py``: any edit of the engine starts
a fresh, empty cache, which the session first fills with every kernel of the public API
at once (``cmtm.precompile``, one process per CPU), and only the few most recently used
folders are kept. ``NUMBA_CACHE_DIR`` is set in ``os.environ`` before anything imports
``cmtm``, so subprocesses and joblib workers started by tests inherit it; a value the user
set is overridden, since nothing guarantees that it matches the sources.

Tests share the models below and keep to few samples; the large sizes belong in bench/.
"""
import functools
import hashlib
import os
import shutil
import sys
from pathlib import Path

import numba.core.config
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
NUMBA_CACHE_ROOT = ROOT / ".numba_cache"
KEEP_CACHES = 3
"""Cache folders kept: the current one and the two most recently used (other checkouts'
states, a branch switched back and forth)."""


KERNEL_CONSTANTS = ROOT / "kinematic_trees" / "joint_types.py"
"""The one module outside cmtm/ whose values the kernels compile in (the joint codes)."""


def source_hash(package=ROOT / "cmtm", extra=(KERNEL_CONSTANTS,)):
    """First 16 hex digits of the sha256 of every .py file under ``package`` (relative path
    and contents, in sorted order), then of the ``extra`` files."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")) + list(extra):
        digest.update(path.name.encode() if path in extra else
                      path.relative_to(package).as_posix().encode())
        digest.update(b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def keyed_cache_folder(root=NUMBA_CACHE_ROOT, package=ROOT / "cmtm", keep=KEEP_CACHES):
    """Create (or mark as used) ``root/<source_hash(package)>``, delete all but the ``keep``
    most recently used folders of ``root``, and return the folder."""
    folder = root / source_hash(package)
    folder.mkdir(parents=True, exist_ok=True)
    os.utime(folder)
    others = sorted((path for path in root.iterdir() if path.is_dir() and path != folder),
                    key=lambda path: path.stat().st_mtime, reverse=True)
    for stale in others[keep - 1:]:
        shutil.rmtree(stale, ignore_errors=True)
    return folder


def use_keyed_numba_cache():
    """Point NUMBA_CACHE_DIR at :func:`keyed_cache_folder`; refuse if cmtm is imported.
    Returns whether the folder is empty (a first session for these sources)."""
    if "cmtm" in sys.modules:
        raise RuntimeError("cmtm was imported before tests/conftest.py set NUMBA_CACHE_DIR: "
                           "its kernels would use a cache that may be stale")
    folder = keyed_cache_folder()
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    numba.core.config.reload_config()   # numba read its environment when it was imported
    return not any(folder.iterdir())


FRESH_CACHE = use_keyed_numba_cache()
# ioc imports cmtm, whose kernels must see the cache folder: these imports come after it
import kinematic_trees as kt  # noqa: E402
import cmtm  # noqa: E402
from cmtm import api, dispatch  # noqa: E402
from cmtm._jit import TARGET_OPTIONS  # noqa: E402
from ioc.direct import solve  # noqa: E402
from ioc.problem import MotionProblem  # noqa: E402
from numba.core.dispatcher import Dispatcher  # noqa: E402

if FRESH_CACHE:
    # every kernel at once, one process per CPU, instead of one at a time as tests reach them
    cmtm.precompile()

API_KERNELS = {name: value for name, value in sorted(vars(api).items())
               if isinstance(value, Dispatcher) and name.endswith("_kernel")}
"""The kernels cmtm.api runs, by their names there."""

PAPER = dict(duration=2.0, samples=200, degree=5, control_points=50, start=1.57, goal=-1.57,
             rest_order=1, limits=(-np.pi, np.pi))
"""The paper's §8.3 setting: T = 2 s, 200 samples, quintic spline, 50 control points,
1.57 -> -1.57 rad with zero end velocities, limits [-pi, pi]."""
CASES = {"a": ("joint_velocity", "joint_acceleration", "joint_jerk"),
         "b": ("joint_velocity", "joint_acceleration", "joint_jerk", "joint_torque"),
         "c": ("joint_velocity", "joint_acceleration", "joint_jerk", "joint_torque",
               "joint_torque_rate")}
PANDA_WEIGHTS = (1.0, 1.0, 1.0, 0.01)
"""The paper's 7-DoF weights: velocity, acceleration, jerk, torque / 100."""


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


def relative_error(actual, desired):
    """max |actual - desired| / max |desired|, shapes equal."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    assert actual.shape == desired.shape, (actual.shape, desired.shape)
    return np.max(np.abs(actual - desired)) / np.max(np.abs(desired))


def assert_close(actual, desired, rel, what=""):
    """relative_error(actual, desired) <= rel; ``what`` names the comparison on failure."""
    error = relative_error(actual, desired)
    assert error <= rel, f"{what}: relative error {error:.2e} > {rel:.0e}"


@functools.cache
def python_entry(helper):
    """A jitted function with a Python entry point that calls the kernel helper ``helper``
    (which has none, ``cmtm._jit.HELPER_OPTIONS``) on the same arguments; one per helper
    in a session (each is compiled on its first call)."""
    @numba.njit
    def call(*args):
        return helper(*args)
    return call


def chain_gradient_matrix(chain):
    """The chain rule of ``SplineChain.gradient`` as scipy's sparse matrix Cg (n_c, N K),
    Cg[first_m + a, m K + s] = values[m, s, a]: the reference its compiled loop is tested
    against (the same products, summed in the same order by scipy's CSR product)."""
    import scipy.sparse
    N, K, n_local = chain.values.shape
    rows = chain.first[:, None, None] + np.arange(n_local)[None, None, :]
    columns = np.arange(N)[:, None, None] * K + np.arange(K)[None, :, None]
    return scipy.sparse.csr_array(
        (chain.values.ravel(), (np.broadcast_to(rows, chain.values.shape).ravel(),
                                np.broadcast_to(columns, chain.values.shape).ravel())),
        shape=(chain.n_control, N * K))


def random_stack(model, n_orders, n_samples=None, seed=0, scale=1.0):
    """A random raw derivative stack (n_samples, n_orders, nv) or (n_orders, nv)."""
    rng = np.random.default_rng(seed)
    shape = (n_orders, model.nv) if n_samples is None else (n_samples, n_orders, model.nv)
    return scale * rng.uniform(-1.0, 1.0, size=shape)


@pytest.fixture(scope="session")
def paper_solutions(chain3):
    """The paper's 3-DoF cases (a), (b), (c), equal weights, solved once per session."""
    return {case: solve(MotionProblem(chain3, costs, **PAPER), np.ones(len(costs)))
            for case, costs in CASES.items()}


@pytest.fixture(scope="session")
def panda_solution(panda):
    """The paper's 7-DoF case: case (b)'s terms with the torque weight / 100."""
    return solve(MotionProblem(panda, CASES["b"], **PAPER), PANDA_WEIGHTS)


def claim_all(n_samples):
    """The ``claim`` counter of a batched kernel (``cmtm._jit.claim_samples``) that hands
    the first caller every sample below n_samples in one block."""
    return np.array([0, max(n_samples, 1)], dtype=np.int64)


def run_in_chunks(kernel, kernel_model, works, n_samples, *arrays):
    """A batched kernel over n_samples samples cut into len(works) contiguous chunks, chunk c
    run with workspace works[c] (slot 0), one chunk after another on the calling thread,
    claimed two samples at a time (the last block of a chunk cut at its end), each call
    checked to return its chunk's number of samples. Every workspace then computes
    samples whatever the host's timing: ``cmtm.dispatch.run_chunks`` runs the workspaces at once,
    and its calling thread may claim every sample before another thread starts."""
    bounds = np.linspace(0, n_samples, len(works) + 1).round().astype(np.int64)
    for work, first, last in zip(works, bounds[:-1], bounds[1:]):
        done = kernel(kernel_model, work, 0, np.array([first, 2], dtype=np.int64), last,
                      *arrays)
        assert done == last - first


def results_on_threads(thread_counts, call):
    """[call() with n Numba threads for n in thread_counts]; the count (per calling
    thread) is restored afterwards."""
    before = numba.get_num_threads()
    results = []
    try:
        for n in thread_counts:
            numba.set_num_threads(n)
            results.append(call())
    finally:
        numba.set_num_threads(before)
    return results


@pytest.fixture
def split_every_call(monkeypatch):
    """Every call split into one chunk per thread whatever its work (dispatch.MIN_CHUNK_SECONDS
    keeps small calls on the calling thread, which would leave nothing to compare)."""
    monkeypatch.setattr(dispatch, "MIN_CHUNK_SECONDS", 1e-12)


@pytest.fixture
def kernel_allocations():
    """A function ``(kernel, args) -> (allocations of kernel(*args), of a no-op)``: Numba's
    NRT allocation counters over one call of the (already compiled) kernel and over a no-op
    compiled with the kernels' options (``cmtm._jit.TARGET_OPTIONS``) without the disk cache,
    taking the same arguments, equal when the kernel itself allocates
    nothing. ``args[3]`` is the kernel's claim counter (:func:`claim_all`), rewound before
    every call so that each call computes its samples. Skips where Numba keeps no
    allocation statistics."""
    nrt = pytest.importorskip("numba.core.runtime._nrt_python")
    from numba.core.runtime import rtsys
    if not hasattr(nrt, "memsys_enable_stats"):
        pytest.skip("this Numba has no NRT allocation statistics")

    @numba.njit(**TARGET_OPTIONS)
    def no_op(*args):
        pass

    def allocations(call, args):
        args[3][0] = 0
        before = rtsys.get_allocation_stats().alloc
        call(*args)
        return rtsys.get_allocation_stats().alloc - before

    def count(kernel, args):
        allocations(kernel, args)           # compiled outside the count
        allocations(no_op, args)
        return allocations(kernel, args), allocations(no_op, args)

    was_enabled = nrt.memsys_stats_enabled()
    nrt.memsys_enable_stats()
    try:
        yield count
    finally:
        if not was_enabled:
            nrt.memsys_disable_stats()
