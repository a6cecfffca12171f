"""A store's journal (-wal, -shm) in a folder other users may write is made by rigcheck itself, new and 0600,
before SQLite opens it; one that a second real user made is refused, whether before the open or in the race."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from other_user import as_user, second_user, shared_folder
from rigcheck.engine.store import Store, StoreError, schema


@pytest.fixture
def sticky_and_mallory() -> Iterator[tuple[Path, int]]:
    with second_user() as mallory, shared_folder() as base:
        sticky = base / "sticky"
        sticky.mkdir()
        os.chmod(sticky, 0o1777)
        yield sticky, mallory


def plant_journal(mallory: int, path: Path) -> None:
    """She makes the journal first, readable and writable by all, as the inotify attack did."""
    as_user(mallory, "sh", "-c", f"umask 0; : > '{path}'")


def test_a_journal_she_makes_in_the_moment_before_sqlite_opens_is_refused(
    sticky_and_mallory: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    sticky, mallory = sticky_and_mallory
    checked = schema.check_store_paths

    def then_she_plants(path: Path, log_root: Path) -> None:  # the race: after our check, before SQLite
        checked(path, log_root)
        plant_journal(mallory, path.with_name(path.name + "-wal"))

    monkeypatch.setattr(schema, "check_store_paths", then_she_plants)
    with pytest.raises(StoreError, match=r"store journal .*new1.db-wal belongs to rcmal"):
        Store(sticky / "new1.db")
    wal = os.stat(sticky / "new1.db-wal")
    assert wal.st_uid == mallory and wal.st_size == 0, "root wrote into her journal"


def test_a_journal_she_left_is_refused(sticky_and_mallory: tuple[Path, int]) -> None:
    sticky, mallory = sticky_and_mallory
    for suffix in ("-wal", "-shm"):
        plant_journal(mallory, sticky / f"s{suffix}.db{suffix}")
        with pytest.raises(StoreError, match=r"store journal .*belongs to rcmal"):
            Store(sticky / f"s{suffix}.db")


def test_in_a_sticky_folder_the_journal_is_ours_and_private(sticky_and_mallory: tuple[Path, int]) -> None:
    sticky, _mallory = sticky_and_mallory
    store = Store(sticky / "ok.db")
    store.begin_run(["probe"], "cpu", "quick", "python", [])
    for suffix in ("-wal", "-shm"):
        info = os.lstat(sticky / f"ok.db{suffix}")
        assert stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o600
    store.close()
    assert Store(sticky / "ok.db").runs()  # and it reads back
