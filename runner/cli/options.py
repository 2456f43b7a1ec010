"""The flags the commands share, defined once: where evidence goes, whether to use AWS, where the deployed stacks are, which backends to measure and how (CommonOptions)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.cloud.aws import check_region
from runner.core.backends import (
    EndpointFlag,
    parse_endpoint,
)
from runner.core.errors import RunnerError
from runner.core.evidence import DEFAULT_RESULTS
from runner.core.flags import above, at_least
from runner.core.typed_json import JsonObject
from runner.figures.latency import (
    DEFAULT_METRICS,
    DEFAULT_PERCENTILES,
    METRICS,
    parse_metric_percentiles,
    parse_percentile_metrics,
)


@dataclass
class CommonOptions:
    backends: list[str] | None = None
    endpoints: list[EndpointFlag] = field(default_factory=list)
    forwards: dict[str, int] = field(default_factory=dict)
    outputs_file: Path | None = None
    region: str | None = None
    aws: bool | None = None
    local: str = "auto"
    results_dir: Path = DEFAULT_RESULTS
    timeout_s: float = 60.0
    threads: int | None = None


def add_results_dir(parser: Any) -> None:
    parser.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS, help="where evidence files go")


def add_aws_switch(parser: Any, *, no_aws_help: str | None = "never call AWS") -> None:
    """`--aws` (use AWS even without explicit credentials) and, where it means something, `--no-aws`."""
    aws = parser.add_mutually_exclusive_group()
    aws.add_argument(
        "--aws", dest="aws", action="store_true", default=None, help="use AWS even without explicit credentials"
    )
    if no_aws_help:
        aws.add_argument("--no-aws", dest="aws", action="store_false", help=no_aws_help)


def add_pricing_flags(parser: Any) -> None:
    """`--price` and `--price-as` (runner.cost, runner.advise): a server AWS does not bill priced
    as the user says (runner/costing/priced_as.py)."""
    group = parser.add_argument_group(
        "pricing a server AWS does not bill (the embedded model, an --endpoint server), as you say"
    )
    group.add_argument(
        "--price-as",
        action="append",
        default=[],
        metavar="BACKEND=INSTANCE_TYPE",
        help="price BACKEND by the hour as the instance it stands for (g6.xlarge, ml.g6.xlarge): the Pricing API "
        "with AWS, else the offline table; repeatable",
    )
    group.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="BACKEND=USD_PER_HOUR",
        help="price BACKEND at this rate an hour (shown as a rate given, not a list price); repeatable",
    )


def add_outputs_and_region(group: Any) -> None:
    group.add_argument("--outputs-file", type=Path, help="read stack outputs from `cdk deploy --outputs-file` JSON")
    group.add_argument(
        "--region",
        help="look for the app's stacks only here (default: where runner.up placed them, then the US regions)",
    )


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("backends")
    group.add_argument("--backends", help="comma-separated backend names to run (default: all found)")
    group.add_argument(
        "--endpoint",
        action="append",
        default=[],
        metavar="NAME=URL[,model=ID]",
        help="add an OpenAI-compatible server (or override a known backend's URL); repeatable",
    )
    add_stack_arguments(group)
    group.add_argument(
        "--local",
        choices=("auto", "always", "never"),
        default="auto",
        help="embedded model: auto = only when nothing else is found (default)",
    )
    group.add_argument("--threads", type=int, help="CPU threads for the embedded server (default: up to 2)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default: %(default)s)")
    add_results_dir(parser)


def add_stack_arguments(group: Any, *, no_aws_help: str = "never call AWS") -> None:
    """Where the deployed servers are: forwarded ports, the outputs, the region, whether to use AWS."""
    group.add_argument(
        "--forward",
        action="append",
        default=[],
        metavar="NAME=PORT",
        help="local port of an EC2 backend's SSM port forward (defaults: g6 8001, g5g 8002, inf2 8003, trn1 8004)",
    )
    add_outputs_and_region(group)
    add_aws_switch(group, no_aws_help=no_aws_help)


def parse_forwards(flags: list[str]) -> dict[str, int]:
    return dict(_parse_forward(f) for f in flags)


def _parse_forward(text: str) -> tuple[str, int]:
    name, sep, port = text.partition("=")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise RunnerError(f"--forward {text!r}: expected NAME=PORT with a port from 1 to 65535")
    return name, int(port)


def options_from_args(args: argparse.Namespace) -> CommonOptions:
    above("--timeout", args.timeout, 0, "seconds")
    at_least("--threads", args.threads, 1)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()] if args.backends else None
    return CommonOptions(
        backends=backends,
        endpoints=[parse_endpoint(e) for e in args.endpoint],
        forwards=parse_forwards(args.forward),
        outputs_file=args.outputs_file,
        region=check_region(args.region) if args.region else None,
        aws=args.aws,
        local=args.local,
        results_dir=args.results_dir,
        timeout_s=args.timeout,
        threads=args.threads,
    )


def add_block_arguments(parser: argparse.ArgumentParser) -> None:
    """What each run's block gives percentiles of, and which (vllm bench serve's two flags)."""
    block = parser.add_argument_group("each run's block (vllm bench serve's flags)")
    block.add_argument(
        "--percentile-metrics",
        metavar="M[,M...]",
        help=f"latency metrics to give the mean, median and percentiles of: {', '.join(METRICS)} "
        f"(default: {','.join(DEFAULT_METRICS)})",
    )
    block.add_argument(
        "--metric-percentiles",
        metavar="P[,P...]",
        help=f"percentiles of each, e.g. 50,90,99 (default: {','.join(f'{p:g}' for p in DEFAULT_PERCENTILES)})",
    )


def block_config(args: argparse.Namespace, *, given_only: bool = False) -> JsonObject:
    """The block's metrics and percentiles as the evidence keeps them (runner.report draws the same;
    with `given_only`, only what the flags gave)."""
    if given_only:
        return {key: value for key, value in block_config(args).items() if getattr(args, key)}
    return {
        "percentile_metrics": list(
            parse_percentile_metrics(args.percentile_metrics) if args.percentile_metrics else DEFAULT_METRICS
        ),
        "metric_percentiles": list(
            parse_metric_percentiles(args.metric_percentiles) if args.metric_percentiles else DEFAULT_PERCENTILES
        ),
    }
