"""``cmtm`` under stress, as subprocesses where a real process must be stopped or killed:
Ctrl-C (SIGINT to the process group, as a terminal sends it) and SIGTERM as one line with
the finished files kept, also during a compile and through loky and Dask batches; nothing
of a killed batch outlives it; a locked --out; an unwritable --out found before any work;
malformed files, other data and odd file names in a batch; serial, loky and Dask weights
equal bit for bit (issue 36).

Trials are the small synthetic problem of ioc_synthetic (chain3, 40 samples, 12 control
points, well under a second each); subprocesses inherit the session's Numba cache."""
import csv
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from conftest import ROOT
from ioc import batch, cli, results
from ioc.bspline import clamped_knots
from ioc.data import fit_spline
from ioc_synthetic import (NAMES, NOISE_RAD, TIMES, build, ioc_argv, noisy, run, write_csv,
                           write_trials)

NOISE = ["--noise", repr(NOISE_RAD)]
TRIALS = tuple(f"trial{i:02d}" for i in range(1, 13))
LONG_OPTIMIZE = ["optimize", "--model", "chain3", "--costs", "joint_velocity,joint_jerk,"
                 "joint_torque_rate", "--weights", "1,0.5,0.01", "--samples", "800",
                 "--control-points", "200"]
"""An optimization that iterates for seconds (22 iterations), one progress line each."""
PAUSED_OPTIMIZE = [*LONG_OPTIMIZE[:-4], "--samples", "400", "--control-points", "100"]
"""One that iterates long enough to be paused after its first iteration (~2 s)."""
WAIT_SECONDS = 120
GONE_SECONDS = 5.0
"""Every process of a stopped command is gone this soon (workers poll every 0.5 s)."""


@pytest.fixture(scope="module")
def trials(tmp_path_factory):
    """Twelve noisy sample sets of the synthetic optimum in a folder."""
    case = build(tmp_path_factory.mktemp("robust"))
    case.trials = write_trials(case, TRIALS)
    return case


def start(argv, cwd, **env):
    """``cmtm argv`` (this checkout) in a session of its own, as a terminal's job."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")]), **env}
    return subprocess.Popen([sys.executable, "-m", "ioc.cli", *argv], cwd=cwd,
                            env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def wait_for(condition, what):
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"waited {WAIT_SECONDS} s for {what}"
        time.sleep(0.05)


def group_gone(pgid, seconds=GONE_SECONDS):
    """Whether every process of the group ``pgid`` has ended within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def finish(process):
    """(exit status, stdout, stderr) once ``process`` ends."""
    stdout, stderr = process.communicate(timeout=WAIT_SECONDS)
    return process.returncode, stdout, stderr


def finished_weights(out):
    """The weights.json files of a batch's folder, each parsed whole."""
    return {path.parent.name: json.loads(path.read_text(encoding="utf-8"))
            for path in out.glob("*/weights.json")}


def hidden_files(folder):
    """Temporary (dot) files left in ``folder``: a file written halfway."""
    return [path for path in folder.rglob(".*")]


# --- 3: Ctrl-C and SIGTERM are one line ------------------------------------------------------

def test_ctrl_c_while_optimizing_is_one_line_and_writes_nothing(tmp_path):
    process = start([*LONG_OPTIMIZE, "--out", "out"], tmp_path)
    assert process.stderr.readline().startswith("iteration")     # solving
    os.killpg(process.pid, signal.SIGINT)
    code, stdout, stderr = finish(process)
    assert code == cli.INTERRUPTED and stdout == ""
    lines = stderr.splitlines()
    assert lines[-1] == "cmtm optimize: interrupted"
    assert all(line.startswith("iteration") for line in lines[:-1])     # no traceback
    assert not (tmp_path / "out").exists()       # created for the run, left empty, removed
    assert group_gone(process.pid)


