"""`python -m runner.cost [BENCH_EVIDENCE...]`: what each backend costs, per hour and per token.

Prices come from the Pricing API for the region each backend ran in (the dated offline table in
`catalog/prices.py` when the API cannot be reached, or with `--offline`), and every price used
is kept in the evidence with its source and date. Per backend: $/hour, a 24x7 month
(730 hours), and $ per million output tokens at each load level measured in the given bench
evidence: hourly price / (output tokens per second x 3600) x 10^6. For Bedrock the per-token
figure adds the input tokens each output token took in the measured requests. An instance billed
by the hour beats Bedrock once it sustains more output tokens per second than its hourly price
buys on Bedrock; that break-even rate is given per backend.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from catalog import BACKENDS, BackendKind
from catalog.prices import BEDROCK, EC2, HOURS_PER_MONTH, PRICING_API_REGION, SAGEMAKER, Price
from runner.aws import boto_client, credentials_configured
from runner.errors import RunnerError
from runner.evidence import DEFAULT_RESULTS, Evidence, load
from runner.pricing import PriceList, PriceRequest, bedrock_price_name, price_all
from runner.session import console, main_guard
from runner.stats import fmt, median
from runner.tables import print_report

EC2_KINDS = {BackendKind.EC2_VLLM.value, BackendKind.EC2_NEURON.value}
REFERENCE_BEDROCK = next(spec for spec in BACKENDS if spec.kind is BackendKind.BEDROCK)


def usd_per_million_output(usd_per_hour: float, output_tok_s: float) -> float:
    """An instance's hourly price spread over the output tokens it makes in that hour."""
    return usd_per_hour / (output_tok_s * 3600) * 1_000_000


def bedrock_per_million_output(price: Price, input_per_output: float | None) -> float:
    """Bedrock's output price plus the input tokens each output token took (when measured)."""
    extra = (input_per_output or 0.0) * (price.usd_per_million_input or 0.0)
    return (price.usd_per_million_output or 0.0) + extra


def breakeven_tok_s(usd_per_hour: float, bedrock_usd_per_million_output: float) -> float:
    """Sustained output tokens/s above which a 24x7 instance costs less than Bedrock per token."""
    return usd_per_hour / 3600 / (bedrock_usd_per_million_output / 1_000_000)


@dataclass
class LevelFigures:
    """What one backend sustained at one load level, from the bench records."""

    level: str
    requests: int
    output_tok_s: float | None
    method: str
    input_per_output: float | None


def load_levels(evidence: dict[str, Any]) -> dict[str, list[LevelFigures]]:
    """Per backend and load level: output tokens/s. One request at a time: the median of the
    requests' own rates, as the survey priced them; any other level: all output tokens over the
    level's wall time (the bench sweep's own figure)."""
    from runner.load import level_groups, level_summary

    levels: dict[str, list[LevelFigures]] = defaultdict(list)
    for (backend, label), records in level_groups(evidence).items():
        done = [r for r in records if r.get("ok")]
        if not done:
            continue
        prompt = [r.get("prompt_tokens") for r in done]
        output = sum(r.get("output_tokens") or 0 for r in done)
        ratio = sum(prompt) / output if output and all(isinstance(p, int) for p in prompt) else None
        if label == "1 at a time":
            rate, method = median(r.get("tokens_per_s") for r in done), "median of single requests"
        else:
            rate, method = level_summary(records)["output_tok_s"], "all output tokens / level wall time"
        levels[backend].append(LevelFigures(label, len(done), rate, method, ratio))
    return levels


def price_request(backend: dict[str, Any]) -> PriceRequest | None:
    """What a backend (as an evidence file lists it) is billed by; None when AWS does not bill it.

    A known backend's name given with `--endpoint NAME=URL` (the survey's own manual forward:
    `--endpoint g6=http://127.0.0.1:8001`) is that backend on its AWS instance, so it is priced
    as the catalog's entry, in its first region when the evidence names none."""
    kind = backend.get("kind")
    output = backend.get("stack_output") or {}
    catalog = backend.get("catalog") or {}
    if kind == BackendKind.OPENAI.value and catalog.get("kind") in (*EC2_KINDS, BackendKind.SAGEMAKER.value):
        kind = catalog["kind"]
    region = backend.get("region") or output.get("region") or next(iter(catalog.get("regions") or []), None)
    instance_type = output.get("instance_type") or catalog.get("instance_type")
    if kind in EC2_KINDS and instance_type and region:
        return PriceRequest(EC2, instance_type, region)
    if kind == BackendKind.SAGEMAKER.value and instance_type and region:
        return PriceRequest(SAGEMAKER, instance_type, region)
    if kind == BackendKind.BEDROCK.value:
        return PriceRequest(BEDROCK, bedrock_price_name(backend.get("model_id", "")), region or PRICING_API_REGION)
    return None


def catalog_backends() -> list[dict[str, Any]]:
    """With no evidence: every AWS backend of the catalog, in its first region."""
    return [
        {
            "name": spec.name,
            "kind": spec.kind.value,
            "region": spec.regions[0] if spec.regions else None,
            "model_id": spec.model_id,
            "catalog": {"instance_type": spec.instance_type},
        }
        for spec in BACKENDS
        if spec.kind not in (BackendKind.LOCAL, BackendKind.OPENAI)
    ]


