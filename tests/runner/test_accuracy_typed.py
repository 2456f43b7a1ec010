"""Accuracy typed as quality evidence holds it (runner/core/accuracy.py): a summary writes exactly
the entry written before it was typed (keys, values and their order), reads back the same, and a
malformed one is refused in one line that names it and its file; the accuracy a bench or cost
file keeps beside its figures is the overall of the latest quality run that graded something."""

from __future__ import annotations

import json
import sys

import pytest

from runner import report
from runner.agent.quality import summarise
from runner.core.accuracy import Accuracy, QualitySummary, accuracy_by_backend, summaries_of
from runner.core.agent_evidence import QualityItem
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence
from runner.core.typed_json import to_json
from tests.runner.test_quality import wilson_by_quadratic

RECORDS = [
    QualityItem("g6", "counting", "counting-000", graded=True, correct=True),
    QualityItem("g6", "counting", "counting-001", graded=True, correct=False),
    QualityItem("g6", "arithmetic", "arithmetic-000", graded=True, correct=True),
    QualityItem("g6", "arithmetic", "arithmetic-001", graded=False),
]


def test_a_summary_writes_the_entry_it_wrote_untyped_and_reads_back_the_same():
    (summary,) = summarise(RECORDS, [("g6", "m")], ["counting", "arithmetic", "tool_use"], {"g6": {"tool_use": "no"}})
    # The entry with its 95 % intervals left out (each is checked below, against the bounds
    # solved here from the counts): keys, values and order as written before it was typed.
    untyped = {
        "backend": "g6",
        "model": "m",
        "overall": {"correct": 2, "total": 3, "accuracy": 2 / 3, "low": "2/3", "high": "2/3", "errors": 1},
        "families": {
            "counting": {"correct": 1, "total": 2, "accuracy": 0.5, "low": "1/2", "high": "1/2", "errors": 0},
            "arithmetic": {"correct": 1, "total": 1, "accuracy": 1.0, "low": "1/1", "high": "1/1", "errors": 1},
            "tool_use": {"correct": 0, "total": 0, "accuracy": None, "low": None, "high": None, "errors": 0,
                         "skipped": "no"},
        },
    }  # fmt: skip
    written = summary.to_json()
    entries = [written["overall"], *written["families"].values()]
    bounds = [bound for entry in entries[:3] for bound in (entry["low"], entry["high"])]
    solved = [bound for counts in ((2, 3), (1, 2), (1, 1)) for bound in wilson_by_quadratic(*counts)]
    assert bounds == pytest.approx(solved) and (entries[3]["low"], entries[3]["high"]) == (None, None)
    for entry in entries[:3]:
        entry["low"] = entry["high"] = f"{entry['correct']}/{entry['total']}"
    assert json.dumps(written) == json.dumps(untyped)
    (back,) = summaries_of(json.loads(json.dumps({"summary": [summary.to_json()]})))
    assert back == summary and json.dumps(back.to_json()) == json.dumps(summary.to_json())


def quality(tmp_path, started: str, overall: dict) -> dict:
    data = Evidence("quality", {}, tmp_path).data
    data["started_at"] = started
    data["summary"] = [{"backend": "g6", "model": "m", "overall": overall, "families": {}}]
    return data


def test_the_latest_quality_run_that_graded_something_gives_the_accuracy(tmp_path):
    early = quality(tmp_path, "2026-01-01T00:00:00", {"correct": 1, "total": 2, "accuracy": 0.5})
    late = quality(tmp_path, "2026-02-01T00:00:00", {"correct": 3, "total": 4, "accuracy": 0.75})
    nothing = quality(tmp_path, "2026-03-01T00:00:00", {"correct": 0, "total": 0, "errors": 5})
    found = accuracy_by_backend([late, nothing, early])
    assert found == {"g6": Accuracy(3, 4, 0.75, measured_at="2026-02-01T00:00:00")}
    assert to_json(found) == {
        "g6": {"correct": 3, "total": 4, "accuracy": 0.75, "low": None, "high": None,
               "measured_at": "2026-02-01T00:00:00"}
    }  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        ({"backend": "g6", "model": "m"}, "q.json: summary[0] of g6, overall: expected a JSON object"),
        ({"backend": "g6", "model": "m", "overall": {"total": 2}}, "q.json: summary[0] of g6, overall: no 'correct'"),
        (
            {"backend": "g6", "model": "m", "overall": {"correct": 1, "total": 2}, "families": {"x": {"correct": "1"}}},
            "q.json: summary[0] of g6, x: 'correct' is '1'",
        ),
        ({"model": "m", "overall": {"correct": 1, "total": 2}}, "q.json: summary[0]: no 'backend'"),
    ],
)
def test_a_malformed_summary_is_one_line_naming_it(entry, line):
    with pytest.raises(RunnerError) as raised:
        summaries_of({"summary": [entry]}, "q.json")
    assert str(raised.value).startswith(line), str(raised.value)


def test_the_report_refuses_a_malformed_quality_file_in_one_line_before_writing(tmp_path, capsys, monkeypatch):
    path = tmp_path / "quality.json"
    malformed = [{"backend": "g6", "model": "m", "overall": {"correct": "all"}}]
    path.write_text(json.dumps(Evidence("quality", {}, tmp_path).data | {"summary": malformed}))
    page = tmp_path / "page.html"
    monkeypatch.setattr(sys, "argv", ["runner.report", str(path), "--html", str(page)])
    with pytest.raises(SystemExit) as exit_info:
        report.main()
    assert exit_info.value.code == 2 and not page.exists()
    captured = capsys.readouterr()
    lines = [line for line in (captured.err + captured.out).splitlines() if line.strip()]
    assert len(lines) == 1 and str(path) in lines[0] and "summary[0] of g6, overall: 'correct'" in lines[0], lines


def test_a_summary_is_a_dataclass_with_its_families_typed():
    summary = QualitySummary.from_json(
        {
            "backend": "g6",
            "model": "m",
            "overall": {"correct": 1, "total": 1},
            "families": {"a": {"correct": 0, "total": 1}},
        },
        "x",
    )
    assert summary.families["a"] == Accuracy(0, 1)
