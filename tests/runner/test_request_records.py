"""A request record typed as its evidence holds it (runner/core/records.py): a record with a level
and a verdict writes exactly the entry written before it was typed (keys, values and their order),
reads back through `from_json` (the derived rates recomputed, not read) and writes the same again;
a malformed entry is refused in one line that names it and its file."""

from __future__ import annotations

import json

import pytest

from runner.core.errors import RunnerError
from runner.core.records import RequestRecord, SloVerdict, records_of, tasks_of
from runner.measure.load import LoadLevel
from runner.workloads.slo import judge, parse_goodput


def measured() -> RequestRecord:
    level = LoadLevel("rate", 2.5, 8, max_concurrency=4, input_tokens=200)
    record = RequestRecord(
        "g6", 3, ok=True, started_at="2026-02-01T10:00:00.000+00:00", ttft_s=0.2, e2e_s=1.2, output_tokens=41,
        prompt_tokens=200, token_source="server", server_timings={"prompt_ms": 150.0, "predicted_ms": 900.0},
        chunk_times=[0.2, 0.5, 1.2], chunk_token_counts=[1, 20, 41], level=level.recorded(), scheduled_s=0.4,
        sent_s=0.41,
    )  # fmt: skip
    record.slo = judge(record, parse_goodput(["ttft:300", "e2el:1000"]))
    return record


# The entry `measured()` is kept as, written out here: the keys the evidence has always held, in
# that order (no `emulated`, `scripted` or `custom_model_units`: written only where given), the
# level as the load engine labels it, the verdict (1.2 s is over e2el's 1000 ms; TTFT 0.2 s is
# within 300 ms), and the rates from the raw times: 41 / 1.2, 40 / (1.2 - 0.2), 1.2 - 1.05.
ENTRY = {
    "backend": "g6", "run": 3, "ok": True, "error": None, "started_at": "2026-02-01T10:00:00.000+00:00",
    "ttft_s": 0.2, "e2e_s": 1.2, "output_tokens": 41, "prompt_tokens": 200, "token_source": "server",
    "finish_reason": None, "text": "", "chunks": 0, "server_timings": {"prompt_ms": 150.0, "predicted_ms": 900.0},
    "new_connection": None, "stale_connection_retry": False, "chunk_times": [0.2, 0.5, 1.2],
    "chunk_token_counts": [1, 20, 41],
    "level": {"mode": "rate", "value": 2.5, "requests": 8, "max_concurrency": 4, "input_tokens": 200,
              "label": "200 in, 2.5/s, at most 4"},
    "scheduled_s": 0.4, "sent_s": 0.41, "cold_start": None, "phases": None, "target_input_tokens": None,
    "target_output_tokens": None, "forced_length": None, "session": None, "turn": None,
    "slo": {"met": False, "missed": ["e2el"]},
    "tokens_per_s": 41 / 1.2, "decode_tokens_per_s": 40.0, "client_overhead_s": 1.2 - 1.05,
}  # fmt: skip


def test_a_record_writes_the_entry_it_wrote_untyped_and_reads_back_the_same():
    record = measured()
    written = record.to_json()
    assert json.dumps(written) == json.dumps(ENTRY)  # the same keys, values and order
    assert record.slo == SloVerdict(False, ["e2el"])
    (back,) = records_of(json.loads(json.dumps({"records": [ENTRY]})))
    assert back == record and json.dumps(back.to_json()) == json.dumps(written)
    # bench --in-region names the path a row measured: read back and written again with it.
    (tunnel,) = records_of({"records": [ENTRY | {"path": "tunnel"}]})
    assert tunnel.path == "tunnel" and tunnel.to_json() == ENTRY | {"path": "tunnel"}


def test_derived_rates_are_recomputed_not_read():
    entry = measured().to_json() | {"tokens_per_s": 1e9}
    assert RequestRecord.from_json(entry, "x").to_json()["tokens_per_s"] == pytest.approx(41 / 1.2)


def test_an_unjudged_verdict_says_why_and_a_record_without_level_or_verdict_reads():
    record = RequestRecord("serverless", 1, ok=True, e2e_s=2.0, output_tokens=10)
    verdict = judge(record, parse_goodput(["ttft:300"]))
    assert verdict.to_json() == {"met": None, "missed": [], "unjudged": "ttft not measured on this path"}
    assert RequestRecord.from_json(record.to_json(), "x") == record and record.label == "1 at a time"


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        ({"backend": "g6"}, "bench.json: records[1] of g6: no 'run'"),
        ({"backend": "g6", "run": 1, "e2e_s": "slow"}, "bench.json: records[1] of g6: 'e2e_s' is 'slow'"),
        ({"backend": "g6", "run": 1, "level": {"value": "x"}}, "bench.json: records[1] of g6, its level: 'value'"),
        ({"backend": "g6", "run": 1, "slo": {"missed": []}}, "bench.json: records[1] of g6, its verdict: no 'met'"),
        ("text", "bench.json: records[1]: expected a JSON object"),
    ],
)
def test_a_malformed_record_is_one_line_naming_it(entry, line):
    with pytest.raises(RunnerError) as refused:
        records_of({"records": [measured().to_json(), entry]}, where="bench.json")
    assert str(refused.value).startswith(line) and "\n" not in str(refused.value)


def test_agent_tasks_read_back_typed_beside_the_request_records():
    level = {"mode": "sessions", "value": 4, "label": "4 sessions"}
    done = {"backend": "g6", "task": 0, "kind": "counting-demo", "ok": True, "passed": True, "seconds": 0.5,
            "model_calls": 2, "tool_calls": 1, "tool_calls_right": True, "session": 1, "sent_s": 0.0, "level": level}  # fmt: skip
    refused = {"backend": "g6", "task": 1, "kind": "tool-use", "ok": False, "passed": False, "error": "no model"}
    first, second = tasks_of({"tasks": [done, refused | {"level": level}]})
    assert (first.sessions, first.model_calls, second.seconds, second.error) == (4, 2, None, "no model")
    with pytest.raises(RunnerError, match=r"^bench.json: tasks\[1\] of g6: no 'task'$"):
        tasks_of({"tasks": [done, {"backend": "g6", "kind": "x"}]}, where="bench.json")
