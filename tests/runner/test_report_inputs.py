"""What `runner.report` (and `bench --compare`) are given, said when it cannot be used: a page of a
file the page does not take, a comparison with another command's evidence, evidence that measured
nothing. Each is one line, exit 2 and nothing written, or, for the empty file, one line in place
of an empty table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from runner import bench, report
from runner.core.evidence import Evidence, EvidenceFile
from runner.render import tables


def evidence_file(tmp_path: Path, command: str, records: list | None = None, **data) -> Path:
    """A file of `command` as a runner wrote it, with `records` and the `data` given as its sections."""
    evidence = Evidence(command, {}, tmp_path)
    evidence.finish()
    evidence.path.write_text(json.dumps(evidence.data | {"records": records or []} | data))
    return evidence.path


def refused(monkeypatch, capsys, module, argv: list[str]) -> str:
    monkeypatch.setattr(sys, "argv", [module.__name__, *argv])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    lines = [line for line in (captured.err + captured.out).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("flag", ["--html", "--markdown"])
def test_a_page_of_counting_evidence_alone_is_one_line_exit_2(tmp_path, monkeypatch, capsys, flag):
    """Counting is a survey's step: the page takes it beside the survey's own evidence, not alone."""
    counting = evidence_file(tmp_path, "counting", [{"backend": "local", "run": 1}])
    target = tmp_path / "page.out"
    line = refused(monkeypatch, capsys, report, [str(counting), flag, str(target)])
    assert line.startswith(f"error: {counting} is 'counting' evidence: the report page (--html, --markdown) takes")
    assert "without --html or --markdown runner.report prints any command's tables" in line
    assert not target.exists()


def test_compare_with_another_commands_evidence_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    bench_file = evidence_file(tmp_path, "bench", [{"backend": "local", "run": 1, "ok": True}])
    cost_file = evidence_file(tmp_path, "cost")
    line = refused(monkeypatch, capsys, report, [str(bench_file), "--compare", str(cost_file)])
    assert line == (
        f"error: --compare {cost_file} is cost evidence: it compares against an earlier file of the same command, "
        "and the files given are bench evidence"
    )


@pytest.mark.parametrize(
    "argv", [[], ["--input-tokens", "100"]], ids=["the survey's prompt", "a workload"]
)  # fmt: skip
def test_bench_compare_with_anything_it_cannot_compare_is_one_line_exit_2(tmp_path, monkeypatch, capsys, argv):
    quality = evidence_file(tmp_path / "old", "quality")
    line = refused(
        monkeypatch, capsys, bench,
        ["--no-aws", "--local", "never", "--endpoint", "x=http://127.0.0.1:9/v1,model=m", "--compare", str(quality),
         *argv, "--results-dir", str(tmp_path / "new")],
    )  # fmt: skip
    assert line.startswith("error: --compare ")
    assert not list((tmp_path / "new").rglob("*.json"))


def test_evidence_that_measured_nothing_says_so_instead_of_an_empty_table(tmp_path, capsys):
    empty = evidence_file(tmp_path, "bench", notices=["local: 4090 input tokens: ... not sent"])
    assert report.run([str(empty)]) == 0
    out = capsys.readouterr().out
    assert "nothing measured in this bench evidence: no request was recorded (the notes say why)" in out
    assert "backend" not in out  # no table header
    assert tables.nothing_measured(EvidenceFile(command="bench", interrupted=True)) == (
        "nothing measured in this bench evidence: interrupted before the first record"
    )
    # Evidence that holds records is rendered as ever, and cost evidence is not a measurement.
    assert tables.nothing_measured(EvidenceFile(command="bench", records=[{"backend": "x"}])) is None
    assert tables.nothing_measured(EvidenceFile(command="cost")) is None
