"""A tool-calling model on loopback for agent traffic (tests/runner/fake_openai.py's wire format):
it reads each request as a model that follows instructions would, so concurrent agent sessions
each get their own right answer, and every model call takes `delay_s` (a speed the test sets).

- tools offered, no tool result yet: the call the question asks for (`count_ids` with `id >= 10`;
  `add_numbers` with the two numbers of the question; `lookup` with its item id, or, with
  `wrong_lookup`, an id that is not in the table);
- after a tool result: a sentence and `Answer: N`, N read from the result."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.runner.fake_openai import FakeOpenAI, Step, text, tool_call


def user_text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        if message.get("role") == "user":
            content = message.get("content")
            parts += [p.get("text", "") for p in content] if isinstance(content, list) else [str(content or "")]
    return " ".join(parts)


def tool_result(message: dict[str, Any]) -> Any:
    content = message.get("content")
    raw = " ".join(p.get("text", "") for p in content) if isinstance(content, list) else str(content or "")
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


class AgentModel(FakeOpenAI):
    def __init__(self, delay_s: float = 0.0, wrong_lookup: bool = False) -> None:
        super().__init__([text("unused")])
        self.delay_s = delay_s
        self.wrong_lookup = wrong_lookup

    def respond(self, handler: Any, step: Step, body: dict[str, Any]) -> None:
        answer = self.answer(body)
        answer.delay_s = self.delay_s
        super().respond(handler, answer, body)

    def answer(self, body: dict[str, Any]) -> Step:
        messages = body.get("messages") or []
        tools = {t["function"]["name"] for t in body.get("tools") or []}
        if messages and messages[-1].get("role") == "tool":
            result = tool_result(messages[-1])
            if isinstance(result, dict):
                number = result.get("count", result.get("in_stock", result.get("sum")))
            else:
                number = result
            return text(f"The result is {number}.\nAnswer: {number}")
        question = user_text(messages)
        if "count_ids" in tools:
            return tool_call("count_ids", {"op": ">=", "value": 10})
        if (numbers := re.search(r"add (\d+) and (\d+)", question)) and "add_numbers" in tools:
            return tool_call("add_numbers", {"a": int(numbers[1]), "b": int(numbers[2])})
        if (item := re.search(r"item ([A-Z]-\d+)", question)) and "lookup" in tools:
            return tool_call("lookup", {"id": "Z-000" if self.wrong_lookup else item[1]})
        return text("I cannot tell.")
