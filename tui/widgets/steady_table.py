"""A DataTable that takes new rows cheaply: no new layout of the screen, no new render of the old rows.

A DataTable sets its virtual size after every new row, and that setting lays out the whole screen and
repaints all of it (20-50 ms on a small VM, while pushed events wait). A table that already scrolls
keeps its box when rows are added and no column widens; a table not on screen (a hidden tab) is laid
out anew when it is shown. In both cases repainting the table and its scrollbars is all that is needed.
A DataTable also forgets every rendered cell when a row is added or a cell changes; a row added at the
end changes no other row unless a column widens, and a changed cell (its column's width kept) changes
only its own row, so only that is rendered anew. It renders every shown row anew when its cursor
moves (the cursor's place is part of each row's cache key), and every cell when its box changes height
(growing with its rows); with a row cursor only the rows it leaves and reaches look different, and a
new height changes no row, so the others keep their rendering. It works out its style from all of its
ancestors once for each line it draws; once for each drawing is enough.

A table given a fixed height (`fills_below`) keeps its box from its first row to its last: it draws
the lines below its rows in its parent's background, as if it ended there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from rich.style import Style
from rich.text import TextType
from textual._types import SegmentLines
from textual.coordinate import Coordinate
from textual.events import Resize
from textual.geometry import NULL_REGION, Region, Size
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

CellType = TypeVar("CellType")
ELSEWHERE = Coordinate(-2, 0)  # a cursor on no row, not even the header (-1): what other rows see


class SteadyTable(DataTable[CellType]):
    _sizing_from: Size | None = None  # the virtual size before the new rows, while they are measured
    layouts_skipped = 0  # how many screen layouts the table spared
    fills_below = False  # True in a subclass whose CSS gives it a fixed height
    _style_now: Style | None = None  # its style, while one drawing lasts
    _drawn_width = -1  # its width at the last resize

    @property
    def rich_style(self) -> Style:
        return self._style_now if self._style_now is not None else super().rich_style

    def render_lines(self, crop: Region) -> list[Strip]:
        self._style_now = None
        self._style_now = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._style_now = None

    def render_line(self, y: int) -> Strip:
        if self.fills_below:
            top = self.header_height if self.show_header else 0
            if y >= top and y + int(self.scroll_y) >= top + len(self._y_offsets):
                return Strip.blank(self.size.width, Style(bgcolor=self.background_colors[0].rich_color))
        return super().render_line(y)

    def _on_resize(self, event: Resize) -> None:
        if event.size.width == self._drawn_width:
            event.prevent_default()  # a new height alone: the DataTable would forget every cell it rendered
        self._drawn_width = event.size.width

    def measure_new_rows(self) -> None:
        """Size the rows added since the table was last idle now (it waits for idle), so that a cursor
        moved to one of them scrolls there at once rather than a frame later (two renders of every row)."""
        if self._require_update_dimensions:
            self._require_update_dimensions = False
            new_rows = self._new_rows.copy()
            self._new_rows.clear()
            self._update_dimensions(new_rows)

    def add_row(
        self,
        *cells: CellType,
        height: int | None = 1,
        key: str | None = None,
        label: TextType | None = None,
    ) -> RowKey:
        count = self._update_count
        row_key = super().add_row(*cells, height=height, key=key, label=label)
        if height is not None and label is None:  # a plain row at the end: the others render as before
            self._update_count = count
            self._offset_cache.clear()
        return row_key

    def update_cell(
        self, row_key: RowKey | str, column_key: ColumnKey | str, value: CellType, *, update_width: bool = False
    ) -> None:
        row = RowKey(row_key) if isinstance(row_key, str) else row_key
        column = ColumnKey(column_key) if isinstance(column_key, str) else column_key
        if update_width or row not in self._row_locations or column not in self._column_locations:
            super().update_cell(row_key, column_key, value, update_width=update_width)
            return
        self._data[row][column] = value
        index = self._row_locations.get(row)
        self._row_renderable_cache.discard((self._update_count, index))
        for key in [k for k in self._cell_render_cache.keys() if k[0] == row and k[1] == column]:  # noqa: SIM118
            self._cell_render_cache.discard(key)
        for key in [k for k in self._row_render_cache.keys() if k[0] == row]:  # noqa: SIM118
            self._row_render_cache.discard(key)
        self._line_cache.clear()  # lines are joined from the rows' cached renders: cheap to join again
        self.refresh_row(index)

    def _render_line_in_row(
        self,
        row_key: RowKey,
        line_no: int,
        base_style: Style,
        cursor_location: Coordinate,
        hover_location: Coordinate,
    ) -> tuple[SegmentLines, SegmentLines]:
        if self.cursor_type == "row":  # a row looks the same wherever the cursor is, as long as it is elsewhere
            row = self._row_locations.get(row_key) if row_key in self._row_locations else -1  # the header: -1
            cursor_location = cursor_location if cursor_location.row == row else ELSEWHERE
            hover_location = hover_location if hover_location.row == row else ELSEWHERE
        return super()._render_line_in_row(row_key, line_no, base_style, cursor_location, hover_location)

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        widths = [column.get_render_width(self) for column in self.ordered_columns]
        self._sizing_from = self.virtual_size
        try:
            super()._update_dimensions(new_rows)
        finally:
            self._sizing_from = None
        if widths != [column.get_render_width(self) for column in self.ordered_columns]:
            self._update_count += 1  # a column widened: every row renders anew
            self.refresh()

    def _box_kept(self, before: Size) -> bool:
        """Does the table keep its place and size on screen with its new virtual size?"""
        if self.region == NULL_REGION:
            return True  # not on screen: showing it lays it out
        after, viewport = self.virtual_size, self.scrollable_content_region.size
        scrolls = after.height > viewport.height
        if scrolls != self.show_vertical_scrollbar:
            return False  # a scrollbar comes or goes
        if self.fills_below:  # a fixed box: only a horizontal scrollbar that comes or goes changes it
            return (after.width > viewport.width) == self.show_horizontal_scrollbar
        return after.width == before.width and scrolls  # its height follows its rows until it scrolls

    def refresh(
        self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False
    ) -> SteadyTable[CellType]:
        before = self._sizing_from
        if layout and before is not None and self._box_kept(before):
            self._sizing_from = None  # the scrollbars' update below must not come back here
            self.layouts_skipped += 1
            if self.region != NULL_REGION:
                self._scroll_update(self.virtual_size)
            layout = False
        super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)
        return self
