"""Issue 44, bad input that still gave a traceback or meant "not given": each is one line and exit 2 now, beside
the clean case that still works."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from cli_calls import assert_one_line_error, rigcheck
from rigcheck.engine.store import Store


def test_a_damaged_schema_whose_sqlite_error_is_not_utf8_is_one_line_in_every_command(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    Store(db).begin_run(["probe"], "cpu", "quick", "python", [])
    assert rigcheck("runs", store=db).returncode == 0  # the clean case
    raw = sqlite3.connect(db)
    raw.execute("PRAGMA writable_schema=ON")
    raw.execute(
        "UPDATE sqlite_master SET sql = CAST(X'435245415445205441424C452066616374732861292078FFFE' AS TEXT)"
        " WHERE name = 'facts'"
    )  # CREATE TABLE facts(a) x\xff\xfe: SQLite quotes the bytes in its error
    raw.commit()
    raw.close()
    for command in (("runs",), ("show", "last"), ("history",), ("export", "last")):
        assert_one_line_error(rigcheck(*command, store=db), f"store {db} is damaged", "not UTF-8")


def test_monitor_refuses_a_prom_textfile_it_cannot_name_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    long = "a" * 5000
    for given, says in (
        ("~nouserhere/x", "there is no user 'nouserhere' here"),
        (long, "(5000 characters)"),
        ("", "empty"),
    ):
        done = rigcheck("monitor", "--count", "1", "--prom-textfile", given, store=db)
        assert_one_line_error(done, "--prom-textfile", says)
        assert len(done.stderr) < 400
    fine = rigcheck("monitor", "--count", "1", "--prom-textfile", str(tmp_path), store=db)
    assert fine.returncode == 0 and (tmp_path / "rigcheck.prom").is_file(), fine.stderr


def test_a_store_named_dash_or_in_a_home_that_is_not_there_is_refused(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    prom = ("monitor", "--count", "1", "--prom-textfile", str(tmp_path))
    assert_one_line_error(rigcheck("--store", "-", "history", store=tmp_path / "s.db"), "--store -", "names none")
    assert_one_line_error(rigcheck("--store", "-", *prom, store=tmp_path / "s.db"), "--store -")
    assert not (tmp_path / "-").exists()
    assert_one_line_error(rigcheck("--store", "~nouserhere/s.db", *prom, store=tmp_path / "s.db"), "nouserhere")
    assert_one_line_error(rigcheck(*prom, store=Path("~nouserhere/s.db")), "RIGCHECK_STORE", "nouserhere")


def test_a_gpu_uuid_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    Store(db).begin_run(["probe"], "cpu", "quick", "python", [])
    assert_one_line_error(rigcheck("history", "--gpu", "\udcff", store=db), "not a GPU UUID")
    assert_one_line_error(rigcheck("history", "--gpu", "GPU-nothere", store=db), "no run in the store")
