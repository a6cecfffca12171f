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


def visible(values: list[float], top: float, rows: int) -> tuple[int, ...]:
    """The values as the plot can resolve them: two steps a row over the axis range."""
    grain = max(top, 1e-9) / (2 * rows)
    return tuple(round(v / grain) for v in values)


class ClocksPanel(Vertical):
    def compose(self) -> ComposeResult:
        yield PlotextPlot(id="clocks-plot")
        yield LiveText(id="clocks-spark")
        yield LiveText(id="clocks-info")

    def on_mount(self) -> None:
        self.border_title = "Clocks"
        self._drawn: tuple[object, ...] | None = None

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
        info = self.query_one("#clocks-info", LiveText)
        if not samples:
            info.set("waiting for telemetry")
            return
        self._info(samples, notes, info)
        if small:
            return
        # One point a column, in bins fixed in time, so an unchanged history draws the same picture.
        columns = max(20, self.size.width)
        column_s = WINDOW_S / columns
        binned = {int(s.t // column_s): s for s in samples}
        keys = sorted(binned)[-columns:]
        samples = [binned[key] for key in keys]
        xs = [(key - keys[-1]) * column_s for key in keys]
        gpu = samples[-1].gpus[0] if samples[-1].gpus else None
        rows = max(1, self.size.height)
        if gpu is not None:
            top = gpu.max_sm_clock_mhz or 1
            series = (
                [s.gpus[0].sm_clock_mhz or 0 for s in samples if s.gpus],
                [s.gpus[0].temperature_c or 0 for s in samples if s.gpus],
            )
            shown = (visible(series[0], top, rows), visible(series[1], 100, rows))
        else:
            series = ([s.host.busy_cpus for s in samples], [])
            shown = (visible(series[0], samples[-1].host.cpus, rows), ())
        # A plotext build and its repaint cost several milliseconds: redo them only when the picture
        # would change (a column more of history, or a step the plot's rows can show), which on an
        # idle machine, a flat line sliding left, is seldom.
        signature = (self.size, gpu is None, len(keys), shown)
        if signature == self._drawn:
            return
        self._drawn = signature
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        if gpu is not None:
            clocks, temps = series
            plt.plot(xs[-len(clocks) :], clocks, label="SM MHz")
            plt.plot(xs[-len(temps) :], temps, label="temp C", yside="right")
            plt.ylim(0, top * 1.05)
            plt.ylim(0, 100, yside="right")
            plt.title(f"{gpu.name}")
        else:
            plt.plot(xs, series[0], label="busy CPUs")
            plt.ylim(0, samples[-1].host.cpus)
            plt.title("host (no GPU telemetry)")
        plt.xlim(-WINDOW_S, 0)
        plot.refresh()

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
