"""The Running-benchmark panel: each figure as it arrives, with its spread and trust flag."""

from __future__ import annotations

from rich.text import Text
from rigcheck.engine.events import Measurement
from textual.widgets import DataTable

from .styling import status_text


def trust_label(measurement: Measurement) -> tuple[str, str]:
    conditions = measurement.conditions or {}
    trust = conditions.get("trust") or "no telemetry"
    if conditions.get("verified") is False:
        return trust, f"{trust}, unverified"
    return trust, trust


class BenchPanel(DataTable[Text | str]):
    def on_mount(self) -> None:
        self.cursor_type = "row"
        for name, width in (("figure", 30), ("value", 10), ("unit", 9), ("±", 8), ("trust", 22)):
            self.add_column(name, key=name, width=width)

    def add_measurement(self, measurement: Measurement) -> None:
        spread = "" if measurement.spread is None else f"{measurement.spread:.3g}"
        trust, label = trust_label(measurement)
        self.add_row(
            measurement.name,
            f"{measurement.value:,.4g}",
            measurement.unit,
            spread,
            status_text(self.app, trust, label),
        )
        self.move_cursor(row=self.row_count - 1)
