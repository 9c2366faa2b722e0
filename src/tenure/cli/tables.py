"""Tables and bars that fit the terminal, 80 columns included.

Rich left alone squeezes every column of a wide table alike: at 80 columns `jobs list` lost
letters of its states, `failed list` folded its reason into a five-letter strip 40 lines long,
and `periodic list` stacked a date over three lines. Here each column says how it may give
way: an id or a state is printed whole, a name may be cut with "…" down to a floor, one text
column (an error, a reason) folds into the room left, and a column the table can spare is left
out first, named on stderr, when even that does not fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from rich.progress import ProgressColumn

Kind = Literal["whole", "cut", "fold"]
COMFORT = 24  # a shortened column's width before the others get more room


@dataclass(frozen=True)
class Column:
    header: str
    # whole: never shortened (ids, states, times, counts); cut: shortened with "…" down to
    # `floor`; fold: wraps onto more lines, down to `floor` wide
    kind: Kind = "whole"
    floor: int = 10
    # 0: always shown; otherwise left out when the table cannot fit, the highest first
    drop: int = 0
    justify: Literal["left", "right"] = "left"


@dataclass(frozen=True)
class Fitted:
    table: Table
    left_out: list[str]  # headers of the columns left out to fit


def edge(columns: int) -> int:
    """What the table's frame takes besides its cells: a space at each edge, two between."""
    return 2 * columns


def fit(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> Fitted:
    """A table of `rows` (plain text, printed literally) no wider than `width`."""
    shown = list(range(len(columns)))
    while True:
        cols = [columns[i] for i in shown]
        widths = _widths(cols, [[row[i] for i in shown] for row in rows], width - edge(len(cols)))
        droppable = [i for i in shown if columns[i].drop]
        if widths is not None or not droppable:
            break
        shown.remove(max(droppable, key=lambda i: columns[i].drop))
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    if widths is None:
        # Narrower than even the essential columns: every cell folds onto more lines. Cut or
        # left unwrapped, Rich squeezes such a table until whole cells, even rows, vanish.
        for c in cols:
            table.add_column(c.header, overflow="fold", justify=c.justify)
    for c, w in zip(cols, widths, strict=True) if widths is not None else ():
        table.add_column(
            c.header,
            width=w,
            no_wrap=c.kind != "fold",
            overflow="fold" if c.kind == "fold" else "ellipsis",
            justify=c.justify,
        )
    for row in rows:
        table.add_row(*(Text(row[i]) for i in shown))
    left_out = [columns[i].header for i in range(len(columns)) if i not in shown]
    return Fitted(table, left_out)


def _natural(column: Column, cells: Sequence[str]) -> int:
    lines = [line for cell in cells for line in cell.splitlines()]
    return max([cell_len(column.header), *(cell_len(line) for line in lines)])


def _floor(column: Column, natural: int) -> int:
    if column.kind == "whole":
        return natural
    return min(natural, max(column.floor, cell_len(column.header)))


def _widths(
    columns: Sequence[Column], cells: Sequence[Sequence[str]], room: int
) -> list[int] | None:
    natural = [_natural(c, [row[i] for row in cells]) for i, c in enumerate(columns)]
    if sum(natural) <= room:
        return natural
    floors = [_floor(c, n) for c, n in zip(columns, natural, strict=True)]
    if sum(floors) > room:
        return None
    # The room above the floors: first each folding column (the text worth reading), then
    # each cut one, up to a comfortable width; what is left in proportion to what they lack.
    widths = list(floors)
    for kind in ("fold", "cut"):
        for i, c in enumerate(columns):
            if c.kind == kind:
                widths[i] += min(room - sum(widths), max(0, min(natural[i], COMFORT) - widths[i]))
    lacking = [n - w for n, w in zip(natural, widths, strict=True)]
    spare, total = room - sum(widths), sum(lacking)
    for i in range(len(widths)):
        widths[i] += spare * lacking[i] // total if total else 0
    for i in sorted(range(len(widths)), key=lambda i: -lacking[i]):  # the rounding's leftover
        if sum(widths) < room and widths[i] < natural[i]:
            widths[i] += 1
    return widths


def print_table(
    console: Console, err: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]]
) -> None:
    """Print a fitted table on `console`; name any column left out on `err`."""
    fitted = fit(columns, rows, console.width)
    console.print(fitted.table)
    if fitted.left_out:
        err.print(
            Text(
                f"note: left out to fit {console.width} columns: {', '.join(fitted.left_out)} "
                "(a wider terminal shows them)",
                style="dim",
            ),
            soft_wrap=True,
        )


# -- progress bars ---------------------------------------------------------------------
NAME_MAX = 24


def short(text: str, limit: int) -> str:
    """`text` cut to `limit` cells with "…" (a name in a bar, never wrapped)."""
    if cell_len(text) <= limit:
        return text
    out = ""
    for ch in text:
        if cell_len(out + ch) > limit - 1:
            break
        out += ch
    return out + "…"


def bar_columns(width: int, name: str, total: int) -> tuple[str, list[ProgressColumn]]:
    """A batch's progress bar for a terminal `width` wide: the name as shown, and the
    columns. The name is plain text (a batch named "[bold]x" prints those brackets) cut to
    fit; the bar takes the room the counts leave, so "93/93" is never cut."""
    # imported here, not with the module: every command (the worker's start included)
    # imports the tables, and only `batch watch` draws a bar
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    counts = len(f"{total}/{total}")
    # "100%", the counts, "9,999.9 jobs/s", two clocks, the longest state, and the spaces
    fixed = 4 + counts + 14 + 8 + 8 + 9 + 7
    shown = short(name, max(8, min(NAME_MAX, width - fixed - 10)))
    bar = max(5, min(40, width - fixed - cell_len(shown) - 1))
    columns: list[ProgressColumn] = [
        TextColumn("{task.description}", markup=False, style="bold"),
        BarColumn(bar_width=bar),
        TaskProgressColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}", markup=False),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[state]}", markup=False),
    ]
    return shown, columns
