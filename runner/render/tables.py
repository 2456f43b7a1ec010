"""Renders an evidence file's tables. Each command's table is a module of this package named for
the command (`runner/render/bench.py` for bench evidence), found by the evidence's `command`
field, so adding a command adds one module here and changes nothing else. A renderer takes the
file typed (its command's `EvidenceFile` class, which the module imports), never the JSON."""

from __future__ import annotations

import contextlib
import importlib
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console, ConsoleDimensions, Group, RenderableType
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from runner.core.accuracy import Accuracy
from runner.core.errors import RunnerError
from runner.core.evidence import EvidenceFile

# stdout's width when it is not a terminal (a pipe, a file, CI) and COLUMNS does not say: wide
# enough for the bench tables without wrapping, narrow enough to read in a log viewer.
PLAIN_WIDTH = 120
# A text column whose widest cell is at most this long keeps it on one line (a backend, a level).
SHORT_TEXT = 24


class TerminalOnly:
    """What only the terminal shows (a run's block): the report page has its own form of it, and
    drops it."""


class SummaryTable(Table):
    """A table whose every figure a block printed above it already holds: where it cannot fit the
    terminal, one line says so instead of giving the figures a second time."""


class Tables(Console):
    """stdout, where the tables go: as wide as the terminal; not a terminal, COLUMNS or PLAIN_WIDTH.
    A table is drawn to fit that width with every figure whole (figure columns keep their width;
    text columns wrap); one that cannot fit is drawn as a block per row, a figure a line."""

    @property
    def size(self) -> ConsoleDimensions:
        if self.is_terminal:
            return super().size
        columns = os.environ.get("COLUMNS", "")
        return ConsoleDimensions(int(columns) if columns.isdigit() and int(columns) > 0 else PLAIN_WIDTH, 25)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(fitted(o, self) if isinstance(o, Table) else o for o in objects), **kwargs)


stdout = Tables(highlight=False, soft_wrap=False)


def fitted(table: Table, console: Console) -> RenderableType:
    """The table with column widths that fit the console and cut no figure: each figure column
    (right-aligned) and each short text column as wide as its widest cell (a header wraps instead),
    the long text columns (notes, model names) given the rest, the widest narrowed first, none
    below its longest word. A table that cannot fit so is drawn as a block per row (a
    SummaryTable: one line, since a block above holds its figures)."""
    options = console.options.update_width(console.width)
    fixed: list[bool] = []
    shortest: list[int] = []
    longest: list[int] = []
    for column in table.columns:
        header = Measurement.get(console, options, column.header)
        cells = [Measurement.get(console, options, cell) for cell in column.cells]
        widest = max((m.maximum for m in cells), default=0)
        fixed.append(column.justify == "right" or widest <= SHORT_TEXT)
        if fixed[-1]:
            shortest.append(max(widest, header.minimum))
            longest.append(shortest[-1])
        else:
            shortest.append(max([header.minimum, *(m.minimum for m in cells)]))
            longest.append(max(widest, header.maximum))
    padding = sum(table._get_padding_width(column._index) for column in table.columns)
    room = console.width - table._extra_width - padding
    if sum(shortest) > room:
        return too_wide(table, console, sum(shortest) + padding + table._extra_width)
    widths = list(longest)
    while sum(widths) > room:
        # Narrow the widest text column that can still give, to the next width down or as needed.
        narrowable = [i for i, w in enumerate(widths) if not fixed[i] and w > shortest[i]]
        widest = max(narrowable, key=lambda i: widths[i])
        others = [widths[i] for i in narrowable if widths[i] < widths[widest]]
        widths[widest] = max([shortest[widest], *others, widths[widest] - (sum(widths) - room)])
    for column, value in zip(table.columns, widths, strict=True):
        column.width = value
    return table


def too_wide(table: Table, console: Console, needed: int) -> RenderableType:
    if isinstance(table, SummaryTable):
        return Text(
            f"(the table needs {needed} columns, {console.width} here: the blocks above hold its figures; "
            f"COLUMNS={needed} shows it)",
            style="dim",
        )
    return row_blocks(table)


