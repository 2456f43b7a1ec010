"""`python -m runner.bench`: one fixed prompt, streamed and timed, `--repeats` times per backend.

Per request: time to first token, end-to-end time, output tokens (server usage), tokens/s.
One failing backend never stops the others; the exit status is non-zero only when nothing
was measured. Table and evidence come from the same records.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from runner.errors import describe
from runner.evidence import load
from runner.session import add_common_arguments, conclude, console, main_guard, run_session
from runner.timing import ChatRequest, RequestRecord, timed_client_for

PROMPT = "Write a short paragraph about the ocean."
UNREACHABLE_PREFIXES = ("unreachable", "timed out")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed requests per backend (default: %(default)s)")
    parser.add_argument("--max-tokens", type=int, default=100, help="output token limit (default: %(default)s)")
    parser.add_argument("--prompt", default=PROMPT, help="the prompt (default: the survey's fixed prompt)")
    parser.add_argument("--compare", type=Path, help="an earlier bench evidence file: adds a change column")
    add_common_arguments(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.repeats < 1:
        raise SystemExit("error: --repeats must be at least 1")
    baseline = load(args.compare) if args.compare else None
    request = ChatRequest(prompt=args.prompt, max_tokens=args.max_tokens, temperature=0.0)
    config = {"prompt": request.prompt, "max_tokens": request.max_tokens, "temperature": 0.0, "repeats": args.repeats}
    interrupted = False
    with run_session("bench", args, config) as (discovery, evidence):
        progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        )
        try:
            with progress:
                for backend in discovery.backends:
                    task = progress.add_task(f"{backend.name:<10}", total=args.repeats)
                    bench_backend(backend, request, args.repeats, args.timeout, evidence, progress, task)
        except KeyboardInterrupt:
            interrupted = True
        measured = any(r["ok"] for r in evidence.data["records"])
        return conclude(evidence, interrupted=interrupted, measured=measured, baseline=baseline)


def bench_backend(backend, request, repeats, timeout_s, evidence, progress, task) -> None:
    """Warm one client, then time `repeats` requests; an unreachable backend is not retried."""
    try:
        client = timed_client_for(backend, timeout_s)
    except Exception as error:
        line = describe(error)
        console.print(f"[red]{backend.name}:[/red] {line}")
        for run in range(1, repeats + 1):
            evidence.add_record(RequestRecord(backend=backend.name, run=run, error=line).to_json())
        progress.update(task, completed=repeats)
        return
    try:
        try:
            client.warm()
        except Exception as error:
            # Warm-up failing is information, not a verdict: the timed request decides.
            console.print(f"[yellow]{backend.name}:[/yellow] warm-up failed: {describe(error)}")
        skip_reason = None
        for run in range(1, repeats + 1):
            record = RequestRecord(backend=backend.name, run=run)
            if skip_reason:
                record.error = f"skipped after run 1: {skip_reason}"
            else:
                try:
                    client.chat(request, record)
                except Exception as error:
                    record.ok = False
                    record.error = describe(error)
                    console.print(f"[red]{backend.name} run {run}:[/red] {record.error}")
                    if run == 1 and record.error.startswith(UNREACHABLE_PREFIXES):
                        skip_reason = record.error
            evidence.add_record(record.to_json())
            progress.advance(task)
    finally:
        client.close()


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