def read_bench_evidence(path: Path) -> dict[str, Any]:
    data = load(path)
    if data["command"] != "bench":
        raise RunnerError(
            f"{path} is {data['command']} evidence; runner.cost reads bench evidence (written by python -m runner.bench)"
        )
    return data


def cost_rows(
    source: str,
    backends: list[dict[str, Any]],
    levels: dict[str, list[LevelFigures]],
    prices: dict[PriceRequest, Price],
) -> list[dict[str, Any]]:
    """One row per backend and measured load level (one row without figures when none was measured)."""
    bedrock_reference = prices.get(
        PriceRequest(BEDROCK, bedrock_price_name(REFERENCE_BEDROCK.model_id), PRICING_API_REGION)
    )
    rows = []
    for backend in backends:
        request = price_request(backend)
        price = prices.get(request) if request else None
        base = {
            "evidence": source,
            "backend": backend["name"],
            "region": request.region if request else backend.get("region"),
            "billed_by": request.item if request else None,
            "price": price.to_json() if price else None,
            "usd_per_hour": price.usd_per_hour if price else None,
            "usd_per_month_24x7": price.usd_per_hour * HOURS_PER_MONTH if price and price.usd_per_hour else None,
        }
        if request is None:
            rows.append(base | {"note": "not billed by AWS"})
            continue
        if price is None:
            rows.append(base | {"note": "no price found"})
            continue
        measured = levels.get(backend["name"]) or [LevelFigures(0, 0, None, "not measured", None)]
        for figures in measured:
            row = base | {
                "level": figures.level or None,
                "figures": asdict(figures),
                "output_tok_s": figures.output_tok_s,
            }
            if price.per_token:
                row["usd_per_million_output"] = bedrock_per_million_output(price, figures.input_per_output)
                row["basis"] = "output price" + (
                    " + measured input per output token" if figures.input_per_output else ""
                )
            else:
                if figures.output_tok_s:
                    row["usd_per_million_output"] = usd_per_million_output(price.usd_per_hour, figures.output_tok_s)
                if bedrock_reference is not None:
                    reference = bedrock_per_million_output(bedrock_reference, figures.input_per_output)
                    row["breakeven_vs_bedrock_tok_s"] = breakeven_tok_s(price.usd_per_hour, reference)
                    row["bedrock_usd_per_million_output"] = reference
            rows.append(row)
    return rows


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.cost", description=__doc__.splitlines()[0])
    parser.add_argument("evidence", nargs="*", type=Path, help="bench evidence files (default: price the catalog)")
    parser.add_argument("--offline", action="store_true", help="never call the Pricing API: use the offline table")
    aws = parser.add_mutually_exclusive_group()
    aws.add_argument("--aws", dest="aws", action="store_true", default=None, help="use AWS even without credentials")
    aws.add_argument("--no-aws", dest="aws", action="store_false", help="never call AWS (same as --offline)")
    parser.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS, help="where evidence files go")
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # Every input is read before anything is priced or written: a bad file stops with nothing half-done.
    inputs = [(str(path), read_bench_evidence(path)) for path in args.evidence]
    use_api = not args.offline and (args.aws if args.aws is not None else credentials_configured())
    evidence = Evidence(
        "cost", {"evidence": [p for p, _ in inputs], "pricing": "api" if use_api else "offline"}, args.results_dir
    )
    if not use_api:
        why = "--offline" if args.offline else "--no-aws" if args.aws is False else "no AWS credentials configured"
        evidence.notice(f"prices from the offline table ({why})")
    groups = [(path, data.get("backends", []), load_levels(data)) for path, data in inputs] or [
        ("catalog", catalog_backends(), {})
    ]
    requests = [r for _, backends, _ in groups for r in map(price_request, backends) if r is not None]
    requests.append(PriceRequest(BEDROCK, bedrock_price_name(REFERENCE_BEDROCK.model_id), PRICING_API_REGION))
    price_list = PriceList(boto_client("pricing", PRICING_API_REGION, 30)) if use_api else None
    console.print(
        f"[dim]pricing {len(set(requests))} item(s) {'from the Pricing API' if use_api else 'offline'} …[/dim]"
    )
    prices, notices = price_all(requests, price_list)
    for line in notices:
        console.print(f"[yellow]note:[/yellow] {line}")
        evidence.notice(line)
    evidence.data["prices"] = [asdict(r) | p.to_json() for r, p in prices.items()]
    evidence.data["pricing_queries"] = price_list.queries if price_list else []
    evidence.data["backends"] = [b for _, backends, _ in groups for b in backends]
    for path, backends, levels in groups:
        for row in cost_rows(path, backends, levels, prices):
            evidence.add_record(row)
    path = evidence.finish()
    print_report(evidence.data)
    print(f"evidence: {path}")
    return 0 if any(r.get("usd_per_hour") or r.get("price") for r in evidence.data["records"]) else 1


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
    for column in columns:
        table.add_column(
            column, justify="left" if column in ("backend", "region", "billed by", "price source") else "right"
        )
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


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
