"""`python -m runner.cost [EVIDENCE...]`: what each backend costs, each by its own billing model.

Prices come from the Pricing API for the region each backend ran in (the dated offline table in
`catalog/prices.py` when the API cannot be reached, or with `--offline`), and every price used
is kept in the evidence with its source and date. It reads bench evidence and batch evidence
(`runner.batch`). Per backend and load level, $ per million output tokens by the backend's
billing model: an instance by the hour over the tokens/s it reached (EC2, SageMaker real-time;
async the same while an instance runs, and apart what leaving zero costs), serverless compute
seconds (each request's end-to-end time at the memory size's price, cold starts apart), a batch
transform job's instances for its billable time, Custom Model Import's CMU-minutes in 5-minute
windows (its storage a fixed monthly line), Bedrock per token (input per output token included).
An instance billed by the hour beats Bedrock once it sustains more output tokens per second than
its hourly price buys on Bedrock; that break-even rate is given per backend. For the real-time
endpoint, where a second instance starts paying for itself, or what only a real account shows.
Figures that did not come from AWS are labelled so in the table. Beside on-demand, the purchase
options where they apply (runner/costing/purchase.py): EC2 Spot (price history and placement
score), Compute and SageMaker Savings Plans, Bedrock's batch, flex and priority tiers and
Provisioned Throughput, each with its SKU, source API and date; read from the recorded snapshots
(catalog/price_snapshots/) without an account, and `--record-price-snapshots` records them with one.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from catalog.prices import PRICING_API_REGION
from runner.cli.options import add_aws_switch, add_pricing_flags, add_results_dir
from runner.cli.session import main_guard
from runner.cloud.aws import boto_client, credentials_configured
from runner.core.backend_entries import entries_of
from runner.core.console import console
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence
from runner.core.flags import above
from runner.costing.measured import (
    NOT_BILLED,
    catalog_backends,
    cost_price_requests,
    cost_rows,
    second_instance,
    split_quality,
)
from runner.costing.priced_as import parse_priced_as, price_as
from runner.costing.prices import PriceList, price_all, price_request
from runner.costing.purchase import Snapshots, Sources, purchase_prices
from runner.costing.rows import ROWS_SCHEMA
from runner.render.cost import CostFile, UsedPrice
from runner.render.tables import print_report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.cost", description=__doc__.splitlines()[0])
    parser.add_argument(
        "evidence",
        nargs="*",
        type=Path,
        help="bench or batch evidence files, and quality ones for accuracy beside the cost (default: the catalog)",
    )
    parser.add_argument("--offline", action="store_true", help="never call the Pricing API: use the offline table")
    parser.add_argument(
        "--latency-bound",
        type=float,
        metavar="SECONDS",
        help="p95 end-to-end bound for the real-time endpoint's capacity (default: throughput alone)",
    )
    parser.add_argument(
        "--record-price-snapshots",
        action="store_true",
        help="with an AWS account: keep each purchase-option API answer in catalog/price_snapshots/ for offline use",
    )
    add_pricing_flags(parser)
    add_aws_switch(parser, no_aws_help="never call AWS (same as --offline)")
    add_results_dir(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    above("--latency-bound", args.latency_bound, 0, "seconds")
    # Every input is read before anything is priced or written: a bad file stops with nothing half-done.
    inputs, accuracy = split_quality(args.evidence, "runner.cost")
    use_api = not args.offline and (args.aws if args.aws is not None else credentials_configured())
    if args.record_price_snapshots and not use_api:
        raise RunnerError("--record-price-snapshots records live answers: it needs AWS credentials, not --offline")
    given = parse_priced_as(args.price, args.price_as, offline=not use_api)
    groups = price_as(
        inputs or [("catalog", {"command": "bench", "backends": catalog_backends(), "records": []})], given
    )
    evidence = Evidence(
        CostFile,
        {
            "evidence": [p for p, _ in inputs],
            "pricing": "api" if use_api else "offline",
            "bound_s": args.latency_bound,
            "priced_as": {name: priced.to_json() for name, priced in given.items()},
        },
        args.results_dir,
    )
    if not use_api:
        why = "--offline" if args.offline else "--no-aws" if args.aws is False else "no AWS credentials configured"
        evidence.notice(f"prices from the offline table ({why})")
    requests = cost_price_requests([data for _, data in groups])
    price_list = PriceList(boto_client("pricing", PRICING_API_REGION, 30)) if use_api else None
    console.print(
        f"[dim]pricing {len(set(requests))} item(s) {'from the Pricing API' if use_api else 'offline'} …[/dim]"
    )
    prices, notices = price_all(requests, price_list)
    sources = Sources(
        clients=(lambda service, region: boto_client(service, region, 30)) if use_api else None,
        recording=Snapshots() if args.record_price_snapshots else None,
    )
    purchase, purchase_notices = purchase_prices(requests, sources)
    notices += purchase_notices
    for line in notices:
        console.print(f"[yellow]note:[/yellow] {line}")
        evidence.notice(line)
    file = evidence.file
    file.prices = [UsedPrice(request, price) for request, price in prices.items()]
    file.pricing_queries = price_list.queries if price_list else []
    file.backends = [backend for path, data in groups for backend in entries_of(data, path)]
    file.accuracy, file.rows_schema = accuracy, ROWS_SCHEMA
    file.purchase = [figure for figures in purchase.values() for figure in figures]
    file.purchase_queries = sources.queries
    for path, data in groups:
        for row in cost_rows(path, data, prices):
            evidence.add_record(row)
            if row.note == NOT_BILLED:
                evidence.notice(
                    f"{row.backend}: {NOT_BILLED}; --price-as {row.backend}=INSTANCE_TYPE (such as g6.xlarge) or "
                    f"--price {row.backend}=USD_PER_HOUR prices it"
                )
        for backend in entries_of(data, path) if path != "catalog" else []:
            request = price_request(backend)
            scaling = second_instance(data, backend, prices.get(request) if request else None, args.latency_bound)
            if scaling is not None:
                file.scaling.append(replace(scaling, evidence=path))
    if sources.recording is not None:
        for path in sources.recording.save():
            console.print(f"recorded {path}")
    evidence.finish()
    print_report(file)
    evidence.announce()
    return 0 if any(r.usd_per_hour or r.price for r in file.records) else 1


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
