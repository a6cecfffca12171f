"""Every fleet command the README and its Slurm script give keeps the current folder out of the agent's imports
(`python -P` or `PYTHONSAFEPATH=1`): a `rigcheck/fleet/` planted where the command is started never runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLANT = "import pathlib; pathlib.Path({mark!r}).write_text('planted')\n"


def fleet_commands(readme: str) -> list[str]:
    """Each README line that starts the agent module, with the two lines before it (a command continued)."""
    lines = readme.splitlines()
    return ["\n".join(lines[max(0, i - 2) : i + 1]) for i, line in enumerate(lines) if "-m rigcheck.fleet" in line]


def test_every_readme_fleet_command_is_isolated() -> None:
    commands = fleet_commands((REPO / "README.md").read_text())
    assert len(commands) >= 3, commands  # torchrun, srun alone, the Slurm script
    loose = [c for c in commands if "-P -m rigcheck.fleet" not in c and "PYTHONSAFEPATH=1" not in c]
    assert loose == [], f"README fleet commands that import from the current folder: {loose}"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P is Python 3.11's")
def test_python_dash_p_ignores_a_planted_agent(tmp_path: Path) -> None:
    mark = tmp_path / "planted-ran"
    for part in ("rigcheck", "rigcheck/fleet"):
        (tmp_path / part).mkdir()
        (tmp_path / part / "__init__.py").write_text(PLANT.format(mark=str(mark)))
    (tmp_path / "rigcheck/fleet/__main__.py").write_text(PLANT.format(mark=str(mark)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RIGCHECK_", "PYTHON"))}
    subprocess.run(
        [sys.executable, "-P", "-m", "rigcheck.fleet"], cwd=tmp_path, env=env, capture_output=True, timeout=120
    )
    assert not mark.exists(), "python -P ran the planted agent"
    subprocess.run([sys.executable, "-m", "rigcheck.fleet"], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert mark.exists(), "without -P the plant runs: this test could not tell"
