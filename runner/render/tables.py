"""Renders an evidence file's tables. Each command's table is a module of this package named for
the command (`runner/render/bench.py` for bench evidence), found by the evidence's `command`
field, so adding a command adds one module here and changes nothing else."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from runner.core.accuracy import Accuracy
from runner.core.backend_entries import entries_of
from runner.core.errors import RunnerError

stdout = Console(highlight=False, soft_wrap=False, width=200)


def add_columns(table: Table, columns: list[str] | tuple[str, ...], left: tuple[str, ...]) -> None:
    """The columns of a table: the names in `left` aligned left (text), every other one right (figures)."""
    for column in columns:
        table.add_column(column, justify="left" if column in left else "right")


Renderer = Callable[[dict[str, Any], Console, dict[str, Any] | None], None]


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


# The commands whose evidence is its requests' (or tasks', items') records: with none, the
# evidence measured nothing, and an empty table would only hide that.
MEASURED_COMMANDS = ("bench", "check", "ask", "counting", "orchestrator", "quality")
# Where such evidence keeps what it measured: requests, agent traffic's tasks, quality's summary.
MEASURED_KEYS = ("records", "tasks", "summary")


def nothing_measured(evidence: dict[str, Any]) -> str | None:
    """The line that stands in for the tables of evidence that measured nothing (None: it did)."""
    if evidence.get("command") not in MEASURED_COMMANDS or any(evidence.get(key) for key in MEASURED_KEYS):
        return None
    if evidence.get("interrupted"):
        why = "interrupted before the first record"
    else:
        why = "no request was recorded" + (" (the notes say why)" if evidence.get("notices") else "")
    return f"nothing measured in this {evidence['command']} evidence: {why}"


def print_report(evidence: dict[str, Any], baseline: dict[str, Any] | None = None, *, notices: bool = True) -> None:
    render = renderer_for(evidence["command"])
    empty = nothing_measured(evidence)
    if empty:
        stdout.print(f"[yellow]{empty}[/yellow]")
    else:
        render(evidence, stdout, baseline)
    for line in evidence.get("notices", []) if notices else []:
        stdout.print(f"[dim]note: {line}[/dim]")
    if evidence.get("interrupted"):
        stdout.print("[yellow]interrupted: the table shows what was measured before Ctrl-C[/yellow]")


def models(evidence: dict[str, Any]) -> dict[str, str]:
    """Per backend, the model column of every table: rows are not all the same weights, and the
    tables say so (the model, its precision and lane where the stack output says them)."""
    # Plain text: a rich table cell escapes it (a lane's `[open]` is not a style).
    return {b.name: b.model_label or b.model_id or "-" for b in entries_of(evidence)}


def accuracy_text(accuracy: Accuracy | None) -> str:
    """`62 % (52-71)`: accuracy and its 95 % Wilson interval, in percent; `-` when not measured."""
    if accuracy is None or accuracy.accuracy is None:
        return "-"
    low, high = accuracy.low, accuracy.high
    interval = f" ({low * 100:.0f}-{high * 100:.0f})" if low is not None and high is not None else ""
    return f"{accuracy.accuracy * 100:.0f} %{interval}"
