"""The ``cmtm`` command line (DESIGN.md: a contract).

    cmtm check-jacobians --model M --order k [--samples N] [--seed S] [--tolerance T] [--json]
    cmtm optimize --model M --costs NAME[,NAME...] --weights W[,W...] [--out DIR] [--json]

Models: a built-in name (``two_link_planar``, ``chainN`` such as ``chain3``, ``panda``) or
a URDF path (``--lock joint=value`` fixes joints such as gripper fingers). Every command
exits 2 with a one-line error on bad input (argparse's own errors included); ``--json``
prints one JSON object.
"""
import argparse
import json
import re
import sys
from importlib.util import find_spec
from pathlib import Path

import numpy as np

import cmtm
from ioc.costs import split_names
from ioc.direct import check_weights, solve
from ioc.models import resolve_model
from ioc.problem import CONSTRAINT_MODES, INTEGRATION_RULES, MotionProblem
from ioc.results import motion_samples, result_record, to_json, write_result

DEFAULT_TOLERANCE = 1e-6
"""Relative (max-abs / max|J|) bound for structured vs central FD: FD truncation and
round-off with step eps**(1/3) leave about 1e-9..1e-7 (paper Table 6, cmtm_math.md §12)."""


def parse_lock(text):
    """'name=value' -> (name, float)."""
    name, sep, value = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected joint=value, got {text!r}") from None


def jacobian_discrepancies(model, order, n_samples, seed):
    """Per quantity: max |J|, max |J - J_fd| and their ratio, structured vs central FD."""
    rng = np.random.default_rng(seed)
    q_stack = rng.uniform(-1.0, 1.0, size=(n_samples, order + 3, model.nv))
    structured = cmtm.jacobians(model, q_stack, cmtm.QUANTITIES, order=order)
    rows = []
    for name in cmtm.QUANTITIES:
        J = structured[name]
        J_fd = cmtm.reference.fd_jacobian(model, q_stack[:, :J.shape[3]], name, order=order)
        scale = float(np.max(np.abs(J_fd)))
        error = float(np.max(np.abs(J - J_fd)))
        rows.append({"quantity": name, "shape": list(J.shape[1:]), "max_abs_J": scale,
                     "max_abs_diff": error, "rel_diff": error / scale if scale > 0 else error})
    return rows


