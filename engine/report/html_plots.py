"""The HTML report's plots, drawn by matplotlib as inline SVG: the run's timelines and the GPUs against their peers.

No pyplot and no global backend: each plot is a Figure on its own SVG canvas, written into a string. The SVG
keeps its text as text (selectable, searchable, escaped by matplotlib's XML writer) in the reader's own sans
font, and carries no metadata, XML prolog or namespace URLs, so the page names no address at all.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from rigcheck.engine.report.html_figures import PeerGroup
from rigcheck.engine.report.html_timeline import Panel, Span

STYLE = {
    "svg.fonttype": "none",  # text stays text: a few KB a plot, not a path per glyph
    "text.parse_math": False,  # a "$" in a GPU or figure name is a dollar sign, not mathtext
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
}
NO_METADATA = {"Format": None, "Type": None, "Creator": None, "Date": None}
SLOW, STEADY = "#c0392b", "#2e86c1"
GPU_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22")
HOST_COLOURS = ("#222222", "#17becf", "#7f7f7f")
WIDTH_IN = 9.0
CHAR_IN = 0.065  # a 7-point character's width, generously, in inches
AXES_SHARE = 0.88  # of the figure's width taken by the axes
LABEL_ROW = 0.09  # a row of stage names, in axes heights (the plot is 2.6 in tall)
LABEL_PT = 10  # the same row in points, to lift the title above them


@contextmanager
def _style(salt: str) -> Iterator[None]:
    # svg.hashsalt makes the clip-path ids the same on every export and different from plot to plot
    with matplotlib.rc_context(STYLE | {"svg.hashsalt": salt}):
        yield


def _inline(svg: str) -> str:
    """matplotlib's SVG file as an element inside HTML: from `<svg` on, without the namespace attributes (HTML
    puts inline SVG in its namespace itself), and scaling to the page's width."""
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", svg)
    return svg.replace("<svg ", '<svg class="plot" role="img" ', 1)


def _svg(fig: Figure) -> str:
    out = io.StringIO()
    FigureCanvasSVG(fig).print_svg(out, metadata=NO_METADATA)
    return _inline(out.getvalue())


def _minutes(panels: list[Panel], spans: list[Span]) -> bool:
    ends = [t for p in panels for s in p.series for t in s.t] + [s.end for s in spans]
    return bool(ends) and max(ends) > 600


def label_rows(spans: list[Span], width_in: float = WIDTH_IN) -> list[int]:
    """The row each stage's name goes in above the plot (0 the lowest): a name goes in the lowest row where it
    overlaps no other, so short stages side by side never print over each other."""
    total = max((s.end for s in spans), default=0.0) - min((s.start for s in spans), default=0.0)
    if total <= 0:
        return [0] * len(spans)
    per_char = CHAR_IN / (width_in * AXES_SHARE) * total  # seconds of axis one character of a label covers
    ends: list[float] = []  # per row, where its last label ends
    rows = []
    for span in spans:
        middle, half = (span.start + span.end) / 2, (len(span.name) + 1) * per_char / 2
        row = next((r for r, end in enumerate(ends) if end <= middle - half), len(ends))
        if row == len(ends):
            ends.append(0.0)
        ends[row] = middle + half
        rows.append(row)
    return rows


def timeline_svg(panel: Panel, spans: list[Span], minutes: bool = False) -> str:
    """One panel of the run's timelines, its stages shaded and named along the top."""
    scale, unit = (60.0, "min") if minutes else (1.0, "s")
    with _style(panel.key):
        fig = Figure(figsize=(WIDTH_IN, 2.6), layout="constrained")
        ax = fig.add_subplot()
        rows = label_rows(spans)
        for i, (span, row) in enumerate(zip(spans, rows, strict=True)):
            if i % 2 == 0:
                ax.axvspan(span.start / scale, span.end / scale, color="#888888", alpha=0.12, lw=0)
            ax.text(
                (span.start + span.end) / 2 / scale,
                1.0 + LABEL_ROW * row,
                span.name,
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="bottom",
                fontsize=7,
                clip_on=False,
            )
        host_lines = 0
        for series in panel.series:
            if series.gpu is None:
                colour, host_lines = HOST_COLOURS[host_lines % len(HOST_COLOURS)], host_lines + 1
            else:
                colour = GPU_COLOURS[series.gpu % len(GPU_COLOURS)]
            ax.plot(
                [t / scale for t in series.t],
                series.values,
                label=series.label,
                color=colour,
                lw=1.0 if series.dashed else 1.4,
                ls="--" if series.dashed else "-",
                marker="." if len(series.t) < 30 else None,
            )
        ax.set_xlabel(f"time since the run started ({unit})")
        ax.set_ylabel(panel.unit)
        pad = 14 + LABEL_PT * max(rows, default=0)  # the title above the last row of stage names
        ax.set_title(panel.title, loc="left", pad=pad, fontsize=10, fontweight="bold")
        ax.set_ylim(bottom=0)
        # below the axes, so every timeline's axes are the same width and line up on the page
        fig.legend(loc="outside lower center", ncols=min(4, len(panel.series)), fontsize=7, frameon=False)
        return _svg(fig)


def timelines_svg(panels: list[Panel], spans: list[Span]) -> list[tuple[Panel, str | None]]:
    """Each panel with its plot, or None where no sample held a reading for it."""
    minutes = _minutes(panels, spans)
    return [(p, timeline_svg(p, spans, minutes) if p.series else None) for p in panels]


def peers_svg(group: PeerGroup, key: str) -> str:
    """The GPUs of one model on one figure, one bar each; the red ones more than the tolerance below the best of
    the others, the dashed line where that begins (the tolerance below the best GPU)."""
    bars = list(group.bars)
    with _style(f"peers-{key}"):
        fig = Figure(figsize=(WIDTH_IN / 2, 0.6 + 0.28 * len(bars)), layout="constrained")
        ax = fig.add_subplot()
        ys = list(range(len(bars)))[::-1]
        values = [b.value for b in bars]
        ax.barh(ys, values, color=[SLOW if b.slow else STEADY for b in bars], height=0.7)
        ax.set_yticks(ys, [b.label for b in bars], fontsize=8)
        top = max(values)
        ax.axvline((1 - group.tolerance) * top, color="#555555", ls="--", lw=1)
        for y, b in zip(ys, bars, strict=True):
            words = f"{b.value:,.4g}" + (f" {b.trust}" if b.trust else "")
            ax.text(b.value + top * 0.01, y, words, va="center", fontsize=7, bbox={"color": "white", "pad": 0.5})
        ax.set_xlim(0, top * 1.3)
        ax.set_xlabel(group.unit)
        ax.grid(axis="y", visible=False)
        ax.set_title(f"{group.name} ({group.model})", loc="left", fontsize=9)
        return _svg(fig)
