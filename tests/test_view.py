"""The motion page without a browser: its embedded data read back from the HTML (stick
figures against cmtm.link_poses, curves against the spline and cmtm.inverse_dynamics, a
valid plotly figure), the weights.json motions it draws, ``cmtm view`` and the pages that
``cmtm optimize`` and ``cmtm ioc`` write, and bad input (one line, exit 2, nothing
written)."""
import json

import numpy as np
import pytest

import cmtm
from ioc.bspline import DD, ClampedBSpline
from ioc.estimate import kkt_stationarity
from ioc.problem import MotionProblem
from ioc.results import load_result
from ioc.weights_io import read_weights
from ioc_synthetic import COSTS, NOISE_RAD, TIMES, build, ioc_argv, run
from stick_segments import assert_same_segments, drawn_segments, expected_segments

view = pytest.importorskip("ioc.view")
pytest.importorskip("plotly", reason="plotly (the plot extra) is missing")

EXACT = 1e-12
"""JSON numbers round-trip float64: the page holds link_poses' own numbers (a tip: one
3x3 product), so round-off only."""


def polylines(figure, trace):
    """(frames, P, 3) points of trace ``trace`` over the skeleton figure's frames."""
    return np.array([[[np.nan if v is None else v for v in frame["data"][trace][axis]]
                      for axis in "xyz"] for frame in figure["frames"]]).transpose(0, 2, 1)


