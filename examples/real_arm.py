"""Cost weights of a real recorded arm movement: the right arm of DeepMimic's kick.

The clip (pybullet_data's ``data/motions/humanoid3d_kick.txt``, motion capture of one
actor, converted to joint angles by ioc.files.data.read_clip and clip_motion) drives the right
arm of example-robot-data's ``human.urdf``: the shoulder's Z-X-Y chain and the elbow hinge
move, every other joint is locked at the clip's mean pose (the elbow's second axis and
the wrist, which the clip does not record, at 0). The movement window is the longest
segment that ioc.files.data.segments finds on the arm (speed above 5 % of its peak). Over it,
the data estimator (ioc.inverse.estimate, maximum likelihood with the window's end states fitted
as nuisance parameters, ``boundary="data"``) weighs five candidate costs

    joint acceleration, joint jerk, hand jerk (point_jerk of a point 0.15 m down the
    right hand), joint torque, joint torque rate,

gives 95 % intervals and the identifiability verdict, and re-optimizes the motion with
the weights found; the same for joint jerk alone (minimum jerk, the best single cost) for
comparison. Written to --out: ``real_arm.csv`` (time, then per joint the data and both
re-optimized motions at the data's times, degrees), ``real_arm.json`` (window, weights,
intervals, verdict, RMS) and ``real_arm.png`` (the plot extra, matplotlib).

The same estimate from the command line (the arm map as a two-column CSV):
    cmtm ioc --model human --motion humanoid3d_kick.txt --map arm.csv --window T0,T1 \\
        --boundary data --costs COSTS --control-points 20 --samples 200 --reoptimize

Joint limits: with the model's (the default), the estimator's solves at weights that hang
the arm (joint torque) reach the elbow's full extension (lower limit 0) and the
shoulder's X limit, where the Newton Hessian is indefinite but positive definite along
the limits (ioc.optimize.direct._StepMatrix adds curvature along the held limits instead
of shifting the whole Hessian: 30-40 iterations per solve there, against 100-500 with
the shift).

Run: python examples/real_arm.py [--clip PATH] [--control-points NC] [--samples N]
     [--limits model|none] [--out DIR] [--no-plot]
"""
import argparse
import json
from pathlib import Path

import numpy as np

from ioc.files.data import clip_motion, clip_trial, cut_window, joint_locks, read_clip, segments
from ioc.files.models import resolve_model
from ioc.files.results import write_atomically
from ioc.inverse.estimate import estimate_weights, prepare_trial, residual

ARM_MAP = {"right_shoulder": ("right_shoulder_Z", "right_shoulder_X", "right_shoulder_Y"),
           "right_elbow": ("right_elbow_Z",)}
"""Clip joints -> human.urdf joints: the right arm the kick swings, clear of the shoulder
chain's singularity (its middle angle stays below 85 deg; the punch's does not)."""
HAND_JERK = "point_jerk[right_hand@0,-0.15,0]"
COSTS = ("joint_acceleration", "joint_jerk", HAND_JERK, "joint_torque", "joint_torque_rate")
SINGLE = ("joint_jerk",)
"""The comparison: minimum joint jerk alone."""
LOCAL_MINIMUM = """The five costs fit worse than joint jerk alone, which they include: the
estimate stopped in a local minimum of the likelihood (the estimator restarts from the
best single cost where that fits better, with its other weights at 1e-6, so this is
rare; bench/README.md); read joint jerk alone as the better description of this take."""
MEANING = """What the weights mean: the optimal motion for their weighted sum of the costs,
between the window's measured end states, is the one of this family closest to this take
(least squares on the joint angles). Each weight multiplies a raw cost in its own units
(rad/s^3, m/s^3, N m, ...), so weights are comparable across takes of the same window
length and model, not to each other; the weighted shares say how much each term counts.
What they do not mean: a single take of one actor (no spread over repetitions or people);
no contacts or external forces (the kick's foot and ground do not enter; the arm hangs on
a trunk locked at its mean pose); a model of an arm (human.urdf's segment masses and
inertias, not the actor's), not a person. The intervals are those of this model; an RMS
far above the fit's noise says the candidate costs do not explain the whole movement."""


def parse_args(argv=None):
    import pybullet_data                       # the test/example extra: its data files only
    kick = Path(pybullet_data.getDataPath()) / "data" / "motions" / "humanoid3d_kick.txt"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", type=Path, default=kick,
                        help="a DeepMimic humanoid clip (default: the kick)")
    parser.add_argument("--control-points", type=int, default=20, metavar="NC")
    parser.add_argument("--samples", type=int, default=200, metavar="N",
                        help="quadrature samples of the costs")
    parser.add_argument("--limits", choices=("model", "none"), default="model",
                        help="the model's joint limits (default) or none (faster: see above)")
    parser.add_argument("--out", type=Path, default=Path("real_arm_out"), metavar="DIR")
    parser.add_argument("--no-plot", action="store_true", help="skip real_arm.png")
    return parser.parse_args(argv)


def movement_window(clip, geometry):
    """The longest movement segment of the clip's right arm (ioc.files.data.segments, default
    thresholds), (t0, t1) s."""
    arm = clip_motion(clip, geometry, ARM_MAP)
    return max(segments(arm), key=lambda s: s[1] - s[0])


def arm_data(clip, geometry, window, control_points):
    """(model with all but the arm locked, the arm's MotionData over ``window``)."""
    pose, movable = clip_trial(cut_window(clip, window, control_points), geometry, ARM_MAP)
    locks, data, _ = joint_locks(geometry.joint_names, pose, movable=movable)
    return resolve_model("human", locks), data


