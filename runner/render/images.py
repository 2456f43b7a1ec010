"""The image builds table."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from runner.cloud.image_builds import ImagesFile


def render_report(evidence: ImagesFile, out: Console, baseline: ImagesFile | None = None) -> None:
    table = Table(title="image builds")
    for column in ("backend", "region", "project", "status", "duration", "failed phase", "image"):
        table.add_column(column)
    for row in evidence.records:
        seconds = row.duration_s
        duration = f"{seconds / 60:.1f} min" if seconds is not None else "-"
        failure = f"{row.failed_phase}: {row.failure or ''}" if row.failed_phase else ""
        if row.last_log_lines:
            failure += f" (log: {row.last_log_lines})"
        table.add_row(row.backend, str(row.region), str(row.project), row.status, duration, failure, row.image or "")
    out.print(table)
