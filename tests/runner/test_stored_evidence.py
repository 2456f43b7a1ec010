"""Evidence files the runner wrote before its evidence was typed where it is written, stored as they
were (one per command with a table, taken from the suite's own runs; the host, commit and folders
replaced): each reads back as its command's file class, is written again byte for byte as it was
(keys, values and their order), and draws its table."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from runner.core.evidence import load, strict_json
from runner.render.tables import renderer_for, typed

STORED = Path(__file__).with_name("stored_evidence")
# The class each command's file reads back as (its renderer's module defines or imports it).
CLASSES = {
    "ask": "AskFile", "bench": "BenchFile", "check": "CheckFile", "cost": "CostFile", "counting": "CountingFile",
    "images": "ImagesFile", "orchestrator": "OrchestratorFile", "quality": "QualityFile", "survey": "SurveyFile",
    "sweep": "SweepFile", "up": "UpFile",
}  # fmt: skip


@pytest.mark.parametrize("command", sorted(CLASSES))
def test_a_stored_file_reads_back_typed_and_is_written_again_as_it_was(command):
    path = STORED / f"{command}.json"
    file = typed(load(path), path)
    assert type(file).__name__ == CLASSES[command] and file.command == command
    assert strict_json(file.to_json()) + "\n" == path.read_text()
    out = Console(file=io.StringIO(), width=200, color_system=None)
    renderer_for(command)(file, out, None)
    assert out.file.getvalue().strip()


def test_the_stored_files_parts_are_read_as_their_types():
    bench = typed(load(STORED / "bench.json"))
    (search,) = bench.capacity
    assert (search.backend, search.capacity, search.stopped) == (
        "known",
        None,
        "no level met the objectives for 90% of its requests (the first, 1, did not)",
    )
    assert [r.label for r in bench.levels] == ["1000 in, 1 at a time"] and len(bench.records) == 4
    assert bench.workload_backends["known"].forced_output_length is not None
    (summary,) = typed(load(STORED / "quality.json")).summary
    assert (summary.backend, summary.overall.correct, summary.overall.total) == ("s", 4, 4)
    survey = typed(load(STORED / "survey.json"))
    assert [(s.step, s.status) for s in survey.steps[:2]] == [("preflight", "passed"), ("up", "passed")]
    assert survey.records == survey.steps
    (row,) = typed(load(STORED / "cost.json")).records
    assert (row.backend, row.level) == ("mine", "1 at a time")
