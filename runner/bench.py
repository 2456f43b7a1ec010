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
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from runner.backends import Backend
from runner.errors import backend_down
from runner.evidence import Evidence, load
from runner.session import Discovery, add_common_arguments, console, main_guard, run_command
from runner.stats import change_percent, fmt, fmt_range, median, value_range
from runner.timing import ChatRequest, RequestRecord, timed_client_for, warm_up

PROMPT = "Write a short paragraph about the ocean."


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

    def measure(discovery: Discovery, evidence: Evidence) -> None:
        evidence.data["warm_up"] = []
        progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        )
        with progress:
            for backend in discovery.backends:
                task = progress.add_task(f"{backend.name:<10}", total=args.repeats)
                bench_backend(
                    backend, request, args.repeats, args.timeout, evidence, functools.partial(progress.advance, task)
                )

    return run_command(
        "bench", args, config, measure, measured=lambda records: any(r["ok"] for r in records), baseline=baseline
    )


def bench_backend(
    backend: Backend, request: ChatRequest, repeats: int, timeout_s: float, evidence: Evidence, advance
) -> None:
    """Warm one client, then time `repeats` requests; a backend that is down is not retried."""
    try:
        client = timed_client_for(backend, timeout_s)
    except Exception as error:
        line = backend.explain(error)
        console.print(f"[red]{backend.name}:[/red] {line}")
        for run in range(1, repeats + 1):
            evidence.add_record(RequestRecord(backend=backend.name, run=run, error=line).to_json())
            advance()
        return
    try:
        warm = warm_up(client, backend.name)
        evidence.data["warm_up"].append(warm.to_json())
        if warm.error:
            # Warm-up failing is information, not a verdict: the timed request decides.
            console.print(f"[yellow]{backend.name}:[/yellow] warm-up failed: {warm.error}")
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
                    record.error = backend.explain(error)
                    console.print(f"[red]{backend.name} run {run}:[/red] {record.error}")
                    if run == 1 and backend_down(error):
                        skip_reason = record.error
            evidence.add_record(record.to_json())
            advance()
    finally:
        client.close()


def bench_summary(evidence: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per backend: the figures the bench table shows, computed from the raw records."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for backend in evidence.get("backends", []):
        grouped[backend["name"]] = []
    for record in evidence.get("records", []):
        grouped[record["backend"]].append(record)
    summary = {}
    for name, records in grouped.items():
        ok = [r for r in records if r["ok"]]
        rates = [r["tokens_per_s"] for r in ok]
        tokens = [r["output_tokens"] for r in ok]
        server_rates = [(r.get("server_timings") or {}).get("predicted_per_second") for r in ok]
        summary[name] = {
            "runs": len(records),
            "ok": len(ok),
            "errors": len(records) - len(ok),
            "median_s": median(r["e2e_s"] for r in ok),
            "median_ttft_s": median(r["ttft_s"] for r in ok),
            "median_tok_s": median(rates),
            "tok_s_range": value_range(rates),
            "token_range": value_range(tokens),
            "distinct_completions": len({r["text"] for r in ok}),
            "token_sources": sorted({r["token_source"] for r in ok if r.get("token_source")}),
            "median_server_tok_s": median(server_rates),
            "median_overhead_s": median(r.get("client_overhead_s") for r in ok),
            "new_connections": sum(1 for r in records if r.get("new_connection")),
            "stale_retries": sum(1 for r in records if r.get("stale_connection_retry")),
            "first_error": next((r["error"] for r in records if r.get("error")), None),
        }
    return summary


def bench_table(evidence: dict[str, Any], baseline: dict[str, Any] | None = None) -> Table:
    config = evidence["config"]
    table = Table(title=f"bench: {config.get('prompt', '')!r}, {config.get('max_tokens')} tokens max")
    summary = bench_summary(evidence)
    server_figures = any(row["median_server_tok_s"] is not None for row in summary.values())
    columns = ["backend", "ok/runs", "median s", "median TTFT s", "median tok/s", "tok/s range", "tokens", "distinct"]
    if server_figures:
        columns += ["server tok/s", "client overhead ms"]
    for column in columns:
        table.add_column(column, justify="left" if column == "backend" else "right")
    if baseline is not None:
        table.add_column("tok/s change", justify="right")
    table.add_column("notes")
    old = bench_summary(baseline) if baseline else {}
    for name, row in summary.items():
        notes = []
        if "client-chunks" in row["token_sources"]:
            notes.append("tokens counted by client (no server usage)")
        if row["new_connections"]:
            retried = f", {row['stale_retries']} resent after the server closed it" if row["stale_retries"] else ""
            notes.append(f"new connection on {row['new_connections']} of {row['runs']} timed requests{retried}")
        if row["first_error"]:
            notes.append(row["first_error"])
        cells = [
            name,
            f"{row['ok']}/{row['runs']}",
            fmt(row["median_s"]),
            fmt(row["median_ttft_s"]),
            fmt(row["median_tok_s"], 1),
            fmt_range(row["tok_s_range"]),
            fmt_range(row["token_range"], 0),
            str(row["distinct_completions"]) if row["ok"] else "-",
        ]
        if server_figures:
            overhead = row["median_overhead_s"]
            cells += [fmt(row["median_server_tok_s"], 1), fmt(overhead * 1000 if overhead is not None else None, 1)]
        if baseline is not None:
            cells.append(change_percent(old.get(name, {}).get("median_tok_s"), row["median_tok_s"]))
        table.add_row(*cells, "; ".join(notes))
    return table


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    out.print(bench_table(evidence, baseline))


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
