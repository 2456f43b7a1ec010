"""Demo 2: code keeps the score; the agent's sentence is checked against the code's table."""

from __future__ import annotations

from pathlib import Path

from runner import orchestrator
from runner.agent import orchestration
from runner.core.agent_evidence import ScoreRow
from runner.core.backends import EndpointFlag, endpoint_backend
from runner.core.evidence import load
from tests.runner.fake_openai import FakeOpenAI, Step, text, tool_call


def backends(*names):
    return [endpoint_backend(EndpointFlag(name=n, url=f"http://127.0.0.1:1/{n}", model_id=None), None) for n in names]


def table(*rows):
    return [ScoreRow(b, b, 1, int(s is not None), "", s, None, e) for b, s, e in rows]


def run_orchestrator(tmp_path: Path, agent_url: str, **backends: str) -> tuple[int, dict]:
    flags = ["--no-aws", "--local", "never", "--results-dir", str(tmp_path), "--timeout", "3"]
    flags += ["--endpoint", f"agent={agent_url}", "--agent", "agent"]
    for name, url in backends.items():
        flags += ["--endpoint", f"{name}={url}"]
    code = orchestrator.run(flags)
    (path,) = tmp_path.glob("*/orchestrator-*.json")
    return code, load(path)


def test_winner_check_flags_a_sentence_that_names_another_backend():
    found = backends("g6", "trn1", "bedrock")
    rows = table(("g6", 0.154, None), ("trn1", 0.196, None), ("bedrock", 0.51, None))
    flagged = orchestration.winner_check("The fastest response came from trn1.", rows, found)
    assert flagged == ("g6", ["trn1"], True)
    fine = orchestration.winner_check("g6 was fastest, ahead of trn1.", rows, found)
    assert fine == ("g6", ["g6", "trn1"], False)
    silent = orchestration.winner_check("All answered Paris.", rows, found)
    assert silent == ("g6", [], False)


def test_failed_rows_never_win():
    found = backends("a", "b")
    rows = table(("a", None, "unreachable"), ("b", 0.3, None))
    assert orchestration.winner_check("b wins", rows, found)[0] == "b"


def test_split_closing_keeps_table_and_sentence_apart():
    quoted, closing = orchestration.split_closing("| A | B |\n|---|---|\n| x | 1 |\n\nThe fastest was x.")
    assert quoted.count("|") == 9 and closing == "The fastest was x."


def test_full_run_with_a_scripted_agent(tmp_path: Path, capsys):
    agent_script = [
        tool_call("ask_fast", {}),
        # The agent may send arguments of its own; every backend still gets the fixed question.
        tool_call("ask_slow", {"prompt": "Tell me a joke instead."}),
        tool_call("scoreboard", {}),
        text("| table |\nThe slow backend, slow, was the fastest."),
    ]
    with (
        FakeOpenAI(agent_script) as agent,
        FakeOpenAI([text("Paris")]) as fast,
        FakeOpenAI([text("Paris", delay_s=1.0)]) as slow,
    ):
        code, evidence = run_orchestrator(tmp_path, agent.url, fast=fast.url, slow=slow.url)
    assert code == 0
    (record,) = evidence["records"]
    assert [row["backend"] for row in record["table"]] == ["fast", "slow"]
    assert record["table"][0]["answer"] == "Paris" and record["table"][0]["seconds"] < record["table"][1]["seconds"]
    assert record["never_asked"] == ["agent"]
    assert record["closing_sentence"] == "The slow backend, slow, was the fastest."
    assert record["sentence_names_different_winner"] is True
    # Each backend: one untimed warm-up ("Hi", 4 tokens), then the fixed question.
    for fake in (fast, slow):
        assert fake.requests[0]["messages"] == [{"role": "user", "content": "Hi"}]
        assert fake.requests[0]["max_tokens"] == 4
        assert fake.requests[1]["messages"] == [{"role": "user", "content": orchestration.QUESTION}]
    assert [w["backend"] for w in record["warm_ups"]] == ["fast", "slow"]
    # The scoreboard the agent saw is the code's table.
    scoreboard_reply = [m for m in agent.requests[3]["messages"] if m["role"] == "tool"][-1]
    assert "| OpenAI-compatible server at" in str(scoreboard_reply["content"])
    out = capsys.readouterr().out
    assert "flag: the sentence names slow first; the table's winner is fast" in out


def test_every_ask_is_kept_and_the_table_summarises_them(tmp_path: Path):
    agent_script = [tool_call("ask_fast", {}), tool_call("ask_fast", {}), tool_call("ask_fast", {}), text("fast.")]
    with FakeOpenAI(agent_script) as agent, FakeOpenAI([text("Paris")]) as fast:
        code, evidence = run_orchestrator(tmp_path, agent.url, fast=fast.url)
    (record,) = evidence["records"]
    assert code == 0
    assert [a["backend"] for a in record["asks"]] == ["fast", "fast", "fast"]
    assert all(a["ok"] and a["e2e_s"] is not None for a in record["asks"])
    (row,) = record["table"]
    assert (row["asks"], row["measured"]) == (3, 3)
    assert len(fast.requests) == 4  # one warm-up, three asks


def test_no_measured_ask_exits_1(tmp_path: Path):
    # The backend answers, then cuts every stream: rows with an error and a few milliseconds
    # are not measurements.
    agent_script = [tool_call("ask_broken", {}), tool_call("scoreboard", {}), text("broken was fastest.")]
    with FakeOpenAI(agent_script) as agent, FakeOpenAI([Step(kind="cut", text="Par")]) as broken:
        code, evidence = run_orchestrator(tmp_path, agent.url, broken=broken.url)
    (record,) = evidence["records"]
    (ask,) = record["asks"]
    assert ask["ok"] is False and ask["e2e_s"] is not None and ask["error"].startswith("stream cut")
    assert record["table"][0]["seconds"] is None and record["table_winner"] is None
    assert code == 1
