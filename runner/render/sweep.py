"""The sweep tables: per region what was found, ours or not, billing or not."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    for action in evidence.get("deleted") or []:
        out.print(f"{action['region']} {action['kind']} {action['id']}: {action['outcome']}")
    records = evidence.get("records", [])
    for region in evidence["config"]["regions"]:
        rows = [r for r in records if r["region"] == region]
        billing = sum(1 for r in rows if r["billing"])
        table = Table(title=f"{region}: {len(rows)} found, {billing} billing" if rows else f"{region}: nothing found")
        if not rows:
            out.print(table.title)
            continue
        for column in ("kind", "id", "state", "ours", "billing", "detail"):
            table.add_column(column)
        for row in rows:
            table.add_row(
                row["kind"],
                row["id"],
                row["state"],
                "ours" if row["ours"] else "not ours",
                "yes" if row["billing"] else "no",
                row["detail"],
            )
        out.print(table)
    for line in price_notes(records):
        out.print(f"[dim]note: {line}[/dim]")
    kept = [r for r in records if r.get("kept")]
    if kept:
        names = ", ".join(f"{r['region']} {r['id']}" for r in kept)
        out.print(
            f"[yellow]kept on purpose: {names}[/yellow] "
            "(the next deploy reuses these images, weights and graphs; sweep --delete --purge-images removes them)"
        )
    left = [r for r in records if r["billing"] and not r.get("kept")]
    if left:
        mine = sum(1 for r in left if r["ours"])
        out.print(f"[red]still billing: {len(left)} item(s), {mine} of them this app's[/red]")
    else:
        out.print("[green]nothing billing in the swept regions[/green]")


def price_notes(records: list[dict[str, Any]]) -> list[str]:
    """How the kinds that do not bill by the hour bill, once per kind found."""
    kinds = {r["kind"] for r in records}
    notes = []
    if "imported-model" in kinds:
        notes.append(
            "a Custom Model Import model bills per Custom Model Unit per minute, in 5-minute windows, only while "
            "a copy is active, and storage per CMU-month while it exists; python -m runner.model_import delete removes it"
        )
    if "import-job" in kinds:
        notes.append("an import job is not billed and cannot be stopped; its model bills once imported")
    if "bucket" in kinds:
        notes.append(
            "a bucket bills storage while it holds objects; sweep --delete empties ours before their stacks go"
        )
    return notes
