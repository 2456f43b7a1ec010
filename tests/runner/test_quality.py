"""`runner.quality`: the generated task set and its answer key, the grader proved against a scripted
server answering right, wrong, hedged, contradictory and off-format (and a tool call with right and
wrong arguments), and one short run on the real embedded model (its evidence, not its accuracy)."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest

from runner import quality
from runner.agent.quality import QualitySettings, grade_answer, run_backend, summarise
from runner.agent.tasks import FAMILIES, NUMBER_FORMAT, TOOL_SYSTEM, Task, generate
from runner.core.agent_evidence import QualityItem
from runner.core.backends import EndpointFlag, endpoint_backend
from runner.core.evidence import load
from runner.render.tables import print_report, typed
from runner.servers.llama_cpp import MODEL_ALIAS
from tests.runner.fake_openai import FakeOpenAI, text, tool_call

RECORD_KEYS = {"backend", "family", "item", "prompt", "expected", "answer", "correct", "reason", "tool_calls"}
TALLY_KEYS = {"correct", "total", "accuracy", "low", "high"}


def wilson_by_quadratic(correct: int, total: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95 % Wilson bounds as the two roots p of (share - p)^2 = z^2 p (1 - p) / n: solved
    here from the counts, independently of runner.core.stats."""
    share = correct / total
    a = 1 + z * z / total
    b = -(2 * share + z * z / total)
    c = share * share
    root = math.sqrt(b * b - 4 * a * c)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


def run_quality(tmp_path: Path, *flags: str) -> tuple[int, dict]:
    code = quality.run(["--no-aws", "--local", "never", "--results-dir", str(tmp_path), "--timeout", "5", *flags])
    (path,) = tmp_path.glob("*/quality-*.json")
    return code, load(path)


# --- the task set ----------------------------------------------------------------------------------


def expected_from_inputs(task) -> int | str:
    """Each family's answer recomputed from the inputs the generator kept (and, for records, read
    back out of the prompt itself)."""
    data = task.data
    if task.family == "counting":
        tests = {
            "ge": lambda i: i >= data["threshold"],
            "gt": lambda i: i > data["threshold"],
            "le": lambda i: i <= data["threshold"],
            "lt": lambda i: i < data["threshold"],
            "even": lambda i: i % 2 == 0,
            "odd": lambda i: i % 2 == 1,
        }
        listed = [int(n) for n in re.search(r"ids: ([\d, ]+)\.", task.prompt).group(1).split(", ")]
        assert listed == data["ids"]
        return sum(1 for i in listed if tests[data["filter"]](i))
    if task.family == "arithmetic":
        a, b, c = data["a"], data["b"], data.get("c")
        return {
            "add": lambda: a + b,
            "subtract": lambda: a - b,
            "multiply": lambda: a * b,
            "add-subtract": lambda: a + b - c,
            "multiply-add": lambda: a * b + c,
            "share-add": lambda: b + c,
        }[data["shape"]]()
    if task.family == "extraction":
        shown = task.prompt.split("Here is a record:\n", 1)[1].rsplit("\nWhat is the ", 1)[0]
        record = (
            json.loads(shown) if data["layout"] == "json" else dict(line.split(": ", 1) for line in shown.splitlines())
        )
        assert record == data["record"]
        return record[data["field"]]
    if task.tool.name == "add_numbers":
        assert f"add {data['a']} and {data['b']}" in task.prompt
        return data["a"] + data["b"]
    (asked,) = re.findall(r"item ([A-Z]-\d{3})", task.prompt)
    return next(row["in_stock"] for row in data["table"] if row["id"] == asked)


