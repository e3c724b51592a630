"""How long does the motion page (``cmtm view``) take to open, against plotly's own page?

Writes the 36-joint human's page over 200 frames (a random quintic motion with a data
track: every part a page can hold, ``ioc.show.view``) and plotly's smallest 3D page
(``include_plotlyjs=True``, one scatter3d trace: what any self-contained plotly 3D page
costs), then opens each R times, alternating, in headless Chromium (Debian's, through
Playwright, offline) and prints per page its size, the best and the median time from
navigation to drawn (the page's own ``performance.now()``) and their ratio to plotly's.
The tests require the human page under 5 MB and the best of three opens under 3 s
(tests/test_view_browser.py).

Run: ``python bench/bench_view.py [--repeats R]`` (plot and test extras, /usr/bin/chromium).
"""
import argparse
import os
import statistics
import tempfile
from pathlib import Path

import numpy as np

import kinematic_trees as kt
from ioc.show import view
from ioc.spline.bspline import ClampedBSpline

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
"""Chromium's flags besides --headless and a fresh --user-data-dir (Playwright adds both)."""
READY = "window.motionPage && window.motionPage.ready"


def human_page(path, frames=200, seed=0):
    """Write the human's page: a random quintic spline (20 control points within +-0.5
    rad) over 2 s at ``frames`` instants, and the same perturbed as data; returns path."""
    model = kt.compile_tree(kt.human())
    rng = np.random.default_rng(seed)
    spline = ClampedBSpline(5, 20, 2.0)
    theta = rng.uniform(-0.5, 0.5, (20, model.nv))
    times = np.linspace(0.0, 2.0, frames)
    data = spline.evaluate(theta + rng.normal(0.0, 0.02, theta.shape), times, 0)
    page = view.Page(model, "human", times,
                     (view.Track("data", data),
                      view.spline_track("motion", model, spline, theta, times)))
    return view.write_page(path, page)


def plotly_page(path):
    """plotly's smallest self-contained 3D page, marking itself drawn like ours."""
    import plotly.graph_objects as go
    figure = go.Figure(go.Scatter3d(x=[0, 1], y=[0, 1], z=[0, 1]))
    path.write_text(figure.to_html(
        include_plotlyjs=True, post_script="window.motionPage = {ready: true, "
                                           "milliseconds: performance.now()};"))
    return path


def open_milliseconds(browser, path):
    """Navigation to drawn, ms, of one open of ``path`` in a new offline context."""
    context = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})
    try:
        page = context.new_page()
        page.goto(path.resolve().as_uri())
        page.wait_for_function(READY, timeout=120_000)
        return page.evaluate("window.motionPage.milliseconds")
    finally:
        context.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="opens per page (default 5)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory() as folder:
        pages = {"plotly's 3D page": plotly_page(Path(folder) / "plotly.html"),
                 "human, 200 frames": human_page(Path(folder) / "human.html")}
        times = {name: [] for name in pages}
        load = os.getloadavg()[0]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            for _ in range(args.repeats):
                for name, path in pages.items():
                    times[name].append(open_milliseconds(browser, path))
            browser.close()
        base = min(times["plotly's 3D page"])
        print(f"{'page':<20}{'MB':>7}{'best ms':>10}{'median ms':>11}{'best / plotly':>15}")
        for name, path in pages.items():
            print(f"{name:<20}{path.stat().st_size / 1e6:>7.2f}{min(times[name]):>10.0f}"
                  f"{statistics.median(times[name]):>11.0f}{min(times[name]) / base:>15.2f}")
        print(f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
              f"(2 cores)")


if __name__ == "__main__":
    main()