def row_blocks(table: Table) -> RenderableType:
    """A table too wide to fit, as a block per row: its text columns as the block's title, then a
    line per other column, `header: value`."""
    titles = [i for i, column in enumerate(table.columns) if column.justify != "right"][:3]
    headers = [Text.from_markup(c.header).plain if isinstance(c.header, str) else str(c.header) for c in table.columns]
    cells = [list(column.cells) for column in table.columns]
    parts: list[RenderableType] = []
    if table.title:
        parts.append(Text.from_markup(str(table.title), style="bold") if isinstance(table.title, str) else table.title)
    for index in range(table.row_count):
        title = " · ".join(str(cells[i][index]) for i in titles if str(cells[i][index]).strip())
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True, style="dim")
        grid.add_column()
        for column, header in enumerate(headers):
            value = cells[column][index]
            if column in titles or not str(value).strip():
                continue
            grid.add_row(escape(header), value)
        parts += [Text(""), Text.from_markup(f"[bold]{title}[/bold]"), grid]
    return Group(*parts)


def add_columns(table: Table, columns: list[str] | tuple[str, ...], left: tuple[str, ...]) -> None:
    """The columns of a table: the names in `left` aligned left (text), every other one right (figures)."""
    for column in columns:
        table.add_column(column, justify="left" if column in left else "right")


Renderer = Callable[[Any, Console, Any], None]


def renderer_for(command: str) -> Renderer:
    """`runner.render.<command>.render_report`; a command without one is a one-line error."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", str(command)):
        raise RunnerError(f"no report for command {command!r}")
    try:
        module = importlib.import_module(f"runner.render.{command}")
    except ModuleNotFoundError:
        raise RunnerError(f"no report for command {command!r}") from None
    render = getattr(module, "render_report", None)
    if render is None:
        raise RunnerError(f"no report for command {command!r}")
    return render


def typed(data: Mapping[str, object], where: object = None) -> EvidenceFile:
    """An evidence file read back as its command's file class (the class its renderer imports);
    a malformed part is one line naming it and the file."""
    command = str(data.get("command"))
    with contextlib.suppress(RunnerError):
        renderer_for(command)  # its module imports (and so registers) the command's file class
    return EvidenceFile.of(command).from_json(data, where)


# The commands whose evidence is its requests' (or tasks', items') records: with none, the
# evidence measured nothing, and an empty table would only hide that.
MEASURED_COMMANDS = ("bench", "check", "ask", "counting", "orchestrator", "quality")
# Where such evidence keeps what it measured: requests, agent traffic's tasks, quality's summary,
# an inference component's scaling (bench --from-zero, --step-load).
MEASURED_SECTIONS = ("records", "tasks", "summary", "from_zero", "step_load")


def nothing_measured(evidence: EvidenceFile) -> str | None:
    """The line that stands in for the tables of evidence that measured nothing (None: it did)."""
    if evidence.command not in MEASURED_COMMANDS or any(getattr(evidence, s, None) for s in MEASURED_SECTIONS):
        return None
    if evidence.interrupted:
        why = "interrupted before the first record"
    else:
        why = "no request was recorded" + (" (the notes say why)" if evidence.notices else "")
    return f"nothing measured in this {evidence.command} evidence: {why}"


def print_report(evidence: EvidenceFile, baseline: EvidenceFile | None = None, *, notices: bool = True) -> None:
    render = renderer_for(evidence.command)
    empty = nothing_measured(evidence)
    if empty:
        stdout.print(f"[yellow]{empty}[/yellow]")
    else:
        render(evidence, stdout, baseline)
    for line in evidence.notices if notices else []:
        stdout.print(f"[dim]note: {line}[/dim]")
    if evidence.interrupted:
        stdout.print("[yellow]interrupted: the table shows what was measured before Ctrl-C[/yellow]")


def models(evidence: EvidenceFile) -> dict[str, str]:
    """Per backend, the model column of every table: rows are not all the same weights, and the
    tables say so (the model, its precision and lane where the stack output says them)."""
    # Plain text: a rich table cell escapes it (a lane's `[open]` is not a style).
    return {b.name: b.model_label or b.model_id or "-" for b in evidence.backends}


def accuracy_text(accuracy: Accuracy | None) -> str:
    """`62 % (52-71)`: accuracy and its 95 % Wilson interval, in percent; `-` when not measured."""
    if accuracy is None or accuracy.accuracy is None:
        return "-"
    low, high = accuracy.low, accuracy.high
    interval = f" ({low * 100:.0f}-{high * 100:.0f})" if low is not None and high is not None else ""
    return f"{accuracy.accuracy * 100:.0f} %{interval}"
