"""A damaged or read-only store: one line naming the store and what to do, never a traceback, and no writes."""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from cli_calls import RIGCHECK, assert_one_line_error, rigcheck
from rigcheck.engine.store import Store
from stored_runs import dead_engine_run

PAGE = 4096


def filled_store(path: Path, runs: int = 120) -> Store:
    """A real store whose runs rows are spread through the file between other tables' pages."""
    store = Store(path)
    for _ in range(runs):
        run_id = store.begin_run(["probe", "ok"], "cpu", "quick", "python", ["--flag=" + "x" * 900])
        store.end_run(run_id, "complete", 0)
        store._write("INSERT INTO events (run_id, kind, t, payload) VALUES (?, 'log', 1.0, ?)", (run_id, "y" * 3000))
    store._write("PRAGMA wal_checkpoint(TRUNCATE)")
    return store


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_store_with_overwritten_pages_is_one_line_with_the_way_to_recover_it(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    filled_store(path).close()
    pages = path.stat().st_size // PAGE
    with open(path, "r+b") as file:
        for page in range(pages // 3, 2 * pages // 3):
            file.seek(page * PAGE + 64)
            file.write(b"\xff\xfe damaged " * 300)
    before = digest(path)
    for args in (("runs",), ("show", "1"), ("export", "1")):
        done = rigcheck(*args, store=path)
        assert_one_line_error(done, f"store {path} is damaged", f"sqlite3 {path} .recover")
    assert digest(path) == before  # left as it is


def test_text_that_is_not_utf8_does_not_stop_the_list(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    filled_store(path, runs=3).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET host = CAST(x'ff41' AS TEXT), profile = CAST(x'c3' AS TEXT) WHERE id = 2")
    done = rigcheck("runs", store=path)
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines() if line.strip()[:1].isdigit()] == ["3", "2", "1"]


def test_one_bad_stage_list_leaves_the_other_runs_listed_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    filled_store(path, runs=3).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET stages = '[\"probe\", ' WHERE id = 2")
    done = rigcheck("runs", store=path)
    assert done.returncode == 0, done.stderr
    listed = [line.split()[0] for line in done.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert listed == ["3", "1"]
    assert done.stderr.strip() == "rigcheck: run 2 left out: its stage list in the store is not valid JSON"
    assert_one_line_error(rigcheck("show", "2", store=path), "run 2 is damaged", "not affected")
    assert rigcheck("show", "3", store=path).returncode == 0


def dead_run_store(path: Path) -> int:
    """A store holding a run whose engine is gone: opening it where it can be written marks it interrupted."""
    return dead_engine_run(filled_store(path, runs=2))


def test_opening_a_store_it_may_not_write_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.db"
    run_id = dead_run_store(path)
    before = digest(path)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if mode & os.W_OK else real_access(p, mode))
    store = Store(path)
    assert store.read_only
    assert store.run(run_id)["status"] == "running"  # not swept: that would be a write
    assert store.report(1)["run"]["status"] == "complete" and len(store.runs()) == 3
    store.close()
    assert digest(path) == before and not Path(f"{path}-wal").exists()
    monkeypatch.undo()
    assert Store(path).run(run_id)["status"] == "interrupted"  # where it can write, the sweep still runs


def in_read_only_mount(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI with `folder` mounted read-only (a private mount namespace: needs root and unshare)."""
    command = shlex.join([*RIGCHECK, *args])
    script = f"mount --bind -o ro {shlex.quote(str(folder))} {shlex.quote(str(folder))} && exec {command}"
    env = dict(os.environ, RIGCHECK_STORE=str(folder / "s.db"), COLUMNS="120")
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=env, timeout=240)


def read_only_mounts_work() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-m", "mount", "--bind", "-o", "ro", "/", "/"], capture_output=True, check=False)
    return done.returncode == 0


@pytest.mark.skipif(not read_only_mounts_work(), reason="needs root and a private mount namespace")
def test_runs_show_and_export_work_on_a_read_only_mount(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    run_id = dead_run_store(folder / "s.db")
    before = digest(folder / "s.db")
    listed = in_read_only_mount(folder, "runs")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    assert any(line.split()[:1] == [str(run_id)] for line in listed.stdout.splitlines()), listed.stdout
    shown = in_read_only_mount(folder, "show", "1")
    assert shown.returncode == 0, shown.stderr
    exported = in_read_only_mount(folder, "export", "1", "--format", "json")
    assert exported.returncode == 0 and '"status": "complete"' in exported.stdout, exported.stderr
    refused = in_read_only_mount(folder, "run", "probe", "--no-telemetry")
    assert_one_line_error(refused, "is read-only here", "nothing was written")
    assert digest(folder / "s.db") == before and sorted(p.name for p in folder.iterdir()) == ["s.db"]
