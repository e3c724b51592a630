"""Every URDF of example-robot-data that Pinocchio's parser loads, loaded by ours.

Reference: ``pinocchio.buildModelFromUrdf`` (default options: fixed base, mimic tags
ignored), ``pinocchio.rnea`` with joints matched by name (tests/pinocchio_ref.py), and
Pinocchio's universe body (the base with every link fixed to it) for our base_* mass
properties, which are all that a model without movable joints has. Skipped when
example-robot-data is not installed. Run with ``-s`` to see the counts.
"""
import warnings

import numpy as np
import pinocchio
import pytest

import cmtm
import kinematic_trees as kt
import pinocchio_ref

N_STATES = 3
TORQUE_RTOL = 1e-9
"""Order-0 torques, max-abs error / max |tau_pinocchio|: both are exact Newton-Euler
recursions in float64 (seen <= 3e-15)."""
BASE_ATOL = 1e-12
"""Base mass (kg), COM (m) and inertia (kg m^2): the same lumping sums (seen 0)."""


def robot_files():
    """Every *.urdf below example-robot-data's robots folder, sorted; skip if not installed."""
    try:
        robots = kt.example_robots_dir()
    except FileNotFoundError as error:
        pytest.skip(str(error))
    return robots, sorted(robots.rglob("*.urdf"))


def pinocchio_parse(path):
    """Pinocchio's model of ``path``, or None when its parser refuses the file."""
    try:
        return pinocchio.buildModelFromUrdf(str(path))
    except (RuntimeError, ValueError):
        return None


def torque_error(model, pin_model, rng):
    """Largest relative order-0 torque difference over N_STATES random (q, q', q'')."""
    worst = 0.0
    for _ in range(N_STATES):
        q, v, a = rng.uniform(-1.0, 1.0, (3, model.nv))
        tau = cmtm.inverse_dynamics(model, np.stack([q, v, a]))[0]
        expected = pinocchio_ref.rnea_by_name(pin_model, model.joint_names, q, v, a)
        worst = max(worst, np.max(np.abs(tau - expected)) / np.max(np.abs(expected)))
    return worst


def base_difference(model, pin_model):
    """Largest difference of the base mass, COM and inertia from Pinocchio's universe body."""
    universe = pin_model.inertias[0]
    return max(abs(model.base_mass - universe.mass),
               np.max(np.abs(model.base_com - universe.lever)) if universe.mass > 0 else 0.0,
               np.max(np.abs(model.base_inertia_com - universe.inertia)))


def test_every_urdf_pinocchio_loads_is_loaded_with_the_same_dofs_and_torques():
    """Fixed base, default options; inconsistent inertias (several files) only warn; the two
    drone files without movable joints compile to nv = 0."""
    robots, files = robot_files()
    rng = np.random.default_rng(0)
    loaded, problems, worst = [], [], 0.0
    pinocchio_models = {path: pinocchio_parse(path) for path in files}
    for path, pin_model in pinocchio_models.items():
        if pin_model is None:
            continue
        name = str(path.relative_to(robots))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", kt.InertiaWarning)  # test_inertia_tolerance.py
                model = kt.compile_tree(kt.load_urdf(path))
        except kt.ModelError as error:
            problems.append(f"{name}: {error}")
            continue
        if model.nv != pin_model.nv:
            problems.append(f"{name}: nv = {model.nv}, Pinocchio {pin_model.nv}")
            continue
        if base_difference(model, pin_model) > BASE_ATOL:
            problems.append(f"{name}: base mass properties differ from Pinocchio's universe "
                            f"body by {base_difference(model, pin_model):.2e}")
            continue
        if model.nv:
            error = torque_error(model, pin_model, rng)
            worst = max(worst, error)
            if error > TORQUE_RTOL:
                problems.append(f"{name}: torques differ by {error:.2e} (relative)")
                continue
        loaded.append(name)
    n_pinocchio = sum(m is not None for m in pinocchio_models.values())
    n_rigid = sum(m is not None and m.nv == 0 for m in pinocchio_models.values())
    print(f"\nexample-robot-data: {len(files)} URDF files, Pinocchio loads {n_pinocchio}, "
          f"load_urdf loads {len(loaded)} with the same nv ({n_rigid} with nv = 0) and "
          f"order-0 torques (worst relative difference {worst:.1e})")
    assert not problems, "\n".join(problems)
    assert len(loaded) == n_pinocchio >= 60
