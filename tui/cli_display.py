"""The headless run in rich: live progress on stderr, and the tables of the summary, `show` and `compare`."""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text
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
from rigcheck.engine.report.compare import Row
from rigcheck.engine.report.fleet_view import KEY_RULE, fleet_cells, fleet_label, grid_devices
from rigcheck.engine.report.rows import (
    STATUS_CLASS,
    has_hosts,
    meaning,
    measurement_row,
    report_rows,
    spread_text,
    trust_of,
    trust_reasons,
    unverified,
)
from rigcheck.engine.trust.quiet import WAIT

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
WIDE = 10_000  # columns for output that is not a terminal: long enough that rich never wraps a line


BIG_TABLE_ROWS = 2000  # past this, a table prints as plain aligned columns: rich's Table takes about 1 ms a row


def print_table(console: Console, table: Table) -> None:
    """A table as rich draws it, or past BIG_TABLE_ROWS (a fleet of 1,000 hosts) as aligned columns under its
    title and header, the cells' styles kept: `show` of 25,000 rows in seconds rather than a minute."""
    if table.row_count <= BIG_TABLE_ROWS:
        console.print(table)
        return
    cells = [[c if isinstance(c, Text) else Text(str(c)) for c in column._cells] for column in table.columns]
    headers = [Text(str(column.header), style="bold") for column in table.columns]
    widths = [max(h.cell_len, *(c.cell_len for c in column)) for h, column in zip(headers, cells, strict=True)]

    def line(row: list[Text]) -> Text:
        out = Text()
        for index, (cell, width) in enumerate(zip(row, widths, strict=True)):
            out.append_text(cell)
            if index < len(row) - 1:
                out.append(" " * (width - cell.cell_len + 2))
        return out

    if table.title:
        console.print(Text(str(table.title), style="italic"))
    console.print(line(headers), soft_wrap=True)
    for start in range(0, table.row_count, 500):
        rows = [line([column[r] for column in cells]) for r in range(start, min(start + 500, table.row_count))]
        console.print(Text("\n").join(rows), soft_wrap=True)


def styled(status: str) -> str:
    return f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, "white"))


def fitted_console(stderr: bool = False) -> Console:
    """Fitted to a terminal; to a file or pipe, never hard-wrapped (rich would cut every line at 80)."""
    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=WIDE, no_color=True)
    return console


