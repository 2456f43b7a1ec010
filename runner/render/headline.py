"""The report's headline: per backend and model, the figures a reader weighs first, in one row —
how fast (output tok/s of one stream at the lightest load measured, and the peak over the load
levels), how soon (time to first token), how good (accuracy with its 95 % interval, from quality
evidence) and how much ($ per million output tokens, the lowest over the load levels: from cost
evidence where it is given, else priced by `runner.costing` at the offline prices).

Rows are sorted in code (`SORTED_BY`), the best figure of each column is marked, and a figure that
is missing carries the reason it is missing. A pure pass over evidence: nothing is measured and AWS
is never called (prices come from cost evidence or the dated offline table).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from runner.core.accuracy import QualitySummary
from runner.core.agent_evidence import QualityFile
from runner.core.evidence import EvidenceFile
from runner.core.records import Level, RequestRecord
from runner.core.stats import median
from runner.core.typed_json import FromFile
from runner.costing.measured import offline_cost_rows
from runner.costing.rows import CostRow
from runner.figures.capacity import CapacityFound
from runner.figures.levels import LevelSummary, level_groups, level_summary
from runner.measure.bench_file import BenchFile
from runner.measure.load import CLOSED
from runner.render.cost import CostFile
from runner.render.tables import add_columns, models

if TYPE_CHECKING:
    from runner.render.fleet import CountPoint, FleetSeries

# An evidence file the page is drawn from: where it was read, and the file typed.
Source = tuple[Path, EvidenceFile]

# The evidence the page takes, and the commands that write it.
PAGE_COMMANDS = {
    "bench": "python -m runner.bench",
    "cost": "python -m runner.cost",
    "quality": "python -m runner.quality",
    # A survey's report takes every step's evidence: the survey's own tables beside the user's.
    "survey": "python -m runner.survey",
    "up": "python -m runner.up",
    "check": "python -m runner.check",
    "ask": "python -m runner.ask",
    "counting": "python -m runner.counting",
    "orchestrator": "python -m runner.orchestrator",
}
SINGLE = "1 at a time"
# Cost rows that are not a load level: what one event or a month costs, apart from the levels.
NOT_LEVELS = ("cold start", "leaving zero", "storage")
SORTED_BY = "tok/s of one stream, highest first (a row without it last), then backend and model"
NO_QUALITY = "no quality evidence given (python -m runner.quality)"


@dataclass
class Cell:
    """One figure of the headline: its value, where it was taken, or why it is missing."""

    value: float | None = None
    at: str | None = None  # the load level it was taken at, where that matters
    low: float | None = None  # an interval (accuracy)
    high: float | None = None
    count: str | None = None  # e.g. "42/100" items right
    flag: str | None = None  # a caveat that goes with the figure (priced, but not measured on AWS)
    source: str | None = None  # where the figure came from, when it is not the speed evidence (prices)
    as_of: str | None = None  # the date of the price it rests on
    why: str | None = None  # why the figure is missing
    best: bool = False


@dataclass
class Row:
    backend: str
    model: str
    run: str | None = None  # which run, when one backend is in several evidence files
    aliases: set[str] = field(default_factory=set)  # names the model goes by (label, model id)
    source: str = ""  # the evidence file the speed figures come from
    stream_tok_s: Cell = field(default_factory=Cell)
    peak_tok_s: Cell = field(default_factory=Cell)
    ttft_s: Cell = field(default_factory=Cell)
    accuracy: Cell = field(default_factory=Cell)
    usd_per_million: Cell = field(default_factory=Cell)
    # The most load within a workload's objectives (bench --find-capacity), and its price.
    good_rps: Cell = field(default_factory=Cell)
    usd_at_slo: Cell = field(default_factory=Cell)


@dataclass(frozen=True)
class Column:
    attr: str
    header: str
    definition: str
    higher_is_better: bool


COLUMNS = (
    Column(
        "stream_tok_s",
        "tok/s, one stream",
        "the median of each request's own output rate at the lightest load measured (1 at a time)",
        True,
    ),
    Column(
        "peak_tok_s",
        "peak tok/s, all streams",
        "all output tokens over the level's wall time, at the best load level of a sweep",
        True,
    ),
    Column("ttft_s", "TTFT", "the median time to first token at the lightest load measured", False),
    Column("accuracy", "accuracy", "graded items right, with the 95 % Wilson interval", True),
    Column(
        "usd_per_million",
        "$ per M output",
        "$ per million output tokens by the backend's own billing model, lowest over the load levels",
        False,
    ),
)
# Shown when any evidence holds a capacity search (bench --workload NAME --find-capacity).
SLO_COLUMNS = (
    Column(
        "good_rps",
        "good req/s at SLO",
        "requests per second within every objective, at the most load at which the share asked for met them "
        "(bench --find-capacity), per instance",
        True,
    ),
    Column(
        "usd_at_slo",
        "$ per M at SLO",
        "$ per million output tokens by the backend's own billing model, at that most load within the objectives",
        False,
    ),
)


def columns_for(rows: list[Row]) -> tuple[Column, ...]:
    searched = any(r.good_rps.value is not None or r.good_rps.why for r in rows)
    return COLUMNS + SLO_COLUMNS if searched else COLUMNS


def warm(records: list[RequestRecord]) -> list[RequestRecord]:
    """Cold starts (the first request after idle on a path that scales from zero) never count."""
    return [r for r in records if not r.cold_start]


LevelRow = tuple[str, Level, LevelSummary]
# The last evidence files' level summaries, by identity and record count: the headline and several
# plots draw from the same ones, and a summary walks every token gap of every request.
_SUMMARIES: dict[int, tuple[BenchFile, int, list[LevelRow]]] = {}


def level_rows(evidence: BenchFile) -> list[LevelRow]:
    """(backend, level, summary) for every level of every backend, in the order measured (cold
    starts left out of every figure, as the tables leave them out)."""
    count = len(evidence.records)
    cached = _SUMMARIES.get(id(evidence))
    if cached is not None and cached[0] is evidence and cached[1] == count:
        return cached[2]
    rows = []
    for (backend, _label), records in level_groups(evidence.records).items():
        level = records[0].level or Level(CLOSED, 1, label=SINGLE)
        rows.append((backend, level, level_summary(warm(records))))
    if len(_SUMMARIES) >= 8:
        _SUMMARIES.clear()
    _SUMMARIES[id(evidence)] = (evidence, count, rows)
    return rows


def run_label(data: EvidenceFile) -> str:
    """Which run an evidence file is, to the second (its start, UTC)."""
    return str(data.started_at or "")[:19].replace("T", " ") + " UTC"


def speed_cells(
    records_by_level: list[tuple[str, list[RequestRecord]]], throughput: dict[str, float | None]
) -> tuple[Cell, Cell, Cell]:
    """(tok/s one stream, peak tok/s, TTFT) of one backend from its levels in the order measured,
    and each level's output tok/s over its wall time."""
    if not records_by_level:
        why = "no timed request in its bench evidence"
        return Cell(why=why), Cell(why=why), Cell(why=why)
    label, records = next(((lb, rs) for lb, rs in records_by_level if lb == SINGLE), records_by_level[0])
    ok = [r for r in records if r.ok]
    at = None if label == SINGLE else label
    if not ok:
        error = next((r.error for r in records if r.error), None)
        why = f"no request succeeded at {label}" + (f": {error}" if error else "")
        stream, ttft = Cell(why=why), Cell(why=why)
    else:
        stream = Cell(median(r.tokens_per_s for r in ok), at=at)
        first = [r.ttft_s for r in ok if r.ttft_s is not None]
        ttft = Cell(median(first), at=at) if first else Cell(why="whole answers (not streamed): no time to first token")
        if stream.value is None:
            stream = Cell(why="no output tokens counted")
    if len(records_by_level) < 2:
        peak = Cell(why="one load level measured: a sweep (bench --concurrency 1,4,16) finds the peak")
    else:
        rates = [(throughput.get(lb), lb) for lb, _ in records_by_level]
        rates = [(rate, lb) for rate, lb in rates if rate]
        peak = Cell(*max(rates)) if rates else Cell(why="no level completed a request")
    return stream, peak, ttft


