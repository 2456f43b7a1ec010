"""The image builds table."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    table = Table(title="image builds")
    for column in ("backend", "region", "project", "status", "duration", "failed phase", "image"):
        table.add_column(column)
    for row in evidence.get("records", []):
        seconds = row.get("duration_s")
        duration = f"{seconds / 60:.1f} min" if seconds is not None else "-"
        failure = f"{row['failed_phase']}: {row.get('failure') or ''}" if row.get("failed_phase") else ""
        if row.get("last_log_lines"):
            failure += f" (log: {row['last_log_lines']})"
        table.add_row(
            row["backend"], row["region"], row["project"], row["status"], duration, failure, row.get("image") or ""
        )
    out.print(table)
