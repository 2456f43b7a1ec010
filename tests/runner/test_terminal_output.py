"""What `runner.bench` and `runner.report` print on a terminal: a block per backend and level as
`vllm bench serve` prints its run (counts, duration, token totals, output and total throughput,
mean, median and the percentiles asked for of each latency metric asked for), then the table
when the terminal is wide enough for it; at any width no figure is cut. And `--level-seconds`,
a time limit per level.

The evidence comes from bench runs against the known-rate server, so the block's totals are
computed here from the server's settings."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
from rich.table import Table

from runner import bench, report
from runner.core.evidence import load
from runner.core.records import records_of
from runner.measure.bench_file import BenchFile
from runner.render import tables
from runner.render.bench import bench_table, sweep_table, workload_table
from tests.runner.fake_openai import FakeOpenAI, text
from tests.runner.known_server import known_server

TOKENS = 16  # output tokens, forced
INPUT = 100  # prompt tokens, on the known server's own count
REQUESTS = 8


def run_bench(root: Path, *args: str) -> Path:
    assert bench.run(["--no-aws", "--local", "never", "--results-dir", str(root), *args]) == 0
    (path,) = root.glob("*/bench-*.json")
    return path


@pytest.fixture(scope="module")
def evidence(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("terminal")
    with known_server(ttft=0.02, rate=400.0, tokens=200, prefill_rate=50_000.0) as server:
        workload = run_bench(
            root / "workload", "--endpoint", server.endpoint, "--input-tokens", str(INPUT), "--output-tokens",
            str(TOKENS), "--concurrency", "1,4", "--requests", str(REQUESTS), "--goodput", "ttft:500",
        )  # fmt: skip
        sweep = run_bench(root / "sweep", "--endpoint", server.endpoint, "--concurrency", "1,4", "--requests", "8")
        single = run_bench(
            root / "single", "--endpoint", server.endpoint, "--repeats", "3", "--percentile-metrics", "ttft,e2el",
            "--metric-percentiles", "50,95",
        )  # fmt: skip
    return {"workload": workload, "sweep": sweep, "single": single}


def printed(path: Path, width: int, monkeypatch, *flags: str) -> str:
    """What runner.report prints for the file on stdout when it is not a terminal and COLUMNS is `width`."""
    monkeypatch.setenv("COLUMNS", str(width))
    out = io.StringIO()
    monkeypatch.setattr(tables, "stdout", tables.Tables(file=out, highlight=False, soft_wrap=False))
    monkeypatch.setattr(report, "stdout", tables.stdout)
    assert report.run([str(path), *flags]) == 0
    return out.getvalue()


def figure_cells(table: Table) -> list[str]:
    return [str(cell) for column in table.columns if column.justify == "right" for cell in column.cells]


def value(text: str, label: str) -> str:
    (found,) = re.findall(rf"^{re.escape(label)}:\s+(\S+)$", text, re.M)
    return found


@pytest.mark.parametrize("width", [80, 100, 120, 200, 260])
@pytest.mark.parametrize("kind", ["workload", "sweep", "single"])
def test_no_figure_is_cut_and_the_table_shows_where_it_fits(evidence, monkeypatch, width, kind):
    text = printed(evidence[kind], width, monkeypatch)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, [line for line in lines if len(line) > width]
    assert "…" not in text
    data = load(evidence[kind])
    table = {"workload": workload_table, "sweep": sweep_table, "single": bench_table}[kind](BenchFile.from_json(data))
    needed = re.search(r"\(the table needs (\d+) columns, (\d+) here", text)
    if needed:
        assert int(needed.group(1)) > width and int(needed.group(2)) == width
    else:
        # The table is drawn, and every figure of it is whole on one line.
        for cell in figure_cells(table):
            assert cell == "-" or re.search(rf"(^|\s){re.escape(cell)}(\s|$)", text, re.M), cell
    # Wide enough, the table is always drawn.
    if width == 260:
        assert not needed


def test_a_block_per_level_with_its_totals_as_the_server_set_them(evidence, monkeypatch):
    text = printed(evidence["workload"], 120, monkeypatch)
    data = load(evidence["workload"])
    blocks = re.split(r"^=+ known · ", text, flags=re.M)[1:]
    assert [b.split(" =")[0] for b in blocks] == ["100 in, 1 at a time", "100 in, 4 at a time"]
    for block, level in zip(blocks, ("1 at a time", "4 at a time"), strict=True):
        records = [r for r in records_of(data) if r.label.endswith(level)]
        assert value(block, "Successful requests") == str(REQUESTS) and value(block, "Failed requests") == "0"
        assert value(block, "Total input tokens") == str(REQUESTS * INPUT)
        assert value(block, "Total generated tokens") == str(REQUESTS * TOKENS)
        duration = max(r.sent_s + r.e2e_s for r in records) - min(r.sent_s for r in records)
        assert float(value(block, "Benchmark duration (s)")) == pytest.approx(duration, abs=0.006)
        total = float(value(block, "Total token throughput (tok/s)"))
        assert total == pytest.approx(REQUESTS * (INPUT + TOKENS) / duration, rel=0.02)
        assert float(value(block, "Output token throughput (tok/s)")) == pytest.approx(
            REQUESTS * TOKENS / duration, rel=0.02
        )
        # Means beside the percentiles; the server holds the first token at least 20 ms.
        assert float(value(block, "Mean TTFT (ms)")) >= 20 and float(value(block, "P99 TTFT (ms)")) >= 20
        for metric in ("TTFT", "TPOT", "ITL", "E2EL"):
            for name in ("Mean", "Median", "P90", "P99"):
                assert re.search(rf"^{name} {metric} \(ms\):\s+\d", block, re.M), (name, metric)
        # The row's other figures follow its own: the workload's tokens beside their targets, goodput.
        assert re.search(rf"^in tok:\s+{INPUT} → {INPUT}$", block, re.M) and "goodput:" in block


def test_the_blocks_give_the_metrics_and_percentiles_asked_for(evidence, monkeypatch):
    text = printed(evidence["single"], 120, monkeypatch)
    assert json.loads(evidence["single"].read_text())["config"]["percentile_metrics"] == ["ttft", "e2el"]
    names = re.findall(r"^(\w+ \w+) \(ms\):", text, re.M)
    assert names == [f"{n} {m}" for m in ("TTFT", "E2EL") for n in ("Mean", "Median", "P50", "P95")]
    # runner.report asks for others over what the run asked for.
    again = printed(evidence["single"], 120, monkeypatch, "--percentile-metrics", "itl", "--metric-percentiles", "99")
    assert re.findall(r"^(\w+ \w+) \(ms\):", again, re.M) == ["Mean ITL", "Median ITL", "P99 ITL"]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--percentile-metrics", "ttft,queue"], "--percentile-metrics 'ttft,queue': comma-separated names of"),
        (["--metric-percentiles", "0,99"], "--metric-percentiles '0,99': comma-separated percentiles above 0"),
        (["--level-seconds", "0"], "--level-seconds 0: must be above 0 seconds"),
    ],
)
def test_bad_block_flags_and_time_limits_are_one_line_exit_2(tmp_path, monkeypatch, capsys, flags, says):
    monkeypatch.setattr(sys, "argv", ["runner.bench", "--no-aws", "--local", "never", *flags])
    with pytest.raises(SystemExit) as exit_info:
        bench.main()
    assert exit_info.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], lines


@pytest.mark.parametrize("flags", [["--concurrency", "1", "--requests", "200"], ["--repeats", "200"]])
def test_level_seconds_sends_nothing_after_the_limit_and_says_so(tmp_path, flags, capsys):
    """Each request takes at least 0.1 s (the server's delay): in a 1 s level at most ten go, none
    after the limit; the block and the table say how many of the planned were sent."""
    with FakeOpenAI([text("Hi"), text("The ocean is wide", delay_s=0.1)]) as slow:
        path = run_bench(tmp_path, "--endpoint", f"slow={slow.url}", "--level-seconds", "1", *flags)
    data = load(path)
    records = records_of(data)
    assert 1 <= len(records) <= 10 and all(r.ok for r in records)
    assert all(r.sent_s is not None and r.sent_s < 1.0 for r in records)
    assert data["config"]["level_seconds"] == 1
    out = capsys.readouterr().out
    assert f"the 1 s time limit (--level-seconds) ended it: {len(records)} of 200 sent" in out


def test_any_commands_table_too_wide_for_the_terminal_is_a_block_per_row(monkeypatch):
    """A table of another command (no blocks of its own above it): narrowed where its text can
    wrap, else drawn as a block per row, a figure a line; never a figure cut."""
    table = Table(title="cost")
    tables.add_columns(table, ["backend", "$/hour", "$ per M p50/p90/p99", "notes"], left=("backend", "notes"))
    table.add_row("g6", "0.8048", "1.70/2.15/3.96", "priced from the offline table of 2026-10-05 for us-east-1 " * 2)
    for width, blocks in ((90, False), (40, True)):
        monkeypatch.setenv("COLUMNS", str(width))
        out = io.StringIO()
        tables.Tables(file=out, highlight=False, soft_wrap=False).print(table)
        text = out.getvalue()
        assert max(map(len, text.splitlines())) <= width and "…" not in text
        assert "0.8048" in text and "1.70/2.15/3.96" in text
        assert bool(re.search(r"^\$/hour\s+0\.8048", text, re.M)) is blocks, text