def bench_rows(path: Path, data: BenchFile) -> list[Row]:
    by_backend: dict[str, list[tuple[str, list[RequestRecord]]]] = {}
    entries = data.backends
    for entry in entries:
        by_backend[entry.name] = []
    # A level a client could not keep up with is no figure of the server's (runner/timing/client_load.py).
    limited = client_limited([(path, data)])
    for (backend, label), records in level_groups(data.records).items():
        if (path.name, backend, label) not in limited:
            by_backend.setdefault(backend, []).append((label, warm(records)))
    throughput: dict[str, dict[str, float | None]] = {}
    for backend, level, summary in level_rows(data):
        throughput.setdefault(backend, {})[level.label] = summary.output_tok_s
    served = models(data)
    ids = {b.name: b.model_id for b in entries}
    rows = []
    for backend, levels in by_backend.items():
        model = served.get(backend, "-")
        row = Row(backend, model, aliases={model, ids.get(backend) or model}, source=path.name)
        row.stream_tok_s, row.peak_tok_s, row.ttft_s = speed_cells(levels, throughput.get(backend, {}))
        for cell in (row.stream_tok_s, row.peak_tok_s, row.ttft_s):
            cell.source = path.name
        rows.append(row)
    return rows


def cost_evidence_rows(path: Path, data: CostFile) -> list[Row]:
    """Rows for backends only cost evidence names (its bench evidence not given): the speed it
    priced, and no latency (cost evidence keeps none)."""
    served = models(data)
    ids = {b.name: b.model_id for b in data.backends}
    levels: dict[tuple[str, str], list[tuple[float | None, str]]] = {}
    for record in data.records:
        if record.level in NOT_LEVELS:
            continue
        key = (Path(record.evidence or str(path)).name, record.backend)
        levels.setdefault(key, [])
        if record.level:
            levels[key].append((record.output_tok_s, record.level))
    rows = []
    for (source, backend), figures in levels.items():
        model = served.get(backend, "-")
        row = Row(backend, model, aliases={model, ids.get(backend) or model}, source=source)
        single = next((rate for rate, label in figures if label == SINGLE and rate), None)
        no_bench = f"not in the cost evidence ({path.name}): give its bench evidence too"
        row.stream_tok_s = Cell(single) if single else Cell(why=no_bench)
        rates = [(rate, label) for rate, label in figures if rate]
        row.peak_tok_s = (
            Cell(*max(rates))
            if len(figures) > 1 and rates
            else Cell(why="one load level priced: a sweep (bench --concurrency 1,4,16) finds the peak")
        )
        row.ttft_s = Cell(why=f"cost evidence keeps no latency ({path.name}): give its bench evidence too")
        row.stream_tok_s.source = row.peak_tok_s.source = path.name
        rows.append(row)
    return rows


