"""The Clocks panel: shader clock and temperature over time (plotext), power and throttle reasons beside."""

from __future__ import annotations

from rigcheck.engine.telemetry.sample import Sample, na
from textual.app import ComposeResult
from textual.containers import Vertical
from textual_plotext import PlotextPlot

from ..glyphs import UNICODE, Glyphs, level
from .live_text import LiveText

WINDOW_S = 60.0
SMALL_HEIGHT = 9  # below this many rows a plot is unreadable: show one-line traces instead


class ClocksPanel(Vertical):
    def compose(self) -> ComposeResult:
        yield PlotextPlot(id="clocks-plot")
        yield LiveText(id="clocks-spark")
        yield LiveText(id="clocks-info")

    def on_mount(self) -> None:
        self.border_title = "Clocks"

    def sparks(self, samples: list[Sample], glyphs: Glyphs) -> str:
        """Two one-line traces for terminals too small for a plot."""
        width = max(8, self.size.width - 12)
        recent = [s for s in samples if s.gpus][-width:]
        if not recent:
            busy = samples[-width:]
            cpus = samples[-1].host.cpus or 1
            return "busy " + "".join(level(s.host.busy_cpus / cpus, glyphs) for s in busy)
        top = recent[-1].gpus[0].max_sm_clock_mhz or 1
        clock = "".join(level((s.gpus[0].sm_clock_mhz or 0) / top, glyphs) for s in recent)
        temp = "".join(level((s.gpus[0].temperature_c or 0) / 100, glyphs) for s in recent)
        return f"SM   {clock}\ntemp {temp}"

    def redraw(self, samples: list[Sample], notes: list[str], glyphs: Glyphs = UNICODE) -> None:
        """Called by the app at a few Hz with the sampler's recent window; fixed y-limits keep it cheap."""
        plot = self.query_one(PlotextPlot)
        spark = self.query_one("#clocks-spark", LiveText)
        small = self.size.height < SMALL_HEIGHT
        if plot.display == small:  # only on a change: setting display asks for a new layout
            plot.display, spark.display = not small, small
        if small and samples:
            spark.set(self.sparks(samples, glyphs))
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        info = self.query_one("#clocks-info", LiveText)
        if not samples:
            info.set("waiting for telemetry")
            return
        if small:
            self._info(samples, notes, info)
            return
        step = max(1, len(samples) // max(20, self.size.width))  # about one point a column
        samples = samples[::-1][::step][::-1]
        now = samples[-1].t
        xs = [s.t - now for s in samples]
        gpu = samples[-1].gpus[0] if samples[-1].gpus else None
        if gpu is not None:
            clocks = [s.gpus[0].sm_clock_mhz or 0 for s in samples if s.gpus]
            temps = [s.gpus[0].temperature_c or 0 for s in samples if s.gpus]
            top = gpu.max_sm_clock_mhz or max(clocks) or 1
            plt.plot(xs[-len(clocks) :], clocks, label="SM MHz")
            plt.plot(xs[-len(temps) :], temps, label="temp C", yside="right")
            plt.ylim(0, top * 1.05)
            plt.ylim(0, 100, yside="right")
            plt.title(f"{gpu.name}")
        else:
            busy = [s.host.busy_cpus for s in samples]
            cpus = samples[-1].host.cpus
            plt.plot(xs, busy, label="busy CPUs")
            plt.ylim(0, cpus)
            plt.title("host (no GPU telemetry)")
        plt.xlim(-WINDOW_S, 0)
        plot.refresh()
        self._info(samples, notes, info)

    def _info(self, samples: list[Sample], notes: list[str], info: LiveText) -> None:
        gpu = samples[-1].gpus[0] if samples[-1].gpus else None
        if gpu is None:
            info.set(notes[0][:120] if notes else "no GPU telemetry source on this host")
            return
        reasons = ", ".join(gpu.throttle) or "none"
        info.set(
            f"{na(gpu.sm_clock_mhz, unit=' MHz')}/{na(gpu.max_sm_clock_mhz, unit=' MHz')} "
            f"{na(gpu.temperature_c, unit=' C')} {na(gpu.power_w)}/{na(gpu.power_limit_w, unit=' W')} "
            f"throttle: {reasons}"
        )
