"""The sweep tables: per region what was found, ours or not, billing or not."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from runner.cloud.cleanup.leftovers import Found
from runner.core.evidence import EvidenceFile
from runner.core.typed_json import JsonObject, where_set


@dataclass(kw_only=True)
class SweepFile(EvidenceFile):
    """Sweep evidence: what is left after it (`records`), what was found first, what could not be
    read (the listing is incomplete there), and with --delete each removal's outcome."""

    COMMAND = "sweep"
    records: list[Found] = field(default_factory=list)
    found: list[Found] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Each removal as runner.cloud.cleanup.removal reports it (region, kind, id, outcome).
    deleted: list[JsonObject] | None = where_set()


def render_report(evidence: SweepFile, out: Console, baseline: SweepFile | None = None) -> None:
    for action in evidence.deleted or []:
        out.print(f"{action['region']} {action['kind']} {action['id']}: {action['outcome']}")
    records = evidence.records
    for region in evidence.config["regions"]:
        rows = [r for r in records if r.region == region]
        billing = sum(1 for r in rows if r.billing)
        table = Table(title=f"{region}: {len(rows)} found, {billing} billing" if rows else f"{region}: nothing found")
        if not rows:
            out.print(table.title)
            continue
        for column in ("kind", "id", "state", "ours", "billing", "detail"):
            table.add_column(column)
        for row in rows:
            table.add_row(
                row.kind,
                row.id,
                row.state,
                "ours" if row.ours else "not ours",
                "yes" if row.billing else "no",
                row.detail,
            )
        out.print(table)
    for line in price_notes(records):
        out.print(f"[dim]note: {line}[/dim]")
    kept = [r for r in records if r.kept]
    if kept:
        names = ", ".join(f"{r.region} {r.id}" for r in kept)
        out.print(
            f"[yellow]kept on purpose: {names}[/yellow] "
            "(the next deploy reuses these images, weights and graphs; sweep --delete --purge-images removes them)"
        )
    left = [r for r in records if r.billing and not r.kept]
    if left:
        mine = sum(1 for r in left if r.ours)
        out.print(f"[red]still billing: {len(left)} item(s), {mine} of them this app's[/red]")
    else:
        out.print("[green]nothing billing in the swept regions[/green]")


def price_notes(records: list[Found]) -> list[str]:
    """How the kinds that do not bill by the hour bill, once per kind found."""
    kinds = {r.kind for r in records}
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
