"""Nothing rigcheck starts imports from the caller's folder: a planted `rigcheck/` or `torch.py` never runs."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from cli_calls import assert_one_line_error, rigcheck
from rigcheck.engine.run.childpath import absolute_pythonpath, child_env
from rigcheck.engine.run.detach import spawn
from rigcheck.engine.run.preflight import UsageError, inspect_python, open_store
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store, StoreError, paths
from stage_infos import fake

PLANTED = ("rigcheck/__init__.py", "torch.py", "numpy.py", "runpy.py")


def plant(folder: Path, marker: Path) -> None:
    """Modules that, if ever imported, leave `marker` behind (and then fail, as a hijack might not)."""
    for name in PLANTED:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\nraise ImportError('planted')\n")


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A hostile current folder (also reached through an empty PYTHONPATH entry); returns the marker path."""
    folder = tmp_path / "hostile"
    marker = tmp_path / "imported-from-cwd"
    plant(folder, marker)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", "") + os.pathsep)  # `x:` means "and here"
    return marker


def test_a_stage_child_does_not_import_from_the_callers_folder(planted: Path, run_stages) -> None:  # type: ignore[no-untyped-def]
    run, _events, _run_id = run_stages([fake("ok")])
    assert run.exit_code == 0
    assert not planted.exists(), planted.read_text()


def test_a_detached_engine_does_not_import_from_the_callers_folder(planted: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    run_id, _ = spawn(path, RunRequest((fake("ok"),), "cpu", "quick", telemetry=False))
    store = Store(path)
    deadline = time.monotonic() + 120
    while store.run(run_id)["status"] == "running":
        assert time.monotonic() < deadline, "the detached run did not finish"
        time.sleep(0.1)
    assert store.run(run_id)["exit_code"] == 0
    assert not planted.exists(), planted.read_text()


def test_the_preflight_does_not_import_from_the_callers_folder(planted: Path) -> None:
    interpreter = inspect_python(sys.executable)
    assert interpreter.torch  # the real torch answered
    assert not planted.exists(), planted.read_text()


def test_pythonpath_entries_become_absolute_and_empty_ones_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute_pythonpath(f"lib{os.pathsep}{os.pathsep}/abs") == [str(tmp_path / "lib"), "/abs"]
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert "PYTHONPATH" not in child_env()
    assert child_env("/first")["PYTHONPATH"] == "/first"


# Shared folders: a link or a file that someone else put there never decides where rigcheck writes.


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A sticky folder anyone can write, as /tmp is."""
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o1777)
    return folder


def test_a_store_link_in_a_shared_folder_is_refused(shared: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.db"
    (shared / "s.db").symlink_to(elsewhere)
    done = rigcheck("runs", store=shared / "s.db")
    assert_one_line_error(done, f"store {shared / 's.db'}", "symbolic link", "anyone can write")
    assert not elsewhere.exists()


def test_a_journal_link_in_a_shared_folder_is_refused(shared: Path, tmp_path: Path) -> None:
    assert rigcheck("runs", store=shared / "s.db").returncode == 0
    for name in ("s.db-wal", "s.db-shm"):
        (shared / name).unlink(missing_ok=True)
    (shared / "s.db-wal").symlink_to(tmp_path / "elsewhere")
    done = rigcheck("runs", store=shared / "s.db")
    assert_one_line_error(done, "store journal", "s.db-wal", "symbolic link")
    assert not (tmp_path / "elsewhere").exists()


def test_a_log_folder_link_in_a_shared_folder_is_refused_and_its_target_keeps_its_mode(
    shared: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    os.chmod(victim, 0o755)
    (shared / "s.logs").symlink_to(victim, target_is_directory=True)
    done = rigcheck("runs", store=shared / "s.db")
    assert_one_line_error(done, f"log folder {shared / 's.logs'}", "symbolic link")
    assert victim.stat().st_mode & 0o777 == 0o755


def test_a_log_folder_link_made_after_the_store_opened_is_not_followed(shared: Path, tmp_path: Path) -> None:
    store = Store(shared / "s.db")
    victim = tmp_path / "victim"
    victim.mkdir()
    os.chmod(victim, 0o755)
    (shared / "s.logs").symlink_to(victim, target_is_directory=True)
    with pytest.raises(StoreError, match="symbolic link"):
        store.make_log_dir(1)
    assert victim.stat().st_mode & 0o777 == 0o755 and not (victim / "run-1").exists()


def test_a_store_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "s.db")
    assert_one_line_error(rigcheck("runs", store=tmp_path / "s.db"), "not a regular file")


def test_another_users_store_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Store(tmp_path / "s.db").close()
    monkeypatch.setattr(paths, "_is_ours", lambda info: False)
    with pytest.raises(UsageError, match=r"store .*s\.db belongs to .*, not to you"):
        open_store(str(tmp_path / "s.db"))


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_another_users_world_writable_store_is_refused_by_the_cli(tmp_path: Path) -> None:
    Store(tmp_path / "s.db").close()
    os.chown(tmp_path / "s.db", 54321, 54321)
    os.chmod(tmp_path / "s.db", 0o666)
    assert_one_line_error(rigcheck("runs", store=tmp_path / "s.db"), "belongs to", "not to you")


def test_a_store_link_in_a_private_folder_still_works(tmp_path: Path) -> None:
    real = tmp_path / "data" / "real.db"
    real.parent.mkdir()
    Store(real).close()
    (tmp_path / "s.db").symlink_to(real)
    done = rigcheck("runs", store=tmp_path / "s.db")
    assert done.returncode == 0, done.stderr
