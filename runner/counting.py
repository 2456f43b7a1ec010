"""`python -m runner.counting` (demo 1): the survey's counting demo, so its 20/20 compares.

Eleven ids in the survey's order, its question, and its instruction to finish with a sentence
stating the number (plus, here, a last line `Answer: <number>` that `runner.agent.grading` reads
first). The agent's only tool is `count_ids(op, value)`, which returns the exact count, minimum
and maximum, so the model chooses a filter and quotes a number. A run passes only when the
number is right, a filter sent selects exactly the ids the question asks for (`id >= 10`,
`id > 9`, `id > 9.5`: whatever its form), and the agent finished on its own: a run stopped by
its limits or by a backend error never passes. `--tools rows` gives a `list_ids()` tool instead
and the model counts the ids itself (only the number is graded there).
"""

from __future__ import annotations

import argparse

from rich.progress import Progress

from runner.cli.options import add_common_arguments
from runner.cli.session import Discovery, main_guard, run_command
from runner.core.agent_evidence import CountingFile
from runner.core.console import console
from runner.core.evidence import Evidence
from runner.core.flags import at_least


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.counting", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="agent runs per backend (default: %(default)s)")
    parser.add_argument("--tools", choices=("filter", "rows"), default="filter", help="tool variant (default: filter)")
    parser.add_argument("--max-tokens", type=int, default=256, help="per model call (default: %(default)s)")
    parser.add_argument(
        "--force-tool",
        action="store_true",
        help="the first model call must call the tool (tool_choice names it; the server constrains the output)",
    )
    parser.add_argument(
        "--max-model-calls",
        type=int,
        default=6,
        help="model calls per run before the run is stopped as a runaway loop (default: %(default)s)",
    )
    add_common_arguments(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for flag, value in (
        ("--runs", args.runs),
        ("--max-tokens", args.max_tokens),
        ("--max-model-calls", args.max_model_calls),
    ):
        at_least(flag, value, 1)
    # The agent (Strands and the model SDKs, about 1 s of imports) only once there is work: --help stays quick.
    from runner.agent.counting import EXPECTED, IDS, QUESTION, SYSTEM, count_once

    config = {
        "ids": list(IDS),
        "question": QUESTION,
        "system": SYSTEM,
        "expected": EXPECTED,
        "tools": args.tools,
        "tool_choice": "forced on the first call" if args.force_tool else "auto",
        "runs": args.runs,
    }

    def measure(discovery: Discovery, evidence: Evidence[CountingFile]) -> None:
        with Progress(console=console) as progress:
            for backend in discovery.backends:
                task = progress.add_task(f"{backend.name:<10}", total=args.runs)
                if not backend.supports_tools:
                    evidence.notice(f"{backend.name}: skipped, its server ignores tool definitions")
                    progress.update(task, completed=args.runs)
                    continue
                for run_number in range(1, args.runs + 1):
                    evidence.add_record(count_once(backend, run_number, args))
                    progress.advance(task)

    return run_command("counting", args, config, measure, measured=lambda file: any(r.reached for r in file.records))


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
