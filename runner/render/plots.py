"""The report's plots, drawn with matplotlib from evidence (never from typed figures), one message
each, laid out by matplotlib's constrained layout so no text overlaps or is cut (legends go below
the axes, outside them).

Each function takes the evidence files as (path, evidence) and returns a figure, or the reason it
drew none (a single request level has no curve against concurrency); `PLOTS` names them in the
page's order, with the one line the page says under each.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display, no GUI toolkit

from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from runner.core.evidence import EvidenceFile
from runner.core.records import Level
from runner.core.stats import median
from runner.costing.rows import CostRow, LevelFigures
from runner.figures.levels import LevelSummary, level_groups, prefill_fit
from runner.figures.scale_out import StepLoad, catch_up, from_zero_p50, missed
from runner.measure.bench_file import BenchFile
from runner.measure.load import CLOSED
from runner.render.fleet import NO_FLEET, Estimate, RoutingComparison, copies_in, fleet_series, routing_comparison
from runner.render.headline import (
    NOT_LEVELS,
    SINGLE,
    headline_rows,
    is_plain_bench,
    level_rows,
    priced_rows,
    run_label,
)

# An evidence file the page is drawn from: where it was read, and the file typed.
Source = tuple[Path, EvidenceFile]
# Bench evidence among them.
Bench = tuple[Path, BenchFile]
# Drawn at DPI and shown at DPI / DISPLAY_SCALE CSS pixels per inch: sharp on a high-density screen.
DPI = 144
DISPLAY_SCALE = 1.5
WIDTH_IN = 7.5
STYLE = {
    "font.size": 11,
    "axes.titlesize": 11,
    "axes.labelsize": 11,
    "legend.fontsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "savefig.dpi": DPI,
}
PERCENTILES = (("median", "-", "median"), ("p90", "--", "p90"), ("p99", ":", "p99"))
# Legend entries longer than this wrap (a long model name under a backend's name).
LEGEND_WRAP = 70
# A log axis once the largest figure is this many times the smallest.
LOG_RATIO = 20


@contextmanager
def style() -> Iterator[None]:
    """The plots' look, for both drawing and saving (matplotlib reads some settings when it saves)."""
    with matplotlib.rc_context(STYLE):
        yield


def bench_files(sources: list[Source]) -> list[Bench]:
    """Bench evidence of the survey's prompt (a workload's and the agent's have plots of their own)."""
    return [(p, d) for p, d in sources if isinstance(d, BenchFile) and is_plain_bench(d)]


def workload_files(sources: list[Source]) -> list[Bench]:
    return [(p, d) for p, d in sources if isinstance(d, BenchFile) and d.config.get("workload")]


NO_BENCH = "no bench evidence given (python -m runner.bench)"


def series_name(backend: str, evidence: BenchFile, sources: list[Source]) -> str:
    """The backend, and which run it was when several bench files are drawn together."""
    return backend if len(bench_files(sources)) < 2 else f"{backend} ({run_label(evidence)})"


def new_figure(height: float = 4.2, width: float = WIDTH_IN) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def legend_below(figure: Figure, handles: list[Any] | None = None, labels: list[str] | None = None) -> None:
    """One legend under the axes, outside them: long names never cover a curve or get cut."""
    if handles is None:
        seen: dict[str, Artist] = {}
        for axes in figure.axes:
            for handle, label in zip(*axes.get_legend_handles_labels(), strict=True):
                seen.setdefault(label, handle)
        labels, handles = list(seen), list(seen.values())
    if not handles:
        return
    longest = max(len(label) for label in labels or [""])
    columns = 1 if longest > 48 else 2 if longest > 28 else 3 if longest > 16 else 4
    labels = [textwrap.fill(label, LEGEND_WRAP, subsequent_indent="  ") for label in labels or []]
    figure.legend(handles, labels, loc="outside lower center", ncols=min(columns, len(handles)), frameon=False)


def level_key(level: Level) -> tuple[int, float, str]:
    return (0 if level.mode == CLOSED else 1, float(level.value or 0), level.label)


def tick_text(level: Level, mixed: bool) -> str:
    """A level on an axis: the number in flight, or the arrival rate."""
    if mixed:
        return level.label
    if level.mode == CLOSED:
        return f"{int(level.value or 0)}"
    return level.label


def level_axis(levels: list[Level]) -> tuple[dict[str, int], list[str], str]:
    """Positions of the load levels on a shared categorical axis (closed loop by streams, then open
    loop by rate), their tick texts, and the axis label."""
    ordered = sorted({lv.label: lv for lv in levels}.values(), key=level_key)
    modes = {lv.mode for lv in ordered}
    mixed = len(modes) > 1
    label = (
        "load level"
        if mixed
        else "requests in flight (closed loop)"
        if modes == {CLOSED}
        else "arrival rate (open loop)"
    )
    return {lv.label: i for i, lv in enumerate(ordered)}, [tick_text(lv, mixed) for lv in ordered], label


def set_level_ticks(axes: Any, ticks: list[str], xlabel: str) -> None:
    axes.set_xticks(range(len(ticks)), ticks, rotation=45 if len(ticks) > 10 else 0)
    axes.set_xlabel(xlabel)
    axes.set_xlim(-0.5, len(ticks) - 0.5)


