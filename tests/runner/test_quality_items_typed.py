"""A quality item typed as its evidence holds it (runner/core/agent_evidence.py): every way an
item is recorded (graded through the timed client, no answer from it, graded through the agent,
the agent never reached, a backend already down) writes exactly the entry the assembly built
before it was typed (keys, values and their order), reads back the same, and a malformed entry
is one line naming it and its file."""

from __future__ import annotations

import json

import pytest

from runner.agent.quality import BackendQuality, QualitySettings, error_record
from runner.agent.tasks import generate
from runner.core.agent_evidence import QualityItem, quality_items_of
from runner.core.backends import EndpointFlag, endpoint_backend
from runner.core.errors import RunnerError
from tests.runner.fake_openai import FakeOpenAI, text, tool_call

SETTINGS = QualitySettings(max_tokens=16, timeout_s=5)
(COUNTING,) = generate(1, seed=3, families=["counting"])
(TOOL,) = generate(1, seed=3, families=["tool_use"])


def assembled(url: str, ask) -> tuple[dict, QualityItem]:
    """The entry as assembled (untyped) and the item `BackendQuality.ask` hands on, for one ask."""
    asking = BackendQuality(endpoint_backend(EndpointFlag("b", url, "fake-model"), None), SETTINGS)
    try:
        untyped = ask(asking)
    finally:
        asking.close()
    return untyped, QualityItem.from_json(untyped, "x")


def same_both_ways(untyped: dict, item: QualityItem) -> None:
    written = json.dumps(item.to_json())
    assert written == json.dumps(untyped)
    (back,) = quality_items_of(json.loads(json.dumps({"records": [item.to_json()]})))
    assert back == item and json.dumps(back.to_json()) == written


def test_an_item_graded_through_the_timed_client():
    with FakeOpenAI([text(f"Answer: {COUNTING.expected}")]) as fake:
        untyped, item = assembled(fake.url, lambda asking: asking._plain_item(COUNTING))
    same_both_ways(untyped, item)
    assert item.graded and item.correct and item.timing is not None and item.reading is not None


def test_an_item_the_timed_client_got_no_answer_to(dead_url):
    untyped, item = assembled(dead_url, lambda asking: asking._plain_item(COUNTING))
    same_both_ways(untyped, item)
    assert item.verdict == "error" and not item.graded and item.timing is not None and item.reading is None


def test_a_tool_item_graded_through_the_agent():
    steps = [tool_call(TOOL.tool.name, TOOL.tool.arguments), text(f"Answer: {TOOL.expected}")]
    with FakeOpenAI(steps) as fake:
        untyped, item = assembled(fake.url, lambda asking: asking._agent_item(TOOL))
    same_both_ways(untyped, item)
    assert item.verdict == "right" and item.right_call and item.finished and item.tools_run
    assert item.agent is not None and item.timing is None


def test_a_tool_item_whose_agent_never_got_an_answer(dead_url):
    untyped, item = assembled(dead_url, lambda asking: asking._agent_item(TOOL))
    same_both_ways(untyped, item)
    assert item.verdict == "error" and item.agent is not None and item.tools_run == [] and item.right_call is None


def test_an_item_not_asked_because_the_backend_is_down():
    backend = endpoint_backend(EndpointFlag("b", "http://127.0.0.1:1", "fake-model"), None)
    untyped = error_record(backend, COUNTING, "not asked: b is down (unreachable)")
    same_both_ways(untyped, QualityItem.from_json(untyped, "x"))


@pytest.mark.parametrize(
    ("change", "line"),
    [
        ({"item": 3}, "quality.json: records[0] of g6: 'item' is 3"),
        ({"graded": "yes"}, "quality.json: records[0] of g6: 'graded' is 'yes'"),
        ({"ttft_s": 0.1}, "quality.json: records[0] of g6: no 'seconds'"),
        ({"grading_route": "final-line"}, "quality.json: records[0] of g6: no 'quoted'"),
        ({"model_calls": 2, "seconds": "slow"}, "quality.json: records[0] of g6: 'seconds' is 'slow'"),
    ],
)
def test_a_malformed_item_is_one_line_naming_it(change, line):
    entry = QualityItem("g6", "counting", "counting-000").to_json() | change
    with pytest.raises(RunnerError) as refused:
        quality_items_of({"records": [entry]}, where="quality.json")
    assert str(refused.value).startswith(line) and "\n" not in str(refused.value)
