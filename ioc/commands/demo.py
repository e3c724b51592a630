"""``cmtm demo [--out DIR] [--quick] [--json] [--quiet]``: the paper's §8.3 experiments and
its Table 6 on the built-in models, the README's main job.

* **Table 7**: the 3-DoF arm (``chain3``) optimized for the cost sets (a) joint velocity,
  acceleration and jerk, (b) + joint torque, (c) + torque rate with equal weights, and the
  Panda (``panda``) for (b)'s costs with weights (1, 1, 1, 0.01); T = 2 s, 200 samples,
  quintic spline with 50 control points, every joint 1.57 -> -1.57 rad at rest (order 1),
  limits [-pi, pi]. Each motion is solved (``ioc.optimize.direct.solve``) and its weights recovered
  by inverse KKT; the L1 error of the normalised weights must be <= 1e-9 (the paper's:
  2.56e-8, 6.87e-7, 3.89e-6, 1.07e-7).
* **Table 6**: the Panda's structured Jacobians against central finite differences, for
  every quantity of ``cmtm.QUANTITIES`` at orders 0, 1, 2 (max relative difference, within
  ``cmtm check-jacobians``' tolerance).

``--quick`` (CI): the three 3-DoF cases only, Table 6 at orders 0 and 1 on one sample.

Files in ``--out`` (default ``cmtm-demo``): ``demo.json`` {"table7": [{case, model, costs,
true, estimated, l1_error, paper_l1_error, solve_seconds, iterations, stationarity,
status}], "table6": {quantity: {"0": rel_diff, ...}}, "limits": [-pi, pi], "versions",
"quick"}; per case a
folder (case_a, case_b, case_c, panda) holding ``cmtm optimize``'s result.json,
trajectory.csv and motion.npz (inputs of ``cmtm ioc``) and, with the plot extra, its curves
(joint_angles.png, joint_velocities.png, joint_jerks.png, joint_torques.png,
joint_torque_rates.png) and with plotly its motion page motion.html (``cmtm view``);
fig7_3dof.png and fig9_panda.png (time curves) and fig6_3dof.png and fig8_panda.png
(snapshot strips) like the paper's Fig. 7, 9, 6 and 8. Exit status 0 when every check
passes, 1 otherwise (one line says which).
"""
import itertools
import sys
import time
from importlib.util import find_spec
from pathlib import Path
from typing import NamedTuple

import numpy as np

import cmtm
import ioc
from ioc.commands.engine import DEFAULT_TOLERANCE, compile_notice, compiling, jacobian_discrepancies
from ioc.commands.outputs import write_motion_files
from ioc.files.models import PAPER_GOAL, PAPER_START, resolve_model

results = ioc.lazy_module("ioc.files.results")    # loaded when the demo runs, not by the parser

PAPER = dict(duration=2.0, samples=200, degree=5, control_points=50, start=PAPER_START,
             goal=PAPER_GOAL, rest_order=1, limits=(-np.pi, np.pi))
"""The paper's §8.3 setting of every case (MotionProblem keywords). Its limits, [-pi, pi]
on every joint, replace the models' own: the Panda's exclude 1.57 for panda_joint4
([-3.07, -0.07]) and -1.57 for panda_joint6 ([-0.02, 3.75]); ``cmtm optimize`` keeps a
model's limits and moves such joints' start and goal inside (ioc.files.models.default_boundary)."""
LIMITS_NOTE = ("every joint 1.57 -> -1.57 rad, limits [-pi, pi]: the paper's, not the "
               "Panda's own")
"""What the demo says of the limits it uses."""
COSTS = ("joint_velocity", "joint_acceleration", "joint_jerk", "joint_torque",
         "joint_torque_rate")
L1_TOLERANCE = 1e-9
"""Bound on the L1 error of the recovered weights: the optima are exact to ~1e-13."""


class DemoCase(NamedTuple):
    """One row of Table 7: folder name, model spec, cost names, true weights, paper's L1."""
    name: str
    model: str
    costs: tuple
    weights: tuple
    paper_l1_error: float


CASES = (DemoCase("case_a", "chain3", COSTS[:3], (1.0,) * 3, 2.56e-8),
         DemoCase("case_b", "chain3", COSTS[:4], (1.0,) * 4, 6.87e-7),
         DemoCase("case_c", "chain3", COSTS, (1.0,) * 5, 3.89e-6),
         DemoCase("panda", "panda", COSTS[:4], (1.0, 1.0, 1.0, 0.01), 1.07e-7))


class Plan(NamedTuple):
    """What a run computes: Table 7 cases, Table 6 orders and samples (on the Panda)."""
    cases: tuple
    orders: tuple
    samples: int