def scale_for(axes: Any, values: list[float], axis: str = "y") -> None:
    """A log axis when the figures span more than LOG_RATIO, its ticks as plain numbers (100, not 10²)."""
    positive = [v for v in values if v and v > 0]
    if positive and max(positive) / min(positive) >= LOG_RATIO:
        target = axes.yaxis if axis == "y" else axes.xaxis
        (axes.set_yscale if axis == "y" else axes.set_xscale)("log")
        target.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        target.set_minor_formatter(NullFormatter())


def colours(sources: list[Source]) -> dict[str, str]:
    """One colour per series (a backend in one run), the same in every plot."""
    names = sorted(
        {
            series_name(backend, evidence, sources)
            for _, evidence in bench_files(sources)
            for backend, _, _ in level_rows(evidence)
        }
    )
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    return {name: cycle[i % len(cycle)] for i, name in enumerate(names)}


def throughput_against_concurrency(sources: list[Source]) -> Figure | str:
    if not bench_files(sources):
        return NO_BENCH
    curves: dict[str, list[tuple[float, float]]] = {}
    for _, evidence in bench_files(sources):
        for backend, level, summary in level_rows(evidence):
            if level.mode == CLOSED and summary.output_tok_s:
                name = series_name(backend, evidence, sources)
                curves.setdefault(name, []).append((float(level.value), summary.output_tok_s))
    if not any(len(points) > 1 for points in curves.values()):
        return "no closed-loop sweep in the bench evidence (bench --concurrency 1,4,16 draws it)"
    figure = new_figure()
    axes = figure.subplots()
    values = sorted({x for points in curves.values() for x, _ in points})
    colour = colours(sources)
    for name, points in sorted(curves.items()):
        points.sort()
        axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name, color=colour.get(name))
    axes.set_xscale("log", base=2)
    axes.set_xticks(values, [f"{v:g}" for v in values])
    axes.minorticks_off()
    axes.set_xlabel("requests in flight (closed loop)")
    axes.set_ylabel("output tokens/s, all requests")
    axes.set_ylim(bottom=0)
    legend_below(figure)
    return figure


def latency_percentiles(sources: list[Source]) -> Figure | str:
    if not bench_files(sources):
        return NO_BENCH
    series: dict[str, list[tuple[Level, LevelSummary]]] = {}
    for _, evidence in bench_files(sources):
        for backend, level, summary in level_rows(evidence):
            if summary.completed:
                series.setdefault(series_name(backend, evidence, sources), []).append((level, summary))
    if not series:
        return "no request completed in the bench evidence"
    positions, ticks, xlabel = level_axis([level for points in series.values() for level, _ in points])
    figure = new_figure(4.6)
    left, right = figure.subplots(1, 2, sharex=True)
    colour = colours(sources)
    for axes, key, title in (
        (left, "ttft_s", "time to first token (ms)"),
        (right, "itl_s", "inter-token latency (ms per token)"),
    ):
        values = []
        for name, points in sorted(series.items()):
            points = sorted(points, key=lambda p: positions[p[0].label])
            for quantile, line, _ in PERCENTILES:
                figures = [(level, getattr(getattr(s, key), quantile)) for level, s in points]
                xs = [positions[level.label] for level, value in figures if value is not None]
                ys = [value * 1000 for _, value in figures if value is not None]
                values += ys
                axes.plot(xs, ys, linestyle=line, marker="o" if quantile == "median" else None, color=colour[name])
        axes.set_title(title)
        set_level_ticks(axes, ticks, xlabel)
        scale_for(axes, values)
        if axes.get_yscale() == "linear":
            axes.set_ylim(bottom=0)
    handles = [Line2D([], [], color=colour[name], marker="o", label=name) for name in sorted(series)]
    handles += [Line2D([], [], color="0.35", linestyle=line, label=label) for _, line, label in PERCENTILES]
    legend_below(figure, handles, [h.get_label() for h in handles])
    return figure


def cost_levels(sources: list[Source]) -> tuple[dict[str, list[tuple[Level, float]]], list[str]]:
    """Per series, ($ per million output tokens) at each load level, from the cost evidence given
    or priced from the bench evidence at the offline prices; and why any backend has none."""
    levels_of: dict[tuple[str, str, str], Level] = {}
    for path, evidence in bench_files(sources):
        for backend, level, _ in level_rows(evidence):
            levels_of[(path.name, backend, level.label)] = level
    several = len(bench_files(sources)) > 1
    runs = {p.name: run_label(d) for p, d in sources}
    curves: dict[str, list[tuple[Level, float]]] = {}
    missing = []
    for (source, backend), (rows, _how) in priced_rows(sources).items():
        name = f"{backend} ({runs.get(source, source)})" if several else backend
        points = []
        for row in rows:
            label = row.level
            if not label or label in NOT_LEVELS or not row.usd_per_million_output or copies_in(label) is not None:
                continue
            level = levels_of.get((source, backend, label)) or level_from_figures(row, label)
            points.append((level, row.usd_per_million_output))
        if points:
            curves[name] = points
        else:
            why = next((r.note for r in rows if r.note), None) or "no $ per million"
            missing.append(f"{backend}: {why}")
    return curves, missing


