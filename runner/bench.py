"""`python -m runner.bench`: one fixed prompt, streamed and timed, `--repeats` times per backend.

Per request: time to first token, end-to-end time, output tokens (server usage), tokens/s, and
the server's own timings where it reports them. Every backend is warmed the same way first (an
untimed "Hi", 4 tokens, kept apart in the evidence). One failing backend never stops the
others; the exit status is non-zero only when nothing was measured. Table and evidence come
from the same records.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from catalog import BackendKind
from runner.backends import Backend
from runner.errors import backend_down
from runner.evidence import Evidence, load
from runner.load import (
    LoadLevel,
    Prompt,
    level_groups,
    level_summary,
    plan_levels,
    read_prompts,
    run_level,
    run_level_async,
)
from runner.session import Discovery, add_common_arguments, console, main_guard, run_command
from runner.stats import change_percent, fmt, fmt_range, median, value_range
from runner.tables import models
from runner.timing import ChatRequest, RequestRecord, timed_client_for, warm_up
from runner.timing.openai_async import AsyncOpenAIStreamClient, warm_up_async

PROMPT = "Write a short paragraph about the ocean."
# Connections opened ahead of a level (an open-loop level without a cap may reach far more).
WARM_CONNECTIONS_MAX = 64


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


def bench_backend(
    backend: Backend, request: ChatRequest, repeats: int, timeout_s: float, evidence: Evidence, advance
) -> None:
    """Warm one client, then time `repeats` requests; a backend that is down is not retried."""
    level = LoadLevel("concurrency", 1, repeats).to_json()
    try:
        client = timed_client_for(backend, timeout_s)
    except Exception as error:
        line = backend.explain(error)
        console.print(f"[red]{backend.name}:[/red] {line}")
        for run in range(1, repeats + 1):
            evidence.add_record(RequestRecord(backend=backend.name, run=run, error=line, level=level).to_json())
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
            record = RequestRecord(backend=backend.name, run=run, level=level)
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


def chat_requests(backend: Backend, prompts: list[Prompt]) -> list[ChatRequest]:
    """The prompts as requests. Servers that may be vLLM are asked for a running token count per
    chunk (`continuous_usage_stats`); others ignore the option and the count is estimated."""
    per_chunk = backend.kind in (BackendKind.EC2_VLLM, BackendKind.SAGEMAKER, BackendKind.OPENAI, BackendKind.LOCAL)
    return [ChatRequest(p.text, max_tokens=p.max_tokens, usage_per_chunk=per_chunk) for p in prompts]


def sweep_backend(
    backend: Backend,
    levels: list[LoadLevel],
    prompts: list[Prompt],
    args: argparse.Namespace,
    evidence: Evidence,
    advance,
) -> None:
    """One warm-up, then every level in turn; a level's records are saved when it ends."""
    requests = chat_requests(backend, prompts)
    if backend.speaks_openai and backend.base_url and not backend.blocked:
        asyncio.run(sweep_openai(backend, levels, requests, args, evidence, advance))
        return
    try:
        client = timed_client_for(backend, args.timeout, connections=max(level.in_flight for level in levels))
    except Exception as error:
        line = backend.explain(error)
        console.print(f"[red]{backend.name}:[/red] {line}")
        for level in levels:
            for run in range(1, level.requests + 1):
                evidence.data["records"].append(
                    RequestRecord(backend=backend.name, run=run, error=line, level=level.to_json()).to_json()
                )
            advance(level.requests)
        evidence.save()
        return
    try:
        warm = warm_up(client, backend.name)
        evidence.data["warm_up"].append(warm.to_json())
        for level in levels:
            records = run_level(client.chat, backend.explain, backend.name, level, requests, args.seed)
            keep_level(backend, level, records, evidence, advance)
    finally:
        client.close()


