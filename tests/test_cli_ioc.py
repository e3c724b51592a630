"""``cmtm ioc`` on one motion: a ``cmtm optimize`` result.json (exact inverse KKT against
the recorded weights), the same noisy samples as CSV (rad) and .mot (deg) through the data
estimator, the weights.json keys and types, and one-line errors that write nothing."""
import json
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import cmtm
import kinematic_trees as kt
from ioc import batch
from ioc.cli import precompile_trials, result_units
from ioc.costs import engine_units, parse_terms
from ioc_synthetic import (COSTS, NAMES, NOISE_DEG, NOISE_RAD, SPLINE, WEIGHTS, build,
                           ioc_argv, noisy, run, write_csv, write_mot)

TYPES = {"schema": int, "estimator": str, "weights": dict, "uncertainty": dict,
         "identifiable": bool, "undetermined": list, "terms": list, "stationarity": dict,
         "eigenvalues": list, "eigenvalues_of": str, "multipliers": list, "solver": dict,
         "model": str, "joint_names": list, "source": list, "settings": dict,
         "versions": dict}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """The optimized motion and one noisy sample set (seed 0) as CSV in rad and .mot in
    deg."""
    case = build(tmp_path_factory.mktemp("ioc"))
    q = noisy(case.q, seed=0)
    case.csv = write_csv(case.folder / "walk.csv", q)
    case.mot = write_mot(case.folder / "walk.mot", np.rad2deg(q))
    return case


def weights_of(out):
    return json.loads((out / "weights.json").read_text(encoding="utf-8"))


def assert_schema(record):
    """Keys, types, no NaN, weights on the simplex, terms consistent with the weights."""
    for key, kind in TYPES.items():
        assert isinstance(record[key], kind), key
    assert list(record["weights"]) == NAMES
    assert sum(record["weights"].values()) == pytest.approx(1.0, abs=1e-14)
    assert [t["name"] for t in record["terms"]] == NAMES
    assert all(t["weighted"] == pytest.approx(t["weight"] * t["raw"], rel=1e-15)
               for t in record["terms"])
    assert set(record["stationarity"]) == {"absolute", "relative"}
    assert len(record["eigenvalues"]) == len(NAMES)
    assert json.loads(json.dumps(record, allow_nan=False)) == record


def test_a_result_json_precompiles_the_kernels_of_its_costs(synthetic, monkeypatch):
    asked = []
    monkeypatch.setattr(cmtm, "precompile", lambda jobs=None, units=None: asked.append(units))
    code, _, _ = run(["ioc", "--motion", str(synthetic.optimized), "--costs", COSTS])
    assert code == 0
    assert asked == [engine_units(parse_terms(COSTS, kt.compile_tree(kt.serial_chain(3))))]
    assert asked[0] == ["torque derivatives"]   # joint_torque alone at order 0: one kernel


def test_result_units_join_every_results_costs_and_skip_unreadable_files(synthetic, tmp_path):
    """Units of several result.json files: the union of their costs' units (the synthetic
    result's order-0 torque and a copy recording an order-1 torque and a link term), each
    once, in UNITS order; a corrupt file adds none (its trial reports it)."""
    record = json.loads((synthetic.optimized / "result.json").read_text(encoding="utf-8"))
    other = tmp_path / "other"
    other.mkdir()
    costs = "joint_jerk,joint_torque_rate,link_velocity"
    (other / "result.json").write_text(json.dumps({**record, "costs": costs}),
                                       encoding="utf-8")
    corrupt = tmp_path / "corrupt" / "result.json"
    corrupt.parent.mkdir()
    corrupt.write_text("{", encoding="utf-8")
    chain = kt.compile_tree(kt.serial_chain(3))
    expected = set(engine_units(parse_terms(COSTS, chain))) | set(
        engine_units(parse_terms(costs, chain)))
    units = result_units([synthetic.optimized, other, synthetic.optimized, corrupt])
    assert units == [name for name in cmtm.compile_cache.UNITS if name in expected]
    assert {"torque derivatives", "torque jacobian", "velocity jacobian"} <= set(units)
    assert result_units([corrupt]) == []