def test_ctrl_c_while_compiling_is_one_line_and_stops_the_compilers(tmp_path):
    """An empty Numba cache: the notice, then Ctrl-C while the processes compile."""
    process = start(["precompile"], tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    notice = process.stderr.readline()
    assert notice.startswith("cmtm precompile: compiling the engine's kernels")
    time.sleep(1.0)                                              # inside Numba's compiler
    os.killpg(process.pid, signal.SIGINT)
    code, stdout, stderr = finish(process)
    assert code == cli.INTERRUPTED and stdout == "", stderr
    assert stderr == "cmtm precompile: interrupted\n"
    assert group_gone(process.pid)


def test_signals_during_a_set_of_files_take_effect_once_it_is_written():
    """ioc.results.signals_deferred: the set is finished, then the signal acts. Python's own
    SIGINT handler is installed for the test: a test run started in the background of a
    non-interactive shell inherits SIGINT ignored (seen: `nohup bash .ci/run &`)."""
    finished = []
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with results.signals_deferred():
                signal.raise_signal(signal.SIGINT)
                finished.append("the rest of the set")
        assert finished == ["the rest of the set"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, inherited)



def test_what_libraries_log_after_a_stop_signal_is_not_printed(caplog):
    """cli.stop_signals: after SIGINT, an error logged while the command stops (as a local
    Dask cluster's scheduler logs "Couldn't gather keys" for the cancelled tasks: seen
    once before the one line in a Ctrl-C'd Dask batch) prints nothing; logging is back on
    once the context ends. The same error before the signal is printed (so the test can
    fail)."""
    logger = logging.getLogger("distributed.scheduler")
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with cli.stop_signals():
            logger.error("before the stop")
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signal.SIGINT)
            logger.error("Couldn't gather keys")
        logger.error("after the command")
    finally:
        signal.signal(signal.SIGINT, inherited)
    assert [record.getMessage() for record in caplog.records] == ["before the stop",
                                                                  "after the command"]

def stop_batch(trials, tmp_path, how, backend="loky"):
    """A --jobs 2 batch of the twelve trials, stopped by ``how`` once a trial finished:
    (exit status, stderr, out folder, process group)."""
    out = tmp_path / "out"
    process = start(ioc_argv(trials.trials, extra=[*NOISE, "--jobs", "2", "--backend",
                                                   backend, "--out", str(out), "--quiet"]),
                    tmp_path)
    wait_for(lambda: any(out.glob("*/weights.json")), "a finished trial")
    how(process.pid)
    code, _, stderr = finish(process)
    return code, stderr, out, process.pid


def ctrl_c(pid):
    os.killpg(pid, signal.SIGINT)   # a terminal's Ctrl-C reaches every process of the job


@pytest.mark.parametrize("backend", ["loky", pytest.param("dask", marks=pytest.mark.dask)])
def test_ctrl_c_in_a_batch_is_one_line_and_keeps_the_finished_trials(trials, tmp_path,
                                                                     backend):
    if backend == "dask":
        pytest.importorskip("dask.distributed")
    code, stderr, out, pgid = stop_batch(trials, tmp_path, ctrl_c, backend)
    assert code == cli.INTERRUPTED and stderr == "cmtm ioc: interrupted\n"
    finished = finished_weights(out)
    assert 1 <= len(finished) < len(TRIALS)
    assert all(list(record["weights"]) == NAMES for record in finished.values())
    assert hidden_files(out) == [] and not (out / "summary.csv").exists()
    assert group_gone(pgid)


# --- 14: nothing of a batch outlives it --------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_nothing_of_a_killed_batch_outlives_it(trials, tmp_path, sig):
    """The batch process alone is signalled (its loky workers and resource trackers are
    not): within GONE_SECONDS none of them is left (loky's idle workers lived 300 s).
    SIGKILL cannot be handled: a weights.json being written may leave its temporary file
    (never a half-written weights.json), which the next run into --out removes."""
    code, stderr, out, pgid = stop_batch(trials, tmp_path, lambda pid: os.kill(pid, sig))
    assert group_gone(pgid)
    assert finished_weights(out)
    if sig == signal.SIGTERM:
        assert code == cli.TERMINATED and stderr == "cmtm ioc: terminated\n"
        assert hidden_files(out) == []
    else:
        assert code == -signal.SIGKILL
        assert all(path.match(results.TEMPORARY_GLOB) for path in hidden_files(out))
        with results.output_folder(out):
            assert hidden_files(out) == []