FULL = Plan(CASES, (0, 1, 2), 10)
QUICK = Plan(CASES[:3], (0, 1), 1)
TABLE6_MODEL, TABLE6_SEED = "panda", 0
FIGURES = (("fig7_3dof.png", ("case_a", "case_b", "case_c")), ("fig9_panda.png", ("panda",)))
"""Time-curve figures (file, cases in its rows), written when all their cases ran."""
SNAPSHOT_FIGURES = (("fig6_3dof.png", ("case_a", "case_b", "case_c")),
                    ("fig8_panda.png", ("panda",)))
"""Snapshot strips (file, cases in its rows) like the paper's Fig. 6 and 8."""


def demo(args):
    """The paper's Table 7 (direct then inverse optimization) and Table 6 (structured vs
    finite-difference Jacobians), with their files and figures."""
    with results.output_folder(args.out):
        record = run_demo(args)
    path = args.out / "demo.json"
    report = sys.stderr if args.json else sys.stdout
    print_tables(record, QUICK if args.quick else FULL, report)
    print(f"demo.json written to {path}", file=report)
    if args.json:
        print(results.to_json(record))
    failed = failures(record)
    if failed:
        print(f"cmtm demo: FAILED: {'; '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def run_demo(args):
    """Compute the tables into ``args.out`` (a folder ready to write into) and write
    demo.json; returns its record."""
    plan = QUICK if args.quick else FULL
    plots = plotting(args.quiet)
    step = progress(len(plan.cases) + len(plan.orders) + 2 + bool(plots), args.quiet)
    step(compile_notice() or "the engine's kernels: loading them from Numba's disk cache")
    with compiling():
        cmtm.precompile()   # the solve times below then exclude compilation
    table7, motions = run_cases(plan.cases, args.out, plots, step)
    table6 = jacobian_table(plan, step)
    if plots:
        step("summary figures")
        write_figures(plots, args.out, motions)
    step("writing demo.json")
    record = {"table7": table7, "table6": table6, "limits": [-np.pi, np.pi],
              "versions": results.versions(), "quick": args.quick}
    results.write_atomically(args.out / "demo.json",
                             lambda file: file.write(results.to_json(record) + "\n"))
    return record


def progress(total, quiet):
    """A function printing one numbered line per step on stderr (nothing when quiet)."""
    count, started = itertools.count(1), time.perf_counter()

    def step(label):
        number = next(count)
        if not quiet:
            print(f"cmtm demo: [{number}/{total}] {time.perf_counter() - started:5.1f} s  "
                  f"{label}", file=sys.stderr, flush=True)
    return step


def plotting(quiet):
    """ioc.show.plots, or None (with a notice unless quiet) when matplotlib is not installed."""
    if find_spec("matplotlib") is None:
        if not quiet:
            print("cmtm demo: notice: matplotlib is not installed (the 'plot' extra), so no "
                  "plots", file=sys.stderr)
        return None
    from ioc.show import plots
    return plots


# --- Table 7 -------------------------------------------------------------------------------

def run_cases(cases, out, plots, step):
    """Run every case (:func:`run_case`); returns (Table 7 entries, {name: (DemoCase,
    MotionSamples)})."""
    table7, motions = [], {}
    for case in cases:
        step(f"{case.name}: {case.model}, {LIMITS_NOTE if case is cases[0] else 'same limits'}: "
             f"optimizing the motion, recovering the weights")
        entry, motion, result = run_case(case, out, plots)
        table7.append(entry)
        motions[case.name] = case, motion, result
    return table7, motions


def run_case(case, out, plots):
    """Optimize ``case``, recover its weights and write its folder; returns (Table 7 entry,
    ioc.files.results.MotionSamples, ioc.optimize.direct.DirectResult)."""
    problem = ioc.MotionProblem(resolve_model(case.model), case.costs, **PAPER)
    result = ioc.solve(problem, case.weights)
    estimated = ioc.recover_weights(problem, result.theta).weights
    true = np.asarray(case.weights) / np.sum(case.weights)
    motion = results.motion_samples(result)
    write_motion_files(out / case.name, result, results.result_record(result, case.model, {}),
                       motion, case.model, plots is not None, find_spec("plotly") is not None)
    entry = {"case": case.name, "model": case.model, "costs": list(case.costs),
             "true": true.tolist(), "estimated": estimated.tolist(),
             "l1_error": float(np.sum(np.abs(estimated - true))),
             "paper_l1_error": case.paper_l1_error, "solve_seconds": result.solve_seconds,
             "iterations": result.iterations, "stationarity": result.stationarity_rel,
             "status": result.status}
    return entry, motion, result


def write_figures(plots, out, motions):
    """The summary figures of FIGURES and SNAPSHOT_FIGURES whose cases all ran
    (``motions``: case name -> (DemoCase, MotionSamples, DirectResult))."""
    for name, cases in FIGURES:
        if all(case in motions for case in cases):
            rows = [motions[case] for case in cases]
            model = rows[0][2].problem.model
            plots.plot_grid(out / name, [motion for _, motion, _ in rows], model,
                            [case_title(case) for case, _, _ in rows],
                            f"{rows[0][0].model}: joint angles and torques")
    for name, cases in SNAPSHOT_FIGURES:
        if all(case in motions for case in cases):
            rows = []
            for case, _, result in (motions[case] for case in cases):
                times = plots.snapshot_times(result.problem.spline.duration)
                rows.append((case_title(case), result.problem.model, times,
                             result.sample(times, 0)[:, 0]))
            plots.plot_snapshots(out / name, rows, f"{motions[cases[0]][0].model}: "
                                                   f"snapshots of the optimized motion")


def case_title(case):
    """A row's title: the case and its weighted costs."""
    return f"{case.name}: " + ", ".join(f"{name.removeprefix('joint_')} {weight:g}"
                                        for name, weight in zip(case.costs, case.weights))


# --- Table 6 -------------------------------------------------------------------------------

def jacobian_table(plan, step):
    """{quantity: {order (str): max relative difference}} of the Panda's structured
    Jacobians against central finite differences."""
    model = resolve_model(TABLE6_MODEL)
    table = {name: {} for name in cmtm.QUANTITIES}
    for order in plan.orders:
        step(f"Table 6: {TABLE6_MODEL} Jacobians at order {order} against finite differences")
        for row in jacobian_discrepancies(model, order, plan.samples, TABLE6_SEED):
            table[row["quantity"]][str(order)] = row["rel_diff"]
    return table


# --- summary -------------------------------------------------------------------------------

def weights_text(weights):
    """Weights with six decimals, as in the paper's Table 7."""
    return " ".join(f"{w:.6f}" for w in weights)


def scientific(value):
    """Three significant digits in scientific notation."""
    return f"{value:.2e}"


TABLE7_COLUMNS = (("case", "case", str), ("model", "model", str),
                  ("true weights", "true", weights_text),
                  ("estimated weights", "estimated", weights_text),
                  ("L1 error", "l1_error", scientific),
                  ("paper L1", "paper_l1_error", scientific),
                  ("solve (s)", "solve_seconds", "{:.2f}".format),
                  ("iterations", "iterations", str), ("stationarity", "stationarity", scientific))
"""(header, Table 7 entry key, format) of the printed Table 7, columns two spaces apart."""


def print_tables(record, plan, file):
    """Table 7 and Table 6 of ``record`` (demo.json), columns two or more spaces apart."""
    print("Table 7: cost weights (normalised to sum 1) recovered by inverse KKT from the "
          f"optimized motions ({LIMITS_NOTE}); L1 error <= {L1_TOLERANCE:.0e} required",
          file=file)
    print_table([header for header, _, _ in TABLE7_COLUMNS],
                [[form(entry[key]) for _, key, form in TABLE7_COLUMNS]
                 for entry in record["table7"]], file)
    print(f"\nTable 6: {TABLE6_MODEL}, structured Jacobians vs central finite differences, "
          f"max relative difference over {plan.samples} sample(s); <= {DEFAULT_TOLERANCE:g} "
          f"required", file=file)
    orders = [str(order) for order in plan.orders]
    print_table(["quantity"] + [f"order {order}" for order in orders],
                [[name] + [scientific(row[order]) for order in orders]
                 for name, row in record["table6"].items()], file)


def print_table(header, rows, file):
    """Left-aligned columns as wide as their widest cell, two spaces apart."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    for line in [header] + rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip(),
              file=file)


def failures(record):
    """One phrase per failed check of ``record`` (demo.json); empty when all pass."""
    checks = ((f"weight L1 error above {L1_TOLERANCE:g}",
               [entry["case"] for entry in record["table7"]
                if not entry["l1_error"] <= L1_TOLERANCE]),
              (f"Jacobian difference above {DEFAULT_TOLERANCE:g}",
               [f"{name} at order {order}" for name, row in record["table6"].items()
                for order, value in row.items() if not value <= DEFAULT_TOLERANCE]))
    return [f"{what} for {', '.join(where)}" for what, where in checks if where]


# --- command line --------------------------------------------------------------------------

def add_demo(commands):
    """Register the ``demo`` subcommand on ``commands`` (argparse subparsers)."""
    command = commands.add_parser(
        "demo", help="the paper's Tables 7 and 6 with their files and figures",
        description=demo.__doc__,
        epilog="Exit status: 0 every weight L1 error <= 1e-9 and every Jacobian within "
               "the tolerance, 1 otherwise, 2 bad input.")
    command.add_argument("--out", type=Path, default=Path("cmtm-demo"), metavar="DIR",
                         help="output folder (default %(default)s)")
    command.add_argument("--quick", action="store_true",
                         help="3-DoF cases only, Table 6 at orders 0-1 on one sample (CI)")
    command.add_argument("--json", action="store_true",
                         help="print demo.json on stdout (the tables go to stderr)")
    command.add_argument("--quiet", action="store_true", help="no progress on stderr")
    command.set_defaults(run=demo, parser=command)
