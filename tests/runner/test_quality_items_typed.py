"""A quality item typed as its evidence holds it (runner/core/agent_evidence.py): every way an
item is recorded (graded through the timed client, no answer from it, graded through the agent,
the agent never reached, a backend already down) is built typed where it is asked, writes the
keys the evidence has always held for it (in that order, with the values stated here), reads back
the same, and a malformed entry is one line naming it and its file."""

from __future__ import annotations

import json

import pytest

from runner.agent.quality import BackendQuality, QualitySettings, error_item
from runner.agent.tasks import generate
from runner.core.agent_evidence import QualityItem, quality_items_of
from runner.core.backends import EndpointFlag, endpoint_backend
from runner.core.errors import RunnerError
from tests.runner.fake_openai import FakeOpenAI, text, tool_call

SETTINGS = QualitySettings(max_tokens=16, timeout_s=5)
(COUNTING,) = generate(1, seed=3, families=["counting"])
(TOOL,) = generate(1, seed=3, families=["tool_use"])

# Every item's own keys, then what the client that asked measured, then what grading read.
ITEM = ("backend", "family", "item", "prompt", "expected", "answer", "correct", "reason", "tool_calls", "verdict",
        "graded", "error", "client", "data")  # fmt: skip
TIMING = ("seconds", "ttft_s", "output_tokens", "token_source", "finish_reason")
AGENT = ("seconds", "model_calls", "output_tokens")
READING = ("quoted", "grading_route", "graded_text", "reading_problem", "echoed_sentences_set_aside")


def asked(url: str, ask) -> QualityItem:
    """The item `BackendQuality` hands on for one ask of backend `b` at `url`."""
    asking = BackendQuality(endpoint_backend(EndpointFlag("b", url, "fake-model"), None), SETTINGS)
    try:
        return ask(asking)
    finally:
        asking.close()


def written(quality_item: QualityItem, keys: tuple[str, ...], **stated: object) -> dict:
    """The item's entry, checked to hold `keys` in that order and the `stated` values; it reads
    back as the same item and writes the same again."""
    entry = json.loads(json.dumps(quality_item.to_json()))
    assert tuple(entry) == keys
    assert {key: entry[key] for key in stated} == stated
    (back,) = quality_items_of({"records": [entry]})
    assert back == quality_item and json.dumps(back.to_json()) == json.dumps(entry)
    return entry


def test_an_item_graded_through_the_timed_client():
    answer = f"Answer: {COUNTING.expected}"
    with FakeOpenAI([text(answer)]) as fake:
        item = asked(fake.url, lambda asking: asking._plain_item(COUNTING))
    entry = written(
        item, ITEM + TIMING + READING, backend="b", family="counting", item="counting-000", prompt=COUNTING.prompt,
        expected=COUNTING.expected, answer=answer, correct=True, verdict="right", graded=True, error=None,
        client="timed client", data=COUNTING.data, tool_calls=[], quoted=COUNTING.expected,
        grading_route="final-line", graded_text=answer, reading_problem=None, echoed_sentences_set_aside=0,
        reason=f"right: {COUNTING.expected!r} (final-line: {answer!r})",
    )  # fmt: skip
    assert entry["seconds"] > 0 and entry["finish_reason"] == "stop"


def test_an_item_the_timed_client_got_no_answer_to(dead_url):
    item = asked(dead_url, lambda asking: asking._plain_item(COUNTING))
    entry = written(item, ITEM + TIMING, verdict="error", graded=False, correct=False, answer="", seconds=None)
    assert entry["error"].startswith("unreachable") and entry["reason"] == entry["error"]


def test_a_tool_item_graded_through_the_agent():
    answer = f"Answer: {TOOL.expected}"
    steps = [tool_call(TOOL.tool.name, TOOL.tool.arguments), text(answer)]
    with FakeOpenAI(steps) as fake:
        item = asked(fake.url, lambda asking: asking._agent_item(TOOL))
    entry = written(
        item, ITEM + AGENT + READING + ("right_call", "finished", "tools_run"), answer=answer, verdict="right",
        correct=True, graded=True, client="agent", model_calls=2, quoted=TOOL.expected, right_call=True,
        finished=True, tool_calls=[{"name": TOOL.tool.name, "input": TOOL.tool.arguments, "cancelled": False}],
    )  # fmt: skip
    (run,) = entry["tools_run"]
    assert (run["name"], run["arguments"]) == (TOOL.tool.name, TOOL.tool.arguments)


def test_a_tool_item_whose_agent_never_got_an_answer(dead_url):
    item = asked(dead_url, lambda asking: asking._agent_item(TOOL))
    entry = written(item, ITEM + AGENT + ("tools_run",), verdict="error", graded=False, tool_calls=[], tools_run=[])
    assert entry["error"].startswith("unreachable") and item.right_call is None


def test_an_item_not_asked_because_the_backend_is_down():
    backend = endpoint_backend(EndpointFlag("b", "http://127.0.0.1:1", "fake-model"), None)
    line = "not asked: b is down (unreachable)"
    written(error_item(backend, COUNTING, line), ITEM, verdict="error", reason=line, error=line, graded=False)


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