class LiveDisplay:
    """A listener for Run, drawing on stderr: one line when a stage starts and one when it ends (with its
    verdicts counted), a transient progress bar showing the latest figure or verdict. The verdicts
    themselves are printed once, in the summary. Called from the supervisor thread, so it only
    touches rich's locked objects."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("{task.fields[stage]:>10}", markup=False),
            BarColumn(bar_width=24),
            TextColumn("{task.description}", markup=False),
            TimeElapsedColumn(),
            TextColumn("{task.fields[last]}", markup=False),
            console=console,
            transient=True,
        )
        self._tasks: dict[str, TaskID] = {}
        self._counts: dict[str, Counter[str]] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> LiveDisplay:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._handle(event)

    def _last(self, stage: str, text: str) -> None:
        if stage in self._tasks:
            self.progress.update(self._tasks[stage], last=text[:60])

    def _handle(self, event: Event) -> None:
        out = self.progress.console
        if isinstance(event, StageStarted):
            self._tasks[event.stage] = self.progress.add_task("starting", stage=event.stage, total=None, last="")
            out.print(Text.assemble(("> ", "cyan"), f"{event.stage} on {event.device} (pid {event.pid})"))
        elif isinstance(event, ProgressEvent) and event.stage in self._tasks:
            self.progress.update(
                self._tasks[event.stage],
                completed=event.done,
                total=event.total,
                description=event.what,
            )
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
            task = self._tasks.pop(event.stage, None)
            if task is not None:
                self.progress.remove_task(task)
            counts = self._counts.pop(event.stage, Counter())
            tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
            line = Text.assemble(("< ", "cyan"), f"{event.stage}: ", status_text(event.status.value))
            out.print(line + Text(f" ({tally})" if tally else ""))


def summary_table(report: dict[str, Any]) -> Table:
    table = Table(title=f"rigcheck run {report['run']['id']}", expand=False)
    hosts = has_hosts(report)
    for column in ("host",) * hosts + ("stage", "check", "device", "status", "meaning"):
        table.add_column(column, overflow="fold")
    for row in report_rows(report):
        if row["kind"] != "verdict":
            continue
        table.add_row(
            *(row["host"],) * hosts,
            row["stage"],
            row["name"],
            row["device"],
            status_text(row["status"]),
            Text(meaning(row).removesuffix("; last log lines:")),
        )
    return table


def trust_cell(row: dict[str, Any]) -> Text:
    trust = trust_of(row)
    label = status_text(trust) if trust in STATUS_STYLE else Text(trust)
    if unverified(row):
        label += ", unverified"
    reasons = "; ".join(trust_reasons(row))
    return label + (f" ({reasons})" if reasons else "")


def measurements_table(report: dict[str, Any]) -> Table | None:
    if not report["measurements"]:
        return None
    table = Table(title="measurements")
    hosts = has_hosts(report)
    for column in ("host",) * hosts + ("stage", "name", "device", "value", "unit", "spread", "trust"):
        table.add_column(column, overflow="fold")
    for m in map(measurement_row, report["measurements"]):
        spread = spread_text(m["value"], m["spread"])
        spread = f"±{spread}" if spread else ""
        cells = (m["stage"], m["name"], m["device"], f"{m['value']:.4g}", m["unit"], spread)
        table.add_row(*(m["host"],) * hosts, *cells, trust_cell(m))
    return table


def fleet_table(report: dict[str, Any]) -> Table | None:
    """A fleet run's hosts x GPUs: each cell the worst verdict, the key figure and its trust."""
    lines = fleet_cells(report)
    if not lines:
        return None
    devices = grid_devices(lines)
    table = Table(title=f"hosts x devices: worst verdict, key figure ({KEY_RULE}), its trust")
    for column in ("host", "state", "host verdict", *devices):
        table.add_column(column, overflow="fold")
    for line in lines:
        cells = {cell.device: cell for cell in line.cells}
        shown = []
        for device in devices:
            cell = cells.get(device)
            words = [cell.status or "-", cell.value_text(), cell.trust] if cell else []
            text = Text(" ".join(w for w in words if w))
            if cell is not None and cell.status:
                text.stylize(STATUS_STYLE.get(cell.status, ""), 0, len(cell.status))
            shown.append(text)
        state = Text(line.state.upper() if line.lost else line.state, style="bold magenta" if line.lost else "")
        table.add_row(line.host, state, status_text(line.status) if line.status else Text("-"), *shown)
    return table


def compare_table(rows: list[Row], first: int, second: int) -> Table:
    table = Table(title=f"run {first} against run {second} (ratio = run {second} / run {first})")
    table.add_column("figure", overflow="fold")
    table.add_column("ratio", overflow="fold")  # beside the figure: visible however narrow the terminal
    for column in (f"run {first}", f"run {second}"):
        table.add_column(column, overflow="fold")
    for row in rows:
        sides = [Text(side.text(), style=STATUS_STYLE.get(side.trust, "")) if side else Text("") for side in row.sides]
        table.add_row(row.figure, Text(row.ratio_text()), *sides)
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
    for column in ("run", "started", "status", "worst", "exit"):
        table.add_column(column, no_wrap=True)
    table.add_column("device", overflow="fold")  # a fleet's "fleet (16 hosts, 1 lost)" wraps rather than crowd
    table.add_column("profile", no_wrap=True)
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
            fleet_label(run),
            run["profile"] or "",
            ", ".join(json.loads(run["stages"] or "[]")),
            *((run["fingerprint"] or "",) if wide else ()),
        )
    return table
