"""Locate the URDF files of the installed example-robot-data distribution (a test extra).

``kinematic_trees.example_robots_dir`` asks the distribution metadata, then every
site-packages directory. A missing distribution is an error here, not a skip, because the
test extra (``pip install -e .[test]``) installs it; only the corpus walk
(test_robot_corpus.py) skips without it.
"""
from pathlib import Path

import kinematic_trees as kt

_URDF = {
    "panda": Path("panda_description", "urdf", "panda.urdf"),
    "human": kt.example_robots.HUMAN_URDF,
}


def urdf_path(name):
    """Path of the "panda" or "human" URDF inside example-robot-data."""
    if name not in _URDF:
        raise ValueError(f"urdf_path: expected one of {sorted(_URDF)}, got {name!r}")
    path = kt.example_robots_dir() / _URDF[name]
    if not path.is_file():
        raise FileNotFoundError(f"example-robot-data has no {_URDF[name]}; install the test "
                                "extra: pip install -e '.[test]'")
    return path
