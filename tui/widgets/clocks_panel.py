"""The Clocks panel: the GPU's shader clock and temperature over the last minute, or, on a host without
GPU telemetry, the CPU's frequency, package temperature and package power; every trace labelled.

On a small terminal the plot gives way to one labelled line a trace, each ending in its latest value.
"""

from __future__ import annotations

import textwrap

from rigcheck.engine.telemetry.sample import HostSample, Sample, na
from rigcheck.engine.telemetry.sources import note_in_words
from rigcheck.tui.glyphs import UNICODE, Glyphs, level
from rigcheck.tui.widgets.live_text import LiveText
from rigcheck.tui.widgets.quick_plot import QuickPlot
from rigcheck.tui.widgets.traces import Trace, binned, gpu_traces, host_traces, pick_gpu
from textual.app import ComposeResult
from textual.containers import Vertical

WINDOW_S = 60.0
SMALL_HEIGHT = 9  # below this many rows a plot is unreadable: show one-line traces instead


def visible(values: list[float], top: float, rows: int) -> tuple[int, ...]:
    """The values as the plot can resolve them: two steps a row over the axis range."""
    grain = max(top, 1e-9) / (2 * rows)
    return tuple(round(v / grain) for v in values)


def spark_line(trace: Trace, width: int, glyphs: Glyphs, value_width: int = 0) -> str:
    """`label ▁▂▃ value`: the trace over the minute, one column a time bin, then its latest value."""
    value = trace.latest_text()
    value_width = max(value_width, len(value))
    room = max(4, width - 7 - value_width)
    spark = "".join(" " if v is None else level(v / trace.top, glyphs) for v in trace.values[-room:])
    return f"{trace.label:<5} {spark:<{room}} {value:>{value_width}}"


def host_line(host: HostSample) -> str:
    """The CPU's own readings in one line: frequency against its maximum, package heat and power,
    naming those this host does not report."""
    parts = [
        na(host.cpu_mhz) + (f"/{host.cpu_max_mhz:.0f}" if host.cpu_max_mhz else "") + " MHz",
        f"pkg {host.temperature_c:.0f} C" if host.temperature_c is not None else "",
        f"{host.package_power_w:.1f} W" if host.package_power_w is not None else "",
    ]
    missing = [name for name, value in (("temp", host.temperature_c), ("power", host.package_power_w)) if value is None]
    return "CPU " + "  ".join(p for p in parts if p) + (f" (no {', '.join(missing)})" if missing else "")


def every_gpu_lines(latest: Sample, chosen: int, width: int) -> list[str]:
    """Every GPU's clock (MHz) and temperature (C) at a glance, wrapped to the panel, the plotted one
    marked: `>0:1980/34 1:1975/36 2:1410/81`."""
    lines, line = [], ""
    for gpu in latest.gpus:
        mark = ">" if gpu.index == chosen else " "
        cell = f"{mark}{gpu.index}:{na(gpu.sm_clock_mhz)}/{na(gpu.temperature_c)}"
        if line and len(line) + len(cell) > width:
            lines.append(line)
            line = ""
        line += cell
    return [*lines, line] if line else lines


