"""Timed chat against SageMaker endpoints: streamed from a real-time endpoint running the vLLM
container, whole answers from a serverless one; and the reading of a whole (not streamed) chat
completion that the serverless, asynchronous and batch paths share.

Real-time: InvokeEndpointWithResponseStream returns PayloadPart events whose bytes are the
container's SSE stream, split at arbitrary byte boundaries: `sse_lines` reassembles lines before
parsing. An error event from the service (ModelStreamError, InternalStreamFailure) is raised by
botocore while the stream is read, and is typed by `runner.core.errors`.

An endpoint of inference components: see `InferenceComponentStreamClient` (the same stream, each
request naming its component; a request that finds no copy is sent again until one answers).

Serverless: see `SageMakerServerlessClient` (InvokeEndpoint, `stream: false`, no time to first
token). Batch transform: the prompt set as request bodies (`batch_bodies`) and the job's answers as
records (`batch_records`); the job itself is `runner.cloud.jobs.batch_transform`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner.cloud.aws import boto_client
from runner.core.errors import RunnerError, ServiceError, StreamFault, TimedOut, aws_error_code, describe
from runner.core.files import read_text_file
from runner.core.records import RequestRecord
from runner.core.typed_json import JsonObject
from runner.measure.records import ChatRequest, Stopwatch, check_completion, usage_counts
from runner.measure.until_served import send_until_served
from runner.timing.stream import ChatStreamAccumulator, sse_lines

# The error codes SageMaker answers a request it has no capacity for right now with: a serverless
# endpoint at its MaxConcurrency (ThrottlingException), the runtime's own rate limits.
THROTTLE_CODES = frozenset({"ThrottlingException", "Throttling", "TooManyRequestsException"})


class Throttled(ServiceError):
    """SageMaker refused the request for want of capacity (a serverless endpoint's MaxConcurrency
    reached): the request's error, one line; the next request may well go through."""


def payload_parts(events: Any) -> Any:
    """The bytes of each PayloadPart event (the only event botocore yields; errors raise)."""
    for event in events:
        if "PayloadPart" in event:
            yield event["PayloadPart"]["Bytes"]


def whole_answer_body(request: ChatRequest, model_id: str) -> JsonObject:
    """The chat-completions body of `request` asking for the whole answer at once (`stream: false`):
    what a serverless endpoint, an async endpoint and a transform job are sent."""
    body = request.openai_body(model_id)
    body["stream"] = False
    body.pop("stream_options", None)
    return body


