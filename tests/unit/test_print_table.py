"""`show` of a fleet of 1,024 hosts (issue 25): a table past BIG_TABLE_ROWS prints as aligned columns, every
row and cell there, in a fraction of the time rich's Table takes; a small table is rich's as before."""

from __future__ import annotations

import io
import time

from rich.console import Console
from rich.table import Table
from rich.text import Text
from rigcheck.tui.cli_display import BIG_TABLE_ROWS, print_table


def table_of(rows: int) -> Table:
    table = Table(title="rigcheck run 1")
    for column in ("host", "device", "status"):
        table.add_column(column)
    for n in range(rows):
        table.add_row(f"gpu-node-{n:04d}", f"cuda:{n % 8}", Text("PASS" if n % 3 else "FAIL", style="red"))
    return table


def printed(table: Table) -> str:
    out = io.StringIO()
    print_table(Console(file=out, width=10_000, no_color=True), table)
    return out.getvalue()


def test_a_big_table_prints_every_row_aligned_and_fast() -> None:
    rows = BIG_TABLE_ROWS * 5
    started = time.monotonic()
    text = printed(table_of(rows))
    assert time.monotonic() - started < 20  # rich's Table takes about a second a thousand rows here
    lines = text.splitlines()
    assert lines[0] == "rigcheck run 1" and lines[1].split() == ["host", "device", "status"]
    assert len(lines) == rows + 2
    assert lines[2].split() == ["gpu-node-0000", "cuda:0", "FAIL"]
    last = rows - 1
    assert lines[-1].split() == [f"gpu-node-{last:04d}", f"cuda:{last % 8}", "PASS" if last % 3 else "FAIL"]
    assert len({line.index("cuda") for line in lines[2:]}) == 1  # one column


def test_a_small_table_is_richs_own() -> None:
    text = printed(table_of(3))
    assert "┏" in text and "gpu-node-0002" in text