@pytest.mark.parametrize("backend, scheduler, pool, n_paths, where", [
    ("loky", None, False, 2, "here"), ("dask", None, False, 2, "here"),
    ("dask", "tcp://127.0.0.1:1", False, 2, "workers"),
    ("dask", "tcp://127.0.0.1:1", False, 1, "here"),
    ("dask", "tcp://127.0.0.1:1", True, 2, "here")])
def test_precompile_runs_where_the_trials_run(synthetic, monkeypatch, backend, scheduler, pool,
                                              n_paths, where):
    """loky's and a local Dask cluster's workers share this machine's cache, and one trial
    or --pool runs here; a scheduler's workers may be elsewhere, so they compile for
    themselves."""
    asked = {"here": [], "workers": []}
    monkeypatch.setattr(cmtm, "precompile",
                        lambda jobs=None, units=None: asked["here"].append(units))
    monkeypatch.setattr(batch, "precompile_on_workers",
                        lambda address, units: asked["workers"].append((address, units)))
    settings = SimpleNamespace(backend=backend, scheduler=scheduler, pool=pool, costs=None)
    paths = [synthetic.optimized / "result.json"] * n_paths
    precompile_trials(paths, settings, None)
    units = result_units([synthetic.optimized])
    assert asked == {"here": [units] if where == "here" else [],
                     "workers": [(scheduler, units)] if where == "workers" else []}


@pytest.mark.dask
@pytest.mark.parametrize("caches", ["shared", "one per worker"])
def test_workers_precompile_once_per_cache(monkeypatch, caches):
    """Two in-process workers: one cache (this process's) is filled by one of them, a cache
    each (a stand-in for workers on two machines) by both; the precompile runs as a task on
    the worker(s) named, which execute it."""
    distributed = pytest.importorskip("dask.distributed")
    if caches == "one per worker":
        monkeypatch.setattr(batch, "kernel_cache", lambda dask_worker: dask_worker.address)
    with distributed.LocalCluster(n_workers=2, processes=False,
                                  dashboard_address=None) as cluster:
        ran = batch.precompile_on_workers(cluster.scheduler_address, ["link poses"])
        executed = {worker.address: worker.state.executed_count
                    for worker in cluster.workers.values()}
    assert len(executed) == 2 and set(ran) <= set(executed)
    assert len(ran) == (1 if caches == "shared" else 2)
    assert {address for address, count in executed.items() if count} == set(ran)


def test_result_json_weights_recovered_by_inverse_kkt_to_1e_9(synthetic, tmp_path):
    out = tmp_path / "out"
    code, stdout, _ = run(["ioc", "--motion", str(synthetic.optimized), "--costs", COSTS,
                           "--reoptimize", "--out", str(out)])
    assert code == 0 and "identifiable" in stdout
    record = weights_of(out)
    assert_schema(record)
    assert record["estimator"] == "kkt" and record["identifiable"] is True
    assert record["undetermined"] == [] and record["multipliers"] == []
    assert record["eigenvalues_of"] == "row-scaled KKT singular values"
    assert record["uncertainty"] == {"method": "none", "std": None, "ci95": None}
    assert record["true_weights"] == pytest.approx(dict(zip(NAMES, WEIGHTS)), abs=1e-15)
    assert record["l1_error"] <= 1e-9  # exact optimum: stationarity ~1e-12 (calibration)
    assert record["fit_rms"] is None and record["source"] == [
        str(synthetic.optimized / "result.json")]
    assert record["reoptimized_rms"][0] <= 1e-9
    assert record["model"] == "chain3" and record["settings"]["model"] is None


def test_json_prints_the_weights_json_object_alone(synthetic, tmp_path):
    out = tmp_path / "out"
    code, stdout, stderr = run(["ioc", "--motion", str(synthetic.optimized / "result.json"),
                                "--costs", COSTS, "--out", str(out), "--json", "--quiet"])
    assert code == 0 and stderr == "" and stdout.count("\n") == 1
    assert json.loads(stdout) == weights_of(out)


@pytest.fixture(scope="module")
def csv_and_mot(synthetic, tmp_path_factory):
    """The data estimator on the CSV (--noise in rad) and on the .mot (--degrees, --noise
    in deg) of the same samples."""
    records = {}
    for name, extra in (("csv", ["--noise", repr(NOISE_RAD)]),
                        ("mot", ["--degrees", "--noise", repr(NOISE_DEG)])):
        out = tmp_path_factory.mktemp(name)
        code, _, stderr = run(ioc_argv(getattr(synthetic, name), extra=[
            "--estimator", "data", "--reoptimize", "--out", str(out), *extra]))
        assert code == 0, stderr
        records[name] = weights_of(out)
    return records


