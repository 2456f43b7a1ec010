"""The timed client against scripted servers: figures from the server, faults as one line."""

from __future__ import annotations

import pytest

from runner.errors import BackendFault, describe
from runner.timing import ChatRequest, RequestRecord
from runner.timing.openai_http import OpenAIStreamClient
from tests.runner.fake_openai import FakeOpenAI, Step, text

REQUEST = ChatRequest(prompt="Write a short paragraph about the ocean.", max_tokens=100)


def timed(url: str, timeout_s: float = 5.0) -> tuple[RequestRecord, str | None]:
    client = OpenAIStreamClient(f"{url}/v1", "fake-model", timeout_s=timeout_s)
    record = RequestRecord(backend="fake", run=1)
    try:
        client.warm()
        client.chat(REQUEST, record)
        return record, None
    except Exception as error:
        return record, describe(error)
    finally:
        client.close()


def test_normal_stream_uses_server_usage_and_arrival_times():
    with FakeOpenAI([text("The ocean is wide and deep")]) as fake:
        record, error = timed(fake.url)
    assert error is None and record.ok
    assert record.text == "The ocean is wide and deep"
    assert (record.output_tokens, record.token_source, record.finish_reason) == (6, "server", "stop")
    assert 0 < record.ttft_s <= record.e2e_s
    assert record.tokens_per_s == pytest.approx(6 / record.e2e_s)
    sent = fake.requests[0]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert (sent["max_tokens"], sent["temperature"]) == (100, 0.0)


def test_missing_usage_falls_back_to_a_marked_client_count():
    with FakeOpenAI([text("one two three", usage=False)]) as fake:
        record, error = timed(fake.url)
    assert error is None
    assert (record.output_tokens, record.token_source) == (3, "client-chunks")


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (Step(kind="cut", text="the ocean"), "stream cut: ended after 3 chunks without a finish reason"),
        (Step(kind="malformed"), "malformed stream: chunk 2 is not JSON"),
        (Step(kind="empty"), "empty stream: no chunks before the connection closed"),
        (Step(kind="http_error", status=500), 'HTTP 500: {"error": {"message": "scripted failure"}}'),
        (Step(kind="http_error", status=400, error_body="maximum context length is 8192 tokens"), "HTTP 400"),
    ],
)
def test_faults_are_errors_not_short_answers(step, expected):
    with FakeOpenAI([step]) as fake:
        record, error = timed(fake.url)
    assert not record.ok
    assert error is not None and error.startswith(expected)
    assert "\n" not in error


def test_a_hanging_server_times_out():
    with FakeOpenAI([Step(kind="hang")]) as fake:
        record, error = timed(fake.url, timeout_s=1.0)
    assert not record.ok and error.startswith("timed out")


def test_a_dead_server_is_unreachable(dead_url):
    record, error = timed(dead_url)
    assert not record.ok and error.startswith("unreachable")


def test_stream_error_object_is_a_fault():
    from runner.timing.sse import ChatStreamAccumulator

    stream = ChatStreamAccumulator(RequestRecord(backend="x", run=1))
    with pytest.raises(BackendFault, match="server error in stream: overloaded"):
        stream.feed_line('data: {"error": {"message": "overloaded"}}', 0.1)
