"""The up tables: per backend launch to ready beside the survey's, and what bills now."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from runner.cloud import billing


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    if "extend_hours" in evidence.get("config", {}):
        table = Table(title=f"up --extend {evidence['config']['extend_hours']:g} h")
        for column in ("stack", "region", "outcome", "expires at"):
            table.add_column(column)
        for record in evidence["records"]:
            table.add_row(record["stack"], record["region"], record["outcome"] + (f": {record['error']}" if record.get("error") else ""), record["expires_at"] or "-")  # fmt: skip
        out.print(table)
        return
    table = Table(title="up: launch to ready (survey: run 2 of 2026-10-05)")
    columns = (
        "backend", "outcome", "region", "zone", "attempts", "launched", "ready", "min", "survey min", "weights s",
        "survey weights s",
    )  # fmt: skip
    for column in columns:
        table.add_column(column)
    for record in evidence["records"]:
        regions = " → ".join(a["region"] for a in record["attempts"]) or "-"
        outcome = record["outcome"] + (f": {record['reason']}" if record.get("reason") else "")
        if record.get("held_at_zero"):
            outcome += f" (was held at zero: {record['held_at_zero']})"
        table.add_row(
            record["backend"],
            outcome,
            record.get("region") or "-",
            record.get("zone") or "-",
            regions,
            record.get("launched_at") or "-",
            record.get("ready_at") or "-",
            str(record.get("launch_to_ready_min") or "-"),
            str(record.get("survey_launch_to_ready_min") or "-"),
            str(record.get("weights_load_s") or "-"),
            str(record.get("survey_weights_load_s") or "-"),
        )
    out.print(table)
    billing.render(evidence.get("billing") or [], out, evidence.get("config", {}).get("expires_at"))