def test_csv_in_radians_and_mot_in_degrees_give_the_same_weights(csv_and_mot):
    csv, mot = csv_and_mot["csv"], csv_and_mot["mot"]
    # the files hold the same samples up to the deg -> rad round trip (~1e-16 relative)
    assert np.allclose(list(csv["weights"].values()), list(mot["weights"].values()),
                       rtol=0, atol=1e-9)
    assert csv["uncertainty"]["sigma"] == mot["uncertainty"]["sigma"] == NOISE_RAD


def test_data_estimator_intervals_hold_the_true_weights(csv_and_mot):
    for record in csv_and_mot.values():
        assert_schema(record)
        assert record["estimator"] == "data" and record["identifiable"] is True
        assert record["undetermined"] == [] and record["multipliers"] == []
        uncertainty = record["uncertainty"]
        assert uncertainty["method"] == "fisher" and uncertainty["sigma_method"] == "given"
        for name, truth in zip(NAMES, WEIGHTS):
            low, high = uncertainty["ci95"][name]
            assert low <= truth <= high, (name, low, truth, high)
            assert uncertainty["std"][name] > 0
        assert record["eigenvalues_of"] == "weight covariance"
        assert record["solver"]["method"] == "maximum_likelihood"
        # the fit and the re-optimized motion both sit at the noise level
        assert set(record["fit_rms"][0]) == {"joint1", "joint2", "joint3"}
        assert all(0.5 * NOISE_RAD < v < 1.5 * NOISE_RAD for v in record["fit_rms"][0].values())
        assert 0.5 * NOISE_RAD < record["reoptimized_rms"][0] < 1.5 * NOISE_RAD


def test_data_estimator_reports_its_optimal_motions_not_the_fitted_one(csv_and_mot, synthetic):
    """The stationarity of weights.json and of the printed line is that of the optimal
    motions for the estimated weights (converged solves), not the fitted motion's KKT
    residual (~1 on noisy data, a measure of the noise); the line gives the RMS to the
    data beside the noise level."""
    for record in csv_and_mot.values():
        assert record["stationarity"]["relative"] <= 1e-9   # solves stop at 1e-13 (direct)
    code, stdout, _ = run(ioc_argv(synthetic.csv, extra=["--noise", repr(NOISE_RAD)]))
    line = stdout.splitlines()[-1]
    assert code == 0 and line.startswith("optimal motion(s) for these weights: stationarity ")
    relative = float(line.split("stationarity ")[1].split(" ")[0])
    rms = float(line.split("RMS to the data ")[1].split(" ")[0])
    assert relative <= 1e-9 and 0.5 * NOISE_RAD < rms < 1.5 * NOISE_RAD


def test_kkt_on_measured_data_reports_the_fitted_motion_without_intervals(synthetic, tmp_path):
    out = tmp_path / "out"
    code, _, _ = run(ioc_argv(synthetic.csv, extra=["--estimator", "kkt", "--reoptimize",
                                                    "--out", str(out)]))
    assert code == 0
    record = weights_of(out)
    assert_schema(record)
    assert record["estimator"] == "kkt" and record["uncertainty"]["method"] == "none"
    assert "true_weights" not in record and len(record["fit_rms"]) == 1
    assert record["reoptimized_rms"][0] > 0


def test_bootstrap_adds_its_intervals_to_the_fisher_ones(synthetic, tmp_path):
    out = tmp_path / "out"
    code, _, _ = run(ioc_argv(synthetic.csv, extra=["--noise", repr(NOISE_RAD),
                                                    "--bootstrap", "2", "--out", str(out)]))
    assert code == 0
    uncertainty = weights_of(out)["uncertainty"]
    assert uncertainty["method"] == "fisher"
    assert uncertainty["bootstrap"]["samples"] == 2
    assert list(uncertainty["bootstrap"]["std"]) == list(uncertainty["bootstrap"]["ci95"]) \
        == NAMES


