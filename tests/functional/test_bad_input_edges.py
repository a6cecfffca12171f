"""Bad input found by the second hardening pass: each is one line and exit 2, never a traceback, a hang, or an
empty value silently taken as "not given"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_calls import RIGCHECK, assert_one_line_error
from rigcheck.engine.measure.small_file import read_small
from rigcheck.engine.run.numbers import parse_count
from rigcheck.engine.store import Store

HUGE = "9" * 5000


def call(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "RIGCHECK_STORE": str(tmp_path / "s.db"), **(env or {})}
    return subprocess.run(
        [*RIGCHECK, *args], capture_output=True, text=True, env=environ, timeout=60, cwd=tmp_path, check=False
    )


@pytest.fixture
def files(tmp_path: Path) -> Path:
    Store(tmp_path / "s.db").begin_run(["probe"], "cpu", "quick", sys.executable, [])
    (tmp_path / "deep.json").write_text("[" * 100000)
    os.mkfifo(tmp_path / "fifo")
    return tmp_path


CASES: dict[str, tuple[tuple[str, ...], dict[str, str], str]] = {
    "show huge": (("show", HUGE), {}, "bad run"),
    "follow huge": (("follow", HUGE), {}, "bad run"),
    "cancel huge": (("cancel", HUGE), {}, "bad run"),
    "export huge": (("export", HUGE), {}, "bad run"),
    "compare huge": (("compare", HUGE, "1"), {}, "bad run"),
    "store ~nouser": (("history", "--store", "~nouser/x.db"), {}, "no user 'nouser'"),
    "env ~nouser": (("history",), {"RIGCHECK_STORE": "~nouser/x.db"}, "RIGCHECK_STORE"),
    "baseline ~nouser": (("run", "probe", "--device", "cpu", "--baseline", "~nouser/b.json"), {}, "--baseline"),
    "json ~nouser": (("run", "probe", "--device", "cpu", "--json", "~nouser/r.json"), {}, "--json"),
    "export -o ~nouser": (("export", "last", "-o", "~nouser/r.json"), {}, "--output"),
    "store .": (("history", "--store", "."), {}, "names a folder"),
    "store /": (("history", "--store", "/"), {}, "names a folder"),
    "env /": (("runs",), {"RIGCHECK_STORE": "/"}, "names a folder"),
    "env .": (("show", "last"), {"RIGCHECK_STORE": "."}, "names a folder"),
    "baseline /dev/zero": (("run", "probe", "--device", "cpu", "--baseline", "/dev/zero"), {}, "not a regular file"),
    "baseline deep": (("run", "probe", "--device", "cpu", "--baseline", "deep.json"), {}, "nested too deeply"),
    "baseline fifo": (("run", "probe", "--device", "cpu", "--baseline", "fifo"), {}, "not a regular file"),
    "port arabic": (("serve", "--port", "١٢"), {}, "--port"),
    "port underscore": (("serve", "--port", "1_000"), {}, "--port"),
    "port fullwidth": (("serve", "--port", "１２"), {}, "--port"),
    "port plus": (("serve", "--port", "+3"), {}, "--port"),
    "store empty": (("history", "--store", ""), {}, "--store: '': empty"),
    "env empty": (("history",), {"RIGCHECK_STORE": ""}, "RIGCHECK_STORE is empty"),
    "device empty": (("run", "probe", "--device", ""), {}, "--device"),
    "python empty": (("run", "probe", "--device", "cpu", "--python", ""), {}, "--python"),
    "baseline empty": (("run", "probe", "--device", "cpu", "--baseline", ""), {}, "--baseline"),
    "json empty": (("run", "probe", "--device", "cpu", "--json", ""), {}, "--json"),
    "export -o empty": (("export", "last", "-o", ""), {}, "--output"),
    "serve device empty": (("serve", "--device", ""), {}, "--device"),
    "fleet id huge": (
        ("fleet", "--nnodes", "2", "--endpoint", "127.0.0.1:29400", "--id", "a" * 5000, "probe"),
        {},
        "--id",
    ),
    # `--store` before `fleet`: the agent's own options and stages were "unrecognized", or a KeyError traceback
    "fleet after --store, unknown stage": (
        ("--store", "f.db", "fleet", "--nnodes", "1", "--endpoint", "127.0.0.1:29400", "nosuch"),
        {},
        "unknown stage 'nosuch'",
    ),
    "fleet after --store, id huge": (
        ("--store", "f.db", "fleet", "--nnodes", "2", "--endpoint", "127.0.0.1:29400", "--id", "a" * 5000),
        {},
        "--id",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_is_one_line_and_exit_2(files: Path, case: str) -> None:
    args, env, words = CASES[case]
    done = call(files, *args, env=env)
    assert_one_line_error(done, words)
    assert HUGE not in done.stderr  # the line says what was wrong, it does not echo 5,000 digits


def test_counts_have_a_length_bound_before_int() -> None:
    assert parse_count("9" * 19) is None and parse_count("0" * 100 + "42") == 42
    assert parse_count(str(2**63 - 1)) == 2**63 - 1 and parse_count(str(2**63)) is None
    assert parse_count(HUGE) is None


def test_a_small_read_is_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 1001)
    with pytest.raises(OSError, match="over the 1,000"):
        read_small(big, limit=1000)
    assert read_small(big, limit=1001) == b"x" * 1001


def test_reports_asked_of_a_detached_run_are_refused_at_once(files: Path) -> None:
    for flags in (("--json", "r.json"), ("--junit", "r.xml"), ("--json", "r.json", "--junit", "r.xml")):
        done = call(files, "run", "probe", "--device", "cpu", "--detach", *flags)
        assert_one_line_error(done, "--detach", "rigcheck export")
        assert not (files / "r.json").exists() and not (files / "r.xml").exists()
    assert Store(files / "s.db").latest_run_id() == 1  # no run was started


def test_an_append_only_store_is_one_line(files: Path) -> None:
    """chattr +a: the mode says writable, SQLite is refused every write."""
    store = files / "a.db"
    Store(store).close()
    if subprocess.run(["chattr", "+a", str(store)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +a needs root and a file system that keeps attributes")
    try:
        done = call(files, "run", "probe", "--device", "cpu", env={"RIGCHECK_STORE": str(store)})
    finally:
        subprocess.run(["chattr", "-a", str(store)], check=False)
    assert_one_line_error(done, "append-only")
    assert "cannot be written" in done.stderr or "read-only" in done.stderr, done.stderr


def test_a_new_store_held_by_another_process_is_said_so_not_called_corrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from rigcheck.engine.store import StoreError, schema

    monkeypatch.setattr(schema, "BUSY_TIMEOUT_S", 0.5)  # the 30 s wait, shortened
    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process making it, for longer than a run waits
    try:
        with pytest.raises(StoreError) as refused:
            Store(path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    said = str(refused.value)
    assert "held by another process" in said and "corrupt" not in said and "move it aside" not in said, said
    Store(path).close()  # once it lets go, it opens