def priced_rows(sources: list[Source]) -> dict[tuple[str, str], tuple[list[CostRow], str]]:
    """Per (bench evidence file name, backend): its cost rows, in the shape `runner.cost` keeps them
    (`runner.costing.measured.cost_rows`), and where they came from. Cost evidence given to the
    report wins; bench evidence it does not cover is priced at the offline prices (`offline_cost_rows`)."""
    priced: dict[tuple[str, str], tuple[list[CostRow], str]] = {}
    for path, data in sources:
        if not isinstance(data, CostFile):
            continue
        how = f"{path.name} ({data.config.get('pricing') or 'offline'} prices)"
        for record in data.records:
            key = (Path(record.evidence or str(path)).name, record.backend)
            priced.setdefault(key, ([], how))[0].append(record)
    covered = {name for name, _ in priced}
    for path, data in sources:
        if isinstance(data, BenchFile) and path.name not in covered and not data.agent:
            how = f"the offline price table for {path.name} (no cost evidence given for it)"
            # runner.costing reads the file as it is written.
            for record in offline_cost_rows(str(path), FromFile(data.to_json(), path)):
                priced.setdefault((path.name, record.backend), ([], how))[0].append(record)
    return priced


def cost_cell(rows: list[CostRow] | None, how: str | None) -> Cell:
    if not rows:
        return Cell(why="no price: neither cost evidence nor a priced backend")
    levels = [r for r in rows if r.level not in NOT_LEVELS]
    figures = [(r.usd_per_million_output, r.level or "") for r in levels if r.usd_per_million_output]
    provenance = next((r.provenance for r in rows if r.provenance), None)
    if not figures:
        first = levels[0] if levels else rows[0]
        why = first.note or first.basis or "no $ per million in its cost rows"
        return Cell(why=why + (f" ({provenance})" if provenance else ""))
    value, level = min(figures)
    as_of = next((str(r.price.as_of or "")[:10] for r in levels if r.price), "")
    flag = f"priced as AWS, but measured on: {provenance}" if provenance else None
    at = level if len(figures) > 1 or level != SINGLE else None
    return Cell(value, at=at, flag=flag, source=how, as_of=as_of or None)


