"""A hot rollback journal another user renames into `STORE-journal` is never played back into a store, and a
folder writable by a group with other members is refused like a world-writable one (a real second user)."""

from __future__ import annotations

import grp
import os
import pwd
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from other_user import second_user, shared_folder
from rigcheck.engine.store import Store, StoreError, schema

FORGE = """
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=DELETE"); db.execute("PRAGMA synchronous=OFF")
db.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, host TEXT)")
for n in range(50):
    db.execute("INSERT INTO runs (host) VALUES ('FORGED ' || ?)", (n,))
db.execute("BEGIN"); db.execute("UPDATE runs SET host = 'x'")
os._exit(0)  # the transaction never ends: its journal is hot, holding the FORGED pages
"""


@pytest.fixture
def sticky_and_mallory() -> Iterator[tuple[Path, int, Path]]:
    with second_user() as mallory, shared_folder() as base:
        sticky, hers = base / "sticky", base / "hers"
        sticky.mkdir()
        os.chmod(sticky, 0o1777)
        hers.mkdir()
        subprocess.run([sys.executable, "-c", FORGE, str(hers / "forge.db")], check=True, timeout=60)
        assert (hers / "forge.db-journal").stat().st_size > 0
        for path in (hers, *hers.iterdir()):
            os.chown(path, mallory, -1)
        yield sticky, mallory, hers / "forge.db-journal"


def she_renames(mallory: int, journal: Path, to: Path) -> bool:
    done = subprocess.run(["mv", "-f", str(journal), str(to)], user=mallory, cwd="/", capture_output=True, timeout=60)
    return done.returncode == 0


def forged(path: Path) -> bool:
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        return any("FORGED" in str(row) for row in db.execute("SELECT * FROM runs"))
    except sqlite3.Error:
        return False
    finally:
        db.close()


def test_her_hot_journal_renamed_in_before_the_first_read_is_never_played_back(
    sticky_and_mallory: tuple[Path, int, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    sticky, mallory, journal = sticky_and_mallory
    store_path = sticky / "root.db"
    connect = schema._connect
    got_in: list[bool] = []

    def she_renames_first(path: Path, query: str | None = None) -> sqlite3.Connection:
        if not got_in:  # the race: the store and its -wal are made, SQLite has not read yet
            got_in.append(she_renames(mallory, journal, path.with_name(path.name + "-journal")))
        return connect(path, query)

    monkeypatch.setattr(schema, "_connect", she_renames_first)
    try:
        store = Store(store_path)
        store.begin_run(["probe"], "cpu", "quick", sys.executable, [])
        store.close()
    finally:
        monkeypatch.undo()
    assert got_in == [False], "her journal got in"
    assert not she_renames(mallory, journal, sticky / "root.db-journal")  # nor later, with the store made
    assert len(Store(store_path).runs()) == 1 and not forged(store_path)


def test_a_store_in_a_sticky_folder_keeps_its_own_empty_journal(sticky_and_mallory: tuple[Path, int, Path]) -> None:
    sticky, _mallory, _journal = sticky_and_mallory
    store = Store(sticky / "ok.db")
    store.begin_run(["probe"], "cpu", "quick", sys.executable, [])
    store.close()
    held = os.lstat(sticky / "ok.db-journal")
    assert held.st_uid == os.geteuid() and held.st_size == 0 and held.st_mode & 0o777 == 0o600
    assert len(Store(sticky / "ok.db").runs()) == 1


@pytest.fixture
def shared_group() -> Iterator[tuple[int, int]]:
    """A group holding root and the second user."""
    with second_user() as mallory:
        name = f"rcgrp{os.getpid() % 100000}"
        subprocess.run(["groupadd", name], check=True, timeout=60)
        try:
            gid = grp.getgrnam(name).gr_gid
            yield gid, mallory
        finally:
            subprocess.run(["groupdel", name], check=False, timeout=60)


def test_a_root_folder_writable_by_a_group_with_other_members_is_refused(shared_group: tuple[int, int]) -> None:
    gid, mallory = shared_group
    subprocess.run(["usermod", "-aG", grp.getgrgid(gid).gr_name, pwd.getpwuid(mallory).pw_name], check=True)
    with shared_folder() as base:
        folder = base / "team"
        folder.mkdir()
        os.chown(folder, 0, gid)
        os.chmod(folder, 0o775)
        she = subprocess.run(["sh", "-c", f": > '{folder}/hers'"], user=mallory, extra_groups=[gid], timeout=60)
        assert she.returncode == 0  # she may indeed add, and so remove, files there
        with pytest.raises(StoreError, match=r"writable by other users \(mode 775\): its group rcgrp\d+ has other"):
            Store(folder / "st.db")
        assert not (folder / "st.db").exists()


def test_a_root_folder_writable_by_its_own_group_alone_passes(shared_group: tuple[int, int]) -> None:
    gid, _mallory = shared_group  # she is not a member here
    with shared_folder() as base:
        folder = base / "solo"
        folder.mkdir()
        os.chown(folder, 0, gid)
        os.chmod(folder, 0o775)
        Store(folder / "st.db").begin_run(["probe"], "cpu", "quick", sys.executable, [])
        assert len(Store(folder / "st.db").runs()) == 1
