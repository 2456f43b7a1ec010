"""A file the user points at that cannot be read (not UTF-8, a folder) or is not what it should be
(evidence of another schema, a malformed record) is one line naming the file, exit 2, never a
traceback: every command that reads one, run as the user runs it (`main`, its exit status and its
standard error)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from runner.core.evidence import SCHEMA, Evidence
from runner.core.records import RequestRecord

NOT_UTF8 = b"\xff\xfe{}"


def ended(monkeypatch, capsys, command: str, *argv: str) -> tuple[int, list[str]]:
    """`python -m runner.<command> ARGV...` in this process: its exit status and its stderr's lines."""
    monkeypatch.setattr(sys, "argv", [f"runner.{command}", *argv])
    with pytest.raises(SystemExit) as exit_:
        importlib.import_module(f"runner.{command}").main()
    return exit_.value.code, capsys.readouterr().err.strip().splitlines()


@pytest.fixture
def not_utf8(tmp_path) -> Path:
    path = tmp_path / "b.json"
    path.write_bytes(NOT_UTF8)
    return path


NO_SERVER = ("--no-aws", "--local", "never", "--endpoint", "x=http://127.0.0.1:9/v1")


@pytest.mark.parametrize(
    ("command", "argv", "what"),
    [
        ("report", ["{file}"], "evidence file"),
        ("cost", ["{file}"], "evidence file"),
        ("advise", ["--requests-per-day", "100", "--evidence", "{file}"], "evidence file"),
        ("bench", ["--compare", "{file}", *NO_SERVER], "evidence file"),
        ("bench", ["--outputs-file", "{file}", *NO_SERVER], "outputs file"),
        ("bench", ["--dataset", "{file}", *NO_SERVER], "--dataset"),
        ("bench", ["--prompts", "{file}", "--concurrency", "1", *NO_SERVER], "--prompts"),
        ("batch", ["--prompts", "{file}", "--aws"], "--prompts"),
    ],
)
def test_a_file_that_is_not_utf8_is_one_line(monkeypatch, capsys, tmp_path, not_utf8, command, argv, what):
    argv = [a.replace("{file}", str(not_utf8)) for a in argv]
    results = [] if command == "report" else ["--results-dir", str(tmp_path / "results")]  # report writes none
    code, lines = ended(monkeypatch, capsys, command, *argv, *results)
    assert (code, lines) == (2, [f"error: {what} {not_utf8} is not UTF-8 text (invalid start byte at byte 0)"])
    assert not (tmp_path / "results").exists()  # refused before anything was written


def test_a_folder_given_as_evidence_is_one_line(monkeypatch, capsys, tmp_path):
    code, lines = ended(monkeypatch, capsys, "report", str(tmp_path))
    assert (code, lines) == (2, [f"error: evidence file {tmp_path} is a folder: give the file(s) in it"])


def test_evidence_of_another_schema_says_its_own_schema_and_the_one_read(monkeypatch, capsys, tmp_path):
    newer = tmp_path / "bench.json"
    newer.write_text(json.dumps({"schema": 99, "command": "bench", "records": []}))
    code, lines = ended(monkeypatch, capsys, "report", str(newer))
    assert SCHEMA != 99
    assert (code, lines) == (
        2,
        [f"error: {newer} is evidence of schema 99; this runner reads schema {SCHEMA} (written by a newer runner: update this one)"],
    )  # fmt: skip


def bench_evidence(tmp_path: Path, records: list[dict]) -> Path:
    """A bench file as the runner writes it, holding `records` as they are given (a malformed one too)."""
    evidence = Evidence("bench", {}, tmp_path)
    path = evidence.finish()
    path.write_text(json.dumps(evidence.data | {"backends": [{"name": "g6", "kind": "openai"}], "records": records}))
    return path


def test_a_malformed_record_names_its_file_and_its_place_as_the_file_holds_it(monkeypatch, capsys, tmp_path):
    good = RequestRecord("g6", 1, ok=True, e2e_s=1.0, output_tokens=10).to_json()
    path = bench_evidence(tmp_path, [good, good | {"run": 2, "e2e_s": "slow"}, good | {"run": 3}])
    # The report's tables read the records without being told the file: the line names it anyway.
    code, lines = ended(monkeypatch, capsys, "report", str(path))
    assert (code, lines) == (2, [f"error: {path}: records[1] of g6: 'e2e_s' is 'slow', not float | None"])
    assert json.loads(path.read_text())["records"][1]["e2e_s"] == "slow"  # the place jq's .records[1] reads
