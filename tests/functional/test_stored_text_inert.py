"""Issue 35, item 15: stored text is untrusted. Escape sequences and bidi marks written into a verdict, a figure's
reasons or a process name reach no terminal through `show` or `compare`, and no file through the md, csv, prom
or json exports: they are taken out when the store is read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from rigcheck.engine.events import Measurement, StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.store import Store

HOSTILE = "\x1b]0;owned\x07\x1b[2J\u202eevil\u202c\x9b31m"


def hostile_run(store: Store) -> int:
    run_id = store.begin_run(["matmul"], "cpu", "quick", "python", [])
    store.record(run_id, StageStarted("matmul", "cpu", 1, "python"))
    conditions = {"trust": "SUSPECT", "trust_reasons": [f"other processes: {HOSTILE} (pid 7)"], "verified": True}
    store.record(
        run_id, Measurement("matmul", f"matmul fp32 256{HOSTILE}", 1.0, "GFLOP/s", 0.0, 5, "cpu", {}, conditions)
    )
    store.record(run_id, Verdict("matmul", "sweep", Status.WARN, f"said {HOSTILE} here", device="cpu"))
    store.record(run_id, StageFinished("matmul", Status.WARN, 0))
    store.end_run(run_id, "complete", 0)
    return run_id


def cli(store: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "rigcheck.tui.cli", *args, "--store", str(store)]
    return subprocess.run(command, capture_output=True, timeout=120, check=False)


def clean(data: bytes) -> bool:
    text = data.decode("utf-8", "replace")
    return not any(ch in text for ch in ("\x1b", "\x07", "\x9b", "\u202e", "\u202c"))


@pytest.mark.parametrize(
    "args",
    [("show", "1"), ("compare", "1", "2"), *[("export", "1", "--format", f) for f in ("md", "csv", "prom", "json")]],
)
def test_no_escape_or_bidi_mark_reaches_the_output(tmp_path: Path, args: tuple[str, ...]) -> None:
    store_path = tmp_path / "s.db"
    store = Store(store_path)
    hostile_run(store)
    hostile_run(store)
    store.close()
    done = cli(store_path, *args)
    assert done.returncode == 0, done.stderr
    assert b"said" in done.stdout or b"evil" in done.stdout  # the text is there, made inert
    assert clean(done.stdout) and clean(done.stderr)


def test_the_words_around_the_escapes_are_kept() -> None:
    from rigcheck.engine.store.inert import inert_report

    kept = inert_report({"explanation": f"said {HOSTILE} here", "n": 3, "list": [HOSTILE]})
    assert kept == {"explanation": "said evil here", "n": 3, "list": ["evil"]}
