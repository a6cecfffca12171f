"""Report files (`export -o`, `run --json/--junit`, `monitor --prom-textfile`) replace only a regular file of this
user's: a device, FIFO, socket, symlink or another user's file is refused before the run, one line and exit 2."""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_calls import assert_one_line_error, rigcheck
from rigcheck.engine.report import atomic_write
from rigcheck.engine.report.atomic_write import RefusedTarget, write_atomic
from rigcheck.engine.run.preflight import UsageError, check_output_file
from rigcheck.engine.store import Store

WAIT_S = 90  # a FIFO opened for writing waits for a reader: a hang must fail the test, not stall it


def fifo(path: Path) -> None:
    os.mkfifo(path)


def link_to_stdout(path: Path) -> None:
    path.symlink_to("/proc/self/fd/1")


def link_to_file(path: Path) -> None:
    (path.parent / "victim.txt").write_text("keep me\n")
    path.symlink_to(path.parent / "victim.txt")


def socket_file(path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))


KINDS: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (fifo, "FIFO"),
    "link to stdout": (link_to_stdout, "symbolic link"),
    "link to a file": (link_to_file, "symbolic link"),
    "socket": (socket_file, "socket"),
}


def snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    """Each entry's kind and, for a link, its target: what a refused write must leave as it was."""
    return {
        entry.name: (stat.S_IFMT(entry.lstat().st_mode), os.readlink(entry) if entry.is_symlink() else "")
        for entry in folder.iterdir()
    }


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A folder with a short path: a socket's name must fit in 107 bytes."""
    with tempfile.TemporaryDirectory(prefix="rc-") as name:
        yield Path(name)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("flag", ["--json", "--junit"])
def test_run_refuses_a_report_path_that_is_not_a_regular_file(short_tmp: Path, kind: str, flag: str) -> None:
    make, words = KINDS[kind]
    target = short_tmp / "out" / "report"
    target.parent.mkdir()
    make(target)
    before = snapshot(target.parent)
    store = short_tmp / "s.db"
    done = rigcheck("run", "probe", "--device", "cpu", flag, str(target), store=store, timeout=WAIT_S)
    assert_one_line_error(done, flag, words)
    assert snapshot(target.parent) == before  # nothing replaced, no temporary file left
    assert not store.exists()  # refused before anything ran


@pytest.mark.parametrize("kind", KINDS)
def test_export_refuses_an_output_that_is_not_a_regular_file(short_tmp: Path, kind: str) -> None:
    make, words = KINDS[kind]
    store = short_tmp / "s.db"
    Store(store).begin_run(["probe"], "cpu", "quick", sys.executable, [])
    target = short_tmp / "out" / "report"
    target.parent.mkdir()
    make(target)
    before = snapshot(target.parent)
    assert_one_line_error(rigcheck("export", "last", "-o", str(target), store=store, timeout=WAIT_S), "--output", words)
    assert snapshot(target.parent) == before
    if kind == "link to a file":
        assert (target.parent / "victim.txt").read_text() == "keep me\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_device_is_refused_before_the_run_not_after(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    done = rigcheck("run", "probe", "--device", "cpu", "--json", "/dev/full", store=store)
    assert_one_line_error(done, "--json /dev/full", "device")
    assert not store.exists()
    assert_one_line_error(rigcheck("export", "last", "-o", "/dev/full", store=store), "--output", "device")
    assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)


def test_monitor_refuses_a_prom_file_that_is_a_link(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.prom").write_text("keep\n")
    (tmp_path / "rigcheck.prom").symlink_to(tmp_path / "elsewhere.prom")
    done = rigcheck("monitor", "--prom-textfile", str(tmp_path), "--count", "1", store=tmp_path / "s.db")
    assert_one_line_error(done, "--prom-textfile", "symbolic link")
    assert (tmp_path / "rigcheck.prom").is_symlink() and (tmp_path / "elsewhere.prom").read_text() == "keep\n"


def test_dash_is_standard_output(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    run = rigcheck("run", "probe", "--device", "cpu", "--json", "-", store=store)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["run"]["id"] == 1  # stdout holds only the report; the summary went to stderr
    assert "probe" in run.stderr
    exported = rigcheck("export", "last", "-o", "-", store=store)
    assert exported.returncode == 0 and json.loads(exported.stdout)["run"]["id"] == 1
    assert not (tmp_path / "-").exists()
    both = rigcheck("run", "probe", "--device", "cpu", "--json", "-", "--junit", "-", store=store)
    assert_one_line_error(both, "standard output")


def test_another_users_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "theirs.json"
    target.write_text("theirs\n")
    me = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: me + 1)  # the file's owner is now someone else
    with pytest.raises(UsageError, match="another user"):
        check_output_file("--json", str(target))
    with pytest.raises(RefusedTarget, match="another user"):
        write_atomic(target, "mine\n")
    assert target.read_text() == "theirs\n" and os.listdir(tmp_path) == ["theirs.json"]


def test_a_target_swapped_for_a_link_after_the_check_is_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    assert check_output_file("--json", str(target)) == target
    (tmp_path / "victim").write_text("keep\n")
    target.symlink_to(tmp_path / "victim")
    with pytest.raises(RefusedTarget, match="symbolic link"):
        write_atomic(target, "report\n")
    assert target.is_symlink() and (tmp_path / "victim").read_text() == "keep\n"
    assert sorted(os.listdir(tmp_path)) == ["report.json", "victim"]


def test_a_target_that_changes_while_written_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.json"
    real_check = atomic_write.existing_target
    calls: list[Path] = []

    def appears_while_written(path: Path) -> os.stat_result | None:
        calls.append(path)
        if len(calls) == 2:  # the check made just before the rename
            os.mkfifo(path)
        return real_check(path)

    monkeypatch.setattr(atomic_write, "existing_target", appears_while_written)
    with pytest.raises(RefusedTarget):
        write_atomic(target, "report\n")
    assert os.listdir(tmp_path) == ["report.json"] and stat.S_ISFIFO(os.lstat(target).st_mode)


def test_the_temporary_file_is_made_new_never_opened_through_a_planted_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.json"
    planted = tmp_path / ".planted.tmp"
    planted.symlink_to(tmp_path / "victim")
    monkeypatch.setattr(atomic_write, "temp_name", lambda path: planted)
    with pytest.raises(FileExistsError):
        write_atomic(target, "report\n")
    assert planted.is_symlink() and not (tmp_path / "victim").exists() and not target.exists()