def test_the_task_set_is_generated_with_exact_answers_from_a_fixed_seed():
    tasks = generate()
    assert len(tasks) == 100
    assert {f: sum(1 for t in tasks if t.family == f) for f in FAMILIES} == dict.fromkeys(FAMILIES, 25)
    assert len({t.item for t in tasks}) == 100
    for task in tasks:
        assert task.expected == expected_from_inputs(task), task.item
        assert ("Answer: <number>" if task.answer_kind == "number" else "Answer: <value>") in (
            task.prompt if task.family != "tool_use" else TOOL_SYSTEM
        )
    # The same seed, the same set (on any machine: the generators are seeded by strings); another seed, another.
    assert [t.prompt for t in generate()] == [t.prompt for t in tasks]
    assert [t.prompt for t in generate(seed=1)] != [t.prompt for t in tasks]
    # An item is the same whatever else is selected: a family alone, or the first items of the set.
    counting_alone = generate(5, families=["counting"])
    assert [t.prompt for t in counting_alone] == [t.prompt for t in tasks if t.family == "counting"][:5]
    assert [t.prompt for t in generate(8)] == [t.prompt for t in tasks[:8]]
    # Counting never asks a yes-or-no in disguise: some ids match, some do not.
    assert all(0 < t.expected < len(t.data["ids"]) for t in tasks if t.family == "counting")


# --- the grader against the scripted server --------------------------------------------------------


def scripted_answers(tasks):
    """Per item, in the order the items run: the server's steps and the verdict they must get."""
    by_item = {t.item: t for t in tasks}

    def e(item):
        return by_item[item].expected

    other = next(
        row
        for row in by_item["tool_use-001"].data["table"]
        if row["id"] != by_item["tool_use-001"].tool.arguments["id"]
    )
    add0, add2 = by_item["tool_use-000"].data, by_item["tool_use-002"].data
    plan = {
        "counting-000": ([text(f"There are {e('counting-000')} such ids.\nAnswer: {e('counting-000')}")], "right"),
        "counting-001": ([text(f"Answer: about {e('counting-001')}")], "hedged"),
        "counting-002": (
            [text(f"I count {e('counting-002') + 1} of them.\nAnswer: {e('counting-002')}")],
            "contradictory",
        ),
        "counting-003": ([text(f"It is {e('counting-003')} or {e('counting-003') + 1}.")], "ambiguous"),
        "arithmetic-000": ([text(f"Answer: {e('arithmetic-000') + 1}")], "wrong"),
        "arithmetic-001": ([text("Word problems are fun to read!")], "no answer"),
        "arithmetic-002": ([text(f"The answer is {e('arithmetic-002')}.")], "right"),
        "arithmetic-003": ([text(f"Answer: {e('arithmetic-003')}")], "right"),
        # Markup, quotes and a closing full stop are normalised away; prose with no answer line is off-format.
        "extraction-000": ([text(f'**Answer:** "{str(e("extraction-000")).upper()}".')], "right"),
        "extraction-001": ([text("The record lists several fields.\nThey describe a person.")], "no answer"),
        "extraction-002": ([text("Answer: somebody else")], "wrong"),
        "extraction-003": ([text(str(e("extraction-003")))], "right"),
        "tool_use-000": (
            [
                tool_call("add_numbers", {"a": add0["a"], "b": add0["b"]}),
                text(f"The sum is {e('tool_use-000')}.\nAnswer: {e('tool_use-000')}"),
            ],
            "right",
        ),
        # The call ran, for another item of the table, and the model quoted what it got back.
        "tool_use-001": (
            [tool_call("lookup", {"id": other["id"]}), text(f"Answer: {other['in_stock']}")],
            "wrong arguments",
        ),
        "tool_use-002": (
            [tool_call("add_numbers", {"a": add2["b"], "b": add2["a"]}), text(f"Answer: {e('tool_use-002') + 1}")],
            "wrong",
        ),
        # The right number without the call is not a pass: the task is the call.
        "tool_use-003": ([text(f"Answer: {e('tool_use-003')}")], "no tool call"),
    }
    steps = [step for task in tasks for step in plan[task.item][0]]
    return steps, {item: verdict for item, (_, verdict) in plan.items()}


