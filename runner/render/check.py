"""The check table: health, the plain answer and the tool call per backend."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner.render.tables import models


def _mark(value: bool | None) -> str:
    return "n/a" if value is None else ("pass" if value else "FAIL")


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
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
    for record in evidence["records"]:
        health = record.get("health", {})
        answer = (record.get("plain") or {}).get("answer", "")
        table.add_row(
            record["backend"],
            escape(served.get(record["backend"], "-")),
            _mark(health.get("healthy")),
            f"{health.get('waited_s', 0):.1f}",
            _mark(record.get("plain_ok")),
            " ".join(answer.split())[:40],
            _mark(record.get("tool_ok")) if "tool_note" not in record else f"n/a ({record['tool_note']})",
            str(record.get("tool_args_seen", "-")),
            record.get("error")
            or (record.get("plain") or {}).get("error")
            or (record.get("tool") or {}).get("error")
            or "",
        )
    out.print(table)
