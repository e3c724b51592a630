"""The test session's Numba cache is keyed by the engine's sources (tests/conftest.py): an
edit anywhere in cmtm/ gives a new, empty cache folder, so no stale compiled kernel can run.

References: the folder named by the sha256 of the sources, numba's own record of where a
kernel caches, and the environment seen by a subprocess and by joblib's loky workers.
"""
import os
import subprocess
import sys

import numba.core.config
from joblib import Parallel, delayed

from cmtm.cmtm_matrix import cmtm_blocks
from conftest import NUMBA_CACHE_ROOT, keyed_cache_folder, source_hash


def test_kernels_cache_in_the_folder_keyed_by_the_sources():
    folder = str(NUMBA_CACHE_ROOT / source_hash())
    assert os.environ["NUMBA_CACHE_DIR"] == folder
    assert numba.core.config.CACHE_DIR == folder
    assert cmtm_blocks._cache.cache_path.startswith(folder + os.sep)


def write_package(root, files):
    """Write {relative path: text} under root; return root."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_source_hash_changes_with_every_python_source(tmp_path):
    package = write_package(tmp_path / "pkg", {"a.py": "x = 1\n", "sub/b.py": "y = 2\n"})
    original = source_hash(package)
    (package / "sub/b.py").write_text("y = 3\n")
    assert source_hash(package) != original
    (package / "sub/b.py").write_text("y = 2\n")
    assert source_hash(package) == original
    (package / "notes.txt").write_text("not a source")
    assert source_hash(package) == original
    (package / "c.py").write_text("")
    assert source_hash(package) != original


def test_only_the_most_recently_used_cache_folders_are_kept(tmp_path):
    package = write_package(tmp_path / "pkg", {"a.py": "x = 1\n"})
    root = tmp_path / "cache"
    for age, name in enumerate(["newest", "newer", "older", "oldest"]):
        (root / name).mkdir(parents=True)
        os.utime(root / name, (1e9 - age, 1e9 - age))
    folder = keyed_cache_folder(root, package, keep=3)
    assert folder == root / source_hash(package)
    assert sorted(path.name for path in root.iterdir()) == sorted([folder.name, "newest",
                                                                    "newer"])
    assert keyed_cache_folder(root, package, keep=3) == folder     # reused, nothing lost
    assert len(list(root.iterdir())) == 3


def test_subprocesses_and_loky_workers_inherit_the_cache_folder():
    folder = os.environ["NUMBA_CACHE_DIR"]
    done = subprocess.run([sys.executable, "-c",
                           "import numba.core.config as c; print(c.CACHE_DIR)"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == folder
    seen = Parallel(n_jobs=2, backend="loky")(delayed(os.environ.get)("NUMBA_CACHE_DIR")
                                              for _ in range(2))
    assert seen == [folder, folder]


def test_source_hash_changes_with_the_joint_codes(tmp_path):
    """The kernels compile the joint codes of kinematic_trees/joint_types.py in as
    constants: editing that file must start a fresh cache too."""
    package = write_package(tmp_path / "pkg", {"a.py": "x = 1\n"})
    codes = write_package(tmp_path / "kt", {"joint_types.py": "JOINT_REVOLUTE = 0\n"})
    original = source_hash(package, extra=(codes / "joint_types.py",))
    (codes / "joint_types.py").write_text("JOINT_REVOLUTE = 1\n")
    assert source_hash(package, extra=(codes / "joint_types.py",)) != original
