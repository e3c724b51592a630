"""The ``cmtm`` command line (DESIGN.md: a contract).

    cmtm check-jacobians --model M --order k [--samples N] [--seed S] [--tolerance T] [--json]

Models: a built-in name (``two_link_planar``, ``chainN`` such as ``chain3``, ``panda``) or
a URDF path (``--lock joint=value`` fixes joints such as gripper fingers). Every command
exits non-zero with a one-line error on bad input; ``--json`` prints one JSON object.
"""
import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

import cmtm
import kinematic_trees as kt

DEFAULT_TOLERANCE = 1e-6
"""Relative (max-abs / max|J|) bound for structured vs central FD: FD truncation and
round-off with step eps**(1/3) leave about 1e-9..1e-7 (paper Table 6, cmtm_math.md §12)."""


def resolve_model(spec, lock=()):
    """CompiledTree for a built-in name or a URDF path; ValueError on anything else."""
    if spec == "two_link_planar":
        return kt.compile_tree(kt.two_link_planar(), gravity=(0.0, -9.81, 0.0))
    if spec == "panda":
        return kt.compile_tree(kt.panda())
    chain = re.fullmatch(r"chain(\d+)", spec)
    if chain and int(chain.group(1)) >= 1:
        return kt.compile_tree(kt.serial_chain(int(chain.group(1))))
    if Path(spec).is_file():
        return kt.compile_tree(kt.load_urdf(Path(spec), lock=dict(lock)))
    raise ValueError(f"--model: expected two_link_planar, chainN (N >= 1), panda or a URDF "
                     f"file, got {spec!r}")


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


def nonnegative_int(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text}")
    return value


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def build_parser():
    parser = argparse.ArgumentParser(prog="cmtm", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check-jacobians", help=check_jacobians.__doc__)
    check.add_argument("--model", required=True)
    check.add_argument("--order", type=nonnegative_int, required=True)
    check.add_argument("--samples", type=positive_int, default=1)
    check.add_argument("--seed", type=int, default=0)
    check.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE)
    check.add_argument("--lock", type=parse_lock, action="append", default=[],
                       metavar="JOINT=VALUE")
    check.add_argument("--json", action="store_true")
    check.set_defaults(run=check_jacobians)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except ValueError as error:
        print(f"cmtm {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
