"""One Strands model object per backend; every backend drives the same agent code.

Provider boundary, as in Strands' own `models/`: OpenAI-compatible servers (vLLM, Neuron,
the embedded model, `--endpoint`) use `OpenAIModel`; Bedrock uses `BedrockModel`; the
SageMaker endpoint uses `SageMakerAIModel` behind a client that cleans vLLM's usage record.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager
from typing import Any

from strands.models.openai import OpenAIModel

from runner.core.backends import Backend
from runner.core.errors import RunnerError
from runner.core.references import resolve
from runner.core.tls import tls_context
from runner.measure.records import check_finish_reason
from runner.measure.sagemaker import payload_parts
from runner.timing.stream import check_stream_end, sse_lines

# The fields Strands' SageMaker provider passes to `UsageMetadata(**usage)`; vLLM adds others
# (completion_tokens_details, ...) that make that constructor raise TypeError on every call.
SAGEMAKER_USAGE_FIELDS = ("total_tokens", "completion_tokens", "prompt_tokens", "prompt_tokens_details")


def clean_usage(payload: Any) -> Any:
    """Drop usage keys Strands cannot take, wherever vLLM puts usage; token counts are unchanged."""
    if not isinstance(payload, dict):
        return payload
    for holder in [payload, *(c for c in payload.get("choices") or [] if isinstance(c, dict))]:
        usage = holder.get("usage")
        if isinstance(usage, dict):
            holder["usage"] = {k: v for k, v in usage.items() if k in SAGEMAKER_USAGE_FIELDS}
    return payload


def _clean_sse_line(line: bytes) -> bytes:
    text = line.decode("utf-8", errors="replace")
    stripped = text.strip()
    prefix = "data:" if stripped.startswith("data:") else ""
    payload = stripped[len(prefix) :].strip()
    if not payload.startswith("{") or '"usage"' not in payload:
        return line
    try:
        data = json.loads(payload)
    except json.JSONDecodeError:
        return line
    return f"{prefix + ' ' if prefix else ''}{json.dumps(clean_usage(data))}".encode()


def clean_event_stream(events: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Re-frame PayloadPart events on line boundaries and clean each usage record."""
    for line in sse_lines(payload_parts(events)):
        yield {"PayloadPart": {"Bytes": _clean_sse_line(line) + b"\n"}}


class UsageCleaningSageMakerClient:
    """Wraps a boto3 sagemaker-runtime client; everything but the two invoke calls passes through."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def invoke_endpoint(self, **request: Any) -> dict[str, Any]:
        response = dict(self._client.invoke_endpoint(**request))
        body = response["Body"].read()
        try:
            cleaned = json.dumps(clean_usage(json.loads(body))).encode()
        except json.JSONDecodeError:
            cleaned = body
        response["Body"] = io.BytesIO(cleaned)
        return response

    def invoke_endpoint_with_response_stream(self, **request: Any) -> dict[str, Any]:
        response = dict(self._client.invoke_endpoint_with_response_stream(**request))
        response["Body"] = clean_event_stream(response["Body"])
        return response


class _FinishCheckedStream:
    """Proxies an OpenAI async stream; ending without a finish reason, or with an abnormal one
    (content_filter, abort, ...), raises instead of passing as a short answer."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._iterator = stream.__aiter__()
        self.chunks = 0
        self.finish_reason: str | None = None

    def __aiter__(self) -> _FinishCheckedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            event = await self._iterator.__anext__()
        except StopAsyncIteration:
            check_stream_end(self.chunks, self.finish_reason)
            raise
        self.chunks += 1
        for choice in getattr(event, "choices", None) or []:
            reason = getattr(choice, "finish_reason", None)
            if reason:
                check_finish_reason(reason)
                self.finish_reason = reason
        return event

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _CheckedCompletions:
    def __init__(self, completions: Any) -> None:
        self._completions = completions

    async def create(self, **request: Any) -> Any:
        response = await self._completions.create(**request)
        return _FinishCheckedStream(response) if request.get("stream") else response


class _CheckedChat:
    def __init__(self, chat: Any) -> None:
        self.completions = _CheckedCompletions(chat.completions)


