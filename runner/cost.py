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
from dataclasses import asdict
from pathlib import Path

from catalog.prices import BEDROCK, PRICING_API_REGION
from runner.cli.options import add_aws_switch, add_results_dir
from runner.cli.session import main_guard
from runner.cloud.aws import boto_client, credentials_configured
from runner.cloud.pricing import (
    REFERENCE_BEDROCK,
    PriceList,
    PriceRequest,
    bedrock_price_name,
    price_all,
    price_request,
)
from runner.core.console import console
from runner.core.evidence import Evidence
from runner.measure.costing import catalog_backends, cost_rows, load_levels, read_bench_evidence
from runner.render.tables import print_report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.cost", description=__doc__.splitlines()[0])
    parser.add_argument("evidence", nargs="*", type=Path, help="bench evidence files (default: price the catalog)")
    parser.add_argument("--offline", action="store_true", help="never call the Pricing API: use the offline table")
    add_aws_switch(parser, no_aws_help="never call AWS (same as --offline)")
    add_results_dir(parser)
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


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
