"""The batch table: per transform job its status, records, rates over its billable time, and price."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner.core.stats import fmt
from runner.render.tables import add_columns, models


def batch_table(evidence: dict[str, Any]) -> Table:
    config = evidence.get("config", {})
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
    records = evidence.get("records", [])
    for job in evidence.get("jobs", []):
        notes = []
        if job.get("failure_reason"):
            notes.append(job["failure_reason"])
        first_error = next((r["error"] for r in records if r.get("backend") == job["backend"] and r.get("error")), None)
        if first_error:
            notes.append(f"first bad record: {first_error}")
        if job.get("status") == "Stopping":
            notes.append("StopTransformJob sent")
        price = job.get("price_usd")
        table.add_row(
            job["backend"],
            escape(served.get(job["backend"], "-")),
            job["job_name"],
            job.get("status") or "-",
            f"{job.get('ok_records', 0)}/{job.get('records', 0)}",
            fmt(job.get("billable_s"), 1),
            fmt(job.get("records_per_s"), 3),
            fmt(job.get("output_tok_s"), 1),
            f"{job.get('instance_count', 1)} x {job.get('instance_type')}",
            fmt(job.get("usd_per_hour"), 4),
            f"{price:.4f}" if price is not None else "-",
            "; ".join(notes),
        )
    return table


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    out.print(batch_table(evidence))
    for price in evidence.get("prices") or []:
        where = f", {price['note']}" if price.get("note") else ""
        out.print(f"[dim]price: {price['item']} {price['region']}, {price['source']} ({price['as_of']}){where}[/dim]")
