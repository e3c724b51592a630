"""One BLAS thread for the optimization layer's small dense and banded linear algebra.

The banded Cholesky factors and small solves of a spline problem take microseconds; with
OpenBLAS's threads they wait for the thread pool instead (measured on 2 busy cores: 18 ms
against 0.09 ms for a 30x30 band of width 18). ``single_threaded_blas`` limits BLAS to one
thread for the duration of a call, entering threadpoolctl's context once at the outermost
call, through one ThreadpoolController made at the first call (``threadpool_limits``
looks the libraries up again at every call: 0.5-16 ms on 2 busy cores, against 25-80 us
for the kept controller's ``limit``).
"""
import functools
import threading

from threadpoolctl import ThreadpoolController

_depth = threading.local()


@functools.cache
def _controller():
    """The process's ThreadpoolController (the BLAS libraries loaded by then: numpy's and
    scipy's, which ioc imports)."""
    return ThreadpoolController()


def single_threaded_blas(function):
    """Decorator: run ``function`` with BLAS limited to one thread."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if getattr(_depth, "value", 0):
            return function(*args, **kwargs)
        _depth.value = 1
        try:
            with _controller().limit(limits=1, user_api="blas"):
                return function(*args, **kwargs)
        finally:
            _depth.value = 0
    return wrapper
