"""Hypothesis settings profiles, registered here at the repository root because pytest reads
``--hypothesis-profile`` before it imports any test module (tests/conftest.py is the Numba
cache's and the shared models' file).

    python -m pytest tests/test_fuzz.py                           # the default: ~20 s
    python -m pytest tests/test_fuzz.py --hypothesis-profile=long   # deeper searches

"long" gives every hypothesis test of the suite LONG_EXAMPLES examples and no deadline (the
fuzz tests run their own smaller counts otherwise, tests/test_fuzz.py).
"""
from hypothesis import settings

LONG_EXAMPLES = 2000
settings.register_profile("long", max_examples=LONG_EXAMPLES, deadline=None)