def quality_summaries(sources: list[Source]) -> list[tuple[Path, QualitySummary]]:
    """Every summary row of the quality evidence given, typed, with its file, later runs last."""
    entries = []
    quality = sorted(((p, d) for p, d in sources if isinstance(d, QualityFile)), key=lambda s: str(s[1].started_at))
    for path, data in quality:
        entries += [(path, summary) for summary in data.summary or []]
    return entries


def fraction(value: object) -> float | None:
    """A share as a fraction of one (a figure over 1 is taken as a percentage)."""
    if not isinstance(value, int | float):
        return None
    return value / 100 if value > 1 else float(value)


def accuracy_cell(summary: QualitySummary) -> Cell:
    overall = summary.overall
    if not overall.total:
        errors = overall.errors
        return Cell(why="no item graded in its quality evidence" + (f" ({errors} without an answer)" if errors else ""))
    value = fraction(overall.accuracy)
    if value is None:
        value = overall.correct / overall.total
    return Cell(
        value,
        low=fraction(overall.low),
        high=fraction(overall.high),
        count=f"{overall.correct}/{overall.total}",
    )


def is_plain_bench(data: EvidenceFile) -> bool:
    """Bench evidence of the survey's prompt (not a workload, not agent traffic)."""
    return isinstance(data, BenchFile) and not data.config.get("workload") and not data.agent


def capacity_cells(
    rows: list[Row], sources: list[Source], priced: dict[tuple[str, str], tuple[list[CostRow], str]]
) -> None:
    """Each row's most load within a workload's objectives, from the newest search for its backend,
    and the $ per million at that load (the cost row of that level of that evidence file)."""
    searches: dict[str, tuple[Path, BenchFile, CapacityFound]] = {}
    for path, data in sources:
        if isinstance(data, BenchFile):
            for search in data.capacity or []:
                searches[search.backend] = (path, data, search)
    if not searches:
        return
    for row in rows:
        if row.backend not in searches:
            row.good_rps = Cell(why="no capacity search for it (bench --workload NAME --find-capacity)")
            row.usd_at_slo = Cell(why=row.good_rps.why)
            continue
        path, data, search = searches[row.backend]
        config = data.config
        objectives = f"{(config.get('workload') or {}).get('name')} {(config.get('slo') or {}).get('text')}"
        best = search.at_capacity
        if search.capacity is None or best is None or not best.goodput_rps:
            row.good_rps = Cell(why=f"no load within {objectives}: {search.stopped}")
            row.usd_at_slo = Cell(why=row.good_rps.why)
            continue
        unit = "at a time" if search.mode == "concurrency" else "req/s offered"
        at = f"{search.capacity:g} {unit}, {objectives}"
        row.good_rps = Cell(best.goodput_rps, at=at, source=path.name)
        cost_rows, how = priced.get((path.name, row.backend), (None, None))
        level = [r for r in cost_rows or [] if r.level == search.label]
        row.usd_at_slo = cost_cell(level, how) if level else Cell(why="no price at that level")
        if row.usd_at_slo.value is not None:
            row.usd_at_slo.at = at


def client_limited(sources: list[Source]) -> set[tuple[str, str, str]]:
    """(bench evidence file name, backend, level label) of every level a client could not keep up
    with: no figure of the server's, so no price of it either (runner/timing/client_load.py)."""
    return {
        (path.name, read.backend, read.label)
        for path, data in sources
        if isinstance(data, BenchFile)
        for read in data.levels or []
        if read.client_limit
    }


