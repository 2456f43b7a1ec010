"""An orchestrator run typed as its evidence holds it (runner/core/agent_evidence.py): a run with
the agent's run, the code's table, every ask and the warm-ups, and a run whose agent never ran,
write exactly the entry written before they were typed (keys, values and their order), read back
the same, and a malformed entry (or one of its rows) is one line naming it and its file."""

from __future__ import annotations

import json

import pytest

from runner.core.agent_evidence import (
    AgentFailure,
    AgentRun,
    OrchestratorAsk,
    OrchestratorRun,
    ScoreRow,
    orchestrator_runs_of,
)
from runner.core.errors import RunnerError
from runner.core.records import RequestRecord

AT = "2026-02-01T10:00:00.000+00:00"
ASKED = RequestRecord("fast", 1, ok=True, started_at=AT, ttft_s=0.05, e2e_s=0.2, output_tokens=2, text="Paris")
WARM = RequestRecord("fast", 0, ok=True, started_at=AT, e2e_s=0.1, output_tokens=4, text="Hi there")
ROW = ScoreRow("fast", "Fast server", 1, 1, "Paris", 0.2, 10.0, None)
AGENT = AgentRun(ok=True, seconds=2.0, answer="| t |\nfast was fastest.", model_calls=3)


def run_of(agent: AgentRun | AgentFailure) -> OrchestratorRun:
    return OrchestratorRun(
        run=1, agent_backend="agent", agent=agent, table=[ROW], table_markdown="| t |",
        asks=[OrchestratorAsk("Fast server", "Paris", ASKED)], warm_ups=[WARM], never_asked=["agent"],
        agent_table="| t |", closing_sentence="fast was fastest.", table_winner="fast", sentence_names=["fast"],
        sentence_names_different_winner=False,
    )  # fmt: skip


# The entries of the ask and the warm-up, written out: a request's keys, its rates from the raw
# times (2 / 0.2 and 1 / (0.2 - 0.05); 4 / 0.1, no decode rate without a first token).
UNMEASURED = {
    "backend": "fast", "run": 0, "ok": True, "error": None, "started_at": AT, "ttft_s": None, "e2e_s": None,
    "output_tokens": None, "prompt_tokens": None, "token_source": None, "finish_reason": None, "text": "",
    "chunks": 0, "server_timings": None, "new_connection": None, "stale_connection_retry": False,
    "chunk_times": [], "chunk_token_counts": None, "level": None, "scheduled_s": None, "sent_s": None,
    "cold_start": None, "phases": None, "target_input_tokens": None, "target_output_tokens": None,
    "forced_length": None, "session": None, "turn": None, "slo": None,
    "tokens_per_s": None, "decode_tokens_per_s": None, "client_overhead_s": None,
}  # fmt: skip
ASKED_ENTRY = UNMEASURED | {"run": 1, "ttft_s": 0.05, "e2e_s": 0.2, "output_tokens": 2, "text": "Paris",
                            "tokens_per_s": 2 / 0.2, "decode_tokens_per_s": 1 / (0.2 - 0.05)}  # fmt: skip
WARM_ENTRY = UNMEASURED | {"e2e_s": 0.1, "output_tokens": 4, "text": "Hi there", "tokens_per_s": 4 / 0.1}
AGENT_ENTRY = {"ok": True, "seconds": 2.0, "answer": "| t |\nfast was fastest.", "error": None, "tool_calls": [],
               "model_calls": 3, "stopped": None, "input_tokens": None, "output_tokens": None, "reached": True}  # fmt: skip


def untyped(agent: dict) -> dict:
    """The entry as the orchestrator assembled it before it was typed."""
    return {
        "run": 1, "agent_backend": "agent", "agent": agent,
        "table": [{"backend": "fast", "title": "Fast server", "asks": 1, "measured": 1, "answer": "Paris",
                   "seconds": 0.2, "tokens_per_s": 10.0, "error": None}],
        "table_markdown": "| t |",
        "asks": [{"title": "Fast server", "answer": "Paris", **ASKED_ENTRY}],
        "warm_ups": [WARM_ENTRY], "never_asked": ["agent"], "agent_table": "| t |",
        "closing_sentence": "fast was fastest.",
        "table_winner": "fast", "sentence_names": ["fast"], "sentence_names_different_winner": False,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("agent", "entry"),
    [
        (AGENT, AGENT_ENTRY),
        (AgentFailure(ok=False, error="no model"), {"ok": False, "error": "no model", "answer": "", "tool_calls": []}),
    ],
)
def test_a_run_writes_the_entry_it_wrote_untyped_and_reads_back_the_same(agent, entry):
    run = run_of(agent)
    written = json.dumps(run.to_json())
    assert written == json.dumps(untyped(entry))
    (back,) = orchestrator_runs_of(json.loads(json.dumps({"records": [untyped(entry)]})))
    assert back == run and json.dumps(back.to_json()) == written
    assert type(back.agent) is type(agent) and back.asks[0].request.ok


@pytest.mark.parametrize(
    ("change", "line"),
    [
        ({"run": "1"}, "orchestrator.json: records[0]: 'run' is '1'"),
        ({"agent": {"ok": False}}, "orchestrator.json: records[0], its agent: no 'error'"),
        ({"table": [{"backend": "fast"}]}, "orchestrator.json: records[0]: table[0] of fast: no 'title'"),
        ({"asks": [{"title": "t", "answer": "a", "backend": "fast"}]}, "orchestrator.json: records[0]: asks[0] of fast: no 'run'"),
        ({"warm_ups": "none"}, "orchestrator.json: records[0]: 'warm_ups' is not a list"),
    ],
)  # fmt: skip
def test_a_malformed_run_is_one_line_naming_it(change, line):
    entry = run_of(AGENT).to_json() | change
    with pytest.raises(RunnerError) as refused:
        orchestrator_runs_of({"records": [entry]}, where="orchestrator.json")
    assert str(refused.value).startswith(line) and "\n" not in str(refused.value)
