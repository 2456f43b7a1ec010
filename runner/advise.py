"""`python -m runner.advise --requests-per-day N`: the cheapest measured option for a workload.

A workload (requests a day, their hourly shape, input and output tokens, a p95 latency bound, or
a bench preset `--workload NAME` with its per-request objectives) is priced for a month on every
option the bench and batch evidence measured, each by its own billing model and from its own
figures (`runner/costing/advice.py` says every assumption). With objectives, an instance is sized
by the capacity `runner.bench --workload NAME --find-capacity` measured within them (good
requests an hour); an option without that measurement is labelled EXTRAPOLATED, with what it was
scaled from. Options are ranked: within the bound first, cheapest first, each with its arithmetic in one line, then why
the first beat the others. Evidence that did not come from AWS (the embedded model, an
`--endpoint` server, emulated or scripted servers) is refused unless `--allow-unmeasured-sources`,
which ranks it with a loud label. Prices as `runner.cost` finds them (Pricing API, else the dated
offline table). `--purchase` prices the months at a purchase option instead of on-demand (Spot,
a 1- or 3-year Savings Plan, Bedrock's batch, flex or priority tier, Provisioned Throughput) where
it applies and has a figure (runner/costing/purchase.py), each row saying what it was priced at.

`--load RPS` asks the fleet question instead: for a steady load (requests a second) within the
objectives, the cheapest measured option with its count ("3 copies on ml.g6.xlarge, $x/h, $y/M"),
beside single instances, Bedrock and the opt-in paths (runner/costing/fleet.py says how each is
sized: an endpoint of inference components by the capacity measured at several copy counts, never
one copy times N).

Bad input is one line and exit 2; exit 1 when no option is within the bound (or carries the load).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from catalog.prices import PRICING_API_REGION, Price
from runner.cli.options import add_aws_switch, add_pricing_flags, add_results_dir
from runner.cli.session import main_guard
from runner.cloud.aws import boto_client, credentials_configured
from runner.core.console import console
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence, load
from runner.core.flags import finite
from runner.costing.advice import (
    ASSUMPTIONS,
    SHAPES,
    Measured,
    Workload,
    advise_at,
    explain,
    hourly_weights,
    measured_options,
    measured_tokens,
    rank,
)
from runner.costing.billing_models import billing_model
from runner.costing.fleet import (
    FLEET_ASSUMPTIONS,
    answer,
    fleets_of,
    packing,
    parse_load,
    rank_fleet,
    size,
    size_fleet,
)
from runner.costing.measured import max_instances, split_quality
from runner.costing.priced_as import parse_priced_as, price_as
from runner.costing.prices import PriceList, PriceRequest, price_all
from runner.costing.purchase import (
    ON_DEMAND,
    PURCHASE_OPTIONS,
    PurchasePrice,
    Sources,
    item_key,
    purchase_prices,
)
from runner.costing.rows import ROWS_SCHEMA
from runner.render.advise import AdviseFile
from runner.render.cost import UsedPrice
from runner.render.tables import print_report
from runner.workloads.presets import get_preset
from runner.workloads.slo import Slo, parse_goodput

DEFAULT_INPUT_TOKENS = 20
DEFAULT_OUTPUT_TOKENS = 100


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.advise", description=__doc__.splitlines()[0])
    work = parser.add_argument_group("the workload")
    work.add_argument("--requests-per-day", metavar="N", help="requests a day (this or --load, above 0)")
    work.add_argument(
        "--load",
        metavar="RPS",
        help="the fleet question instead: a steady load in requests a second (20 or 20rps), sized within the "
        "objectives (--workload or --goodput) on every measured option, a fleet of copies by its measured scaling",
    )
    work.add_argument(
        "--shape", metavar="SHAPE", help=f"how a day's requests spread: {', '.join(SHAPES)} (default flat)"
    )
    work.add_argument("--hourly", metavar="W,...", help="24 comma-separated weights, hour 0 first (instead of --shape)")
    work.add_argument("--input-tokens", metavar="N", help="prompt tokens per request (default: the measured mean)")
    work.add_argument("--output-tokens", metavar="N", help="output tokens per request (default: the measured mean)")
    work.add_argument("--latency-bound", metavar="SECONDS", help="p95 end-to-end time a request may take")
    work.add_argument("--ttft-bound", metavar="SECONDS", help="p95 time to first token a request may take")
    work.add_argument(
        "--workload",
        metavar="NAME",
        help="a bench preset (catalog/workloads.py): its lengths and objectives; options are sized by the capacity "
        "runner.bench --workload NAME --find-capacity measured",
    )
    work.add_argument(
        "--goodput",
        nargs="+",
        action="extend",
        metavar="KEY:MS",
        help="per-request objectives, as runner.bench takes them",
    )
    work.add_argument("--slo-share", type=float, help="share of requests within the objectives (default: 0.9)")
    parser.add_argument(
        "--evidence",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="bench and batch evidence (default: the newest of each)",
    )
    parser.add_argument(
        "--allow-unmeasured-sources",
        action="store_true",
        help="rank evidence not measured on AWS too (embedded model, --endpoint, emulated or scripted), labelled",
    )
    parser.add_argument("--offline", action="store_true", help="never call the Pricing API: use the offline table")
    parser.add_argument(
        "--purchase",
        choices=PURCHASE_OPTIONS,
        default=ON_DEMAND,
        help="price the months at this purchase option where it applies (Savings Plans: No Upfront); "
        "others stay on-demand, said so (default: on-demand)",
    )
    add_pricing_flags(parser)
    add_aws_switch(parser, no_aws_help="never call AWS (same as --offline)")
    add_results_dir(parser)
    return parser


def number(text: str | None, flag: str, *, integer: bool = False, default: float | None = None) -> float | None:
    """A flag's value above 0, or one line saying what is wrong."""
    if text is None:
        return default
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise RunnerError(f"{flag} {text!r}: expected a {'whole ' if integer else ''}number above 0") from None
    finite(flag, value, text=repr(text))
    if not value > 0:
        raise RunnerError(f"{flag} {text!r}: must be above 0")
    return value