async def sweep_openai(
    backend: Backend,
    levels: list[LoadLevel],
    requests: list[ChatRequest],
    args: argparse.Namespace,
    evidence: Evidence,
    advance,
) -> None:
    """The OpenAI-compatible path: every stream of a level on one event loop (see openai_async)."""
    connections = max(level.in_flight for level in levels)
    async with AsyncOpenAIStreamClient(
        backend.base_url, backend.model_id, timeout_s=args.timeout, connections=connections
    ) as client:
        for level in levels:
            # As many untimed warm-ups at once as the level keeps in flight: every connection it
            # will use is open before the first timed request (through an SSM port forward each
            # new connection is a new tunnel stream, which would land in time to first token).
            opening = min(level.in_flight, WARM_CONNECTIONS_MAX)
            warm = await asyncio.gather(*(warm_up_async(client, backend.name) for _ in range(opening)))
            for record in warm:
                record.level = level.to_json()
            evidence.data["warm_up"].extend(r.to_json() for r in warm)
            records = await run_level_async(client.chat, backend.explain, backend.name, level, requests, args.seed)
            keep_level(backend, level, records, evidence, advance)


def keep_level(backend: Backend, level: LoadLevel, records: list[RequestRecord], evidence: Evidence, advance) -> None:
    evidence.data["records"].extend(r.to_json() for r in records)
    evidence.save()
    advance(level.requests)
    failed = sum(1 for r in records if not r.ok)
    if failed:
        first = next(r.error for r in records if r.error)
        console.print(f"[red]{backend.name} {level.label}:[/red] {failed} of {len(records)} failed; first: {first}")


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
    columns = [
        "backend",
        "model",
        "ok/runs",
        "median s",
        "median TTFT s",
        "median tok/s",
        "survey tok/s",
        "tok/s range",
        "tokens",
        "distinct",
    ]
    if server_figures:
        columns += ["server tok/s", "client overhead ms"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("backend", "model") else "right")
    if baseline is not None:
        table.add_column("tok/s change", justify="right")
    ceilings = roofline(evidence)
    if ceilings:
        table.add_column("decode ceiling tok/s", justify="right")
        table.add_column("share", justify="right")
    table.add_column("notes")
    old = bench_summary(baseline) if baseline else {}
    survey = survey_figures(evidence)
    same = same_text(evidence)
    served = models(evidence)

    for name, row in summary.items():
        notes = []
        if same.get(name):
            notes.append(f"same text as {', '.join(same[name])}")
        if "client-chunks" in row["token_sources"]:
            notes.append("tokens counted by client (no server usage)")
        if row["new_connections"]:
            retried = f", {row['stale_retries']} resent after the server closed it" if row["stale_retries"] else ""
            notes.append(f"new connection on {row['new_connections']} of {row['runs']} timed requests{retried}")
        if row["first_error"]:
            notes.append(row["first_error"])
        cells = [
            name,
            served.get(name, "-"),
            f"{row['ok']}/{row['runs']}",
            fmt(row["median_s"]),
            fmt(row["median_ttft_s"]),
            fmt(row["median_tok_s"], 1),
            " / ".join(f"{v:g}" for v in survey.get(name, ())) or "-",
            fmt_range(row["tok_s_range"]),
            fmt_range(row["token_range"], 0),
            str(row["distinct_completions"]) if row["ok"] else "-",
        ]
        if server_figures:
            overhead = row["median_overhead_s"]
            cells += [fmt(row["median_server_tok_s"], 1), fmt(overhead * 1000 if overhead is not None else None, 1)]
        if baseline is not None:
            cells.append(change_percent(old.get(name, {}).get("median_tok_s"), row["median_tok_s"]))
        if ceilings:
            figures = ceilings.get(name, {})
            share = figures.get("share")
            cells += [fmt(figures.get("ceiling_tok_s"), 1), f"{share:.0%}" if share is not None else "-"]
        table.add_row(*cells, "; ".join(notes))
    return table


