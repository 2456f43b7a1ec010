"""The timed client against a keep-alive scripted server: reuse, figures, finish reasons, faults.

Expected figures are computed by hand here, never by the formula under test.
"""

from __future__ import annotations

import json

import pytest

from runner.core.errors import (
    BadCompletion,
    ContextOverflow,
    HttpStatus,
    StreamFault,
    TimedOut,
    Unreachable,
    as_fault,
    backend_down,
    describe,
    gave_no_answer,
)
from runner.core.records import RequestRecord
from runner.measure import ChatRequest, warm_up
from runner.measure.openai_sync import OpenAIStreamClient
from tests.runner.fake_openai import FakeOpenAI, Step, text

REQUEST = ChatRequest(prompt="Write a short paragraph about the ocean.", max_tokens=100)
# A proxy's error page in front of a server (nginx's words), 1,200 bytes.
PROXY_PAGE = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"
PROXY_PAGE += " " * (1200 - len(PROXY_PAGE))
# llama.cpp's answer to a prompt past its context (the embedded server's own words).
LLAMA_CPP_OVERFLOW = json.dumps({"error": {
    "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 5010, "n_ctx": 4096,
    "message": "request (5010 tokens) exceeds the available context size (4096 tokens), try increasing it",
}})  # fmt: skip


def client_for(url: str, timeout_s: float = 5.0) -> OpenAIStreamClient:
    return OpenAIStreamClient(f"{url}/v1", "fake-model", timeout_s=timeout_s)


def timed(url: str, timeout_s: float = 5.0) -> tuple[RequestRecord, BaseException | None]:
    client = client_for(url, timeout_s)
    record = RequestRecord(backend="fake", run=1)
    try:
        client.chat(REQUEST, record)
        return record, None
    except Exception as error:
        return record, error
    finally:
        client.close()


def test_one_connection_serves_the_warm_up_and_every_timed_request():
    # The server keeps connections alive and numbers them. A client that stops reading at
    # [DONE] leaves the body unread, its connection is closed, and every request opens a new one.
    with FakeOpenAI([text("The ocean is wide and deep")]) as fake:
        client = client_for(fake.url)
        warm = warm_up(client, "fake")
        records = [client.chat(REQUEST, RequestRecord("fake", run)) for run in range(1, 6)]
        client.close()
    assert fake.connection_ids == [1, 1, 1, 1, 1, 1]
    assert warm.ok and warm.new_connection is True
    assert [r.new_connection for r in records] == [False] * 5


def test_a_kept_alive_connection_the_server_closed_is_retried_once_on_a_new_one():
    # Like llama.cpp: a complete response, then the server closes the connection a little later.
    # The next request goes out on the pooled connection, fails before any response, and is
    # sent again on a new connection; nothing is lost and the record says what happened.
    with FakeOpenAI([text("The ocean is wide", close="on-reuse")]) as fake:
        client = client_for(fake.url)
        warm = warm_up(client, "fake")
        records = [client.chat(REQUEST, RequestRecord("fake", run)) for run in (1, 2)]
        client.close()
    assert warm.ok and all(r.ok for r in records)
    assert [r.stale_connection_retry for r in records] == [True, True]
    assert [r.new_connection for r in records] == [True, True]
    assert fake.connection_ids == [1, 2, 3]
    assert len(fake.requests) == 3  # the failed sends never reached the handler


def test_warm_up_is_the_surveys_short_generation_and_is_not_a_timed_run():
    with FakeOpenAI([text("Hello there")]) as fake:
        client = client_for(fake.url)
        warm = warm_up(client, "fake")
        client.close()
    (sent,) = fake.requests
    assert sent["messages"] == [{"role": "user", "content": "Hi"}] and sent["max_tokens"] == 4
    assert warm.run == 0 and warm.ok


def test_a_warm_up_fault_is_recorded_not_raised(dead_url):
    client = client_for(dead_url)
    warm = warm_up(client, "dead")
    client.close()
    assert not warm.ok and warm.error.startswith("unreachable")