class _CheckedClient:
    def __init__(self, client: Any) -> None:
        self._client = client
        self.chat = _CheckedChat(client.chat)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class StrictOpenAIModel(OpenAIModel):
    """OpenAIModel made to fit what real servers accept and to say what they really did.

    - A stream without a finish reason (or with an abnormal one) is an error, not a short answer:
      Strands' provider maps a missing finish reason to `end_turn`.
    - No `tools: []` and no `tool_choice` without tools: vLLM (0.26 and later) answers HTTP 400
      "`tools` must not be an empty array", and Strands sends one for every agent without tools.
    - `force_first_tool`: the first model call of a run names that tool in `tool_choice`, so the
      server must produce a call to it (vLLM constrains the output to the tool's schema); later
      calls are free to answer, so the loop ends.
    """

    def __init__(self, *args: Any, force_first_tool: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.force_first_tool = force_first_tool

    def format_request(self, messages: Any, tool_specs: Any = None, *args: Any, **kwargs: Any) -> dict[str, Any]:
        request = super().format_request(messages, tool_specs, *args, **kwargs)
        if not request.get("tools"):
            request.pop("tools", None)
            request.pop("tool_choice", None)
        elif self.force_first_tool and not any(m.get("role") == "assistant" for m in messages):
            request["tool_choice"] = {"type": "function", "function": {"name": self.force_first_tool}}
        return request

    def _resolve_client_args(self) -> dict[str, Any]:
        """Strands builds an AsyncOpenAI client per model call (connections belong to one event
        loop) from these arguments: each gets its HTTP client on the process's one TLS context,
        not a new one (runner/core/tls.py). The client closes it when the call ends."""
        import openai

        return super()._resolve_client_args() | {"http_client": openai.DefaultAsyncHttpxClient(verify=tls_context())}

    @asynccontextmanager
    async def _get_client(self) -> AsyncIterator[Any]:
        async with super()._get_client() as client:
            yield _CheckedClient(client)


def sagemaker_model(
    endpoint_name: str,
    region: str,
    *,
    max_tokens: int,
    temperature: float,
    client: Any = None,
    inference_component: str | None = None,
):
    """Strands' SageMaker model; on an endpoint of inference components it names the component
    (its endpoint config's `inference_component_name`, sent as InvokeEndpoint's InferenceComponentName)."""
    from strands.models.sagemaker import SageMakerAIModel

    endpoint = {"endpoint_name": endpoint_name, "region_name": region}
    model = SageMakerAIModel(
        endpoint_config=endpoint | ({"inference_component_name": inference_component} if inference_component else {}),
        payload_config={"max_tokens": max_tokens, "stream": False, "temperature": temperature},
    )
    model.client = UsageCleaningSageMakerClient(client if client is not None else model.client)
    return model


def strands_model(
    backend: Backend,
    *,
    max_tokens: int = 512,
    temperature: float = 0.0,
    timeout_s: float = 60.0,
    force_first_tool: str | None = None,
):
    """The Strands model object for `backend`, built as its serving row names (`agent_model`; an AWS
    client only for a backend AWS may be used for). `force_first_tool` applies to OpenAI-compatible
    servers only."""
    backend.require_reachable()
    reference = backend.supports.agent_model if backend.supports.agent else ""
    if not reference:
        raise RunnerError(f"backend {backend.name}: no Strands model for kind {backend.kind.value}")
    build = resolve(reference)
    return build(backend, max_tokens, temperature, timeout_s, force_first_tool)


def openai_agent_model(
    backend: Backend, max_tokens: int, temperature: float, timeout_s: float, force_first_tool: str | None
):
    return StrictOpenAIModel(
        client_args={"base_url": backend.base_url, "api_key": "unused", "timeout": timeout_s, "max_retries": 0},
        model_id=backend.model_id,
        params={"max_tokens": max_tokens, "temperature": temperature},
        force_first_tool=force_first_tool,
    )


def bedrock_agent_model(
    backend: Backend, max_tokens: int, temperature: float, timeout_s: float, force_first_tool: str | None
):
    from botocore.config import Config
    from strands.models import BedrockModel

    return BedrockModel(
        model_id=backend.model_id,
        region_name=backend.region,
        temperature=temperature,
        max_tokens=max_tokens,
        boto_client_config=Config(read_timeout=timeout_s, connect_timeout=5, retries={"total_max_attempts": 1}),
    )


def sagemaker_agent_model(
    backend: Backend, max_tokens: int, temperature: float, timeout_s: float, force_first_tool: str | None
):
    # Serverless answers InvokeEndpoint with one JSON body, as the model asks (stream False).
    if not backend.endpoint_name or not backend.region:
        raise RunnerError(f"backend {backend.name}: no SageMaker endpoint name or region")
    return sagemaker_model(backend.endpoint_name, backend.region, max_tokens=max_tokens, temperature=temperature)


def component_agent_model(
    backend: Backend, max_tokens: int, temperature: float, timeout_s: float, force_first_tool: str | None
):
    """The same model on an endpoint of inference components, naming its component. At zero copies
    the first call is refused for no capacity (and starts a copy): the agent's step fails with that
    line, as any refused call does."""
    component = backend.output.inference_component_name if backend.output else None
    if not backend.endpoint_name or not backend.region or not component:
        raise RunnerError(f"backend {backend.name}: no SageMaker endpoint, region or inference component")
    return sagemaker_model(
        backend.endpoint_name,
        backend.region,
        max_tokens=max_tokens,
        temperature=temperature,
        inference_component=component,
    )
