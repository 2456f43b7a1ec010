"""Demo 2: code keeps the score; the agent's sentence is checked against the code's table."""

from __future__ import annotations

from pathlib import Path

from runner import orchestrator
from runner.backends import EndpointFlag, endpoint_backend
from runner.evidence import load
from tests.runner.fake_openai import FakeOpenAI, text, tool_call


def backends(*names):
    return [endpoint_backend(EndpointFlag(name=n, url=f"http://127.0.0.1:1/{n}", model_id=None), None) for n in names]


def table(*rows):
    return [{"backend": b, "seconds": s, "error": e} for b, s, e in rows]


def test_winner_check_flags_a_sentence_that_names_another_backend():
    found = backends("g6", "trn1", "bedrock")
    rows = table(("g6", 0.154, None), ("trn1", 0.196, None), ("bedrock", 0.51, None))
    flagged = orchestrator.winner_check("The fastest response came from trn1.", rows, found)
    assert flagged == {"table_winner": "g6", "sentence_names": ["trn1"], "sentence_names_different_winner": True}
    fine = orchestrator.winner_check("g6 was fastest, ahead of trn1.", rows, found)
    assert fine["sentence_names_different_winner"] is False
    silent = orchestrator.winner_check("All answered Paris.", rows, found)
    assert silent["sentence_names_different_winner"] is False


def test_failed_rows_never_win():
    found = backends("a", "b")
    rows = table(("a", None, "unreachable"), ("b", 0.3, None))
    assert orchestrator.winner_check("b wins", rows, found)["table_winner"] == "b"


def test_split_closing_keeps_table_and_sentence_apart():
    quoted, closing = orchestrator.split_closing("| A | B |\n|---|---|\n| x | 1 |\n\nThe fastest was x.")
    assert quoted.count("|") == 9 and closing == "The fastest was x."


def test_full_run_with_a_scripted_agent(tmp_path: Path, capsys):
    agent_script = [
        tool_call("ask_fast", {"prompt": "What is the capital of France? Answer in one word."}),
        tool_call("ask_slow", {"prompt": "What is the capital of France? Answer in one word."}),
        tool_call("scoreboard", {}),
        text("| table |\nThe slow backend, slow, was the fastest."),
    ]
    with (
        FakeOpenAI(agent_script) as agent,
        FakeOpenAI([text("Paris")]) as fast,
        FakeOpenAI([text("Paris", delay_s=0.3)]) as slow,
    ):
        code = orchestrator.run(
            [
                "--no-aws",
                "--local",
                "never",
                "--results-dir",
                str(tmp_path),
                "--endpoint",
                f"agent={agent.url}",
                "--endpoint",
                f"fast={fast.url}",
                "--endpoint",
                f"slow={slow.url}",
                "--agent",
                "agent",
            ]
        )
    assert code == 0
    (path,) = tmp_path.glob("*/orchestrator-*.json")
    (record,) = load(path)["records"]
    assert [row["backend"] for row in record["table"]] == ["fast", "slow"]
    assert record["table"][0]["answer"] == "Paris" and record["table"][0]["seconds"] < record["table"][1]["seconds"]
    assert record["never_asked"] == ["agent"]
    assert record["closing_sentence"] == "The slow backend, slow, was the fastest."
    assert record["sentence_names_different_winner"] is True
    # The scoreboard the agent saw is the code's table.
    scoreboard_reply = [m for m in agent.requests[3]["messages"] if m["role"] == "tool"][-1]
    assert "| OpenAI-compatible server at" in str(scoreboard_reply["content"])
    out = capsys.readouterr().out
    assert "flag: the sentence names slow first; the table's winner is fast" in out
