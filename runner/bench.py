"""`python -m runner.bench`: one fixed prompt, streamed and timed, `--repeats` times per backend.

Per request: time to first token, end-to-end time, output tokens (server usage), tokens/s, and
the server's own timings where it reports them. Every backend is warmed the same way first (an
untimed "Hi", 4 tokens, kept apart in the evidence). One failing backend never stops the
others; the exit status is non-zero only when nothing was measured. Table and evidence come
from the same records.

`--in-region` adds, for each EC2 server, a second row (`<backend>@host`): the same benchmark run
on the server's own instance against its loopback port through SSM Run Command
(`runner/cloud/in_region.py`), beside the row measured through the SSM tunnel, so the difference
is the path. Records carry `"path": "tunnel"` or `"path": "in-region"`.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from runner.cli.options import add_common_arguments
from runner.cli.session import Discovery, main_guard, run_command
from runner.cloud.in_region import Run, no_instance_reason, row_name, run_in_region
from runner.core.backends import Backend
from runner.core.console import console
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence, accuracy_by_backend, load
from runner.measure import ChatRequest, RequestRecord
from runner.measure.benchmark import bench_backend, sweep_backend
from runner.measure.load import (
    LoadLevel,
    Prompt,
    plan_levels,
    read_prompts,
)
from runner.measure.records import WARM_UP

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
    parser.add_argument(
        "--quality",
        type=Path,
        metavar="FILE",
        help="runner.quality evidence: its accuracy per backend goes beside the speed in the table",
    )
    parser.add_argument(
        "--in-region",
        action="store_true",
        help="also run the benchmark on each EC2 server's own instance (SSM Run Command): a second row per server",
    )
    add_common_arguments(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.repeats < 1:
        raise SystemExit("error: --repeats must be at least 1")
    baseline = load(args.compare) if args.compare else None
    accuracy = quality_accuracy(args.quality) if args.quality else {}
    levels = plan_levels(args.concurrency, args.rate, args.requests, args.max_concurrency)
    if args.in_region and (levels or args.prompts):
        raise RunnerError(
            "--in-region measures one request at a time (--repeats); it does not take --concurrency, --rate or --prompts"
        )
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
        "in_region": args.in_region or None,
    }

    def measure(discovery: Discovery, evidence: Evidence) -> None:
        if accuracy:
            evidence.data["accuracy"] = accuracy
        servers = plan_in_region(discovery, evidence) if args.in_region else []
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
        if servers:
            bench_in_region(servers, request, args, evidence)

    return run_command(
        "bench", args, config, measure, measured=lambda records: any(r["ok"] for r in records), baseline=baseline
    )


def quality_accuracy(path: Path) -> dict[str, dict]:
    """The accuracy per backend of a runner.quality evidence file; another command's is one line."""
    data = load(path)
    if data["command"] != "quality":
        raise RunnerError(f"--quality {path}: {data['command']} evidence; it takes runner.quality evidence")
    return accuracy_by_backend([data])


TUNNEL_NOTE = "through the SSM tunnel from this machine"
API_NOTE = "from this machine through the AWS API; no in-region row (no host of ours to run on: see the note)"


def plan_in_region(discovery: Discovery, evidence: Evidence) -> list[Backend]:
    """The servers the kit can run on; one line for each backend it cannot (none at all: bad input)."""
    if not discovery.aws:
        raise RunnerError(
            "--in-region runs the benchmark on each server through SSM Run Command, which needs AWS: "
            "configure credentials or pass --aws"
        )
    servers, lines = [], []
    for backend in discovery.backends:
        reason = no_instance_reason(backend)
        if reason is None:
            servers.append(backend)
        else:
            lines.append(reason)
    if not servers:
        raise RunnerError("--in-region: " + "; ".join(lines or ["no backend selected"]))
    for line in lines:
        console.print(f"[yellow]note:[/yellow] {line}")
        evidence.notice(line)
    api = {backend.name for backend in discovery.backends if backend.aws_api}
    for entry in evidence.data["backends"]:
        if entry["name"] in api:
            entry["path_note"] = API_NOTE
    return servers