def newest_evidence(results_dir: Path, workload: str = "") -> list[Path]:
    """The newest bench, batch and quality evidence under the results folder; with a workload, the
    newest bench evidence measured on it where there is one."""
    found = []
    for command in ("bench", "batch", "quality"):
        paths = sorted(results_dir.glob(f"*/{command}-*.json"), key=lambda p: (p.parent.name, p.name))
        if command == "bench" and workload:
            paths = [p for p in paths if bench_workload_name(p) == workload] or paths
        if paths:
            found.append(paths[-1])
    if not [p for p in found if not p.name.startswith("quality-")]:
        raise RunnerError(
            f"no bench or batch evidence under {results_dir}: run python -m runner.bench first, or pass --evidence FILE"
        )
    return found


def bench_workload_name(path: Path) -> str | None:
    try:
        return ((load(path).get("config") or {}).get("workload") or {}).get("name")
    except RunnerError:
        return None


def objectives(args: argparse.Namespace) -> tuple[str, tuple[tuple[str, float], ...], float, int | None, int | None]:
    """The preset's name, objectives, share and lengths, the flags over them."""
    preset = get_preset(args.workload) if args.workload else None
    if args.workload and preset is None:
        raise RunnerError("--workload agent is agent traffic, not a workload to size: name a length preset")
    slo = parse_goodput(args.goodput) if args.goodput else (preset.slo() if preset else Slo(()))
    share = args.slo_share if args.slo_share is not None else (preset.slo_share if preset else 0.9)
    if not 0 < share <= 1:
        raise RunnerError(f"--slo-share {share}: a share above 0 and at most 1")
    lengths = (preset.input_tokens[0], preset.output_tokens) if preset else (None, None)
    return args.workload or "", slo.limits, share, *lengths


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # The workload and every input are checked before anything is priced or written.
    if args.requests_per_day is None and args.load is None:
        raise RunnerError("--requests-per-day N is required: the requests a day to price (or --load RPS: a fleet)")
    if args.requests_per_day is not None and args.load is not None:
        raise RunnerError("--requests-per-day prices a month, --load sizes a fleet for a steady rate: give one")
    load = parse_load(args.load) if args.load is not None else None
    if load is not None and (args.shape is not None or args.hourly is not None):
        raise RunnerError("--load is a steady rate: --shape and --hourly spread a day's requests, give them without it")
    requests_per_day = load * 86400 if load is not None else number(args.requests_per_day, "--requests-per-day")
    if args.shape is not None and args.hourly is not None:
        raise RunnerError("--shape and --hourly are two ways to say the same thing: give one")
    shape, weights = hourly_weights(args.shape, args.hourly)
    bound = number(args.latency_bound, "--latency-bound")
    ttft_bound = number(args.ttft_bound, "--ttft-bound")
    input_tokens = number(args.input_tokens, "--input-tokens", integer=True)
    output_tokens = number(args.output_tokens, "--output-tokens", integer=True)
    name, slo, share, preset_in, preset_out = objectives(args)
    if load is not None and not slo:
        raise RunnerError(
            "--load needs objectives (--workload NAME or --goodput KEY:MS): a fleet carries a load within them"
        )
    input_tokens, output_tokens = input_tokens or preset_in, output_tokens or preset_out
    paths = args.evidence or newest_evidence(args.results_dir, name)
    inputs, accuracy = split_quality(paths, "runner.advise")
    use_api = not args.offline and (args.aws if args.aws is not None else credentials_configured())
    given = parse_priced_as(args.price, args.price_as, offline=not use_api)
    inputs = price_as(inputs, given)
    measured_in, measured_out = measured_tokens([data for _, data in inputs])
    workload = Workload(
        requests_per_day=requests_per_day,
        weights=weights,
        shape=shape,
        input_tokens=int(input_tokens or measured_in or DEFAULT_INPUT_TOKENS),
        output_tokens=int(output_tokens or measured_out or DEFAULT_OUTPUT_TOKENS),
        latency_bound_s=bound,
        ttft_bound_s=ttft_bound,
        name=name,
        slo=slo,
        slo_share=share,
    )
    options, refused, notices = [], [], []
    for path, data in inputs:
        for option in measured_options(path, data, workload.output_tokens, workload):
            if not billing_model(option.billing).billed:
                notices.append(
                    f"{option.name} ({path}): not billed by AWS, not an option to price "
                    f"(--price-as {option.name}=INSTANCE_TYPE or --price {option.name}=USD_PER_HOUR prices it)"
                )
            elif option.provenance and not (args.allow_unmeasured_sources or option.backend.priced_as):
                refused.append(f"{option.name} ({path}): measured on {option.provenance}, not AWS")
            else:
                options.append(option)
    if not options:
        first = refused[0] if refused else (notices[0] if notices else f"{paths[0]}: no backend in it")
        raise RunnerError(
            f"no option measured on AWS to advise on: {first}"
            + (f" (and {len(refused) - 1} more)" if len(refused) > 1 else "")
            + ("; --allow-unmeasured-sources ranks it, labelled" if refused else "")
        )
    evidence = Evidence(
        AdviseFile,
        {
            "evidence": [p for p, _ in inputs],
            "pricing": "api" if use_api else "offline",
            "workload": workload.to_json(),
            "allow_unmeasured_sources": args.allow_unmeasured_sources,
            "purchase": args.purchase,
            "priced_as": {name: priced.to_json() for name, priced in given.items()},
        }
        | ({"load_rps": load} if load is not None else {}),
        args.results_dir,
    )
    if not use_api:
        why = "--offline" if args.offline else "--no-aws" if args.aws is False else "no AWS credentials configured"
        notices.append(f"prices from the offline table ({why})")
    unmeasured = [
        o.name for o in options if workload.slo and o.capacity is None and not billing_model(o.billing).priced_by_jobs
    ]
    if unmeasured:
        notices.append(
            f"no capacity measured within {workload.slo_text} for {', '.join(unmeasured)}: their rows are "
            f"EXTRAPOLATED from other levels (runner.bench --workload {name or 'NAME'} --find-capacity measures it)"
        )
    if args.allow_unmeasured_sources and any(o.provenance for o in options):
        notices.append("--allow-unmeasured-sources: options NOT measured on AWS are ranked, labelled NOT AWS")
    for option in options:
        if option.backend.priced_as is not None and option.provenance:
            notices.append(
                f"{option.name}: measured on {option.provenance}, priced as given ({option.backend.priced_as.flag}): "
                "ranked, labelled NOT AWS"
            )
    # By option, not by name: a fleet is one backend's name measured in several files and on
    # several instance types.
    requests = {id(option): option.price_request() for option in options}
    asked = list(dict.fromkeys(r for r in requests.values() if r is not None))
    price_list = PriceList(boto_client("pricing", PRICING_API_REGION, 30)) if use_api else None
    prices, price_notices = price_all(asked, price_list)
    figures: dict[tuple[str, str, str], list[PurchasePrice]] = {}
    if args.purchase != ON_DEMAND:
        sources = Sources(clients=(lambda service, region: boto_client(service, region, 30)) if use_api else None)
        counts = {requests[id(o)]: max_instances(o.backend) for o in options if requests[id(o)] is not None}
        figures, purchase_notices = purchase_prices(asked, sources, counts)
        price_notices += purchase_notices
    for line in [*notices, *price_notices]:
        console.print(f"[yellow]note:[/yellow] {line}")
        evidence.notice(line)
    file = evidence.file
    file.prices = [UsedPrice(request, price) for request, price in prices.items()]
    file.pricing_queries = price_list.queries if price_list else []
    file.purchase = [figure for found in figures.values() for figure in found]
    file.backends = [option.backend for option in options]
    file.refused = refused
    if load is not None:
        return answer_fleet(file, evidence, options, load, workload, (requests, prices, figures), args.purchase)
    advised = []
    for option in options:
        request = requests[id(option)]
        price = prices.get(request) if request else None
        bought = figures.get(item_key(request), []) if request else []
        advised.append(advise_at(option, workload, price, args.purchase, bought))
    ranked = rank(advised)
    priced = {option.name: option.backend.priced_as for option in options if option.backend.priced_as}
    for row in ranked:
        row.accuracy = accuracy.get(row.option)
        if row.option in priced:  # the table says what the month is priced on: the user's word
            row.arithmetic = f"priced as given ({priced[row.option].flag}): {row.arithmetic}"
    file.rows_schema, file.records = ROWS_SCHEMA, ranked
    file.why, file.refused, file.assumptions = explain(ranked), refused, ASSUMPTIONS
    evidence.finish()
    print_report(file)
    evidence.announce()
    return 0 if ranked and ranked[0].meets is True else 1