def test_time_to_first_token_skips_the_role_only_first_chunk():
    # The role chunk arrives at once; the first token 0.3 s later.
    with FakeOpenAI([text("Waves roll in", first_token_delay_s=0.3)]) as fake:
        record, error = timed(fake.url)
    assert error is None
    assert record.ttft_s >= 0.3


def test_token_count_comes_from_server_usage_not_the_chunk_count():
    # Six content chunks, but the server says 20 tokens (a chunk can carry several tokens).
    with FakeOpenAI([text("The ocean is wide and deep", usage_tokens=20)]) as fake:
        record, error = timed(fake.url)
    assert error is None and record.ok
    assert (record.output_tokens, record.token_source) == (20, "server")
    # role chunk + 6 content chunks + finish chunk + usage chunk
    assert record.chunks == 9
    assert record.text == "The ocean is wide and deep"
    sent = fake.requests[0]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert (sent["max_tokens"], sent["temperature"]) == (100, 0.0)


def test_missing_usage_falls_back_to_a_marked_client_count():
    with FakeOpenAI([text("one two three", usage=False)]) as fake:
        record, error = timed(fake.url)
    assert error is None
    assert (record.output_tokens, record.token_source) == (3, "client-chunks")


def test_rates_by_hand():
    record = RequestRecord("x", 1, ok=True, ttft_s=0.5, e2e_s=2.5, output_tokens=41)
    assert record.tokens_per_s == pytest.approx(16.4)  # 41 / 2.5
    assert record.decode_tokens_per_s == pytest.approx(20.0)  # 40 / 2.0
    failed = RequestRecord("x", 1, ok=False, ttft_s=0.5, e2e_s=2.5, output_tokens=41)
    assert failed.tokens_per_s is None and failed.decode_tokens_per_s is None


def test_server_timings_are_kept_beside_the_clients():
    timings = {
        "prompt_n": 12,
        "prompt_ms": 100.0,
        "predicted_n": 20,
        "predicted_ms": 400.0,
        "predicted_per_second": 50.0,
    }
    with FakeOpenAI([text("The ocean is wide", usage_tokens=20, timings=timings)]) as fake:
        record, error = timed(fake.url)
    assert error is None
    assert record.server_timings == timings
    assert record.to_json()["server_timings"]["predicted_per_second"] == 50.0
    by_hand = RequestRecord("x", 1, ok=True, e2e_s=0.62, server_timings=timings)
    assert by_hand.client_overhead_s == pytest.approx(0.12)  # 0.62 s - (100 + 400) ms
    assert RequestRecord("x", 1, ok=True, e2e_s=0.62).client_overhead_s is None


@pytest.mark.parametrize("reason", ["content_filter", "abort", "error", "guardrail_intervened"])
def test_an_abnormal_finish_reason_is_an_error(reason):
    with FakeOpenAI([text("Some text", finish=reason)]) as fake:
        record, error = timed(fake.url)
    assert not record.ok and isinstance(error, BadCompletion)
    assert describe(error) == f"finish reason {reason!r}: not a normal end of the answer"
    assert gave_no_answer(error) is False  # the server answered; the answer does not count


def test_length_is_a_normal_end():
    with FakeOpenAI([text("cut at the limit", finish="length")]) as fake:
        record, error = timed(fake.url)
    assert error is None and record.ok and record.finish_reason == "length"


def test_an_empty_completion_is_an_error():
    with FakeOpenAI([text("", usage_tokens=1)]) as fake:
        record, error = timed(fake.url)
    assert not record.ok and isinstance(error, BadCompletion)
    assert describe(error) == "empty completion: no text and no tool call (finish reason 'stop')"


