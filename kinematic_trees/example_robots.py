"""Models from the ``example-robot-data`` package (optional: ``pip install example-robot-data``,
part of the test extra), located through the installed distribution, never by a fixed path.

    tree = human()                          # the 36-joint human, pelvis fixed, y-up
    tree = human(floating_base="xyz_zxy")   # pelvis free: 42 joints (6 virtual ones first)
"""
import importlib.metadata
import site
from pathlib import Path

from .graph import Y_UP_GRAVITY
from .urdf import load_urdf

_ROBOTS = Path("cmeel.prefix", "share", "example-robot-data", "robots")
HUMAN_URDF = Path("human_description", "robots", "human.urdf")
"""The human model inside example-robot-data's robots folder."""


def example_robots_dir():
    """The ``robots`` folder of the installed example-robot-data (one sub-folder per robot).

    Asks the distribution's metadata first, then looks in every site-packages directory;
    FileNotFoundError saying how to install it when neither has the folder.
    """
    for robots in _candidate_robot_dirs():
        if robots.is_dir():
            return robots
    raise FileNotFoundError("example-robot-data is not installed (its robots folder "
                            f"{_ROBOTS} is in no site-packages); pip install example-robot-data")


def _candidate_robot_dirs():
    """Folders that may be example-robot-data's robots folder, most specific first."""
    try:
        yield Path(importlib.metadata.distribution("example-robot-data").locate_file(_ROBOTS))
    except importlib.metadata.PackageNotFoundError:
        pass
    for packages in site.getsitepackages() + [site.getusersitepackages()]:
        yield Path(packages) / _ROBOTS


def human(floating_base=None, gravity=None):
    """example-robot-data's human: 36 revolute joints, three per hip, shoulder, ankle,
    wrist and trunk joint (each a chain about z, x, y through massless links), base link
    "middle_pelvis"; the model is y-up (OpenSim axes: x forward, y up, z to the right), so
    the tree carries gravity (0, -9.81, 0) (Y_UP_GRAVITY), along -y. Standing with the legs
    straight down (q = 0), the hips' flexion joints (``*_hip_Z``) then hold almost no
    torque.

    floating_base : None (the pelvis is the fixed base) or one of FLOATING_BASES;
        "xyz_zxy" is OpenSim's pelvis (tilt, list, rotation), singular only when the
        pelvis leans 90 deg sideways (``floating_base`` module).
    gravity : None (Y_UP_GRAVITY) or another gravity for the tree to carry, m/s^2.
    Raises FileNotFoundError when example-robot-data is not installed.

    >>> from kinematic_trees import compile_tree
    >>> model = compile_tree(human(floating_base="xyz_zxy"))
    >>> model.nv, model.joint_names[:6], model.link_names[5], round(float(model.mass[5]), 2)
    (42, ('middle_pelvis_tx', 'middle_pelvis_ty', 'middle_pelvis_tz', 'middle_pelvis_rz', \
'middle_pelvis_rx', 'middle_pelvis_ry'), 'middle_pelvis', 10.65)
    >>> model.gravity.tolist()
    [0.0, -9.81, 0.0]
    """
    return load_urdf(example_robots_dir() / HUMAN_URDF, floating_base=floating_base,
                     gravity=Y_UP_GRAVITY if gravity is None else gravity)
