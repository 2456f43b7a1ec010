"""What an OpenAI-compatible server says it serves (`GET /v1/models`): the model ids, and each
one's context where the server gives it (vLLM's `max_model_len`, llama.cpp's `meta.n_ctx`), so
an `--endpoint` given without `model=` names the model the server serves, not a made-up one."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from runner.core.errors import StreamFault, as_fault
from runner.core.tls import tls_context


@dataclass(frozen=True)
class ServedModel:
    id: str
    # Prompt and output tokens together, where the listing says (None: not said).
    context_tokens: int | None = None


def served_models(base_url: str, timeout_s: float = 5.0) -> list[ServedModel]:
    """The models the server lists at `<base_url>/models`; a fault is raised typed (Unreachable,
    TimedOut, HttpStatus; a body that is not a model list is a StreamFault)."""
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout_s), verify=tls_context()) as http:
            response = http.get(f"{base_url.rstrip('/')}/models")
            response.raise_for_status()
            data = response.json()
    except (httpx.HTTPError, ValueError) as error:
        raise as_fault(error) or StreamFault(f"GET /v1/models: {error}") from error
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise StreamFault('GET /v1/models: not a model list (no "data" list)')
    return [
        ServedModel(entry["id"], _context(entry))
        for entry in entries
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"]
    ]


def _context(entry: dict) -> int | None:
    meta = entry.get("meta")
    for value in (entry.get("max_model_len"), meta.get("n_ctx") if isinstance(meta, dict) else None):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
