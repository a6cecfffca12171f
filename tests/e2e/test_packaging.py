"""The wheel installs everything under `rigcheck.` and no generic top-level name such as engine or tui."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from stage_infos import REPO


def test_wheel_has_only_the_rigcheck_namespace(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("rigcheck-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert top == {"rigcheck", next(t for t in top if t.endswith(".dist-info"))}
    assert "rigcheck/engine/runner.py" in names
    assert "rigcheck/engine/stages/probe.py" in names
    assert "rigcheck/tui/cli.py" in names
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt")))
    assert b"rigcheck = rigcheck.tui.cli:main" in entry_points