@pytest.mark.parametrize("quiet", [False, True], ids=["loky's own", "a batch's"])
def test_a_batchs_resource_tracker_reports_no_leak_after_the_stop_line(quiet):
    """loky's resource tracker outlives the process that started it and reports what that
    process left registered on its stderr: after a SIGTERM (one CI run) its two warnings
    followed "cmtm ioc: terminated". A batch's tracker (batch.quiet_resource_tracker) does
    not print them; loky's own does (the case that shows the test can fail)."""
    script = (f"import sys; from ioc.commands import batch\n"
              f"if {quiet}: batch.quiet_resource_tracker()\n"
              f"from joblib.externals.loky.backend import resource_tracker\n"
              f"resource_tracker.ensure_running()\n"
              f"resource_tracker.register('/loky-0-cmtm-never-made', 'semlock')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=WAIT_SECONDS, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0
    leaked = "leaked semlock objects" in done.stderr
    assert (done.stderr == "") if quiet else leaked, done.stderr


def test_the_next_run_removes_temporary_files_a_killed_run_left(tmp_path):
    """A SIGKILLed write's temporary files in --out and in a trial folder are gone once the
    next run holds --out; the run's own files and other dot files stay."""
    (tmp_path / "trial01").mkdir()
    left = [tmp_path / ".summary.csv.0a1b2c3d4e5f.tmp",
            tmp_path / "trial01" / ".weights.json.00ff00ff00ff.tmp"]
    kept = [tmp_path / "trial01" / "weights.json", tmp_path / ".notes"]
    for path in left + kept:
        path.write_text("{", encoding="utf-8")
    with results.output_folder(tmp_path):
        assert [path.exists() for path in left + kept] == [False, False, True, True]


# --- 12, 13: --out locked, and checked before any work ----------------------------------

def test_a_run_into_a_locked_out_is_refused_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    argv = ["optimize", "--model", "chain3", "--costs", "joint_jerk", "--weights", "1",
            "--samples", "40", "--control-points", "12", "--out", str(out), "--quiet"]
    with results.output_folder(out):             # another run holds it
        code, stdout, stderr = finish(start(argv, tmp_path))
        assert code == 2 and stdout == ""
        assert stderr == f"cmtm optimize: error: --out {out}: {results.LOCKED_OUT}\n"
        assert list(out.iterdir()) == []
    assert run(argv)[0] == 0                              # released: the folder is free


def test_two_runs_into_one_out_never_mix_their_files(tmp_path):
    """An optimization holds --out (paused by SIGSTOP while it solves, so that it still
    does); a second one into it is refused; resumed, the first writes its whole set."""
    first = start([*PAUSED_OPTIMIZE, "--out", "out"], tmp_path)
    assert first.stderr.readline().startswith("iteration")
    os.killpg(first.pid, signal.SIGSTOP)
    try:
        second = finish(start(["optimize", "--model", "chain3", "--costs", "joint_jerk",
                               "--weights", "1", "--out", "out"], tmp_path))
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    assert second[0] == 2 and results.LOCKED_OUT in second[2]
    code, _, _ = finish(first)
    record = json.loads((tmp_path / "out" / "result.json").read_text(encoding="utf-8"))
    assert code in (0, 1) and record["costs"] == ["joint_velocity", "joint_jerk",
                                                  "joint_torque_rate"]


def unwritable_folder(tmp_path):
    """An existing folder this process cannot create files in: mode 0o555, or for root
    (whom modes do not stop) /sys, read-only to it; None where neither is found."""
    folder = tmp_path / "read_only"
    folder.mkdir(mode=0o555)
    for candidate in (folder, "/sys"):
        try:
            results._check_writable(candidate)
        except ValueError:
            return candidate
    return None


@pytest.mark.parametrize("command", ["optimize", "ioc"])
def test_an_out_that_cannot_take_files_is_refused_before_any_work(command, trials, tmp_path,
                                                                  monkeypatch):
    """A path below a file, and an unwritable folder: one line, exit 2, and neither the
    solve nor a trial started (they would fail the test)."""
    def never(*args, **kwargs):
        raise AssertionError("work started")
    monkeypatch.setattr(cli.direct, "solve", never)
    monkeypatch.setattr(batch, "run_batch", never)
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    argv = ["optimize", "--model", "chain3", "--costs", "joint_jerk", "--weights", "1"] \
        if command == "optimize" else ioc_argv(trials.trials, extra=NOISE)
    for out, message in ((blocker / "out", "cannot create the folder"),
                         (unwritable_folder(tmp_path), "expected a folder this run can "
                                                       "write into")):
        if out is None:
            continue
        code, stdout, stderr = run([*argv, "--out", str(out)])
        assert code == 2 and stdout == "" and stderr.count("\n") == 1, stderr
        assert f"--out {out}: {message}" in stderr


# --- 9, 10, 11: malformed files, other data, odd names in a batch -------------------------

def malformed_files(folder, optimized):
    """{name: path} of inputs that broke whole batches: an unclosed quote in a large CSV
    (csv.Error), a CSV of only commas (IndexError), a result.json whose fields have other
    types (TypeError) and a deeply nested JSON (RecursionError)."""
    header = "time,joint1,joint2,joint3\n"
    quote = folder / "quote.csv"
    quote.write_text(header + '0,"1,2,3\n' + "1,1,2,3\n" * 30000, encoding="utf-8")
    commas = folder / "commas.csv"
    commas.write_text(",,,\n,,,\n", encoding="utf-8")
    record = json.loads((optimized / "result.json").read_text(encoding="utf-8"))
    typed = folder / "typed" / "result.json"
    typed.parent.mkdir()
    typed.write_text(json.dumps({**record, "samples": "forty", "costs": 5}), encoding="utf-8")
    nested = folder / "nested" / "result.json"
    nested.parent.mkdir()
    nested.write_text("[" * 100000 + "]" * 100000, encoding="utf-8")
    return {"quote": quote, "commas": commas, "typed": typed, "nested": nested}


def unusable_files(folder):
    """{name: (path, message)} of well-formed files a trial cannot use, whose errors did
    not name the file: too few samples for the spline, a duration beyond 1e6 s."""
    header = "time,joint1,joint2,joint3\n"
    few = folder / "few.csv"
    few.write_text(header + "".join(f"{t},1,1,1\n" for t in range(5)), encoding="utf-8")
    long = folder / "long.csv"
    long.write_text(header + "".join(f"{t},1,1,1\n" for t in np.linspace(0, 1e7, 21)),
                    encoding="utf-8")
    return {"few": (few, "too few samples for the spline"),
            "long": (long, "duration: expected a number of seconds in")}


def test_every_error_of_a_trial_is_that_trials_error(trials, tmp_path):
    """Malformed and unusable files among good ones: each fails as its trial, with a line
    naming its file (in summary.csv and on stderr); the good trial finishes; exit 1."""
    bad = malformed_files(tmp_path, trials.optimized)
    unusable = unusable_files(tmp_path)
    good = trials.trials / "trial01.csv"
    out = tmp_path / "out"
    code, _, stderr = run(ioc_argv(good, *bad.values(), *(path for path, _ in
                                                          unusable.values()),
                                   extra=["--out", str(out)]))
    assert code == 1
    rows = {row["trial"]: row for row in summary(out)}
    assert rows["trial01"]["status"] == "ok"
    for name, (path, message) in {**{name: (path, "") for name, path in bad.items()},
                                  **unusable}.items():
        assert rows[name]["status"] == "failed", name
        error = rows[name]["error"]
        assert error.startswith(f"{path}: ") and message in error, error
        assert "internal" not in error and f"cmtm ioc: error: {error}" in stderr
    assert stderr.count("cmtm ioc: error:") == len(bad) + len(unusable)


@pytest.mark.parametrize("name", ["quote", "commas", "typed", "nested"])
def test_a_malformed_single_file_is_one_line_naming_it(trials, tmp_path, name):
    path = malformed_files(tmp_path, trials.optimized)[name]
    code, stdout, stderr = run(ioc_argv(path))
    assert code == 2 and stdout == "" and stderr.count("\n") == 1
    assert stderr.startswith(f"cmtm ioc: error: {path}: ") and "internal" not in stderr


def summary(out):
    with open(out / "summary.csv", newline="", encoding="utf-8") as file:
        return list(csv.DictReader(file))


def test_a_rerun_on_other_data_estimates_again(trials, tmp_path):
    """Subject B's files carry subject A's names: a rerun into A's --out estimates them
    (sha256 differs) instead of reporting A's weights; a file edited in place too, while
    an unchanged one is skipped."""
    subject_a, subject_b, out = tmp_path / "a", tmp_path / "b", tmp_path / "out"
    for folder, seeds in ((subject_a, (1, 2)), (subject_b, (3, 4))):
        folder.mkdir()
        for name, seed in zip(("x", "y"), seeds):
            shutil.copy(trials.trials / f"trial{seed:02d}.csv", folder / f"{name}.csv")
    assert run(ioc_argv(subject_a, extra=[*NOISE, "--out", str(out)]))[0] == 0
    first = finished_weights(out)
    code, _, stderr = run(ioc_argv(subject_b, extra=[*NOISE, "--out", str(out)]))
    second = finished_weights(out)
    assert code == 0 and stderr.count("made from other input (source_sha256 differ)") == 2
    for name in ("x", "y"):
        assert second[name]["source"] == [str(subject_b / f"{name}.csv")]
        assert second[name]["source_sha256"] == [batch.sha256(subject_b / f"{name}.csv")]
        assert second[name]["weights"] != first[name]["weights"]
    shutil.copy(trials.trials / "trial05.csv", subject_b / "x.csv")      # edited in place
    code, _, stderr = run(ioc_argv(subject_b, extra=[*NOISE, "--out", str(out)]))
    assert code == 0 and "skipping" in stderr and stderr.count("made from other input") == 1
    third = finished_weights(out)
    assert third["y"] == second["y"] and third["x"]["weights"] != second["x"]["weights"]


def test_rerun_of_finished_trials_says_it_wrote_none(trials, tmp_path):
    out = tmp_path / "out"
    subset = [trials.trials / f"{name}.csv" for name in TRIALS[:2]]
    assert run(ioc_argv(*subset, extra=[*NOISE, "--out", str(out)]))[0] == 0
    code, stdout, _ = run(ioc_argv(*subset, extra=[*NOISE, "--out", str(out)]))
    assert code == 0
    assert stdout.splitlines()[-1] == (f"wrote {out / 'summary.csv'} and 0 weights.json "
                                       f"(2 finished earlier, kept)")


def test_trial_names_stay_inside_out_and_off_its_own_files(trials, tmp_path):
    """'...csv' (name '..'), 'summary.csv.csv' and a hidden file fail as trials; the
    others run; nothing is written outside --out and summary.csv stays a file."""
    folder = tmp_path / "odd"
    folder.mkdir()
    for name in ("...csv", "summary.csv.csv", ".hidden.csv", "fine.csv"):
        shutil.copy(trials.trials / "trial01.csv", folder / name)
    out = tmp_path / "runs" / "out"
    code, _, _ = run(ioc_argv(folder, extra=[*NOISE, "--out", str(out)]))
    assert code == 1
    rows = {row["trial"]: row for row in summary(out)}
    assert rows["fine"]["status"] == "ok"
    for name in ("..", "summary.csv", ".hidden"):
        assert rows[name]["status"] == "failed" and "trial name" in rows[name]["error"]
    assert sorted(path.name for path in out.iterdir()) == ["fine", "summary.csv"]
    assert sorted(path.name for path in out.parent.iterdir()) == ["out"]


# --- 7: serial, loky and Dask give the same bits -----------------------------------------

def test_the_smoothing_fit_is_the_same_on_one_and_two_blas_threads():
    """2001 samples, 200 control points, 7 joints: OpenBLAS's factorisations differed by
    5e-11 between one and two threads before fit_spline pinned one."""
    rng = np.random.default_rng(0)
    times = np.linspace(0.0, 2.0, 2001)
    q = np.sin(np.outer(times, np.arange(1, 8))) + 1e-4 * rng.normal(size=(2001, 7))
    knots = clamped_knots(5, 200, 2.0)
    fits = []
    for threads in (1, 2):
        with threadpool_limits(threads, "blas"):
            fits.append(fit_spline(knots, 5, times, q, noise=1e-4, rest_order=1))
    assert np.array_equal(fits[0].control_points, fits[1].control_points)


@pytest.fixture(scope="module")
def dense_trials(trials):
    """Two trials of 2001 samples (1 kHz), for fits of 200 control points."""
    folder = trials.folder / "dense"
    folder.mkdir()
    times = np.linspace(0.0, 2.0, 2001)
    motion = np.column_stack([np.interp(times, TIMES, column) for column in trials.q.T])
    for seed in (1, 2):
        write_csv(folder / f"dense{seed}.csv", noisy(motion, seed), times=times)
    return folder


def batch_weights(folder, out, *extra):
    code, _, stderr = run(ioc_argv(folder, extra=["--estimator", "kkt", "--control-points",
                                                  "200", "--out", str(out), "--quiet",
                                                  *extra]))
    assert code == 0, stderr
    return {name: record["weights"] for name, record in finished_weights(out).items()}


def test_serial_loky_dask_and_single_file_weights_are_the_same_bits(dense_trials, tmp_path):
    """Inverse KKT on fits of 200 control points, where BLAS's thread count changed the
    bits: this process (two BLAS threads), loky's workers (one each) and a local Dask
    cluster's give equal weights, and so does each file alone."""
    serial = batch_weights(dense_trials, tmp_path / "serial", "--jobs", "1")
    assert batch_weights(dense_trials, tmp_path / "loky", "--jobs", "2") == serial
    single = tmp_path / "single"
    code, _, _ = run(ioc_argv(dense_trials / "dense1.csv", extra=[
        "--estimator", "kkt", "--control-points", "200", "--out", str(single), "--quiet"]))
    assert code == 0
    assert json.loads((single / "weights.json").read_text())["weights"] == serial["dense1"]
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        return
    assert batch_weights(dense_trials, tmp_path / "dask", "--backend", "dask", "--jobs",
                         "2") == serial