def headline_rows(sources: list[Source]) -> list[Row]:
    rows: list[Row] = []
    # A workload's or the agent's figures are not the survey prompt's: their own tables show them,
    # and they make rows here only when no plain bench evidence is given.
    plain = any(is_plain_bench(d) for _, d in sources)
    for path, data in sources:
        if isinstance(data, BenchFile) and (is_plain_bench(data) or not plain) and not data.agent:
            if not data.records and (data.step_load or data.from_zero):
                continue  # a component's scaling alone: no request of the headline's, its own plot shows it
            rows += bench_rows(path, data)
    known = {(r.source, r.backend) for r in rows}
    for path, data in sources:
        if isinstance(data, CostFile):
            rows += [r for r in cost_evidence_rows(path, data) if (r.source, r.backend) not in known]
    # A backend in several evidence files: one row per file, told apart by when it ran.
    runs = {s: run_label(d) for s, d in ((p.name, d) for p, d in sources)}
    files_per_backend: dict[str, set[str]] = {}
    for row in rows:
        files_per_backend.setdefault(row.backend, set()).add(row.source)
    for row in rows:
        if len(files_per_backend[row.backend]) > 1:
            row.run = runs.get(row.source, row.source)
    priced = priced_rows(sources)
    limited = client_limited(sources)
    for row in rows:
        cost_rows, how = priced.get((row.source, row.backend), (None, None))
        valid = [c for c in cost_rows or [] if (row.source, row.backend, c.level) not in limited]
        row.usd_per_million = (
            cost_cell(valid, how)
            if valid or not cost_rows
            else Cell(why="every level priced was client-limited: not the server's figure")
        )
    capacity_cells(rows, sources, priced)
    summaries = quality_summaries(sources)
    for row in rows:
        row.accuracy = Cell(why=NO_QUALITY if not summaries else "not in the quality evidence")
    for path, summary in summaries:
        model = summary.model or "-"
        matches = [r for r in rows if r.backend == summary.backend and (model in r.aliases or model == "-")]
        if not matches:
            why = "no bench evidence for it"
            row = Row(summary.backend, model, aliases={model}, source="quality")
            row.stream_tok_s, row.peak_tok_s, row.ttft_s = Cell(why=why), Cell(why=why), Cell(why=why)
            row.usd_per_million = Cell(why="no bench or cost evidence for it")
            rows.append(row)
            matches = [row]
        for row in matches:
            row.accuracy = accuracy_cell(summary)
            row.accuracy.source = path.name
    rows.sort(
        key=lambda r: (
            r.stream_tok_s.value is None,
            -(r.stream_tok_s.value or 0.0),
            r.backend,
            r.model,
            r.run or "",
        )
    )
    mark_best(rows)
    return rows


def mark_best(rows: list[Row]) -> None:
    """The best figure of each column, where at least two backends have one (ties all marked)."""
    for column in columns_for(rows):
        having = [r for r in rows if getattr(r, column.attr).value is not None]
        cells = [getattr(r, column.attr) for r in having]
        if len({r.backend for r in having}) < 2:
            continue
        best = (max if column.higher_is_better else min)(c.value for c in cells)
        for cell in cells:
            cell.best = cell.value == best


# -- text of each figure -----------------------------------------------------------------------


