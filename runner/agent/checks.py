"""The check's machinery: wait for every backend at once, then one plain answer and one tool call
each through the shared agent."""

from __future__ import annotations

import argparse
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import replace

from strands import tool

from runner.agent.limits import AgentLimits
from runner.agent.models import strands_model
from runner.agent.run import run_agent
from runner.cloud.aws import boto_client
from runner.core.agent_evidence import CheckHealth, CheckResult, TimedAnswer
from runner.core.backends import Backend
from runner.core.errors import describe
from runner.core.records import RequestRecord
from runner.core.typed_json import JsonObject
from runner.measure.clients import timed_client_for
from runner.measure.health import Health, wait_healthy
from runner.measure.records import ChatRequest

PLAIN_PROMPT = "What is the capital of France? Answer in one word."


TOOL_PROMPT = "Use the add_numbers tool to add 17 and 25, then say the result."


TOOL_ARGS = {"a": 17, "b": 25}


def make_add_tool(seen: list[JsonObject]):
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


# A step of the check, said as it starts and ends (runner/cli/progress.py `step`): it yields a
# callable that sets what the step ended with ("passed", "failed: why").
Step = Callable[[str], AbstractContextManager[Callable[[str], None]]]


@contextlib.contextmanager
def unsaid(_text: str):
    yield lambda _outcome: None


def verdict(ok: bool | None, error: str | None = None) -> str:
    return "passed" if ok else "not applicable" if ok is None else "failed" + (f": {error}" if error else "")


def check_backend(backend: Backend, health: Health, args: argparse.Namespace, step: Step = unsaid) -> CheckResult:
    record = CheckResult(backend.name, CheckHealth(health.healthy, round(health.waited_s, 2), health.detail))
    if not health.healthy:
        return replace(record, reached=False, plain_ok=False, tool_ok=False, error=f"not healthy: {health.detail}")
    if not backend.supports.agent:
        with step(f"{backend.name}: the plain answer") as done:
            record = plain_answer(backend, args, record)
            done(verdict(record.plain_ok, record.error))
        return record
    try:
        model = strands_model(backend, max_tokens=args.max_tokens, timeout_s=args.timeout)
    except Exception as error:
        return replace(record, reached=False, plain_ok=False, tool_ok=False, error=backend.explain(error))
    with step(f"{backend.name}: the plain answer") as done:
        plain = run_agent(model, PLAIN_PROMPT, limits=AgentLimits(max_model_calls=2, max_tool_calls=0))
        done(verdict(plain.ok and bool(plain.answer), plain.error))
    record = replace(
        record,
        plain=plain,
        plain_ok=plain.ok and bool(plain.answer),
        plain_says_paris="paris" in plain.answer.lower(),
        reached=plain.reached,
    )
    if not backend.supports_tools:
        return replace(record, tool_ok=None, tool_note="server ignores tool definitions")
    seen: list[JsonObject] = []
    with step(f"{backend.name}: the tool call") as done:
        tooled = run_agent(
            model, TOOL_PROMPT, tools=[make_add_tool(seen)], limits=AgentLimits(max_model_calls=4, max_tool_calls=4)
        )
        done(verdict(tooled.ok and TOOL_ARGS in seen, tooled.error))
    # A run stopped by its limits or by a backend error never passes, whatever it called.
    return replace(
        record,
        tool=tooled,
        tool_args_seen=seen,
        tool_ok=tooled.ok and TOOL_ARGS in seen,
        reached=record.reached or tooled.reached,
    )


def plain_answer(backend: Backend, args: argparse.Namespace, record: CheckResult) -> CheckResult:
    """One plain question through the path's own timed client; the tool check does not apply."""
    record = replace(record, tool_ok=None, tool_note=backend.supports.reason("agent"))
    if not backend.timed_chat:
        return replace(record, reached=None, plain_ok=None)
    answer = RequestRecord(backend=backend.name, run=1)
    try:
        client = timed_client_for(backend, args.timeout)
        try:
            client.chat(ChatRequest(prompt=PLAIN_PROMPT, max_tokens=args.max_tokens), answer)
        finally:
            client.close()
    except Exception as error:
        return replace(record, reached=False, plain_ok=False, error=backend.explain(error))
    return replace(
        record,
        plain=TimedAnswer(answer, answer.text),
        reached=True,
        plain_ok=bool(answer.ok and answer.text),
        plain_says_paris="paris" in answer.text.lower(),
        error=None if answer.ok else answer.error or describe(RuntimeError("no answer")),
    )
