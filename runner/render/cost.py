"""The cost table: per backend and load level, $/h, a 24x7 month, $ per million output tokens and
the break-even rate against Bedrock, with each price's source."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from catalog.prices import HOURS_PER_MONTH
from runner.core.stats import fmt
from runner.render.tables import add_columns


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    table = Table(title=f"cost: on-demand prices ({evidence['config'].get('pricing')}), {HOURS_PER_MONTH} h a month")
    columns = [
        "backend",
        "region",
        "billed by",
        "$/hour",
        "24x7 $/month",
        "load",
        "output tok/s",
        "$ per M output",
        "beats Bedrock above (tok/s)",
        "price source",
    ]
    add_columns(table, columns, left=("backend", "region", "billed by", "price source"))
    for row in evidence.get("records", []):
        price = row.get("price") or {}
        if price.get("usd_per_million_output") is not None:
            rate = f"in {price['usd_per_million_input']}/M, out {price['usd_per_million_output']}/M"
        else:
            rate = fmt(row.get("usd_per_hour"), 4)
        level = row.get("level")
        source = (
            f"{'API' if price.get('live') else 'offline'} {str(price.get('as_of', ''))[:10]}"
            if price
            else row.get("note", "")
        )
        if price.get("note"):
            source += f" ({price['note']})"
        table.add_row(
            row["backend"],
            row.get("region") or "-",
            row.get("billed_by") or "-",
            rate,
            fmt(row.get("usd_per_month_24x7"), 0),
            level or "-",
            fmt(row.get("output_tok_s"), 1),
            fmt(row.get("usd_per_million_output"), 2),
            fmt(row.get("breakeven_vs_bedrock_tok_s"), 0),
            source,
        )
    out.print(table)
    sources = {(p.get("source"), str(p.get("as_of"))[:10]) for p in evidence.get("prices", [])}
    for source, as_of in sorted(sources, key=str):
        out.print(f"[dim]price source: {source} ({as_of})[/dim]")
