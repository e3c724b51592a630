"""Bad inputs at every public entry point and the error each must give (DESIGN.md "Errors"):
one table, one row per input: entry point, what is wrong, the call, the error type and a
pattern of its message, which says what was expected and what came.

Rows tagged [issue12-N] reproduce the N-th finding of the hardening issue (12). A command-line
row passes when ``cmtm`` exits 2 with exactly one line on stderr that matches the pattern.
Results that need more memory than the budget are refused before anything is allocated;
the rows run under a budget of 4 GiB, or a smaller one where they say so.

Cases tested elsewhere are not repeated (ELSEWHERE below lists them per entry point), and
``test_every_public_entry_point_has_rows`` keeps the table and that list complete.
"""
import argparse
import io
import os
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from functools import cache

import networkx as nx
import numpy as np
import pytest

import cmtm
import ioc
import kinematic_trees as kt
from ioc.cli import build_parser, main
from ioc.data import MotionData
from ioc.estimate import prepare_trial

BUDGET = 4 * 2**30


class CommandLineError(Exception):
    """``cmtm`` exited 2 with one line on stderr: the message."""


@cache
def chain3():
    return kt.compile_tree(kt.serial_chain(3))


@cache
def panda():
    return kt.compile_tree(kt.panda())


def slider_arm():
    """revolute - prismatic (along x) - revolute, massive links: the prismatic coordinate
    moves the last link's mass, so the mass matrix grows with its square."""
    tree = kt.KinematicTree()
    tree.add_link("base")
    for link in ("a", "b", "c"):
        tree.add_link(link, mass=1.0, com=(0.1, 0.2, 0.3), inertia=0.01 * np.eye(3))
    tree.add_joint("j1", "base", "a", "revolute", axis=(0, 0, 1))
    tree.add_joint("j2", "a", "b", "prismatic", axis=(1, 0, 0))
    tree.add_joint("j3", "b", "c", "revolute", axis=(0, 1, 0), xyz=(0, 0, 1))
    return kt.compile_tree(tree)


def two_sliders():
    """Two prismatic joints along x: their positions add up in the link poses."""
    tree = kt.KinematicTree()
    tree.add_link("base")
    for parent, link in (("base", "a"), ("a", "b")):
        tree.add_link(link, mass=1.0)
        tree.add_joint(f"to_{link}", parent, link, "prismatic", axis=(1, 0, 0))
    return kt.compile_tree(tree)


def stack(model, n_orders, n_samples=None):
    shape = (n_orders, model.nv) if n_samples is None else (n_samples, n_orders, model.nv)
    return np.full(shape, 0.5)


def tampered(**fields):
    """chain3 with some arrays replaced (plain writeable arrays, as a user would build)."""
    return chain3()._replace(**{name: np.asarray(value) for name, value in fields.items()})


def with_budget(n_bytes, call):
    """``call`` run with $CMTM_MEMORY_BUDGET = n_bytes."""
    def run():
        with environment(CMTM_MEMORY_BUDGET=str(n_bytes)):
            return call()
    return run


@contextmanager
def environment(**variables):
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value


def command(*argv):
    """A call running ``cmtm argv``; raises CommandLineError(stderr line) on exit 2 with
    one line on stderr, AssertionError on anything else."""
    def run():
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as stop:
                code = stop.code
        lines = err.getvalue().splitlines()
        if code == 2 and len(lines) == 1:
            raise CommandLineError(lines[0])
        raise AssertionError(f"expected exit 2 and one line on stderr, got {code}: {lines}")
    return run


def graph(kind, *edges):
    """A networkx graph of ``kind`` with links a, b and joint edges (u, v, name)."""
    g = kind()
    g.add_nodes_from("ab")
    for u, v, name in edges:
        g.add_edge(u, v, name=name, type="revolute")
    return g


def problem(**options):
    """A small chain3 problem (start 1, goal -1 unless given)."""
    return ioc.MotionProblem(chain3(), options.pop("costs", "joint_velocity,joint_jerk"),
                             **{**dict(samples=20, control_points=8, start=1.0, goal=-1.0),
                                **options})


