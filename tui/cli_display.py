"""The headless run's tables in rich: the summary, `show`, `compare` and `history` (the live part is cli_live)."""

from __future__ import annotations

import json
import time
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text
from rigcheck.engine.report.compare import Row
from rigcheck.engine.report.fleet_view import KEY_RULE, fleet_cells, fleet_label, grid_devices
from rigcheck.engine.report.rows import (
    UNSTABLE_SHORT,
    has_hosts,
    is_unstable,
    meaning,
    measurement_row,
    number_text,
    report_rows,
    signed_spread,
    trust_of,
    trust_reasons,
    unverified,
)
from rigcheck.engine.report.run_time import took
from rigcheck.tui.cli_live import STATUS_STYLE, LiveDisplay, status_text

__all__ = ["LiveDisplay", "status_text"]  # the live display moved to cli_live; callers still find it here
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


def fitted_console(stderr: bool = False) -> Console:
    """Fitted to a terminal; to a file or pipe, never hard-wrapped (rich would cut every line at 80)."""
    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=WIDE, no_color=True)
    return console


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


def trust_cell(row: dict[str, Any], notes: dict[str, int] | None = None) -> Text:
    """`SUSPECT (why)`; with `notes`, `SUSPECT [1]`, the reasons numbered in `notes` (the same reasons, one number)."""
    trust = trust_of(row)
    label = status_text(trust) if trust in STATUS_STYLE else Text(trust)
    if unverified(row):
        label += ", unverified"
    said = trust_reasons(row) + ([UNSTABLE_SHORT] if is_unstable(row.get("value"), row.get("spread")) else [])
    reasons = "; ".join(said)
    if reasons and notes is not None:
        return label + f" [{notes.setdefault(reasons, len(notes) + 1)}]"
    return label + (f" ({reasons})" if reasons else "")


def measurements_table(report: dict[str, Any], width: int = WIDE) -> Table | None:
    """Every figure with its trust; where a figure's reasons would not fit beside it on one line of `width`, they
    are numbered notes under the table, each said once (in the cell they wrapped one figure into some 18 lines at 80
    columns)."""
    if not report["measurements"]:
        return None
    hosts = has_hosts(report)
    rows = []
    for m in map(measurement_row, report["measurements"]):
        spread = signed_spread(m["value"], m["spread"])
        value = number_text(m["value"], ".4g")
        rows.append((m, (*(m["host"],) * hosts, m["stage"], m["name"], m["device"], value, m["unit"], spread)))
    headers = ("host",) * hosts + ("stage", "name", "device", "value", "unit", "spread")
    beside = sum(max(len(str(h)), *(len(str(c[i])) for _, c in rows)) + 3 for i, h in enumerate(headers)) + 4
    notes: dict[str, int] | None = {} if beside + max(trust_cell(m).cell_len for m, _ in rows) > width else None
    table = Table(title="measurements", caption_justify="left")
    for column in headers:
        table.add_column(column, overflow="fold")
    table.add_column("trust", overflow="fold")
    for m, cells in rows:
        table.add_row(*cells, trust_cell(m, notes))
    if notes:
        table.caption = Text("\n".join(f"[{number}] {reasons}" for reasons, number in notes.items()))
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
    """Past runs, each with its worst verdict and how long it took. The date never wraps, nor does a stage's name;
    below 100 columns the exit code and the fingerprint (both in `rigcheck show N`) make room for them, and the
    profile goes under the device."""
    import datetime as dt

    from rich import box

    worst = worst or {}
    wide = width >= 100
    now = time.time()
    table = Table(title="rigcheck runs", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for column in ("run", "started", "took", "status", "worst", *(("exit",) if wide else ())):
        table.add_column(column, no_wrap=True)
    # a fleet's "fleet (16 hosts, 1 lost)" wraps rather than crowd
    table.add_column("device" if wide else "device\nprofile", overflow="fold", min_width=len("standard"))
    if wide:
        table.add_column("profile", no_wrap=True)
    table.add_column("stages", overflow="fold", min_width=len("bandwidth,"))  # the longest stage's name whole
    if wide:
        table.add_column("fingerprint", no_wrap=True)
    for run in runs:
        started = dt.datetime.fromtimestamp(run["started"]).strftime("%Y-%m-%d %H:%M")
        exit_code = "" if run["exit_code"] is None else str(run["exit_code"])
        table.add_row(
            str(run["id"]),
            started,
            took(run, now if run["status"] == "LIVE" else None, compact=True),
            styled(run["status"].upper() if run["status"] == "interrupted" else run["status"]),
            styled(worst[run["id"]]) if run["id"] in worst else "-",
            *((exit_code,) if wide else ()),
            *(
                (fleet_label(run), run["profile"] or "")
                if wide
                else (f"{fleet_label(run).replace(',', ', ')}\n{run['profile'] or ''}",)
            ),
            ", ".join(json.loads(run["stages"] or "[]")),
            *((run["fingerprint"] or "",) if wide else ()),
        )
    return table
