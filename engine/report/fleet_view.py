"""A fleet run seen host by host and GPU by GPU: the grid's cells, for the app and the CLI alike.

Each cell is one host's device: the worst verdict on that device, its key figure (the best bf16
matmul on a GPU, the best fp32 matmul on the CPU, else the device's first figure) and that figure's
trust. A verdict that names no device of the host's grid (device '' or the CPU of a GPU host: a
host-level finding such as the sgemm race or a slow host) is the host's own: it goes to the host's
status, not into every cell, so a cell's colour says what is wrong with that GPU and nothing else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Trust, worst_by
from rigcheck.engine.registry import FLEET_HOSTS_STAGE as HOSTS_STAGE
from rigcheck.engine.registry import FLEET_LINKS_STAGE as LINKS_STAGE
from rigcheck.engine.report.rows import Row, meaning, number_text, report_rows, trust_of

KEY_DTYPE = {"gpu": "bf16", "cpu": "fp32"}
KEY_RULE = "best bf16 matmul on a GPU (TFLOP/s), best fp32 matmul on the CPU (GFLOP/s), else the first figure"
# A host's state as front ends should colour it, by the row model's status classes.
STATE_CLASS = {"lost": "crash", "joined": "running", "running": "running"}
_GPU = re.compile(r"^cuda:(\d+)$")


def gpu_index(device: str) -> int | None:
    """N of a torch device named `cuda:N`; None for anything else."""
    match = _GPU.match(device)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Cell:
    """One device of one host."""

    device: str
    verdict: Row | None  # the worst verdict on this device (the first of equals); None: no verdict names it
    figure: Row | None  # the key figure; None: no figure on this device
    keyed: bool  # the figure follows the key rule (else it is the device's first figure)

    @property
    def status(self) -> str | None:
        return self.verdict["status"] if self.verdict is not None else None

    @property
    def trust(self) -> str:
        return trust_of(self.figure) if self.figure is not None else ""

    def value_text(self) -> str:
        """The figure's value; its unit too when it is not the key figure the rule promises."""
        if self.figure is None:
            return ""
        value = number_text(self.figure["value"])
        return value if self.keyed else f"{value} {self.figure['unit']}".strip()


@dataclass(frozen=True)
class HostLine:
    """One host of the fleet, in rank order, with a cell per device."""

    host: str
    state: str  # joined, running, done, lost; '' where the fleet does not say
    verdict: Row | None  # the worst host-level verdict (see the module's docstring)
    worst: str | None  # the worst verdict of the host, cells included
    cells: tuple[Cell, ...]

    @property
    def status(self) -> str | None:
        return self.verdict["status"] if self.verdict is not None else None

    @property
    def lost(self) -> bool:
        return self.state == "lost"


def device_order(device: str) -> tuple[int, int, str]:
    """GPUs by index, then anything else by name."""
    index = gpu_index(device)
    return (0, index, "") if index is not None else (1, 0, device)


def worst_verdict(verdicts: list[Row]) -> Row | None:
    """The most severe verdict (the first of equals); None when there is none it can rank."""
    return worst_by(verdicts, lambda v: v["status"])


def _dtype(row: Row) -> str:
    params = row.get("params") or {}
    if params.get("dtype"):
        return "" if params.get("library", "torch") != "torch" else str(params["dtype"])
    words = str(row["name"]).split()
    return words[1] if len(words) > 2 and words[0] == "matmul" and "(" not in row["name"] else ""


FLEET_STAGES = (HOSTS_STAGE, LINKS_STAGE)


def key_figure(figures: list[Row], device: str) -> tuple[Row | None, bool]:
    """The figure a cell shows, and whether it follows the key rule (KEY_RULE)."""
    dtype = KEY_DTYPE["cpu" if device == "cpu" else "gpu"]
    candidates = [
        f
        for f in figures
        if f["stage"] == "matmul" and _dtype(f) == dtype and Trust.of(trust_of(f)) is not Trust.BROKEN
    ]
    if candidates:
        return max(candidates, key=lambda f: f["value"]), True
    own = [f for f in figures if f["stage"] not in FLEET_STAGES]  # the inter-host figures are the fleet's, not a cell's
    return (own[0], False) if own else (None, False)


