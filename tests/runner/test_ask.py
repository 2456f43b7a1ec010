"""`runner.ask`: one question to one backend, its text handed over piece by piece while the server
is still streaming, timed like the bench, kept as evidence; one line for an unknown backend (exit
2) and for one that cannot be reached (exit 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalog import BackendKind
from catalog.serving import SERVING
from runner import ask
from runner.core.backends import Backend
from runner.core.evidence import load
from runner.measure import ChatRequest
from runner.render.tables import print_report, typed
from runner.timing.stream import ChatStreamAccumulator
from tests.runner.fake_openai import FakeOpenAI, text

QUESTION = "What is the capital of France?"


def run_ask(tmp_path: Path, backend: str, *flags: str, on_text=None) -> tuple[int, dict]:
    argv = [backend, QUESTION, "--no-aws", "--local", "never", "--results-dir", str(tmp_path), "--timeout", "5", *flags]
    code = ask.run(argv, on_text=on_text)
    (path,) = tmp_path.glob("*/ask-*.json")
    return code, load(path)


def test_the_answer_is_handed_over_while_the_server_is_still_streaming(tmp_path, capsys):
    seen: list[tuple[str, int]] = []
    with FakeOpenAI([text("Paris is the capital.", gap_s=0.1)]) as fake:
        # Each piece with how many responses the server was still writing when it came.
        code, evidence = run_ask(
            tmp_path,
            "scripted",
            "--endpoint",
            f"scripted={fake.url}",
            on_text=lambda p: seen.append((p, fake.in_flight)),
        )
    assert code == 0
    assert [piece for piece, _ in seen] == ["Paris", " is", " the", " capital."]
    # The first pieces arrived (and were printed) before the server finished its response.
    assert [still_open for _, still_open in seen[:3]] == [1, 1, 1]
    assert fake.requests[0]["messages"] == [{"role": "user", "content": QUESTION}]
    assert fake.requests[0]["stream"] is True
    assert evidence["command"] == "ask" and evidence["config"]["question"] == QUESTION
    (record,) = evidence["records"]
    assert record["ok"] and record["streamed"] and record["pieces"] == 4
    assert record["text"] == "Paris is the capital." and record["question"] == QUESTION
    assert record["output_tokens"] == 4 and record["token_source"] == "server"
    assert 0 < record["ttft_s"] < record["e2e_s"] and record["tokens_per_s"] > 0
    err = capsys.readouterr().err
    assert "TTFT" in err and "tok/s" in err and "4 tokens (server count)" in err
    # The report renders the question, the answer and its figures.
    print_report(typed(evidence))
    out = capsys.readouterr().out
    assert QUESTION in out and "Paris is the capital." in out and "streamed" in out


def test_the_default_printer_writes_to_the_terminal(tmp_path, capsys):
    with FakeOpenAI([text("Paris")]) as fake:
        code, _ = run_ask(tmp_path, "scripted", "--endpoint", f"scripted={fake.url}")
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith("Paris\n") and "evidence: " in out


def test_an_accumulator_without_a_listener_behaves_as_before():
    from runner.core.records import RequestRecord

    stream = ChatStreamAccumulator(RequestRecord(backend="b", run=1))
    assert stream.on_text is None
    stream.feed_line('data: {"choices": [{"delta": {"content": "hi"}, "finish_reason": "stop"}]}', 0.1)
    assert stream.finish(0.2).text == "hi"


class WholeAnswerClient:
    """A path that hands the text over only once it is all there (serverless, async)."""

    def chat(self, request, record):
        record.text, record.ok, record.finish_reason, record.output_tokens, record.e2e_s = "Paris", True, "stop", 1, 0.5
        return record

    def close(self):
        pass


def test_a_whole_answer_path_prints_the_answer_when_it_arrives(monkeypatch):
    monkeypatch.setattr(ask, "timed_client_for", lambda backend, timeout_s: WholeAnswerClient())
    backend = Backend(
        name="sagemaker-serverless", kind=BackendKind.SAGEMAKER_SERVERLESS, title="t", model_id="m", source="s"
    )
    printed: list[str] = []
    record = ask.ask(backend, ChatRequest(prompt=QUESTION), 5.0, printed.append).to_json()
    assert printed == ["Paris"] and record["streamed"] is False and record["ttft_s"] is None
    # Which paths answer whole, and why, is the serving table's (catalog/serving.py).
    assert "serverless" in backend.supports.answer
    assert {k for k, path in SERVING.items() if path.answer} == {
        BackendKind.SAGEMAKER_SERVERLESS,
        BackendKind.SAGEMAKER_ASYNC,
        BackendKind.BEDROCK,
    }


def test_an_unreachable_backend_is_one_line_and_exit_1(tmp_path, dead_url, capsys):
    code, evidence = run_ask(tmp_path, "dead", "--endpoint", f"dead={dead_url}")
    assert code == 1
    (record,) = evidence["records"]
    assert record["ok"] is False and record["error"].startswith("unreachable")
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert line.startswith("error: dead: unreachable") and "Traceback" not in err


def test_an_unknown_backend_is_one_line_naming_the_known_ones(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["runner.ask", "g7", QUESTION, "--no-aws", "--results-dir", str(tmp_path)])
    with pytest.raises(SystemExit) as stopped:
        ask.main()
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert line.startswith("error: unknown backend 'g7'; known backends:") and "local" in line and "g6" in line
    assert not list(tmp_path.glob("*/*.json"))


def test_help(capsys):
    with pytest.raises(SystemExit) as stopped:
        ask.run(["--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert "python -m runner.ask" in out and "BACKEND" in out and "QUESTION" in out


def test_ask_streams_the_embedded_models_answer_piece_by_piece(tmp_path, local_server):
    """The real llama.cpp server: its answer arrives in pieces, each handed over as it comes, and
    the record's text is exactly what was handed over (a base model: what it says is not graded)."""
    seen: list[str] = []
    code, evidence = run_ask(
        tmp_path,
        "embedded",
        "--endpoint",
        f"embedded={local_server.base_url}",
        "--max-tokens",
        "16",
        on_text=seen.append,
    )
    assert code == 0
    (record,) = evidence["records"]
    assert record["ok"] and record["streamed"] and record["pieces"] == len(seen) > 1
    assert "".join(seen) == record["text"] and record["output_tokens"] == 16
    assert 0 < record["ttft_s"] < record["e2e_s"]