def level_from_figures(row: CostRow, label: str) -> Level:
    """A load level (as bench evidence writes one) from a cost row's own figures."""
    figures = row.figures if isinstance(row.figures, LevelFigures) else None
    mode, value = (figures.mode, figures.value) if figures else (None, None)
    return Level(mode or CLOSED, value or 1, label=label)


def cost_against_load(sources: list[Source]) -> Figure | str:
    """$ per million output tokens at each level, by each backend's billing model."""
    if not any(d.command in ("bench", "cost") for _, d in sources):
        return "no bench or cost evidence given (python -m runner.bench, python -m runner.cost)"
    curves, missing = cost_levels(sources)
    if not curves:
        return "nothing here is billed by AWS" + (f" ({'; '.join(sorted(set(missing)))})" if missing else "")
    positions, ticks, xlabel = level_axis([level for points in curves.values() for level, _ in points])
    figure = new_figure()
    axes = figure.subplots()
    values = []
    colour = colours(sources)
    for name, points in sorted(curves.items()):
        points = sorted(points, key=lambda p: positions[p[0].label])
        xs = [positions[lv.label] for lv, _ in points]
        axes.plot(xs, [v for _, v in points], marker="o", label=name, color=colour.get(name))
        values += [v for _, v in points]
    set_level_ticks(axes, ticks, xlabel)
    scale_for(axes, values)
    if axes.get_yscale() == "linear":
        axes.set_ylim(bottom=0)
    axes.set_ylabel("$ per million output tokens")
    legend_below(figure)
    return figure


def accuracy_against_cost(sources: list[Source]) -> Figure | str:
    """Each backend and model at its accuracy (with its interval) and its lowest $ per million."""
    if not any(d.command == "quality" for _, d in sources):
        return "no quality evidence given (python -m runner.quality)"
    rows = [r for r in headline_rows(sources) if r.accuracy.value is not None]
    points = [r for r in rows if r.usd_per_million.value is not None]
    if not points:
        return (
            "no backend with an accuracy has a $ per million ("
            + "; ".join(f"{r.backend}: {r.usd_per_million.why}" for r in rows)
            + ")"
            if rows
            else "no backend of the quality evidence was graded"
        )
    figure = new_figure(4.6)
    axes = figure.subplots()
    for row in points:
        cell = row.accuracy
        low = cell.low if cell.low is not None else cell.value
        high = cell.high if cell.high is not None else cell.value
        label = f"{row.backend} · {row.model}" + (f" ({row.run})" if row.run else "")
        axes.errorbar(
            [row.usd_per_million.value],
            [cell.value * 100],
            yerr=[[(cell.value - low) * 100], [(high - cell.value) * 100]],
            fmt="o",
            capsize=4,
            label=label,
        )
    scale_for(axes, [r.usd_per_million.value for r in points], axis="x")
    axes.set_ylim(0, 100)
    axes.set_xlabel("$ per million output tokens\n(lowest over the load levels)")
    axes.set_ylabel("accuracy (%), 95 % interval")
    legend_below(figure)
    return figure


def lightest(label: str) -> bool:
    """A level of one request at a time (a workload's labels lead with its input length; 11 at a
    time is not one), not a `bench --copies` level (the fleet's plots draw those)."""
    return (label == SINGLE or label.endswith(f", {SINGLE}")) and copies_in(label) is None


def run_to_run(sources: list[Source]) -> Figure | str:
    """Median tok/s of one request at a time per backend (and input length) in each bench file
    (the survey's prompt or a workload), in the order given: what a figure moves between runs."""
    given = [(p, d) for p, d in sources if isinstance(d, BenchFile)]
    runs = []
    for _, evidence in given:
        if evidence.agent:
            continue
        medians = {}
        for (backend, label), records in level_groups(evidence.records).items():
            if lightest(label):
                lead = label.removesuffix(SINGLE).removesuffix(", ")
                key = f"{backend}\n{lead}" if lead else backend
                medians[key] = median(r.tokens_per_s for r in records if r.ok and not r.cold_start)
        if any(v is not None for v in medians.values()):
            runs.append((run_label(evidence), medians))
    if len(runs) < 2:
        count = len(given)
        files = f"{count} bench evidence file{'s' if count != 1 else ''} given"
        return (
            f"{files}, {len(runs)} of them with requests one at a time (agent traffic and sweeps without "
            "--concurrency 1 have none): give two or more such runs to compare them"
        )
    backends = sorted({b for _, medians in runs for b in medians})
    figure = new_figure(4.0)
    axes = figure.subplots()
    width = 0.8 / len(runs)
    for index, (started, medians) in enumerate(runs):
        axes.bar(
            [i + index * width for i in range(len(backends))],
            [medians.get(b) or 0 for b in backends],
            width,
            label=started,
        )
    axes.set_xticks([i + 0.4 - width / 2 for i in range(len(backends))], backends)
    axes.set_ylabel("median tok/s, one request at a time")
    axes.grid(False, axis="x")
    legend_below(figure)
    return figure


