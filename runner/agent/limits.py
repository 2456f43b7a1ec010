"""Caps on an agent run, so a model that never stops calling tools cannot run up a bill."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from strands.hooks import BeforeModelCallEvent, BeforeToolCallEvent, HookProvider, HookRegistry

from runner.core.agent_evidence import ToolCall


@dataclass
class AgentLimits(HookProvider):
    """Stops the loop after `max_model_calls` model calls or `max_tool_calls` tool calls."""

    max_model_calls: int = 6
    max_tool_calls: int = 8
    model_calls: int = 0
    tool_calls: list[ToolCall] = field(default_factory=list)
    stopped: str | None = None

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeModelCallEvent, self._before_model)
        registry.add_callback(BeforeToolCallEvent, self._before_tool)

    def _before_model(self, event: BeforeModelCallEvent) -> None:
        self.model_calls += 1
        if self.model_calls > self.max_model_calls:
            self.stopped = f"stopped: more than {self.max_model_calls} model calls (runaway tool loop)"
            event.cancel = self.stopped

    def _before_tool(self, event: BeforeToolCallEvent) -> None:
        """Record every call the model asked for (malformed ones too), cancel past the cap."""
        cancelled = len(self.tool_calls) >= self.max_tool_calls
        if cancelled:
            self.stopped = f"stopped: more than {self.max_tool_calls} tool calls (runaway tool loop)"
            event.cancel_tool = self.stopped
        self.tool_calls.append(ToolCall(event.tool_use.get("name"), event.tool_use.get("input"), cancelled))