class ClocksPanel(Vertical):
    gpu_index = 0  # the GPU plotted; a key cycles it

    def cycle_gpu(self, indices: list[int]) -> int:
        if indices:
            position = indices.index(self.gpu_index) if self.gpu_index in indices else -1
            self.gpu_index = indices[(position + 1) % len(indices)]
            self._drawn = None
        return self.gpu_index

    def compose(self) -> ComposeResult:
        yield QuickPlot(id="clocks-plot")
        yield LiveText(id="clocks-spark")
        yield LiveText(id="clocks-host")
        yield LiveText(id="clocks-info")

    def on_mount(self) -> None:
        self.border_title = "Clocks"
        self._drawn: tuple[object, ...] | None = None

    def sparks(
        self, traces: list[Trace], missing: list[str], note: str, glyphs: Glyphs, extra: tuple[str, ...] = ()
    ) -> str:
        """One labelled line a trace for terminals too small for a plot; what could not be read and
        why there is no GPU telemetry follow where rows are left."""
        width = max(16, self.size.width)
        rows = max(1, self.size.height - 1)  # the info line takes one
        traces = traces[:rows]
        value_width = max((len(t.latest_text()) for t in traces), default=0)
        lines = [spark_line(t, width, glyphs, value_width) for t in traces]
        lines += extra[: max(0, rows - len(lines))]
        if missing and len(lines) < rows:
            lines.append("not readable: " + ", ".join(missing))
        if note and len(lines) < rows:
            wrapped = textwrap.wrap(note, width)  # wrapped, not cut: it says why there is no GPU
            kept = wrapped[: rows - len(lines)]
            if len(kept) < len(wrapped):
                kept[-1] = kept[-1][: width - 1] + "…"
            lines += kept
        return "\n".join(line if len(line) <= width else line[: width - 1] + "…" for line in lines)

    def redraw(self, samples: list[Sample], notes: list[str], glyphs: Glyphs = UNICODE) -> None:
        """Called by the app at a few Hz with the sampler's recent window; fixed y-limits keep it cheap."""
        plot = self.query_one(QuickPlot)
        spark = self.query_one("#clocks-spark", LiveText)
        host = self.query_one("#clocks-host", LiveText)
        info = self.query_one("#clocks-info", LiveText)
        small = self.size.height < SMALL_HEIGHT
        if not samples:
            info.set("waiting for telemetry")
            return
        latest = samples[-1]
        # A one-line trace spans the whole minute too: one bin a character (values take about 10).
        columns = max(4, self.size.width - 17) if small else max(20, self.size.width)
        xs, kept = binned(samples, WINDOW_S, columns)
        has_gpu = bool(latest.gpus)
        if has_gpu:
            traces, _ = gpu_traces(kept, self.gpu_index)
            cpu, _ = host_traces(kept, busy=False)
            # On an APU the CPU shares the GPU's power budget: its power comes first where rows are few.
            cpu.sort(key=lambda t: t.label != "CPU W")
            info.set(self._gpu_info(latest, small, self.gpu_index))
            several = every_gpu_lines(latest, self.gpu_index, max(16, self.size.width)) if len(latest.gpus) > 1 else []
            spark_text = self.sparks([*traces, *cpu], [], "", glyphs, tuple(several)) if small else ""
            host_text = "\n".join([*several, *([host_line(latest.host)] if cpu else [])])
        else:
            traces, missing = host_traces(kept)
            said = list(dict.fromkeys(map(note_in_words, notes)))  # in words; an older engine's too
            note = "no GPU telemetry: " + ("; ".join(said) if said else "no GPU found")
            info.set(host_line(latest.host))
            spark_text = self.sparks(traces, missing, note, glyphs) if small else ""
            host_text = note
        # Only on a change: setting display asks for a new layout of the screen.
        for widget, wanted in ((plot, not small), (spark, small), (host, not small and bool(host_text))):
            if widget.display != wanted:
                widget.display = wanted
        if small:
            spark.set(spark_text)
        else:
            host.set(host_text)
            self._plot(plot, xs, traces, latest, has_gpu)

    def _plot(self, plot: QuickPlot, xs: list[float], traces: list[Trace], latest: Sample, has_gpu: bool) -> None:
        # A plotext build and its repaint cost several milliseconds: redo them only when the picture
        # would change (a column more of history, or a step the plot's rows can show), which on an
        # idle machine, a flat line sliding left, is seldom.
        rows = max(1, self.size.height)
        traces = [t for t in traces if t.plotted]
        shown = tuple(visible([v or 0.0 for v in t.values], t.top, rows) for t in traces)
        signature = (self.size, has_gpu, len(xs), tuple(t.legend for t in traces), shown)
        if signature == self._drawn:
            return
        self._drawn = signature
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        right_top = max((t.top for t in traces if t.right), default=100.0)
        for trace in traces:
            points = [(x, v) for x, v in zip(xs, trace.values, strict=False) if v is not None]
            if points:
                side = "right" if trace.right else "left"
                plt.plot([p[0] for p in points], [p[1] for p in points], label=trace.legend, yside=side)
        left = [t for t in traces if not t.right]
        if left:
            plt.ylim(0, left[0].top * 1.05)
        plt.ylim(0, right_top, yside="right")
        chosen = pick_gpu(latest, self.gpu_index) if has_gpu else None
        plt.title(f"GPU {chosen.index}: {chosen.name}" if chosen else "host CPU (no GPU telemetry)")
        plt.xlim(-WINDOW_S, 0)
        plot.refresh()

    @staticmethod
    def _gpu_info(latest: Sample, small: bool, index: int = 0) -> str:
        gpu = pick_gpu(latest, index)
        assert gpu is not None
        reasons = ", ".join(gpu.throttle) or "none"
        who = f"GPU {gpu.index} " if len(latest.gpus) > 1 else ""
        if small:  # clock, temperature and power have their own labelled lines above
            return f"{who}throttle: {reasons}"
        return who + (
            f"{na(gpu.sm_clock_mhz, unit=' MHz')}/{na(gpu.max_sm_clock_mhz, unit=' MHz')} "
            f"{na(gpu.temperature_c, unit=' C')} {na(gpu.power_w)}/{na(gpu.power_limit_w, unit=' W')} "
            f"throttle: {reasons}"
        )
