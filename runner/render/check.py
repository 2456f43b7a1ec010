"""The check table: health, the plain answer and the tool call per backend."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner.core.agent_evidence import CheckFile
from runner.render.tables import models


def _mark(value: bool | None) -> str:
    return "n/a" if value is None else ("pass" if value else "FAIL")


def render_report(evidence: CheckFile, out: Console, baseline: CheckFile | None = None) -> None:
    table = Table(title="check: health, one plain answer, one tool call")
    served = models(evidence)
    for column in (
        "backend",
        "model",
        "healthy",
        "waited s",
        "plain answer",
        "answer",
        "tool call",
        "tool args",
        "error",
    ):
        table.add_column(column)
    for result in evidence.records:
        answer = result.plain.answer if result.plain else ""
        table.add_row(
            result.backend,
            escape(served.get(result.backend, "-")),
            _mark(result.health.healthy),
            f"{result.health.waited_s:.1f}",
            _mark(result.plain_ok),
            " ".join(answer.split())[:40],
            _mark(result.tool_ok) if result.tool_note is None else f"n/a ({result.tool_note})",
            str(result.tool_args_seen if result.tool_args_seen is not None else "-"),
            result.error
            or (result.plain.error if result.plain else None)
            or (result.tool.error if result.tool else None)
            or "",
        )
    out.print(table)
