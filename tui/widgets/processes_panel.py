"""The Processes panel: who else is using each GPU and the host's CPUs now, and who was running during
the figure selected in Results. rigcheck's own processes are left out: this is about contention."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from rigcheck.engine.telemetry.others import MIN_CPUS
from rigcheck.engine.telemetry.sample import GpuSample, ProcessUse, Sample
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

NAME_WIDTH = 20


def _gib(value: int | None) -> str:
    return "N/A" if value is None else f"{value / 2**30:.1f} GiB"


def _during_line(figure: dict[str, Any]) -> tuple[str, set[int]]:
    """What the selected figure's conditions say was running beside it, and those pids."""
    title = f"during {figure.get('name', '?')} on {figure.get('device') or '?'}: "
    others = (figure.get("conditions") or {}).get("other_processes")
    if others is None:
        return title + "no process list stored with this figure", set()
    if not others:
        return title + "no other process recorded", set()
    words = []
    for other in others[:5]:
        use = [f"pid {other.get('pid')}"]
        if other.get("cpus") is not None:
            use.append(f"{other['cpus']:.2f} CPUs")
        if other.get("gpu_memory") is not None:
            use.append(_gib(other["gpu_memory"]))
        words.append(f"{other.get('name', '?')} ({', '.join(use)})")
    return title + "; ".join(words), {int(o["pid"]) for o in others if o.get("pid") is not None}


def _row(mark: bool, use: ProcessUse, columns: str) -> str:
    return f"{'*' if mark else ' '} {use.pid:>7}  {use.name[:NAME_WIDTH]:<{NAME_WIDTH}}  {columns}"


def _gpu_block(gpu: GpuSample, own: set[int], marked: set[int]) -> list[tuple[str, bool]]:
    where = f" {gpu.pci_bus_id}" if gpu.pci_bus_id else ""
    head = f"GPU {gpu.index} {gpu.name}{where}"
    others = [p for p in gpu.processes if p.pid not in own]
    if not others:
        mine = len(gpu.processes) - len(others)
        return [(f"{head}: no other process" + (f" (rigcheck's own: {mine})" if mine else ""), False)]
    lines = [(head, False), (f"  {'pid':>7}  {'name':<{NAME_WIDTH}}  {'GPU mem':>9}  SM", False)]
    for use in sorted(others, key=lambda p: -(p.gpu_memory or 0)):
        sm = "N/A" if use.sm_pct is None else f"{use.sm_pct:.0f}%"
        lines.append((_row(use.pid in marked, use, f"{_gib(use.gpu_memory):>9}  {sm}"), use.pid in marked))
    return lines


def processes_lines(sample: Sample | None, figure: dict[str, Any] | None = None) -> list[tuple[str, bool]]:
    """The panel's lines, each with whether it names a process that ran during the selected figure."""
    if sample is None:
        return [("waiting for telemetry", False)]
    lines: list[tuple[str, bool]] = []
    marked: set[int] = set()
    if figure is not None:
        during, marked = _during_line(figure)
        lines.append((during, bool(marked)))
    own = set(sample.host.own_pids)
    if not sample.gpus:
        lines.append(("GPUs: no GPU telemetry on this host", False))
    for gpu in sample.gpus:
        lines.extend(_gpu_block(gpu, own, marked))
    host = sample.host
    top = [p for p in host.top_others if p.pid not in own]
    if not top:
        lines.append((f"host: no other process used {MIN_CPUS:.2f} CPUs or more (of {host.cpus})", False))
        return lines
    lines.append((f"host: busiest other processes, of {host.cpus} CPUs", False))
    lines.append((f"  {'pid':>7}  {'name':<{NAME_WIDTH}}  CPUs", False))
    lines.extend((_row(p.pid in marked, p, f"{p.cpus or 0:.2f}"), p.pid in marked) for p in top)
    return lines


class ProcessesPanel(VerticalScroll):
    """Fed by the app: `show` with each redraw's latest sample, `select` with the highlighted figure."""

    def compose(self) -> ComposeResult:
        yield Static(id="processes-text")

    def on_mount(self) -> None:
        self._sample: Sample | None = None
        self._figure: dict[str, Any] | None = None
        self._shown: list[tuple[str, bool]] | None = None

    def show(self, sample: Sample | None) -> None:
        self._sample = sample
        self._draw()

    def select(self, figure: dict[str, Any] | None) -> None:
        """A Results row: a measurement's conditions name what ran beside it; a verdict clears it."""
        self._figure = figure if figure is not None and figure.get("kind") == "measurement" else None
        self._draw()

    @property
    def plain(self) -> str:
        return "\n".join(line for line, _ in self._shown or [])

    def on_show(self) -> None:
        self._draw()  # what came while its tab was hidden

    def _draw(self) -> None:
        if not self.is_on_screen:
            return  # a hidden tab's text is not laid out: on_show draws it
        lines = processes_lines(self._sample, self._figure)
        if lines == self._shown:
            return  # an unchanged list is not laid out again 4 times a second
        self._shown = lines
        colour = self.app.get_css_variables().get("verdict-warn", "")
        text = Text()
        for index, (line, marked) in enumerate(lines):
            text.append(line, style=f"bold {colour}" if marked else "")
            if index < len(lines) - 1:
                text.append("\n")
        self.query_one("#processes-text", Static).update(text)