def test_the_grader_counts_exactly_what_the_scripted_server_answered(tmp_path, capsys):
    tasks = generate(16, seed=3)
    steps, verdicts = scripted_answers(tasks)
    with FakeOpenAI(steps) as fake:
        code, evidence = run_quality(tmp_path, "--items", "16", "--seed", "3", "--endpoint", f"scripted={fake.url}")
    assert code == 0
    records = evidence["records"]
    assert [r["item"] for r in records] == [t.item for t in tasks]
    assert {r["item"]: r["verdict"] for r in records} == verdicts
    for record in records:
        assert set(record) >= RECORD_KEYS
        assert record["reason"] and "\n" not in record["reason"]
        assert record["graded"] is True and record["error"] is None
        assert record["correct"] is (record["verdict"] == "right")
    # Every request was the item's own prompt; tool items went through the agent with both tools.
    plain = [r for r in fake.requests if "tools" not in r]
    assert [r["messages"][-1]["content"] for r in plain] == [t.prompt for t in tasks if t.family != "tool_use"]
    tooled = [r for r in fake.requests if "tools" in r]
    assert all({t["function"]["name"] for t in r["tools"]} == {"add_numbers", "lookup"} for r in tooled)
    assert all(r["messages"][0] == {"role": "system", "content": TOOL_SYSTEM} for r in tooled)
    by_item = {r["item"]: r for r in records}
    assert by_item["tool_use-001"]["tool_calls"][0]["name"] == "lookup"
    assert by_item["tool_use-001"]["right_call"] is False
    assert by_item["tool_use-002"]["right_call"] is True  # addends in either order
    assert by_item["tool_use-003"]["tool_calls"] == []
    assert by_item["counting-001"]["reason"].startswith("hedged")

    (row,) = evidence["summary"]
    assert row["backend"] == "scripted"
    expected_counts = {"counting": 1, "arithmetic": 2, "extraction": 2, "tool_use": 1}
    for family, correct in expected_counts.items():
        entry = row["families"][family]
        assert set(entry) >= TALLY_KEYS
        assert (entry["correct"], entry["total"], entry["errors"]) == (correct, 4, 0)
        assert entry["accuracy"] == correct / 4
        assert (entry["low"], entry["high"]) == pytest.approx(wilson_by_quadratic(correct, 4))
    overall = row["overall"]
    assert (overall["correct"], overall["total"]) == (6, 16)
    assert (overall["low"], overall["high"]) == pytest.approx(wilson_by_quadratic(6, 16))

    capsys.readouterr()
    print_report(typed(evidence))
    table = capsys.readouterr().out
    assert "37.5 %" in table and f"{overall['low'] * 100:.1f}-{overall['high'] * 100:.1f} %" in table
    assert "no tool call" in table and "wrong arguments" in table


def test_all_right_and_all_wrong_keep_their_intervals_inside_0_and_1(tmp_path):
    tasks = generate(4, seed=5, families=["counting"])
    with FakeOpenAI([text(f"Answer: {t.expected}") for t in tasks]) as fake:
        _, evidence = run_quality(
            tmp_path, "--items", "4", "--seed", "5", "--families", "counting", "--endpoint", f"s={fake.url}"
        )
    entry = evidence["summary"][0]["families"]["counting"]
    assert (entry["correct"], entry["total"], entry["high"]) == (4, 4, pytest.approx(1.0))
    assert entry["low"] == pytest.approx(wilson_by_quadratic(4, 4)[0])
    assert list(evidence["summary"][0]["families"]) == ["counting"]