def recording(n_joints=3, n_samples=30):
    t = np.linspace(0.0, 1.0, n_samples)
    q = np.column_stack([np.sin(t + j) for j in range(n_joints)])
    return MotionData(t, q, chain3().joint_names[:n_joints], "memory", ())


def trial(costs):
    return prepare_trial(chain3(), costs, recording(), control_points=8, samples=20,
                         limits="none")


R = ValueError
M = kt.ModelError
C = CommandLineError
ORDERS = r"\(K, 7\) with 5 <= K <= 7 derivative orders, or samples \(n_samples, K, 7\)"
BAD_INPUTS = [
    # --- cmtm -----------------------------------------------------------------------------
    ("cmtm.motion", "[issue12-1] positions (100, nv) read as one instant",
     lambda: cmtm.motion(panda(), np.random.default_rng(0).random((100, 7)), order=2),
     R, rf"q_stack: expected one instant {ORDERS}, got \(100, 7\)"),
    ("cmtm.inverse_dynamics", "[issue12-1] one instant with 3 orders more than needed",
     lambda: cmtm.inverse_dynamics(chain3(), stack(chain3(), 6)),
     R, r"q_stack: expected one instant \(K, 3\) with 3 <= K <= 5 .*got \(6, 3\)"),
    ("cmtm.jacobian", "[issue12-2] subtree_end out of range (was a double free)",
     lambda: cmtm.jacobian(tampered(subtree_end=[100] * 3), stack(chain3(), 5, 2),
                           "joint_torque", order=2),
     R, r"model.subtree_end: expected subtree_end\[0\] = 3 .*got 100"),
    ("cmtm.motion", "[issue12-2] wrong-length subtree_end",
     lambda: cmtm.motion(tampered(subtree_end=[3, 3]), stack(chain3(), 3)),
     R, r"model.subtree_end: expected a C-contiguous int64 array of shape \(3,\), got a "
        r"int64 array of shape \(2,\)"),
    ("cmtm.mass_matrix", "[issue12-2] parent index not below the link's",
     lambda: cmtm.mass_matrix(tampered(parent=[-1, 2, 0]), np.zeros(3)),
     R, r"model.parent: expected parent\[i\] in \[-1, i\) .*got parent\[1\] = 2"),
    ("cmtm.link_poses", "[issue12-2] links not in depth-first pre-order",
     lambda: cmtm.link_poses(tampered(parent=[-1, -1, 0], subtree_end=[3, 2, 3]), np.zeros(3)),
     R, r"model.parent: expected links in depth-first pre-order .*got parent = \[-1, -1, 0\]"),
    ("cmtm.point_motion", "a point on a link the model lacks",
     lambda: cmtm.point_motion(chain3(), stack(chain3(), 2), [("hand", (0, 0, 0))]),
     R, r"points: expected a link of the model \(link1, link2, link3, or an index in 0..2\), "
        r"got 'hand'"),
    ("cmtm.point_motion", "one (link, xyz) pair not in a list",
     lambda: cmtm.point_motion(chain3(), stack(chain3(), 2), ("link1", (0, 0, 0))),
     R, r"points: expected a non-empty sequence of \(link, \(x, y, z\)\) pairs"),
    ("cmtm.point_jacobian", "one derivative order too few",
     lambda: cmtm.point_jacobian(chain3(), stack(chain3(), 2), [(0, (0, 0, 0))], order=1),
     R, r"q_stack: expected at least 3 derivative orders"),
    ("cmtm.point_jacobian", "a point on the fixed base",
     lambda: cmtm.point_jacobian(chain3(), stack(chain3(), 2), [("base", (0, 0, 0))]),
     R, r"points: expected a link that moves, got 'base', fixed to the base"),
    ("cmtm.jacobians", "[issue12-2] unknown joint type code",
     lambda: cmtm.jacobians(tampered(joint_type=[0, 7, 0]), stack(chain3(), 3), "joint_velocity"),
     R, r"model.joint_type: expected codes \(0, 1\) .*got joint_type\[1\] = 7"),
    ("cmtm.link_transform_derivatives", "[issue12-2] placement that is not a rotation",
     lambda: cmtm.link_transform_derivatives(tampered(placement_R=np.tile(2.0 * np.eye(3),
                                                                           (3, 1, 1))),
                                             stack(chain3(), 1)),
     R, r"model.placement_R: expected rotation matrices, got row 0 off by 3"),
    ("cmtm.inverse_dynamics", "[issue12-2] NaN mass",
     lambda: cmtm.inverse_dynamics(tampered(mass=[1.0, np.nan, 1.0]), stack(chain3(), 3)),
     R, r"model.mass: expected finite values, got NaN or inf"),
    ("cmtm.motion", "[issue12-2] gravity as a tuple",
     lambda: cmtm.motion(chain3()._replace(gravity=(0.0, 0.0, -9.81)), stack(chain3(), 3)),
     R, r"model.gravity: expected a C-contiguous float64 array of shape \(3,\), got tuple"),
    ("cmtm.motion", "[issue12-2] float32 axes",
     lambda: cmtm.motion(tampered(axis=np.eye(3, dtype=np.float32)), stack(chain3(), 3)),
     R, r"model.axis: expected a C-contiguous float64 array of shape \(3, 3\), got a float32"),
    ("cmtm.motion", "[issue12-4] order 169 (factorials overflowed)",
     lambda: cmtm.motion(chain3(), stack(chain3(), 172), order=169),
     R, r"order: expected at most cmtm.MAX_ORDER = 20, got 169"),
    ("cmtm.jacobian_input_orders", "[issue12-4] order above MAX_ORDER",
     lambda: cmtm.jacobian_input_orders("joint_torque", 21),
     R, r"order: expected at most cmtm.MAX_ORDER = 20, got 21"),
    ("cmtm.mass_matrix", "[issue12-7] prismatic coordinate 1e200 (returned inf)",
     lambda: cmtm.mass_matrix(slider_arm(), [0.3, 1e200, 0.2]),
     R, r"mass_matrix: expected a finite result, got overflow"),
    ("cmtm.link_poses", "[issue12-7] prismatic positions summing past float64",
     lambda: cmtm.link_poses(two_sliders(), [1.5e308, 1.5e308]),
     R, r"link_poses: expected a finite result, got overflow"),
    ("cmtm.jacobians", "[issue12-8] quantities None (was a TypeError)",
     lambda: cmtm.jacobians(chain3(), stack(chain3(), 3), None),
     R, r"quantities: expected a name or a sequence of names of joint_velocity, .*got None"),
    ("cmtm.jacobian", "quantity that is not a string",
     lambda: cmtm.jacobian(chain3(), stack(chain3(), 3), ["joint_torque"]),
     R, r"quantity: expected one of joint_velocity, .*got \['joint_torque'\]"),
    ("cmtm.jacobian", "[issue12-9] Panda order 4, 1e5 samples: 6.6 GiB",
     lambda: cmtm.jacobian(panda(), np.zeros((100_000, 6, 7)), "link_velocity", order=4),
     R, r"jacobians: expected results within the memory budget of 4 GiB "
        r"\(\$CMTM_MEMORY_BUDGET\), got 100000 samples needing 6.57 GiB; compute them in "
        r"chunks of samples with cmtm.jacobian_chunks\(.*chunk=60869\)"),
    ("cmtm.motion", "[issue12-9] results beyond a 1 MB budget",
     with_budget(10**6, lambda: cmtm.motion(chain3(), stack(chain3(), 5, 1000), order=2)),
     R, r"motion: expected results within the memory budget of 0.000931 GiB .*got 1000 "
        r"samples .*call it on at most 161 samples at a time"),
    ("cmtm.link_transform_derivatives", "[issue12-9] one sample beyond the budget",
     with_budget(100, lambda: cmtm.link_transform_derivatives(chain3(), stack(chain3(), 2))),
     R, r"link_transform_derivatives: expected results within .*got 1 samples .*one of "
        r"them alone needs"),
    ("cmtm.mass_matrix", "[issue12-9] unreadable CMTM_MEMORY_BUDGET",
     with_budget("lots", lambda: cmtm.mass_matrix(chain3(), np.zeros(3))),
     R, r"CMTM_MEMORY_BUDGET: expected a positive number of bytes, got 'lots'"),
    ("cmtm.memory_budget", "[issue12-9] negative CMTM_MEMORY_BUDGET",
     with_budget(-1, cmtm.memory_budget),
     R, r"CMTM_MEMORY_BUDGET: expected a positive number of bytes, got '-1'"),
    ("cmtm.jacobian_chunks", "[issue12-9] chunk beyond the budget, refused at the call",
     with_budget(10**4, lambda: cmtm.jacobian_chunks(chain3(), stack(chain3(), 3, 100),
                                                     "joint_torque", chunk=64)),
     R, r"jacobian_chunks: expected results within .*got 64 samples .*choose chunk <= 46"),
    ("cmtm.precompile", "jobs = 0", lambda: cmtm.precompile(0),
     R, r"jobs: expected a positive integer, got 0"),
    ("cmtm.precompile", "jobs = 2.0", lambda: cmtm.precompile(2.0),
     R, r"jobs: expected a positive integer, got 2.0"),
    ("cmtm.jacobians_nbytes", "unknown quantity",
     lambda: cmtm.jacobians_nbytes(chain3(), "torque"),
     R, r"quantity: expected one of joint_velocity, .*got 'torque'"),
    ("cmtm.flatten_jacobian", "[issue12-11] taylor='yes'",
     lambda: cmtm.flatten_jacobian(np.zeros((2, 3, 4, 3)), taylor="yes"),
     R, r"taylor: expected True or False, got 'yes'"),
    ("cmtm.flatten_jacobian", "[issue12-11] complex input (lost its imaginary part)",
     lambda: cmtm.flatten_jacobian(np.zeros((2, 3, 4, 3)) + 1j),
     R, r"J: expected a real float array, got dtype complex128"),
    ("cmtm.flatten_jacobian", "[issue12-11] masked array (lost its mask)",
     lambda: cmtm.flatten_jacobian(np.ma.masked_array(np.zeros((2, 3, 4, 3)))),
     R, r"J: expected a plain array, got a masked array"),
    ("cmtm.flatten_jacobian", "more output orders than MAX_ORDER allows",
     lambda: cmtm.flatten_jacobian(np.zeros((22, 1, 24, 1)), taylor=True),
     R, r"J: expected at most 21 output orders k\+1 and 23 input orders K_in .*got 22 and 24"),
    ("cmtm.jacobian_chunks", "[issue12-11] one instant, refused at the call (not at next())",
     lambda: cmtm.jacobian_chunks(chain3(), np.zeros(3), "joint_torque"),
     R, r"q_stack: expected shape \(n_samples, K, nv\), got \(3,\)"),
    ("cmtm.jacobian_chunks", "[issue12-11] unknown quantity, refused at the call",
     lambda: cmtm.jacobian_chunks(chain3(), stack(chain3(), 3, 2), "torque"),
     R, r"quantity: expected one of .*got 'torque'"),
    ("cmtm.motion", "ragged nested lists",
     lambda: cmtm.motion(chain3(), [[0.0, 0.0, 0.0], [0.0, 0.0], [0.0]]),
     R, r"q_stack: expected a real float array, got list"),
    # --- kinematic_trees -------------------------------------------------------------------
    ("kinematic_trees.KinematicTree", "[issue12-5] lock a joint at inf (left NaN)",
     lambda: kt.two_link_planar().lock_joint("joint1", float("inf")),
     M, r"joint 'joint1': lock position: expected finite numbers, got inf"),
    ("kinematic_trees.KinematicTree", "[issue12-6] MultiDiGraph with parallel joints (dropped one)",
     lambda: kt.KinematicTree.from_graph(graph(nx.MultiDiGraph, ("a", "b", "j1"),
                                               ("a", "b", "j2"))),
     M, r"link 'b' has 2 parent joints \['j1', 'j2'\]; a link has exactly one parent"),
    ("kinematic_trees.KinematicTree", "[issue12-6] undirected Graph (said 'duplicate joint name')",
     lambda: kt.KinematicTree.from_graph(graph(nx.Graph, ("a", "b", "j1"))),
     M, r"graph: expected a networkx.DiGraph .*got an undirected Graph"),
    ("kinematic_trees.KinematicTree", "a dict for a graph",
     lambda: kt.KinematicTree.from_graph({"a": ["b"]}),
     M, r"graph: expected a networkx.DiGraph .*got dict"),
    ("kinematic_trees.KinematicTree", "unhashable link name (was a TypeError)",
     lambda: kt.KinematicTree().add_link(["arm"]),
     M, r"link \['arm'\]: link names must be non-empty strings"),
    ("kinematic_trees.load_urdf", "[issue12-8] XML as bytes (was a TypeError)",
     lambda: kt.load_urdf(b"<robot/>"),
     M, r"URDF: expected a file path \(str or Path\) or XML text \(str\), got bytes"),
    ("kinematic_trees.load_urdf", "a number for a source",
     lambda: kt.load_urdf(3),
     M, r"URDF: expected a file path .*got int"),
    ("kinematic_trees.load_urdf", "[issue12-5] lock at inf",
     lambda: kt.load_urdf(kt.example_robots_dir() / "panda_description" / "urdf" / "panda.urdf",
                          lock={"panda_joint1": float("inf")}),
     M, r"joint 'panda_joint1': lock position: expected finite numbers, got inf"),
    ("kinematic_trees.load_urdf", "lock as a string",
     lambda: kt.load_urdf("<robot/>", lock="panda_joint1"),
     M, r"lock: expected \{joint name: position\}, got 'panda_joint1'"),
    ("kinematic_trees.compile_tree", "[issue12-8] None (was an AttributeError)",
     lambda: kt.compile_tree(None),
     M, r"tree: expected a KinematicTree .*got NoneType"),
    ("kinematic_trees.serial_chain", "[issue12-8] n None (was a TypeError)",
     lambda: kt.serial_chain(None),
     R, r"serial_chain: expected a positive integer n, got None"),
    ("kinematic_trees.serial_chain", "[issue12-8] n NaN",
     lambda: kt.serial_chain(float("nan")),
     R, r"serial_chain: expected a positive integer n, got nan"),
    ("kinematic_trees.random_tree", "branching None (was a TypeError)",
     lambda: kt.random_tree(3, branching=None),
     R, r"random_tree: branching: expected a number in \[0, 1\], got None"),
    ("kinematic_trees.random_tree", "seed that is not an integer",
     lambda: kt.random_tree(3, seed="seven"),
     R, r"random_tree: seed: expected a non-negative integer or None, got 'seven'"),
    ("kinematic_trees.two_link_planar", "unknown floating base",
     lambda: kt.two_link_planar(floating_base="xyz"),
     R, r"floating_base: expected None or one of xyz_xyz, .*got 'xyz'"),
    ("kinematic_trees.panda", "floating base that is not a string",
     lambda: kt.panda(floating_base=6),
     R, r"floating_base: expected None or one of .*got 6"),
    ("kinematic_trees.human", "unknown floating base",
     lambda: kt.human(floating_base="pelvis"),
     R, r"floating_base: expected None or one of .*got 'pelvis'"),
    ("kinematic_trees.add_floating_base", "no tree",
     lambda: kt.add_floating_base(None, "xyz_zyx"),
     M, r"tree: expected a KinematicTree, got NoneType"),
    ("kinematic_trees.floating_base_joints", "a tree, not a compiled model",
     lambda: kt.floating_base_joints(kt.serial_chain(2, floating_base="xyz_zyx")),
     M, r"model: expected a CompiledTree \(compile_tree\), got KinematicTree"),
    ("kinematic_trees.coupling", "no model",
     lambda: kt.coupling(None),
     M, r"model: expected a CompiledTree .*got NoneType"),
    ("kinematic_trees.coupling", "leader index outside the model",
     lambda: kt.coupling(tampered(mimic_leader=[-1, 5, -1])),
     M, r"model.mimic_leader: expected -1 or an independent joint's index in 0..2, got 5"),
    ("kinematic_trees.Coupling", "stack of strings",
     lambda: kt.coupling(chain3()).full_stack([["a", "b", "c"]]),
     R, r"q_stack: expected numbers of shape \(..., K, 3\), got"),
    # --- ioc --------------------------------------------------------------------------------
    ("ioc.MotionProblem", "no model (was an AttributeError)",
     lambda: ioc.MotionProblem(None, "joint_jerk"),
     R, r"model: expected a CompiledTree .*got NoneType"),
    ("ioc.MotionProblem", "costs None (was a TypeError)",
     lambda: problem(costs=None),
     R, r"costs: expected cost names .*got None"),
    ("ioc.MotionProblem", "duration 1e-300 (overflowed)",
     lambda: problem(duration=1e-300),
     R, r"duration: expected a number of seconds in \[0.001, 1e\+06\], got 1e-300"),
    ("ioc.MotionProblem", "1e12 samples (MemoryError)",
     lambda: problem(samples=10**12),
     R, r"samples: expected results within the memory budget .*got 1000000000000 samples"),
    ("ioc.MotionProblem", "1e9 control points (out of memory)",
     lambda: problem(control_points=10**9),
     R, r"control_points: expected results within .*got 1000000000 control points"),
    ("ioc.MotionProblem", "start as a dict (was a TypeError)",
     lambda: problem(start={}),
     R, r"start: expected one finite value or 3 \(one per joint\) .*got \{\}"),
    ("ioc.MotionProblem", "goal 1e300",
     lambda: problem(goal=1e300),
     R, r"goal: expected one finite value or 3 .*within \+-1e\+06 rad or m, got 1e\+300"),
    ("ioc.MotionProblem", "limits of strings (numpy's message)",
     lambda: problem(limits=("low", "high")),
     R, r"limits: expected 'model', 'none' or \(lower, upper\), .*got \('low', 'high'\)"),
    ("ioc.MotionProblem", "negative penalty",
     lambda: problem(penalty=-1.0),
     R, r"penalty: expected a finite number >= 0, got -1.0"),
    ("ioc.solve", "no problem (was an AttributeError)",
     lambda: ioc.solve(None, [1.0, 1.0]),
     R, r"problem: expected an ioc.MotionProblem, got NoneType"),
    ("ioc.solve", "start of 1e300 (overflow warnings, then inf)",
     lambda: ioc.solve(problem(), [1.0, 1.0], theta0=np.full((8, 3), 1e300)),
     R, r"theta0: expected control points within \+-1e\+06 rad or m, got 1e\+300"),
    ("ioc.solve", "options None",
     lambda: ioc.solve(problem(), [1.0, 1.0], options=None),
     R, r"options: expected an ioc.SolverOptions, got NoneType"),
    ("ioc.solve", "progress that cannot be called",
     lambda: ioc.solve(problem(), [1.0, 1.0], progress="print"),
     R, r"progress: expected None or a callable, got 'print'"),
    ("ioc.SolverOptions", "NaN tolerance (never converged)",
     lambda: ioc.SolverOptions(tolerance=float("nan")),
     R, r"tolerance: expected a finite number >= 0, got nan"),
    ("ioc.SolverOptions", "unknown start mode",
     lambda: ioc.SolverOptions(start_mode="newtonian"),
     R, r"start_mode: expected one of gauss_newton, newton, got 'newtonian'"),
    ("ioc.recover_weights", "motion every cost leaves stationary (scipy's nnls crashed)",
     lambda: ioc.recover_weights(problem(start=0.0, goal=0.0), np.zeros((8, 3))),
     R, r"theta: expected a motion on which some cost has a gradient, got one where every "
        r"projected cost gradient vanishes"),
    ("ioc.recover_weights", "control points of another problem",
     lambda: ioc.recover_weights(problem(), np.zeros((9, 3))),
     R, r"theta: expected control points of shape \(8, 3\) \(n_control, nv\), got \(9, 3\)"),
    ("ioc.recover_weights", "NaN tolerance",
     lambda: ioc.recover_weights(problem(), problem().initial_theta(), tolerance=float("nan")),
     R, r"tolerance: expected a finite number >= 0, got nan"),
    ("ioc.read_motion", "path None (was a TypeError)",
     lambda: ioc.read_motion(None, ("joint1",)),
     R, r"path: expected a file path \(str or Path\), got NoneType"),
    ("ioc.prepare_trial", "data None (was an AttributeError)",
     lambda: prepare_trial(chain3(), "joint_jerk", None),
     R, r"data: expected an ioc.data.MotionData \(ioc.read_motion\), got NoneType"),
    ("ioc.prepare_trial", "data for another model",
     lambda: prepare_trial(chain3(), "joint_jerk", recording(n_joints=2)),
     R, r"data: expected times \(N,\) with N >= 2 and q \(N, 3\), .*got \(30,\) and \(30, 2\)"),
    ("ioc.prepare_trial", "smoothing fit beyond the memory budget",
     lambda: prepare_trial(chain3(), "joint_jerk", recording(), control_points=10**6),
     R, r"control_points: expected at most \d+ for a smoothing fit within the memory "
        r"budget .*got 1000000"),
    ("ioc.estimate_weights", "no trials (was an IndexError)",
     lambda: ioc.estimate_weights([]),
     R, r"trials: expected a non-empty list of ioc.estimate.Trial \(prepare_trial\), got \[\]"),
    ("ioc.estimate_weights", "pooled trials with other costs",
     lambda: ioc.estimate_weights([trial("joint_jerk,joint_velocity"),
                                   trial("joint_jerk,joint_acceleration")]),
     R, r"trials: expected pooled trials with the same costs, got "),
    ("ioc.estimate_weights", "negative noise",
     lambda: ioc.estimate_weights([trial("joint_jerk,joint_velocity")], noise=-1.0),
     R, r"noise: expected None or a finite number > 0 \(rad\), got -1.0"),
    # --- the command line --------------------------------------------------------------------
    ("cmtm precompile", "--jobs 0", command("precompile", "--jobs", "0"),
     C, r"^cmtm precompile: error: argument --jobs: expected an integer >= 1, got '0'$"),
    ("cmtm check-jacobians", "[issue12-3] --lock of a joint a built-in model lacks",
     command("check-jacobians", "--model", "chain3", "--order", "0", "--lock", "nosuch=0"),
     C, r"^cmtm check-jacobians: error: --lock: expected joints of chain3 \(joint1, joint2, "
        r"joint3\), got \['nosuch'\]$"),
    ("cmtm check-jacobians", "[issue12-4] --order 169 (a traceback, exit 1)",
     command("check-jacobians", "--model", "chain3", "--order", "169"),
     C, r"^cmtm check-jacobians: error: argument --order: expected an integer in 0..20, "
        r"got '169'$"),
    ("cmtm check-jacobians", "[issue12-5] --lock at inf",
     command("check-jacobians", "--model", "chain3", "--order", "0", "--lock", "joint1=inf"),
     C, r"^cmtm check-jacobians: error: joint 'joint1': lock position: expected finite "
        r"numbers, got inf$"),
    ("cmtm check-jacobians", "[issue12-9] --samples 100000000 (a traceback)",
     command("check-jacobians", "--model", "chain3", "--order", "0", "--samples", "100000000"),
     C, r"^cmtm check-jacobians: error: --samples: expected results within the memory "
        r"budget of 4 GiB .*lower --samples to at most \d+$"),
    ("cmtm check-jacobians", "[issue12-10] --tolerance nan (then NaN in the JSON)",
     command("check-jacobians", "--model", "chain3", "--order", "0", "--tolerance", "nan",
             "--json"),
     C, r"^cmtm check-jacobians: error: argument --tolerance: expected a finite number > 0, "
        r"got 'nan'$"),
    ("cmtm check-jacobians", "[issue12-10] negative --tolerance",
     command("check-jacobians", "--model", "chain3", "--order", "0", "--tolerance", "-1"),
     C, r"argument --tolerance: expected a finite number > 0, got '-1'$"),
    ("cmtm check-jacobians", "negative --seed (numpy's message)",
     command("check-jacobians", "--model", "chain3", "--order", "0", "--seed", "-1"),
     C, r"argument --seed: expected an integer >= 0, got '-1'$"),
    ("cmtm optimize", "--duration beyond the accepted range",
     command("optimize", "--model", "chain3", "--costs", "joint_jerk", "--weights", "1",
             "--duration", "1e-9"),
     C, r"^cmtm optimize: error: duration: expected a number of seconds in \[0.001, "
        r"1e\+06\], got 1e-09$"),
    ("cmtm optimize", "--samples beyond the memory budget",
     command("optimize", "--model", "chain3", "--costs", "joint_jerk", "--weights", "1",
             "--samples", "1000000000000"),
     C, r"^cmtm optimize: error: samples: expected results within the memory budget"),
    ("cmtm ioc", "negative --noise",
     command("ioc", "--model", "chain3", "--motion", "walk.csv", "--costs", "joint_jerk",
             "--noise", "-1"),
     C, r"^cmtm ioc: error: argument --noise: expected a finite number > 0, got '-1'$"),
    ("cmtm view", "--frames 1",
     command("view", "result.json", "--frames", "1"),
     C, r"^cmtm view: error: argument --frames: expected an integer >= 2, got '1'$"),
    ("cmtm demo", "an option demo does not have",
     command("demo", "--order", "2"),
     C, r"^cmtm demo: error: unrecognized arguments: --order 2$"),
]

