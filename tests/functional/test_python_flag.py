"""`--python` runs the stages under another interpreter that has torch but not rigcheck."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

SKIP_NAMES = ("rigcheck", "__editable__", "_rigcheck")


def make_env_with_torch_but_not_rigcheck(root: Path) -> Path:
    """A venv that sees this one's packages (torch, numpy) through links, but not rigcheck itself."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    packages = root / "borrowed"
    packages.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(SKIP_NAMES) and entry.suffix != ".pth":
            (packages / entry.name).symlink_to(entry)
    target = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(target, "borrowed.pth").write_text(str(packages) + "\n")
    return python


def test_probe_reports_the_other_environment(tmp_path: Path) -> None:
    python = make_env_with_torch_but_not_rigcheck(tmp_path)
    bare_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    no_rigcheck = subprocess.run([str(python), "-c", "import rigcheck.engine"], capture_output=True, env=bare_env)
    assert no_rigcheck.returncode != 0  # the child must not need rigcheck installed there
    out = tmp_path / "out.json"
    env = dict(os.environ, RIGCHECK_STORE=str(tmp_path / "s.db"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rigcheck.tui.cli",
            "run",
            "probe",
            "--python",
            str(python),
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["facts"]["probe"]["interpreter"]["executable"] == str(python)
    assert report["run"]["python"] == str(python)
    assert report["fingerprint"]["basis"]["executable"] == str(python)


def test_a_python_without_torch_is_refused(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    env = dict(os.environ, RIGCHECK_STORE=str(tmp_path / "s.db"))
    done = subprocess.run(
        [sys.executable, "-m", "rigcheck.tui.cli", "run", "--python", str(tmp_path / "bare/bin/python")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert "not a Python with torch" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.db").exists()  # nothing was started
