"""A second real user (`mallory`, the hostile neighbour), made for one test and removed after it, and the
open folders she and root share: what rigcheck keeps her out of is then rigcheck's own doing."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from ci_tools import need


@contextmanager
def second_user() -> Iterator[int]:
    """The uid of a fresh real user; skipped without root (CI runs as root, where it always runs)."""
    if os.getuid() != 0:
        pytest.skip("making a second real user and switching to it needs root (CI runs as root)")
    need("useradd")
    name = f"rcmal{os.getpid() % 100000}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True, timeout=60)
    try:
        yield pwd.getpwnam(name).pw_uid
    finally:
        subprocess.run(["userdel", name], check=False, timeout=60)


@contextmanager
def shared_folder() -> Iterator[Path]:
    """A folder in /tmp that every user may pass through (pytest's own tmp_path is 0700)."""
    base = Path(tempfile.mkdtemp(prefix="rigcheck-mallory-", dir="/tmp"))
    os.chmod(base, 0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def as_user(uid: int, *command: str) -> None:
    """Run `command` as that user, in /, and insist it worked."""
    done = subprocess.run(list(command), user=uid, cwd="/", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (command, done.stderr)
