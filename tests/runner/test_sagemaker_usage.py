"""vLLM's usage record breaks Strands' SageMaker provider; the runner's client cleans it. And the
serverless endpoint's timed client reads a whole answer (InvokeEndpoint) and types its faults.

Responses replay the real API shapes: InvokeEndpoint through botocore's Stubber on a real
sagemaker-runtime client; the response stream as PayloadPart events split at byte boundaries.
"""

from __future__ import annotations

import asyncio
import io
import json

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from strands.models.sagemaker import SageMakerAIModel

from runner.agent.models import clean_event_stream, clean_usage, sagemaker_model
from runner.core.errors import BadCompletion, ServiceError, StreamFault, as_fault, describe, gave_no_answer
from runner.core.records import RequestRecord
from runner.measure import ChatRequest
from runner.measure.sagemaker import SageMakerServerlessClient, Throttled
from tests.runner.fake_aws_stream import FakeAwsStream, Reply, payload_part

VLLM_USAGE = {
    "prompt_tokens": 17,
    "total_tokens": 111,
    "completion_tokens": 94,
    "prompt_tokens_details": None,
    "completion_tokens_details": {"reasoning_tokens": 0},
}
VLLM_BODY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris"}, "finish_reason": "stop"}],
    "usage": VLLM_USAGE,
}


def stubbed_runtime(body: dict) -> tuple[object, Stubber]:
    client = boto3.client(
        "sagemaker-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    raw = json.dumps(body).encode()
    stubber.add_response(
        "invoke_endpoint",
        {"Body": StreamingBody(io.BytesIO(raw), len(raw)), "ContentType": "application/json"},
        {
            "EndpointName": "inference-sagemaker",
            "Body": ANY,
            "ContentType": "application/json",
            "Accept": "application/json",
        },
    )
    stubber.activate()
    return client, stubber


def collect(model) -> list[dict]:
    async def go():
        return [event async for event in model.stream([{"role": "user", "content": [{"text": "capital of France?"}]}])]

    return asyncio.run(go())


def plain_model(client) -> SageMakerAIModel:
    model = SageMakerAIModel(
        endpoint_config={"endpoint_name": "inference-sagemaker", "region_name": "us-east-1"},
        payload_config={"max_tokens": 64, "stream": False},
    )
    model.client = client
    return model


def test_strands_alone_fails_on_vllm_usage():
    client, _ = stubbed_runtime(VLLM_BODY)
    with pytest.raises(TypeError, match="completion_tokens_details"):
        collect(plain_model(client))


def test_cleaned_usage_keeps_the_token_counts():
    client, stubber = stubbed_runtime(VLLM_BODY)
    events = collect(sagemaker_model("inference-sagemaker", "us-east-1", max_tokens=64, temperature=0.0, client=client))
    stubber.assert_no_pending_responses()
    (usage,) = [e["metadata"]["usage"] for e in events if "metadata" in e]
    assert usage == {"inputTokens": 17, "outputTokens": 94, "totalTokens": 111}
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e)
    assert text == "Paris"


def sse_events() -> bytes:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Par"}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {"content": "is"}, "finish_reason": "stop"}]},
        {"choices": [], "usage": VLLM_USAGE},
    ]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def test_streaming_path_is_cleaned_too():
    # A real sagemaker-runtime client reads the container's SSE split into PayloadPart events at odd offsets.
    data = sse_events()
    parts = [payload_part(data[i : i + 7]) for i in range(0, len(data), 7)]
    with FakeAwsStream([Reply(parts)]) as fake:
        runtime = fake.client("sagemaker-runtime")
        model = sagemaker_model("inference-sagemaker", "us-east-1", max_tokens=64, temperature=0.0, client=runtime)
        model.payload_config["stream"] = True
        events = collect(model)
    (usage,) = [e["metadata"]["usage"] for e in events if "metadata" in e]
    assert (usage["inputTokens"], usage["outputTokens"]) == (17, 94)
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e)
    assert text == "Paris"


def test_clean_event_stream_reframes_lines_and_keeps_other_bytes():
    original = sse_events()
    parts = [{"PayloadPart": {"Bytes": original[i : i + 5]}} for i in range(0, len(original), 5)]
    rebuilt = b"".join(e["PayloadPart"]["Bytes"] for e in clean_event_stream(parts))
    assert b"completion_tokens_details" not in rebuilt
    assert rebuilt.replace(b" ", b"") == original.replace(
        b', "completion_tokens_details": {"reasoning_tokens": 0}', b""
    ).replace(b" ", b"")


def test_clean_usage_leaves_other_payloads_alone():
    assert clean_usage("text") == "text"
    assert clean_usage({"choices": [{"usage": {"completion_tokens": 3, "x": 1}}]}) == {
        "choices": [{"usage": {"completion_tokens": 3}}]
    }


# The serverless client: InvokeEndpoint with a whole answer (see SageMakerServerlessClient).


def serverless_runtime(reply: dict | None = None, error: tuple[str, int] | None = None):
    client = boto3.client(
        "sagemaker-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    expected = {"EndpointName": "inference-serverless", "Body": ANY, "ContentType": "application/json", "Accept": "application/json"}  # fmt: skip
    if error:
        stubber.add_client_error("invoke_endpoint", error[0], "Rate exceeded", error[1], expected_params=expected)
    else:
        raw = json.dumps(reply).encode()
        stubber.add_response("invoke_endpoint", {"Body": StreamingBody(io.BytesIO(raw), len(raw))}, expected)
    stubber.activate()
    return client


def serverless_chat(client) -> tuple[RequestRecord, BaseException | None]:
    chat = SageMakerServerlessClient("inference-serverless", "m", "us-east-1", max_concurrency=4, client=client)
    record = RequestRecord("sagemaker-serverless", 1)
    try:
        chat.chat(ChatRequest("Write a short paragraph about the ocean."), record)
    except Exception as error:
        return record, error
    return record, None


def test_serverless_whole_answer_has_server_tokens_and_no_time_to_first_token():
    record, error = serverless_chat(serverless_runtime(VLLM_BODY))
    assert error is None and record.ok and record.text == "Paris" and record.ttft_s is None
    assert (record.output_tokens, record.prompt_tokens, record.token_source) == (94, 17, "server")
    assert record.e2e_s is not None and record.e2e_s > 0


def test_serverless_throttling_is_a_typed_one_line_fault():
    _record, error = serverless_chat(serverless_runtime(error=("ThrottlingException", 400)))
    assert isinstance(as_fault(error), Throttled) and gave_no_answer(error)
    assert describe(error) == (
        "throttled: ThrottlingException: Rate exceeded (the serverless endpoint's MaxConcurrency of 4 reached)"
    )


@pytest.mark.parametrize(
    ("body", "kind", "line"),
    [
        ({"choices": []}, StreamFault, "malformed completion: no choices"),
        ({"error": {"message": "CUDA out of memory"}}, ServiceError, "model error: CUDA out of memory"),
        (
            {**VLLM_BODY, "usage": None},
            StreamFault,
            "completion carried no usage: no token count",
        ),
        (
            {**VLLM_BODY, "choices": [{"message": {"content": "x"}, "finish_reason": "content_filter"}]},
            BadCompletion,
            "finish reason 'content_filter': not a normal end of the answer",
        ),
    ],
)
def test_whole_answer_faults(body, kind, line):
    record, error = serverless_chat(serverless_runtime(body))
    assert not record.ok and isinstance(as_fault(error), kind) and describe(error) == line