ELSEWHERE = {
    "cmtm.motion": "test_api_validation.py (shapes, dtypes, NaN, orders, models, flags)",
    "kinematic_trees.KinematicTree": "test_kinematic_trees.py (links, joints, cycles, roots)",
    "kinematic_trees.load_urdf": "test_urdf.py, test_mimic.py (malformed files, mimic tags)",
    "kinematic_trees.add_floating_base": "test_floating_base.py (names already taken)",
    "kinematic_trees.coupling": "test_mimic.py (coupled leaders)",
    "ioc.MotionProblem": "test_direct.py, test_bspline.py (degrees, knots, rest orders)",
    "ioc.read_motion": "test_data.py (every kind of malformed motion file)",
    "ioc.solve": "test_direct.py (weights)",
    "cmtm optimize": "test_cli_optimize.py (costs, weights, limits, boundary values), "
                     "test_cli_human.py (subsets, points, --joints, --gravity)",
    "cmtm ioc": "test_cli_ioc.py, test_batch.py (motions, options against a result.json), "
                "test_cli_human.py (subsets, points, --joints, --gravity)",
    "cmtm demo": "test_demo.py (--out naming a file)",
    "cmtm view": "test_view.py (inputs, joints against the model, --out, --trial)",
}
"""Where the other bad inputs of an entry point are tested."""

