"""The cost table: per backend and load level, the billing model it is priced by, where its figures
came from (AWS or not), its rate, a 24x7 month or a fixed monthly line, $ per million output
tokens with how it was computed, the break-even rate against Bedrock, and each price's source;
then, for the real-time endpoint, where a second instance starts paying for itself."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self

from rich.console import Console
from rich.table import Table

from catalog.prices import HOURS_PER_MONTH, Price
from runner.core.accuracy import Accuracy
from runner.core.evidence import EvidenceFile
from runner.core.stats import fmt
from runner.core.typed_json import FlatJson, JsonObject, flat, read_sections, reader_of
from runner.costing.prices import GIVEN, PriceRequest
from runner.costing.rows import CostRow, Scaling, cost_rows_in, scaling_in
from runner.render.tables import accuracy_text, add_columns


@dataclass(frozen=True)
class UsedPrice(FlatJson):
    """One price a cost or advise run used, in one entry: what was asked for, then the price found
    (its figures over the request's where both name one), its source and date."""

    request: PriceRequest = flat()
    price: Price = flat()

    @classmethod
    def from_json(cls, data: object, what: str) -> UsedPrice:
        return cls(reader_of(PriceRequest)(data, what), reader_of(Price)(data, what))


@dataclass(kw_only=True)
class CostFile(EvidenceFile):
    """Cost evidence: the prices used and the Pricing API's queries, the backends priced, the
    second-instance verdicts, the accuracy beside the figures, and the rows (`rows_schema`)."""

    COMMAND = "cost"
    records: list[CostRow] = field(default_factory=list)
    prices: list[UsedPrice] = field(default_factory=list)
    pricing_queries: list[JsonObject] = field(default_factory=list)
    scaling: list[Scaling] = field(default_factory=list)
    accuracy: dict[str, Accuracy] = field(default_factory=dict)
    rows_schema: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, object], where: object = None) -> Self:
        """Its rows read by runner.costing (their version checked), the rest by their types."""
        where = getattr(data, "source", None) if where is None else where
        rows = {"records": cost_rows_in(data, where), "scaling": scaling_in(data, where)}  # type: ignore[arg-type]
        return cls(**read_sections(cls, data, where, apart=tuple(rows)), **rows)  # type: ignore[arg-type]


# The billing models as the table names them (the evidence keeps catalog.backends.Billing's values).
BILLING_LABELS = {
    "instance-hours": "instance-h",
    "instance-hours-while-running": "instance-h while up",
    "job-instance-hours": "job instance-h",
    "serverless-seconds": "serverless s",
    "model-unit-minutes": "CMU-min",
    "per-token": "per token",
    "none": "not billed",
}


def rate_text(price: Price | None) -> str:
    """A price in its own billing unit."""
    if price is None:
        return "-"
    if price.usd_per_million_output is not None:
        return f"{price.usd_per_million_input}/M in, {price.usd_per_million_output}/M out"
    if price.usd_per_second is not None:
        return f"{price.usd_per_second:g}/s"
    if price.usd_per_unit_minute is not None:
        return f"{price.usd_per_unit_minute:g}/CMU-min"
    return fmt(price.usd_per_hour, 4) + "/h"


def source_text(row: CostRow) -> str:
    price = row.price
    if price is None:
        return row.note or ""
    if price.service == GIVEN:
        return f"given: {price.item}, not a list price"
    text = f"{'API' if price.live else 'offline'} {str(price.as_of)[:10]}"
    if price.verified is False:
        text += " UNVERIFIED"
    if price.note:
        text += f" ({price.note})"
    return text


def render_report(evidence: CostFile, out: Console, baseline: CostFile | None = None) -> None:
    table = Table(title=f"cost: on-demand prices ({evidence.config.get('pricing')}), {HOURS_PER_MONTH} h a month")
    columns = [
        "backend",
        "billing",
        "measured on",
        "region",
        "billed by, at",
        "$/month",
        "load",
        "output tok/s",
        "$ per M output",
        "accuracy",
        "how",
        "price source",
    ]
    add_columns(
        table, columns, left=("backend", "billing", "measured on", "region", "billed by, at", "how", "price source")
    )
    for column in table.columns[:2]:
        column.no_wrap = True
    accuracy = evidence.accuracy
    for row in evidence.records:
        monthly = row.usd_per_month_24x7
        monthly_text = f"{monthly:.0f} (24x7)" if monthly else "-"
        if row.fixed_usd_per_month is not None:
            monthly_text = f"{row.fixed_usd_per_month:.2f} fixed"
        how = [row.basis or row.note or ""]
        if row.usd_per_event is not None:
            how.insert(0, f"${row.usd_per_event:.4f} each:")
        if row.breakeven_vs_bedrock_tok_s is not None:
            how.append(f"beats Bedrock above {row.breakeven_vs_bedrock_tok_s:.0f} tok/s")
        provenance = row.provenance
        billed = row.billed_by
        table.add_row(
            row.backend,
            BILLING_LABELS.get(row.billing.value, row.billing.value),
            f"[bold red]NOT AWS: {provenance}[/bold red]" if provenance else "AWS",
            row.region or "-",
            f"{billed} ${rate_text(row.price)}" if billed else "-",
            monthly_text,
            row.level or "-",
            fmt(row.output_tok_s, 1),
            fmt(row.usd_per_million_output, 2),
            accuracy_text(accuracy.get(row.backend)),
            " ".join(part for part in how if part),
            source_text(row),
        )
    out.print(table)
    for scaling in evidence.scaling:
        out.print(f"{scaling.backend}: second instance: {scaling.verdict}")
    sources = {(p.price.source, str(p.price.as_of)[:10]) for p in evidence.prices}
    for source, as_of in sorted(sources, key=str):
        out.print(f"[dim]price source: {source} ({as_of})[/dim]")