def roofline_share(sources: list[Source]) -> Figure | str:
    """Median single-request decode rate as a share of bandwidth / bytes read per token."""
    from runner.figures.levels import roofline

    if not bench_files(sources):
        return NO_BENCH
    bars = {
        series_name(name, evidence, sources): figures.share
        for _, evidence in bench_files(sources)
        for name, figures in roofline(evidence.records, evidence.backends).items()
        if figures.share is not None
    }
    if not bars:
        return "no backend with a catalog memory bandwidth and weight size measured one at a time"
    figure = new_figure(1.6 + 0.45 * len(bars))
    axes = figure.subplots()
    names = sorted(bars, reverse=True)
    axes.barh(names, [bars[n] * 100 for n in names], color="#55a868")
    axes.axvline(100, color="black", linewidth=1)
    axes.set_xlabel("% of the decode ceiling\n(memory bandwidth / weight bytes read per token)")
    axes.grid(False, axis="y")
    return figure


def timed_files(sources: list[Source]) -> list[Bench]:
    """Bench evidence of timed requests: the survey's prompt or a workload (not agent traffic)."""
    return [(p, d) for p, d in sources if isinstance(d, BenchFile) and not d.agent]


def lightest_levels(evidence: BenchFile) -> list[tuple[str, str, list[Any]]]:
    """(backend, level label, its warm records) at each backend's lightest load: one request at a
    time (each input length of a workload), else the first level it measured (a `bench --copies`
    level is the fleet's, drawn in its own plots)."""
    groups = {key: rs for key, rs in level_groups(evidence.records).items() if copies_in(key[1]) is None}
    chosen = [(b, label, rs) for (b, label), rs in groups.items() if lightest(label)]
    seen = {b for b, _, _ in chosen}
    for (backend, label), records in groups.items():
        if backend not in seen:
            seen.add(backend)
            chosen.append((backend, label, records))
    return [(b, label, [r for r in rs if not r.cold_start]) for b, label, rs in chosen]


def latency_distribution(sources: list[Source]) -> Figure | str:
    """The share of requests done within each time (the empirical CDF), time to first token and
    end-to-end, per backend at its lightest load."""
    files = timed_files(sources)
    if not files:
        return NO_BENCH
    series: dict[str, tuple[list[float], list[float]]] = {}
    for _, evidence in files:
        for backend, label, records in lightest_levels(evidence):
            done = [r for r in records if r.ok]
            lead = label.removesuffix(SINGLE).removesuffix(", ")
            name = backend + (f", {lead}" if lead else "") + (f", {label}" if not lightest(label) else "")
            name += f" ({run_label(evidence)})" if len(files) > 1 else ""
            ttft = [r.ttft_s * 1000 for r in done if r.ttft_s is not None]
            e2e = [r.e2e_s for r in done if r.e2e_s is not None]
            if e2e:
                series[name] = (ttft, e2e)
    if not series:
        return "no request completed in the bench evidence"
    figure = new_figure(4.6)
    left, right = figure.subplots(1, 2, sharey=True)
    colour = workload_colours(list(series))
    for axes, index, title in ((left, 0, "time to first token (ms)"), (right, 1, "end-to-end latency (s)")):
        values = []
        for name, figures in sorted(series.items()):
            if figures[index]:
                axes.ecdf(figures[index], color=colour[name], label=name)
                values += figures[index]
        axes.set_xlabel(title)
        scale_for(axes, values, axis="x")
    left.set_ylabel("share of requests done within")
    left.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.0%}"))
    legend_below(figure)
    return figure


# A run's timeline draws at most this many rows (backend and level); the rest are said under it.
TIMELINE_ROWS = 48


def run_timeline(sources: list[Source]) -> Figure | str:
    """The first bench run given, request by request: when each was sent, its first token and its
    end, a row per backend and load level in the order measured (time from the run's first request)."""
    files = [(p, d) for p, d in timed_files(sources) if d.records]
    if not files:
        return NO_BENCH
    path, evidence = files[0]
    groups = list(level_groups(evidence.records).items())[:TIMELINE_ROWS]
    starts = {id(r): datetime.fromisoformat(r.started_at) for _, records in groups for r in records}
    zero = min(starts.values())
    figure = new_figure(1.6 + 0.28 * len(groups), WIDTH_IN * 1.4)
    axes = figure.subplots()
    colour = workload_colours([backend for (backend, _), _ in groups])
    failed = []
    # Each backend's waits and streams as one collection apiece (`hlines`): a line per request
    # would be an artist per request, and a run of thousands drew for seconds.
    waiting: dict[str, list[tuple[float, float, float]]] = {}
    streaming: dict[str, list[tuple[float, float, float]]] = {}
    for row, ((backend, _label), records) in enumerate(groups):
        for index, record in enumerate(records):
            start = (starts[id(record)] - zero).total_seconds()
            y = row + 0.8 * (index + 0.5) / len(records) - 0.4
            if not record.ok or record.e2e_s is None:
                failed.append((start, y))
                continue
            first = start + (record.ttft_s or 0.0)
            waiting.setdefault(backend, []).append((y, start, first))
            streaming.setdefault(backend, []).append((y, first, start + record.e2e_s))
    for segments, alpha in ((waiting, 0.35), (streaming, 1.0)):
        for backend, lines in segments.items():
            axes.hlines(*zip(*lines, strict=True), color=colour[backend], alpha=alpha, linewidth=1.2)
    if failed:
        axes.plot(*zip(*failed, strict=True), "x", color="#a3261b", markersize=5, label="failed (when sent)")
    axes.set_yticks(range(len(groups)), [f"{backend} · {label}" for (backend, label), _ in groups])
    axes.set_ylim(len(groups) - 0.5, -0.5)
    axes.set_xlim(left=0)
    axes.set_xlabel(f"seconds from the run's first request ({path.name})")
    axes.grid(False, axis="y")
    handles = [
        Line2D([], [], color="0.35", alpha=0.35, label="sent → first token"),
        Line2D([], [], color="0.35", label="first token → end"),
    ]
    if failed:
        handles.append(Line2D([], [], color="#a3261b", marker="x", linestyle="", label="failed (when sent)"))
    legend_below(figure, handles, [h.get_label() for h in handles])
    return figure


