"""The quality table: per backend, accuracy with its 95 % Wilson interval, overall and per task
family, the errors (items with no answer at all, not graded) and what the failures were."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner.agent.quality import summarise
from runner.core.accuracy import Accuracy, QualitySummary
from runner.core.agent_evidence import QualityFile, QualityItem
from runner.core.stats import counts
from runner.render.tables import add_columns, models


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f} %"


def interval(entry: Accuracy) -> str:
    if entry.low is None or entry.high is None:
        return "-"
    return f"{entry.low * 100:.1f}-{entry.high * 100:.1f} %"


def summary_of(evidence: QualityFile) -> list[QualitySummary]:
    """The evidence's own summary; recomputed from its records when it has none."""
    if evidence.summary is not None:
        return evidence.summary
    records = evidence.records
    served = models(evidence)
    names = list(dict.fromkeys(r.backend for r in records))
    families = evidence.config.get("families") or list(dict.fromkeys(r.family for r in records))
    return summarise(records, [(n, served.get(n, "-")) for n in names], families)


def render_report(evidence: QualityFile, out: Console, baseline: QualityFile | None = None) -> None:
    config = evidence.config
    table = Table(
        title=f"quality: {config.get('items', '?')} generated items, seed {config.get('seed', '?')}; "
        "accuracy over the items answered, with its 95 % Wilson interval"
    )
    columns = ("backend", "model", "family", "correct", "graded", "errors", "accuracy", "95 % interval", "failures")
    add_columns(table, columns, left=("backend", "model", "family", "failures"))
    records: list[QualityItem] = evidence.records
    for row in summary_of(evidence):
        name = row.backend
        mine = [r for r in records if r.backend == name]
        entries = [("all", row.overall), *row.families.items()]
        for index, (family, entry) in enumerate(entries):
            failed = [r for r in mine if r.graded and not r.correct and family in ("all", r.family)]
            if entry.skipped:
                failures = f"skipped: {entry.skipped}"
            else:
                failures = counts([r.verdict or "-" for r in failed]) if failed else "-"
            table.add_row(
                name if index == 0 else "",
                escape(row.model) if index == 0 else "",
                family,
                str(entry.correct),
                str(entry.total),
                str(entry.errors or 0),
                percent(entry.accuracy),
                interval(entry),
                failures,
                end_section=index == len(entries) - 1,
            )
    out.print(table)
    first_error = next((r for r in records if r.verdict == "error"), None)
    if first_error is not None:
        out.print(f"[dim]first error ({first_error.backend}, {first_error.item}): {first_error.reason}[/dim]")
