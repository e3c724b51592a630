"""The files of one optimized motion, shared by ``cmtm optimize`` (``ioc.commands.cli``)
and the demo's cases (``ioc.commands.demo``): result.json, trajectory.csv and motion.npz
(``ioc.files.results.write_result``), the PNG plots (``ioc.show.plots``, matplotlib) and
the motion page (``ioc.show.view``, plotly)."""
import ioc
from ioc.show.drawing import motion_title

results = ioc.lazy_module("ioc.files.results")    # loaded when a motion is written, not by
view = ioc.lazy_module("ioc.show.view")           # the parser (tests/test_cli.py)


def write_motion_files(folder, result, record, motion, model_spec, plots=True, page=True):
    """Write ``result`` (an ``ioc.optimize.direct.DirectResult``), its ``record``
    (``ioc.files.results.result_record``) and its ``motion``
    (``ioc.files.results.motion_samples``) into ``folder`` as a set: Ctrl-C or SIGTERM
    while they are written takes effect once they all are. ``plots``/``page``: whether to
    write the PNG plots and the motion page (their extras installed). Returns the paths
    written."""
    problem = result.problem
    with results.signals_deferred():
        paths = results.write_result(folder, record, motion)
        if plots:
            from ioc.show.plots import plot_motion
            title = motion_title(model_spec, record["costs"], record["weights"])
            paths += plot_motion(folder, motion, problem.model, title)
        if page:
            paths.append(view.write_page(folder / view.PAGE_FILE, view.optimized_page(
                problem.model, model_spec, problem, result.weights, result.theta)))
    return paths
