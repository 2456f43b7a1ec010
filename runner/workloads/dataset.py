"""A user's own prompts, read from their own copy (nothing is downloaded): JSON lines of
`{"prompt": ...}` or `{"messages": [...]}` (an optional `max_tokens` each), or a ShareGPT file.

ShareGPT is read as vLLM's loader reads it (vllm/benchmarks/datasets: a JSON list of entries,
each with `conversations`, a list of `{"from": "human"|"gpt", "value": ...}`; the first human turn
is the prompt and the first reply sets the output length). A line that is not JSON, or an entry
that is not a prompt or a conversation, is one line naming where it is; nothing is sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.core.errors import RunnerError
from runner.core.files import read_text_file
from runner.workloads import Turn

ROLES = ("system", "user", "assistant")


def read_dataset(
    path: Path, default_max_tokens: int, count_reply: Callable[[str], int] | None = None
) -> tuple[list[Turn], str]:
    """(turns, format): the file's prompts in order; `count_reply` estimates a ShareGPT reply's
    length (else the default output length), and the reply is kept for the backend's own count."""
    text = read_text_file(path, "--dataset")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise RunnerError(f"--dataset {path}: not JSON ({error.msg} at line {error.lineno})") from None
        return sharegpt(path, data, default_max_tokens, count_reply), "sharegpt"
    turns = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise RunnerError(f"--dataset {path} line {number}: not JSON ({error.msg})") from None
        turns.append(json_line(path, number, item, default_max_tokens))
    if not turns:
        raise RunnerError(f"--dataset {path}: no prompt in the file")
    return turns, "jsonl"


def json_line(path: Path, number: int, item: Any, default_max_tokens: int) -> Turn:
    where = f"--dataset {path} line {number}"
    if not isinstance(item, dict):
        raise RunnerError(f'{where}: expected {{"prompt": ...}} or {{"messages": [...]}}')
    max_tokens = item.get("max_tokens", default_max_tokens)
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise RunnerError(f"{where}: max_tokens must be a whole number above 0")
    if isinstance(item.get("prompt"), str) and item["prompt"]:
        return Turn(item["prompt"], max_tokens)
    messages = item.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RunnerError(f'{where}: neither a "prompt" string nor a "messages" list')
    history: list[tuple[str, str]] = []
    for message in messages:
        role, content = (message.get("role"), message.get("content")) if isinstance(message, dict) else (None, None)
        if role not in ROLES or not isinstance(content, str):
            raise RunnerError(f"{where}: each message needs a role ({', '.join(ROLES)}) and a content string")
        history.append((role, content))
    if history[-1][0] != "user":
        raise RunnerError(f"{where}: a conversation must end with the user's message")
    return Turn(history[-1][1], max_tokens, history=tuple(history[:-1]))


def sharegpt(path: Path, data: Any, default_max_tokens: int, count_reply: Callable[[str], int] | None) -> list[Turn]:
    if not isinstance(data, list):
        raise RunnerError(f"--dataset {path}: a ShareGPT file is a JSON list of conversations")
    turns = []
    for index, entry in enumerate(data):
        conversation = entry.get("conversations") if isinstance(entry, dict) else None
        if not isinstance(conversation, list) or not conversation:
            raise RunnerError(f'--dataset {path} entry {index}: no "conversations" list (not a ShareGPT conversation)')
        asked = next((m.get("value") for m in conversation if isinstance(m, dict) and m.get("from") == "human"), None)
        reply = next((m.get("value") for m in conversation if isinstance(m, dict) and m.get("from") == "gpt"), None)
        if not isinstance(asked, str) or not asked:
            raise RunnerError(f"--dataset {path} entry {index}: no human turn to ask")
        max_tokens, kept = default_max_tokens, None
        if isinstance(reply, str) and reply and count_reply is not None:
            max_tokens, kept = max(1, count_reply(reply)), reply
        turns.append(Turn(asked, max_tokens, reply=kept))
    if not turns:
        raise RunnerError(f"--dataset {path}: no conversation in the file")
    return turns
