"""Fill Numba's on-disk cache with every kernel of the public API, in parallel processes.

Numba compiles one function at a time in a process (a global compiler lock): a cold process
spends ~21-25 s on this project's 2-core machine compiling the kernels that the public
functions run (``bench/bench_order0.py`` block 4; 37-43 s on the slower host of
2026-12-01). The kernels are independent of each
other, so :func:`precompile` deals them out to several processes that compile at the same
time, each writing its kernels to the cache (``NUMBA_CACHE_DIR`` or Numba's default), from
which every later process loads them in well under a second.

Each kernel is compiled by exactly one process: Numba's cache index is not safe against two
processes writing different signatures of one function at the same time. Only kernels are
cached (``cmtm._jit``), the helpers they share are compiled again by every process that
needs them, and :data:`UNITS` name disjoint kernels (``tests/test_compile_cache.py``).
Kernels the cache already holds (:func:`in_cache`) are loaded by the calling process and
start no other, so a warm :func:`precompile` costs what loading costs (milliseconds when
this process has them already).
"""
import functools
import os
import pickle
import subprocess
import sys
import time
from typing import Callable, NamedTuple

import numpy as np

from cmtm import api
from cmtm.api import (inverse_dynamics, jacobian, jacobians, kernel_model_of, link_poses,
                      link_transform_derivatives, mass_matrix, motion, point_jacobian,
                      point_motion)


class CompileUnit(NamedTuple):
    """Public calls that compile (or load) some kernels of ``cmtm.api``."""

    kernels: tuple          # the names, in cmtm.api, of the kernels the calls run
    seconds: float          # its cold compile, measured (UNITS; for balancing the processes)
    family: str             # compiled by one process when there are two (CMTM, WORLD)
    calls: Callable         # (model, q_stack) -> None: the calls


CMTM, WORLD = "CMTM passes", "world-frame passes"
"""The two families of kernels: on CMTMs and their passes (``cmtm.kinematics``,
``cmtm.dynamics``, ``cmtm.taylor``), and on world-frame poses, screws and inertias
(``cmtm.rnea``, ``cmtm.rnea_derivatives``). The link-velocity Jacobian is world-frame but
counted with the CMTM passes: it shares few helpers with either family (the world poses
of ``cmtm.rnea_derivatives``, the cross products of ``cmtm.spatial``), and the
world-frame family without it is still the larger. Two processes, one family each, cold
cache, five alternating runs, the slower process: 40.6-50.2 s (median 45.7) with it in
the world-frame family, 37.5-45.9 s (median 41.0) with it here."""

POINT = [(0, (0.5, 0.0, 0.0))]
"""A point of link 0, for the point motion unit (every model has a link 0)."""

UNITS = {
    "comprehensive jacobians": CompileUnit(
        ("jacobian_kernel",), 24.9, CMTM,
        lambda model, q: jacobians(model, q, ("link_velocity", "link_momentum"), order=1)),
    "motion": CompileUnit(
        ("motion_kernel",), 4.0, CMTM, lambda model, q: motion(model, q, order=0)),
    "link transform derivatives": CompileUnit(
        ("link_cmtm_kernel",), 1.6, CMTM,
        lambda model, q: link_transform_derivatives(model, q, order=1)),
    "velocity jacobian": CompileUnit(
        ("velocity_derivatives_kernel",), 7.9, CMTM,
        lambda model, q: jacobian(model, q, "link_velocity", order=1)),
    "torque jacobian": CompileUnit(
        ("torque_jacobian_kernel",), 18.5, WORLD,
        lambda model, q: jacobian(model, q, "joint_torque", order=1)),
    "torque derivatives": CompileUnit(
        ("torque_derivatives_kernel",), 13.0, WORLD,
        lambda model, q: jacobian(model, q, "joint_torque", order=0)),
    "inverse dynamics": CompileUnit(
        ("rnea_kernel",), 3.9, WORLD, lambda model, q: inverse_dynamics(model, q, order=0)),
    "mass matrix": CompileUnit(
        ("crba_kernel",), 2.7, WORLD, lambda model, q: mass_matrix(model, q[:, 0])),
    "link poses": CompileUnit(
        ("link_poses_kernel",), 1.4, WORLD, lambda model, q: link_poses(model, q[:, 0])),
    "point motion": CompileUnit(
        ("point_kernel",), 8.5, WORLD, lambda model, q: (
            point_motion(model, q, POINT, order=1), point_jacobian(model, q, POINT, order=1))),
}
"""Unit name -> :class:`CompileUnit`; together they run every kernel the public functions
call (``tests/test_compile_cache.py`` checks that the public calls on other models compile
nothing more). Seconds: each unit's cold compile in one process after the units listed
before it in its family (which compiled the helpers they share), the mean of two runs on
this project's machine on 2026-12-02, a slow day of its host: the CMTM family 35.3-41.3 s
in all, the world-frame family 39.2-39.6 s (at b46cd8e, on a faster day and before the
order-0 torque Jacobian's vector loops, 10.5 and 12.4 s without the link-velocity
Jacobian). The point motion's, 8.5 s, after the rest of its family on 2027-01 (when that
family's took 12.9, 9.9, 6.1, 4.1 and 1.8 s, the machine shared with other jobs)."""