def number_text(attr: str, value: float) -> tuple[str, str]:
    """(number, unit) of one figure."""
    if attr in ("stream_tok_s", "peak_tok_s"):
        return (f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"), "tok/s"
    if attr == "ttft_s":
        return (f"{value * 1000:.0f}", "ms") if value < 1 else (f"{value:.2f}", "s")
    if attr == "accuracy":
        return f"{value * 100:.1f}", "%"
    if attr == "good_rps":
        return f"{value:,.2f}", "req/s"
    return (f"${value:,.2f}" if value >= 0.1 else f"${value:.3g}"), "/M"


def detail_text(attr: str, cell: Cell) -> str:
    """The line under a figure: its interval and count, or the level it was taken at."""
    if attr == "accuracy":
        parts = []
        if cell.low is not None and cell.high is not None:
            parts.append(f"{cell.low * 100:.0f}–{cell.high * 100:.0f} %")
        if cell.count:
            parts.append(f"{cell.count} right")
        return ", ".join(parts)
    if not cell.at:
        return ""
    return cell.at if cell.at.endswith("at a time") else f"at {cell.at}"


def row_name(row: Row) -> str:
    return row.backend + (f" (run {row.run})" if row.run else "")


def reasons(rows: list[Row]) -> list[tuple[str, list[str]]]:
    """Each distinct reason a figure is missing, and where it holds ("accuracy: g6, local")."""
    found: dict[str, dict[str, list[str]]] = {}
    for row in rows:
        for column in columns_for(rows):
            cell = getattr(row, column.attr)
            if cell.value is None and cell.why:
                found.setdefault(cell.why, {}).setdefault(column.header, []).append(row_name(row))
    return [(why, [f"{header}: {', '.join(names)}" for header, names in where.items()]) for why, where in found.items()]


def flags(rows: list[Row]) -> list[tuple[str, list[str]]]:
    found: dict[str, list[str]] = {}
    for row in rows:
        for column in columns_for(rows):
            cell = getattr(row, column.attr)
            if cell.value is not None and cell.flag:
                found.setdefault(cell.flag, []).append(row_name(row))
    return list(found.items())


def price_sources(rows: list[Row]) -> list[str]:
    """Where the $ per million came from, each with the dates of the prices it used."""
    dates: dict[str, set[str]] = {}
    for row in rows:
        cell = row.usd_per_million
        if cell.source:
            dates.setdefault(cell.source, set()).update([cell.as_of] if cell.as_of else [])
    return [
        source + (f", prices as of {' and '.join(sorted(when))}" if when else "")
        for source, when in sorted(dates.items())
    ]


def figure_sources(rows: list[Row]) -> list[tuple[list[str], list[str]]]:
    """Which evidence file each figure was taken from: (the columns, each file with the rows it
    gave them), columns taken from the same files in the same rows said once."""
    grouped: dict[tuple[tuple[str, tuple[str, ...]], ...], list[str]] = {}
    for column in columns_for(rows):
        where: dict[str, list[str]] = {}
        for row in rows:
            cell = getattr(row, column.attr)
            if cell.value is not None and cell.source:
                where.setdefault(cell.source, []).append(row_name(row))
        if where:
            key = tuple(sorted((source, tuple(names)) for source, names in where.items()))
            grouped.setdefault(key, []).append(column.header)
    return [
        ([*headers], [f"{source} ({', '.join(names)})" for source, names in key]) for key, headers in grouped.items()
    ]


def any_best(rows: list[Row]) -> bool:
    return any(getattr(r, c.attr).best for r in rows for c in columns_for(rows))


def headline_html(rows: list[Row]) -> str:
    if not rows:
        return '<p class="lede">No backend in this evidence.</p>'
    why_index = {why: index for index, (why, _) in enumerate(reasons(rows), 1)}
    flag_marks = {flag: "†" * index for index, (flag, _) in enumerate(flags(rows), 1)}
    columns = columns_for(rows)
    head = "".join(
        f'<th class="num" scope="col" title="{html.escape(c.definition)}">{html.escape(c.header)}</th>' for c in columns
    )
    body = []
    for row in rows:
        run = f'<div class="at">run {html.escape(row.run)}</div>' if row.run else ""
        cells = [
            f'<th scope="row" class="text">{html.escape(row.backend)}{run}</th>',
            f'<td class="text model">{html.escape(row.model)}</td>',
        ]
        for column in columns:
            cells.append(figure_html(column, getattr(row, column.attr), why_index, flag_marks))
        body.append("<tr>" + "".join(cells) + "</tr>")
    notes = [
        f'<li id="why-{index}"><sup>{index}</sup> {html.escape(why)} — {html.escape("; ".join(where))}</li>'
        for why, where in reasons(rows)
        for index in [why_index[why]]
    ]
    notes += [
        f"<li>{flag_marks[flag]} {html.escape(flag)} — {html.escape(', '.join(sorted(set(where))))}</li>"
        for flag, where in flags(rows)
    ]
    if price_sources(rows):
        notes.append(f"<li>$ per M output from {html.escape('; '.join(price_sources(rows)))}</li>")
    definitions = "".join(f"<dt>{html.escape(c.header)}</dt><dd>{html.escape(c.definition)}</dd>" for c in columns)
    taken = "".join(
        f"<li><strong>{html.escape(' · '.join(headers))}</strong>: {html.escape('; '.join(files))}</li>"
        for headers, files in figure_sources(rows)
    )
    return (
        f'<p class="lede">Sorted by {html.escape(SORTED_BY)}.'
        + (' <span class="best-key">★ best in its column</span>;' if any_best(rows) else "")
        + " — a figure the evidence does not hold (the reason on hover and below).</p>"
        '<div class="table-wrap" id="headline-table"><table class="headline"><thead><tr>'
        f'<th scope="col" class="text">backend</th><th scope="col" class="text">model</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
        + (f'<ul class="notes">{"".join(notes)}</ul>' if notes else "")
        + (
            f'<p class="dim">Where each figure comes from:</p><ul class="notes" id="headline-sources">{taken}</ul>'
            if taken
            else ""
        )
        + f'<dl class="definitions">{definitions}</dl>'
    )


def figure_html(column: Column, cell: Cell, why_index: dict[str, int], flag_marks: dict[str, str]) -> str:
    if cell.value is None:
        why = cell.why or "not in the evidence"
        index = why_index.get(why)
        ref = f'<sup><a href="#why-{index}">{index}</a></sup>' if index else ""
        return f'<td class="num missing" title="{html.escape(why)}">—{ref}</td>'
    number, unit = number_text(column.attr, cell.value)
    mark = flag_marks.get(cell.flag or "", "")
    detail = detail_text(column.attr, cell)
    title = (
        column.definition
        + (f"; from {cell.source}" if cell.source else "")
        + (f" ({cell.as_of})" if cell.as_of else "")
    )
    best = ' <span class="star" aria-label="best in its column">★</span>' if cell.best else ""
    return (
        f'<td class="num{" best" if cell.best else ""}" title="{html.escape(title)}">'
        f'<span class="figure">{html.escape(number)}</span> <span class="unit">{html.escape(unit)}</span>'
        f"{html.escape(mark)}{best}" + (f'<div class="at">{html.escape(detail)}</div>' if detail else "") + "</td>"
    )


def headline_markdown(rows: list[Row]) -> str:
    if not rows:
        return "No backend in this evidence."
    why_index = {why: index for index, (why, _) in enumerate(reasons(rows), 1)}
    columns = columns_for(rows)
    lines = [
        f"Sorted by {SORTED_BY}."
        + (" ★ best in its column;" if any_best(rows) else "")
        + " — a figure the evidence does not hold (reasons below).",
        "",
        "| backend | model | " + " | ".join(c.header for c in columns) + " |",
        "| --- | --- | " + " | ".join("---:" for _ in columns) + " |",
    ]
    for row in rows:
        cells = [row.backend + (f" (run {row.run})" if row.run else ""), row.model]
        for column in columns:
            cell = getattr(row, column.attr)
            if cell.value is None:
                cells.append(f"—[{why_index.get(cell.why or '', '?')}]")
                continue
            number, unit = number_text(column.attr, cell.value)
            detail = detail_text(column.attr, cell)
            cells.append(f"{number} {unit}" + (f" ({detail})" if detail else "") + (" ★" if cell.best else ""))
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines.append("")
    lines += [f"{index}. {why} — {'; '.join(where)}" for index, (why, where) in enumerate(reasons(rows), 1)]
    lines += [f"- {flag} — {', '.join(sorted(set(where)))}" for flag, where in flags(rows)]
    lines += [f"- $ per M output from {'; '.join(price_sources(rows))}"] if price_sources(rows) else []
    sources = figure_sources(rows)
    if sources:
        lines += ["", "Where each figure comes from:", ""]
        lines += [f"- {' · '.join(headers)}: {'; '.join(files)}" for headers, files in sources]
    return "\n".join(lines)


# -- the fleet's line -----------------------------------------------------------------------------

FLEET_LEDE = (
    "Fleet (bench --copies): the most load within the objectives at each copy count, and the scaling "
    "efficiency, capacity(N) / (N × one copy's capacity)."
)


def fleet_counts(series: list[FleetSeries]) -> list[int]:
    return sorted({p.copies for s in series for p in s.points})


def count_text(entry: FleetSeries, point: CountPoint | None) -> tuple[str, str, str]:
    """(figure, unit, the line under it) of one copy count; a count without a capacity says why."""
    if point is None:
        return "", "", "not asked"
    if point.capacity is None:
        return "", "", (point.missing or "not measured").split(":")[0]
    unit = "at a time" if entry.mode == CLOSED else "req/s"
    efficiency = f"{point.efficiency:.0%} of ideal" if point.efficiency is not None else ""
    return f"{point.capacity:g}", unit, efficiency


def fleet_headline_html(series: list[FleetSeries]) -> str:
    """One row per component, routing and input length: its capacity at each copy count with the
    efficiency under it; a count not measured says so, its reason on hover."""
    if not series:
        return ""
    counts = fleet_counts(series)
    head = "".join(f'<th class="num" scope="col">{c} {"copy" if c == 1 else "copies"}</th>' for c in counts)
    body = []
    for entry in series:
        cells = [
            f'<th scope="row" class="text">{html.escape(entry.fleet.backend)}'
            + (f'<div class="at">run {html.escape(entry.run)}</div>' if entry.run else "")
            + "</th>",
            f'<td class="text">{html.escape(entry.fleet.routing)}</td>',
            f'<td class="num">{entry.shared_share:.0%}</td>',
            f'<td class="num">{entry.input_tokens or "-"}</td>',
        ]
        for count in counts:
            point = next((p for p in entry.points if p.copies == count), None)
            number, unit, under = count_text(entry, point)
            if not number:
                why = (point.missing if point else None) or "this count was not asked for"
                cells.append(f'<td class="num missing" title="{html.escape(why)}">—<div class="at">{under}</div></td>')
                continue
            cells.append(
                f'<td class="num"><span class="figure">{html.escape(number)}</span> '
                f'<span class="unit">{html.escape(unit)}</span>'
                + (f'<div class="at">{html.escape(under)}</div>' if under else "")
                + "</td>"
            )
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<h3 id="fleet">Fleet</h3><p class="lede">{html.escape(FLEET_LEDE)}</p><div class="table-wrap" id="fleet-table">'
        '<table class="headline fleet"><thead><tr><th scope="col" class="text">fleet</th>'
        '<th scope="col" class="text">routing</th><th scope="col" class="num">shared</th>'
        f'<th scope="col" class="num">input tokens</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
    )


