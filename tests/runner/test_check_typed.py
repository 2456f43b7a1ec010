"""A check result typed as its evidence holds it (runner/core/agent_evidence.py): each way of
checking a backend (not healthy, no model, no agent on the path, through the agent with and
without tools) writes exactly the entry written before it was typed (keys, values and their
order), reads back the same, and a malformed entry is one line naming it and its file."""

from __future__ import annotations

import json

import pytest

from runner.core.agent_evidence import AgentRun, CheckHealth, CheckResult, TimedAnswer, ToolCall, checks_of
from runner.core.errors import RunnerError
from runner.core.records import RequestRecord

HEALTHY = {"healthy": True, "waited_s": 1.25, "detail": "HTTP 200"}
PLAIN = AgentRun(ok=True, seconds=0.4, answer="Paris", model_calls=1, input_tokens=20, output_tokens=2)
TOOLED = AgentRun(
    ok=True, seconds=0.9, answer="42", model_calls=2,
    tool_calls=[ToolCall("add_numbers", {"a": 17, "b": 25})],
)  # fmt: skip
AT = "2026-02-01T10:00:00.000+00:00"
TIMED = RequestRecord("serverless", 1, ok=True, started_at=AT, e2e_s=0.7, output_tokens=2, text="Paris.")
CUT = RequestRecord("serverless", 1, ok=False, error="stream cut", started_at=AT, text="")

# The entries of the runs and requests above, written out.
PLAIN_ENTRY = {"ok": True, "seconds": 0.4, "answer": "Paris", "error": None, "tool_calls": [], "model_calls": 1,
               "stopped": None, "input_tokens": 20, "output_tokens": 2, "reached": True}  # fmt: skip
TOOLED_ENTRY = {
    "ok": True, "seconds": 0.9, "answer": "42", "error": None,
    "tool_calls": [{"name": "add_numbers", "input": {"a": 17, "b": 25}, "cancelled": False}], "model_calls": 2,
    "stopped": None, "input_tokens": None, "output_tokens": None, "reached": True,
}  # fmt: skip
UNMEASURED = {
    "backend": "serverless", "run": 1, "ok": False, "error": None, "started_at": AT, "ttft_s": None,
    "e2e_s": None, "output_tokens": None, "prompt_tokens": None, "token_source": None, "finish_reason": None,
    "text": "", "chunks": 0, "server_timings": None, "new_connection": None, "stale_connection_retry": False,
    "chunk_times": [], "chunk_token_counts": None, "level": None, "scheduled_s": None, "sent_s": None,
    "cold_start": None, "phases": None, "target_input_tokens": None, "target_output_tokens": None,
    "forced_length": None, "session": None, "turn": None, "slo": None,
    "tokens_per_s": None, "decode_tokens_per_s": None, "client_overhead_s": None,
}  # fmt: skip
# Two tokens in 0.7 s, not streamed (no time to first token: no decode rate).
TIMED_ENTRY = UNMEASURED | {"ok": True, "e2e_s": 0.7, "output_tokens": 2, "text": "Paris.", "tokens_per_s": 2 / 0.7}
CUT_ENTRY = UNMEASURED | {"error": "stream cut"}


def untyped(*steps: dict) -> dict:
    """The entry as the check assembled it before it was typed: a dict updated step by step."""
    record: dict = {}
    for step in steps:
        record.update(step)
    return record