NO_STEP = "no step-load evidence given (bench --step-load 2,8 --goodput ttft:MS draws it)"
# The scale-out timeline draws at most this many steps; the rest are named under them.
STEP_PANELS = 4
MISSED_COLOUR = "#a3261b"


def step_loads(sources: list[Source]) -> list[tuple[Path, BenchFile, StepLoad]]:
    """Every step of `bench --step-load` given, with its file, in the order given."""
    return [(p, d, step) for p, d in sources if isinstance(d, BenchFile) for step in d.step_load or []]


def missed_span(step: StepLoad) -> tuple[float, float] | None:
    """The seconds since the load started when the objective was missed after the step: to the
    end of the last window that missed (runner/figures/scale_out.py), or, never caught up, to the
    last sample; None when no window after the step missed."""
    caught = catch_up(step)
    if caught.caught_up:
        return (step.step_at_s, step.step_at_s + caught.missed_s) if caught.missed_s else None
    return step.step_at_s, max([step.step_at_s, *(s.at_s for s in step.samples)])


def step_title(path: Path, evidence: BenchFile, step: StepLoad) -> str:
    """What the step did and how long the objective was missed, and the same component's time from
    zero copies to the first token where the file has its repeats."""
    caught = catch_up(step)
    verdict = (
        f"never caught up within {step.bound_s:g} s"
        if not caught.caught_up
        else f"the objective missed for {caught.missed_s:g} s after the step"
        if caught.missed_s
        else "the objective met after the step"
    )
    lines = [
        f"{step.backend} ({path.name}): {step.base} → {step.stepped} in flight at {step.step_at_s:g} s, "
        f"TTFT p95 objective {step.ttft_slo_s * 1000:g} ms",
        verdict,
    ]
    repeats = [r for r in evidence.from_zero or [] if r.backend == step.backend]
    p50 = from_zero_p50(repeats)
    if p50 is not None:
        ok = sum(1 for r in repeats if r.ok)
        lines.append(f"from zero copies to the first token: p50 {p50:g} s ({ok} of {len(repeats)} repeats answered)")
    return "\n".join(textwrap.fill(line, 120) for line in lines)


def scale_out_timeline(sources: list[Source]) -> Figure | str:
    """Each step in load over time since the load started: the copies in service (a step line)
    and the requests in flight above, the TTFT p95 of each window against the objective below,
    the step's moment marked and the span the objective was missed after it shaded."""
    steps = step_loads(sources)
    if not steps:
        return NO_STEP
    shown = steps[:STEP_PANELS]
    figure = new_figure(0.9 + 4.6 * len(shown), WIDTH_IN * 1.4)
    grid = figure.subplots(2 * len(shown), 1, gridspec_kw={"height_ratios": [1.0, 1.2] * len(shown)})
    for index, (path, evidence, step) in enumerate(shown):
        counts, ttft = grid[2 * index], grid[2 * index + 1]
        ttft.sharex(counts)
        at = [s.at_s for s in step.samples]
        counts.plot(at, [math.nan if s.copies is None else s.copies for s in step.samples],
                    drawstyle="steps-post", color="C0", linewidth=2, label="copies in service")  # fmt: skip
        counts.plot(at, [s.in_flight for s in step.samples], marker=".", color="C1", label="requests in flight")
        slo_ms = step.ttft_slo_s * 1000
        p95 = [math.nan if s.ttft_p95_s is None else s.ttft_p95_s * 1000 for s in step.samples]
        ttft.plot(at, p95, marker="o", markersize=4, color="C2", label="TTFT p95 of the window")
        ttft.axhline(slo_ms, color="0.35", linestyle="--", linewidth=1, label="TTFT p95 objective")
        silent = [s.at_s for s in step.samples if s.ttft_p95_s is None and missed(s, step.ttft_slo_s)]
        if silent:
            ttft.plot(silent, [slo_ms] * len(silent), "x", color=MISSED_COLOUR,
                      label="in flight, no first token (missed)")  # fmt: skip
        span = missed_span(step)
        for axes in (counts, ttft):
            axes.axvline(step.step_at_s, color="black", linestyle=":", linewidth=1.2, label="the step")
            if span:
                axes.axvspan(
                    *span, color=MISSED_COLOUR, alpha=0.12, linewidth=0, label="objective missed after the step"
                )
            axes.set_xlim(0, max([step.step_at_s + step.bound_s, *at]))
        counts.set_title(step_title(path, evidence, step), loc="left")
        counts.yaxis.set_major_locator(MaxNLocator(integer=True))
        counts.set_ylim(bottom=0, top=max([1, *(s.in_flight for s in step.samples),
                                           *(s.copies or 0 for s in step.samples)]) * 1.15)  # fmt: skip
        counts.set_ylabel("copies, in flight")
        counts.tick_params(labelbottom=False)
        scale_for(ttft, [v for v in p95 if not math.isnan(v)] + [slo_ms])
        if ttft.get_yscale() == "linear":
            ttft.set_ylim(0, max([slo_ms, *(v for v in p95 if not math.isnan(v))]) * 1.15)
        ttft.set_ylabel("TTFT p95 (ms)")
        ttft.set_xlabel("seconds since the load started")
    if len(steps) > len(shown):
        rest = ", ".join(f"{step.backend} ({path.name})" for path, _, step in steps[len(shown) :])
        figure.suptitle(textwrap.fill(f"the first {len(shown)} steps given; not drawn: {rest}", 120))
    legend_below(figure)
    return figure


