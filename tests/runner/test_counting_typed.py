"""A counting run typed as its evidence holds it (runner/core/agent_evidence.py): a graded run
(the agent's run and its grade in one entry) and a run with no model write exactly the entry
written before they were typed (keys, values and their order), read back the same, and a
malformed entry is one line naming it and its file."""

from __future__ import annotations

import json

import pytest

from runner.agent.counting import Sent, grade
from runner.core.agent_evidence import AgentRun, CountingRun, ToolCall, counting_runs_of
from runner.core.errors import RunnerError

CALL = ToolCall("count_ids", {"op": ">=", "value": 10})
CALLS = [{"name": "count_ids", "input": {"op": ">=", "value": 10}, "cancelled": False}]  # as the entry holds CALL
RUN = AgentRun(ok=True, seconds=1.5, answer="Eight ids.\nAnswer: 8", tool_calls=[CALL], model_calls=2, output_tokens=12)


def test_a_graded_run_writes_the_entry_it_wrote_untyped_and_reads_back_the_same():
    sent = [Sent(">=", 10)]
    # The run's keys, then its grade's: the final line's 8 read as quoted, the one filter sent
    # (id >= 10) the right one, and the agent finished.
    untyped = {
        "backend": "g6", "run": 3, "ok": True, "seconds": 1.5, "answer": "Eight ids.\nAnswer: 8", "error": None,
        "tool_calls": CALLS, "model_calls": 2, "stopped": None, "input_tokens": None, "output_tokens": 12,
        "reached": True, "quoted": 8, "grading_route": "final-line", "graded_text": "Answer: 8",
        "reading_problem": None, "correct": True, "right_filter": True, "finished": True, "passed": True,
        "filters_sent": ["id >= 10"], "tool_calls_requested": CALLS, "no_tool_call": False,
    }  # fmt: skip
    graded = CountingRun("g6", 3, agent=RUN, grade=grade(RUN, sent, "filter"))
    written = json.dumps(graded.to_json())
    assert written == json.dumps(untyped)
    (back,) = counting_runs_of(json.loads(json.dumps({"records": [untyped]})))
    assert back == graded and json.dumps(back.to_json()) == written
    assert (back.passed, back.reached, back.seconds, back.filters_sent) == (True, True, 1.5, ["id >= 10"])


def test_a_run_with_no_model_writes_what_it_wrote_and_reads_back_the_same():
    untyped = {"backend": "dead", "run": 1, "ok": False, "reached": False, "passed": False, "error": "unreachable"}
    refused = CountingRun("dead", 1, refused="unreachable")
    assert json.dumps(refused.to_json()) == json.dumps(untyped)
    (back,) = counting_runs_of({"records": [untyped]})
    assert back == refused and (back.error, back.reached, back.seconds, back.filters_sent) == (
        "unreachable",
        False,
        None,
        [],
    )


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        ({"backend": "g6", "error": "x"}, "counting.json: records[0] of g6: no 'run'"),
        ({"backend": "g6", "run": 1, "error": 5}, "counting.json: records[0] of g6: 'error' is 5"),
        ({"backend": "g6", "run": 1, "seconds": 1.0}, "counting.json: records[0] of g6: no 'ok'"),
        ({"backend": "g6", "run": 1, **RUN.to_json()}, "counting.json: records[0] of g6: no 'quoted'"),
        ("text", "counting.json: records[0]: expected a JSON object"),
    ],
)
def test_a_malformed_run_is_one_line_naming_it(entry, line):
    with pytest.raises(RunnerError) as refused:
        counting_runs_of({"records": [entry]}, where="counting.json")
    assert str(refused.value).startswith(line) and "\n" not in str(refused.value)
