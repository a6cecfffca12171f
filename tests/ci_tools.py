"""The outside tools that .ci/run installs: where CI=true a test whose tool is missing fails, since a skip
would leave CI green with the test never run; elsewhere it skips, saying which tool and where it comes from."""

from __future__ import annotations

import os
import shutil

import pytest

# tool -> the Debian package .ci/run installs it from (a path where the tool is not on PATH for every user)
CI_TOOLS = {
    "tmux": "tmux",
    "/usr/sbin/sshd": "openssh-server",
    "ssh": "openssh-client",
    "chromium": "chromium",
    "chromedriver": "chromium-driver",
    "promtool": "prometheus",
    "prometheus": "prometheus",
    "gcc": "gcc",
    "xmllint": "libxml2-utils",
    "useradd": "passwd",
    # the gate's Slurm test (issue 33): a real slurmctld and slurmd, with munge
    "/usr/sbin/slurmctld": "slurm-wlm",
    "/usr/sbin/slurmd": "slurm-wlm",
    "/usr/sbin/munged": "munge",
    "scontrol": "slurm-wlm",  # slurm-wlm brings slurm-client with it
}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def found(tool: str) -> bool:
    return os.access(tool, os.X_OK) if tool.startswith("/") else shutil.which(tool) is not None


def missing_here(*tools: str) -> list[str]:
    return [tool for tool in tools if not found(tool)]


def skip_or_fail(reason: str) -> None:
    """Skip with the reason; in CI (CI=true), where .ci/run was to provide it, fail instead."""
    if in_ci():
        pytest.fail(f"CI=true and {reason}: .ci/run installs it, so this is a failure, not a skip", pytrace=False)
    pytest.skip(reason)


def need(*tools: str) -> None:
    """Every tool named must be here: else skip, or in CI fail."""
    missing = missing_here(*tools)
    if missing:
        packages = ", ".join(sorted({CI_TOOLS.get(t, t) for t in missing}))
        skip_or_fail(f"{', '.join(missing)} not installed (apt package {packages})")