def read_completion(record: RequestRecord, data: Any) -> RequestRecord:
    """A whole chat completion (the JSON a server answers with `stream: false`) into `record`: text,
    finish reason, tokens from the server's usage and, where llama.cpp sends them, its timings.
    Raises a typed fault for an error body, a malformed completion, one without usage, an abnormal
    finish or an empty answer (the same rules as a stream's). Times are the caller's to set."""
    if not isinstance(data, dict):
        raise StreamFault(f"malformed completion: expected a JSON object, got {type(data).__name__}")
    if "error" in data:
        error = data["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise ServiceError(f"model error: {' '.join(str(message).split())[:200]}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise StreamFault("malformed completion: no choices")
    choice = choices[0]
    message = choice.get("message") or {}
    content = message.get("content") or ""
    record.chunks = 1
    record.text = content
    record.finish_reason = choice.get("finish_reason")
    usage = data.get("usage")
    if not isinstance(usage, dict) or usage.get("completion_tokens") is None:
        raise StreamFault("completion carried no usage: no token count")
    record.output_tokens, record.prompt_tokens = usage_counts(usage, "completion_tokens", "prompt_tokens")
    record.token_source = "server"
    if isinstance(data.get("timings"), dict):
        record.server_timings = data["timings"]
    check_completion(record, has_output=bool(content) or bool(message.get("tool_calls")))
    record.ok = True
    return record


def parse_completion(raw: bytes | str, record: RequestRecord) -> RequestRecord:
    """`read_completion` of raw bytes; bytes that are not JSON are a malformed answer."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        raise StreamFault(f"malformed completion: not JSON ({error}): {text[:80]!r}") from None
    return read_completion(record, data)


class SageMakerStreamClient:
    def __init__(
        self, endpoint_name: str, model_id: str, region: str, *, client: Any | None = None, timeout_s: float = 60.0
    ) -> None:
        if client is None:
            client = boto_client("sagemaker-runtime", region, timeout_s)
        self.client = client
        self.endpoint_name = endpoint_name
        self.model_id = model_id

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        body = request.openai_body(self.model_id)
        watch = Stopwatch()
        response = self.client.invoke_endpoint_with_response_stream(
            EndpointName=self.endpoint_name, ContentType="application/json", Body=json.dumps(body)
        )
        return read_stream(response, record, watch)

    def close(self) -> None:
        self.client.close()


def read_stream(response: dict[str, Any], record: RequestRecord, watch: Stopwatch) -> RequestRecord:
    """The container's SSE stream out of the PayloadPart events, timed from `watch`."""
    stream = ChatStreamAccumulator(record)
    for line in sse_lines(payload_parts(response["Body"])):
        stream.feed_line(line.decode("utf-8", errors="replace"), watch.now())
    return stream.finish(watch.now())


# What SageMaker's runtime answers a request to an inference component with no copy running:
# ValidationError (HTTP 400) "Inference Component has no capacity to process this request.
# ApplicationAutoScaling may be in-progress (if configured) or try to increase the capacity by
# invoking UpdateInferenceComponentRuntimeConfig API." (the error AWS's announcement of scaling
# inference components to zero, "Unlock cost savings with the new scale down to zero feature in
# SageMaker Inference", shows for an endpoint at zero). Each such request counts in
# NoCapacityInvocationFailures, which starts a copy (inference_constructs/endpoint_scaling.py).
NO_CAPACITY_CODE = "ValidationError"
NO_CAPACITY_TEXT = "has no capacity to process this request"
# How long a request may wait for a copy: the developer guide says provisioning "takes several
# minutes" (an instance, then the container and the weights).
LEAVE_ZERO_BUDGET_S = 900.0


def no_capacity(error: BaseException) -> bool:
    return aws_error_code(error) == NO_CAPACITY_CODE and NO_CAPACITY_TEXT in str(error)


class InferenceComponentStreamClient:
    """Timed streamed chat against an endpoint of inference components: InvokeEndpointWithResponse
    Stream naming the component (`InferenceComponentName`; an endpoint that hosts components
    refuses a request without it).

    At zero copies a request is refused (`no_capacity`) while the refusal itself starts a copy: it is
    sent again with backoff (1 s, then 2 s apart) within `leave_zero_budget_s`. Such a request is a
    cold start: `record.phases["leave_zero_s"]` is the time from its first attempt to the start of
    the one that streamed, an upper bound on when a copy came up, and `phases["last_refusal_s"]`
    the time to the last refusal's answer, a lower bound; the two are at most one wait apart (2 s,
    against a cold start of minutes). Its time to first token and end-to-end are that attempt's own.
    A request that found a copy at once is not cold (`cold_start` False).

    The waits stay short because a longer one would add to the cold start measured (a 15 s cap
    overstated it by up to 15 s), and every refusal is only a NoCapacityInvocationFailures count,
    nothing billed: the alarm that starts a copy needs more than one in a minute, which 1 s and 2 s
    waits give in the first minute."""

    first_backoff_s = 1.0
    max_backoff_s = 2.0

    def __init__(
        self,
        endpoint_name: str,
        component_name: str,
        model_id: str,
        region: str,
        *,
        client: Any | None = None,
        timeout_s: float = 60.0,
        leave_zero_budget_s: float = LEAVE_ZERO_BUDGET_S,
    ) -> None:
        self.client = client if client is not None else boto_client("sagemaker-runtime", region, timeout_s)
        self.endpoint_name = endpoint_name
        self.component_name = component_name
        self.model_id = model_id
        self.leave_zero_budget_s = leave_zero_budget_s

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        body = json.dumps(request.openai_body(self.model_id))

        def refusal(waited: float) -> None:
            record.cold_start = True
            record.phases = {"leave_zero_s": round(waited, 6), "last_refusal_s": round(waited, 6)}

        served = send_until_served(
            lambda: self.client.invoke_endpoint_with_response_stream(
                EndpointName=self.endpoint_name,
                InferenceComponentName=self.component_name,
                ContentType="application/json",
                Body=body,
            ),
            no_capacity,
            first_backoff_s=self.first_backoff_s,
            max_backoff_s=self.max_backoff_s,
            budget_s=self.leave_zero_budget_s,
            on_refusal=refusal,
            too_long=lambda waited, refusals: TimedOut(
                f"inference component {self.component_name}: no copy after {waited:.1f} s "
                f"({refusals} refusals for no capacity; budget {self.leave_zero_budget_s:g} s)"
            ),
        )
        record.cold_start = served.refusals > 0
        if served.refusals:
            record.phases = (record.phases or {}) | {"leave_zero_s": round(served.waited_s, 6)}
        response, watch = served.response, served.watch
        return read_stream(response, record, watch)

    def close(self) -> None:
        self.client.close()


class SageMakerServerlessClient:
    """Timed chat against a SageMaker serverless endpoint: InvokeEndpoint, the whole answer at once.

    Not streamed, by decision: AWS's developer guide ("Invoke a serverless endpoint") names
    InvokeEndpoint as the call for a serverless endpoint and no other, and response streaming
    (InvokeEndpointWithResponseStream, announced for SageMaker *real-time* inference in 2023-09)
    is not documented for serverless endpoints. Rather than rest a figure on an undocumented path,
    the body asks for `stream: false`: time to first token is not knowable (`ttft_s` stays None),
    end-to-end is the call's own time, and tokens/s = server completion tokens / that time.
    Serverless limits from the same guide: a 60 s container timeout on /invocations, 4 MB payloads.

    A request beyond the endpoint's MaxConcurrency is refused (ThrottlingException): a `Throttled`
    fault, one line, counted as that request's error. The first request after idle is a cold start
    (the container starts): the bench keeps its warm-up apart as one (`runner.measure.benchmark`).
    """

    def __init__(
        self,
        endpoint_name: str,
        model_id: str,
        region: str,
        *,
        max_concurrency: int | None = None,
        client: Any | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        if client is None:
            client = boto_client("sagemaker-runtime", region, timeout_s)
        self.client = client
        self.endpoint_name = endpoint_name
        self.model_id = model_id
        self.max_concurrency = max_concurrency

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        from botocore.exceptions import ClientError

        body = json.dumps(whole_answer_body(request, self.model_id))
        watch = Stopwatch()
        try:
            response = self.client.invoke_endpoint(
                EndpointName=self.endpoint_name, ContentType="application/json", Accept="application/json", Body=body
            )
            raw = response["Body"].read()
        except ClientError as error:
            details = error.response.get("Error", {})
            if details.get("Code") in THROTTLE_CODES:
                limit = f" of {self.max_concurrency}" if self.max_concurrency else ""
                message = " ".join(str(details.get("Message") or "").split())[:160]
                raise Throttled(
                    f"throttled: {details['Code']}: {message} (the serverless endpoint's MaxConcurrency{limit} reached)"
                ) from None
            raise
        record.e2e_s = watch.now()
        return parse_completion(raw, record)

    def close(self) -> None:
        self.client.close()


# The generated prompt set of `python -m runner.batch` (one topic each, in turn).
BATCH_TOPICS = (
    "the ocean", "mountains", "forests", "deserts", "rivers", "glaciers", "volcanoes", "islands",
    "the night sky", "rain", "caves", "coral reefs",
)  # fmt: skip


def generated_prompts(count: int) -> list[JsonObject]:
    """`count` prompts in the survey's style, distinct from one another."""
    prompts = []
    for index in range(count):
        topic = BATCH_TOPICS[index % len(BATCH_TOPICS)]
        round_ = index // len(BATCH_TOPICS)
        prompts.append(
            {"prompt": f"Write a short paragraph about {topic}." + (f" Take {round_ + 1}." if round_ else "")}
        )
    return prompts


def read_batch_prompts(path: Path) -> list[JsonObject]:
    """A JSON-lines prompt file: each line an object with a `prompt` string or a `messages` list
    (OpenAI chat messages), and optionally `max_tokens`. The first line that is not one is a
    one-line error naming it; blank lines are skipped."""
    text = read_text_file(path, "--prompts")
    prompts = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"--prompts {path} line {number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise RunnerError(
                f"{where}: not JSON ({error.msg} at column {error.colno}); one JSON object per line"
            ) from None
        messages = item.get("messages") if isinstance(item, dict) else None
        prompt = item.get("prompt") if isinstance(item, dict) else None
        well_formed = (
            isinstance(messages, list)
            and messages
            and all(isinstance(m, dict) and isinstance(m.get("role"), str) and "content" in m for m in messages)
        )
        if not (isinstance(prompt, str) and prompt.strip()) and not well_formed:
            raise RunnerError(
                f'{where}: expected an object with a "prompt" string or a "messages" list of {{role, content}}'
            )
        max_tokens = item.get("max_tokens")
        if max_tokens is not None and (
            not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
        ):
            raise RunnerError(f"{where}: max_tokens must be a positive whole number, got {max_tokens!r}")
        prompts.append({k: item[k] for k in ("prompt", "messages", "max_tokens") if item.get(k) is not None})
    if not prompts:
        raise RunnerError(f"--prompts {path}: no prompts (one JSON object per line)")
    return prompts


def batch_bodies(prompts: list[JsonObject], model_id: str, max_tokens: int) -> list[JsonObject]:
    """The whole-answer chat bodies of a prompt set (a line's `messages` are sent as they are)."""
    bodies = []
    for item in prompts:
        request = ChatRequest(item.get("prompt") or "", max_tokens=item.get("max_tokens") or max_tokens)
        body = whole_answer_body(request, model_id)
        if item.get("messages"):
            body["messages"] = item["messages"]
        bodies.append(body)
    return bodies


def batch_records(backend: str, lines: list[str], expected: int) -> list[RequestRecord]:
    """One record per prompt from the job's answers (line n answers prompt n); a missing or bad
    answer is that record's error. Batch records carry no times: the job is timed as a whole."""
    records = []
    for index in range(expected):
        record = RequestRecord(backend=backend, run=index + 1)
        if index >= len(lines):
            record.error = f"no answer: the job wrote {len(lines)} lines for {expected} records"
        else:
            try:
                parse_completion(lines[index], record)
            except Exception as error:
                record.ok, record.error = False, describe(error)
        records.append(record)
    return records
