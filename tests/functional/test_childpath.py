"""Shim folders: named by the owner's pid, removed at exit, swept by the next process when the owner was killed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rigcheck.engine.run import childpath


def folder(root: Path, pid: int, mtime: float | None = None) -> Path:
    path = root / f"{childpath.PREFIX}{pid}-abc123"
    (path / "rigcheck").mkdir(parents=True)
    (path / "rigcheck" / "engine").symlink_to(Path(childpath.__file__).parent.parent, target_is_directory=True)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_a_folder_whose_owner_died_is_swept_and_the_engine_it_linked_survives(tmp_path: Path) -> None:
    stale = folder(tmp_path, dead_pid())
    assert childpath.sweep_stale(tmp_path) == [stale]
    assert not stale.exists() and Path(childpath.__file__).exists()


def test_folders_of_living_owners_and_of_unknown_owners_are_kept(tmp_path: Path) -> None:
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as alive:
        try:
            mine, theirs = folder(tmp_path, os.getpid()), folder(tmp_path, alive.pid)
            legacy = tmp_path / f"{childpath.PREFIX}k2j3h4g5"  # made by an older rigcheck: owner unknown
            legacy.mkdir()
            assert childpath.sweep_stale(tmp_path) == []
            assert mine.exists() and theirs.exists() and legacy.exists()
        finally:
            alive.kill()


def test_a_reused_pid_does_not_keep_a_folder_older_than_its_process(tmp_path: Path) -> None:
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as alive:
        try:
            old = folder(tmp_path, alive.pid, mtime=1_000_000_000.0)  # made in 2001, long before this process
            assert childpath.sweep_stale(tmp_path) == [old]
        finally:
            alive.kill()


def test_a_process_that_ends_normally_leaves_nothing(tmp_path: Path) -> None:
    env = dict(os.environ, TMPDIR=str(tmp_path))
    code = "from rigcheck.engine.run.childpath import shim_dir; print(shim_dir())"
    made = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    shim = Path(made.stdout.strip())
    assert shim.parent == tmp_path and shim.name.startswith(f"{childpath.PREFIX}")
    assert not shim.exists()
    assert list(tmp_path.iterdir()) == []


def test_an_early_childs_folder_left_by_a_kill_9_is_swept(tmp_path: Path) -> None:
    """park_early's folder carries its owner's pid, so the next run removes it once that owner is gone."""
    import subprocess

    from rigcheck.engine.run.childpath import EARLY_PREFIX, sweep_stale

    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = tmp_path / f"{EARLY_PREFIX}{gone.pid}-abcd1234"
    stale.mkdir()
    (stale / "early.log").write_text("the child's log")
    alive = tmp_path / f"{EARLY_PREFIX}{os.getppid()}-efgh5678"  # an owner still running, older than its folder
    alive.mkdir()
    assert sweep_stale(tmp_path) == [stale]
    assert not stale.exists() and alive.exists()


def test_park_early_names_its_folder_with_its_pid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from rigcheck.engine.run import warm_pool

    made: list[str] = []
    real = tempfile.mkdtemp

    def recorded(prefix: str) -> str:
        made.append(prefix)
        return real(prefix=prefix, dir=tmp_path)

    def no_child(*_args: object) -> None:
        raise OSError("no child here")

    monkeypatch.setattr(warm_pool.tempfile, "mkdtemp", recorded)
    monkeypatch.setattr(warm_pool, "start_warm", no_child)
    warm_pool.park_early("/no/such/python")
    assert f"rigcheck-early-{os.getpid()}-" in made
    assert not list(tmp_path.glob("rigcheck-early-*"))  # a child that could not start leaves no folder
