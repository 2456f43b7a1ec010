"""Accuracy beside speed and price: a `runner.quality` evidence file given to `bench --quality`,
`runner.cost` and `runner.advise` puts each backend's accuracy (with its Wilson interval) in
their tables and evidence; another command's file where quality is expected is one line."""

from __future__ import annotations

import json

import pytest

from runner import advise, bench, cost, report
from runner.core.accuracy import Accuracy, QualitySummary
from runner.core.agent_evidence import QualityFile
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence
from runner.core.stats import wilson_interval
from runner.render.tables import accuracy_text
from tests.runner.fake_openai import FakeOpenAI, text

CORRECT, TOTAL = 13, 20


def quality_file(tmp_path, backend: str = "g6"):
    """Quality evidence as runner.quality writes it: one summary per backend."""
    low, high = wilson_interval(CORRECT, TOTAL)
    overall = Accuracy(CORRECT, TOTAL, CORRECT / TOTAL, low, high)
    evidence = Evidence(QualityFile, {"items": TOTAL}, tmp_path / "quality")
    evidence.file.summary = [QualitySummary(backend, "m", overall)]
    return evidence.finish()


@pytest.fixture
def measured(tmp_path):
    """A bench of `g6` (a scripted server given as its endpoint), with the quality file beside it."""
    quality = quality_file(tmp_path)
    with FakeOpenAI([text("The ocean is wide and deep.", usage_tokens=9)]) as server:
        argv = ["--endpoint", f"g6={server.url}", "--backends", "g6", "--repeats", "1", "--no-aws", "--local", "never"]
        assert bench.run([*argv, "--quality", str(quality), "--results-dir", str(tmp_path / "bench")]) == 0
    (bench_file,) = (tmp_path / "bench").glob("*/bench-*.json")
    return bench_file, quality


def test_bench_cost_and_advise_show_the_accuracy_beside_their_figures(measured, tmp_path, capsys):
    bench_file, quality = measured
    expected = accuracy_text(Accuracy.from_json(json.loads(quality.read_text())["summary"][0]["overall"], "overall"))
    low, high = wilson_interval(CORRECT, TOTAL)
    assert expected == f"65 % ({low * 100:.0f}-{high * 100:.0f})"
    saved = json.loads(bench_file.read_text())
    assert saved["accuracy"]["g6"]["correct"] == CORRECT
    assert report.run([str(bench_file)]) == 0  # the bench table, rendered from its evidence
    assert expected in capsys.readouterr().out

    assert cost.run([str(bench_file), str(quality), "--offline", "--results-dir", str(tmp_path / "cost")]) == 0
    (cost_file,) = (tmp_path / "cost").glob("*/cost-*.json")
    assert json.loads(cost_file.read_text())["accuracy"]["g6"]["total"] == TOTAL
    assert expected in capsys.readouterr().out

    workload = ["--requests-per-day", "1000", "--offline", "--allow-unmeasured-sources"]
    evidence = ["--evidence", str(bench_file), str(quality), "--results-dir", str(tmp_path / "advise")]
    advise.run([*workload, *evidence])
    (advice_file,) = (tmp_path / "advise").glob("*/advise-*.json")
    (row,) = json.loads(advice_file.read_text())["records"]
    assert row["accuracy"]["accuracy"] == CORRECT / TOTAL
    assert expected in capsys.readouterr().out


def test_a_file_that_is_not_quality_evidence_is_one_line(measured):
    bench_file, _ = measured
    with pytest.raises(RunnerError, match=r"--quality .*: bench evidence; it takes runner.quality evidence"):
        bench.run(["--quality", str(bench_file), "--no-aws", "--local", "never"])