def cli_commands():
    """The names of the ``cmtm`` subcommands."""
    (commands,) = [action for action in build_parser()._actions
                   if isinstance(action, argparse._SubParsersAction)]
    return list(commands.choices)


ENTRY_POINTS = (
    [f"cmtm.{name}" for name in cmtm.__all__
     if name not in ("MAX_ORDER", "Motion", "QUANTITIES", "reference")]
    + [f"kinematic_trees.{name}" for name in kt.__all__
       if name not in ("FLOATING_BASES", "JOINT_PRISMATIC", "JOINT_REVOLUTE", "JOINT_TYPES",
                       "MIMIC_MODES", "CompiledTree", "InertiaWarning", "ModelError",
                       "Y_UP_GRAVITY", "Z_UP_GRAVITY", "example_robots_dir")]
    + [f"ioc.{name}" for name in ioc.__all__]
    + [f"cmtm {name}" for name in cli_commands()])


@pytest.fixture(autouse=True)
def budget_of_4_gib(monkeypatch):
    monkeypatch.setenv("CMTM_MEMORY_BUDGET", str(BUDGET))


@pytest.mark.parametrize("call, error, pattern", [row[2:] for row in BAD_INPUTS],
                         ids=[f"{row[0]}: {row[1]}" for row in BAD_INPUTS])
def test_bad_input_gives_its_error(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_every_public_entry_point_has_rows():
    assert sorted(set(ENTRY_POINTS) - {row[0] for row in BAD_INPUTS}) == []
    assert sorted(set(ELSEWHERE) - set(ENTRY_POINTS)) == []
