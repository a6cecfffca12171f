"""The Burn tab: each device's throughput over the burn, with its SM clock on the right axis where known."""

from __future__ import annotations

from rigcheck.engine.events import Measurement
from rigcheck.tui.widgets.quick_plot import QuickPlot


class BurnPlot(QuickPlot):
    """Fed every burn interval measurement; a device's interval 0 starts its line afresh (a new burn)."""

    def on_mount(self) -> None:
        self.rates: dict[str, list[tuple[float, float]]] = {}
        self.clocks: dict[str, list[tuple[float, float]]] = {}
        self.units: dict[str, str] = {}
        self.draw()

    def add(self, measurement: Measurement) -> None:
        params = measurement.params
        if measurement.stage != "burn" or "elapsed_s" not in params:
            return
        device = measurement.device
        if params.get("interval") == 0:
            self.rates[device], self.clocks[device] = [], []
        self.rates.setdefault(device, []).append((params["elapsed_s"], measurement.value))
        self.units[device] = measurement.unit
        clock = (measurement.conditions or {}).get("sm_clock_mean_mhz")
        if isinstance(clock, int | float):
            self.clocks.setdefault(device, []).append((params["elapsed_s"], float(clock)))
        self.draw()

    def draw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        if not self.rates:
            self.shown_title = "burn: no burn in this session yet (run it with its key, or 'a' in the full profile)"
            plt.title(self.shown_title)
            self.refresh()
            return
        for device, points in self.rates.items():
            plt.plot([x for x, _ in points], [y for _, y in points], label=f"{device} {self.units.get(device, '')}")
        for device, points in self.clocks.items():
            if points:
                plt.plot([x for x, _ in points], [y for _, y in points], label=f"{device} MHz", yside="right")
        top = max(y for points in self.rates.values() for _, y in points)
        plt.ylim(0, top * 1.1 or 1)
        plt.xlabel("seconds into the burn")
        clocked = any(self.clocks.values())  # no GPU, or no driver to read it: no clock to plot
        self.shown_title = "burn: throughput" + (", and SM clock on the right" if clocked else " (no SM clock known)")
        plt.title(self.shown_title)
        self.refresh()
