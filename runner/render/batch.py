"""The batch table: per transform job its status, records, rates over its billable time, and price."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner.core.stats import fmt
from runner.measure.transform_job import BatchFile
from runner.render.tables import add_columns, models


def batch_table(evidence: BatchFile) -> Table:
    config = evidence.config
    table = Table(title=f"batch transform: {config.get('prompts')} prompts, {config.get('max_tokens')} tokens max")
    columns = [
        "backend",
        "model",
        "job",
        "status",
        "ok/records",
        "billable s",
        "records/s",
        "output tok/s",
        "instance",
        "$/h",
        "price $",
        "notes",
    ]
    add_columns(table, columns, left=("backend", "model", "job", "status", "instance", "notes"))
    table.columns[columns.index("job")].overflow = "fold"  # the whole name, to look the job up by
    served = models(evidence)
    records = evidence.records
    for job in evidence.jobs:
        notes = []
        if job.failure_reason:
            notes.append(job.failure_reason)
        first_error = next((r.error for r in records if r.backend == job.backend and r.error), None)
        if first_error:
            notes.append(f"first bad record: {first_error}")
        if job.status == "Stopping":
            notes.append("StopTransformJob sent")
        table.add_row(
            job.backend or "-",
            escape(served.get(job.backend or "", "-")),
            job.label,
            job.status or "-",
            f"{job.ok_records}/{job.records}",
            fmt(job.billable_s, 1),
            fmt(job.records_per_s, 3),
            fmt(job.output_tok_s, 1),
            f"{job.instances} x {job.instance_type}",
            fmt(job.usd_per_hour, 4),
            f"{job.price_usd:.4f}" if job.price_usd is not None else "-",
            "; ".join(notes),
        )
    return table


def render_report(evidence: BatchFile, out: Console, baseline: BatchFile | None = None) -> None:
    out.print(batch_table(evidence))
    for price in evidence.prices or []:
        where = f", {price.note}" if price.note else ""
        out.print(f"[dim]price: {price.item} {price.region}, {price.source} ({price.as_of}){where}[/dim]")