def read_page(path):
    """The data object embedded in a page file."""
    return view.page_data(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """The synthetic problem (ioc_synthetic): a result.json, a noisy measured CSV, and
    cmtm ioc run on the CSV (data estimator) with --out."""
    problem = build(tmp_path_factory.mktemp("view"))
    q = problem.q + np.random.default_rng(0).normal(0.0, NOISE_RAD, problem.q.shape)
    csv = problem.folder / "trial.csv"
    np.savetxt(csv, np.column_stack([TIMES, q]), delimiter=",", comments="",
               header="time,joint1,joint2,joint3")
    out = problem.folder / "ioc"
    code, _, err = run(ioc_argv(csv, extra=["--out", str(out), "--quiet"]))
    assert code == 0, err
    problem.csv, problem.ioc = csv, out
    return problem


def test_optimize_page_points_equal_link_poses_and_curves_the_spline(synthetic):
    page = read_page(synthetic.optimized / "motion.html")
    model, problem, _, theta, _ = load_result(synthetic.optimized)
    times = np.array(page["times"])
    assert len(times) == view.FRAMES and np.allclose(times, np.linspace(0.0, 2.0, len(times)))
    stack = problem.spline.evaluate(theta, times, 3)
    drawn = polylines(page["skeleton"], 0)
    for polyline, q in zip(drawn, stack[:, 0]):
        assert_same_segments(drawn_segments(polyline), expected_segments(model, q), EXACT)
    tau = cmtm.inverse_dynamics(model, stack, order=1)
    curves = page["curves"]["data"]
    names = [trace["name"] for trace in curves]
    assert names == list(model.joint_names) * 5
    assert all(trace["visible"] is True for trace in curves)     # 3 joints: all drawn
    expected = [stack[:, 0], stack[:, 1], stack[:, 3], tau[:, 0], tau[:, 1]]
    for k, trace in enumerate(curves):
        assert np.array_equal(trace["x"], times)
        assert np.allclose(trace["y"], expected[k // 3][:, k % 3], rtol=0, atol=1e-9)


def test_page_is_a_valid_plotly_figure_with_play_pause_and_slider(synthetic):
    import plotly.graph_objects as go
    page = read_page(synthetic.ioc / "motion.html")
    skeleton = go.Figure(page["skeleton"])                   # validates every attribute
    go.Figure(page["curves"])
    assert [b.label for b in skeleton.layout.updatemenus[0].buttons] == ["Play", "Pause"]
    steps = skeleton.layout.sliders[0].steps
    assert [list(step.args[0]) for step in steps] == [[frame.name] for frame in skeleton.frames]
    assert len(steps) == len(page["times"]) == view.FRAMES
    titles = [page["curves"]["layout"][key]["title"]["text"] for key in
              ("yaxis", "yaxis2", "yaxis3", "yaxis4", "yaxis5")]
    assert titles == ["joint angle (rad)", "joint velocity (rad/s)", "joint jerk (rad/s³)",
                      "joint torque (N m)", "joint torque rate (N m/s)"]
    assert "joint_torque" in skeleton.layout.title.text and "chain3" in skeleton.layout.title.text


def test_weights_json_holds_the_data_and_the_optimal_motion(synthetic):
    record = read_weights(synthetic.ioc / "weights.json")
    entry, = record["motions"]
    data = np.loadtxt(synthetic.csv, delimiter=",", skiprows=1)
    assert np.array_equal(entry["times"], data[:, 0]) and np.array_equal(entry["q"], data[:, 1:])
    motion = entry["motion"]
    assert motion["kind"] == "optimal" and motion["degree"] == 5
    assert np.shape(motion["control_points"]) == (12, 3)
    theta = np.array(motion["control_points"])
    spline = ClampedBSpline(5, 12, 2.0, motion["knots"])
    fitted = spline.evaluate(theta, data[:, 0], 0)[:, 0]
    # the optimum for the estimated weights stays within a few noise levels of the data
    assert np.sqrt(np.mean((fitted - data[:, 1:]) ** 2)) < 5 * NOISE_RAD
    # and is optimal for them: the direct problem's KKT residual vanishes (the smoothing
    # fit's is 2e-2), to the rounding of the stored control points
    problem = MotionProblem(view.resolve_model("chain3"), COSTS, duration=2.0, samples=40,
                            control_points=12, start=theta[0], goal=theta[-1])
    weights = list(record["weights"].values())
    assert kkt_stationarity(problem, DD.of(theta), weights)[1] < 1e-8


def test_measured_trial_page_draws_data_and_optimum_from_link_poses(synthetic):
    record = read_weights(synthetic.ioc / "weights.json")
    page = read_page(synthetic.ioc / "motion.html")
    model = view.resolve_model("chain3")
    entry = record["motions"][0]
    keep = np.unique(np.round(np.linspace(0, len(TIMES) - 1, view.FRAMES)).astype(int))
    assert np.array_equal(page["times"], np.array(entry["times"])[keep])
    data_q = np.array(entry["q"])[keep]
    motion = entry["motion"]
    spline = ClampedBSpline(5, 12, 2.0, motion["knots"])
    optimal_q = spline.evaluate(np.array(motion["control_points"]), page["times"], 0)[:, 0]
    names = [trace["name"] for trace in page["skeleton"]["data"]]
    assert names == ["data", view.MOTION_LABELS["optimal"], "base"]
    for trace, q in ((0, data_q), (1, optimal_q)):
        for polyline, q_k in zip(polylines(page["skeleton"], trace), q):
            assert_same_segments(drawn_segments(polyline), expected_segments(model, q_k))
    data = [trace for trace in page["curves"]["data"] if trace["name"].endswith(" (data)")]
    assert [trace["name"] for trace in data] == ["joint1 (data)", "joint2 (data)",
                                                 "joint3 (data)"]
    assert all(trace["yaxis"] == "y1" and trace["legendgroup"] == trace["name"][:6]
               for trace in data)                             # the angle panel, the joint's
    assert np.array_equal(np.array([trace["y"] for trace in data]).T, data_q)


def test_result_json_and_kkt_trials_record_their_motions(synthetic, tmp_path):
    code, _, err = run(["ioc", "--motion", str(synthetic.optimized), "--costs", COSTS,
                        "--reoptimize", "--out", str(tmp_path), "--quiet"])
    assert code == 0, err
    entry, = read_weights(tmp_path / "weights.json")["motions"]
    model, problem, _, theta, _ = load_result(synthetic.optimized)
    assert entry["motion"]["kind"] == "reoptimized" and len(entry["times"]) == problem.samples
    assert np.array_equal(entry["q"], problem.spline.evaluate(theta, entry["times"], 0)[:, 0])
    assert (tmp_path / "motion.html").is_file()
    code, _, err = run(ioc_argv(synthetic.csv, extra=["--estimator", "kkt", "--out",
                                                      str(tmp_path / "kkt"), "--quiet"]))
    assert code == 0, err
    assert read_weights(tmp_path / "kkt" / "weights.json")["motions"][0]["motion"]["kind"] \
        == "fit"


def test_view_command_writes_the_page_of_each_input(synthetic, tmp_path):
    for argv, name in (([str(synthetic.optimized)], "result"),
                       ([str(synthetic.ioc / "weights.json")], "weights"),
                       ([str(synthetic.csv), "--model", "chain3"], "csv")):
        out = tmp_path / f"{name}.html"
        code, stdout, err = run(["view", *argv, "--out", str(out), "--frames", "20"])
        assert code == 0 and err == "" and stdout == f"wrote {out}\n"
        page = read_page(out)
        assert len(page["times"]) == len(page["skeleton"]["frames"]) == 20
    data_only = read_page(tmp_path / "csv.html")
    assert [trace["name"] for trace in data_only["skeleton"]["data"]] == ["data", "base"]


def test_optimize_and_ioc_skip_the_page_with_no_view(synthetic, tmp_path):
    code, _, err = run(ioc_argv(synthetic.csv, extra=["--estimator", "kkt", "--no-view",
                                                      "--out", str(tmp_path), "--quiet"]))
    assert code == 0, err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["weights.json"]


BAD_VIEW = {  # extra arguments (INPUT first; {folder} is the synthetic folder), message
    "joints not the model's": (["{folder}/trial.csv", "--model", "panda"],
                               "expected a column for every joint"),
    "motion file without model": (["{folder}/trial.csv"], "--model: required"),
    "out in a missing folder": (["{folder}/optimize", "--out", "{tmp}/missing/motion.html"],
                                "--out: expected a file in an existing folder"),
    "out under a file": (["{folder}/optimize", "--out", "{folder}/trial.csv/motion.html"],
                         "--out: expected a file in an existing folder"),
    "out a folder": (["{folder}/optimize", "--out", "{tmp}"], "--out: expected an HTML file"),
    "missing input": (["{tmp}/nothing.json"], "does not exist"),
    "other model than recorded": (["{folder}/optimize", "--model", "panda"],
                                  "records the model 'chain3'"),
    "weights.json trial out of range": (["{folder}/ioc/weights.json", "--trial", "2"],
                                        "--trial: expected 1..1"),
}


@pytest.mark.parametrize("argv, message", BAD_VIEW.values(), ids=BAD_VIEW.keys())
def test_bad_view_input_is_one_line_exit_2_and_writes_nothing(argv, message, synthetic,
                                                              tmp_path):
    before = sorted(synthetic.folder.rglob("*"))
    argv = [arg.format(folder=synthetic.folder, tmp=tmp_path) for arg in argv]
    code, stdout, err = run(["view", *argv])
    assert code == 2 and stdout == ""
    assert err.startswith("cmtm view: error: ") and err.count("\n") == 1, err
    assert message in err
    assert sorted(synthetic.folder.rglob("*")) == before and not any(tmp_path.iterdir())


def test_weights_json_without_motions_is_a_one_line_error(synthetic, tmp_path):
    record = read_weights(synthetic.ioc / "weights.json")
    del record["motions"]
    old = tmp_path / "weights.json"
    old.write_text(json.dumps(record))
    code, _, err = run(["view", str(old), "--out", str(tmp_path / "page.html")])
    assert code == 2 and "expected the key 'motions'" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["weights.json"]


def test_a_batch_writes_a_page_per_trial_and_a_rerun_keeps_them(synthetic, tmp_path):
    copies = [tmp_path / f"{name}.csv" for name in ("walk", "reach")]
    for copy in copies:
        copy.write_bytes(synthetic.csv.read_bytes())
    out = tmp_path / "out"
    argv = ioc_argv(*copies, extra=["--estimator", "kkt", "--out", str(out), "--quiet"])
    assert run(argv)[0] == 0
    pages = [out / name / "motion.html" for name in ("walk", "reach")]
    assert all(sorted(p.name for p in page.parent.iterdir()) == ["motion.html", "weights.json"]
               for page in pages)
    written = [page.stat().st_mtime_ns for page in pages]
    assert run(argv)[0] == 0                                  # every trial skipped
    assert [page.stat().st_mtime_ns for page in pages] == written


def test_many_joints_draw_those_moving_most_and_list_the_others(tmp_path):
    model = view.resolve_model("chain16")
    times = np.linspace(0.0, 1.0, 30)
    amplitude = np.arange(1, 17) / 16.0                  # joint16 moves most, joint01 least
    q = np.zeros((30, 4, 16))
    q[:, 0] = np.sin(np.pi * times)[:, None] * amplitude
    page = view.Page(model, "chain16", times, (view.Track("data", q[:, :1]),))
    curves = view.curves_figure(page)
    drawn = [trace["name"] for trace in curves["data"] if trace["visible"] is True]
    assert drawn == [f"joint{k:02d} (data)" for k in range(5, 17)]
    assert "12 of 16 joints drawn" in curves["layout"]["annotations"][0]["text"]


def test_hidden_joints_lines_wait_and_rejoin_in_panel_order():
    model = view.resolve_model("chain16")
    times = np.linspace(0.0, 1.0, 30)
    rng = np.random.default_rng(0)
    q = rng.normal(size=(30, 4, 16)) * (np.arange(1, 17) / 16.0)     # joint16 moves most
    tau = rng.normal(size=(30, 2, 16))
    page = view.Page(model, "chain16", times,
                     (view.Track("data", q[:, :1]), view.Track("motion", q, tau)))
    curves = view.curves_figure(page)
    first, hidden = curves["data"], curves["hidden"]
    # the first draw: every drawn line and one legend entry per joint; 4 hidden joints' other
    # lines (their data line, 4 motion panels) wait, hidden
    assert all(trace["visible"] == "legendonly" and not trace["showlegend"]
               for trace in hidden["data"])
    assert len(hidden["data"]) == 4 * 5 and len(first) == 6 * 16 - 20
    assert sorted(trace["name"] for trace in first if trace["showlegend"]) \
        == sorted(model.joint_names)
    whole = list(first)
    for index, trace in zip(hidden["indices"], hidden["data"]):
        whole.insert(index, trace)
    names = list(model.joint_names)
    assert [trace["name"] for trace in whole] \
        == [name + " (data)" for name in names] + names * 5            # panel by panel
    assert [trace["yaxis"] for trace in whole] \
        == ["y1"] * 32 + [f"y{row}" for row in range(2, 6) for _ in names]
