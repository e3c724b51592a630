"""The files of ``cmtm ioc`` (DESIGN.md: a contract): weights.json and summary.csv.

Both are written atomically (ioc.files.results.write_atomically).

``weights.json`` (one JSON object; floats round-trip; no NaN or inf). Angles and noise
levels are in rad (m for prismatic joints):

==================  ===============================  ========================================
key                 type                             meaning
==================  ===============================  ========================================
schema              int                              1, this layout
estimator           str                              kkt (inverse KKT on one motion) | data
                                                     (maximum likelihood on measured data)
weights             {name: float}                    the recovered weights, sum 1, term order
uncertainty         {method, std, ci95, ...}         method "fisher" (data): std {name: float},
                                                     ci95 {name: [lo, hi]}, sigma (rad) and
                                                     sigma_method (given | residual), and with
                                                     --bootstrap B an entry bootstrap {std,
                                                     ci95, samples: B} (percentile intervals);
                                                     method "none" (kkt): std, ci95 null
identifiable        bool                             the weights are determined by the motion
undetermined        list                             data: names whose 95 % interval reaches 0;
                                                     kkt: [{direction: {name: coefficient},
                                                     singular_value}] (ioc.inverse.inverse_kkt)
terms               [{name, weight, raw, weighted}]  raw sub-costs c_i (kkt: of the motion;
                                                     data: of the estimated optimal motion,
                                                     summed over the trials with --pool)
stationarity        {absolute, relative}             KKT residual for the weights (kkt: of
                                                     the motion; data: of the optimal motions
                                                     for the estimated weights, the largest
                                                     over the trials, ~1e-12 when solved)
eigenvalues         [float]                          ascending; what of: eigenvalues_of
eigenvalues_of      str                              "row-scaled KKT singular values" (kkt) |
                                                     "weight covariance" (data)
multipliers         [{time, joint, bound, value}]    active joint limits (kkt); data: []
solver              {method, [status, iterations]}   kkt: svd | nnls; data:
                                                     maximum_likelihood, its status and
                                                     iterations (ioc.inverse.estimate)
model, joint_names  str, [str]                       the --model spec, the model's joints
model_sha256        str | null                       sha256 of the model file (null: built-in)
model_lock          {joint: float}                   every joint locked to build the model
                                                     from --model: a result.json's, or for
                                                     measured data --lock's and those the
                                                     data do not move
floating_base       str | null                       the model's --floating-base (a
                                                     result.json's), null: a fixed base
gravity             [float] (3)                      the model's gravity, base frame, m/s^2
source              [str]                            the motion file(s): one, or every
                                                     pooled one
source_sha256       [str]                            sha256 of each source file: a rerun
                                                     skips a trial only for the same input
fit_rms             [{joint: float}] | null          per source, RMS of smoothing fit - data;
                                                     null for a result.json
reoptimized_rms     [float]                          data estimator, and kkt with
                                                     --reoptimize, per source: RMS of the
                                                     optimal motion for the weights - data (a
                                                     result.json: - the recorded motion at 201
                                                     uniform times)
true_weights        {name: float}                    a result.json's weights, normalised (0
                                                     for candidate costs it does not record)
l1_error            float                            sum |weights - true_weights|
motions             [{source, times, q, motion}]     per source, for ``cmtm view``: the
                                                     samples the estimate saw (times (N_d,)
                                                     s from 0; q (N_d, nv); a result.json:
                                                     its motion at its N uniform times) and
                                                     the motion drawn against them, a
                                                     clamped B-spline {kind, degree, knots,
                                                     control_points (n_c, nv)}; kind optimal
                                                     (data: the optimum for the weights) |
                                                     reoptimized (--reoptimize) | fit (kkt
                                                     on measured data: the smoothing fit) |
                                                     recorded (a result.json's own motion)
settings            {option: value}                  the options of the run (null: not given)
versions            {cmtm, numpy, scipy, numba}      installed versions
==================  ===============================  ========================================

``summary.csv`` (a batch of several trials): a header, then one row per trial in input
order with the columns trial, status (ok | failed), one column per weight, stationarity
(relative), identifiable (true | false), fit_rms (mean over joints, empty for a
result.json) and error (the one-line message of a failed trial).
"""
import csv
import json

import numpy as np

from ioc.files.results import parse_json, to_json, versions, write_atomically

SCHEMA = 1
WEIGHTS_FILE, SUMMARY_FILE = "weights.json", "summary.csv"
KKT_SPECTRUM, COVARIANCE_SPECTRUM = "row-scaled KKT singular values", "weight covariance"


def named(names, values):
    """{name: float} in the order of ``names``."""
    return {name: float(value) for name, value in zip(names, values)}


def kkt_fields(kkt):
    """The estimator's keys of weights.json for an ioc.inverse.inverse_kkt.KKTResult."""
    return {"estimator": "kkt", "weights": named(kkt.names, kkt.weights),
            "uncertainty": {"method": "none", "std": None, "ci95": None},
            "identifiable": kkt.identifiable, "undetermined": kkt.undetermined,
            "terms": kkt.terms,
            "stationarity": {"absolute": kkt.residual_abs, "relative": kkt.residual_rel},
            "eigenvalues": kkt.spectrum.tolist(), "eigenvalues_of": KKT_SPECTRUM,
            "multipliers": kkt.multipliers, "solver": {"method": kkt.method}}


