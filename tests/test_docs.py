"""The user guide (docs/) as a user follows it: each page's ```python blocks and ``cmtm``
commands run in page order in one folder (python blocks each in a namespace of its own,
commands through the console script's entry ``ioc.cli.main`` in this process, batches
(``--jobs``) as subprocesses of the installed script, as the README's test runs every
command: joblib's reusable workers keep the folder of the test that started them, where a
batch's relative paths do not resolve), every command exits 0 and prints
what the ```output block under it shows; and every relative link of the README and the
guide names a file that exists.

The files a user brings (robot.urdf, trial01.csv, trials/, the DeepMimic kick clip,
right_arm.json) are made once per session (doc_blocks.write_users_files) and copied into
each page's folder.
"""
import re
import shutil

import pytest

from conftest import ROOT
from doc_blocks import (NOT_RUN, page_steps, run_command, run_in_process, run_python,
                        write_users_files)

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def page_id(path):
    return path.relative_to(DOCS).as_posix()


@pytest.fixture(scope="module")
def users_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("users_files")
    write_users_files(folder)
    return folder


def test_the_guide_has_its_pages_and_runs_blocks():
    """The table of contents and the guide's pages exist, and the guide holds code that
    the test below runs."""
    names = {page_id(path) for path in PAGES}
    assert {"README.md", "engineering.md", "guide/models.md", "guide/costs.md",
            "guide/optimize.md", "guide/inverse.md", "guide/files.md", "guide/cli.md",
            "guide/view.md", "guide/engine.md", "guide/performance.md"} <= names
    steps = [step for path in PAGES for step in page_steps(path.read_text(encoding="utf-8"))]
    assert sum(kind == "python" for kind, _, _ in steps) >= 10
    assert sum(kind == "cmtm" for kind, _, _ in steps) >= 10


@pytest.mark.parametrize("path", [p for p in PAGES if page_steps(p.read_text("utf-8"))],
                         ids=page_id)
def test_page_blocks_run_in_order(path, users_files, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "work"
    shutil.copytree(users_files, folder)
    monkeypatch.chdir(folder)
    for n, (kind, body, shown) in enumerate(page_steps(path.read_text(encoding="utf-8"))):
        if kind == "python":
            if not body.startswith(NOT_RUN):
                run_python(body, f"{page_id(path)} step {n}")
                assert "np.float64(" not in capsys.readouterr().out  # numpy 2's scalar repr
        elif "--jobs" in body:
            run_command(body, folder, shown)     # a batch: fresh workers in this folder
        else:
            run_in_process(body, capsys, shown)


@pytest.mark.parametrize("path", [ROOT / "README.md", ROOT / "bench" / "README.md", *PAGES],
                         ids=lambda path: path.relative_to(ROOT).as_posix())
def test_relative_links_name_existing_files(path):
    text = path.read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(text) if not re.match(r"^[a-z]+:", t)]
    missing = [t for t in targets if not (path.parent / t).exists()]
    assert not missing, missing
