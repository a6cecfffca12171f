"""`--wait-quiet` names what it waits for while it waits (on stderr, through the live display), and the
stage's quiet-check verdict records that it waited and whether it gave up."""

from __future__ import annotations

import io
import sys
import time
from dataclasses import replace
from pathlib import Path

from fakes import FakeSampler
from rich.console import Console
from rigcheck.engine.events import LogLine
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import RunPlan
from rigcheck.engine.run.session import RunSession
from rigcheck.engine.store import Store
from rigcheck.engine.telemetry.sample import HostSample, ProcessUse, Sample
from rigcheck.engine.trust.quiet import WAIT
from rigcheck.tui.cli_display import LiveDisplay
from stage_infos import fake


class LiveHost(FakeSampler):
    """Samples every 0.1 s up to now, with a fixed load by one named other process."""

    def __init__(self, others: float) -> None:
        super().__init__([])
        self.others = others

    def window(self, t0: float, t1: float) -> list[Sample]:
        top = (ProcessUse(4242, "burner", cpus=self.others),) if self.others else ()
        host = HostSample(cpus=8, load1=1.0, busy_cpus=self.others, own_cpus=0.0, top_others=top)
        now = time.time()
        return [Sample(t, host) for t in (now - i * 0.1 for i in range(100)) if t0 <= t <= t1]


def run_waiting(tmp_path: Path, sampler: LiveHost, wait_s: float) -> tuple[list[object], dict]:
    store = Store(tmp_path / "s.db")
    info = replace(fake("timed"), throughput=True)
    run_id = store.begin_run([info.name], "cpu", "quick", sys.executable, [])
    seen: list[object] = []
    plan = RunPlan(run_id, RunRequest((info,)), tmp_path / "logs")
    session = RunSession(store, plan, [seen.append], sampler=sampler, wait_quiet_s=wait_s)
    session.start()
    assert session.wait(120)
    report = store.report(run_id)
    assert report is not None
    return seen, report


def test_a_busy_host_is_named_while_waiting_and_the_verdict_says_it_gave_up(tmp_path: Path) -> None:
    seen, report = run_waiting(tmp_path, LiveHost(7.5), wait_s=3.0)
    said = [e.text for e in seen if isinstance(e, LogLine) and e.level == WAIT]
    assert said[0] == "waiting up to 3 s for a quiet host before timed"
    assert any("burner (pid 4242, 7.5 CPUs)" in line for line in said[1:-1]), said
    assert said[-1].startswith("waited ") and "gave up, still busy" in said[-1]
    (check,) = [v for v in report["verdicts"] if v["check_name"] == "quiet-check"]
    assert check["status"] == "WARN" and check["explanation"].startswith("waited 3 s for a quiet host (--wait-quiet 3)")
    assert "and gave up; host busy before the stage: other processes keep 7.5 of 8 CPUs busy" in check["explanation"]
    assert check["numbers"]["gave_up"] is True and check["numbers"]["waited_s"] >= 3.0
    assert "run with --wait-quiet" not in check["explanation"]  # waiting again the same way would only repeat it
    assert "stayed busy for all 3 s of --wait-quiet" in check["explanation"]


def test_a_quiet_host_is_recorded_as_waited_for_and_found_quiet(tmp_path: Path) -> None:
    seen, report = run_waiting(tmp_path, LiveHost(0.0), wait_s=30.0)
    said = [e.text for e in seen if isinstance(e, LogLine) and e.level == WAIT]
    assert said[-1].startswith("waited ") and said[-1].endswith("for a quiet host: quiet")
    (check,) = [v for v in report["verdicts"] if v["check_name"] == "quiet-check"]
    assert check["status"] == "PASS" and check["numbers"]["gave_up"] is False
    assert check["explanation"].endswith("(--wait-quiet 30): the host was quiet")


def test_the_live_display_prints_what_the_wait_says_and_not_other_log_lines() -> None:
    out = io.StringIO()
    display = LiveDisplay(Console(file=out, width=120, force_terminal=False))
    display(LogLine("matmul", "still waiting (5 s): other processes keep 2.0 of 2 CPUs busy: burner (pid 7)", WAIT))
    display(LogLine("matmul", "an ordinary log line"))
    assert "matmul: still waiting (5 s): other processes keep 2.0 of 2 CPUs busy: burner (pid 7)" in out.getvalue()
    assert "ordinary" not in out.getvalue()
