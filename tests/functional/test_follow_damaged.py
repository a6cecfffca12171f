"""`follow` on a store with a damaged page or a damaged row: one line and exit 2, or the run as far as it can be
read, never a traceback (sqlite3.DatabaseError or JSONDecodeError once escaped)."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from stage_infos import TESTS_DIR


def cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "cli_driver.py", *args],
        cwd=TESTS_DIR,
        env=dict(os.environ, RIGCHECK_STORE=str(store), COLUMNS="120"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("follow") / "s.db"
    for _ in range(3):
        assert cli(store, "run", "ok", "warns", "--no-telemetry").returncode in (0, 1)
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return store


def test_a_row_whose_text_is_damaged_is_skipped(stored: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    shutil.copy(stored, store)
    with sqlite3.connect(store) as db:
        db.execute('UPDATE events SET payload = \'{"kind": "LogL\' WHERE id = (SELECT min(id) FROM events)')
        db.execute("UPDATE events SET payload = '[' WHERE id = (SELECT max(id) FROM events WHERE run_id = 1)")
    done = cli(store, "follow", "1")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done.stderr


@pytest.mark.parametrize("seed", range(20))
def test_a_damaged_page_is_one_line_or_read_never_a_traceback(stored: Path, tmp_path: Path, seed: int) -> None:
    store = tmp_path / "s.db"
    data = bytearray(stored.read_bytes())
    pages = len(data) // 4096
    chance = random.Random(seed)
    page = chance.randrange(1, pages)  # page 0 holds the header: damage there is another test's
    start = page * 4096 + chance.randrange(0, 4096 - 64)
    data[start : start + 64] = bytes(chance.randrange(256) for _ in range(64))
    store.write_bytes(bytes(data))
    done = cli(store, "follow", "1")
    assert "Traceback" not in done.stderr, (seed, page, done.stderr[-800:])
    if done.returncode == 2:
        # what was read before the damaged page may already be on screen (the plan line, early stages); the damage
        # itself is one line, the last one, said once
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert lines[-1].startswith("rigcheck: store ") and "is damaged" in lines[-1], done.stderr
        assert sum("is damaged" in line for line in lines) == 1, done.stderr