def answer_fleet(
    file: AdviseFile,
    evidence: Evidence,
    options: list[Measured],
    load: float,
    workload: Workload,
    priced: tuple[dict[int, PriceRequest | None], dict[PriceRequest, Price], dict],
    purchase: str,
) -> int:
    """`--load`: every measured option sized for the steady load (a fleet of copies by its measured
    scaling), ranked, the answer in one line, and where a type holds several GPUs, packed against
    one-GPU instances; exit 1 when no option carries the load."""
    requests, prices, figures = priced

    def price_of(option: Measured) -> tuple[Price | None, list[PurchasePrice]]:
        request = requests[id(option)]
        return (prices.get(request), figures.get(item_key(request), [])) if request else (None, [])

    fleets, others, notices = fleets_of(options)
    for line in notices:
        console.print(f"[yellow]note:[/yellow] {line}")
        evidence.notice(line)
    rows = [size_fleet(fleet, load, workload, purchase, *price_of(fleet.option)) for fleet in fleets]
    rows += [size(option, load, workload, purchase, *price_of(option)) for option in others]
    ranked = rank_fleet(rows)
    hour = {id(f): price.usd_per_hour if (price := price_of(f.option)[0]) else None for f in fleets}
    file.rows_schema, file.fleet, file.packing = ROWS_SCHEMA, ranked, packing(fleets, hour, workload.output_tokens)
    file.answer, file.assumptions = answer(ranked, load, workload), FLEET_ASSUMPTIONS
    evidence.finish()
    print_report(file)
    evidence.announce()
    return 0 if ranked and ranked[0].meets is True and ranked[0].usd_per_hour is not None else 1


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
