"""The command line's syntax, shared by its commands: argparse whose errors are one line,
and the types and arguments of its options (numbers, lists, joint locks and values, limits,
windows, the model arguments), which ``ioc.commands.cli`` builds its parser from; loads no
solver."""
import argparse
import re

import numpy as np

import kinematic_trees as kt


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line ``PROG: error: MESSAGE`` (no usage), exit 2, and
    which takes a value starting with a minus and a digit as a value (``--limits -1,1``,
    ``--goal -1.57,-1``), as Python 3.13's argparse does."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"-\.?\d")

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def integer_at_least(minimum, maximum=None):
    """argparse type: an integer >= ``minimum`` (and <= ``maximum`` unless None)."""
    wanted = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"expected an integer {wanted}, got {text!r}")
        return value
    return parse


def float_list(text):
    """argparse type: comma-separated numbers, '1.5,-0.5' -> [1.5, -0.5]."""
    try:
        return [float(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") \
            from None


def positive_float(text):
    """argparse type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (np.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def limits_option(text):
    """argparse type: 'model', 'none' or 'LO,HI' (the same bounds for every joint)."""
    if text in ("model", "none"):
        return text
    try:
        lower, upper = (float(item) for item in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected model, none or LO,HI, got {text!r}") \
            from None
    return lower, upper


def window_option(text):
    """argparse type: 'T0,T1' -> (T0, T1), seconds with T0 < T1."""
    try:
        t0, t1 = (float(item) for item in text.split(","))
    except ValueError:
        t0 = t1 = float("nan")
    if not (np.isfinite(t0) and np.isfinite(t1) and t0 < t1):
        raise argparse.ArgumentTypeError(f"expected T0,T1 in s with T0 < T1, got {text!r}")
    return t0, t1


def add_model_arguments(command, required=True, note=""):
    command.add_argument("--model", required=required,
                         help="two_link_planar, chainN (e.g. chain3), panda, human (36 "
                              "joints, pelvis fixed, y-up) or a URDF file" + note)
    command.add_argument("--floating-base", choices=kt.FLOATING_BASES, metavar="ORDER",
                         help="free the model's root: six virtual joints, translations then "
                              "rotations in this order, one of " + ", ".join(kt.FLOATING_BASES)
                              + " (e.g. xyz_zxy for the human's pelvis)")
    command.add_argument("--gravity", type=gravity_option, metavar="GX,GY,GZ",
                         help="gravity in the base frame, m/s^2 (default: the model's own, "
                              "(0, -9.81, 0) for the human and two_link_planar, else "
                              "(0, 0, -9.81))")
    command.add_argument("--lock", type=parse_lock, action="append", default=[],
                         metavar="JOINT=VALUE", help="fix a joint at a position (repeatable)")


def add_joints_argument(command, others):
    """--joints of optimize and ioc; ``others`` says where the other joints are fixed."""
    command.add_argument("--joints", type=names_option, metavar="J1,J2,...",
                         help="keep only these joints movable; the others are fixed at their "
                              f"--lock value, else {others}")


def parse_lock(text):
    """'name=value' -> (name, float)."""
    name, sep, value = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected joint=value, got {text!r}") from None


def gravity_option(text):
    """argparse type: 'GX,GY,GZ' -> three finite numbers (m/s^2)."""
    try:
        values = tuple(float(item) for item in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 3 or not all(np.isfinite(values)):
        raise argparse.ArgumentTypeError(f"expected three finite numbers GX,GY,GZ (m/s^2), "
                                         f"got {text!r}")
    return values


def names_option(text):
    """argparse type: 'J1,J2,...' -> a list of one or more names."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected names J1,J2,... (no empty one), got "
                                         f"{text!r}")
    return names


def joint_values_option(text):
    """argparse type of --start and --goal: one value, one per joint ('1,2,3') or
    JOINT=VALUE pairs ('elbow=1.2,wrist=-0.3', a dict; the other joints at 0)."""
    if "=" not in text:
        return float_list(text)
    try:
        return dict(parse_lock(item) for item in text.split(","))
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected one value, one per joint or JOINT=VALUE "
                                         f"pairs, got {text!r}") from None