def data_fields(est, raw_costs, stationarity, bootstrap=None):
    """The estimator's keys of weights.json for an ioc.inverse.estimate.Estimate.

    raw_costs : (m,) sub-costs at the estimated optimal motions (summed over trials)
    stationarity : (absolute, relative) KKT residual of the fitted motion(s)
    bootstrap : None or (std (m,), ci95 (m, 2), number of samples)
    """
    names = est.names
    uncertainty = {"method": "fisher", **_intervals(names, est.std, est.ci95),
                   "sigma": est.sigma, "sigma_method": est.sigma_method}
    if bootstrap is not None:
        std, ci95, n_samples = bootstrap
        uncertainty["bootstrap"] = {**_intervals(names, std, ci95), "samples": n_samples}
    terms = [{"name": n, "weight": float(w), "raw": float(c), "weighted": float(w * c)}
             for n, w, c in zip(names, est.weights, raw_costs)]
    return {"estimator": "data", "weights": named(names, est.weights),
            "uncertainty": uncertainty, "identifiable": est.identifiable,
            "undetermined": list(est.undetermined), "terms": terms,
            "stationarity": {"absolute": float(stationarity[0]),
                             "relative": float(stationarity[1])},
            "eigenvalues": np.linalg.eigvalsh(est.covariance).tolist(),
            "eigenvalues_of": COVARIANCE_SPECTRUM, "multipliers": [],
            "solver": {"method": "maximum_likelihood", "status": est.status,
                       "iterations": est.iterations}}


MOTION_KINDS = ("optimal", "reoptimized", "fit", "recorded")


def motion_entry(source, times, q, spline, theta, kind):
    """One entry of the ``motions`` key: the data samples ``times`` (N_d,) s and ``q``
    (N_d, nv), and the motion of ``kind`` (MOTION_KINDS) drawn against them, control points
    ``theta`` (an ioc.spline.bspline.DD or an (n_c, nv) array, stored rounded to float64) of the
    clamped B-spline space ``spline``."""
    theta = theta.value() if hasattr(theta, "value") else np.asarray(theta, dtype=float)
    return {"source": str(source), "times": np.asarray(times, dtype=float).tolist(),
            "q": np.asarray(q, dtype=float).tolist(),
            "motion": {"kind": kind, "degree": spline.degree, "knots": spline.knots.tolist(),
                       "control_points": theta.tolist()}}


def _intervals(names, std, ci95):
    return {"std": named(names, std), "ci95": {n: [float(lo), float(hi)]
                                               for n, (lo, hi) in zip(names, ci95)}}


def weights_record(fields, *, model, joint_names, sources, fit_rms, settings, source_sha256,
                   model_sha256, floating_base, gravity, **extra):
    """The weights.json object: the estimator's ``fields`` (kkt_fields, data_fields),
    the inputs and their sha256, ``extra`` keys (reoptimized_rms, true_weights, l1_error,
    motions, model_lock) and versions."""
    return {"schema": SCHEMA, **fields, "model": model, "model_sha256": model_sha256,
            "joint_names": list(joint_names), "floating_base": floating_base,
            "gravity": [float(g) for g in gravity],
            "source": [str(source) for source in sources],
            "source_sha256": list(source_sha256), "fit_rms": fit_rms, **extra,
            "settings": settings, "versions": versions()}


def write_weights(folder, record):
    """Write ``folder``/weights.json (folder created if needed); returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / WEIGHTS_FILE
    write_atomically(path, lambda file: file.write(to_json(record) + "\n"))
    return path


def read_weights(path):
    """The object of a weights.json; ValueError naming the file if it is not one."""
    try:
        record = parse_json(path.read_text(encoding="utf-8"), path)
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: expected a weights.json of cmtm ioc, could not read it "
                         f"({error})") from None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise ValueError(f"{path}: expected a weights.json of cmtm ioc, schema {SCHEMA}")
    return record


def summary_row(trial, names, record=None, error=None):
    """One summary row {column: value} of a finished (``record``) or failed trial; the
    values are JSON types (None for an empty cell)."""
    weights = record["weights"] if record else {}
    fits = [v for fit in (record or {}).get("fit_rms") or () for v in fit.values()]
    return {"trial": trial, "status": "ok" if record else "failed",
            **{name: weights.get(name) for name in names},
            "stationarity": record["stationarity"]["relative"] if record else None,
            "identifiable": record["identifiable"] if record else None,
            "fit_rms": float(np.mean(fits)) if fits else None, "error": error}


def write_summary(path, rows):
    """Write the summary rows (summary_row) as summary.csv at ``path``."""
    def write(file):
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(rows[0].keys())
        writer.writerows([_cell(value) for value in row.values()] for row in rows)
    write_atomically(path, write)


def _cell(value):
    """CSV text of a JSON value: empty for None, true/false, floats in full precision."""
    if value is None:
        return ""
    return json.dumps(value) if isinstance(value, bool) else str(value)
