"""examples/real_arm.py on the real kick clip (small spline, the same path): what it prints
against quantities recomputed here from the files it writes and from the clip file read
by its published frame layout (not by ioc.data)."""
import importlib.util
import json
import re
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import numpy as np
import pytest

pybullet_data = pytest.importorskip("pybullet_data")   # the test extra: data files only
pytest.importorskip("matplotlib")                      # the plot extra: real_arm.png
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "real_arm.py"
KICK = Path(pybullet_data.getDataPath()) / "data" / "motions" / "humanoid3d_kick.txt"
ELBOW_AT = 29
"""The right elbow's hinge angle (rad) in a DeepMimic frame (tests/test_clips.py)."""
PRINTED = 1e-2
"""RMS values are printed with two decimals (deg)."""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(stdout, records, the CSV's header and rows, the folder) of the example with 12
    control points, 60 samples and no joint limits (the suite's time; the example's
    default has the model's)."""
    spec = importlib.util.spec_from_file_location("real_arm", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = tmp_path_factory.mktemp("real_arm")
    stdout = StringIO()
    with redirect_stdout(stdout):
        records = example.main(["--clip", str(KICK), "--control-points", "12",
                                "--samples", "60", "--limits", "none", "--out", str(out)])
    header = (out / "real_arm.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    table = np.loadtxt(out / "real_arm.csv", delimiter=",", skiprows=1)
    return stdout.getvalue(), records, header, table, out


def test_written_rows_are_the_clip_frames_in_the_window(run):
    """Times and the elbow angle against the clip file's frames (durations cumulated,
    hinge column), inside the printed window."""
    stdout, records, header, table, _ = run
    frames = np.array(json.loads(KICK.read_text())["Frames"])
    times = np.r_[0.0, np.cumsum(frames[:-1, 0])]
    t0, t1 = records["costs"]["window"]
    keep = (times >= t0 - 1e-9) & (times <= t1 + 1e-9)
    assert f"movement window {t0:.4g}-{t1:.4g} s ({keep.sum()} frames)" in stdout
    np.testing.assert_allclose(table[:, 0], times[keep], rtol=1e-9)  # %.10g of the CSV
    elbow = table[:, header.index("data:right_elbow_Z")]
    np.testing.assert_allclose(elbow, np.rad2deg(frames[keep, ELBOW_AT]), rtol=1e-9,
                               atol=1e-9)            # %.10g of the CSV


@pytest.mark.parametrize("label", ["costs", "jerk"])
def test_printed_rms_is_the_rms_of_the_written_motion_against_the_data(run, label):
    stdout, records, header, table, _ = run
    names = list(records[label]["rms_deg"])
    per_joint = [np.sqrt(np.mean((table[:, header.index(f"{label}:{n}")]
                                  - table[:, header.index(f"data:{n}")]) ** 2)) for n in names]
    np.testing.assert_allclose(list(records[label]["rms_deg"].values()), per_joint,
                               rtol=1e-8)            # the CSV rounds to 10 digits
    all_joints = float(np.sqrt(np.mean(np.square(per_joint))))
    title = "5 costs" if label == "costs" else "joint jerk alone"
    block = stdout.split(f"{title}:")[1]
    printed = re.search(r"RMS deg: (.*); all ([0-9.]+)", block)
    values = [float(part.rsplit(" ", 1)[1]) for part in printed.group(1).split(", ")]
    np.testing.assert_allclose(values, per_joint, atol=PRINTED / 2 + 1e-9)
    assert abs(float(printed.group(2)) - all_joints) <= PRINTED / 20 + 1e-9  # 3 decimals


def test_weights_lie_on_the_simplex_inside_their_intervals_and_the_verdict_follows(run):
    """A weight is undetermined when its 95 % interval reaches 0 (ioc.estimate)."""
    stdout, records, _, _, _ = run
    costs = records["costs"]
    w, ci = np.array(costs["weights"]), np.array(costs["ci95"])
    assert abs(w.sum() - 1) <= 1e-12 and np.all(w >= 0)
    assert np.all((ci[:, 0] <= w) & (w <= ci[:, 1]))
    reaches_zero = [n for n, (lo, _) in zip(costs["costs"], ci) if lo <= 0]
    assert costs["undetermined"] == reaches_zero
    assert costs["identifiable"] == (not reaches_zero)
    verdict = "5 costs: identifiable" if not reaches_zero else "5 costs: NOT identifiable"
    assert verdict in stdout
    assert records["jerk"]["weights"] == [1.0] and "joint jerk alone: identifiable" in stdout
    assert abs(sum(costs["shares"]) - 1) <= 1e-12
    worse = costs["rms_deg_all"] > records["jerk"]["rms_deg_all"]
    assert ("fit worse than joint jerk alone" in stdout) == worse


def test_example_states_what_the_weights_do_not_mean_and_writes_the_plot(run):
    stdout, _, _, _, out = run
    for words in ("single take", "no contacts", "a model of an arm", "not a person"):
        assert words in stdout
    assert (out / "real_arm.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
