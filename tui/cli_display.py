"""The headless run's live display on stderr (rich): a progress line per stage, each verdict as it lands."""

from __future__ import annotations

import json
import threading
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rigcheck.engine.events import (
    Event,
    LogLine,
    Measurement,
    StageFinished,
    StageStarted,
    Verdict,
)
from rigcheck.engine.events import (
    Progress as ProgressEvent,
)

STATUS_STYLE = {
    "TRUSTED": "green",
    "SUSPECT": "yellow",
    "PASS": "green",
    "WARN": "yellow",
    "SKIP": "dim",
    "FAIL": "bold red",
    "TIMEOUT": "bold magenta",
    "CRASH": "bold magenta",
    "INTERRUPTED": "magenta",
    "running": "cyan",
}


def styled(status: str) -> str:
    return f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"


class LiveDisplay:
    """A listener for Run: called from the supervisor thread, so it only touches rich's locked objects."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("{task.fields[stage]:>10}"),
            BarColumn(bar_width=24),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._tasks: dict[str, TaskID] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> LiveDisplay:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._handle(event)

    def _handle(self, event: Event) -> None:
        out = self.progress.console
        if isinstance(event, StageStarted):
            self._tasks[event.stage] = self.progress.add_task("starting", stage=event.stage, total=None)
            out.print(f"[cyan]>[/] {event.stage} on {event.device} (pid {event.pid})")
        elif isinstance(event, ProgressEvent) and event.stage in self._tasks:
            self.progress.update(
                self._tasks[event.stage],
                completed=event.done,
                total=event.total,
                description=event.what,
            )
        elif isinstance(event, Verdict):
            first = event.explanation.splitlines()[0] if event.explanation else ""
            out.print(f"  {styled(event.status.value)} {event.stage}/{event.check}: {first}")
        elif isinstance(event, Measurement):
            spread = f" ±{event.spread:.3g}" if event.spread is not None else ""
            out.print(f"  [blue]{event.name}[/] {event.value:.4g}{spread} {event.unit}")
        elif isinstance(event, LogLine) and event.level == "error":
            out.print(f"[red]{event.text}[/]", markup=False, highlight=False)
        elif isinstance(event, StageFinished):
            task = self._tasks.pop(event.stage, None)
            if task is not None:
                self.progress.remove_task(task)
            out.print(f"[cyan]<[/] {event.stage}: {styled(event.status.value)}")


def summary_table(report: dict[str, Any]) -> Table:
    table = Table(title=f"rigcheck run {report['run']['id']}", expand=False)
    for column in ("stage", "check", "device", "status", "meaning"):
        table.add_column(column, overflow="fold")
    for verdict in report["verdicts"]:
        meaning = (verdict["explanation"] or "").splitlines()
        table.add_row(
            verdict["stage"],
            verdict["check_name"],
            verdict["device"] or "",
            styled(verdict["status"]),
            meaning[0] if meaning else "",
        )
    return table


def trust_cell(conditions: dict[str, Any] | None) -> str:
    conditions = conditions or {}
    trust = conditions.get("trust", "no telemetry")
    label = styled(trust) if trust in STATUS_STYLE else trust
    if conditions.get("verified") is False:
        label += ", unverified"
    reasons = "; ".join(conditions.get("trust_reasons") or [])
    return label + (f" ({reasons})" if reasons else "")


def measurements_table(report: dict[str, Any]) -> Table | None:
    if not report["measurements"]:
        return None
    table = Table(title="measurements")
    for column in ("stage", "name", "device", "value", "unit", "spread", "trust"):
        table.add_column(column, overflow="fold")
    for m in report["measurements"]:
        spread = "" if m["spread"] is None else f"{m['spread']:.3g}"
        table.add_row(
            m["stage"], m["name"], m["device"], f"{m['value']:.4g}", m["unit"], spread, trust_cell(m["conditions"])
        )
    return table


def contention_table(report: dict[str, Any]) -> Table | None:
    bands = [row for row in report["contention"]["clock_by_host_load"] if row["samples"]]
    if not bands:
        return None
    table = Table(title="GPU clock by host load (other processes), while the GPU was busy")
    for column in ("others' share of CPUs", "samples", "mean SM MHz", "lowest SM MHz"):
        table.add_column(column)
    for row in bands:
        table.add_row(
            row["others_share"], str(row["samples"]), str(row["sm_clock_mean_mhz"]), str(row["sm_clock_min_mhz"])
        )
    return table


def history_table(runs: list[dict[str, Any]], worst: dict[int, str] | None = None, width: int = 120) -> Table:
    """Past runs, each with its worst verdict. The date never wraps; below 100 columns the fingerprint
    (in `rigcheck show N`) makes room for it."""
    import datetime as dt

    from rich import box

    worst = worst or {}
    wide = width >= 100
    table = Table(title="rigcheck runs", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for column in ("run", "started", "status", "worst", "exit", "device", "profile"):
        table.add_column(column, no_wrap=True)
    table.add_column("stages", overflow="fold", min_width=10)
    if wide:
        table.add_column("fingerprint", no_wrap=True)
    for run in runs:
        started = dt.datetime.fromtimestamp(run["started"]).strftime("%Y-%m-%d %H:%M")
        exit_code = "" if run["exit_code"] is None else str(run["exit_code"])
        table.add_row(
            str(run["id"]),
            started,
            styled(run["status"].upper() if run["status"] == "interrupted" else run["status"]),
            styled(worst[run["id"]]) if run["id"] in worst else "-",
            exit_code,
            run["device"] or "",
            run["profile"] or "",
            ", ".join(json.loads(run["stages"] or "[]")),
            *((run["fingerprint"] or "",) if wide else ()),
        )
    return table