NO_WORKLOAD = "no bench evidence of a workload given (python -m runner.bench --workload NAME or --input-tokens N)"


def workload_series(backend: str, evidence: BenchFile, sources: list[Source], input_tokens: Any = None) -> str:
    name = backend if len(workload_files(sources)) < 2 else f"{backend} ({run_label(evidence)})"
    return f"{name}, {input_tokens} in" if input_tokens else name


def fleet_level(level: Level) -> bool:
    """A level of `bench --copies` (its label leads with the copy count): the fleet's own plots draw
    it, by copy count; on a curve against load it would lie beside another count's same load."""
    return copies_in(level.label) is not None


def workload_colours(names: list[str]) -> dict[str, str]:
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    return {name: cycle[i % len(cycle)] for i, name in enumerate(sorted(set(names)))}


def ttft_against_input(sources: list[Source]) -> Figure | str:
    """Median time to first token against the prompt's tokens, one stream, per backend: the
    prefill cost a longer prompt pays, with the rate the sweep's line gives."""
    if not workload_files(sources):
        return NO_WORKLOAD
    curves: dict[str, list[tuple[float, float]]] = {}
    rates: dict[str, float] = {}
    for _, evidence in workload_files(sources):
        fits = prefill_fit(evidence.records)
        for backend, level, summary in level_rows(evidence):
            if level.mode != CLOSED or level.value != 1 or not level.input_tokens or fleet_level(level):
                continue
            counted = summary.tokens.input_counted or level.input_tokens
            if summary.ttft_s.median is not None:
                name = workload_series(backend, evidence, sources)
                curves.setdefault(name, []).append((counted, summary.ttft_s.median * 1000))
                if backend in fits:
                    rates[name] = fits[backend].prefill_tok_s
    if not any(len(points) > 1 for points in curves.values()):
        return "no prompt-length sweep in the bench evidence (bench --input-tokens 128,512,2048 draws it)"
    figure, axes = curve_figure(
        curves, lambda name: f"{name}: prefill {rates[name]:,.0f} tok/s" if name in rates else name
    )
    axes.set_xlabel("prompt tokens (as the server counted them), one request at a time")
    axes.set_ylabel("median time to first token (ms)")
    axes.set_xlim(left=0)
    axes.set_ylim(bottom=0)
    legend_below(figure)
    return figure


def curve_figure(curves: dict[str, list[tuple[float, float]]], label: Callable[[str], str] = str) -> tuple[Figure, Any]:
    """A line with markers per series, its points in x order, each series in its fixed colour."""
    figure = new_figure()
    axes = figure.subplots()
    colour = workload_colours(list(curves))
    for name, points in sorted(curves.items()):
        points.sort()
        axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label(name), color=colour[name])
    return figure, axes


def throughput_against_latency(sources: list[Source]) -> Figure | str:
    """Output tokens/s of all streams against the median time per output token each stream saw,
    one point per load level: how much throughput each millisecond of a user's wait buys."""
    files = [*bench_files(sources), *workload_files(sources)]
    if not files:
        return NO_BENCH
    curves: dict[str, list[tuple[float, float]]] = {}
    for _, evidence in files:
        for backend, level, summary in level_rows(evidence):
            tpot = summary.tpot_s.median
            if level.mode == CLOSED and tpot and summary.output_tok_s and not fleet_level(level):
                name = (
                    workload_series(backend, evidence, sources, level.input_tokens)
                    if evidence.config.get("workload")
                    else series_name(backend, evidence, sources)
                )
                curves.setdefault(name, []).append((tpot * 1000, summary.output_tok_s))
    if not any(len(points) > 1 for points in curves.values()):
        return "no closed-loop sweep in the bench evidence (bench --concurrency 1,4,16 draws it)"
    figure, axes = curve_figure(curves)
    axes.set_xlabel("median time per output token, each stream (ms)")
    axes.set_ylabel("output tokens/s, all streams")
    axes.set_xlim(left=0)
    axes.set_ylim(bottom=0)
    legend_below(figure)
    return figure


