"""The counting table: per backend and mode, right answers, right filters, and how each answer was
read."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner.core.agent_evidence import CountingFile, CountingRun
from runner.core.stats import counts, fmt, median
from runner.render.tables import add_columns, models


def render_report(evidence: CountingFile, out: Console, baseline: CountingFile | None = None) -> None:
    config = evidence.config
    mode = config.get("tools", "filter")
    table = Table(title=f"counting ({mode}): {config['question']} expected {config['expected']}")
    columns = (
        "backend",
        "model",
        "runs",
        "correct",
        "right filter",
        "passed",
        "errors",
        "median s",
        "graded by",
        "filters sent",
    )
    add_columns(table, columns, left=("backend", "model", "graded by", "filters sent"))
    served = models(evidence)
    grouped: dict[str, list[CountingRun]] = {}
    for record in evidence.records:
        grouped.setdefault(record.backend, []).append(record)
    for name, records in grouped.items():
        n = len(records)
        correct = sum(1 for r in records if r.correct)
        right = sum(1 for r in records if r.right_filter)
        passed = sum(1 for r in records if r.passed)
        errors = sum(1 for r in records if r.error)
        filters = [f for r in records for f in r.filters_sent] or (["none"] if records else [])
        table.add_row(
            name,
            escape(served.get(name, "-")),
            str(n),
            f"{correct}/{n}",
            f"{right}/{n}" if mode == "filter" else "-",
            f"{passed}/{n}",
            str(errors),
            fmt(median(r.seconds for r in records if r.seconds is not None), 2),
            counts([r.grading_route for r in records if r.grading_route]),
            counts(filters),
        )
    out.print(table)
