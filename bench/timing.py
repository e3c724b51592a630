"""The timing loop and the call clocks shared by the benchmarks."""
import functools
import time
from contextlib import contextmanager

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


class Clock:
    """Wall time spent inside the callables it wraps and the number of calls (outermost
    calls only, so a wrapped function calling another wrapped one is not counted twice)."""

    def __init__(self):
        self.seconds = 0.0
        self.calls = 0
        self._depth = 0

    def wrap(self, function):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            if self._depth:
                return function(*args, **kwargs)
            self._depth += 1
            self.calls += 1
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self._depth -= 1
        return timed


@contextmanager
def clocked(targets):
    """{label: Clock} while every (owner, attribute) of ``targets`` ({label: [(owner,
    attribute), ...]}) is wrapped by its label's clock (a missing attribute is skipped);
    the attributes are restored on exit. Owners may be modules, classes or dicts."""
    clocks, saved = {label: Clock() for label in targets}, []
    try:
        for label, places in targets.items():
            for owner, name in places:
                getter = owner.get if isinstance(owner, dict) else \
                    (lambda key, owner=owner: getattr(owner, key, None))
                original = getter(name)
                if original is None:
                    continue
                saved.append((owner, name, original))
                wrapped = clocks[label].wrap(original)
                if isinstance(owner, dict):
                    owner[name] = wrapped
                else:
                    setattr(owner, name, wrapped)
        yield clocks
    finally:
        for owner, name, original in reversed(saved):
            if isinstance(owner, dict):
                owner[name] = original
            else:
                setattr(owner, name, original)