@functools.cache
def small_model_and_stack():
    """A 2-link chain and a (2, 5, 2) derivative stack, built once per process: the
    kernels' argument types do not depend on the model's size or joints
    (``cmtm.api.check_model``), nor on the order."""
    import kinematic_trees as kt
    model = kt.compile_tree(kt.serial_chain(2))
    return model, np.random.default_rng(0).uniform(-1.0, 1.0, (2, 5, model.nv))


def compile_units(names):
    """Run the units ``names`` (keys of :data:`UNITS`) in this process, which compiles their
    kernels or loads them from the cache."""
    model, q_stack = small_model_and_stack()
    for name in names:
        UNITS[name].calls(model, q_stack)


def longest_first(names, n_groups, units=UNITS):
    """``names`` dealt to n_groups groups, longest first, each to the group with the least
    work so far (the longest-processing-time rule); empty groups dropped."""
    groups, loads = [[] for _ in range(n_groups)], [0.0] * n_groups
    for name in sorted(names, key=lambda name: -units[name].seconds):
        least = loads.index(min(loads))
        groups[least].append(name)
        loads[least] += units[name].seconds
    return [group for group in groups if group]


def balanced_groups(jobs, units=UNITS):
    """The unit names dealt to at most ``jobs`` processes, the group with the most work
    first. A family's units share helpers, which each process compiles again, so the
    families start as one group each (all in one for one job), and the group with the most
    work is split in two (:func:`longest_first`) while there are fewer groups than jobs.
    Measured on 2 cores, every kernel cold (when the link-velocity Jacobian was still a
    kernel on CMTMs): the two families in two processes 16.8-17.3 s, the units dealt
    longest first regardless of family 22.3 s, one process 26-31 s."""
    def work(group):
        return sum(units[name].seconds for name in group)
    families = {}
    for name, unit in units.items():
        families.setdefault(unit.family, []).append(name)
    groups = list(families.values()) if jobs > 1 else [list(units)]
    while len(groups) < jobs and any(len(group) > 1 for group in groups):
        largest = max((group for group in groups if len(group) > 1), key=work)
        groups.remove(largest)
        groups += longest_first(largest, 2, units)
    return sorted(groups, key=work, reverse=True)


def check_jobs(jobs, n_units=len(UNITS)):
    """``jobs`` as a positive int; None: the CPUs this process may use, at most ``n_units``
    (the number of units to compile). ValueError otherwise."""
    if jobs is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        return max(1, min(cpus or os.cpu_count() or 1, n_units))
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: expected a positive integer, got {jobs!r}")
    return jobs


def check_units(units):
    """``units`` as a list of names of :data:`UNITS` (None: all of them, in their order);
    ValueError for anything else (a single name must be given as a one-element list)."""
    if units is None:
        return list(UNITS)
    try:
        names = None if isinstance(units, str) else list(units)
    except TypeError:
        names = None
    if names is None or not all(isinstance(name, str) for name in names):
        raise ValueError(f"units: expected a list of names of cmtm.compile_cache.UNITS, "
                         f"got {units!r}")
    unknown = [name for name in names if name not in UNITS]
    if unknown:
        raise ValueError(f"units: unknown {', '.join(map(repr, unknown))}; expected names of "
                         f"cmtm.compile_cache.UNITS: {', '.join(UNITS)}")
    return list(dict.fromkeys(names))


