"""Timed clients for Bedrock and SageMaker: real boto3 clients against a loopback server that
speaks AWS's binary event-stream framing, so botocore's own parser produces every event and
every error (no AWS is called)."""

from __future__ import annotations

import json

import pytest

from runner.core.errors import BadCompletion, ServiceError, StreamFault, as_fault, describe, gave_no_answer
from runner.core.records import RequestRecord
from runner.measure import ChatRequest, warm_up
from runner.measure.bedrock import BedrockStreamClient
from runner.measure.sagemaker import SageMakerStreamClient
from tests.runner.fake_aws_stream import FakeAwsStream, Reply, event, exception, payload_part

REQUEST = ChatRequest("Write a short paragraph about the ocean.", max_tokens=100)
MODEL = "us.amazon.nova-micro-v1:0"

CONVERSE = [
    event("messageStart", {"role": "assistant"}),
    event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "The ocean"}}),
    event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": " is vast."}}),
    event("contentBlockStop", {"contentBlockIndex": 0}),
    event("messageStop", {"stopReason": "end_turn"}),
    event(
        "metadata", {"usage": {"inputTokens": 9, "outputTokens": 5, "totalTokens": 14}, "metrics": {"latencyMs": 300}}
    ),
]


def timed_chat(replies: list[Reply], make_client) -> tuple[RequestRecord, BaseException | None, FakeAwsStream]:
    """One timed request through `make_client(fake)`; the fault, if any, is returned, not raised."""
    with FakeAwsStream(replies) as fake:
        client = make_client(fake)
        record = RequestRecord("managed", 1)
        try:
            client.chat(REQUEST, record)
            return record, None, fake
        except Exception as error:
            return record, error, fake
        finally:
            client.close()


def bedrock_chat(replies: list[Reply]):
    return timed_chat(
        replies, lambda fake: BedrockStreamClient(MODEL, "us-east-1", client=fake.client("bedrock-runtime"))
    )


def test_bedrock_stream_uses_converse_usage():
    record, error, fake = bedrock_chat([Reply(CONVERSE)])
    assert error is None and record.ok and record.text == "The ocean is vast."
    assert (record.output_tokens, record.token_source, record.finish_reason) == (5, "server", "end_turn")
    path, body = fake.requests[0]
    assert path == "/model/us.amazon.nova-micro-v1%3A0/converse-stream"
    assert body["inferenceConfig"] == {"maxTokens": 100, "temperature": 0.0}


def test_bedrock_is_warmed_like_every_other_backend():
    with FakeAwsStream([Reply(CONVERSE)]) as fake:
        client = BedrockStreamClient(MODEL, "us-east-1", client=fake.client("bedrock-runtime"))
        warm = warm_up(client, "bedrock")
        client.close()
    ((path, body),) = fake.requests
    assert path.endswith("/converse-stream")  # the same streamed path as the timed requests
    assert body["messages"] == [{"role": "user", "content": [{"text": "Hi"}]}]
    assert body["inferenceConfig"]["maxTokens"] == 4 and warm.ok and warm.run == 0


@pytest.mark.parametrize(
    ("messages", "kind", "line"),
    [
        (CONVERSE[:3], StreamFault, "stream cut: ended after 3 events without messageStop"),
        (CONVERSE[:5], StreamFault, "Bedrock stream carried no usage metadata"),
        (
            [*CONVERSE[:2], exception("throttlingException", {"message": "Too many requests, please wait."})],
            StreamFault,
            "stream error throttlingException: Too many requests, please wait.",
        ),
        (
            [
                *CONVERSE[:2],
                exception("modelStreamErrorException", {"message": "model failed", "originalStatusCode": 500}),
            ],
            StreamFault,
            "stream error modelStreamErrorException: model failed",
        ),
        (
            [*CONVERSE[:4], event("messageStop", {"stopReason": "guardrail_intervened"}), CONVERSE[5]],
            BadCompletion,
            "finish reason 'guardrail_intervened': not a normal end of the answer",
        ),
        (
            [CONVERSE[0], event("messageStop", {"stopReason": "end_turn"}), CONVERSE[5]],
            BadCompletion,
            "empty completion: no text and no tool call (finish reason 'end_turn')",
        ),
    ],
)
def test_bedrock_faults_as_botocore_raises_them(messages, kind, line):
    record, error, _ = bedrock_chat([Reply(messages)])
    assert not record.ok
    assert isinstance(as_fault(error), kind)
    assert describe(error) == line


def test_bedrock_http_error_is_a_service_error():
    reply = Reply(
        status=400, error_type="ValidationException", error_message="The provided model identifier is invalid."
    )
    _record, error, _ = bedrock_chat([reply])
    assert isinstance(as_fault(error), ServiceError) and gave_no_answer(error)
    assert describe(error) == "ValidationException: The provided model identifier is invalid."


def sse(*chunks, done=True) -> bytes:
    body = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def split(data: bytes, size: int) -> list[bytes]:
    return [payload_part(data[i : i + size]) for i in range(0, len(data), size)]


GOOD = sse(
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
    {"choices": [{"index": 0, "delta": {"content": "Waves"}, "finish_reason": None}]},
    {"choices": [{"index": 0, "delta": {"content": " roll."}, "finish_reason": "stop"}]},
    {
        "choices": [],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12, "completion_tokens_details": None},
    },
)


def sagemaker_chat(replies: list[Reply]):
    return timed_chat(
        replies,
        lambda fake: SageMakerStreamClient(
            "inference-sagemaker", "m", "us-east-1", client=fake.client("sagemaker-runtime")
        ),
    )


@pytest.mark.parametrize("size", [1, 7, 1000])
def test_sagemaker_stream_reassembles_lines_split_anywhere(size):
    record, error, fake = sagemaker_chat([Reply(split(GOOD, size))])
    assert error is None and record.ok and record.text == "Waves roll."
    # usage says 3 tokens over 2 content chunks: the server's count wins.
    assert (record.output_tokens, record.token_source) == (3, "server")
    path, body = fake.requests[0]
    assert path == "/endpoints/inference-sagemaker/invocations-response-stream"
    assert body["stream"] is True and body["max_tokens"] == 100


def test_sagemaker_stream_cut_and_model_errors():
    cut = sse({"choices": [{"index": 0, "delta": {"content": "Waves"}, "finish_reason": None}]}, done=False)
    record, error, _ = sagemaker_chat([Reply(split(cut, 5))])
    assert not record.ok and isinstance(as_fault(error), StreamFault) and describe(error).startswith("stream cut")
    failing = [
        *split(GOOD[:40], 20),
        exception("ModelStreamError", {"Message": "CUDA out of memory", "ErrorCode": "500"}),
    ]
    _record, error, _ = sagemaker_chat([Reply(failing)])
    assert isinstance(as_fault(error), StreamFault)
    assert describe(error) == "stream error ModelStreamError: CUDA out of memory"