def _grid_devices(rows: list[Row], facts: dict[str, Any]) -> list[str]:
    """The host's GPUs (from its probe facts and its rows), or the CPU on a host without any."""
    gpus = {f"cuda:{d['index']}" for d in (facts.get("probe") or {}).get("devices") or [] if "index" in d}
    gpus |= {row["device"] for row in rows if gpu_index(row.get("device") or "") is not None}
    return sorted(gpus, key=device_order) or ["cpu"]


def host_line(host: str, state: str, rows: list[Row], facts: dict[str, Any]) -> HostLine:
    devices = _grid_devices(rows, facts)
    verdicts = [r for r in rows if r["kind"] == "verdict"]
    cells = []
    for device in devices:
        figures = [r for r in rows if r["kind"] == "measurement" and r.get("device") == device]
        figure, keyed = key_figure(figures, device)
        cells.append(Cell(device, worst_verdict([v for v in verdicts if v.get("device") == device]), figure, keyed))
    own = worst_verdict([v for v in verdicts if v.get("device") not in devices])
    every = worst_verdict(verdicts)
    return HostLine(host, state, own, every["status"] if every else None, tuple(cells))


def fleet_hosts(report: dict[str, Any]) -> list[str]:
    """The fleet's hosts in rank order, then any host the rows name that the fleet does not."""
    listed = list((report.get("fleet") or {}).get("hosts") or [])
    seen = {r["host"] for r in report_rows(report) if r.get("host")} - set(listed)
    return listed + sorted(seen)


def fleet_cells(report: dict[str, Any]) -> list[HostLine]:
    """Every host of a fleet run with a cell per device; [] for a run that is not a fleet's."""
    rows = report_rows(report, by_time=True)
    states = (report.get("fleet") or {}).get("states") or {}
    host_facts = report.get("host_facts") or {}
    by_host: dict[str, list[Row]] = {}
    for row in rows:
        by_host.setdefault(row.get("host") or "", []).append(row)
    return [
        host_line(host, str(states.get(host, "")), by_host.get(host, []), host_facts.get(host, {}))
        for host in fleet_hosts(report)
    ]


def grid_devices(lines: list[HostLine]) -> list[str]:
    """Every device column of the grid: the union of the hosts' devices (a host may have fewer)."""
    return sorted({cell.device for line in lines for cell in line.cells}, key=device_order)


def host_rows(report: dict[str, Any], host: str) -> list[Row]:
    """One host's verdicts and figures, in the order they arrived."""
    return [row for row in report_rows(report, by_time=True) if row.get("host") == host]


def host_labelled(rows: list[Row]) -> list[Row]:
    """Rows of many hosts for a table without a host column: the host joins the device ('b cuda:3')."""
    return [
        row | {"device": " ".join(p for p in (row["host"], row.get("device") or "") if p)} if row.get("host") else row
        for row in rows
    ]


def fleet_label(run: dict[str, Any]) -> str:
    """A run's device as a list of runs shows it: 'fleet (16 hosts, 1 lost)' for a fleet run."""
    fleet = run.get("fleet")
    if isinstance(fleet, str):
        try:
            fleet = json.loads(fleet)
        except ValueError:
            fleet = None
    if not isinstance(fleet, dict):
        return str(run.get("device") or "")
    hosts = fleet.get("hosts") or []
    lost = sum(1 for state in (fleet.get("states") or {}).values() if state == "lost")
    return f"fleet ({len(hosts)} host{'s' if len(hosts) != 1 else ''}" + (f", {lost} lost)" if lost else ")")


def describe(line: HostLine, cell: Cell | None) -> str:
    """A host, or one of its cells, in words: the worst verdict with its sentence and the key figure."""
    where = f"{line.host} ({line.state})" if line.state else line.host
    if cell is None:
        verdict = line.verdict
        said = f"{verdict['status']} {verdict['stage']}/{verdict['name']}: {meaning(verdict)}" if verdict else ""
        return f"{where}: {said or 'no host-level verdict'}; worst of the host: {line.worst or 'no verdict'}"
    parts = []
    if cell.verdict is not None:
        parts.append(f"{cell.status} {cell.verdict['stage']}/{cell.verdict['name']}: {meaning(cell.verdict)}")
    if cell.figure is not None:
        figure = cell.figure
        kind = "key figure" if cell.keyed else "first figure"
        parts.append(f"{kind} {figure['name']} {number_text(figure['value'])} {figure['unit']}, {cell.trust}".strip())
    return f"{where} {cell.device}: {'; '.join(parts) or 'nothing reported'}"
