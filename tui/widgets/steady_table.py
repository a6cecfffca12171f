"""A DataTable that takes new rows cheaply: no new layout of the screen, no new render of the old rows.

A DataTable sets its virtual size after every new row, and that setting lays out the whole screen and
repaints all of it (20-50 ms on a small VM, while pushed events wait). A table that already scrolls
keeps its box when rows are added and no column widens; a table not on screen (a hidden tab) is laid
out anew when it is shown. In both cases repainting the table and its scrollbars is all that is needed.
A DataTable also forgets every rendered cell when a row is added or a cell changes; a row added at the
end changes no other row unless a column widens, and a changed cell (its column's width kept) changes
only its own row, so only that is rendered anew.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from rich.text import TextType
from textual.geometry import NULL_REGION, Region, Size
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

CellType = TypeVar("CellType")


class SteadyTable(DataTable[CellType]):
    _sizing_from: Size | None = None  # the virtual size before the new rows, while they are measured
    layouts_skipped = 0  # how many screen layouts the table spared

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
        return after.width == before.width and self.show_vertical_scrollbar and after.height > viewport.height

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
