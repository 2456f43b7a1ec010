"""`python -m runner.check --wait SECONDS`: wait until every backend is healthy (all at once), then
per backend one plain answer and one tool call through the shared agent. A table says what
passed; the exit status is 1 when nothing passed."""

from __future__ import annotations

import argparse
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rich.console import Console
from rich.table import Table
from strands import tool

from runner.agent_limits import AgentLimits
from runner.agent_run import run_agent
from runner.aws import boto_client
from runner.backends import Backend
from runner.evidence import Evidence
from runner.health import Health, wait_healthy
from runner.models import strands_model
from runner.session import Discovery, add_common_arguments, console, main_guard, run_command
from runner.tables import models

PLAIN_PROMPT = "What is the capital of France? Answer in one word."
TOOL_PROMPT = "Use the add_numbers tool to add 17 and 25, then say the result."
TOOL_ARGS = {"a": 17, "b": 25}


def make_add_tool(seen: list[dict[str, Any]]):
    @tool
    def add_numbers(a: int, b: int) -> int:
        """Add two whole numbers.

        Args:
            a: first number
            b: second number
        """
        seen.append({"a": a, "b": b})
        return a + b

    return add_numbers


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.check", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--wait", type=float, default=0.0, help="seconds to wait for the backends to be healthy (all at once)"
    )
    parser.add_argument("--max-tokens", type=int, default=128, help="per model call (default: %(default)s)")
    add_common_arguments(parser)
    return parser


def readiness_client(backend: Backend, aws: bool):
    """An SSM client to read the server's readiness parameter, only when AWS is in use."""
    if not aws or not (backend.output and backend.output.readiness_parameter):
        return None
    return boto_client("ssm", backend.output.region, 10)


def wait_all(backends: list[Backend], args: argparse.Namespace, aws: bool) -> dict[str, Health]:
    """Wait on every backend at once: four servers at `--wait 1500` take 25 minutes, not 100."""
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=max(1, len(backends)), thread_name_prefix="health")
    futures = {
        backend.name: pool.submit(
            wait_healthy, backend, args.wait, ssm_client=readiness_client(backend, aws), stop=stop
        )
        for backend in backends
    }
    try:
        return {name: future.result() for name, future in futures.items()}
    except KeyboardInterrupt:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def check_backend(backend: Backend, health: Health, args: argparse.Namespace) -> dict[str, Any]:
    record: dict[str, Any] = {"backend": backend.name}
    record["health"] = {"healthy": health.healthy, "waited_s": round(health.waited_s, 2), "detail": health.detail}
    if not health.healthy:
        record.update(reached=False, plain_ok=False, tool_ok=False, error=f"not healthy: {health.detail}")
        return record
    try:
        model = strands_model(backend, max_tokens=args.max_tokens, timeout_s=args.timeout)
    except Exception as error:
        record.update(reached=False, plain_ok=False, tool_ok=False, error=backend.explain(error))
        return record
    plain = run_agent(model, PLAIN_PROMPT, limits=AgentLimits(max_model_calls=2, max_tool_calls=0))
    record["plain"] = plain.to_json()
    record["plain_ok"] = plain.ok and bool(plain.answer)
    record["plain_says_paris"] = "paris" in plain.answer.lower()
    record["reached"] = plain.reached
    if not backend.supports_tools:
        record["tool_ok"] = None
        record["tool_note"] = "server ignores tool definitions"
        return record
    seen: list[dict[str, Any]] = []
    tooled = run_agent(
        model, TOOL_PROMPT, tools=[make_add_tool(seen)], limits=AgentLimits(max_model_calls=4, max_tool_calls=4)
    )
    record["tool"] = tooled.to_json()
    record["tool_args_seen"] = seen
    # A run stopped by its limits or by a backend error never passes, whatever it called.
    record["tool_ok"] = tooled.ok and TOOL_ARGS in seen
    record["reached"] = record["reached"] or tooled.reached
    return record


def passed(record: dict[str, Any]) -> bool:
    return bool(record.get("plain_ok") or record.get("tool_ok"))


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    config = {"plain_prompt": PLAIN_PROMPT, "tool_prompt": TOOL_PROMPT, "wait_s": args.wait}

    def measure(discovery: Discovery, evidence: Evidence) -> None:
        if args.wait > 0:
            console.print(
                f"[dim]waiting up to {args.wait:.0f} s for {len(discovery.backends)} backends at once …[/dim]"
            )
        health = wait_all(discovery.backends, args, discovery.aws)
        for backend in discovery.backends:
            console.print(f"[dim]checking {backend.name} …[/dim]")
            evidence.add_record(check_backend(backend, health[backend.name], args))

    # Exit 1 when no check passed: reaching a server that answers HTTP 500 is not a pass.
    return run_command("check", args, config, measure, measured=lambda records: any(passed(r) for r in records))


def _mark(value: bool | None) -> str:
    return "n/a" if value is None else ("pass" if value else "FAIL")


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    table = Table(title="check: health, one plain answer, one tool call")
    served = models(evidence)
    for column in (
        "backend",
        "model",
        "healthy",
        "waited s",
        "plain answer",
        "answer",
        "tool call",
        "tool args",
        "error",
    ):
        table.add_column(column)
    for record in evidence["records"]:
        health = record.get("health", {})
        answer = (record.get("plain") or {}).get("answer", "")
        table.add_row(
            record["backend"],
            served.get(record["backend"], "-"),
            _mark(health.get("healthy")),
            f"{health.get('waited_s', 0):.1f}",
            _mark(record.get("plain_ok")),
            " ".join(answer.split())[:40],
            _mark(record.get("tool_ok")) if "tool_note" not in record else f"n/a ({record['tool_note']})",
            str(record.get("tool_args_seen", "-")),
            record.get("error")
            or (record.get("plain") or {}).get("error")
            or (record.get("tool") or {}).get("error")
            or "",
        )
    out.print(table)


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
