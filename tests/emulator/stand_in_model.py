"""What every forwarded port leads to in a survey on the emulator: the scripted OpenAI-compatible
server (tests/runner/fake_openai.py, vLLM's wire behaviour), answering each request by what it
asks, as a tool-calling model would, so every step of a survey can run against it in any order:

- with the orchestrator's tools (`ask_<backend>`, `scoreboard`): each ask tool once, then the
  scoreboard, then a closing sentence;
- with other tools and no tool result yet: the call the demo or check wants (`count_ids` with
  `id >= 10`, `list_ids`, `add_numbers` 17 and 25, `lookup`), then an answer from its result;
- without tools: "Paris" to the capital question, else a nine-token paragraph (the benchmark).

`on_request(body)` runs before each answer (a test's Ctrl-C lands there)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.runner.fake_openai import FakeOpenAI, Step, counted_prompt, text, tool_call

PARAGRAPH = "The ocean is wide and deep."
PARAGRAPH_TOKENS = 9
FIRST_CALL = {
    "count_ids": {"op": ">=", "value": 10},
    "list_ids": {},
    "add_numbers": {"a": 17, "b": 25},
    "lookup": {"id": "K-100"},
}
AFTER_CALL = {"count_ids": "There are 8 ids that are 10 or more.\nAnswer: 8", "list_ids": "Counting them.\nAnswer: 8"}


def content_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


class StandInModel(FakeOpenAI):
    def __init__(self) -> None:
        super().__init__([text(PARAGRAPH)])
        self.on_request: Callable[[dict[str, Any]], None] | None = None

    def respond(self, handler: Any, step: Step, body: dict[str, Any]) -> None:
        if self.on_request is not None:
            self.on_request(body)
        step = answer(body)
        step.prompt_tokens = counted_prompt(body)
        super().respond(handler, step, body)


def answer(body: dict[str, Any]) -> Step:
    messages = body.get("messages") or []
    tools = [t["function"]["name"] for t in body.get("tools") or []]
    called = [
        call["function"]["name"]
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
    ]
    if tools:
        asks = [t for t in tools if t.startswith("ask_")]
        if asks:
            for tool in [*asks, "scoreboard"]:
                if tool in tools and tool not in called:
                    return tool_call(tool, {})
            return text("The scoreboard is in: every backend said Paris.")
        if not messages or messages[-1].get("role") != "tool":
            tool = next((t for t in FIRST_CALL if t in tools), None)
            if tool is not None:
                return tool_call(tool, FIRST_CALL[tool])
        last_call = called[-1] if called else ""
        return text(AFTER_CALL.get(last_call, "The result is 42."))
    question = " ".join(content_text(m) for m in messages if m.get("role") == "user")
    if "capital of France" in question:
        return text("Paris")
    return text(PARAGRAPH, usage_tokens=PARAGRAPH_TOKENS)
