"""Issue 44, tracebacks: stored numbers and text are untrusted. A figure's value NULL or text, or a start time of
1e308, crashed `show`, `follow`, `runs` and exports; stored escapes reached the terminal through `runs` and
`history`; the Markdown export let stored text add headings, table rows and HTML."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from cli_calls import rigcheck
from rigcheck.engine.events import Measurement, StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.store import Store

COMMANDS = (
    ("show", "last"),
    ("follow", "last"),
    ("runs",),
    ("history",),
    *(("export", "last", "--format", kind) for kind in ("md", "html", "csv", "junit", "json", "prom")),
)


def stored(path: Path, **columns: str) -> Path:
    store = Store(path)
    run_id = store.begin_run(["matmul"], "cuda:0", "quick", "python", ["run", "matmul"])
    store.record(run_id, StageStarted("matmul", "cuda:0", 1, "python"))
    conditions = {"gpu_name": "NVIDIA H200", "trust": "TRUSTED"}
    store.record(run_id, Measurement("matmul", "matmul bf16 4096", 787.2, "TFLOP/s", 1.0, 20, "cuda:0", {}, conditions))
    store.record(run_id, Verdict("matmul", "best-bf16", Status.PASS, "best bf16", {"value": 787.2}, device="cuda:0"))
    store.record(run_id, StageFinished("matmul", Status.PASS, 0))
    store.end_run(run_id, "complete", 0)
    store.close()
    db = sqlite3.connect(path)
    for sql in columns.values():
        db.execute(sql)
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize(
    "tamper",
    [
        "UPDATE measurements SET value = NULL",
        "UPDATE measurements SET value = 'abc'",
        "UPDATE measurements SET value = 9e999",
        "UPDATE runs SET started = 1e308",
        "UPDATE stages SET started = 1e308, finished = -1e308",
        "",  # the clean case
    ],
)
def test_a_tampered_number_is_shown_as_unknown_never_a_traceback(tmp_path: Path, tamper: str) -> None:
    db = stored(tmp_path / "s.db", sql=tamper) if tamper else stored(tmp_path / "s.db")
    for command in COMMANDS:
        done = rigcheck(*command, store=db)
        assert "Traceback" not in done.stderr, (command, done.stderr)
        if "started = 1e308" in tamper and command[0] not in ("runs", "history"):
            continue
        assert done.returncode == 0, (command, done.stderr)
    shown = rigcheck("show", "last", store=db).stdout
    if "value" in tamper or not tamper:
        assert ("unknown" in shown) == bool(tamper), shown
    if tamper.startswith("UPDATE runs"):
        listed = rigcheck("runs", store=db)
        assert "run 1 left out: its start time in the store is not a time" in listed.stderr


def test_stored_escapes_never_reach_the_terminal_through_runs_and_history(tmp_path: Path) -> None:
    db = stored(
        tmp_path / "s.db",
        sql="UPDATE runs SET profile = char(27) || ']0;PWNED' || char(7) || 'quick', "
        "fingerprint = char(27) || '[2Jfp', stages = '[\"\\u001b]2;T\\u0007matmul\"]'",
    )
    for command in (("runs",), ("history",)):
        done = rigcheck(*command, store=db)
        assert done.returncode == 0 and "\x1b" not in done.stdout + done.stderr, done.stdout
        assert "quick" in done.stdout and "matmul" in done.stdout


def test_stored_text_adds_no_heading_row_or_html_to_the_markdown_export(tmp_path: Path) -> None:
    evil = "x\\n# Owned\\n| a | b | c | d | e | f |\\n<img src=x onerror=alert(1)> [link](javascript:alert(1)) `code`"
    db = stored(
        tmp_path / "s.db",
        host=f"UPDATE runs SET host = '{evil}', argv = '[\"run\", \"``` `x\"]'",
        verdict=f"UPDATE verdicts SET explanation = '{evil}'",
        figure=f"UPDATE measurements SET name = '{evil}'",
    )
    db_sql = sqlite3.connect(db)
    db_sql.execute("UPDATE runs SET host = replace(host, '\\n', char(10))")
    db_sql.execute("UPDATE verdicts SET explanation = replace(explanation, '\\n', char(10))")
    db_sql.execute("UPDATE measurements SET name = replace(name, '\\n', char(10))")
    db_sql.commit()
    db_sql.close()
    text = rigcheck("export", "last", "--format", "md", store=db).stdout
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("#")] == [lines[0], "## Verdicts", "## Figures"], lines
    assert lines[0].startswith("# rigcheck run 1 on x # Owned")
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "[link]" not in text and "\\[link\\]" in text
    rows = [line for line in lines if line.startswith("|")]
    assert all(line.count(" | ") - line.count("\\| ") == rows[0].count(" | ") for line in rows[:2]), rows
    assert len(rows) == 2 + 1 + 2 + 1  # each table: its header, its rule and one row
    command = next(line for line in lines if line.startswith("- command:"))
    assert command == "- command: ```` rigcheck run ``` `x ````"
