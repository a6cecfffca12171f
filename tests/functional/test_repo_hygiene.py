"""CI runs exactly the README's test command, and the code is ruff-clean."""

from __future__ import annotations

import re
import subprocess
import sys

from stage_infos import REPO


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_readme_gives_two_setup_commands_and_ci_runs_the_test_one() -> None:
    commands = readme_commands()
    assert len(commands) == 2
    install_and_run, install_and_test = commands
    assert "rigcheck run" in install_and_run
    assert "[test]" in install_and_test and "pytest" in install_and_test
    ci_lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert install_and_test in ci_lines


def test_ruff_format_and_check_are_clean() -> None:
    fmt = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", str(REPO)], capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    check = subprocess.run([sys.executable, "-m", "ruff", "check", str(REPO)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
