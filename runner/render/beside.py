"""The survey's own tables with a user's figures beside its figures: launch to ready (up), demo 1
(counting, per tools mode), demo 2 (orchestrator), the benchmark (single requests) and cost
($ per million output tokens). Each table is made only from the evidence given; the survey's
figures come from the catalog entries the evidence recorded (catalog/backends.py `survey_*`,
sources named there), so a row served by another model (the `open` lane) shows none."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from runner.core.agent_evidence import CountingFile, CountingRun, OrchestratorFile
from runner.core.backend_entries import CatalogFacts
from runner.core.evidence import EvidenceFile
from runner.core.stats import fmt, median
from runner.costing.arithmetic import usd_per_million_output
from runner.measure.bench_file import BenchFile
from runner.render.bench import bench_summary, is_sweep
from runner.render.cost import CostFile
from runner.render.tables import add_columns
from runner.render.up import phase_line, slow_ways

# An evidence file the page is drawn from: where it was read, and the file typed.
Source = tuple[Path, EvidenceFile]
# A backend whose catalog entry no file recorded: the survey has no figure for it.
NONE = CatalogFacts()
SURVEY_RUNS = "the survey: runs of 2026-10-04/05 (repository xbill9/aws-inference-strands)"


def catalog_of(sources: list[Source]) -> dict[str, CatalogFacts]:
    """Per backend, the catalog entry an evidence file recorded (the last file wins)."""
    found: dict[str, CatalogFacts] = {}
    for _, data in sources:
        for backend in data.backends:
            if backend.catalog:
                found[backend.name] = backend.catalog
    return found


def of(sources: list[Source], command: str) -> list[EvidenceFile]:
    return [d for _, d in sources if d.command == command]


def launch_table(sources: list[Source], catalog: dict[str, CatalogFacts]) -> Table | None:
    records = [r for d in of(sources, "up") for r in d.records if isinstance(r, dict) and "backend" in r]
    if not records:
        return None
    table = Table(title="launch to ready, minutes: yours beside the survey's, and where your boot spent them")
    add_columns(
        table,
        ("backend", "outcome", "yours", "survey", "your phases s", "slow ways"),
        ("backend", "outcome", "your phases s", "slow ways"),
    )
    for record in records:
        survey = (
            record.get("survey_launch_to_ready_min") or catalog.get(record["backend"], NONE).survey_launch_to_ready_min
        )
        outcome = record["outcome"] + (f": {record['reason']}" if record.get("reason") else "")
        table.add_row(
            record["backend"],
            outcome,
            fmt(record.get("launch_to_ready_min"), 1),
            fmt(survey, 1),
            phase_line(record),
            slow_ways(record),
        )
    return table


def demo1_table(sources: list[Source], catalog: dict[str, CatalogFacts]) -> Table | None:
    runs = of(sources, "counting")
    if not runs:
        return None
    table = Table(title="demo 1 (counting): correct answers, yours beside the survey's (20 runs each)")
    add_columns(table, ("backend", "tools", "yours correct", "right filter", "survey correct"), ("backend", "tools"))
    for data in runs:
        assert isinstance(data, CountingFile)
        mode = data.config.get("tools", "filter")
        grouped: dict[str, list[CountingRun]] = {}
        for record in data.records:
            grouped.setdefault(record.backend, []).append(record)
        for name, records in grouped.items():
            n = len(records)
            survey = {m: (c, r) for m, c, r in catalog.get(name, NONE).survey_demo1}
            theirs = survey.get(mode)
            table.add_row(
                name,
                mode,
                f"{sum(1 for r in records if r.correct)}/{n}",
                f"{sum(1 for r in records if r.right_filter)}/{n}" if mode == "filter" else "-",
                f"{theirs[0]}/{theirs[1]}" if theirs else "not run",
            )
    return table


def demo2_table(sources: list[Source], catalog: dict[str, CatalogFacts]) -> Table | None:
    runs = [r for d in of(sources, "orchestrator") if isinstance(d, OrchestratorFile) for r in d.records]
    if not runs:
        return None
    seconds: dict[str, list[float]] = {}
    answers: dict[str, list[str]] = {}
    for run in runs:
        for row in run.table:
            if row.seconds is not None:
                seconds.setdefault(row.backend, []).append(row.seconds)
            answers.setdefault(row.backend, []).append(str(row.answer or row.error or "-"))
    table = Table(title=f"demo 2 (orchestrator): median seconds over {len(runs)} run(s), yours beside the survey's")
    add_columns(table, ("backend", "answers", "yours s", "survey s"), ("backend", "answers"))
    for name in sorted(answers, key=lambda b: median(seconds.get(b, [])) or float("inf")):
        table.add_row(
            name,
            ", ".join(sorted(set(answers[name]))),
            fmt(median(seconds.get(name, []))),
            fmt(catalog.get(name, NONE).survey_demo2_median_s),
        )
    return table


def bench_table(sources: list[Source], catalog: dict[str, CatalogFacts]) -> Table | None:
    singles = [d for d in of(sources, "bench") if isinstance(d, BenchFile) and not is_sweep(d)]
    if not singles:
        return None
    table = Table(title="benchmark, one request at a time: median tok/s, yours beside the survey's two runs")
    add_columns(table, ("backend", "ok/runs", "yours tok/s", "survey tok/s"), ("backend",))
    for data in singles:
        for name, row in bench_summary(data).items():
            survey = catalog.get(name, NONE).survey_tok_s
            table.add_row(
                name,
                f"{row.ok}/{row.runs}",
                fmt(row.median_tok_s, 1),
                " / ".join(f"{v:g}" for v in survey) or "-",
            )
    return table


def survey_cost(entry: CatalogFacts) -> float | None:
    """The survey's $ per million output tokens: its price over its run-2 tok/s (Bedrock: its
    output-token price)."""
    if entry.survey_usd_per_million_output is not None:
        return entry.survey_usd_per_million_output
    tok_s = entry.survey_tok_s
    price = entry.survey_usd_per_hour
    if not tok_s or not price:
        return None
    return usd_per_million_output(price, tok_s[-1])


def cost_table(sources: list[Source], catalog: dict[str, CatalogFacts]) -> Table | None:
    records = [r for _, data in sources if isinstance(data, CostFile) for r in data.records if r.usd_per_million_output]
    if not records:
        return None
    table = Table(title="$ per million output tokens, one request at a time: yours beside the survey's")
    add_columns(
        table, ("backend", "load", "yours $/M", "survey $/M", "survey's basis"), ("backend", "load", "survey's basis")
    )
    seen: set[tuple[str, str]] = set()
    for row in records:
        key = (row.backend, str(row.level or "-"))
        if key in seen:
            continue
        seen.add(key)
        entry = catalog.get(row.backend, NONE)
        theirs = survey_cost(entry)
        basis = (
            "its output price"
            if entry.survey_usd_per_million_output is not None
            else f"${entry.survey_usd_per_hour}/h over {entry.survey_tok_s[-1]:g} tok/s"
            if theirs is not None
            else "-"
        )
        table.add_row(row.backend, key[1], fmt(row.usd_per_million_output, 2), fmt(theirs, 2), basis)
    return table


def beside_tables(sources: list[Source]) -> list[Table]:
    """The tables, for a survey's report (its own evidence among the sources); none otherwise:
    a plain bench or cost page keeps the survey's tok/s in its own table."""
    if not of(sources, "survey"):
        return []
    catalog = catalog_of(sources)
    made = [make(sources, catalog) for make in (launch_table, demo1_table, demo2_table, bench_table, cost_table)]
    return [table for table in made if table is not None]
