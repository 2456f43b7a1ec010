"""The load path every OpenAI-compatible sweep takes: the aiohttp client on one event loop and the
one load engine. Its faults are the same typed faults as the blocking client's; `--rate` sends at
the seeded Poisson offsets with `--max-concurrency` honoured and late sends measured; and against
a keep-alive server not one timed request opens a connection, at any level."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from runner import bench
from runner.core.errors import HttpStatus, StreamFault, TimedOut, Unreachable, as_fault, describe
from runner.core.records import RequestRecord, records_of
from runner.figures.levels import level_summary
from runner.measure import ChatRequest
from runner.measure.load import OPEN, LoadLevel, poisson_offsets, run_level_async
from runner.measure.openai_async import AsyncOpenAIStreamClient
from tests.runner.fake_openai import FakeOpenAI, Step, text

REQUEST = ChatRequest(prompt="Write a short paragraph about the ocean.", max_tokens=100)
OCEAN = "The ocean is wide and deep and blue"


async def chat_once(
    url: str, timeout_s: float = 5.0, times: int = 1
) -> list[tuple[RequestRecord, BaseException | None]]:
    results = []
    async with AsyncOpenAIStreamClient(f"{url}/v1", "fake-model", timeout_s=timeout_s) as client:
        for run in range(1, times + 1):
            record = RequestRecord(backend="fake", run=run)
            try:
                await client.chat(REQUEST, record)
                results.append((record, None))
            except Exception as error:
                results.append((record, error))
    return results


@pytest.mark.parametrize(
    ("step", "kind", "expected"),
    [
        (Step(kind="http_error", status=500), HttpStatus, "HTTP 500: scripted failure"),
        (Step(kind="malformed"), StreamFault, "malformed stream: chunk 2 is not JSON"),
        (Step(kind="cut", text=OCEAN), StreamFault, "stream cut: ended after 9 chunks without a finish reason"),
        (Step(kind="drop", text=OCEAN), StreamFault, "connection dropped mid-response"),
    ],
)
def test_the_async_client_types_every_fault(step, kind, expected):
    with FakeOpenAI([step]) as fake:
        ((record, error),) = asyncio.run(chat_once(fake.url))
    assert not record.ok and isinstance(as_fault(error), kind)
    line = describe(error)
    assert line.startswith(expected) and "\n" not in line


def test_a_refused_connection_is_unreachable(dead_url):
    ((_record, error),) = asyncio.run(chat_once(dead_url))
    assert isinstance(as_fault(error), Unreachable) and describe(error).startswith("unreachable")


def test_a_hanging_server_times_out():
    with FakeOpenAI([Step(kind="hang")]) as fake:
        ((_record, error),) = asyncio.run(chat_once(fake.url, timeout_s=1.0))
    assert isinstance(as_fault(error), TimedOut)


def test_a_reused_connection_the_server_closed_is_sent_once_more_on_a_new_one():
    # The server closes a reused connection as soon as the next request arrives, before any byte
    # of a response: deterministic, no timer. Nothing is lost and each record says what happened.
    with FakeOpenAI([text(OCEAN, close="on-reuse")]) as fake:
        results = asyncio.run(chat_once(fake.url, times=3))
    records = [r for r, error in results if error is None]
    assert len(records) == 3
    assert [r.stale_connection_retry for r in records] == [False, True, True]
    assert [r.new_connection for r in records] == [True, True, True]
    assert fake.connection_ids == [1, 2, 3] and len(fake.requests) == 3


def sweep(tmp_path: Path, url: str, *levels: str) -> dict:
    argv = ["--no-aws", "--local", "never", "--endpoint", f"fake={url}", "--results-dir", str(tmp_path), *levels]
    assert bench.run(argv) == 0
    (path,) = tmp_path.glob("*/bench-*.json")
    return json.loads(path.read_text())


def test_no_timed_request_opens_a_connection_at_any_level_against_a_keep_alive_server(tmp_path):
    """Every connection a level uses is opened by its untimed warm-ups: zero inside the timing."""
    with FakeOpenAI([text(OCEAN, first_token_delay_s=0.01)]) as fake:
        evidence = sweep(tmp_path, fake.url, "--concurrency", "1,4,16", "--requests", "32")
    records = evidence["records"]
    by_level = {}
    for record in records:
        assert record["ok"], record["error"]
        by_level.setdefault(record["level"]["label"], []).append(record["new_connection"])
    assert sorted(by_level) == ["1 at a time", "16 at a time", "4 at a time"]
    assert {label: sum(flags) for label, flags in by_level.items()} == dict.fromkeys(by_level, 0)
    assert all(flag is False for flags in by_level.values() for flag in flags)


def test_the_open_loop_sends_at_the_seeded_offsets_honours_its_cap_and_measures_late_sends(tmp_path):
    # A server slower than the arrivals and a cap of 2: at most 2 in flight on the server, and
    # the sends after the cap wait (measured as late), while the schedule is the seeded one.
    slow = text(OCEAN, first_token_delay_s=0.15)
    with FakeOpenAI([slow]) as fake:
        evidence = sweep(
            tmp_path, fake.url, "--rate", "40", "--requests", "10", "--max-concurrency", "2", "--seed", "7"
        )
        busiest = fake.max_in_flight
    records = sorted(evidence["records"], key=lambda r: r["run"])
    assert busiest == 2  # the cap, reached and never passed (warm-ups come before the level)
    assert [r["scheduled_s"] for r in records] == pytest.approx(poisson_offsets(40.0, 10, 7))
    summary = level_summary(records_of({"records": records})).to_json()
    assert summary["completed"] == 10
    # Ten requests of at least 0.15 s through two slots: the last cannot go before ~0.6 s, far
    # past its arrival at ~0.25 s.
    assert summary["max_send_lag_s"] > 0.2
    assert all(r["sent_s"] >= r["scheduled_s"] for r in records)


def test_the_engine_keeps_a_failed_request_as_a_record():
    async def chat(request: ChatRequest, record: RequestRecord) -> RequestRecord:
        if record.run % 2:
            raise RuntimeError("scripted")
        record.ok = True
        return record

    level = LoadLevel(OPEN, 500.0, 6)
    records = asyncio.run(run_level_async(chat, str, "b", level, [REQUEST], seed=1))
    assert [r.run for r in records] == [1, 2, 3, 4, 5, 6]
    assert [r.error for r in records] == ["scripted", None] * 3