def test_dask_backend_without_dask_is_a_one_line_error(synthetic, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails
    out = tmp_path / "out"
    code, stdout, stderr = run(ioc_argv(synthetic.csv, synthetic.csv.with_suffix(".mot"),
                                        extra=["--backend", "dask", "--out", str(out)]))
    assert code == 2 and stdout == "" and stderr.count("\n") == 1
    assert "pip install 'cmtm[dask]'" in stderr and not out.exists()


HEADER = "time,joint1,joint2,joint3\n"
ROWS = "".join(f"{t},0.5,0.5,0.5\n" for t in np.linspace(0, 2, 21))
BAD_FILES = {  # file text, extra arguments, part of the message
    "NaN time": (HEADER + "0,1,1,1\nnan,1,1,1\n" + ROWS, [], "expected a finite number"),
    "time not increasing": (HEADER + "0,1,1,1\n0.2,1,1,1\n0.1,1,1,1\n", [],
                            "expected strictly increasing time"),
    "joint names": ("time,hip,knee,ankle\n" + ROWS, [], "missing joint1, joint2, joint3"),
    "too few samples": (HEADER + "".join(f"{t},1,1,1\n" for t in range(5)), [],
                        "too few samples for the spline"),
    "motion outside the limits": (None, ["--limits", "-0.5,0.5"], "within the joint limits"),
    "empty file": ("", [], "got an empty file"),
    "header only": (HEADER, [], "expected data rows after the header"),
    "unknown cost": (None, ["--costs", "joint_snap"], "cost: expected one of"),
    "bootstrap with kkt": (None, ["--estimator", "kkt", "--bootstrap", "5"],
                           "--bootstrap: applies to the data estimator only"),
    "pool with kkt": (None, ["--estimator", "kkt", "--pool"], "--pool: pools"),
    "negative noise": (None, ["--noise", "-1"], "--noise: expected a finite number > 0"),
    "scheduler without dask": (None, ["--scheduler", "tcp://127.0.0.1:1"],
                               "--scheduler: applies to --backend dask only"),
    "spline option": (None, ["--rest-order", "5"], "rest_order: expected < degree 5"),
}


@pytest.mark.parametrize("text, extra, message", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_bad_input_is_one_line_exit_2_and_writes_nothing(text, extra, message, synthetic,
                                                         tmp_path):
    path = synthetic.csv if text is None else tmp_path / "bad.csv"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, stderr = run(ioc_argv(path, extra=[*extra, "--out", str(out)]))
    assert code == 2 and stdout == ""
    assert stderr.startswith("cmtm ioc: error: ") and stderr.count("\n") == 1
    assert message in stderr
    assert not out.exists()


BAD_RESULT_OPTIONS = {  # extra arguments, part of the message
    "other model": (["--model", "chain4"], "--model chain4 differs from the recorded chain3"),
    "other spline": (["--control-points", "13"], "--control-points 13 differs"),
    "other limits": (["--limits", "-5,5"], "--limits [-5.0, 5.0] differs"),
    "data estimator": (["--estimator", "data"], "--estimator data: expected measured motions"),
    "noise": (["--noise", "0.1"], "--noise, --degrees: apply to measured motions"),
}


@pytest.mark.parametrize("extra, message", BAD_RESULT_OPTIONS.values(),
                         ids=BAD_RESULT_OPTIONS.keys())
def test_options_that_contradict_a_result_json_are_errors(extra, message, synthetic,
                                                          tmp_path):
    out = tmp_path / "out"
    code, _, stderr = run(["ioc", "--motion", str(synthetic.optimized), "--costs", COSTS,
                           *extra, "--out", str(out)])
    assert code == 2 and stderr.count("\n") == 1 and message in stderr, stderr
    assert not out.exists()


def test_options_equal_to_the_recorded_ones_are_accepted(synthetic):
    code, stdout, _ = run(["ioc", "--model", "chain3", "--motion", str(synthetic.optimized),
                           "--costs", COSTS, *SPLINE, "--limits", "none", "--degree", "5",
                           "--json"])
    assert code == 0 and json.loads(stdout)["l1_error"] <= 1e-9


def test_data_files_need_a_model(synthetic):
    code, _, stderr = run(["ioc", "--motion", str(synthetic.csv), "--costs", COSTS])
    assert code == 2 and "--model: required for measured motions" in stderr
