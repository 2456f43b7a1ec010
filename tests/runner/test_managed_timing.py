"""Timed clients for Bedrock and SageMaker, fed the real APIs' event shapes (no AWS is called)."""

from __future__ import annotations

import json

import pytest

from runner.errors import BackendFault
from runner.timing import ChatRequest, RequestRecord
from runner.timing.bedrock import BedrockStreamClient
from runner.timing.sagemaker import SageMakerStreamClient

REQUEST = ChatRequest("Write a short paragraph about the ocean.", max_tokens=100)


class FakeBedrock:
    def __init__(self, events):
        self.events = events
        self.calls = []

    def converse_stream(self, **request):
        self.calls.append(request)
        return {"stream": iter(self.events)}


CONVERSE_EVENTS = [
    {"messageStart": {"role": "assistant"}},
    {"contentBlockDelta": {"delta": {"text": "The ocean"}, "contentBlockIndex": 0}},
    {"contentBlockDelta": {"delta": {"text": " is vast."}, "contentBlockIndex": 0}},
    {"contentBlockStop": {"contentBlockIndex": 0}},
    {"messageStop": {"stopReason": "end_turn"}},
    {"metadata": {"usage": {"inputTokens": 9, "outputTokens": 5, "totalTokens": 14}, "metrics": {"latencyMs": 300}}},
]


def test_bedrock_stream_uses_converse_usage():
    fake = FakeBedrock(CONVERSE_EVENTS)
    record = BedrockStreamClient("us.amazon.nova-micro-v1:0", "us-east-1", client=fake).chat(
        REQUEST, RequestRecord("bedrock", 1)
    )
    assert record.ok and record.text == "The ocean is vast."
    assert (record.output_tokens, record.token_source, record.finish_reason) == (5, "server", "end_turn")
    assert fake.calls[0]["modelId"] == "us.amazon.nova-micro-v1:0"
    assert fake.calls[0]["inferenceConfig"] == {"maxTokens": 100, "temperature": 0.0}


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (CONVERSE_EVENTS[:3], "stream cut: ended after 3 events without messageStop"),
        (CONVERSE_EVENTS[:5], "Bedrock stream carried no usage metadata"),
        ([*CONVERSE_EVENTS[:2], {"throttlingException": {"message": "slow down"}}], "throttlingException: slow down"),
    ],
)
def test_bedrock_faults(events, message):
    with pytest.raises(BackendFault, match=message):
        BedrockStreamClient("m", "us-east-1", client=FakeBedrock(events)).chat(REQUEST, RequestRecord("bedrock", 1))


class FakeRuntime:
    def __init__(self, parts):
        self.parts = parts
        self.calls = []

    def invoke_endpoint_with_response_stream(self, **request):
        self.calls.append(request)
        return {"Body": iter(self.parts)}


def sse(*chunks, done=True) -> bytes:
    body = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def split(data: bytes, size: int):
    return [{"PayloadPart": {"Bytes": data[i : i + size]}} for i in range(0, len(data), size)]


GOOD = sse(
    {"choices": [{"index": 0, "delta": {"content": "Waves"}, "finish_reason": None}]},
    {"choices": [{"index": 0, "delta": {"content": " roll."}, "finish_reason": "stop"}]},
    {
        "choices": [],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12, "completion_tokens_details": None},
    },
)


@pytest.mark.parametrize("size", [1, 7, 1000])
def test_sagemaker_stream_reassembles_lines_split_anywhere(size):
    fake = FakeRuntime(split(GOOD, size))
    client = SageMakerStreamClient("inference-sagemaker", "m", "us-east-1", client=fake)
    record = client.chat(REQUEST, RequestRecord("sagemaker", 1))
    assert record.ok and record.text == "Waves roll." and record.output_tokens == 3
    body = json.loads(fake.calls[0]["Body"])
    assert body["stream"] is True and body["max_tokens"] == 100


def test_sagemaker_stream_cut_and_model_errors():
    cut = sse({"choices": [{"index": 0, "delta": {"content": "Waves"}, "finish_reason": None}]}, done=False)
    with pytest.raises(BackendFault, match="stream cut"):
        SageMakerStreamClient("e", "m", "us-east-1", client=FakeRuntime(split(cut, 5))).chat(
            REQUEST, RequestRecord("s", 1)
        )
    error = [{"ModelStreamError": {"Message": "CUDA out of memory", "ErrorCode": "500"}}]
    with pytest.raises(BackendFault, match="SageMaker stream error: CUDA out of memory"):
        SageMakerStreamClient("e", "m", "us-east-1", client=FakeRuntime(error)).chat(REQUEST, RequestRecord("s", 1))
