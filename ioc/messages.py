"""One-line messages of the command line and its workers: an exception's message on one
line, and the warnings a command raised, recorded instead of printed (numpy's floating
point warnings, matplotlib's missing glyphs, joblib's cancelled tasks) so that bad input
is exactly one line on stderr. A light module: the parser loads it at every start."""
import warnings
from contextlib import contextmanager

QUIET_CATEGORIES = (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                    ResourceWarning)
"""Categories that Python's default filters hide outside ``__main__``: hidden here too."""


def one_line(error):
    """An exception's (or a warning's) message on one line."""
    return " ".join(str(error).split())


@contextmanager
def recorded_warnings():
    """Record every warning raised in the context instead of printing or raising it,
    whatever the caller's filters (pytest's ``error`` included), but for
    QUIET_CATEGORIES; yields a list that receives the distinct messages (one line each,
    in order) when the context ends."""
    texts = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for category in QUIET_CATEGORIES:
            warnings.simplefilter("ignore", category)
        try:
            yield texts
        finally:
            texts.extend(dict.fromkeys(one_line(warning.message) for warning in caught))
