"""`python -m runner.bench`: one fixed prompt, streamed and timed, `--repeats` times per backend.

Per request: time to first token, end-to-end time, output tokens (server usage), tokens/s, and
the server's own timings where it reports them. Every backend is warmed the same way first (an
untimed "Hi", 4 tokens, kept apart in the evidence). One failing backend never stops the
others; the exit status is non-zero only when nothing was measured. Table and evidence come
from the same records.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from runner.cli.options import add_common_arguments
from runner.cli.session import Discovery, main_guard, run_command
from runner.core.console import console
from runner.core.evidence import Evidence, load
from runner.measure import ChatRequest
from runner.measure.benchmark import bench_backend, sweep_backend
from runner.measure.load import (
    Prompt,
    plan_levels,
    read_prompts,
)

PROMPT = "Write a short paragraph about the ocean."


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed requests per backend (default: %(default)s)")
    parser.add_argument("--max-tokens", type=int, default=100, help="output token limit (default: %(default)s)")
    parser.add_argument("--prompt", default=PROMPT, help="the prompt (default: the survey's fixed prompt)")
    parser.add_argument("--compare", type=Path, help="an earlier bench evidence file: adds a change column")
    load = parser.add_argument_group("load levels (default: one request at a time, --repeats of them)")
    load.add_argument(
        "--concurrency", metavar="N[,N...]", help="closed loop: N requests always in flight, e.g. 1,4,16,64"
    )
    load.add_argument("--rate", metavar="R[,R...]", help="open loop: Poisson arrivals at R requests/s on average")
    load.add_argument("--max-concurrency", type=int, help="open loop: at most this many in flight (later sends wait)")
    load.add_argument(
        "--requests", type=int, help="timed requests per level (default: four waves, or 10 s of arrivals)"
    )
    load.add_argument("--seed", type=int, default=0, help="seed of the open-loop arrivals (default: %(default)s)")
    load.add_argument("--prompts", type=Path, help='JSON lines {"prompt": ..., "max_tokens": N}, used in turn')
    add_common_arguments(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.repeats < 1:
        raise SystemExit("error: --repeats must be at least 1")
    baseline = load(args.compare) if args.compare else None
    levels = plan_levels(args.concurrency, args.rate, args.requests, args.max_concurrency)
    prompts = read_prompts(args.prompts, args.max_tokens) if args.prompts else [Prompt(args.prompt, args.max_tokens)]
    request = ChatRequest(prompt=prompts[0].text, max_tokens=prompts[0].max_tokens, temperature=0.0)
    config = {
        "prompt": request.prompt,
        "max_tokens": request.max_tokens,
        "temperature": 0.0,
        "repeats": args.repeats,
        "levels": [level.to_json() for level in levels] or None,
        "seed": args.seed,
        "prompts_file": str(args.prompts) if args.prompts else None,
        "prompts": len(prompts),
    }

    def measure(discovery: Discovery, evidence: Evidence) -> None:
        evidence.data["warm_up"] = []
        progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        )
        with progress:
            for backend in discovery.backends:
                if levels:
                    task = progress.add_task(f"{backend.name:<10}", total=sum(level.requests for level in levels))
                    sweep_backend(backend, levels, prompts, args, evidence, functools.partial(progress.advance, task))
                    continue
                task = progress.add_task(f"{backend.name:<10}", total=args.repeats)
                bench_backend(
                    backend, request, args.repeats, args.timeout, evidence, functools.partial(progress.advance, task)
                )

    return run_command(
        "bench", args, config, measure, measured=lambda records: any(r["ok"] for r in records), baseline=baseline
    )


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
