"""The Results panel: every verdict and measurement of a run; the highlighted one shows its conditions."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from .styling import status_text


def detail_text(row: dict[str, Any]) -> str:
    if row["kind"] == "verdict":
        numbers = json.dumps(row.get("numbers") or {}, default=str)[:300]
        return f"{row['status']} {row['stage']}/{row['name']}: {row['explanation']}\nnumbers: {numbers}"
    conditions = row.get("conditions") or {}
    reasons = "; ".join(conditions.get("trust_reasons") or []) or "none"
    keys = ("sm_clock_mean_mhz", "sm_clock_min_mhz", "temperature_max_c", "power_mean_w", "host_others_cpus")
    shown = ", ".join(f"{k}={conditions[k]:.4g}" for k in keys if isinstance(conditions.get(k), int | float))
    return (
        f"{row['name']}: {row['value']:,.4g} {row['unit']} on {row['device']}\n"
        f"trust: {conditions.get('trust', 'no telemetry')} (reasons: {reasons}); verified: "
        f"{conditions.get('verified', 'unknown')}\nconditions: {shown or 'none recorded'}"
    )


class ResultsPanel(Vertical):
    def compose(self) -> ComposeResult:
        table: DataTable[Text | str] = DataTable(id="results-table", cursor_type="row")
        yield table
        yield Static(id="result-detail")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for name, width in (("stage", 9), ("name", 26), ("status", 8), ("value", 12), ("meaning", 60)):
            table.add_column(name, key=name, width=width)
        self.rows: list[dict[str, Any]] = []

    def clear(self) -> None:
        self.query_one(DataTable).clear()
        self.rows = []
        self.query_one("#result-detail", Static).update("")

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        table = self.query_one(DataTable)
        if row["kind"] == "verdict":
            first = (row["explanation"] or "").splitlines()[0] if row["explanation"] else ""
            table.add_row(row["stage"], row["name"], status_text(self.app, row["status"]), "", first)
        else:
            trust = (row.get("conditions") or {}).get("trust", "")
            value = f"{row['value']:,.4g} {row['unit']}"
            table.add_row(row["stage"], row["name"], status_text(self.app, trust) if trust else "", value, "")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.rows):
            self.query_one("#result-detail", Static).update(Text(detail_text(self.rows[event.cursor_row])))