def check_jacobians(args):
    """Structured Jacobians vs central finite differences (the paper's Table 6 layout)."""
    model = resolve_model(args.model, args.lock)
    rows = jacobian_discrepancies(model, args.order, args.samples, args.seed)
    failed = [r["quantity"] for r in rows if not r["rel_diff"] <= args.tolerance]
    if args.json:
        print(json.dumps({"model": args.model, "nv": model.nv, "order": args.order,
                          "samples": args.samples, "tolerance": args.tolerance,
                          "rows": rows, "passed": not failed}))
    else:
        print(f"model {args.model} (nv={model.nv}), order {args.order}, {args.samples} "
              f"sample(s): structured vs central FD, tolerance {args.tolerance:g} relative")
        print(f"{'quantity':<22}{'max|J|':>12}{'max abs diff':>15}{'rel diff':>12}")
        for r in rows:
            print(f"{r['quantity']:<22}{r['max_abs_J']:>12.3e}{r['max_abs_diff']:>15.3e}"
                  f"{r['rel_diff']:>12.3e}{'  FAIL' if r['quantity'] in failed else ''}")
        print("all within tolerance" if not failed else f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0



# --- cmtm optimize ------------------------------------------------------------------------

PAPER_START, PAPER_GOAL = 1.57, -1.57
"""Every joint from 1.57 rad to -1.57 rad: the paper's experiments."""


def optimize(args):
    """Optimize a motion for given cost weights (the direct problem) and write its files."""
    problem = build_problem(args)
    weights = check_weights(args.weights, len(problem.terms))
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise ValueError(f"--out: expected a folder, got the file {args.out}")
    result = solve(problem, weights, progress=None if args.quiet else print_progress)
    record = result_record(result, args.model, dict(args.lock))
    written = [] if args.out is None else write_outputs(args, result, record)
    if args.json:
        print(to_json(record))
    else:
        print_summary(result, written)
    return 0 if result.status == "converged" else 1


def build_problem(args):
    """The MotionProblem of the command line (ValueError on any bad value)."""
    return MotionProblem(
        resolve_model(args.model, args.lock), args.costs, duration=args.duration,
        samples=args.samples, degree=args.degree, control_points=args.control_points,
        start=args.start, goal=args.goal, rest_order=args.rest_order,
        integration=args.integration, limits=args.limits, constraints=args.constraints)


def write_outputs(args, result, record):
    """result.json, trajectory.csv, motion.npz and, with matplotlib, the PNG plots."""
    motion = motion_samples(result)
    paths = write_result(args.out, record, motion)
    if find_spec("matplotlib") is None:
        if not args.quiet:
            print(f"cmtm {args.command}: notice: matplotlib is not installed (the 'plot' "
                  f"extra), so no plots", file=sys.stderr)
        return paths
    from ioc.plots import plot_motion
    return paths + plot_motion(args.out, motion)


def print_progress(entry):
    """One solver iteration on stderr."""
    print(f"iteration {entry['iteration']:4d}  {entry['mode']:<12}  cost {entry['cost']:.12e}"
          f"  step {entry['step']:.3e}  stationarity {entry['stationarity']:.3e}",
          file=sys.stderr)


def print_summary(result, written):
    """Status, time, cost per term and stationarity on stdout."""
    print(f"{result.status} after {result.iterations} iterations in "
          f"{result.solve_seconds:.3g} s; cost {result.cost:.12e}, stationarity "
          f"{result.stationarity_rel:.2e} relative ({result.stationarity_abs:.2e} absolute)")
    print(f"  {'term':<24}{'weight':>12}{'raw':>20}{'weighted':>20}")
    for term in result.terms():
        print(f"  {term['name']:<24}{term['weight']:>12.6g}{term['raw']:>20.12e}"
              f"{term['weighted']:>20.12e}")
    if result.multipliers:
        print(f"  {len(result.multipliers)} active joint limit(s)")
    if written:
        print(f"wrote {', '.join(str(path) for path in written)}")


# --- command-line syntax ------------------------------------------------------------------

class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line ``PROG: error: MESSAGE`` (no usage), exit 2, and
    which takes a value starting with a minus and a digit as a value (``--limits -1,1``,
    ``--goal -1.57,-1``), as Python 3.13's argparse does."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"-\.?\d")

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def integer_at_least(minimum):
    """argparse type: an integer >= ``minimum``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value
    return parse


def float_list(text):
    """argparse type: comma-separated numbers, '1.5,-0.5' -> [1.5, -0.5]."""
    try:
        return [float(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") \
            from None


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


def add_model_arguments(command):
    command.add_argument("--model", required=True,
                         help="two_link_planar, chainN (e.g. chain3), panda or a URDF file")
    command.add_argument("--lock", type=parse_lock, action="append", default=[],
                         metavar="JOINT=VALUE", help="fix a joint at a position (repeatable)")


def add_optimize(commands):
    """The ``optimize`` subcommand; defaults are the paper's."""
    command = commands.add_parser(
        "optimize", help=optimize.__doc__, description=optimize.__doc__,
        epilog="Exit status: 0 converged, 1 solved without converging (files written all "
               "the same), 2 bad input (nothing written).")
    add_model_arguments(command)
    command.add_argument("--costs", type=split_names, required=True, metavar="NAME[,NAME...]",
                         help="sub-costs, e.g. joint_velocity,joint_jerk,joint_torque")
    command.add_argument("--weights", type=float_list, required=True, metavar="W[,W...]",
                         help="one non-negative weight per cost")
    command.add_argument("--duration", type=float, default=2.0, metavar="T",
                         help="motion duration in s (default %(default)s)")
    command.add_argument("--samples", type=integer_at_least(2), default=200, metavar="N",
                         help="quadrature samples, limit nodes and output rows (default "
                              "%(default)s)")
    command.add_argument("--degree", type=integer_at_least(3), default=5, metavar="P",
                         help="B-spline degree, >= 3 since motion.npz holds q''' (default "
                              "%(default)s)")
    command.add_argument("--control-points", type=integer_at_least(1), default=50,
                         metavar="NC", help="B-spline control points (default %(default)s)")
    command.add_argument("--start", type=float_list, default=[PAPER_START], metavar="Q0",
                         help="q(0): one value for all joints or one per joint, rad (default "
                              f"{PAPER_START}, the paper's)")
    command.add_argument("--goal", type=float_list, default=[PAPER_GOAL], metavar="Q1",
                         help="q(T): one value for all joints or one per joint, rad (default "
                              f"{PAPER_GOAL}, the paper's)")
    command.add_argument("--rest-order", type=integer_at_least(0), default=1, metavar="R",
                         help="q' .. q^(R) vanish at both ends, R < degree (default "
                              "%(default)s)")
    command.add_argument("--integration", choices=INTEGRATION_RULES, default="samples",
                         help="cost quadrature (default %(default)s)")
    command.add_argument("--limits", type=limits_option, default="model",
                         metavar="model|none|LO,HI",
                         help="joint limits: the model's, none, or LO,HI for all joints "
                              "(default %(default)s)")
    command.add_argument("--constraints", choices=CONSTRAINT_MODES, default="exact",
                         help="boundary conditions fixed exactly or as penalties (default "
                              "%(default)s)")
    command.add_argument("--out", type=Path, metavar="DIR",
                         help="write result.json, trajectory.csv, motion.npz and the plots")
    command.add_argument("--json", action="store_true",
                         help="print the result.json object on stdout instead of a summary")
    command.add_argument("--quiet", action="store_true",
                         help="no progress or notices on stderr")
    command.set_defaults(run=optimize, parser=command)


def add_check_jacobians(commands):
    """The ``check-jacobians`` subcommand."""
    command = commands.add_parser("check-jacobians", help=check_jacobians.__doc__)
    add_model_arguments(command)
    command.add_argument("--order", type=integer_at_least(0), required=True)
    command.add_argument("--samples", type=integer_at_least(1), default=1)
    command.add_argument("--seed", type=int, default=0)
    command.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE)
    command.add_argument("--json", action="store_true")
    command.set_defaults(run=check_jacobians, parser=command)


def build_parser():
    parser = OneLineParser(prog="cmtm", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    add_check_jacobians(commands)
    add_optimize(commands)
    return parser


def main(argv=None):
    """Run ``cmtm``; returns the exit status (argparse's errors exit 2 by SystemExit)."""
    args, unknown = build_parser().parse_known_args(argv)
    if unknown:
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return args.run(args)
    except (ValueError, OSError) as error:
        print(f"cmtm {args.command}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
