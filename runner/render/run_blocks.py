"""A bench run's result as `vllm bench serve` prints it: one block per backend and load level,
its counts, duration, token totals, throughputs (output and total: input and output tokens over
the level's wall time), then per latency metric asked for (`--percentile-metrics`) its mean,
median and percentiles (`--metric-percentiles`) in milliseconds; then every other figure and
note of the level's table row, so a terminal too narrow for the table loses nothing.

Only the terminal shows the blocks (`TerminalOnly`): the report page has the tables and its plots.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from rich.console import Console, ConsoleOptions
from rich.errors import MarkupError
from rich.table import Table
from rich.text import Text

from runner.core.records import SINGLE, RequestRecord
from runner.figures.latency import DEFAULT_METRICS, DEFAULT_PERCENTILES, METRICS, metric_figures
from runner.figures.levels import level_groups, level_summary
from runner.measure.bench_file import BenchFile
from runner.render.tables import TerminalOnly, models

WIDTH = 50  # vllm's block: 40 characters of label, then the figure


class RunBlocks(TerminalOnly):
    """The blocks, as lines of text (a long note wraps at the terminal's width)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        for line in self.lines:
            yield Text(line)


def line(label: str, value: Any, digits: int = 2) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, float):
        text = f"{value:.{digits}f}"
    else:
        text = str(value)
    return f"{label + ':':<40} {text}"


def plain(cell: str) -> str:
    """A table cell's text (cells are rich markup, escaped where they are made)."""
    try:
        return Text.from_markup(cell).plain
    except MarkupError:
        return cell


def percentile_name(q: float) -> str:
    return f"P{q:g}"


def row_cells(table: Table) -> dict[tuple[str, str], dict[str, str]]:
    """The table's rows by (backend, level label): each column's header and cell."""
    headers = [str(column.header) for column in table.columns]
    cells = [[str(cell) for cell in column.cells] for column in table.columns]
    rows = {}
    for index in range(table.row_count):
        row = {header: cells[c][index] for c, header in enumerate(headers)}
        rows[(row.get("backend", ""), row.get("load") or SINGLE)] = row
    return rows


def run_blocks(evidence: BenchFile, table: Table, shown: Sequence[str]) -> RunBlocks:
    """One block per backend and level of bench evidence (cold starts left out, as the tables
    leave them out); `table` is the evidence's table, whose columns other than `shown` (what the
    block's own lines hold) follow each block's figures."""
    config = evidence.config
    metrics = config.get("percentile_metrics") or DEFAULT_METRICS
    percentiles = config.get("metric_percentiles") or DEFAULT_PERCENTILES
    slo = config.get("slo")
    served = models(evidence)
    rows = row_cells(table)
    lines: list[str] = []
    for (backend, label), records in level_groups(evidence.records).items():
        warm = [r for r in records if not r.cold_start]
        lines += block(backend, label, warm, served.get(backend, "-"), metrics, percentiles, slo)
        for header, cell in rows.get((backend, label), {}).items():
            if header not in shown and cell.strip() and cell != "-":
                lines.append(line(header, plain(cell)))
        lines.append("=" * WIDTH)
    return RunBlocks(lines)


def block(
    backend: str,
    label: str,
    records: list[RequestRecord],
    model: str,
    metrics: Sequence[str],
    percentiles: Sequence[float],
    slo: Any,
) -> list[str]:
    summary = level_summary(records, slo)
    level = records[0].level if records else None
    lines = [f"{' ' + backend + ' · ' + label + ' ':=^{WIDTH}}", line("Model", model)]
    lines += [line("Successful requests", summary.completed), line("Failed requests", summary.failed)]
    if level is not None and level.mode == "rate":
        lines.append(line("Request rate configured (RPS)", float(level.value)))
        if level.max_concurrency:
            lines.append(line("Maximum request concurrency", level.max_concurrency))
    else:
        lines.append(line("Maximum request concurrency", int(level.value) if level else 1))
    lines += [
        line("Benchmark duration (s)", summary.duration_s),
        line("Total input tokens", summary.input_tokens),
        line("Total generated tokens", summary.output_tokens),
        line("Request throughput (req/s)", summary.request_throughput),
    ]
    if summary.goodput is not None and summary.goodput.goodput_rps is not None:
        lines.append(line("Request goodput (req/s)", summary.goodput.goodput_rps))
    lines += [
        line("Output token throughput (tok/s)", summary.output_tok_s),
        line("Total token throughput (tok/s)", summary.total_tok_s),
    ]
    for metric in metrics:
        short, heading = METRICS[metric]
        figures = metric_figures(records, metric, percentiles)
        lines.append(f"{heading:-^{WIDTH}}")
        lines.append(line(f"Mean {short} (ms)", ms(figures.mean)))
        lines.append(line(f"Median {short} (ms)", ms(figures.median)))
        lines += [line(f"{percentile_name(q)} {short} (ms)", ms(value)) for q, value in figures.percentiles]
    lines.append("-" * WIDTH)
    return lines


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000
