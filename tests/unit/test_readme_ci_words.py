"""The README says what CI installs (every package in .ci/run's list) and that some tests, run as root, move
other tasks off one CPU for a while (tests/quiet_cpu.py): issue 43."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ci_packages() -> list[str]:
    found = re.search(r"^packages=\(([^)]*)\)", (ROOT / ".ci" / "run").read_text(), re.MULTILINE)
    assert found, ".ci/run has no packages=(...) list"
    return found.group(1).split()


def readme_words() -> str:
    return " ".join((ROOT / "README.md").read_text().split())


def named(package: str, text: str) -> bool:
    """A package named in the README: itself, or a '-client' beside its '-server' ('openssh-server and -client')."""
    if re.search(rf"(?<![\w-]){re.escape(package)}(?![\w-])", text):
        return True
    stem, _, tail = package.rpartition("-")
    return bool(stem) and re.search(rf"{re.escape(stem)}-\w+ and -{re.escape(tail)}\b", text) is not None


def test_the_readme_names_every_package_ci_installs() -> None:
    text = readme_words()
    packages = ci_packages()
    assert {"slurm-wlm", "munge", "gcc", "tmux"} <= set(packages)
    missing = [p for p in packages if not named(p, text)]
    assert not missing, f"the README does not name {missing}, which .ci/run installs"


def test_a_package_the_readme_does_not_name_is_caught() -> None:
    assert not named("slurm-wlm", "tmux, openssh-server and -client")
    assert named("openssh-client", "tmux, openssh-server and -client") and not named("gcc", "gcc-12")


def test_the_readme_says_root_tests_move_other_tasks_off_a_cpu() -> None:
    text = readme_words()
    assert "`tests/quiet_cpu.py`" in text and "root" in text
    assert "moved off that CPU" in text
