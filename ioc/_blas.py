"""One BLAS thread for the optimization layer's small dense and banded linear algebra.

The banded Cholesky factors and small solves of a spline problem take microseconds; with
OpenBLAS's threads they wait for the thread pool instead (measured on 2 busy cores: 18 ms
against 0.09 ms for a 30x30 band of width 18). ``single_threaded_blas`` limits BLAS to one
thread for the duration of a call, at the outermost call only, through the libraries of one
ThreadpoolController made at the first call (``threadpool_limits`` looks the libraries up
again at every call: 0.5-16 ms on 2 busy cores, against 25-80 us for the kept controller's
``limit``, and 7 us for the libraries' own get and set of the count).
"""
import functools
import threading

from threadpoolctl import ThreadpoolController

_depth = threading.local()


@functools.cache
def _blas_libraries():
    """The BLAS libraries' controllers (threadpoolctl's LibController objects) of one
    ThreadpoolController made at the first call (the libraries loaded by then: numpy's and
    scipy's, which ioc imports), kept."""
    return tuple(lib for lib in ThreadpoolController().lib_controllers
                 if lib.user_api == "blas")


def single_threaded_blas(function):
    """Decorator: run ``function`` with BLAS limited to one thread, by each library's own
    get / set of its thread count (threadpoolctl's LibController), restored after; the
    controller's ``limit`` context does the same but first collects every library's
    description (version, path, ...): 18.6 against 7.2 us a call, one in the 1-2 ms
    solve of bench_peers' case (a), where after an IPOPT solve it took ~0.1 ms."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if getattr(_depth, "value", 0):
            return function(*args, **kwargs)
        _depth.value = 1
        libraries = _blas_libraries()
        saved = [lib.get_num_threads() for lib in libraries]
        try:
            for lib, threads in zip(libraries, saved):
                if threads != 1:
                    lib.set_num_threads(1)
            return function(*args, **kwargs)
        finally:
            for lib, threads in zip(libraries, saved):
                if threads != 1:
                    lib.set_num_threads(threads)
            _depth.value = 0
    return wrapper