def goodput_against_load(sources: list[Source]) -> Figure | str:
    """The share of requests within the objectives at each load level, the share asked for as a
    line: the capacity is the most load whose point stays on or above it."""
    graded = [(p, d) for p, d in workload_files(sources) if d.config.get("slo")]
    if not graded:
        return "no bench evidence graded on objectives (bench --goodput or a --workload with them)"
    curves: dict[str, list[tuple[float, float]]] = {}
    shares = set()
    for _, evidence in graded:
        shares.add(float(evidence.config.get("slo_share") or 0.9))
        for backend, level, summary in level_rows(evidence):
            share = summary.goodput.share_met if summary.goodput else None
            if share is not None and level.mode == CLOSED and not fleet_level(level):
                name = workload_series(backend, evidence, sources, level.input_tokens)
                curves.setdefault(name, []).append((float(level.value), share * 100))
    if not curves:
        return "no level was graded on the objectives"
    values = sorted({x for points in curves.values() for x, _ in points})
    figure, axes = curve_figure(curves)
    for share, line in zip(sorted(shares), ("--", ":", "-."), strict=False):
        axes.axhline(
            share * 100, color="0.35", linestyle=line, linewidth=1, label=f"{share:.0%} of requests asked to meet them"
        )
    axes.set_xscale("log", base=2)
    axes.set_xticks(values, [f"{v:g}" for v in values])
    axes.minorticks_off()
    axes.set_xlabel("requests in flight (closed loop)")
    axes.set_ylabel("% of requests within the objectives")
    axes.set_ylim(0, 105)
    legend_below(figure)
    return figure


def capacity_against_copies(sources: list[Source]) -> Figure | str:
    """Per component, routing and input length: the capacity found at each copy count, with the
    ideal line N x capacity(1) dashed in the same colour, and the scaling efficiency beside it; a
    count not measured is named in its legend entry, never drawn as zero."""
    series = fleet_series(sources)
    if not series:
        return NO_FLEET
    if not any(len(s.measured) > 1 for s in series):
        counts = "; ".join(
            f"{s.name}: " + ", ".join(f"{p.copies} {p.missing or 'measured'}" for p in s.points) for s in series
        )
        return (
            f"capacity at one copy count only ({counts}): bench --copies 1,2,4 --find-capacity measures how it scales"
        )
    figure = new_figure(5.0)
    left, right = figure.subplots(1, 2)
    colour = workload_colours([s.name for s in series])
    counts = sorted({p.copies for s in series for p in s.points})
    handles: list[Any] = []
    values: list[float] = []
    for entry in sorted(series, key=lambda s: s.name):
        measured = entry.measured
        xs = [p.copies for p in measured]
        missing = [p for p in entry.points if p.capacity is None]
        label = entry.name + "".join(f"; {p.copies}: {p.missing.split(':')[0]}" for p in missing if p.missing)
        (line,) = left.plot(xs, [p.capacity for p in measured], marker="o", color=colour[entry.name], label=label)
        handles.append(line)
        ideal = [(p.copies, p.ideal) for p in entry.points if p.ideal is not None]
        if ideal:
            left.plot(*zip(*ideal, strict=True), linestyle="--", color=colour[entry.name], alpha=0.7)
        values += [p.capacity for p in measured if p.capacity is not None] + [v for _, v in ideal]
        kept = [p for p in measured if p.efficiency is not None]
        right.plot(
            [p.copies for p in kept], [p.efficiency * 100 for p in kept if p.efficiency is not None],
            marker="o", color=colour[entry.name],
        )  # fmt: skip
    modes = {s.mode for s in series if s.mode}
    left.set_ylabel(
        "most requests in flight within the objectives"
        if modes == {CLOSED}
        else "most requests/s within the objectives"
        if modes == {"rate"}
        else "capacity within the objectives"
    )
    right.axhline(100, color="0.35", linestyle="--", linewidth=1)
    right.set_ylabel("scaling efficiency (%)\ncapacity(N) / (N × capacity(1))")
    top = max([110.0] + [p.efficiency * 110 for s in series for p in s.points if p.efficiency])
    right.set_ylim(0, top)
    left.set_ylim(0, max(values) * 1.1)
    everywhere = {c for c in counts if all(any(p.copies == c and p.capacity is None for p in s.points) for s in series)}
    for axes in (left, right):
        axes.set_xticks(counts, [f"{c}\nnot measured" if c in everywhere else f"{c}" for c in counts])
        axes.set_xlabel("copies")
        axes.set_xlim(min(counts) - 0.5, max(counts) + 0.5)
    handles.append(Line2D([], [], color="0.35", linestyle="--", label="ideal: N × one copy's capacity"))
    legend_below(figure, handles, [h.get_label() for h in handles])
    return figure


def interval_bars(figures: list[Estimate | None]) -> tuple[list[float], list[list[float]]]:
    """Values and the error bars of their intervals (none where a figure has no interval)."""
    values = [f.value if f else math.nan for f in figures]
    below = [f.value - f.low if f and f.low is not None else 0.0 for f in figures]
    above = [f.high - f.value if f and f.high is not None else 0.0 for f in figures]
    return values, [below, above]


