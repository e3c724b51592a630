"""Batches of ``cmtm ioc``: twenty noisy trials and a corrupt file in a folder, in parallel
(loky) against serially, a rerun that skips the finished trials, an interrupted batch,
pooled trials, input expansion, and the Dask backend (the last two on four of the trials)."""
import csv
import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from ioc import batch
from ioc_synthetic import (NAMES, NOISE_RAD, WEIGHTS, build, ioc_argv, run, write_csv,
                           write_trials)

TRIALS = tuple(f"trial{i:02d}" for i in range(1, 21))
SUBSET = "trial0[1-4].csv"
"""The first four trials: the pooled and Dask batches."""
NOISE = ["--noise", repr(NOISE_RAD)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Twenty noisy sample sets (seeds 1-20) and a header-only CSV."""
    trials = write_trials(build(tmp_path_factory.mktemp("batch")), TRIALS)
    (trials / "corrupt.csv").write_text("time,joint1,joint2,joint3\n", encoding="utf-8")
    return trials


def batch_run(folder, out, *extra):
    """(exit status, stdout, stderr) of the batch over ``folder`` into ``out``."""
    return run(ioc_argv(folder, extra=[*NOISE, "--out", str(out), *extra]))


def weights(out, trial):
    """A trial's weights.json object."""
    return json.loads((out / trial / "weights.json").read_text(encoding="utf-8"))


def summary(out):
    """The rows of summary.csv."""
    with open(out / "summary.csv", newline="", encoding="utf-8") as file:
        return list(csv.DictReader(file))


@pytest.fixture(scope="module")
def parallel(folder, tmp_path_factory):
    """The batch on two loky workers."""
    out = tmp_path_factory.mktemp("parallel") / "out"
    return out, batch_run(folder, out, "--jobs", "2")


@pytest.fixture(scope="module")
def serial(folder, tmp_path_factory):
    """The batch in this process, printing JSON."""
    out = tmp_path_factory.mktemp("serial") / "out"
    return out, batch_run(folder, out, "--jobs", "1", "--json", "--quiet")


def test_parallel_batch_finishes_the_trials_and_reports_the_corrupt_one(parallel):
    out, (code, stdout, stderr) = parallel
    assert code == 1
    rows = summary(out)
    assert [r["trial"] for r in rows] == ["corrupt", *TRIALS]  # sorted input order
    assert list(rows[0]) == ["trial", "status", *NAMES, "stationarity", "identifiable",
                             "fit_rms", "error"]
    corrupt, finished = rows[0], rows[1:]
    assert corrupt["status"] == "failed" and corrupt[NAMES[0]] == ""
    assert "corrupt.csv: expected data rows after the header" in corrupt["error"]
    errors = [line for line in stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "corrupt.csv" in errors[0]
    for row in finished:
        assert row["status"] == "ok" and row["identifiable"] == "true" and row["error"] == ""
        record = weights(out, row["trial"])
        assert [float(row[n]) for n in NAMES] == list(record["weights"].values())
        assert float(row["fit_rms"]) == pytest.approx(NOISE_RAD, rel=0.5)
    assert sorted(p.name for p in out.iterdir()) == sorted(["summary.csv", *TRIALS])
    assert "summary.csv" in stdout


def test_parallel_weights_equal_serial_ones_bit_for_bit(parallel, serial):
    (out_p, _), (out_s, (code, _, _)) = parallel, serial
    assert code == 1
    for trial in TRIALS:
        p, s = weights(out_p, trial)["weights"], weights(out_s, trial)["weights"]
        assert p == s, (trial, p, s)


def test_json_of_a_batch_holds_every_trial_and_the_summary(serial):
    out, (_, stdout, stderr) = serial
    assert stderr.count("\n") == 1  # --quiet: the failed trial's error alone
    printed = json.loads(stdout)
    assert [t["trial"] for t in printed["trials"]] == ["corrupt", *TRIALS]
    assert printed["trials"][0]["status"] == "failed"
    for entry in printed["trials"][1:]:
        assert entry["status"] == "ok"
        assert entry["weights"] == weights(out, entry["trial"])["weights"]
    assert [r["trial"] for r in printed["summary"]] == [r["trial"] for r in summary(out)]


def test_batch_of_failing_trials_still_writes_its_summary(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.csv").write_text("", encoding="utf-8")
    out = tmp_path / "out"
    code, _, stderr = run(ioc_argv(tmp_path / "a.csv", tmp_path / "b.csv",
                                   extra=["--out", str(out), "--quiet"]))
    assert code == 1 and stderr.count("got an empty file") == 2
    assert [(r["trial"], r["status"]) for r in summary(out)] == [("a", "failed"),
                                                                 ("b", "failed")]


def test_rerun_skips_finished_trials_and_rebuilds_the_summary(folder, parallel, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(parallel[0], out)
    stamps = {t: (out / t / "weights.json").stat().st_mtime_ns for t in TRIALS}
    expected = (out / "summary.csv").read_text()
    (out / "summary.csv").unlink()
    code, stdout, stderr = batch_run(folder, out, "--jobs", "2")
    assert code == 1  # the corrupt file, tried again
    assert sum("skipping" in line for line in stderr.splitlines()) == len(TRIALS)
    assert stdout.splitlines()[-1].endswith(f"and 0 weights.json ({len(TRIALS)} finished "
                                            f"earlier, kept)")
    assert {t: (out / t / "weights.json").stat().st_mtime_ns for t in TRIALS} == stamps
    assert (out / "summary.csv").read_text() == expected


def test_rerun_with_other_settings_is_an_error_that_changes_nothing(folder, parallel,
                                                                   tmp_path):
    out = tmp_path / "out"
    shutil.copytree(parallel[0], out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, _, stderr = run(ioc_argv(folder, extra=["--noise", "1e-4", "--out", str(out)]))
    assert code == 2 and "found other noise" in stderr and stderr.count("\n") == 1
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_interrupted_batch_keeps_the_finished_trials(folder, tmp_path):
    class Interrupt(Exception):
        pass

    def interrupt(outcome):
        raise Interrupt

    settings = batch.Settings(costs=tuple(NAMES), model="chain3", samples=40,
                              control_points=12, noise=NOISE_RAD, jobs=1)
    paths = [folder / f"{t}.csv" for t in TRIALS]
    with pytest.raises(Interrupt):
        batch.run_batch(paths, settings, out=tmp_path, report=interrupt)
    assert sorted(p.name for p in tmp_path.iterdir()) == [TRIALS[0]]
    assert weights(tmp_path, TRIALS[0])["source"] == [str(paths[0])]


def test_pooled_trials_give_one_estimate_with_narrower_intervals(folder, parallel, tmp_path):
    out = tmp_path / "out"
    code, _, _ = run(ioc_argv(str(folder / SUBSET), extra=[*NOISE, "--pool", "--out",
                                                           str(out)]))
    pages = [f"motion-{k}.html" for k in range(1, 5)]          # one motion page per trial
    assert code == 0 and sorted(p.name for p in out.iterdir()) == pages + ["weights.json"]
    pooled = json.loads((out / "weights.json").read_text())
    assert pooled["source"] == [str(folder / f"{t}.csv") for t in TRIALS[:4]]
    assert len(pooled["fit_rms"]) == 4

    def widths(record):
        return {n: high - low for n, (low, high) in record["uncertainty"]["ci95"].items()}

    for trial in TRIALS[:4]:
        single = widths(weights(parallel[0], trial))
        assert all(w < single[n] for n, w in widths(pooled).items()), trial
    for name, truth in zip(NAMES, WEIGHTS):
        low, high = pooled["uncertainty"]["ci95"][name]
        assert low <= truth <= high, (name, low, truth, high)


def test_motion_inputs_expand_folders_and_patterns(folder, tmp_path):
    optimized = folder.parent / "optimize"
    assert batch.expand_motion([str(optimized)]) == [optimized / "result.json"]
    csvs = [folder / f"{name}.csv" for name in ("corrupt", *TRIALS)]
    assert batch.expand_motion([str(folder)]) == csvs
    assert batch.expand_motion([str(folder / "trial0[12].csv"),
                                str(folder / "trial01.csv")]) == csvs[1:3]
    assert batch.trial_names([optimized / "result.json", *csvs[:2]]) == \
        ["optimize", "corrupt", "trial01"]


EXPANSION_ERRORS = {
    "missing file": (["nowhere.csv"], "which does not exist"),
    "empty pattern": (["*.nothing"], "found none"),
    "empty folder": (["."], "found none"),
}


@pytest.mark.parametrize("specs, message", EXPANSION_ERRORS.values(),
                         ids=EXPANSION_ERRORS.keys())
def test_motion_inputs_that_name_nothing_are_errors(specs, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=message):
        batch.expand_motion(specs)


def test_trials_sharing_a_name_are_an_error(folder, tmp_path):
    other = write_csv(tmp_path / "trial01.csv", [[0.0] * 3] * 201)
    with pytest.raises(ValueError, match="would share the trial name 'trial01'"):
        batch.trial_names([folder / "trial01.csv", other])


@pytest.mark.dask
def test_dask_backend_gives_the_serial_weights(folder, serial, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    out = tmp_path / "out"
    with distributed.LocalCluster(n_workers=1, processes=False,
                                  dashboard_address=None) as cluster:
        code, _, stderr = run(ioc_argv(folder / SUBSET, extra=[
            *NOISE, "--out", str(out), "--backend", "dask", "--scheduler",
            cluster.scheduler_address]))
        worker, = cluster.workers.values()
        assert worker.state.executed_count > 0  # the trials ran on the Dask worker
    assert code == 0, stderr
    for trial in TRIALS[:4]:
        d, s = weights(out, trial)["weights"], weights(serial[0], trial)["weights"]
        assert d == s, (trial, d, s)


def test_relative_paths_resolve_in_each_batchs_own_folder(folder, tmp_path, monkeypatch):
    """Two parallel batches of one process from two folders, by relative paths, the first
    folder removed before the second batch: loky's workers outlive a batch, and before
    they took the batch's folder the second batch's trials read the first's folder (gone:
    'does not exist'). Reference: the same files estimated in this process (--jobs 1)."""
    settings = batch.Settings(costs=tuple(NAMES), model="chain3", samples=40,
                              control_points=12, noise=NOISE_RAD, jobs=2)
    first, second = tmp_path / "first", tmp_path / "second"
    for place, trials in ((first, TRIALS[:2]), (second, TRIALS[2:4])):
        place.mkdir()
        for i, trial in enumerate(trials):
            shutil.copy(folder / f"{trial}.csv", place / f"t{i}.csv")
    relative = [Path("t0.csv"), Path("t1.csv")]
    monkeypatch.chdir(first)
    assert all(o.error is None for o in batch.run_batch(relative, settings))
    monkeypatch.chdir(second)
    shutil.rmtree(first)
    parallel = batch.run_batch(relative, settings)
    serial = batch.run_batch(relative, dataclasses.replace(settings, jobs=1))
    assert [o.error for o in parallel] == [None, None]
    assert [o.record["weights"] for o in parallel] == [o.record["weights"] for o in serial]
