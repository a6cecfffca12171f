"""Reads an exported HTML page back with the standard library's html.parser, as a test needs it: that its tags
nest and close, every tag and attribute it holds, and each section's text, table rows and plots."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "area", "base", "source", "track", "embed"}


@dataclass
class Plot:
    texts: list[str] = field(default_factory=list)
    fills: list[str] = field(default_factory=list)  # every fill colour of its shapes, in order


@dataclass
class Section:
    text: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)  # every table row's cells (th or td), as text
    plots: list[Plot] = field(default_factory=list)

    def words(self) -> str:
        return " ".join(" ".join(self.text).split())


class Page(HTMLParser):
    """The whole page: `problems` lists each tag that closed out of order or never closed."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.problems: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.sections: dict[str, Section] = {}
        self.section: Section | None = None
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.plot: Plot | None = None
        self.style_text: list[str] = []
        self.feed(text)
        self.close()
        self.problems += [f"<{tag}> never closed" for tag in self.open]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, dict(attrs))
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, dict(attrs))

    def _element(self, tag: str, attrs: dict[str, str | None]) -> None:
        self.tags.append((tag, attrs))
        if tag == "section":
            self.section = self.sections.setdefault(str(attrs.get("id")), Section())
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []
        elif tag == "br" and self.cell is not None:
            self.cell.append(" ")  # a line break reads as a space
        elif tag == "svg" and self.section is not None:
            self.plot = Plot()
            self.section.plots.append(self.plot)
        if self.plot is not None:
            style = str(attrs.get("style") or "")
            fill = attrs.get("fill") or next(
                (p[5:].strip() for p in style.split(";") if p.strip().startswith("fill:")), None
            )
            if fill:
                self.plot.fills.append(fill)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.problems.append(f"</{tag}> where <{self.open[-1] if self.open else 'nothing'}> was open")
        else:
            self.open.pop()
        if tag == "section":
            self.section = None
        elif tag in ("td", "th") and self.row is not None and self.cell is not None:
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "tr" and self.section is not None and self.row is not None:
            self.section.rows.append(self.row)
            self.row = None
        elif tag == "svg":
            self.plot = None

    def handle_data(self, data: str) -> None:
        if self.open and self.open[-1] == "style":
            self.style_text.append(data)
            return
        if self.section is not None:
            self.section.text.append(data)
        if self.cell is not None:
            self.cell.append(data)
        if self.plot is not None and data.strip():
            self.plot.texts.append(data.strip())

    def row_of(self, section: str, *cells: str) -> list[str]:
        """The one row of a section's tables whose leading cells are these."""
        found = [r for r in self.sections[section].rows if r[: len(cells)] == list(cells)]
        assert len(found) == 1, f"{len(found)} rows start with {cells} in {section}: {self.sections[section].rows}"
        return found[0]