@pytest.mark.parametrize(
    ("step", "kind", "expected"),
    [
        (Step(kind="cut", text="the ocean"), StreamFault, "stream cut: ended after 3 chunks without a finish reason"),
        (Step(kind="drop", text="the ocean"), StreamFault, "connection dropped mid-response"),
        (Step(kind="malformed"), StreamFault, "malformed stream: chunk 2 is not JSON"),
        (Step(kind="empty"), StreamFault, "empty stream: no chunks before the connection closed"),
        (Step(kind="http_error", status=500), HttpStatus, "HTTP 500: scripted failure"),
        (Step(kind="http_error", status=400, error_body="bad request body"), HttpStatus, "HTTP 400: bad request body"),
        # A proxy's page is said by its kind and size, never dumped into a table cell.
        (
            Step(kind="http_error", status=502, error_body=PROXY_PAGE, content_type="text/html"),
            HttpStatus,
            "HTTP 502 Bad Gateway (text/html body, 1.2 kB)",
        ),
        # vLLM's error body (a top-level message) and llama.cpp's (error.message) give their message.
        (
            Step(kind="http_error", status=400, error_body=json.dumps({"object": "error", "message": "bad `n`"})),
            HttpStatus,
            "HTTP 400: bad `n`",
        ),
        # A 200 that is no event stream says what came back (not "empty stream").
        (
            Step(kind="body", text="Paris", content_type="text/plain"),
            StreamFault,
            "not an event stream: HTTP 200, text/plain (5 B): 'Paris'",
        ),
        (
            Step(kind="body", text='{"error": {"message": "model is loading"}}'),
            StreamFault,
            "not an event stream: HTTP 200, application/json (42 B): 'model is loading'",
        ),
    ],
)
def test_faults_are_typed_errors_not_short_answers(step, kind, expected):
    with FakeOpenAI([step]) as fake:
        record, error = timed(fake.url)
    assert not record.ok
    assert isinstance(as_fault(error), kind)
    line = describe(error)
    assert line.startswith(expected) and "\n" not in line
    assert gave_no_answer(error) is True and backend_down(error) is False


def test_a_prompt_past_the_context_is_its_own_fault_in_the_servers_words():
    with FakeOpenAI([Step(kind="http_error", status=400, error_body=LLAMA_CPP_OVERFLOW)]) as fake:
        record, error = timed(fake.url)
    assert not record.ok and isinstance(as_fault(error), ContextOverflow)
    assert describe(error) == (
        "context overflow: HTTP 400: request (5010 tokens) exceeds the available context size (4096 tokens), "
        "try increasing it"
    )


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (text("the ocean is deep", usage_tokens=-5),
         "impossible usage from the server: completion_tokens -5 (a token count is a whole number, at least 0)"),
        (text("the ocean is deep", prompt_tokens=-3),
         "impossible usage from the server: prompt_tokens -3 (a token count is a whole number, at least 0)"),
        (text("the ocean is deep", usage_tokens=0),
         "impossible usage from the server: 0 output tokens for an answer with output"),
    ],
)  # fmt: skip
def test_an_impossible_usage_is_an_error_on_the_record_not_a_figure(step, expected):
    """A server that reports a negative count once gave a median of -2895.7 tok/s, exit 0."""
    with FakeOpenAI([step]) as fake:
        record, error = timed(fake.url)
    assert not record.ok and isinstance(as_fault(error), BadCompletion)
    assert describe(error) == expected
    assert record.tokens_per_s is None and (record.output_tokens or 0) >= 0


def test_a_hanging_server_times_out():
    with FakeOpenAI([Step(kind="hang")]) as fake:
        record, error = timed(fake.url, timeout_s=1.0)
    assert not record.ok and isinstance(as_fault(error), TimedOut) and backend_down(error)


def test_a_dead_server_is_unreachable(dead_url):
    record, error = timed(dead_url)
    assert not record.ok and isinstance(as_fault(error), Unreachable) and backend_down(error)
    assert describe(error).startswith("unreachable")


def test_stream_error_object_is_a_fault():
    from runner.timing.stream import ChatStreamAccumulator

    stream = ChatStreamAccumulator(RequestRecord(backend="x", run=1))
    with pytest.raises(StreamFault, match="server error in stream: overloaded"):
        stream.feed_line('data: {"error": {"message": "overloaded"}}', 0.1)


def test_lines_after_done_are_drained_not_parsed():
    from runner.timing.stream import ChatStreamAccumulator

    record = RequestRecord(backend="x", run=1)
    stream = ChatStreamAccumulator(record)
    stream.feed_line('data: {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]}', 0.1)
    stream.feed_line("data: [DONE]", 0.2)
    stream.feed_line("data: {not json", 0.3)
    assert stream.finish(0.4).e2e_s == 0.2  # the answer ended at [DONE], not at the end of the body
