"""The command line's use of the engine, shared by ``ioc.commands.cli`` and
``ioc.commands.demo``: compiling the kernels a command runs before it runs them (announced
on stderr with the usual time, a stop during a compile remembered) and checking the
structured Jacobians against central finite differences (``cmtm check-jacobians`` and the
demo's Table 6)."""
import sys
import threading
from contextlib import contextmanager

import numpy as np

import cmtm

DEFAULT_TOLERANCE = 1e-6
"""Relative (max-abs / max|J|) bound for structured vs central FD: FD truncation and
round-off with step eps**(1/3) leave about 1e-9..1e-7 (paper Table 6, cmtm_math.md §12)."""


def check_jacobians_units(order):
    """The units of ``cmtm.precompile`` whose kernels ``check-jacobians --order k`` runs:
    those of the structured Jacobians of every quantity, and those of the finite
    differences of ``cmtm.reference.fd_jacobian`` (motion, link transforms and, for the
    joint torque at order 0, the RNEA of ``cmtm.inverse_dynamics``)."""
    fd = ["motion", "link transform derivatives", *(["inverse dynamics"] if order == 0 else [])]
    return [*cmtm.compile_cache.jacobian_units(cmtm.QUANTITIES, order), *fd]


def jacobian_discrepancies(model, order, n_samples, seed):
    """Per quantity: max |J|, max |J - J_fd| and their ratio, structured vs central FD.
    The kernels it runs are compiled first, in parallel processes when neither this process
    nor Numba's disk cache has them (``cmtm.precompile``)."""
    check_samples_fit(model, order, n_samples)
    precompile(check_jacobians_units(order), "check-jacobians")
    rng = np.random.default_rng(seed)
    q_stack = rng.uniform(-1.0, 1.0, size=(n_samples, order + 3, model.nv))
    structured = cmtm.jacobians(model, q_stack, cmtm.QUANTITIES, order=order)
    rows = []
    for name in cmtm.QUANTITIES:
        J = structured[name]
        J_fd = cmtm.reference.fd_jacobian(model, q_stack[:, :J.shape[3]], name, order=order)
        scale = float(np.max(np.abs(J_fd)))
        error = float(np.max(np.abs(J - J_fd)))
        rows.append({"quantity": name, "shape": list(J.shape[1:]), "max_abs_J": scale,
                     "max_abs_diff": error, "rel_diff": error / scale if scale > 0 else error})
    return rows


def check_samples_fit(model, order, n_samples):
    """ValueError unless the structured and the finite-difference Jacobians of every
    quantity for ``n_samples`` samples fit in the engine's memory budget together."""
    cmtm.api.reserve("--samples", n_samples,
                     2 * cmtm.jacobians_nbytes(model, cmtm.QUANTITIES, order),
                     "lower --samples to at most {chunk}")


def precompile(units, command, quiet=False):
    """``cmtm.precompile(units=units)``, announced (:func:`announce_compile`)."""
    announce_compile(command, units, quiet=quiet)
    with compiling():
        cmtm.precompile(units=units)


stopped_compile = threading.Event()
"""Set when an exception (a stop signal's) left Numba's compiler in this process: LLVM's
state may then crash the interpreter's teardown (a segmentation fault after the line
'interrupted', 1 run in 7 measured), so ``ioc.commands.cli.main`` ends such a process at once."""


@contextmanager
def compiling():
    """Mark the code inside as compiling the engine's kernels (see stopped_compile)."""
    try:
        yield
    except BaseException:
        stopped_compile.set()
        raise


def announce_compile(command, units=None, jobs=None, quiet=False):
    """Say on stderr (unless ``quiet``) which kernels ``cmtm.precompile(jobs, units)``
    will compile and how long that usually takes, when any is not compiled yet."""
    notice = None if quiet else compile_notice(units, jobs)
    if notice:
        print(f"cmtm {command}: {notice}", file=sys.stderr, flush=True)


def compile_notice(units=None, jobs=None):
    """What a cold ``cmtm.precompile(jobs, units)`` (None: every unit) compiles and how
    long that usually takes, or None when every unit is compiled or cached already. The
    time: the longest process's share of the units' cold compile times of
    ``cmtm.compile_cache.UNITS`` (measured on a slow day of this project's 2-core host),
    from half of it (an idle machine: 0.58-0.75 of it measured) to all of it."""
    cache = cmtm.compile_cache
    cold = [name for name in cache.check_units(units) if not cache.unit_ready(name)]
    if not cold:
        return None
    groups = cache.balanced_groups(cache.check_jobs(jobs, len(cold)),
                                   {name: cache.UNITS[name] for name in cold})
    seconds = max(sum(cache.UNITS[name].seconds for name in group) for group in groups)
    return (f"compiling the engine's kernels ({', '.join(cold)}) in {len(groups)} "
            f"process(es), once: usually {5 * max(1, round(seconds / 10))}-"
            f"{5 * max(2, round(seconds / 5))} s on a 2-core machine, longer on busy cores; "
            f"later runs load them from Numba's disk cache")