def bench_in_region(servers: list[Backend], request: ChatRequest, args: argparse.Namespace, evidence: Evidence) -> None:
    """The tunnel rows named as such, then every server's run on its own host as a row of its own."""
    names = {backend.name for backend in servers}
    for record in evidence.data["records"]:
        if record["backend"] in names:
            record["path"] = "tunnel"
    for entry in evidence.data["backends"]:
        if entry["name"] in names:
            entry.update(path="tunnel", path_note=TUNNEL_NOTE)
    evidence.save()
    config = {
        "prompt": request.prompt,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "usage_per_chunk": request.usage_per_chunk,
        "repeats": args.repeats,
        "timeout_s": args.timeout,
        "warm_up": {
            "prompt": WARM_UP.prompt,
            "max_tokens": WARM_UP.max_tokens,
            "temperature": WARM_UP.temperature,
            "usage_per_chunk": WARM_UP.usage_per_chunk,
        },
        "level": LoadLevel("concurrency", 1, args.repeats).to_json(),
    }
    console.print(f"[dim]in the region: {', '.join(sorted(names))} through SSM Run Command …[/dim]")
    outcomes = run_in_region(
        servers,
        config,
        repeats=args.repeats,
        timeout_s=args.timeout,
        poll_s=IN_REGION_POLL_S,
        on_line=lambda line: console.print(f"[dim]{line}[/dim]"),
    )
    evidence.data["in_region"] = []
    for outcome in outcomes:
        if isinstance(outcome, str):
            console.print(f"[yellow]note:[/yellow] {outcome}")
            evidence.notice(outcome)
            continue
        evidence.data["in_region"].append(outcome.to_json())
        if outcome.problem:
            console.print(f"[red]{outcome.problem}[/red]")
        add_host_row(outcome, args.repeats, evidence)
    evidence.save()


# Seconds between GetCommandInvocation polls (tests set it lower).
IN_REGION_POLL_S = 2.0


def host_note(run: Run) -> str:
    """The second row's label: on the server's host, sharing its CPUs (how many, where the kit said)."""
    host = (run.result or {}).get("host") or {}
    client = (run.result or {}).get("client") or {}
    vcpus = host.get("vcpus")
    what = ", ".join(filter(None, [run.output.instance_type, f"{vcpus} vCPUs" if vcpus else None]))
    note = (
        f"on the server's own host{f' ({what})' if what else ''}: the client shares the server's CPUs; no network path"
    )
    if client.get("cpu_s") is not None and client.get("wall_s"):
        note += f"; the client used {client['cpu_s'] / client['wall_s']:.0%} of one vCPU"
    return note


def add_host_row(run: Run, repeats: int, evidence: Evidence) -> None:
    """The run's records under `<backend>@host`, in RequestRecord's shape (derived figures computed
    here, by the runner's own code); a run without records gets one error record per timed request."""
    row = row_name(run.backend.name)
    entry: dict[str, Any] = dataclasses.replace(
        run.backend,
        name=row,
        source=f"{run.backend.source}, in-region kit on {run.instance_id}",
        base_url=run.config.get("base_url"),
        health_url=None,
        local_port=None,
        forward_command=None,
        notes=[],
    ).to_json()
    entry.update(path="in-region", path_note=host_note(run), instance_id=run.instance_id)
    at = next((i + 1 for i, b in enumerate(evidence.data["backends"]) if b["name"] == run.backend.name), None)
    evidence.data["backends"].insert(at if at is not None else len(evidence.data["backends"]), entry)
    if run.result is None:
        for number in range(1, repeats + 1):
            record = RequestRecord(backend=row, run=number, error=run.problem, level=run.config.get("level"))
            evidence.data["records"].append(record.to_json() | {"path": "in-region"})
        return
    evidence.data["warm_up"].append(kit_record(run.result.get("warm_up") or {}, row))
    for record in run.result["records"]:
        evidence.data["records"].append(kit_record(record, row))


RECORD_FIELDS = frozenset(f.name for f in dataclasses.fields(RequestRecord))


def kit_record(data: dict[str, Any], row: str) -> dict[str, Any]:
    values = {k: v for k, v in data.items() if k in RECORD_FIELDS} | {"backend": row}
    values.setdefault("run", 0)
    return RequestRecord(**values).to_json() | {"path": "in-region"}


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
