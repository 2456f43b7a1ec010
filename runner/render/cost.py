"""The cost table: per backend and load level, the billing model it is priced by, where its figures
came from (AWS or not), its rate, a 24x7 month or a fixed monthly line, $ per million output
tokens with how it was computed, the break-even rate against Bedrock, and each price's source;
the purchase options beside on-demand where they apply (Spot, Savings Plans, Bedrock's tiers and
Provisioned Throughput), then each with what it prices, its source API and date, or why it is
absent; then, for the real-time endpoint, where a second instance starts paying for itself."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from catalog.prices import HOURS_PER_MONTH, Price
from runner.core.accuracy import Accuracy
from runner.core.evidence import EvidenceFile
from runner.core.stats import fmt
from runner.core.typed_json import FlatJson, JsonObject, flat, read_sections, reader_of, where_set
from runner.costing.prices import GIVEN, PriceRequest
from runner.costing.purchase import (
    BEDROCK_BATCH,
    BEDROCK_FLEX,
    BEDROCK_PRIORITY,
    BEDROCK_RESERVED,
    PROVISIONED_1_MONTH,
    PROVISIONED_6_MONTH,
    SAVINGS_PLAN_1YR,
    SAVINGS_PLAN_3YR,
    SPOT,
    PurchasePrice,
    purchases_by_item,
)
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
    # Beside on-demand: each priced item's purchase options, and the queries that found them (a
    # file of a runner before them has neither).
    purchase: list[PurchasePrice] | None = where_set()
    purchase_queries: list[JsonObject] | None = where_set()

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


# How the table's purchase column names each option.
PURCHASE_SHORT = {
    SPOT: "Spot",
    SAVINGS_PLAN_1YR: "SP 1y",
    SAVINGS_PLAN_3YR: "SP 3y",
    BEDROCK_BATCH: "batch",
    BEDROCK_FLEX: "flex",
    BEDROCK_PRIORITY: "priority",
    PROVISIONED_1_MONTH: "PT 1-mo",
    PROVISIONED_6_MONTH: "PT 6-mo",
    BEDROCK_RESERVED: "reserved",
}


def purchase_cell(row: CostRow, figures: list[PurchasePrice]) -> str:
    """The purchase options of a row beside its on-demand rate: each rate (an hourly row's $ per
    million output tokens at it, scaled from on-demand's), Spot's placement score; how many are
    absent (the lines below the table say why)."""
    parts = []
    for figure in figures:
        if figure.absent:
            continue
        name = PURCHASE_SHORT.get(figure.option, figure.option)
        if figure.usd_per_million_output is not None:
            parts.append(f"{name} ${figure.usd_per_million_input:g}/M in, ${figure.usd_per_million_output:g}/M out")
            continue
        if figure.usd_per_hour is None:
            continue
        unit = "/MU-h" if figure.option in (PROVISIONED_1_MONTH, PROVISIONED_6_MONTH) else "/h"
        text = f"{name} ${fmt(figure.usd_per_hour, 4)}{unit}"
        if unit == "/h" and row.usd_per_million_output is not None and row.usd_per_hour:
            text += f" = ${row.usd_per_million_output * figure.usd_per_hour / row.usd_per_hour:.2f}/M"
        if figure.placement_score is not None:
            text += f" (placement {figure.placement_score}/10)"
        parts.append(text)
    absent = sum(1 for figure in figures if figure.absent)
    if absent:
        parts.append(f"{absent} absent (below)")
    return " · ".join(parts) or "-"


def purchase_lines(evidence: CostFile) -> list[str]:
    """One line per purchase option of each priced item: its rate, what it prices (SKU, offering,
    Spot pool), its source API and date (live or a recorded snapshot) and how it was read; or why
    it is absent."""
    backends: dict[tuple[str, str, str], list[str]] = {}
    for row in evidence.records:
        if row.price is not None and row.region:
            names = backends.setdefault((row.price.service, row.price.item, row.region), [])
            if row.backend not in names:
                names.append(row.backend)
    lines = []
    for key, figures in purchases_by_item(evidence.purchase or []).items():
        who = f"{', '.join(backends.get(key, [])) or key[1]} ({key[1]}, {key[2]})"
        absent: dict[str, list[str]] = {}
        for figure in figures:
            if figure.absent:
                absent.setdefault(figure.absent, []).append(figure.label)
                continue
            if figure.usd_per_million_output is not None:
                rate = f"${figure.usd_per_million_input:g}/M in, ${figure.usd_per_million_output:g}/M out"
            else:
                rate = f"${fmt(figure.usd_per_hour, 4)}/h"
            when = f"{'API' if figure.live else 'snapshot'} {str(figure.as_of)[:10]}"
            lines.append(
                f"{who} {figure.label} {rate}: {figure.sku}; {figure.source_api}, {when}"
                + (f"; {figure.detail}" if figure.detail else "")
            )
        lines += [f"{who} {'; '.join(labels)}: absent: {why}" for why, labels in absent.items()]
    return lines


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
        "bought otherwise",
    ]
    add_columns(
        table,
        columns,
        left=(
            "backend",
            "billing",
            "measured on",
            "region",
            "billed by, at",
            "how",
            "price source",
            "bought otherwise",
        ),
    )
    for column in table.columns[:2]:
        column.no_wrap = True
    accuracy = evidence.accuracy
    purchases = purchases_by_item(evidence.purchase or [])
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
            purchase_cell(row, purchases.get((row.price.service, row.price.item, row.region or ""), []))
            if row.price is not None
            else "-",
        )
    out.print(table)
    for scaling in evidence.scaling:
        out.print(f"{scaling.backend}: second instance: {scaling.verdict}")
    lines = purchase_lines(evidence)
    if lines:
        out.print("purchase options beside on-demand (what each prices, its source API and date, or why it is absent):")
    for line in lines:
        out.print(f"  {escape(line)}")
    sources = {(p.price.source, str(p.price.as_of)[:10]) for p in evidence.prices}
    for source, as_of in sorted(sources, key=str):
        out.print(f"[dim]price source: {source} ({as_of})[/dim]")
