"""Line and bar plots as inline SVG, written by hand: the HTML report's timelines and peers without matplotlib.

matplotlib cost about 0.9 s of CPU to import and 0.2 s to draw two plots, most of `export --format html`'s time
on a 2-core host; these plots need axes, ticks, lines with gaps, shaded spans and text, nothing more. Every text is
escaped here; the SVG names no address and needs no namespace inside HTML.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

FONT_PX = 11
SMALL_PX = 9
CHAR_PX = 0.62  # a character's width, generously, as a share of its font size
TICKS = 5
Scale = Callable[[float], float]  # a value to its place on the page, in pixels


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def nice_ticks(low: float, high: float, count: int = TICKS, cover: bool = False) -> list[float]:
    """Round tick values within low..high (`cover`: from low up to the first at or above high), in steps of 1, 2,
    2.5 or 5 times a power of ten."""
    if not math.isfinite(low) or not math.isfinite(high) or high <= low:
        return [low] if math.isfinite(low) else [0.0]
    raw = (high - low) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    if cover:
        high = math.ceil(high / step - 1e-9) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def tick_text(value: float) -> str:
    return f"{value:,.4g}"


def text_px(text: str, size: int = FONT_PX) -> float:
    return len(text) * size * CHAR_PX


@dataclass(frozen=True)
class Line:
    label: str
    xs: Sequence[float]
    ys: Sequence[float]  # NaN: a gap
    colour: str
    dashed: bool = False
    width: float = 1.4


@dataclass(frozen=True)
class Band:
    """A stretch of the x axis shaded or not, named above the plot."""

    name: str
    start: float
    end: float
    shaded: bool


def _segments(line: Line, x: Scale, y: Scale) -> list[str]:
    """The line's runs of readings between gaps, each as SVG points."""
    out: list[str] = []
    run: list[str] = []
    for xv, yv in zip(line.xs, line.ys, strict=True):
        if isinstance(yv, float) and math.isnan(yv):
            if run:
                out.append(" ".join(run))
            run = []
            continue
        run.append(f"{x(xv):.1f},{y(yv):.1f}")
    if run:
        out.append(" ".join(run))
    return out


def band_rows(bands: Sequence[Band], x: Scale) -> list[int]:
    """The row each band's name goes in (0 nearest the plot): the lowest where it overlaps no other name."""
    ends: list[float] = []
    rows = []
    for band in bands:
        middle, half = (x(band.start) + x(band.end)) / 2, text_px(band.name, SMALL_PX) / 2 + 3
        row = next((r for r, end in enumerate(ends) if end <= middle - half), len(ends))
        if row == len(ends):
            ends.append(-math.inf)
        ends[row] = middle + half
        rows.append(row)
    return rows


