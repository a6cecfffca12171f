"""A plotext plot drawn straight from plotext's character matrix, without a round trip through text.

PlotextPlot asks plotext for the plot as one string of ANSI escapes, has rich parse it back into
styled text, and Textual then styles that text character by character: all that took about two thirds
of each plot's drawing (about 5 of 8 ms on a small VM), the larger part of what the idle app spends.
Here each line is cut from the matrix the string is written from, in runs of one colour, and each
colour is styled once, the way Textual styles that colour's escapes (the result is kept), so the plot
looks exactly the same. While text is selected in it, it is drawn the usual way.
"""

from __future__ import annotations

from typing import Any

from plotext._utility import ansi_end, colors_to_ansi
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.app import RenderResult
from textual.content import Content
from textual.css.styles import RulesMap
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual
from textual_plotext import PlotextPlot

Colours = tuple[Any, Any, Any]  # plotext's foreground, style and background of a character
_PARSED: dict[Colours, RichStyle | None] = {}
_STYLED: dict[tuple[Style, Colours], Style] = {}


def _key(fullground: Any, style: Any, background: Any) -> Colours:
    return tuple(tuple(v) if isinstance(v, list) else v for v in (fullground, style, background))  # type: ignore[return-value]


def run_style(colours: Colours) -> RichStyle | None:
    """The rich style that plotext's escapes for these colours parse to."""
    if colours not in _PARSED:
        parsed = Text.from_ansi(colors_to_ansi(*colours) + "x" + ansi_end)
        _PARSED[colours] = parsed.spans[0].style if parsed.spans else None  # type: ignore[assignment]
    return _PARSED[colours]


def matrix_runs(matrix: Any) -> list[list[tuple[str, Colours]]]:
    """Each line of the matrix, top first, as runs of characters of one colour."""
    lines = []
    for row in matrix.Rows[::-1]:
        markers, fullground, style, background = (
            matrix.marker[row],
            matrix.fullground[row],
            matrix.style[row],
            matrix.background[row],
        )
        runs, start = [], 0
        for col in range(1, matrix.cols + 1):
            if col == matrix.cols or (fullground[col], style[col], background[col]) != (
                fullground[start],
                style[start],
                background[start],
            ):
                runs.append(("".join(markers[start:col]), _key(fullground[start], style[start], background[start])))
                start = col
        lines.append(runs)
    return lines


def runs_text(lines: list[list[tuple[str, Colours]]]) -> Text:
    """The lines as Text.from_ansi(the matrix's canvas) gives them (it reads an empty line after the last)."""
    texts = []
    for runs in lines:
        line = Text()
        for chars, colours in runs:
            line.append(chars, run_style(colours))
        texts.append(line)
    return Text("\n").join([*texts, Text()])


class MatrixVisual(Visual):
    """The plot's lines for Textual, each run styled as Textual styles that run's text."""

    def __init__(self, lines: list[list[tuple[str, Colours]]]) -> None:
        self.lines = lines
        self._text: Content | None = None

    def text(self) -> Content:
        if self._text is None:
            self._text = Content.from_rich_text(runs_text(self.lines))
        return self._text

    @staticmethod
    def _styled(colours: Colours, style: Style) -> Style:
        """The style Content gives text of these colours on this base: its span's style over the base."""
        key = (style, colours)
        if key not in _STYLED:
            spans = Content.from_rich_text(Text("x", style=run_style(colours) or "")).spans
            text_style = Style.combine([style, spans[0].style]) if spans else style  # type: ignore[list-item]
            _STYLED[key] = style + text_style
        return _STYLED[key]

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        if options.selection is not None:
            return self.text().render_strips(width, height, style, options)
        strips = []
        for y, runs in enumerate([*self.lines, []][:height]):
            segments, x = [], 0
            for chars, colours in runs:  # each with its place in the text, as Content marks it for selection
                segments.append(Segment(chars, self._styled(colours, style).rich_style_with_offset(x, y)))
                x += len(chars)
            strips.append(Strip(segments).crop(0, width))
        return strips

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return self.text().get_optimal_width(rules, container_width)

    def get_height(self, rules: RulesMap, width: int) -> int:
        return len(self.lines) + 1


class QuickPlot(PlotextPlot):
    def render(self) -> RenderResult:
        plot = self._plot
        # As PlotextPlot.render does (the size twice, see there), then plotext's build without its canvas.
        plot.plotsize(self.size.width, self.size.height)
        plot._set_size(self.size.width, self.size.height)
        plot.theme(self._get_plotext_theme_name(self.app.theme))
        plot._set_sizes()
        plot._build_matrix()
        return MatrixVisual(matrix_runs(plot.monitor.matrix))  # type: ignore[return-value]
