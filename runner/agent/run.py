"""Runs the shared Strands agent once, under limits, and reports what it said and did."""

from __future__ import annotations

import time
from typing import Any

from strands import Agent

from runner.agent.limits import AgentLimits
from runner.core.agent_evidence import AgentRun
from runner.core.errors import describe, gave_no_answer


def run_agent(
    model: Any,
    prompt: str,
    *,
    tools: list[Any] | None = None,
    system_prompt: str | None = None,
    limits: AgentLimits | None = None,
) -> AgentRun:
    """One invocation; a fault becomes `error`, never an exception (one backend never stops the rest)."""
    limits = limits or AgentLimits()
    agent = Agent(
        model=model,
        tools=tools or [],
        system_prompt=system_prompt,
        callback_handler=None,
        hooks=[limits],
        retry_strategy=None,
    )
    started = time.perf_counter()
    try:
        result = agent(prompt)
    except Exception as error:
        return AgentRun(
            ok=False,
            seconds=time.perf_counter() - started,
            answer=_last_assistant_text(agent),
            error=describe(error),
            reached=not gave_no_answer(error),
            tool_calls=limits.tool_calls,
            model_calls=limits.model_calls,
            stopped=limits.stopped,
        )
    usage = getattr(getattr(result, "metrics", None), "accumulated_usage", None) or {}
    return AgentRun(
        ok=limits.stopped is None,
        seconds=time.perf_counter() - started,
        answer=str(result).strip(),
        error=limits.stopped,
        tool_calls=limits.tool_calls,
        model_calls=limits.model_calls,
        stopped=limits.stopped,
        input_tokens=usage.get("inputTokens"),
        output_tokens=usage.get("outputTokens"),
    )


def _last_assistant_text(agent: Agent) -> str:
    """The partial answer a failed run left behind (e.g. cut at max tokens), for the evidence."""
    for message in reversed(agent.messages):
        if message.get("role") == "assistant":
            return "".join(block.get("text", "") for block in message.get("content", [])).strip()
    return ""
