"""Flag values no command can honour are refused in one line with exit 2, before anything is sent
or written: a count below its least (`--max-tokens -1`, `--runs 0`, `--repeats 0`), a time that
is not above 0 (`--timeout 0`) or below 0 (`check --wait -5`), a number that is not finite
(`--goodput ttft:1e309`, which Python's float() takes as inf), an objective given twice, an
`--endpoint` port that is not a port; and evidence is strict JSON whatever a figure holds."""

from __future__ import annotations

import importlib
import json
import math
import sys

import pytest

from runner.core.evidence import Evidence

ENDPOINT = "x=http://127.0.0.1:9/v1,model=m"
COMMON = ["--no-aws", "--local", "never"]

BAD = [
    ("bench", ["--max-tokens", "-1"], "--max-tokens -1: must be at least 1"),
    ("bench", ["--repeats", "0"], "--repeats 0: must be at least 1"),
    ("bench", ["--timeout", "0"], "--timeout 0: must be above 0 seconds"),
    ("bench", ["--timeout", "inf"], "--timeout inf: not a finite number of seconds"),
    ("bench", ["--input-tokens", "100", "--goodput", "ttft:1e309"],
     "--goodput 'ttft:1e309': inf is not a finite number of milliseconds"),
    ("bench", ["--input-tokens", "100", "--goodput", "ttft:100", "tpot:5", "ttft:200"],
     "--goodput 'ttft:200': ttft is given twice; give each objective once"),
    ("bench", ["--input-tokens", "100", "--goodput", "ttft:100", "--goodput", "ttft:200"],
     "--goodput 'ttft:200': ttft is given twice; give each objective once"),
    ("advise", ["--requests-per-day", "10", "--goodput", "ttft:100", "--goodput", "ttft:200"],
     "--goodput 'ttft:200': ttft is given twice; give each objective once"),
    ("bench", ["--input-tokens", "100", "--goodput", "ttft:100", "--find-capacity", "--capacity-seconds", "inf"],
     "--capacity-seconds inf: not a finite number of seconds"),
    ("bench", ["--rate", "1,1e999"], "--rate '1,1e999': inf is not a finite number"),
    ("check", ["--wait", "-5"], "--wait -5: must be at least 0 seconds"),
    ("check", ["--max-tokens", "0"], "--max-tokens 0: must be at least 1"),
    ("ask", ["x", "hello", "--max-tokens", "-1"], "--max-tokens -1: must be at least 1"),
    ("counting", ["--runs", "0"], "--runs 0: must be at least 1"),
    ("counting", ["--max-model-calls", "0"], "--max-model-calls 0: must be at least 1"),
    ("orchestrator", ["--runs", "0"], "--runs 0: must be at least 1"),
    ("orchestrator", ["--max-tokens", "-3"], "--max-tokens -3: must be at least 1"),
    ("quality", ["--timeout", "-1"], "--timeout -1: must be above 0 seconds"),
    ("cost", ["--latency-bound", "inf"], "--latency-bound inf: not a finite number of seconds"),
    ("advise", ["--requests-per-day", "1e400"], "--requests-per-day '1e400': inf is not a finite number"),
]  # fmt: skip


@pytest.mark.parametrize(("command", "argv", "line"), BAD, ids=[f"{c} {' '.join(a)}" for c, a, _ in BAD])
def test_a_value_no_command_can_honour_is_one_line_exit_2_and_nothing_written(
    command, argv, line, tmp_path, monkeypatch, capsys
):
    module = importlib.import_module(f"runner.{command}")
    measuring = command not in ("cost", "advise")
    extra = [*COMMON, "--endpoint", ENDPOINT] if measuring else ["--no-aws"]
    monkeypatch.setattr(sys, "argv", [f"runner.{command}", *argv, *extra, "--results-dir", str(tmp_path)])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    lines = [text for text in (captured.err + captured.out).splitlines() if text.strip()]
    assert lines == [f"error: {line}"]
    assert not list(tmp_path.rglob("*.json"))


ENDPOINTS = [
    ("x=http://127.0.0.1:80x/v1", "port '80x' is not a number from 1 to 65535"),
    ("x=http://127.0.0.1:99999/v1", "port '99999' is not a number from 1 to 65535"),
    ("x=http://127.0.0.1:0/v1", "expected http(s)://HOST[:PORT][/PATH], the port from 1 to 65535"),
    ("x=http://:8000/v1", "expected http(s)://HOST[:PORT][/PATH], the port from 1 to 65535"),
    ("x=http://127.0.0.1:8000/v1,model=", "model= names no model; give model=ID, or leave it out"),
]


@pytest.mark.parametrize(("flag", "why"), ENDPOINTS)
def test_a_malformed_endpoint_is_one_line_exit_2(flag, why, tmp_path, monkeypatch, capsys):
    from runner import bench

    monkeypatch.setattr(sys, "argv", ["runner.bench", *COMMON, "--endpoint", flag, "--results-dir", str(tmp_path)])
    with pytest.raises(SystemExit) as stopped:
        bench.main()
    assert stopped.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"error: --endpoint {flag!r}: {why}"
    assert not list(tmp_path.rglob("*.json"))


def test_model_given_with_spaces_after_the_comma_is_taken():
    from runner.core.backends import parse_endpoint

    flag = parse_endpoint("x=http://127.0.0.1:8000/v1, model=gemma-3-270m")
    assert (flag.url, flag.model_id) == ("http://127.0.0.1:8000/v1", "gemma-3-270m")


def test_evidence_is_strict_json_whatever_a_figure_holds(tmp_path):
    """Python writes inf and nan as bare Infinity and NaN, which JSON (RFC 8259) has not: a strict
    reader refuses the file. Whatever gets into the evidence, the file stays strict JSON."""
    evidence = Evidence("bench", {"slo": {"ttft": math.inf}}, tmp_path)
    evidence.add_record({"e2e_s": math.nan, "ok": True, "chunk_times": [0.1, -math.inf]})

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    data = json.loads(evidence.path.read_text(), parse_constant=refuse)
    assert data["config"]["slo"] == {"ttft": None}
    assert data["records"] == [{"e2e_s": None, "ok": True, "chunk_times": [0.1, None]}]


def test_goodput_given_twice_keeps_both_flags_objectives():
    """`--goodput` twice adds up (argparse's default keeps the last flag alone, silently)."""
    from runner.bench import build_parser
    from runner.workloads.slo import parse_goodput

    args = build_parser().parse_args(["--goodput", "ttft:100", "--goodput", "e2el:3000", "tpot:20"])
    assert parse_goodput(args.goodput).limits == (("ttft", 100.0), ("e2el", 3000.0), ("tpot", 20.0))