def line_plot(
    title: str, unit: str, x_label: str, lines: Sequence[Line], bands: Sequence[Band] = (), width: int = 860
) -> str:
    """Lines over time from zero up, the bands shaded behind and named along the top (in rows, never overlapping),
    a legend beneath."""
    xs = [v for line in lines for v in line.xs] + [v for b in bands for v in (b.start, b.end)]
    ys = [v for line in lines for v in line.ys if not math.isnan(v)]
    x_low, x_high = (min(xs), max(xs)) if xs else (0.0, 1.0)
    x_high = x_high if x_high > x_low else x_low + 1.0
    y_ticks = nice_ticks(0.0, max(ys, default=1.0) or 1.0, cover=True)
    y_high = max(y_ticks[-1], max(ys, default=1.0)) or 1.0
    left, right = 62, 16
    plot_w = width - left - right

    def x(value: float) -> float:
        return left + (value - x_low) / (x_high - x_low) * plot_w

    rows = band_rows(bands, x)
    top = 28 + (max(rows, default=-1) + 1) * (SMALL_PX + 3)
    plot_h = 150
    legend = _legend(lines, left, top + plot_h + 38, width - left - right)
    height = int(legend[1]) + 6

    def y(value: float) -> float:
        return top + plot_h - value / y_high * plot_h

    out = [f'<svg class="plot" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="{FONT_PX}">']  # fmt: skip
    out.append(f"<title>{esc(title)}</title>")
    for band, row in zip(bands, rows, strict=True):
        if band.shaded:
            out.append(
                f'<rect x="{x(band.start):.1f}" y="{top}" width="{max(0.0, x(band.end) - x(band.start)):.1f}" '
                f'height="{plot_h}" fill="#888888" fill-opacity="0.12"/>'
            )
        label_y = top - 4 - row * (SMALL_PX + 3)
        out.append(
            f'<text x="{(x(band.start) + x(band.end)) / 2:.1f}" y="{label_y}" font-size="{SMALL_PX}" '
            f'text-anchor="middle">{esc(band.name)}</text>'
        )
    for tick in y_ticks:
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#dddddd"/>')
        out.append(f'<text x="{left - 5}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick_text(tick)}</text>')
    for tick in nice_ticks(x_low, x_high, 8):
        out.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top + plot_h}" y2="{top + plot_h + 4}" '
                   'stroke="#555555"/>')  # fmt: skip
        out.append(f'<text x="{x(tick):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{tick_text(tick)}</text>')
    out.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#555555"/>')
    out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#555555"/>')
    for line in lines:
        dash = ' stroke-dasharray="5,3"' if line.dashed else ""
        for points in _segments(line, x, y):
            out.append(
                f'<polyline points="{points}" fill="none" stroke="{line.colour}" stroke-width="{line.width}"{dash}/>'
            )
        if len(line.xs) < 30:
            out += [
                f'<circle cx="{x(a):.1f}" cy="{y(b):.1f}" r="2" fill="{line.colour}"/>'
                for a, b in zip(line.xs, line.ys, strict=True)
                if not math.isnan(b)
            ]
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 30}" text-anchor="middle">{esc(x_label)}</text>')
    out.append(
        f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">{esc(unit)}</text>'
    )
    out.append(legend[0])
    out.append(f'<text x="{left}" y="16" font-size="13" font-weight="bold">{esc(title)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _legend(lines: Sequence[Line], left: float, top: float, room: float) -> tuple[str, float]:
    """The legend's SVG, wrapped into rows that fit `room`, and where it ends."""
    out, x0, y0 = [], left, top
    for line in lines:
        need = 28 + text_px(line.label, SMALL_PX) + 16
        if x0 > left and x0 + need > left + room:
            x0, y0 = left, y0 + 15
        dash = ' stroke-dasharray="5,3"' if line.dashed else ""
        out.append(
            f'<line x1="{x0:.1f}" x2="{x0 + 22:.1f}" y1="{y0 - 3:.1f}" y2="{y0 - 3:.1f}" stroke="{line.colour}" '
            f'stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{x0 + 27:.1f}" y="{y0:.1f}" font-size="{SMALL_PX}">{esc(line.label)}</text>')
        x0 += need
    return "\n".join(out), y0


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    colour: str
    words: str  # printed at the bar's end


def bar_plot(title: str, unit: str, bars: Sequence[Bar], marker: float | None = None, width: int = 430) -> str:
    """Horizontal bars from zero, each named on the left and its words at its end; a dashed line at `marker`.
    The title is the plot's last text, under the bars' own."""
    left = 14 + max((text_px(b.label) for b in bars), default=20)
    right = 10
    top, bar_h, gap = 26, 18, 6
    plot_w = width - left - right
    high = max((b.value for b in bars), default=1.0) * 1.3 or 1.0
    plot_h = len(bars) * (bar_h + gap)
    height = top + plot_h + 36

    def x(value: float) -> float:
        return left + max(0.0, value) / high * plot_w

    out = [f'<svg class="plot" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="{FONT_PX}">']  # fmt: skip
    out.append(f"<title>{esc(title)}</title>")
    for i, bar in enumerate(bars):
        y0 = top + i * (bar_h + gap)
        out.append(
            f'<rect x="{left}" y="{y0}" width="{x(bar.value) - left:.1f}" height="{bar_h}" fill="{bar.colour}"/>'
        )
        out.append(f'<text x="{left - 5}" y="{y0 + bar_h - 5}" text-anchor="end">{esc(bar.label)}</text>')
        out.append(
            f'<text x="{x(bar.value) + 4:.1f}" y="{y0 + bar_h - 5}" font-size="{SMALL_PX}">{esc(bar.words)}</text>'
        )
    if marker is not None:
        out.append(f'<line x1="{x(marker):.1f}" x2="{x(marker):.1f}" y1="{top - 4}" y2="{top + plot_h}" '
                   'stroke="#555555" stroke-dasharray="5,3"/>')  # fmt: skip
    for tick in nice_ticks(0.0, high, 4):
        out.append(
            f'<text x="{x(tick):.1f}" y="{top + plot_h + 14}" text-anchor="middle" font-size="{SMALL_PX}">'
            f"{tick_text(tick)}</text>"
        )
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 30}" text-anchor="middle">{esc(unit)}</text>')
    out.append(f'<text x="4" y="16" font-size="12" font-weight="bold">{esc(title)}</text>')
    out.append("</svg>")
    return "\n".join(out)
