"""CI cannot stay green over a test it never ran: a tool that .ci/run installs and that is missing is a
failure where CI=true, and a skip with its reason elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ci_tools import CI_TOOLS, found, need
from stage_infos import TESTS_DIR

CI_RUN = TESTS_DIR.parent / ".ci" / "run"
NEEDS_A_MISSING_TOOL = """
import pytest

@pytest.mark.needs("tmux", "rigcheck-no-such-tool")
def test_drives_a_tool():
    pass
"""


def test_every_tool_ci_installs_is_here() -> None:
    need(*CI_TOOLS)  # here: skips naming what is missing; in CI: fails
    assert all(found(tool) for tool in CI_TOOLS)


def test_ci_run_installs_every_tool_and_says_it_is_ci() -> None:
    script = CI_RUN.read_text()
    assert "export CI=true" in script
    assert "|| true" not in script  # a failed install fails CI
    for package in set(CI_TOOLS.values()) - {"passwd"}:  # passwd (useradd) is in every Debian base
        assert f" {package}" in script, f".ci/run does not install {package}"


def pytest_on(test_file: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": ci} if ci is not None else {})
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS_DIR), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "conftest", str(test_file)]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=test_file.parent, timeout=120)


@pytest.mark.parametrize(
    ("ci", "code", "words"), [(None, 0, "1 skipped"), ("false", 0, "1 skipped"), ("true", 1, "1 error")]
)
def test_a_missing_tool_skips_here_and_fails_in_ci(tmp_path: Path, ci: str | None, code: int, words: str) -> None:
    test_file = tmp_path / "test_needs.py"
    test_file.write_text(NEEDS_A_MISSING_TOOL)
    done = pytest_on(test_file, ci)
    assert done.returncode == code, done.stdout[-2000:] + done.stderr[-2000:]
    assert words in done.stdout and "rigcheck-no-such-tool not installed" in done.stdout
    if ci == "true":
        assert "CI=true and rigcheck-no-such-tool not installed" in done.stdout