def fleet_headline_markdown(series: list[FleetSeries]) -> str:
    if not series:
        return ""
    counts = fleet_counts(series)
    lines = [
        FLEET_LEDE,
        "",
        "| fleet | routing | shared | input tokens | "
        + " | ".join(f"{c} {'copy' if c == 1 else 'copies'}" for c in counts)
        + " |",
        "| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in counts) + " |",
    ]
    for entry in series:
        cells = [
            entry.fleet.backend + (f" (run {entry.run})" if entry.run else ""),
            entry.fleet.routing,
            f"{entry.shared_share:.0%}",
            str(entry.input_tokens or "-"),
        ]
        for count in counts:
            number, unit, under = count_text(entry, next((p for p in entry.points if p.copies == count), None))
            cells.append(f"{number} {unit}" + (f" ({under})" if under else "") if number else f"— ({under})")
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def quality_table(evidence: QualityFile) -> Table:
    """Quality evidence's summary as a table, per backend and task family, for when the quality
    command's own table module is not there."""
    table = Table(title="quality: accuracy per task family, 95 % Wilson interval")
    add_columns(
        table,
        ["backend", "model", "family", "right/items", "accuracy %", "95 % interval"],
        ("backend", "model", "family"),
    )
    for summary in evidence.summary or []:
        families = [("all", summary.overall), *sorted(summary.families.items())]
        for name, figures in families:
            accuracy, low, high = (fraction(figures.accuracy), fraction(figures.low), fraction(figures.high))
            table.add_row(
                summary.backend,
                escape(summary.model or "-"),
                name,
                f"{figures.correct}/{figures.total}",
                f"{accuracy * 100:.1f}" if accuracy is not None else "-",
                f"{low * 100:.0f}-{high * 100:.0f}" if low is not None and high is not None else "-",
            )
    return table
