"""`runner.bench` end to end against scripted servers: one broken backend never stops the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner import bench, report
from runner.evidence import load
from tests.runner.fake_openai import FakeOpenAI, Step, text

OCEAN = "The ocean covers most of the planet and holds most of its water"


def run_bench(tmp_path: Path, *extra: str) -> tuple[int, dict]:
    code = bench.run(["--no-aws", "--local", "never", "--results-dir", str(tmp_path), "--timeout", "2", *extra])
    (path,) = tmp_path.glob("*/bench-*.json")
    return code, load(path)


def test_good_dead_and_hanging_backends(tmp_path, dead_url, capsys):
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
    assert good.requests[0]["max_tokens"] == 100 and good.requests[0]["temperature"] == 0.0

    summary = report.bench_summary(evidence)
    assert summary["good"]["ok"] == 3 and summary["good"]["distinct_completions"] == 1
    assert summary["good"]["token_range"] == (13, 13)
    assert summary["dead"]["median_tok_s"] is None
    out = capsys.readouterr().out
    assert "good" in out and "3/3" in out and "0/3" in out and "evidence:" in out


def test_nothing_measured_exits_non_zero(tmp_path, dead_url):
    code, evidence = run_bench(tmp_path, "--repeats", "2", "--endpoint", f"dead={dead_url}")
    assert code == 1
    assert not any(r["ok"] for r in evidence["records"])


def test_ctrl_c_keeps_what_was_measured(tmp_path, monkeypatch):
    from runner.timing.openai_http import OpenAIStreamClient

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
        record["tokens_per_s"] = record["tokens_per_s"] * 1.1
    table = report.bench_table(new, baseline=old)
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
    from runner.errors import RunnerError

    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(RunnerError, match="is not an evidence file"):
        report.run([str(bad)])