def estimate(model, data, costs, args):
    """(trial, Estimate) of the data estimator for ``costs``."""
    trial = prepare_trial(model, list(costs), data, boundary="data", limits=args.limits,
                          control_points=args.control_points, samples=args.samples)
    return trial, estimate_weights([trial])


def rms_deg(trial, theta):
    """RMS of (re-optimized motion - data) per joint, degrees (nv,)."""
    r = residual(trial, theta).reshape(trial.q.shape)
    return np.rad2deg(np.sqrt(np.mean(r ** 2, axis=0)))


def weighted_shares(trial, est):
    """w_i c_i / sum_j w_j c_j at the re-optimized motion."""
    weighted = est.weights * trial.problem.evaluate(est.thetas[0], est.weights).costs
    return weighted / weighted.sum()


def summary(est, trial, window):
    """The real_arm.json record of one estimate."""
    rms = rms_deg(trial, est.thetas[0])
    return {"costs": list(est.names), "weights": est.weights.tolist(),
            "ci95": est.ci95.tolist(), "identifiable": est.identifiable,
            "undetermined": list(est.undetermined), "shares": weighted_shares(trial, est).tolist(),
            "rms_deg": dict(zip(trial.problem.model.joint_names, rms.tolist())),
            "rms_deg_all": float(np.sqrt(np.mean(rms ** 2))), "status": est.status,
            "window": list(window)}


def write_table(path, trial, motions, t_start):
    """real_arm.csv: time (s on the clip's time axis, the trial's from ``t_start``), then
    per joint the data and each motion of ``motions`` {label: theta} at the data's times,
    degrees."""
    names = trial.problem.model.joint_names
    columns = [t_start + trial.times[:, None], np.rad2deg(trial.q)]
    header = ["time"] + [f"data:{n}" for n in names]
    for label, theta in motions.items():
        columns.append(np.rad2deg(trial.B @ theta.value()))
        header += [f"{label}:{n}" for n in names]
    table = np.hstack(columns)
    write_atomically(path, lambda f: np.savetxt(f, table, delimiter=",", header=",".join(header),
                                                comments="", fmt="%.10g"))


def plot(path, trial, motions, title):
    """real_arm.png: one panel per joint, the data's samples and the motions' curves."""
    from ioc.show.plots import new_figure, save_png
    names = trial.problem.model.joint_names
    figure = new_figure((10, 6))
    axes = figure.subplots(2, -(-len(names) // 2), squeeze=False).ravel()
    t = np.linspace(0.0, trial.times[-1], 200)
    spline = trial.problem.spline
    for j, (ax, name) in enumerate(zip(axes, names)):
        ax.plot(trial.times, np.rad2deg(trial.q[:, j]), "k.", label="clip")
        for (label, theta), style in zip(motions.items(), ("-", "--")):
            ax.plot(t, np.rad2deg(spline.evaluate(theta, t, 0)[:, 0, j]), style, label=label)
        ax.set_title(name)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("angle (deg)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    figure.suptitle(title)
    save_png(figure, path)


def print_estimate(label, record):
    verdict = "identifiable" if record["identifiable"] else \
        f"NOT identifiable ({', '.join(record['undetermined'])} undetermined)"
    print(f"{label}: {verdict}")
    for name, w, (lo, hi), share in zip(record["costs"], record["weights"], record["ci95"],
                                        record["shares"]):
        print(f"  {name:34s} weight {w:.4g}  95 % [{lo:.4g}, {hi:.4g}]  share {share:.3f}")
    per_joint = ", ".join(f"{n} {v:.2f}" for n, v in record["rms_deg"].items())
    print(f"  re-optimized motion - data, RMS deg: {per_joint}; all {record['rms_deg_all']:.3f}")


def main(argv=None):
    args = parse_args(argv)
    geometry = resolve_model("human")
    clip = read_clip(args.clip)
    window = movement_window(clip, geometry)
    model, data = arm_data(clip, geometry, window, args.control_points)
    print(f"{clip.source}: right arm ({', '.join(model.joint_names)}), movement window "
          f"{window[0]:.4g}-{window[1]:.4g} s ({len(data.times)} frames), the rest locked")
    trial, est = estimate(model, data, COSTS, args)
    single_trial, single = estimate(model, data, SINGLE, args)
    records = {"costs": summary(est, trial, window), "jerk": summary(single, single_trial, window)}
    fit = np.rad2deg(trial.fit.fit_rms)
    print(f"smoothing fit - data, RMS deg: {', '.join(f'{v:.3f}' for v in fit)}")
    print_estimate(f"{len(COSTS)} costs", records["costs"])
    print_estimate("joint jerk alone", records["jerk"])
    if records["costs"]["rms_deg_all"] > records["jerk"]["rms_deg_all"]:
        print(LOCAL_MINIMUM)
    print(MEANING)
    args.out.mkdir(parents=True, exist_ok=True)
    motions = {"costs": est.thetas[0], "jerk": single.thetas[0]}
    write_table(args.out / "real_arm.csv", trial, motions, data.times[0])
    write_atomically(args.out / "real_arm.json", lambda f: json.dump(records, f, indent=1))
    written = ["real_arm.csv", "real_arm.json"]
    if not args.no_plot:
        plot(args.out / "real_arm.png", trial, motions,
             f"{Path(clip.source).name}: right arm, {len(COSTS)} costs (-) and joint jerk "
             f"alone (--)")
        written.append("real_arm.png")
    print(f"wrote {', '.join(str(args.out / name) for name in written)}")
    return records


if __name__ == "__main__":
    main()
