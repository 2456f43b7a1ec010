"""The report's plots, drawn with matplotlib from evidence (never from typed figures).

Each function takes evidence files and returns a figure, or None when the files hold nothing it
can draw (a single request level has no curve against concurrency).
"""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display, no GUI toolkit

from matplotlib.figure import Figure

from catalog.prices import offline_price
from runner.core.stats import median
from runner.measure.levels import level_groups, level_summary
from runner.measure.load import CLOSED

Evidence = dict[str, Any]


def bench_files(files: list[Evidence]) -> list[Evidence]:
    return [f for f in files if f.get("command") == "bench"]


def level_rows(evidence: Evidence) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(backend, level, summary) for every level of every backend, in the order measured."""
    rows = []
    for (backend, _label), records in level_groups(evidence).items():
        level = records[0].get("level") or {"mode": CLOSED, "value": 1, "label": "1 at a time"}
        rows.append((backend, level, level_summary(records)))
    return rows


def series_name(backend: str, evidence: Evidence, files: list[Evidence]) -> str:
    """The backend, and which run it was when several bench files are drawn together."""
    return backend if len(bench_files(files)) < 2 else f"{backend} ({evidence.get('started_at', '')[:19]})"


def line_chart(curves: dict[str, list[tuple[Any, float]]], xlabel: str, ylabel: str) -> Figure:
    """One line per series, points in the order given."""
    figure = Figure(figsize=(7, 4))
    axes = figure.subplots()
    for name, points in sorted(curves.items()):
        axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    return figure


def throughput_against_concurrency(files: list[Evidence]) -> Figure | None:
    curves: dict[str, list[tuple[float, float]]] = {}
    for evidence in bench_files(files):
        for backend, level, summary in level_rows(evidence):
            if level["mode"] == CLOSED and summary["output_tok_s"]:
                name = series_name(backend, evidence, files)
                curves.setdefault(name, []).append((level["value"], summary["output_tok_s"]))
    if not any(len(points) > 1 for points in curves.values()):
        return None
    for points in curves.values():
        points.sort()
    figure = line_chart(curves, "requests in flight (closed loop)", "output tokens/s, all requests")
    figure.axes[0].set_xscale("log", base=2)
    return figure


def latency_percentiles(files: list[Evidence]) -> Figure | None:
    rows = [
        (f"{series_name(b, e, files)} {lv['label']}", s)
        for e in bench_files(files)
        for b, lv, s in level_rows(e)
        if s["completed"]
    ]
    if not rows:
        return None
    figure = Figure(figsize=(8, 1.2 + 0.5 * len(rows)))
    left, right = figure.subplots(1, 2, sharey=True)
    names = [name for name, _ in rows]
    positions = range(len(rows))
    for axes, key, title in (
        (left, "ttft_s", "time to first token (ms)"),
        (right, "itl_s", "inter-token latency per token (ms)"),
    ):
        for offset, (quantile, colour) in enumerate((("median", "#4c72b0"), ("p90", "#dd8452"), ("p99", "#c44e52"))):
            values = [(summary[key][quantile] or 0) * 1000 for _, summary in rows]
            axes.barh([p + (offset - 1) * 0.27 for p in positions], values, height=0.27, color=colour, label=quantile)
        axes.set_title(title)
        axes.grid(True, axis="x", alpha=0.3)
    figure.suptitle("Latency percentiles")
    left.set_yticks(list(positions), names)
    left.invert_yaxis()
    right.legend(loc="lower right")
    figure.tight_layout()
    return figure


def cost_against_load(files: list[Evidence]) -> Figure | None:
    """$ per million output tokens at each level, at the dated offline prices."""
    from runner.cloud.pricing import price_request, usd_per_million_output

    curves: dict[str, list[tuple[str, float]]] = {}
    for evidence in bench_files(files):
        backends = {b["name"]: b for b in evidence.get("backends", [])}
        for backend, level, summary in level_rows(evidence):
            request = price_request(backends.get(backend, {}))
            price = offline_price(request.service, request.item, request.region) if request else None
            if not price or not price.usd_per_hour or not summary["output_tok_s"]:
                continue
            curves.setdefault(backend, []).append(
                (level["label"], usd_per_million_output(price.usd_per_hour, summary["output_tok_s"]))
            )
    if not curves:
        return None
    figure = line_chart(curves, "load level", "$ per million output tokens (offline prices)")
    figure.axes[0].set_yscale("log")
    return figure


def run_to_run(files: list[Evidence]) -> Figure | None:
    """Median single-request tok/s per backend in each bench file, in the order given."""
    runs = []
    for evidence in bench_files(files):
        medians = {}
        for (backend, label), records in level_groups(evidence).items():
            if label == "1 at a time":
                medians[backend] = median(r.get("tokens_per_s") for r in records if r.get("ok"))
        runs.append((evidence.get("started_at", "")[:16], medians))
    if len(runs) < 2:
        return None
    backends = sorted({b for _, medians in runs for b in medians})
    figure = Figure(figsize=(7, 4))
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
    axes.set_title("Run to run")
    axes.grid(True, axis="y", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    return figure


def roofline_share(files: list[Evidence]) -> Figure | None:
    """Median single-request decode rate as a share of bandwidth / bytes read per token."""
    from runner.measure.levels import roofline

    bars = {
        series_name(name, evidence, files): figures["share"]
        for evidence in bench_files(files)
        for name, figures in roofline(evidence).items()
        if figures["share"] is not None
    }
    if not bars:
        return None
    figure = Figure(figsize=(7, 1.5 + 0.4 * len(bars)))
    axes = figure.subplots()
    names = sorted(bars)
    axes.barh(names, [bars[n] * 100 for n in names], color="#55a868")
    axes.axvline(100, color="black", linewidth=1)
    axes.set_xlabel("% of the decode ceiling (bandwidth / weight bytes per token)")
    axes.set_title("Roofline share")
    axes.grid(True, axis="x", alpha=0.3)
    figure.tight_layout()
    return figure


PLOTS = {
    "throughput": ("Throughput against concurrency", throughput_against_concurrency),
    "latency": ("Latency percentiles", latency_percentiles),
    "cost": ("Cost against load", cost_against_load),
    "run-to-run": ("Run to run", run_to_run),
    "roofline": ("Roofline share", roofline_share),
}
