"""An ask record typed as its evidence holds it (runner/core/agent_evidence.py): it writes exactly
the entry written before it was typed (the timed request's keys, then the question and how the
text came, in that order), reads back the same, and a malformed entry is one line naming it and
its file."""

from __future__ import annotations

import json

import pytest

from runner.core.agent_evidence import AskRecord, asks_of
from runner.core.errors import RunnerError
from runner.core.records import RequestRecord


def answered() -> RequestRecord:
    return RequestRecord(
        "g6", 1, ok=True, ttft_s=0.03, e2e_s=1.5, output_tokens=100, token_source="server", finish_reason="length",
        text="Paris is the capital.", chunks=4, chunk_times=[0.03, 0.5, 1.0, 1.5],
    )  # fmt: skip


def test_an_ask_writes_the_entry_it_wrote_untyped_and_reads_back_the_same():
    request = answered()
    untyped = request.to_json() | {"question": "Capital?", "streamed": True, "pieces": 4, "interrupted": False}
    asked = AskRecord(request, question="Capital?", streamed=True, pieces=4, interrupted=False)
    written = json.dumps(asked.to_json())
    assert written == json.dumps(untyped)
    (back,) = asks_of(json.loads(json.dumps({"records": [asked.to_json()]})))
    assert back == asked and json.dumps(back.to_json()) == written


def test_an_unanswered_ask_reads_back_with_its_error():
    request = RequestRecord("dead", 1, ok=False, error="unreachable: refused")
    asked = AskRecord(request, question="Capital?", streamed=False, pieces=0, interrupted=False)
    (back,) = asks_of({"records": [asked.to_json()]})
    assert (back.request.ok, back.request.error, back.streamed) == (False, "unreachable: refused", False)


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        ({"backend": "g6", "question": "q"}, "ask.json: records[0] of g6: no 'run'"),
        ({"backend": "g6", "run": 1, "pieces": "4"}, "ask.json: records[0] of g6: 'pieces' is '4'"),
        ({"backend": "g6", "run": 1, "streamed": 1}, "ask.json: records[0] of g6: 'streamed' is 1"),
        ("text", "ask.json: records[0]: expected a JSON object"),
    ],
)
def test_a_malformed_ask_is_one_line_naming_it(entry, line):
    with pytest.raises(RunnerError) as refused:
        asks_of({"records": [entry]}, where="ask.json")
    assert str(refused.value).startswith(line) and "\n" not in str(refused.value)