health = CheckHealth(**HEALTHY)
CASES = [
    (
        CheckResult("down", CheckHealth(False, 3.0, "HTTP 503"), False, False, False, error="not healthy: HTTP 503"),
        untyped({"backend": "down", "health": {"healthy": False, "waited_s": 3.0, "detail": "HTTP 503"}},
                {"reached": False, "plain_ok": False, "tool_ok": False, "error": "not healthy: HTTP 503"}),
    ),
    (
        CheckResult("batch", health, None, None, None, tool_note="this path has no agent"),
        untyped({"backend": "batch", "health": HEALTHY}, {"tool_ok": None, "tool_note": "this path has no agent"},
                {"reached": None, "plain_ok": None}),
    ),
    (
        CheckResult("dead", health, False, False, None, tool_note="no agent", error="unreachable"),
        untyped({"backend": "dead", "health": HEALTHY}, {"tool_ok": None, "tool_note": "no agent"},
                {"reached": False, "plain_ok": False, "error": "unreachable"}),
    ),
    (
        CheckResult("serverless", health, True, True, None, TimedAnswer(TIMED, "Paris."), True, tool_note="no agent"),
        untyped({"backend": "serverless", "health": HEALTHY}, {"tool_ok": None, "tool_note": "no agent"},
                {"plain": TIMED_ENTRY | {"answer": "Paris."}},
                {"reached": True, "plain_ok": True, "plain_says_paris": True}),
    ),
    (
        CheckResult("serverless", health, True, False, None, TimedAnswer(CUT, ""), False, tool_note="no agent",
                    error="stream cut"),
        untyped({"backend": "serverless", "health": HEALTHY}, {"tool_ok": None, "tool_note": "no agent"},
                {"plain": CUT_ENTRY | {"answer": ""}},
                {"reached": True, "plain_ok": False, "plain_says_paris": False}, {"error": "stream cut"}),
    ),
    (
        CheckResult("vllm", health, True, True, None, PLAIN, True, tool_note="server ignores tool definitions"),
        untyped({"backend": "vllm", "health": HEALTHY}, {"plain": PLAIN_ENTRY, "plain_ok": True},
                {"plain_says_paris": True, "reached": True},
                {"tool_ok": None, "tool_note": "server ignores tool definitions"}),
    ),
    (
        CheckResult("g6", health, True, True, True, PLAIN, True, TOOLED, [{"a": 17, "b": 25}]),
        untyped({"backend": "g6", "health": HEALTHY}, {"plain": PLAIN_ENTRY, "plain_ok": True},
                {"plain_says_paris": True, "reached": True}, {"tool": TOOLED_ENTRY},
                {"tool_args_seen": [{"a": 17, "b": 25}]}, {"tool_ok": True}, {"reached": True}),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("result", "entry"), CASES)
def test_a_result_writes_the_entry_it_wrote_untyped_and_reads_back_the_same(result, entry):
    written = json.dumps(result.to_json())
    assert written == json.dumps(entry)
    (back,) = checks_of(json.loads(json.dumps({"records": [entry]})))
    assert back == result and json.dumps(back.to_json()) == written


def test_what_passes():
    # Not healthy, a batch model (its health is the check), unreachable, answered, a cut answer,
    # the agent without tools, the agent with both.
    assert [result.passed for result, _ in CASES] == [False, True, False, True, False, True, True]


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        ({"backend": "g6"}, "check.json: records[0] of g6, its health: expected a JSON object"),
        ({"backend": "g6", "health": {"healthy": "yes"}}, "check.json: records[0] of g6, its health: 'healthy' is"),
        ({"backend": "g6", "health": HEALTHY, "plain_ok": "no"}, "check.json: records[0] of g6: 'plain_ok' is 'no'"),
        ({"backend": "g6", "health": HEALTHY, "plain": {"ok": True}}, "check.json: records[0] of g6, its plain answer: no 'seconds'"),
        ({"backend": "g6", "health": HEALTHY, "tool": {"seconds": 1}}, "check.json: records[0] of g6, its tool call: no 'ok'"),
        ({"health": HEALTHY}, "check.json: records[0]: no 'backend'"),
    ],
)  # fmt: skip
def test_a_malformed_result_is_one_line_naming_it(entry, line):
    with pytest.raises(RunnerError) as refused:
        checks_of({"records": [entry]}, where="check.json")
    assert str(refused.value).startswith(line) and "\n" not in str(refused.value)
