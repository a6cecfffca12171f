"""The wheel installs everything under `rigcheck.` and no generic top-level name such as engine or tui."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import tomllib
from stage_infos import REPO


def test_wheel_has_only_the_rigcheck_namespace(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a clean copy: a build/ folder left in the checkout would hide a missing package
    for part in ("engine", "tui", "themes"):
        shutil.copytree(REPO / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("rigcheck-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert top == {"rigcheck", next(t for t in top if t.endswith(".dist-info"))}
    package_dirs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    folders = {REPO / folder: package for package, folder in package_dirs.items()}
    for folder, package in folders.items():  # every module of every layer, so a package left off the list shows
        for source in folder.rglob("*.py"):
            if any(other != folder and other in source.parents for other in folders if folder in other.parents):
                continue  # a folder mapped to a package of its own (rigcheck.fleet)
            wheel_name = package.replace(".", "/") + "/" + source.relative_to(folder).as_posix()
            assert wheel_name in names, wheel_name
    assert "rigcheck/themes/app.tcss" in names
    assert "rigcheck/engine/measure/references.json" in names  # the reference table is data, shipped beside its loader
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt")))
    assert b"rigcheck = rigcheck.tui.entry:main" in entry_points  # Ctrl-C during start-up: one line (issue 35.13)
