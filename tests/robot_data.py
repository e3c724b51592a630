"""Locate the URDF files of the installed example-robot-data distribution (a test extra).

No hard-coded paths: the distribution's metadata is asked first, then every site-packages
directory is searched. A missing distribution is an error, not a skip, because the test
extra (``pip install -e .[test]``) installs it.
"""
import importlib.metadata
import site
import sys
from pathlib import Path

_ROBOTS = Path("cmeel.prefix", "share", "example-robot-data", "robots")
_URDF = {
    "panda": Path("panda_description", "urdf", "panda.urdf"),
    "human": Path("human_description", "robots", "human.urdf"),
}


def urdf_path(name):
    """Path of the "panda" or "human" URDF inside example-robot-data."""
    if name not in _URDF:
        raise ValueError(f"urdf_path: expected one of {sorted(_URDF)}, got {name!r}")
    for robots in _candidate_robot_dirs():
        path = robots / _URDF[name]
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"example-robot-data's {_URDF[name]} was not found (searched the distribution "
        f"metadata and site-packages under {sys.prefix}); install the test extra: "
        "pip install -e '.[test]'")


def _candidate_robot_dirs():
    """Directories that may hold example-robot-data's robots/, most specific first."""
    try:
        yield Path(importlib.metadata.distribution("example-robot-data").locate_file(_ROBOTS))
    except importlib.metadata.PackageNotFoundError:
        pass
    for packages in site.getsitepackages() + [site.getusersitepackages()]:
        yield Path(packages) / _ROBOTS
