"""Fixtures every group shares: a private temporary folder for the session, a private store per test, and
background engines that end before the next test."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from ci_tools import need
from rigcheck.engine.store import Store


def pytest_runtest_setup(item: pytest.Item) -> None:
    """`@pytest.mark.needs("tmux", ...)`: the outside tools a test drives; missing, it skips, or fails in CI."""
    for marker in item.iter_markers("needs"):
        need(*marker.args)


@pytest.fixture(scope="session", autouse=True)
def private_tmpdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every rigcheck process of this session (this one and the subprocesses, through TMPDIR) makes its
    temporary folders in one private folder, which must hold no `rigcheck-child-*` at the end: the
    suite leaves nothing behind, and other sessions' folders in /tmp cannot blur the check."""
    folder = tmp_path_factory.mktemp("tmpdir")
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    yield folder
    from rigcheck.engine.run import childpath

    own = childpath._shim
    left = sorted(p.name for p in folder.glob(f"{childpath.PREFIX}*") if p != own)
    if before is None:
        os.environ.pop("TMPDIR")
    else:
        os.environ["TMPDIR"] = before
    tempfile.tempdir = None
    assert not left, f"the tests left {left} in {folder}"


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path, for sockets: AF_UNIX has room for 107 bytes, and tmp_path, under an xdist
    worker's own folder, can leave a socket's name too little (rigcheck then rightly uses a folder of its own)."""
    folder = Path(tempfile.mkdtemp(prefix="rc-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store.db")


def engine_processes() -> list[psutil.Process]:
    """Background engines this test session started (they are its children, in sessions of their own)."""
    found = []
    for proc in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if any("rigcheck.engine.run.engine_main" in arg for arg in proc.cmdline()):  # `-m` or the `-c` bootstrap
                found.append(proc)
    return found


@pytest.fixture(autouse=True)
def engines_end() -> Iterator[None]:
    """A test that started background engines lets them write their end before the next test; one still
    running after that was left running by the test, and is stopped."""
    yield
    _, alive = psutil.wait_procs(engine_processes(), timeout=20)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    psutil.wait_procs(alive, timeout=10)
