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
        "g6", 1, ok=True, started_at="2026-02-01T10:00:00.000+00:00", ttft_s=0.03, e2e_s=1.5, output_tokens=100,
        token_source="server", finish_reason="length", text="Paris is the capital.", chunks=4,
        chunk_times=[0.03, 0.5, 1.0, 1.5],
    )  # fmt: skip


# The ask's entry, written out: the timed request's keys (its rates from the raw times: 100 / 1.5
# and 99 / (1.5 - 0.03)), then the question and how the text came.
ENTRY = {
    "backend": "g6", "run": 1, "ok": True, "error": None, "started_at": "2026-02-01T10:00:00.000+00:00",
    "ttft_s": 0.03, "e2e_s": 1.5, "output_tokens": 100, "prompt_tokens": None, "token_source": "server",
    "finish_reason": "length", "text": "Paris is the capital.", "chunks": 4, "server_timings": None,
    "new_connection": None, "stale_connection_retry": False, "chunk_times": [0.03, 0.5, 1.0, 1.5],
    "chunk_token_counts": None, "level": None, "scheduled_s": None, "sent_s": None, "cold_start": None,
    "phases": None, "target_input_tokens": None, "target_output_tokens": None, "forced_length": None,
    "session": None, "turn": None, "slo": None,
    "tokens_per_s": 100 / 1.5, "decode_tokens_per_s": 99 / (1.5 - 0.03), "client_overhead_s": None,
    "question": "Capital?", "streamed": True, "pieces": 4, "interrupted": False,
}  # fmt: skip


def test_an_ask_writes_the_entry_it_wrote_untyped_and_reads_back_the_same():
    asked = AskRecord(answered(), question="Capital?", streamed=True, pieces=4, interrupted=False)
    written = json.dumps(asked.to_json())
    assert written == json.dumps(ENTRY)  # the same keys, values and order
    (back,) = asks_of(json.loads(json.dumps({"records": [ENTRY]})))
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
