"""A store on a filesystem that holds no blocks (/proc, /sys) is refused for what it is, never as a full disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rigcheck.engine.store import Store, StoreError
from rigcheck.engine.store.errors import free_kib


def fake_statvfs(blocks: int, free: int):  # type: ignore[no-untyped-def]
    def statvfs(_path: object) -> os.statvfs_result:
        return os.statvfs_result((4096, 4096, blocks, free, free, 100, 10, 10, 0, 255))

    return statvfs


@pytest.mark.parametrize(("blocks", "free", "kib"), [(0, 0, -1), (100, 0, 0), (100, 1, 4)])
def test_free_room_is_unknown_on_a_filesystem_with_no_blocks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, blocks: int, free: int, kib: int
) -> None:
    monkeypatch.setattr(os, "statvfs", fake_statvfs(blocks, free))
    assert free_kib(tmp_path) == kib  # a real disk with 0 or 4 KiB free says so; /proc's 0 of 0 is no disk


def test_a_store_in_proc_is_not_called_a_full_disk() -> None:
    if not os.path.isdir("/proc/self"):
        pytest.fail("this test needs Linux's /proc")
    with pytest.raises(StoreError) as error:
        Store("/proc/rigcheck-test.db")
    assert "full" not in str(error.value) and "/proc/rigcheck-test.db" in str(error.value)
