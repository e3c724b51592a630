"""The timing loop shared by the benchmarks."""
import time

import numpy as np


def best_seconds(call, repeats, warm_up=1, min_seconds=0.0):
    """Best wall time of ``call()`` over at least ``repeats`` calls and ``min_seconds`` of
    calls, after ``warm_up`` untimed ones; returns (seconds, the last call's result)."""
    result = None
    for _ in range(warm_up):
        result = call()
    best, calls, until = np.inf, 0, time.perf_counter() + min_seconds
    while calls < repeats or time.perf_counter() < until:
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
        calls += 1
    return best, result
