"""`python -m runner.quality`: a graded task set, generated with exact answers from a seed, on every backend.

Four families (`runner/agent/tasks.py`): counting and filtering over generated lists (demo 1
generalised), arithmetic word problems, extracting a field from a generated record (JSON or
`key: value` lines), and tool use graded on the call as well as the answer. 100 items by default,
dealt to the families in turn; the same seed gives the same items on every backend and every
machine, offline. Counting, arithmetic and extraction go through the bench's own timed client (one
plain question, no tools: the same prompt on every path); tool use through the Strands agent under
limits, on backends that take tools. Grading (`runner/agent/quality.py`) never trusts the model: a
last `Answer: X` line is asked for, hedged, ambiguous and contradictory answers fail, every item
keeps its answer and a one-line reason. Per backend: accuracy with a 95 % Wilson interval, overall
and per family.
"""

from __future__ import annotations

import argparse

from rich.progress import Progress

from runner.agent.tasks import (
    DEFAULT_ITEMS,
    DEFAULT_SEED,
    FAMILIES,
    SURVEY_ITEMS,
    TOOL_SYSTEM,
    generate,
    parse_families,
)
from runner.cli.options import add_common_arguments
from runner.cli.session import Discovery, main_guard, run_command
from runner.core.agent_evidence import QualityFile
from runner.core.console import console
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence
from runner.core.flags import at_least


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.quality", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--items",
        type=int,
        help=f"items in all (default: {DEFAULT_ITEMS}, a quick look; the survey's set: --items {SURVEY_ITEMS})",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the task set's seed (default: %(default)s)")
    parser.add_argument(
        "--families", help=f"comma-separated task families (default: all: {', '.join(FAMILIES)})", metavar="A,B"
    )
    parser.add_argument("--max-tokens", type=int, default=128, help="per model call (default: %(default)s)")
    add_common_arguments(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # The agent (Strands and the model SDKs, about 1 s of imports) only once there is work: --help stays quick.
    from runner.agent.quality import CLIENTS, QualitySettings, model_of, run_backend, summarise

    quick = args.items is None
    args.items = DEFAULT_ITEMS if quick else args.items
    if args.items < 1:
        raise RunnerError(f"--items {args.items}: the task set needs at least 1 item")
    at_least("--max-tokens", args.max_tokens, 1)
    families = parse_families(args.families)
    tasks = generate(args.items, args.seed, families)
    settings = QualitySettings(max_tokens=args.max_tokens, timeout_s=args.timeout)
    config = {
        "items": args.items,
        "seed": args.seed,
        "families": families,
        "items_per_family": {f: sum(1 for t in tasks if t.family == f) for f in families},
        "max_tokens": args.max_tokens,
        "clients": {f: CLIENTS[f] for f in families},
        "tool_system": TOOL_SYSTEM,
        "agent_limits": {"max_model_calls": settings.max_model_calls, "max_tool_calls": settings.max_tool_calls},
    }

    def measure(discovery: Discovery, evidence: Evidence[QualityFile]) -> None:
        if quick:  # once every flag is taken and the backends found
            console.print(
                f"[dim]quality: {DEFAULT_ITEMS} items ({DEFAULT_ITEMS // len(FAMILIES)} a family), a quick look whose "
                f"interval is wide; --items {SURVEY_ITEMS} runs the survey's set (about 19 minutes on the embedded "
                "model)[/dim]"
            )

        skipped: dict[str, dict[str, str]] = {}
        try:
            with Progress(console=console) as progress:
                for backend in discovery.backends:
                    bar = progress.add_task(f"{backend.name:<10}", total=len(tasks))
                    skipped[backend.name] = run_backend(
                        backend, tasks, settings, evidence.add_record, lambda bar=bar: progress.advance(bar)
                    )
                    for family, why in skipped[backend.name].items():
                        line = f"{backend.name}: {family} skipped: {why}"
                        progress.console.print(f"[yellow]note:[/yellow] {line}")
                        evidence.notice(line)
        finally:
            backends = [(b.name, model_of(b)) for b in discovery.backends]
            evidence.file.summary = summarise(evidence.file.records, backends, families, skipped)

    # Exit 1 when no item was graded on any backend (none answered at all).
    return run_command(
        "quality", args, config, measure, measured=lambda file: any(item.graded for item in file.records)
    )


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
