"""The Burn tab: until a burn has run, it says what the tab will show and which key starts one; then the plot."""

from __future__ import annotations

from rigcheck.engine.events import Measurement
from rigcheck.tui.widgets.burn_plot import BurnPlot
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static


def burn_hint(stage_names: list[str]) -> str:
    """How to start a burn from this app: its stage key, and `a` in the full profile."""
    if "burn" not in stage_names:
        return "No burn here: this app was started without the burn stage."
    index = stage_names.index("burn") + 1
    key = f"press {index} to run it alone" if index <= 9 else "run it from the palette (ctrl+p, 'Run stage burn')"
    return (
        "No burn in this session yet. A burn loads the device for minutes and plots its throughput, and its"
        f" SM clock where known, here as it runs. To start one, {key}; or choose the full profile (p) and"
        " press a: every stage then runs, the burn last."
    )


class BurnTab(Vertical):
    DEFAULT_CSS = """
    BurnTab > BurnPlot {
        display: none;
    }
    BurnTab.burned > BurnPlot {
        display: block;
    }
    BurnTab.burned > #burn-hint {
        display: none;
    }
    BurnTab > #burn-hint {
        height: auto;
        padding: 1 2;
        color: $text-muted;
    }
    """

    def __init__(self, stage_names: list[str], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.stage_names = stage_names

    def compose(self) -> ComposeResult:
        yield Static(burn_hint(self.stage_names), id="burn-hint")
        yield BurnPlot(id="burn-plot")

    def add(self, measurement: Measurement) -> None:
        plot = self.query_one(BurnPlot)
        plot.add(measurement)
        if plot.rates and not self.has_class("burned"):
            self.add_class("burned")
