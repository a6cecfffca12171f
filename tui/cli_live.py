"""`run`'s and `follow`'s live display on stderr: a line as each stage starts and ends (its worst verdict first,
its time against the expected), a transient progress bar, and on a pipe a line every so often that time passes."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.text import Text
from rigcheck.engine.events import Event, LogLine, Measurement, StageFinished, StageStarted, Verdict, worst
from rigcheck.engine.events import Progress as ProgressEvent
from rigcheck.engine.report.failures import fails_the_run
from rigcheck.engine.report.rows import STATUS_CLASS
from rigcheck.engine.trust.quiet import WAIT
from rigcheck.tui.cli_clock import NO_ESTIMATE, RunClock, duration

CLASS_STYLE = {
    "pass": "green",
    "warn": "yellow",
    "skip": "dim",
    "fail": "bold red",
    "inconclusive": "bold blue",  # could not be judged: neither a pass's green nor a fail's red
    "crash": "bold magenta",
    "running": "cyan",
}
STATUS_STYLE = {status: CLASS_STYLE[kind] for status, kind in STATUS_CLASS.items()}
HEARTBEAT_S = 30.0  # on a pipe or file, how often a running stage says how long it has run


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, "white"))


def headline(stage_status: str, counts: Counter[str], strict: bool) -> tuple[str, str]:
    """(the worst of the stage's status and its verdicts, and what of them fails the run or ''), for the line a
    stage ends with: `WARN (1 PASS, 1 WARN)`, never `PASS (1 PASS, 1 WARN)`."""
    shown = worst([stage_status, *counts])
    word = shown.value if shown is not None else stage_status
    failing = {status: n for status, n in counts.items() if fails_the_run(status, strict)}
    if not failing:
        return word, ""
    tally = " and ".join(f"{n} {status}" for status, n in sorted(failing.items()))
    verb = "fails" if sum(failing.values()) == 1 else "fail"
    return word, f"{'with --strict, ' if strict and 'WARN' in failing else ''}{tally} {verb} the run"


class LiveDisplay:
    """A listener for Run, drawing on stderr. The verdicts themselves are printed once, in the summary.
    Called from the supervisor thread, so it only touches rich's locked objects; the heartbeat thread
    takes the same lock."""

    def __init__(
        self,
        console: Console,
        clock: RunClock | None = None,
        strict: bool = False,
        heartbeat_s: float = HEARTBEAT_S,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.console = console
        self.clock = clock or RunClock()
        self.strict = strict
        self.heartbeat_s = heartbeat_s
        self.now = now
        self.progress = Progress(
            TextColumn("{task.fields[stage]:>10}", markup=False),
            BarColumn(bar_width=24),
            TextColumn("{task.description}", markup=False),
            TimeElapsedColumn(),
            TextColumn("{task.fields[expect]}", markup=False),
            TextColumn("{task.fields[last]}", markup=False),
            console=console,
            transient=True,
        )
        self._tasks: dict[str, TaskID] = {}
        self._run_task: TaskID | None = None
        self._started: dict[str, float] = {}
        self._progress: dict[str, str] = {}
        self._counts: dict[str, Counter[str]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def __enter__(self) -> LiveDisplay:
        self.progress.start()
        if self.clock.stages:
            self.console.print(Text(self.clock.plan_words(), style="dim"))
        if not self.console.is_terminal and self.heartbeat_s > 0:  # a terminal's bar shows time passing itself
            threading.Thread(target=self._beat, name="rigcheck-heartbeat", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.progress.stop()

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._handle(event)

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            self.tick()

    def tick(self) -> None:
        """One line for each running stage: how far, how long so far against the expected, and the run's time."""
        with self._lock:
            now = self.now()
            for stage, since in self._started.items():
                where = self._progress.get(stage, "running")
                expected = self.clock.stage_expected(stage)
                expected = expected if expected == NO_ESTIMATE else f"expected {expected}"
                so_far = f"{duration(now - since)} so far ({expected})"
                self.console.print(f"  {stage}: {where}; {so_far}; {self.clock.run_words(now)}", markup=False)

    def _last(self, stage: str, text: str) -> None:
        if stage in self._tasks:
            self.progress.update(self._tasks[stage], last=text[:60])

    def _run_line(self) -> None:
        total = self.clock.run_expected()
        expect = f"of ~{duration(total)}" if total is not None else "no estimate"
        done = f"{len(self.clock.finished)}/{len(self.clock.stages)} stages" if self.clock.stages else ""
        if self._run_task is None:
            self._run_task = self.progress.add_task(done, stage="run", total=None, expect=expect, last="")
        else:
            self.progress.update(self._run_task, description=done)

    def _handle(self, event: Event) -> None:
        out = self.progress.console
        if isinstance(event, StageStarted):
            self.clock.start(event.t)
            self._run_line()
            self._started.setdefault(event.stage, event.t)
            expect = self.clock.stage_expected(event.stage)
            self._tasks[event.stage] = self.progress.add_task(
                "starting", stage=event.stage, total=None, last="", expect=f"({expect})"
            )
            out.print(Text.assemble(("> ", "cyan"), f"{event.stage} on {event.device} (pid {event.pid}), {expect}"))
        elif isinstance(event, ProgressEvent) and event.stage in self._tasks:
            self.progress.update(
                self._tasks[event.stage],
                completed=event.done,
                total=event.total,
                description=event.what,
            )
            share = f"{event.done / event.total:.0%} " if event.total else ""
            self._progress[event.stage] = f"{share}{event.what}".strip()
        elif isinstance(event, Verdict):
            self._counts.setdefault(event.stage, Counter())[event.status.value] += 1
            self._last(event.stage, f"{event.status.value} {event.check}")
        elif isinstance(event, Measurement):
            self._last(event.stage, f"{event.name} {event.value:.4g} {event.unit}")
        elif isinstance(event, LogLine) and event.level == "error":
            out.print(Text(event.text, style="red"))
        elif isinstance(event, LogLine) and event.level == WAIT:  # --wait-quiet names what it waits for
            out.print(Text(f"  {event.stage}: {event.text}", style="yellow"))
        elif isinstance(event, StageFinished):
            self._finished(event)

    def _finished(self, event: StageFinished) -> None:
        task = self._tasks.pop(event.stage, None)
        if task is not None:
            self.progress.remove_task(task)
        counts = self._counts.pop(event.stage, Counter())
        started = self._started.pop(event.stage, None)
        self._progress.pop(event.stage, None)
        self.clock.finished.add(event.stage)
        self._run_line()
        word, failing = headline(event.status.value, counts, self.strict)
        tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        line = Text.assemble(("< ", "cyan"), f"{event.stage}: ", status_text(word))
        line += Text(f" ({tally})" if tally else "")
        if started is not None:
            line += Text(f" {self.clock.stage_words(event.stage, event.t - started)}; {self.clock.run_words(event.t)}")
        if failing:
            line += Text(f"; {failing}", style=STATUS_STYLE.get(word, ""))
        self.progress.console.print(line)
