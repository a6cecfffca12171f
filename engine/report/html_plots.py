"""The HTML report's plots as inline SVG: the run's timelines and the GPUs against their peers.

Drawn by svg_plots (by hand, standard library only): matplotlib's import alone took about 0.9 s of CPU, most
of `export --format html`'s time on a 2-core host. The SVG keeps its text as text (selectable, searchable,
escaped) in the reader's own sans font, and names no address.
"""

from __future__ import annotations

from rigcheck.engine.report.html_figures import PeerGroup
from rigcheck.engine.report.html_timeline import Panel, Span
from rigcheck.engine.report.svg_plots import Band, Bar, Line, band_rows, bar_plot, line_plot

SLOW, STEADY = "#c0392b", "#2e86c1"
GPU_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22")
HOST_COLOURS = ("#222222", "#17becf", "#7f7f7f")
WIDTH_PX = 860


def _minutes(panels: list[Panel], spans: list[Span]) -> bool:
    ends = [t for p in panels for s in p.series for t in s.t] + [s.end for s in spans]
    return bool(ends) and max(ends) > 600


def _bands(spans: list[Span], scale: float) -> list[Band]:
    return [Band(s.name, s.start / scale, s.end / scale, i % 2 == 0) for i, s in enumerate(spans)]


def label_rows(spans: list[Span], width_px: int = WIDTH_PX) -> list[int]:
    """The row each stage's name takes above a timeline (0 the lowest), as timeline_svg places them."""
    if not spans:
        return []
    low, high = min(s.start for s in spans), max(s.end for s in spans)
    span = (high - low) or 1.0
    return band_rows(_bands(spans, 1.0), lambda v: 62 + (v - low) / span * (width_px - 78))


def timeline_svg(panel: Panel, spans: list[Span], minutes: bool = False) -> str:
    """One panel of the run's timelines, its stages shaded and named along the top."""
    scale, unit = (60.0, "min") if minutes else (1.0, "s")
    lines, host_lines = [], 0
    for series in panel.series:
        if series.gpu is None:
            colour, host_lines = HOST_COLOURS[host_lines % len(HOST_COLOURS)], host_lines + 1
        else:
            colour = GPU_COLOURS[series.gpu % len(GPU_COLOURS)]
        xs = [t / scale for t in series.t]
        lines.append(Line(series.label, xs, series.values, colour, series.dashed, 1.0 if series.dashed else 1.4))
    x_label = f"time since the run started ({unit})"
    return line_plot(panel.title, panel.unit, x_label, lines, _bands(spans, scale), WIDTH_PX)


def timelines_svg(panels: list[Panel], spans: list[Span]) -> list[tuple[Panel, str | None]]:
    """Each panel with its plot, or None where no sample held a reading for it."""
    minutes = _minutes(panels, spans)
    return [(p, timeline_svg(p, spans, minutes) if p.series else None) for p in panels]


def peers_svg(group: PeerGroup, key: str) -> str:
    """The GPUs of one model on one figure, one bar each; the red ones more than the tolerance below the best of
    the others, the dashed line where that begins (the tolerance below the best GPU)."""
    bars = [
        Bar(b.label, b.value, SLOW if b.slow else STEADY, f"{b.value:,.4g}" + (f" {b.trust}" if b.trust else ""))
        for b in group.bars
    ]
    top = max((b.value for b in group.bars), default=0.0)
    return bar_plot(f"{group.name} ({group.model})", group.unit, bars, (1 - group.tolerance) * top)
