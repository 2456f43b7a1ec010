"""Demo 1 grading with the real Strands agent against a scripted server: exact tool-call cases."""

from __future__ import annotations

import argparse

import pytest

from runner.agent.counting import EXPECTED, IDS, QUESTION, SYSTEM, Sent, count_once, right_filter
from runner.core.backends import EndpointFlag, endpoint_backend
from tests.runner.fake_openai import FakeOpenAI, Step, text, tool_call


def args(**overrides):
    values = {"max_tokens": 64, "timeout": 5.0, "tools": "filter", "runs": 1}
    return argparse.Namespace(**(values | overrides))


def backend_for(url: str):
    return endpoint_backend(EndpointFlag(name="scripted", url=url, model_id="fake-model"), None)


def run_script(script, **overrides):
    with FakeOpenAI(script) as fake:
        record = count_once(backend_for(fake.url), 1, args(**overrides)).to_json()
    return record, fake


def test_the_fixture_is_the_surveys():
    # demo1_counting.py in the survey's repository: its ids in its (unsorted) order, its question.
    assert IDS == (0, 2, 3, 20, 21, 22, 23, 10, 11, 12, 13)
    assert EXPECTED == 8 and sum(1 for i in IDS if i > 10) == 7
    assert QUESTION == "How many of the ids are 10 or more? Answer with the number."
    assert "sentence stating the number" in SYSTEM and "Answer: <number>" in SYSTEM


@pytest.mark.parametrize(
    ("op", "value", "right"),
    [
        (">=", 10, True),
        (">", 9, True),
        # selects 10, 11, 12, 13, 20..23 too: the ids are integers, and no id lies between 3 and 10.
        (">", 3, True),
        (">=", 4, True),
        (">", 9.5, True),
        (">", 10, False),
        (">=", 11, False),
        ("<", 10, False),
        ("==", 10, False),
        ("!=", 10, False),
        (">=", "10", False),
    ],
)
def test_a_filter_is_right_when_it_selects_the_same_ids(op, value, right):
    assert right_filter(Sent(op, value)) is right


def test_right_filter_and_right_number_pass():
    record, fake = run_script(
        [tool_call("count_ids", {"op": ">=", "value": 10}), text("There are 8 ids that are 10 or more.\nAnswer: 8")]
    )
    assert (record["correct"], record["right_filter"], record["passed"]) == (True, True, True)
    assert record["filters_sent"] == ["id >= 10"]
    assert (record["quoted"], record["grading_route"]) == (8, "final-line")
    # The survey's question went out unchanged, with the system prompt.
    messages = fake.requests[0]["messages"]
    assert messages[0] == {"role": "system", "content": SYSTEM}
    assert messages[-1]["content"] in (QUESTION, [{"type": "text", "text": QUESTION}])
    # The tool result went back to the model: the count it quoted came from code.
    tool_message = next(m for m in fake.requests[1]["messages"] if m["role"] == "tool")
    assert '"count": 8' in str(tool_message["content"])


def test_wrong_filter_with_the_right_number_is_not_a_pass():
    record, _ = run_script([tool_call("count_ids", {"op": ">", "value": 10}), text("8 of the ids are 10 or more.")])
    assert record["quoted"] == 8 and record["correct"] is True
    assert record["right_filter"] is False and record["passed"] is False
    assert record["filters_sent"] == ["id > 10"]


def test_right_filter_wrong_number_fails():
    record, _ = run_script([tool_call("count_ids", {"op": ">=", "value": 10}), text("There are 7.")])
    assert (record["correct"], record["right_filter"], record["passed"]) == (False, True, False)


def test_no_tool_call_is_not_a_pass_even_with_the_right_number():
    record, _ = run_script([text("The answer is 8.")])
    assert record["correct"] is True and record["passed"] is False
    assert record["no_tool_call"] is True and record["filters_sent"] == []


def test_malformed_arguments_are_recorded_and_fail():
    record, _ = run_script([tool_call("count_ids", '{"op": ">=", "value": '), text("I think 8.")])
    assert record["passed"] is False and record["right_filter"] is False
    assert record["tool_calls_requested"], "the malformed call must stay in the evidence"
    assert record["filters_sent"] == []


def test_a_runaway_tool_loop_is_capped():
    record, fake = run_script([tool_call("count_ids", {"op": ">=", "value": 10})])
    assert record["passed"] is False
    assert "runaway tool loop" in record["error"]
    assert len(fake.requests) <= 7


def test_an_unusual_but_equivalent_filter_passes():
    record, _ = run_script([tool_call("count_ids", {"op": ">", "value": 5}), text("Using id > 5, the count is 8.")])
    assert (record["right_filter"], record["correct"], record["passed"]) == (True, True, True)
    assert record["grading_route"] == "free-text"


def test_a_hedged_answer_fails_even_with_the_right_filter():
    record, _ = run_script([tool_call("count_ids", {"op": ">=", "value": 10}), text("8, or possibly 6.")])
    assert record["right_filter"] is True and record["correct"] is False and record["passed"] is False
    assert record["reading_problem"]


def test_a_run_stopped_by_its_limits_never_passes_whatever_it_said():
    # The model quotes the right number in the same message as another tool call, again and again:
    # the limits stop the loop, and the text on the way is not a pass.
    looping = Step(kind="tool", text="Answer: 8", tool_calls=[("count_ids", '{"op": ">=", "value": 10}')])
    record, _ = run_script([looping])
    assert record["right_filter"] is True
    assert "runaway tool loop" in record["error"]
    assert record["finished"] is False and record["passed"] is False


def test_a_backend_error_after_the_right_call_never_passes():
    record, _ = run_script([tool_call("count_ids", {"op": ">=", "value": 10}), Step(kind="http_error", status=500)])
    assert record["right_filter"] is True and record["passed"] is False
    assert record["error"].startswith("HTTP 500")


def test_rows_variant_grades_the_number_after_fetching_ids():
    record, _ = run_script([tool_call("list_ids", {}), text("Counting them: 8.")], tools="rows")
    assert (record["correct"], record["right_filter"], record["passed"]) == (True, True, True)


@pytest.mark.parametrize(
    ("step", "fragment"),
    [
        (Step(kind="http_error", status=500), "HTTP 500"),
        (Step(kind="cut", text="eight"), "stream cut: ended after"),
        (Step(kind="empty"), "empty stream"),
        (
            Step(kind="http_error", status=400, error_body='{"error": {"message": "maximum context length exceeded"}}'),
            "context overflow",
        ),
    ],
)
def test_server_faults_become_errors_for_that_run(step, fragment):
    record, _ = run_script([step])
    assert record["passed"] is False and record["error"]
    assert fragment in record["error"]
    assert "\n" not in record["error"]


def test_dead_server_is_an_unreached_error(dead_url):
    record = count_once(backend_for(dead_url), 1, args()).to_json()
    assert record["reached"] is False and record["error"].startswith("unreachable")


def test_counting_that_reached_no_backend_exits_1(tmp_path, dead_url):
    from runner import counting
    from runner.core.evidence import load

    code = counting.run(
        [
            "--no-aws",
            "--local",
            "never",
            "--endpoint",
            f"dead={dead_url}",
            "--runs",
            "2",
            "--results-dir",
            str(tmp_path),
        ]
    )
    assert code == 1
    (path,) = tmp_path.glob("*/counting-*.json")
    records = load(path)["records"]
    assert [(r["reached"], r["passed"]) for r in records] == [(False, False), (False, False)]