def goodput_by_routing(sources: list[Source]) -> Figure | str:
    """The same fleet under each routing, x the share of each prompt that is a shared prefix: good
    requests/s at the capacity found, and TTFT p50 and p95 at the heaviest load every routing
    measured, each with its 95 % interval where the requests give one."""
    compared = routing_comparison(sources)
    if isinstance(compared, str):
        return compared
    figure = new_figure(4.8)
    left, right = figure.subplots(1, 2, sharex=True)
    colour = workload_colours([p.routing for p in compared.points])
    several = len({p.backend for p in compared.points}) > 1
    shares = sorted({p.shared_share * 100 for p in compared.points})
    handles: list[Any] = []
    for (routing, backend), points in routing_groups(compared).items():
        name = f"{backend}: {routing}" if several else routing
        xs = [p.shared_share * 100 for p in points]
        values, bars = interval_bars([p.goodput for p in points])
        handles.append(left.errorbar(xs, values, yerr=bars, marker="o", capsize=4, color=colour[routing], label=name))
        for key, line in (("ttft_p50", "-"), ("ttft_p95", "--")):
            figures = [getattr(p, key) for p in points]
            ms = [Estimate(f.value * 1000, *(None if b is None else b * 1000 for b in (f.low, f.high))) if f else None
                  for f in figures]  # fmt: skip
            values, bars = interval_bars(ms)
            right.errorbar(xs, values, yerr=bars, marker="o", linestyle=line, capsize=4, color=colour[routing])
    left.set_ylabel(f"good requests/s at the capacity found\n({compared.copies} copies)")
    right.set_ylabel("time to first token (ms), same load")
    for axes in (left, right):
        axes.set_xticks(shares, [f"{v:g} %" for v in shares])
        axes.set_xlabel("shared prefix, % of each prompt")
        axes.set_ylim(0, axes.get_ylim()[1] * 1.08)  # room above the highest bar
        if len(shares) == 1:
            axes.set_xlim(shares[0] - 10, shares[0] + 10)
    handles += [
        Line2D([], [], color="0.35", linestyle="-", label="TTFT p50"),
        Line2D([], [], color="0.35", linestyle="--", label="TTFT p95"),
    ]
    legend_below(figure, handles, [h.get_label() for h in handles])
    return figure


def routing_groups(compared: RoutingComparison) -> dict[tuple[str, str], list[Any]]:
    """The points of each routing (and backend), in shared-share order."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for point in sorted(compared.points, key=lambda p: p.shared_share):
        groups.setdefault((point.routing, point.backend), []).append(point)
    return groups


# Plots as wide as the page (a timeline's rows need its width).
WIDE = ("timeline", "scale-out")
Plot = Callable[[list[Source]], "Figure | str"]
PLOTS: dict[str, tuple[str, str, Plot]] = {
    "throughput": (
        "Throughput against concurrency",
        "Output tokens per second over all requests in flight, per backend: where a curve flattens, "
        "more streams stop buying throughput.",
        throughput_against_concurrency,
    ),
    "latency": (
        "Latency percentiles",
        "Time to first token and inter-token latency at each load level (median, p90, p99): what each "
        "extra stream costs a user in waiting.",
        latency_percentiles,
    ),
    "prefill": (
        "Time to first token against prompt length",
        "Median time to first token at one stream as the prompt grows, per backend, with the prefill rate "
        "the sweep's line gives: what a long prompt costs before the first word.",
        ttft_against_input,
    ),
    "throughput-latency": (
        "Throughput against latency",
        "Output tokens per second of all streams against the time per token each stream saw, one point per "
        "load level: how much throughput each millisecond of waiting buys.",
        throughput_against_latency,
    ),
    "goodput": (
        "Goodput against load",
        "The share of requests within every objective at each load level; the grey lines are the shares asked "
        "for (named in the legend), and the capacity is the most load at or above its line.",
        goodput_against_load,
    ),
    "distribution": (
        "Latency distribution",
        "The share of requests done within each time to first token and each end-to-end latency (the "
        "empirical CDF), per backend at its lightest load: the tail a median hides.",
        latency_distribution,
    ),
    "timeline": (
        "Timeline of a run",
        "Every request of the first bench run given, in the order measured: a row per backend and load level, "
        "each request a line from when it was sent (pale to its first token) to its end; a failed one an x.",
        run_timeline,
    ),
    "copies": (
        "Capacity against copies",
        "The most load within the objectives at each copy count of an inference component (bench --copies), "
        "beside the ideal line of N times one copy's capacity (dashed), and the scaling efficiency: capacity(N) / "
        "(N × capacity(1)). A count not measured is named in the legend, never drawn as zero.",
        capacity_against_copies,
    ),
    "routing": (
        "Goodput by routing and shared share",
        "The same fleet under each routing strategy, against the share of each prompt that is a shared prefix: "
        "good requests/s at the capacity found, and time to first token (p50, p95) at the heaviest load every "
        "routing measured; bars are 95 % intervals where the requests give one.",
        goodput_by_routing,
    ),
    "scale-out": (
        "Scale-out timeline",
        "Each step in load (bench --step-load) over time: the copies in service and the requests in flight, "
        "and the TTFT p95 of each window against the objective (dashed); the dotted line is the step, the "
        "shaded span the time the objective was missed after it, until the copies caught up.",
        scale_out_timeline,
    ),
    "cost": (
        "Cost against load",
        "$ per million output tokens at each load level, by each backend's own billing model: busier is "
        "cheaper until throughput stops growing.",
        cost_against_load,
    ),
    "accuracy": (
        "Accuracy against $ per million",
        "Each backend and model at its accuracy (95 % interval) and its lowest $ per million: up and to "
        "the left is better.",
        accuracy_against_cost,
    ),
    "run-to-run": (
        "Run to run",
        "Median single-request tok/s per backend in each bench run given: how much a figure moves between runs.",
        run_to_run,
    ),
    "roofline": (
        "Roofline share",
        "The median single-request decode rate as a share of the memory-bandwidth ceiling.",
        roofline_share,
    ),
}