def test_a_tool_item_fails_on_the_wrong_tool_a_malformed_call_and_a_runaway_loop():
    add0, lookup1, add2 = generate(3, seed=4, families=["tool_use"])
    steps = [
        tool_call("lookup", {"id": "K-100"}),  # the add item, answered by looking something up
        text(f"Answer: {add0.expected}"),
        tool_call("lookup", '{"id": '),  # arguments that are not JSON: Strands runs nothing
        text(f"Answer: {lookup1.expected}"),
        tool_call("add_numbers", add2.tool.arguments),  # the right call, again and again: the last step repeats
    ]
    with FakeOpenAI(steps) as fake:
        backend = endpoint_backend(EndpointFlag("tools", fake.url, "fake-model"), None)
        records: list[dict] = []
        settings = QualitySettings(max_tokens=32, timeout_s=5)
        run_backend(backend, [add0, lookup1, add2], settings, lambda item: records.append(item.to_json()))
    assert [r["verdict"] for r in records] == ["wrong tool", "malformed call", "stopped"]
    assert all(r["graded"] and not r["correct"] for r in records)
    assert records[0]["reason"].startswith("called lookup(id='K-100'), not add_numbers")
    assert records[1]["tools_run"] == [] and records[1]["tool_calls"][0]["name"] == "lookup"
    assert "runaway tool loop" in records[2]["reason"] and records[2]["reason"].endswith("it had made the right call")


def test_a_backend_without_tools_skips_the_tool_family_with_a_note():
    tasks = generate(4, seed=2)
    with FakeOpenAI([text("Answer: 1")]) as fake:
        backend = endpoint_backend(EndpointFlag("plain", fake.url, "fake-model"), None)
        backend = dataclasses.replace(backend, supports_tools=False)
        items: list[QualityItem] = []
        skipped = run_backend(backend, tasks, QualitySettings(max_tokens=16, timeout_s=5), items.append)
    records = [item.to_json() for item in items]
    assert skipped == {"tool_use": "its server ignores tool definitions"}
    assert [r["family"] for r in records] == ["counting", "arithmetic", "extraction"]
    assert all("tools" not in r for r in fake.requests)
    (row,) = summarise(items, [("plain", "fake-model")], list(FAMILIES), {"plain": skipped})
    assert row.families["tool_use"].skipped == "its server ignores tool definitions"
    assert row.families["tool_use"].total == 0 and row.families["tool_use"].accuracy is None


def test_one_broken_backend_never_stops_the_others(tmp_path, dead_url):
    tasks = generate(4, seed=0, families=["arithmetic"])
    with FakeOpenAI([text(f"Answer: {t.expected}") for t in tasks]) as fake:
        code, evidence = run_quality(
            tmp_path,
            "--items",
            "4",
            "--families",
            "arithmetic",
            "--endpoint",
            f"dead={dead_url}",
            "--endpoint",
            f"good={fake.url}",
        )
    assert code == 0
    dead = [r for r in evidence["records"] if r["backend"] == "dead"]
    assert len(dead) == 4 and all(r["verdict"] == "error" and not r["graded"] for r in dead)
    assert dead[0]["reason"].startswith("unreachable") and "\n" not in dead[0]["reason"]
    assert all(r["reason"].startswith("not asked: dead is down") for r in dead[1:])
    summary = {row["backend"]: row for row in evidence["summary"]}
    assert summary["dead"]["overall"] | {} == {
        "correct": 0,
        "total": 0,
        "accuracy": None,
        "low": None,
        "high": None,
        "errors": 4,
    }
    assert (summary["good"]["overall"]["correct"], summary["good"]["overall"]["total"]) == (4, 4)


def test_nothing_graded_exits_1(tmp_path, dead_url):
    code, evidence = run_quality(tmp_path, "--items", "2", "--endpoint", f"dead={dead_url}")
    assert code == 1 and len(evidence["records"]) == 2


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (
            ["--families", "counting,poetry"],
            "error: unknown task family 'poetry'; known families: counting, arithmetic, extraction, tool_use",
        ),
        (["--items", "0"], "error: --items 0: the task set needs at least 1 item"),
    ],
)
def test_bad_input_is_one_line_before_any_backend_is_looked_for(flags, line, tmp_path, monkeypatch, capsys):
    def no_discovery(*args, **kwargs):
        raise AssertionError("bad input must be refused before discovery (which may start the embedded model)")

    monkeypatch.setattr("runner.cli.session.discover", no_discovery)
    monkeypatch.setattr("sys.argv", ["runner.quality", "--no-aws", "--results-dir", str(tmp_path), *flags])
    with pytest.raises(SystemExit) as stopped:
        quality.main()
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.strip() == line
    assert not list(tmp_path.glob("*/*.json"))


