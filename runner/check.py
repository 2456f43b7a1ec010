"""`python -m runner.check --wait SECONDS`: per backend, wait until healthy, then one plain
answer and one tool call through the shared agent. A table says what passed."""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table
from strands import tool

from runner.agent_limits import AgentLimits
from runner.agent_run import run_agent
from runner.aws import boto_client, credentials_configured
from runner.errors import describe
from runner.health import wait_healthy
from runner.models import strands_model
from runner.session import add_common_arguments, conclude, console, main_guard, run_session

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
    parser.add_argument("--wait", type=float, default=0.0, help="seconds to wait for each backend to be healthy")
    parser.add_argument("--max-tokens", type=int, default=128, help="per model call (default: %(default)s)")
    add_common_arguments(parser)
    return parser


def readiness_client(backend, args):
    """An SSM client to read the server's readiness parameter, only when AWS is in use."""
    if not (backend.output and backend.output.readiness_parameter) or args.aws is False:
        return None
    if args.aws is None and not credentials_configured():
        return None
    return boto_client("ssm", backend.output.region, 10)


def check_backend(backend, args) -> dict[str, Any]:
    record: dict[str, Any] = {"backend": backend.name}
    health = wait_healthy(backend, args.wait, ssm_client=readiness_client(backend, args))
    record["health"] = {"healthy": health.healthy, "waited_s": round(health.waited_s, 2), "detail": health.detail}
    if not health.healthy:
        record.update(reached=False, plain_ok=False, tool_ok=False, error=f"not healthy: {health.detail}")
        return record
    try:
        model = strands_model(backend, max_tokens=args.max_tokens, timeout_s=args.timeout)
    except Exception as error:
        record.update(reached=False, plain_ok=False, tool_ok=False, error=describe(error))
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
    record["tool_ok"] = TOOL_ARGS in seen
    record["reached"] = record["reached"] or tooled.reached
    return record


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    config = {"plain_prompt": PLAIN_PROMPT, "tool_prompt": TOOL_PROMPT, "wait_s": args.wait}
    interrupted = False
    with run_session("check", args, config) as (discovery, evidence):
        try:
            for backend in discovery.backends:
                console.print(f"[dim]checking {backend.name} …[/dim]")
                evidence.add_record(check_backend(backend, args))
        except KeyboardInterrupt:
            interrupted = True
        measured = any(r.get("reached") for r in evidence.data["records"])
        return conclude(evidence, interrupted=interrupted, measured=measured)


def _mark(value: bool | None) -> str:
    return "n/a" if value is None else ("pass" if value else "FAIL")


def check_table(evidence: dict[str, Any]) -> Table:
    table = Table(title="check: health, one plain answer, one tool call")
    for column in ("backend", "healthy", "waited s", "plain answer", "answer", "tool call", "tool args", "error"):
        table.add_column(column)
    for record in evidence["records"]:
        health = record.get("health", {})
        answer = (record.get("plain") or {}).get("answer", "")
        table.add_row(
            record["backend"],
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
    return table


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