def in_cache(kernel):
    """Whether Numba's on-disk cache holds machine code of the kernel dispatcher ``kernel``
    that this process would load: an entry of the kernel's cache index (Numba keeps the
    index empty for another source or Numba release) whose key is the one Numba looks up
    here for that entry's signature (the key includes the CPU and the function's bytecode).

    It reads Numba's cache objects (``Dispatcher._cache``), which are not public API: an
    unexpected object or an unreadable index (no disk cache, NUMBA_DISABLE_JIT, another
    Numba release's layout) counts as not cached, so that the kernel is compiled as it
    would be without this check."""
    try:
        cache, codegen = kernel._cache, kernel.targetctx.codegen()
        return any(cache._index_key(key[0], codegen) == key
                   for key in cache._cache_file._load_index())
    except (AttributeError, TypeError, ValueError, IndexError, OSError, EOFError,
            pickle.UnpicklingError):
        return False


def jacobian_units(quantities, order=0):
    """The units whose kernels ``cmtm.jacobians(model, q_stack, quantities, order)`` runs
    (``cmtm.api.jacobian_kernels``), in the order of :data:`UNITS`."""
    kernels = set(api.jacobian_kernels(quantities, order))
    return [name for name, unit in UNITS.items() if kernels & set(unit.kernels)]


def unit_ready(name):
    """Whether every kernel of the unit ``name`` is compiled in this process already or in
    the on-disk cache (:func:`in_cache`), so that running the unit compiles nothing."""
    kernels = [getattr(api, kernel) for kernel in UNITS[name].kernels]
    return all(getattr(kernel, "overloads", None) or in_cache(kernel) for kernel in kernels)


CHILD = "import sys; from cmtm.compile_cache import compile_units; compile_units(sys.argv[1:])"
"""What each other process runs, the unit names as its arguments."""


def child_environment():
    """This process's environment, with the folder that holds the cmtm package first on
    PYTHONPATH (a source checkout that is not installed)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [root] + [path for path in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                      if path]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def precompile(jobs=None, units=None):
    """Compile the kernels of ``units`` (names of :data:`UNITS`; default every kernel of
    the public API) into Numba's on-disk cache, in ``jobs`` processes at once (default: one
    per CPU this process may use, at most one per unit to compile), this one included;
    afterwards this process has those kernels loaded. Units whose kernels this process or
    the cache holds already (:func:`unit_ready`) are loaded here and start no process.

    Returns {"seconds": wall time, "groups": the unit names compiled by each process, this
    one's first (empty if every unit was ready), "cached": the units found ready}.
    RuntimeError with the other process's output if one of them fails; ValueError for bad
    ``jobs`` or ``units``.
    """
    start = time.perf_counter()
    names = check_units(units)
    cold = [name for name in names if not unit_ready(name)]
    jobs = check_jobs(jobs, max(1, len(cold)))
    groups = balanced_groups(jobs, {name: UNITS[name] for name in cold}) if cold else []
    if len(groups) > 1:
        kernel_model_of(small_model_and_stack()[0])   # joint_geometry cached before the children
    children = [subprocess.Popen([sys.executable, "-c", CHILD, *group], env=child_environment(),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for group in groups[1:]]
    own = groups[0] if groups else []
    try:
        compile_units(own)
        outputs = [child.communicate()[0] for child in children]
    except BaseException:           # an error, Ctrl-C, a SIGTERM raised: none outlives us
        for child in children:
            child.kill()
            child.communicate()
        raise
    failures = [f"{', '.join(group)} (exit {child.returncode}):\n{output}"
                for child, group, output in zip(children, groups[1:], outputs)
                if child.returncode != 0]
    if failures:
        raise RuntimeError("precompile: a compiling process failed: " + "\n".join(failures))
    compile_units(name for name in names if name not in own)
    return {"seconds": time.perf_counter() - start, "groups": groups,
            "cached": [name for name in names if name not in cold]}
