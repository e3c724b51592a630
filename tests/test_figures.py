"""The figures' geometry and the PNG figures: stick-figure segments against cmtm.link_poses
(read back from the snapshot figure's plotted data), the view against the points'
principal axes, coinciding curves, units, titles and legends of the time curves."""
import numpy as np
import pytest

import cmtm
import kinematic_trees as kt
from ioc.drawing import (CURVES, coinciding_joints, motion_title, principal_view,
                         stick_figure)
from ioc.results import motion_samples
from stick_segments import assert_same_segments, drawn_segments, expected_segments

plots = pytest.importorskip("ioc.plots", reason="matplotlib (the plot extra) is missing")

@pytest.fixture(scope="module")
def human():
    return kt.compile_tree(kt.human())


@pytest.mark.parametrize("name", ["chain3", "panda", "tree12", "human"])
def test_stick_figure_segments_equal_link_poses(name, jacobian_models, human):
    model = human if name == "human" else jacobian_models[name]
    q = np.random.default_rng(1).uniform(-1.0, 1.0, (3, model.nv))
    stick, polylines = stick_figure(model, q)
    for q_k, polyline in zip(q, polylines):
        assert_same_segments(drawn_segments(polyline), expected_segments(model, q_k))
        T = cmtm.link_poses(model, q_k)
        assert np.array_equal(polyline[stick.joints], T[stick.path[stick.joints] - 1, :3, 3])


def test_principal_view_is_the_smallest_variance_normal_with_up_against_gravity():
    rng = np.random.default_rng(2)
    # points spread 3 m along a, 1 m along b and 0.01 m along c (a rotated frame)
    a, b, c = np.linalg.qr(rng.normal(size=(3, 3)))[0].T
    points = rng.normal(size=(500, 3)) * [3.0, 1.0, 0.01] @ np.array([a, b, c])
    axes = np.linalg.svd(points - points.mean(axis=0))[2]     # the sample's principal axes
    view = principal_view(points, gravity=-9.81 * b)
    assert np.allclose(view @ view.T, np.eye(3), atol=1e-12)
    assert np.isclose(np.linalg.det(view), 1.0)                   # right-handed
    assert abs(view[2] @ axes[2]) > 1 - 1e-12                     # normal: least spread
    up = b - (b @ view[2]) * view[2]
    assert np.allclose(view[1], up / np.linalg.norm(up), atol=1e-12)  # against gravity
    sideways = principal_view(points, gravity=-9.81 * axes[2])  # gravity along the normal
    assert abs(sideways[1] @ axes[1]) > 1 - 1e-12                 # up: 2nd principal axis


def test_coinciding_joints_groups_curves_within_the_overlap():
    t = np.linspace(0.0, 1.0, 50)
    values = np.column_stack([t, np.sin(t), t + 1e-6, 2 * t, np.sin(t)])
    assert coinciding_joints(values) == [[0, 2], [1, 4], [3]]


def test_units_follow_the_joint_types(chain3, tree12):
    angle, jerk, torque = CURVES[0], CURVES[2], CURVES[3]
    assert angle.label(chain3) == "joint angle (rad)"
    assert jerk.label(chain3) == "joint jerk (rad/s³)"
    assert torque.label(tree12) == "joint torque (N m or N)"      # tree12 has prismatic joints


def test_snapshot_figure_plots_link_poses_at_evenly_spaced_instants(paper_solutions, chain3):
    rows = [(f"case {case}", chain3, plots.snapshot_times(2.0, 5),
             result.sample(plots.snapshot_times(2.0, 5), 0)[:, 0])
            for case, result in paper_solutions.items()]
    figure = plots.snapshot_figure(rows, "chain3")
    points = np.concatenate([stick_figure(chain3, q)[1] for *_, q in rows], axis=1)
    view = principal_view(points, chain3.gravity)
    assert len(figure.subfigs) == 3
    for strip, (_, _, times, q) in zip(figure.subfigs, rows):
        assert np.allclose(np.diff(times), 0.5) and times[-1] == 2.0
        for axes, t, q_k in zip(strip.axes, times, q):
            assert axes.get_title() == f"t = {t:.2f} s"
            plotted = axes.lines[0].get_xydata()
            projected = expected_segments(chain3, q_k) @ view[:2].T
            assert_same_segments(drawn_segments(plotted), projected)
    assert all("(m)" in label for label in (strip.axes[0].get_xlabel(),
                                            strip.axes[0].get_ylabel()))


def test_plot_motion_writes_five_titled_curves(tmp_path, paper_solutions, chain3):
    motion = motion_samples(paper_solutions["a"])
    title = motion_title("chain3", ["joint_velocity"], [1.0])
    paths = plots.plot_motion(tmp_path, motion, chain3, title)
    assert [path.name for path in paths] == [f"{curve.name}.png" for curve in CURVES]
    assert all(path.read_bytes()[:4] == b"\x89PNG" for path in paths)


def test_curves_name_coinciding_joints_once_and_keep_the_legend_outside(paper_solutions,
                                                                         chain3):
    # case (a) has joint costs only and the same boundary values: three equal angle curves
    figure = plots.new_figure((7.5, 4.0))
    axes = figure.add_subplot()
    plots.draw_curve(axes, motion_samples(paper_solutions["a"]), CURVES[0], chain3)
    assert [line.get_label() for line in axes.lines] == ["joint1 = joint2 = joint3"]
    figure.canvas.draw()
    legend = axes.get_legend().get_window_extent()
    assert legend.x0 >= axes.get_window_extent().x1              # right of the data
    assert axes.get_xlabel() == "time (s)" and axes.get_ylabel() == "joint angle (rad)"
    torques = figure.add_subplot()
    plots.draw_curve(torques, motion_samples(paper_solutions["a"]), CURVES[3], chain3)
    assert [line.get_label() for line in torques.lines] == ["joint1", "joint2", "joint3"]