def roofline(evidence: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Per backend with a catalog bandwidth and bytes per token: the decode ceiling (bandwidth /
    bytes read per token) and the share of it the median single-request decode rate reached."""
    ceilings = {}
    for backend in evidence.get("backends", []):
        spec = backend.get("catalog") or {}
        if spec.get("memory_bandwidth_gbs") and spec.get("decode_read_gb"):
            ceilings[backend["name"]] = spec["memory_bandwidth_gbs"] / spec["decode_read_gb"]
    result = {}
    for (name, label), records in level_groups(evidence).items():
        if name in ceilings and label == "1 at a time":
            rate = median(r.get("decode_tokens_per_s") for r in records if r.get("ok"))
            result[name] = {
                "ceiling_tok_s": ceilings[name],
                "decode_tok_s": rate,
                "share": rate / ceilings[name] if rate else None,
            }
    return result


def survey_figures(evidence: dict[str, Any]) -> dict[str, tuple[float, ...]]:
    """Per backend, the survey's published single-request tok/s (catalog, with its source)."""
    return {b["name"]: tuple((b.get("catalog") or {}).get("survey_tok_s") or ()) for b in evidence.get("backends", [])}


def same_text(evidence: dict[str, Any]) -> dict[str, list[str]]:
    """Backends whose completions were word for word the same set (the survey found g6 = SageMaker,
    one model and engine on two services, and inf2 = trn1, one image on two chips)."""
    texts: dict[str, frozenset[str]] = {}
    for record in evidence.get("records", []):
        if record.get("ok"):
            texts[record["backend"]] = texts.get(record["backend"], frozenset()) | {" ".join(record["text"].split())}
    return {
        name: sorted(other for other, theirs in texts.items() if other != name and theirs == mine)
        for name, mine in texts.items()
    }


def is_sweep(evidence: dict[str, Any]) -> bool:
    return bool(evidence.get("config", {}).get("levels"))


def sweep_table(evidence: dict[str, Any]) -> Table:
    """Per backend and level: counts, throughputs, and latency percentiles in milliseconds."""
    config = evidence["config"]
    table = Table(title=f"bench sweep: {config.get('prompts')} prompt(s), seed {config.get('seed')}")
    columns = [
        "backend",
        "model",
        "load",
        "ok/failed",
        "req/s",
        "out tok/s",
        "TTFT ms p50/p90/p99",
        "ITL ms p50/p90/p99",
        "TPOT ms p50",
        "e2e s p50/p99",
        "notes",
    ]
    for column in columns:
        table.add_column(column, justify="left" if column in ("backend", "model", "load", "notes") else "right")
    served = models(evidence)
    for (backend, label), records in level_groups(evidence).items():
        row = level_summary(records)
        notes = []
        if row["itl_method"] and row["itl_method"] != ["server running count"]:
            notes.append("ITL: " + "; ".join(row["itl_method"]))
        if row["max_send_lag_s"] is not None and row["max_send_lag_s"] > 0.05:
            notes.append(f"sends up to {row['max_send_lag_s'] * 1000:.0f} ms late")
        if row["first_error"]:
            notes.append(row["first_error"])
        table.add_row(
            backend,
            served.get(backend, "-"),
            label,
            f"{row['completed']}/{row['failed']}",
            fmt(row["request_throughput"], 2),
            fmt(row["output_tok_s"], 1),
            ms_triple(row["ttft_s"]),
            ms_triple(row["itl_s"]),
            fmt(_ms(row["tpot_s"]["median"]), 1),
            f"{fmt(row['e2e_s']['median'], 2)}/{fmt(row['e2e_s']['p99'], 2)}",
            "; ".join(notes),
        )
    return table


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1000


def ms_triple(figures: dict[str, float | None]) -> str:
    return "/".join(fmt(_ms(figures[key]), 1) for key in ("median", "p90", "p99"))


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    out.print(sweep_table(evidence) if is_sweep(evidence) else bench_table(evidence, baseline))


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