def test_help(capsys):
    with pytest.raises(SystemExit) as stopped:
        quality.run(["--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert "python -m runner.quality" in out and "--families" in out and "--items" in out and "--seed" in out


# --- the real embedded model ---------------------------------------------------------------------


def test_a_short_run_on_the_embedded_model_keeps_every_answer_and_reason(tmp_path, local_server):
    # A 270M base model: it is expected to score low; this checks the evidence, not the accuracy.
    code, evidence = run_quality(
        tmp_path,
        "--items",
        "8",
        "--max-tokens",
        "12",
        "--timeout",
        "60",
        "--endpoint",
        f"local={local_server.base_url},model={MODEL_ALIAS}",
    )
    assert code == 0
    assert evidence["command"] == "quality"
    records = evidence["records"]
    assert [r["item"] for r in records] == [t.item for t in generate(8)]
    for record in records:
        assert set(record) >= RECORD_KEYS
        assert record["reason"] and record["verdict"]
        assert record["graded"] is True, record["reason"]
    assert all(r["client"] == ("agent" if r["family"] == "tool_use" else "timed client") for r in records)
    (row,) = evidence["summary"]
    assert row["backend"] == "local" and set(row["families"]) == set(FAMILIES)
    assert set(row["overall"]) >= TALLY_KEYS and row["overall"]["total"] == 8
    assert 0 <= row["overall"]["low"] <= row["overall"]["high"] <= 1


@pytest.mark.parametrize(
    ("answer", "value", "problem"),
    [
        ("The field is there.\nAnswer: Lisbon", "lisbon", None),
        ("Answer: `San Diego`.", "san diego", None),
        ("  Lisbon  ", "lisbon", None),
        ("Answer: Porto\nAnswer: Lisbon", "lisbon", "contradicts an earlier answer line ('porto')"),
        ("Answer: Lisbon\nAnswer: lisbon.", "lisbon", None),
        ("Answer: probably Lisbon", "probably lisbon", "hedged"),
        ("I think Lisbon", "i think lisbon", "hedged"),
        ("The record has a city field.\nIt is a nice city.", None, "no `Answer:` line"),
        ("Answer: ", None, "no value"),
        ("Answer:", None, "no value"),
    ],
)
def test_a_text_answer_is_read_the_strict_way(answer, value, problem):
    from runner.agent.grading import read_text

    reading = read_text(answer)
    assert reading.definite is (problem is None)
    assert (reading.value, reading.problem) == (value, problem)


def test_what_the_answer_copied_from_the_question_is_not_its_answer():
    # What the embedded base model does: it writes the question out again, cut at the token limit.
    # Here the question holds the right answer (12 are taken out, 12 are left) and a number word.
    prompt = (
        f"A basket holds 24 apples. 12 are taken out. How many apples are left? Reply with one word. {NUMBER_FORMAT}"
    )
    task = Task("arithmetic", 0, prompt, 12, "number")
    echoes = (
        f"{prompt} mendatang\nAnyways, I'm lost.",
        "A basket holds 24 apples. 12 are taken out.\nAnyways, I'm lost.",
        prompt[: prompt.index("one") + 3],  # cut at the token limit: "... Reply with one"
    )
    for echo in echoes:
        graded = grade_answer(task, echo)
        assert graded.verdict == "no answer" and graded.reading.echoed_sentences_set_aside >= 1, echo
    graded = grade_answer(task, f"{prompt}\nSo 12 are left.\nAnswer: 12")
    assert graded.verdict == "right" and graded.reading.grading_route == "final-line"
    # A short answer is never taken for an echo, even where the question starts with it.
    assert grade_answer(Task("arithmetic", 0, "24 apples are shared. How many?", 24, "number"), "24 apples.").correct
