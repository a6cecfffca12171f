"""What `run`, `follow`, `show`, `history` and the help say (issue 34): a stage's worst verdict in its headline and
what fails the run, elapsed and expected time that keeps passing on a pipe, exit codes in the help, plain ranges."""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from rigcheck.engine.events import Progress, StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.run.log_tail import log_tail
from rigcheck.engine.store import Store
from rigcheck.engine.trust.quiet import busy_next_step
from rigcheck.tui.cli import main
from rigcheck.tui.cli_clock import RunClock, duration
from rigcheck.tui.cli_display import LiveDisplay
from rigcheck.tui.cli_parser import build_parser


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def display(
    clock: RunClock | None = None, strict: bool = False, now: Clock | None = None
) -> tuple[LiveDisplay, io.StringIO]:
    out = io.StringIO()
    shown = LiveDisplay(Console(file=out, width=200, force_terminal=False), clock, strict, 0, now or Clock(0.0))
    return shown, out


def finish_bandwidth(shown: LiveDisplay) -> None:
    shown(StageStarted("bandwidth", "cpu", 7, "python", t=100.0))
    shown(Verdict("bandwidth", "host-copy", Status.PASS, "fine"))
    shown(Verdict("bandwidth", "quiet-check", Status.WARN, "busy"))
    shown(StageFinished("bandwidth", Status.PASS, t=112.0))


def test_a_stage_headline_shows_its_worst_verdict_not_the_stage_status() -> None:
    """Seen: `< bandwidth: PASS (1 PASS, 1 WARN)` while --strict failed the run on that WARN."""
    shown, out = display()
    finish_bandwidth(shown)
    assert "< bandwidth: WARN (1 PASS, 1 WARN)" in out.getvalue()
    assert "fails the run" not in out.getvalue()  # without --strict a WARN fails nothing


def test_with_strict_the_headline_says_what_fails_the_run() -> None:
    shown, out = display(strict=True)
    finish_bandwidth(shown)
    assert "< bandwidth: WARN (1 PASS, 1 WARN)" in out.getvalue()
    assert "with --strict, 1 WARN fails the run" in out.getvalue()


def test_a_fail_is_said_to_fail_the_run_with_or_without_strict() -> None:
    shown, out = display()
    shown(StageStarted("verify", "cpu", 7, "python", t=0.0))
    shown(Verdict("verify", "a", Status.FAIL, "wrong"))
    shown(Verdict("verify", "b", Status.FAIL, "wrong"))
    shown(StageFinished("verify", Status.FAIL, t=1.0))
    assert "< verify: FAIL (2 FAIL)" in out.getvalue() and "2 FAIL fail the run" in out.getvalue()


def test_each_stage_says_its_expected_time_and_the_run_its_total() -> None:
    clock = RunClock.of(["probe", "verify"], {"probe": 4.0, "verify": 100.0})
    shown, out = display(clock)
    with shown:
        shown(StageStarted("probe", "cpu", 7, "python", t=1000.0))
        shown(StageFinished("probe", Status.PASS, t=1005.0))
        shown(StageStarted("verify", "cpu", 7, "python", t=1005.0))
    text = out.getvalue()
    assert "2 stages, expected to take about 1m 44s" in text
    assert "> probe on cpu (pid 7), about 4.0 s" in text
    assert "< probe: PASS in 5.0 s (expected about 4.0 s); run 5.0 s of about 1m 44s" in text
    assert "> verify on cpu (pid 7), about 1m 40s" in text


def test_without_earlier_runs_it_says_no_estimate() -> None:
    clock = RunClock.of(["probe", "verify"], {"probe": 4.0})
    shown, out = display(clock)
    with shown:
        shown(StageStarted("verify", "cpu", 7, "python", t=0.0))
        shown(StageFinished("verify", Status.PASS, t=30.0))
    text = out.getvalue()
    assert "no estimate for the run (no earlier finished run of verify here)" in text
    assert "> verify on cpu (pid 7), no estimate" in text
    assert "in 30 s (no estimate); run 30 s (no estimate)" in text


def test_with_no_earlier_run_at_all_it_says_so_briefly() -> None:
    shown, out = display(RunClock.of(["probe", "verify", "matmul"], {}))
    with shown:
        pass
    assert "3 stages; no estimate for the run (no earlier finished run on this device and profile)" in out.getvalue()


def test_a_stage_stuck_at_88_percent_shows_time_passing_on_a_pipe() -> None:
    """Seen: Verify sat at 88% (soak of 200 steps) for minutes with no elapsed time and no estimate."""
    now = Clock(1000.0)
    shown, out = display(RunClock.of(["verify"], {"verify": 100.0}), now=now)
    shown(StageStarted("verify", "cpu", 7, "python", t=1000.0))
    shown(Progress("verify", 176, 200, "soak of 200 steps"))
    now.t = 1150.0
    shown.tick()
    now.t = 1210.0
    shown.tick()
    lines = [line for line in out.getvalue().splitlines() if line.startswith("  verify:")]
    assert lines == [
        "  verify: 88% soak of 200 steps; 2m 30s so far (expected about 1m 40s); run 2m 30s of about 1m 40s",
        "  verify: 88% soak of 200 steps; 3m 30s so far (expected about 1m 40s); run 3m 30s of about 1m 40s",
    ]


