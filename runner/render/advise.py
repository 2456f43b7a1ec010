"""The advice table: every measured option ranked by its month for the workload, within the bound
first, each with its arithmetic in one line and where its figures came from; then why the first
beat the others, and what the arithmetic assumes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner.core.evidence import EvidenceFile
from runner.core.stats import fmt
from runner.core.typed_json import JsonObject, read_sections, where_set
from runner.costing.fleet import FleetAdvice, PackedSide, Packing
from runner.costing.purchase import PurchasePrice
from runner.costing.rows import Advice, advice_in
from runner.render.cost import UsedPrice
from runner.render.tables import accuracy_text, add_columns

VERDICT = {True: "yes", False: "NO", None: "unknown"}


@dataclass(kw_only=True)
class AdviseFile(EvidenceFile):
    """Advise evidence: the options ranked (`rows_schema`), the prices used and the Pricing API's
    queries, why the first beat the others, the files refused, and what the arithmetic assumes."""

    COMMAND = "advise"
    records: list[Advice] = field(default_factory=list)
    prices: list[UsedPrice] = field(default_factory=list)
    pricing_queries: list[JsonObject] = field(default_factory=list)
    # The purchase options the months were priced at (`--purchase`), each with its source.
    purchase: list[PurchasePrice] | None = where_set()
    rows_schema: int | None = None
    # `--load`: every option sized for the steady load, ranked; the answer in one line; N copies
    # packed on instances of several GPUs against N one-GPU instances.
    fleet: list[FleetAdvice] | None = where_set()
    answer: str | None = where_set()
    packing: list[Packing] | None = where_set()
    why: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: Mapping[str, object], where: object = None) -> Self:
        """Its rows read by runner.costing (their version checked), the rest by their types."""
        where = getattr(data, "source", None) if where is None else where
        rows = advice_in(data, where)  # type: ignore[arg-type]
        return cls(**read_sections(cls, data, where, apart=("records",)), records=rows)  # type: ignore[arg-type]


def workload_line(workload: JsonObject) -> str:
    bounds = []
    if workload.get("latency_bound_s") is not None:
        bounds.append(f"p95 end-to-end ≤ {workload['latency_bound_s']:g} s")
    if workload.get("ttft_bound_s") is not None:
        bounds.append(f"p95 time to first token ≤ {workload['ttft_bound_s']:g} s")
    if workload.get("slo"):
        objectives = " ".join(f"{key}:{value:g}" for key, value in workload["slo"])
        bounds.append(f"{workload.get('slo_share', 0.9):.0%} of requests within {objectives} ms")
    name = f"workload {workload['name']}: " if workload.get("name") else ""
    return (
        f"{name}{workload['requests_per_day']:,.0f} requests/day ({workload['shape']}, peak "
        f"{max(workload['per_hour']):,.0f}/h), {workload['input_tokens']} in / {workload['output_tokens']} out tokens, "
        + (", ".join(bounds) if bounds else "no latency bound")
    )


def load_line(config: JsonObject) -> str:
    workload = config["workload"]
    objectives = " ".join(f"{key}:{value:g}" for key, value in workload["slo"])
    name = f"workload {workload['name']}: " if workload.get("name") else ""
    return (
        f"{name}{config['load_rps']:g} requests/s, {workload['input_tokens']} in / {workload['output_tokens']} out "
        f"tokens, {workload.get('slo_share', 0.9):.0%} of requests within {objectives} ms"
    )


def money(usd: float | None, places: int = 2) -> str:
    return "-" if usd is None else f"${usd:,.{places}f}"


def side_text(side: PackedSide | None) -> str:
    if side is None:
        return "-"
    what = f"{side.instances} × {side.instance_type}"
    if side.usd_per_million_output is None:
        return f"{what}: {side.why}"
    return f"{what}, {money(side.usd_per_hour)}/h at {side.goodput_rps:.3g} good req/s: {money(side.usd_per_million_output)}/M"


def render_fleet(evidence: AdviseFile, out: Console) -> None:
    """`--load`: the options sized for the load, the answer, and packed against one-GPU instances."""
    table = Table(title=f"advise --load: {load_line(evidence.config)}")
    columns = ["rank", "option", "billing", "measured on", "how many", "$/h", "$/M out", "carries it", "how", "why"]
    add_columns(table, columns, left=("option", "billing", "measured on", "how many", "carries it", "how", "why"))
    for rank, row in enumerate(evidence.fleet or [], start=1):
        provenance = row.provenance
        table.add_row(
            str(rank),
            row.option,
            row.billing,
            f"[bold red]NOT AWS: {escape(provenance)}[/bold red]" if provenance else "AWS",
            escape(row.what if row.count is not None else "-"),
            money(row.usd_per_hour),
            money(row.usd_per_million_output),
            VERDICT[row.meets] + (" (EXTRAPOLATED)" if row.extrapolated else ""),
            escape("; ".join(part for part in (row.priced_at, row.arithmetic) if part)),
            escape(row.why),
        )
    out.print(table)
    out.print(f"[bold]{escape(evidence.answer or '')}[/bold]")
    if evidence.packing:
        packed = Table(title="packed on one instance of several GPUs against one-GPU instances, $/M at the SLO")
        add_columns(
            packed, ["copies", "packed", "one-GPU instances", "why"], left=("packed", "one-GPU instances", "why")
        )
        for row in evidence.packing:
            packed.add_row(
                str(row.copies), escape(side_text(row.packed)), escape(side_text(row.spread)), escape(row.why)
            )
        out.print(packed)
    for line in evidence.refused:
        out.print(f"[yellow]refused:[/yellow] {escape(line)}")
    for line in evidence.assumptions:
        out.print(f"[dim]assumes: {escape(line)}[/dim]")


def render_report(evidence: AdviseFile, out: Console, baseline: AdviseFile | None = None) -> None:
    if evidence.fleet is not None:
        render_fleet(evidence, out)
        return
    workload = evidence.config["workload"]
    table = Table(title=f"advise: {workload_line(workload)}")
    columns = [
        "rank", "option", "billing", "measured on", "$/month", "p95 s", "within bound", "accuracy", "arithmetic", "why"
    ]  # fmt: skip
    add_columns(table, columns, left=("option", "billing", "measured on", "within bound", "arithmetic", "why"))
    for rank, row in enumerate(evidence.records, start=1):
        provenance = row.provenance
        notes = "; ".join(row.notes or [])
        why = "; ".join(part for part in (row.extrapolated, row.why, notes) if part)
        table.add_row(
            str(rank),
            row.option,
            row.billing.value,
            f"[bold red]NOT AWS: {escape(provenance)}[/bold red]" if provenance else "AWS",
            fmt(row.monthly_usd, 2),
            fmt(row.p95_s, 2),
            VERDICT[row.meets]
            + (" (extrapolated)" if row.extrapolated else "")
            + (" (measured)" if row.measured_capacity else ""),
            accuracy_text(row.accuracy),
            escape(row.arithmetic),
            escape(why),
        )
    out.print(table)
    for line in evidence.why:
        out.print(escape(line))
    for line in evidence.refused:
        out.print(f"[yellow]refused:[/yellow] {escape(line)}")
    for line in evidence.assumptions:
        out.print(f"[dim]assumes: {escape(line)}[/dim]")
