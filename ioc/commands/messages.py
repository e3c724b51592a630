"""One-line messages of the command line and its workers: an exception's message on one
line, and the warnings a command raised, recorded instead of printed (numpy's floating
point warnings, matplotlib's missing glyphs, joblib's cancelled tasks) so that bad input
is exactly one line on stderr. A light module: the parser loads it at every start."""
import warnings
from contextlib import contextmanager


def one_line(error):
    """An exception's (or a warning's) message on one line."""
    return " ".join(str(error).split())


@contextmanager
def recorded_warnings():
    """Record the warnings that the filters in force would print (Python's defaults: each
    once per place, deprecations hidden) instead of printing them; a filter that makes a
    warning an error still does (pytest's ``-W error`` keeps failing on them). Yields a
    list that receives the distinct messages (one line each, in order) when the context
    ends."""
    texts = []
    with warnings.catch_warnings(record=True) as caught:
        try:
            yield texts
        finally:
            texts.extend(dict.fromkeys(one_line(warning.message) for warning in caught))
