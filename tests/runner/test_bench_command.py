"""`runner.bench` end to end against scripted servers: one broken backend never stops the others."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runner import bench, report
from runner.core.evidence import load
from runner.measure.bench_file import BenchFile
from runner.render import bench as bench_tables
from runner.render import tables
from tests.runner.fake_openai import FakeOpenAI, Step, text

OCEAN = "The ocean covers most of the planet and holds most of its water"
G6_OUTPUT = {
    "contract": 2,
    "name": "g6",
    "kind": "ec2-vllm",
    "region": "us-east-2",
    "instance_type": "g6.xlarge",
    "auto_scaling_group": "inference-g6",
    "zones": ["us-east-2a"],
    "endpoint_name": None,
    "port": 8000,
    "health_path": "/health",
    "model_id": "gemma",
    "readiness_parameter": "/inference/g6/ready",
    "log_group": "/inference/g6",
}


def run_bench(tmp_path: Path, *extra: str, timeout_s: float = 2) -> tuple[int, dict]:
    code = bench.run(
        ["--no-aws", "--local", "never", "--results-dir", str(tmp_path), "--timeout", f"{timeout_s:g}", *extra]
    )
    (path,) = tmp_path.glob("*/bench-*.json")
    return code, load(path)


def test_good_dead_and_hanging_backends(tmp_path, dead_url, capsys):
    # The hanging backend waits out --timeout four times (its warm-up and three runs): 1 s each.
    with FakeOpenAI([text(OCEAN)]) as good, FakeOpenAI([Step(kind="hang")]) as hanging:
        code, evidence = run_bench(
            tmp_path,
            "--repeats",
            "3",
            "--endpoint",
            f"good={good.url},model=fake-model",
            "--endpoint",
            f"dead={dead_url}",
            "--endpoint",
            f"slow={hanging.url}",
            timeout_s=1,
        )
    assert code == 0
    by_backend = {}
    for record in evidence["records"]:
        by_backend.setdefault(record["backend"], []).append(record)
    assert [r["ok"] for r in by_backend["good"]] == [True, True, True]
    assert all(r["output_tokens"] == 13 and r["token_source"] == "server" for r in by_backend["good"])
    assert by_backend["dead"][0]["error"].startswith("unreachable")
    assert all(r["error"].startswith("skipped after run 1: unreachable") for r in by_backend["dead"][1:])
    assert by_backend["slow"][0]["error"].startswith("timed out")
    assert len(by_backend["slow"]) == 3
    assert evidence["config"]["prompt"] == "Write a short paragraph about the ocean."
    assert evidence["git"]["sha"] and evidence["versions"]["strands-agents"]
    assert {b["name"] for b in evidence["backends"]} == {"good", "dead", "slow"}
    # One untimed warm-up ("Hi", 4 tokens), then the timed requests.
    assert good.requests[0]["messages"] == [{"role": "user", "content": "Hi"}] and good.requests[0]["max_tokens"] == 4
    assert [r["max_tokens"] for r in good.requests[1:]] == [100, 100, 100]
    assert all(r["temperature"] == 0.0 for r in good.requests)
    assert [w["backend"] for w in evidence["warm_up"]] == ["good", "dead", "slow"]
    assert evidence["warm_up"][0]["ok"] is True and evidence["warm_up"][1]["error"].startswith("unreachable")

    summary = bench_tables.bench_summary(BenchFile.from_json(evidence))
    assert summary["good"].ok == 3 and summary["good"].distinct_completions == 1
    assert summary["good"].token_range == (13, 13)
    assert summary["dead"].median_tok_s is None
    out = capsys.readouterr().out
    blocks = dict(re.findall(r"^=+ (\w+) · 1 at a time =+\n(?:.*\n)*?Successful requests:\s+(\d+)", out, re.M))
    assert blocks == {"good": "3", "dead": "0", "slow": "0"} and "evidence:" in out


def test_a_timeout_is_not_a_dead_backend_and_one_line_says_what_to_do(tmp_path, capsys):
    """One request past --timeout (a slow moment, not a dead server) leaves the other runs of a
    backend that answered measured; one line after the table names the flag that gives more time."""
    with FakeOpenAI([text("Hi"), Step(kind="hang"), text(OCEAN)]) as once_slow:
        code, evidence = run_bench(tmp_path, "--repeats", "3", "--endpoint", f"slow-once={once_slow.url}")
    assert code == 0
    records = evidence["records"]
    assert records[0]["error"].startswith("timed out") and [r["ok"] for r in records[1:]] == [True, True]
    assert not any("skipped" in (r["error"] or "") for r in records)
    captured = capsys.readouterr()
    hints = [line for line in (captured.out + captured.err).splitlines() if "--timeout" in line]
    assert len(hints) == 1, hints
    assert "1 of 3 requests timed out after 2 s" in hints[0] and "--timeout 4" in hints[0]


def test_progress_moves_with_every_request_and_shows_without_a_terminal(tmp_path, capsys, monkeypatch):
    """Without a terminal (as here) a plain line goes to stderr; with the interval at 0, one per
    request within a level, not one per level."""
    from runner.cli import progress

    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.0)
    with FakeOpenAI([text(OCEAN)]) as good:
        code, _ = run_bench(tmp_path, "--concurrency", "2", "--requests", "6", "--endpoint", f"good={good.url}")
    assert code == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("good: ")]
    assert [line.split()[1] for line in lines] == [f"{n}/6" for n in range(1, 7)], lines
    assert all(line.split()[2] == "requests," and line.endswith(" s") for line in lines)


def test_bench_reuses_one_warmed_connection_per_backend(tmp_path):
    # README: "one reused connection per backend, warmed by the same untimed generation".
    with FakeOpenAI([text(OCEAN)]) as good:
        code, evidence = run_bench(tmp_path, "--repeats", "4", "--endpoint", f"good={good.url}")
    assert code == 0
    assert good.connection_ids == [1] * 5  # warm-up + 4 timed requests, one keep-alive connection
    assert [r["new_connection"] for r in evidence["records"]] == [False] * 4
    assert evidence["warm_up"][0]["new_connection"] is True
    assert bench_tables.bench_summary(BenchFile.from_json(evidence))["good"].new_connections == 0


def test_a_server_that_closes_its_connections_is_noted_in_the_table(tmp_path):
    # llama.cpp closes the connection after each streamed response while advertising keep-alive.
    with FakeOpenAI([text(OCEAN, close="on-reuse")]) as closing:
        code, evidence = run_bench(tmp_path, "--repeats", "2", "--endpoint", f"closing={closing.url}")
    assert code == 0 and all(r["ok"] for r in evidence["records"])
    notes = [column._cells for column in bench_tables.bench_table(BenchFile.from_json(evidence)).columns][-1]
    assert notes == ["new connection on 2 of 2 timed requests, 2 resent after the server closed it"]


def test_an_unreachable_ec2_backend_names_its_port_and_the_ssm_command(tmp_path, dead_url, capsys):
    port = int(dead_url.rsplit(":", 1)[1])
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"InferenceGpuStack": {"BackendG6": json.dumps(G6_OUTPUT)}}))
    code, evidence = run_bench(
        tmp_path, "--repeats", "2", "--outputs-file", str(outputs), "--forward", f"g6={port}", "--backends", "g6"
    )
    assert code == 1
    first = evidence["records"][0]["error"]
    assert (
        first.startswith("unreachable")
        and f"(local port {port}: open its SSM port forward with: aws ssm start-session --region us-east-2" in first
    )
    assert f'"localPortNumber":["{port}"]' in first
    err_lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("g6 run 1:")]
    assert len(err_lines) == 1 and "aws ssm start-session" in err_lines[0]


def test_nothing_measured_exits_non_zero(tmp_path, dead_url):
    code, evidence = run_bench(tmp_path, "--repeats", "2", "--endpoint", f"dead={dead_url}")
    assert code == 1
    assert not any(r["ok"] for r in evidence["records"])


def test_ctrl_c_keeps_what_was_measured(tmp_path, monkeypatch):
    from runner.measure.openai_sync import OpenAIStreamClient

    real_chat = OpenAIStreamClient.chat

    def chat(self, request, record):
        if record.run == 3:
            raise KeyboardInterrupt
        return real_chat(self, request, record)

    monkeypatch.setattr(OpenAIStreamClient, "chat", chat)
    with FakeOpenAI([text(OCEAN)]) as good, pytest.raises(KeyboardInterrupt):
        bench.run(
            [
                "--no-aws",
                "--local",
                "never",
                "--results-dir",
                str(tmp_path),
                "--repeats",
                "5",
                "--endpoint",
                f"good={good.url}",
            ]
        )
    (path,) = tmp_path.glob("*/bench-*.json")
    evidence = load(path)
    assert evidence["interrupted"] is True and evidence["finished_at"]
    assert [r["run"] for r in evidence["records"]] == [1, 2]


def test_compare_adds_change_percent(tmp_path):
    with FakeOpenAI([text(OCEAN)]) as good:
        _, old = run_bench(tmp_path / "a", "--repeats", "1", "--endpoint", f"good={good.url}")
    new = json.loads(json.dumps(old))
    for record in new["records"]:
        record["e2e_s"] = record["e2e_s"] / 1.1  # tokens_per_s is read back from the raw times
    table = bench_tables.bench_table(BenchFile.from_json(new), baseline=BenchFile.from_json(old))
    cells = [column._cells for column in table.columns]
    assert "+10.0%" in cells[-2]


def test_unknown_backend_is_one_line(tmp_path, capsys, monkeypatch):
    argv = ["runner.bench", "--no-aws", "--local", "never", "--backends", "g7", "--results-dir", str(tmp_path)]
    monkeypatch.setattr("sys.argv", argv)
    with pytest.raises(SystemExit) as exit_info:
        bench.main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "error: unknown backend 'g7'; known backends:" in err
    assert "Traceback" not in err


def test_report_renders_any_evidence_file(tmp_path, capsys):
    with FakeOpenAI([text(OCEAN)]) as good:
        run_bench(tmp_path, "--repeats", "1", "--endpoint", f"good={good.url}")
    (path,) = tmp_path.glob("*/bench-*.json")
    capsys.readouterr()
    assert report.run([str(path)]) == 0
    assert "1/1" in capsys.readouterr().out


def test_report_rejects_a_file_that_is_not_evidence(tmp_path):
    from runner.core.errors import RunnerError

    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(RunnerError, match="is not an evidence file"):
        report.run([str(bad)])


@pytest.mark.parametrize("command", ["bench", "check", "cost", "counting", "images", "orchestrator", "sweep", "up"])
def test_each_command_owns_its_report(command):
    import importlib

    # The report of a command's evidence is the one its own render module defines, found by name.
    assert tables.renderer_for(command) is importlib.import_module(f"runner.render.{command}").render_report


def test_an_evidence_file_of_an_unknown_command_is_one_line(tmp_path):
    from runner.core.errors import RunnerError
    from runner.core.evidence import SCHEMA

    path = tmp_path / "x.json"
    path.write_text(json.dumps({"schema": SCHEMA, "command": "nosuch", "started_at": "2026-11-30"}))
    with pytest.raises(RunnerError, match="no report for command 'nosuch'"):
        report.run([str(path)])


def test_the_report_modules_import_no_command():
    import subprocess
    import sys

    code = (
        "import sys, runner.cli.session, runner.report, runner.render.tables; "
        "loaded = [m for m in ('runner.bench', 'runner.check', 'runner.counting', 'runner.orchestrator', 'runner.up') "
        "if m in sys.modules]; print(loaded)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