def test_the_heartbeat_runs_by_itself_on_a_pipe() -> None:
    out = io.StringIO()
    shown = LiveDisplay(Console(file=out, width=200, force_terminal=False), heartbeat_s=0.05)
    with shown:
        shown(StageStarted("verify", "cpu", 7, "python"))
        for _ in range(600):  # a busy host may be slow to schedule the heartbeat's thread
            if out.getvalue().count("so far") >= 2:
                break
            time.sleep(0.05)
    assert out.getvalue().count("  verify: running; ") >= 2


@pytest.mark.parametrize(
    ("seconds", "words"), [(0.04, "0.0 s"), (9.94, "9.9 s"), (10.2, "10 s"), (100, "1m 40s"), (3725, "1h 02m")]
)
def test_durations_read_short(seconds: float, words: str) -> None:
    assert duration(seconds) == words


def test_the_help_names_every_exit_code() -> None:
    for args in ([], ["run"]):
        parser = build_parser() if not args else build_parser()._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
        text = parser.format_help()
        assert "exit codes:" in text
        for code in ("0", "1", "2", "3", "4", "130"):
            assert any(line.split()[:1] == [code] for line in text.splitlines()), (code, text)


def test_limit_zero_says_the_range_in_plain_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", str(tmp_path / "s.db"), "history", "--limit", "0"]) == 2
    said = capsys.readouterr().err
    assert "'0': give a whole number of 1 or more" in said and "9223372036854775807" not in said
    assert main(["--store", str(tmp_path / "s.db"), "history", "--limit", "9" * 20]) == 2
    assert "too large: give a whole number from 1 to 9223372036854775807" in capsys.readouterr().err


def test_a_timeout_tail_keeps_the_warm_childs_housekeeping_out(tmp_path: Path) -> None:
    """Seen: `put back what the stage left changed: ['cudnn.allow_tf32', 'environ']` on a TIMEOUT's stderr."""
    log = tmp_path / "stage.log"
    log.write_text(
        "rigcheck child 41 (warm, stage 2 here): StageSpec(...) via /usr/bin/python3\n"
        "measuring matmul fp32 4096\n"
        "rigcheck child: put back what the stage left changed: ['cudnn.allow_tf32', 'environ']\n"
        'Thread 0x1 (most recent call first):\n  File "/x/rigcheck/engine/stages/matmul/stage.py", line 9 in run\n'
    )
    tail = log_tail(log)
    assert "put back" not in tail and "warm, stage" not in tail
    assert "measuring matmul fp32 4096" in tail and "stages/matmul/stage.py" in tail


def test_after_wait_quiet_gave_up_the_advice_is_not_to_wait_again() -> None:
    assert "--wait-quiet SECONDS" in busy_next_step(None)
    gave_up = busy_next_step(120.0)
    assert "run with --wait-quiet" not in gave_up and "120 s" in gave_up


def test_show_and_history_say_when_a_run_started_and_how_long_it_took(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["probe"], "cpu", "quick", sys.executable, [])
    store.record(run_id, Verdict("probe", "build", Status.PASS, "fine"))
    store.end_run(run_id, "complete", 0)
    store._write("UPDATE runs SET started = 1764770400.0, finished = 1764770708.0 WHERE id = ?", (run_id,))
    assert main(["--store", str(tmp_path / "s.db"), "show", str(run_id)]) == 0
    shown = capsys.readouterr().out.splitlines()[0]
    assert "(exit code 0), started 2025-12-03" in shown and "took 5m 08s" in shown
    assert main(["--store", str(tmp_path / "s.db"), "history"]) == 0
    history = capsys.readouterr().out
    assert " took " in history and " 5m08s " in history


def test_follow_expects_what_run_expected_from_the_store(tmp_path: Path) -> None:
    from rigcheck.tui.cli_follow import _clock

    store = Store(tmp_path / "s.db")
    earlier = store.begin_run(["probe", "verify"], "cpu", "quick", "python", [])
    for stage, start, end in (("probe", 1000.0, 1004.0), ("verify", 1004.0, 1104.0)):
        store.record(earlier, StageStarted(stage, "cpu", 1, "python", t=start))
        store.record(earlier, StageFinished(stage, Status.PASS, 0, t=end))
    store.end_run(earlier, "complete", 0)
    followed = store.begin_run(["probe", "verify"], "cpu", "quick", "python", [])
    store.record_strict(followed, 1)
    clock, strict = _clock(store, followed)
    assert clock.stages == ("probe", "verify") and clock.run_expected() == 104.0 and strict


def test_check_verbose_help_says_what_else_it_prints_in_whole_words() -> None:
    """`check --help` said "not only the WARN, FAIL and unread": unread what? It prints the checks that could not
    read their figure (could_not_check) as well."""
    parser = build_parser()
    check = next(
        action.choices["check"] for action in parser._actions if isinstance(getattr(action, "choices", None), dict)
    )
    verbose = next(a for a in check._actions if "--verbose" in a.option_strings)
    assert verbose.help == "every verdict, not only the WARN, FAIL and the checks that could not be read"
