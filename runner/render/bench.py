"""The bench tables: one request at a time (medians, the survey's figures, same-text and roofline
columns), or per load level of a sweep.

Cold starts (the first request after idle on a path that scales from zero, `cold_start: true`: the
warm-up there, and any timed request an async endpoint took from zero) are summarised apart, in a
`cold start s` column and a note with their phases; the warm medians never include them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from catalog.serving import serving
from runner.core.readings import AcceleratorReadings, LevelReadings, ServerMetrics
from runner.core.records import SINGLE, RequestRecord
from runner.core.stats import change_percent, fmt, fmt_range, median, value_range
from runner.figures.capacity import Tried
from runner.figures.latency import Distribution
from runner.figures.levels import (
    LevelSummary,
    TokenFigures,
    agent_levels,
    level_groups,
    level_summary,
    prefill_fit,
    roofline,
)
from runner.figures.scale_out import catch_up, from_zero_p50, missed
from runner.measure.bench_file import BenchFile
from runner.measure.benchmark import COLD_ASSUMED
from runner.render.run_blocks import run_blocks
from runner.render.tables import SummaryTable, accuracy_text, add_columns, models
from runner.render.vendor import vendor_tables
from runner.workloads.slo import Goodput


def cold_records(evidence: BenchFile) -> dict[str, list[RequestRecord]]:
    """Per backend, its cold starts: warm-ups and timed requests marked `cold_start`."""
    grouped: dict[str, list[RequestRecord]] = defaultdict(list)
    for record in [*evidence.warm_up, *evidence.records]:
        if isinstance(record, RequestRecord) and record.cold_start:
            grouped[record.backend].append(record)
    return grouped


def work_tok_s(record: RequestRecord) -> float | None:
    """Output tokens over the work after an instance existed (async phases), else None."""
    work = (record.phases or {}).get("work_s")
    if not record.ok or not record.output_tokens or not work:
        return None
    return record.output_tokens / work


@dataclass(frozen=True)
class ColdSummary:
    """A backend's cold starts, apart from its warm figures: how many and how many answered,
    their median, the median of each async phase, the first error, and whether the path only
    let them be assumed cold."""

    count: int
    ok: int
    median_s: float | None
    median_leave_zero_s: float | None
    median_work_s: float | None
    median_work_tok_s: float | None
    first_error: str | None
    assumed: bool


def cold_summary(records: list[RequestRecord]) -> ColdSummary:
    ok = [r for r in records if r.ok]
    phases = [r.phases or {} for r in ok]
    return ColdSummary(
        count=len(records),
        ok=len(ok),
        median_s=median(r.e2e_s for r in ok),
        median_leave_zero_s=median(p.get("leave_zero_s") for p in phases),
        median_work_s=median(p.get("work_s") for p in phases if "leave_zero_s" in p),
        median_work_tok_s=median(work_tok_s(r) for r in ok if "leave_zero_s" in (r.phases or {})),
        first_error=next((r.error for r in records if r.error), None),
        assumed=any((r.phases or {}).get(COLD_ASSUMED) for r in records),
    )


def cold_note(cold: ColdSummary) -> str:
    """One line on a backend's cold starts, apart from its warm figures."""
    if not cold.ok:
        return f"cold start failed: {cold.first_error}"
    parts = [f"{cold.count} cold start{'s' if cold.count > 1 else ''}, timed apart"]
    if cold.median_leave_zero_s is not None:
        parts.append(f"leave zero {fmt(cold.median_leave_zero_s, 1)} s")
    if cold.median_work_s is not None:
        rate = f", {fmt(cold.median_work_tok_s, 1)} tok/s of the work" if cold.median_work_tok_s else ""
        parts.append(f"work {fmt(cold.median_work_s, 2)} s{rate}")
    if cold.assumed:
        parts.append("assumed cold: the first request of the run (the path does not say whether it found zero)")
    return "; ".join(parts)


@dataclass(frozen=True)
class BenchRow:
    """One backend's figures in the one-at-a-time table, computed from its raw records (cold
    starts apart)."""

    runs: int
    ok: int
    errors: int
    median_s: float | None
    median_ttft_s: float | None
    median_tok_s: float | None
    tok_s_range: tuple[float, float] | None
    token_range: tuple[float, float] | None
    distinct_completions: int
    token_sources: list[str]
    median_server_tok_s: float | None
    median_overhead_s: float | None
    new_connections: int
    stale_retries: int
    first_error: str | None
    not_streamed: bool
    cold: ColdSummary | None
    measured_by: str | None


def bench_summary(evidence: BenchFile) -> dict[str, BenchRow]:
    """Per backend: the figures the bench table shows, computed from the raw records."""
    grouped: dict[str, list[RequestRecord]] = defaultdict(list)
    kinds = {}
    for backend in evidence.backends:
        grouped[backend.name] = []
        kinds[backend.name] = backend.kind
    for record in evidence.records:
        if not record.cold_start:
            grouped[record.backend].append(record)
    colds = cold_records(evidence)
    summary = {}
    for name, records in grouped.items():
        ok = [r for r in records if r.ok]
        rates = [r.tokens_per_s for r in ok]
        tokens = [r.output_tokens for r in ok]
        server_rates = [(r.server_timings or {}).get("predicted_per_second") for r in ok]
        summary[name] = BenchRow(
            runs=len(records),
            ok=len(ok),
            errors=len(records) - len(ok),
            median_s=median(r.e2e_s for r in ok),
            median_ttft_s=median(r.ttft_s for r in ok),
            median_tok_s=median(rates),
            tok_s_range=value_range(rates),
            token_range=value_range(tokens),
            distinct_completions=len({r.text for r in ok}),
            token_sources=sorted({r.token_source for r in ok if r.token_source}),
            median_server_tok_s=median(server_rates),
            median_overhead_s=median(r.client_overhead_s for r in ok),
            new_connections=sum(1 for r in records if r.new_connection),
            stale_retries=sum(1 for r in records if r.stale_connection_retry),
            first_error=next((r.error for r in records if r.error), None),
            not_streamed=bool(ok) and all(r.ttft_s is None for r in ok),
            cold=cold_summary(colds[name]) if colds.get(name) else None,
            measured_by=serving(kinds.get(name)).measured_by,
        )
    return summary


def bench_table(evidence: BenchFile, baseline: BenchFile | None = None) -> Table:
    config = evidence.config
    table = SummaryTable(title=f"bench: {config.get('prompt', '')!r}, {config.get('max_tokens')} tokens max")
    summary = bench_summary(evidence)
    server_figures = any(row.median_server_tok_s is not None for row in summary.values())
    columns = [
        "backend",
        "model",
        "ok/runs",
        "median s",
        "median TTFT s",
        "median tok/s",
        "survey tok/s",
        "tok/s range",
        "tokens",
        "distinct",
    ]
    if server_figures:
        columns += ["server tok/s", "client overhead ms"]
    cold_column = any(row.cold for row in summary.values())
    if cold_column:
        columns.append("cold start s")
    accuracy = evidence.accuracy or {}
    if accuracy:
        columns.append("accuracy")
    add_columns(table, columns, left=("backend", "model"))
    if baseline is not None:
        table.add_column("tok/s change", justify="right")
    ceilings = roofline(evidence.records, evidence.backends)
    if ceilings:
        table.add_column("decode ceiling tok/s", justify="right")
        table.add_column("share", justify="right")
    table.add_column("notes")
    old = bench_summary(baseline) if baseline else {}
    survey = survey_figures(evidence)
    served = models(evidence)

    notes_of = single_notes(evidence, summary)
    for name, row in summary.items():
        notes = notes_of[name]
        cells = [
            name,
            escape(served.get(name, "-")),
            f"{row.ok}/{row.runs}",
            fmt(row.median_s),
            fmt(row.median_ttft_s),
            fmt(row.median_tok_s, 1),
            " / ".join(f"{v:g}" for v in survey.get(name, ())) or "-",
            fmt_range(row.tok_s_range),
            fmt_range(row.token_range, 0),
            str(row.distinct_completions) if row.ok else "-",
        ]
        if server_figures:
            overhead = row.median_overhead_s
            cells += [fmt(row.median_server_tok_s, 1), fmt(overhead * 1000 if overhead is not None else None, 1)]
        if cold_column:
            cells.append(fmt(row.cold.median_s) if row.cold else "-")
        if accuracy:
            cells.append(accuracy_text(accuracy.get(name)))
        if baseline is not None:
            earlier = old.get(name)
            cells.append(change_percent(earlier.median_tok_s if earlier else None, row.median_tok_s))
        if ceilings:
            figures = ceilings.get(name)
            share = figures.share if figures else None
            cells += [fmt(figures.ceiling_tok_s if figures else None, 1), f"{share:.0%}" if share is not None else "-"]
        table.add_row(*cells, "; ".join(notes))
    return table


def single_notes(evidence: BenchFile, summary: dict[str, BenchRow]) -> dict[str, list[str]]:
    """Per backend of one-at-a-time evidence, what its figures need said beside them."""
    same = same_text(evidence)
    # bench --in-region: each server's row through the tunnel and its row on its own host say so.
    paths = {b.name: b.path_note for b in evidence.backends}
    limit = time_limit_notes(evidence)
    found = {}
    for name, row in summary.items():
        notes = [paths[name]] if paths.get(name) else []
        if row.measured_by:
            notes.append(f"measured by python -m runner.{row.measured_by}")
        if row.cold:
            notes.append(cold_note(row.cold))
        if row.not_streamed:
            notes.append("whole answers (not streamed): no time to first token")
        if same.get(name):
            notes.append(f"same text as {', '.join(same[name])}")
        if "client-chunks" in row.token_sources:
            notes.append("tokens counted by client (no server usage)")
        if row.new_connections:
            retried = f", {row.stale_retries} resent after the server closed it" if row.stale_retries else ""
            notes.append(f"new connection on {row.new_connections} of {row.runs} timed requests{retried}")
        notes += limit.get((name, SINGLE), [])
        if row.first_error:
            notes.append(row.first_error)
        found[name] = notes
    return found


def time_limit_notes(evidence: BenchFile) -> dict[tuple[str, str], list[str]]:
    """Per backend and level ended by `--level-seconds` before it sent all it planned: one note."""
    seconds = evidence.config.get("level_seconds")
    if not seconds:
        return {}
    found = {}
    for (backend, label), records in level_groups(evidence.records).items():
        planned = records[0].level.requests if records and records[0].level else None
        sent = level_summary(records).units
        if planned and sent < planned:
            found[(backend, label)] = [
                f"the {seconds:g} s time limit (--level-seconds) ended it: {sent} of {planned} sent"
            ]
    return found


def survey_figures(evidence: BenchFile) -> dict[str, tuple[float, ...]]:
    """Per backend, the survey's published single-request tok/s (catalog, with its source)."""
    return {b.name: tuple(b.spec.survey_tok_s) for b in evidence.backends}


def same_text(evidence: BenchFile) -> dict[str, list[str]]:
    """Backends whose completions were word for word the same set (the survey found g6 = SageMaker,
    one model and engine on two services, and inf2 = trn1, one image on two chips)."""
    texts: dict[str, frozenset[str]] = {}
    for record in evidence.records:
        if record.ok:
            texts[record.backend] = texts.get(record.backend, frozenset()) | {" ".join(record.text.split())}
    return {
        name: sorted(other for other, theirs in texts.items() if other != name and theirs == mine)
        for name, mine in texts.items()
    }


def is_sweep(evidence: BenchFile) -> bool:
    return bool(evidence.config.get("levels"))


def sweep_table(evidence: BenchFile) -> Table:
    """Per backend and level: counts, throughputs, and latency percentiles in milliseconds."""
    config = evidence.config
    table = SummaryTable(title=f"bench sweep: {config.get('prompts')} prompt(s), seed {config.get('seed')}")
    columns = [
        "backend",
        "model",
        "load",
        "ok/failed",
        "req/s",
        "out tok/s",
        "TTFT ms p50/p90/p99",
        "ITL ms p50/p90/p99",
        "TPOT ms p50",
        "e2e s p50/p99",
        "notes",
    ]
    add_columns(table, columns, left=("backend", "model", "load", "notes"))
    served = models(evidence)
    notes_of = sweep_notes(evidence)
    limits = client_limits(evidence)
    for (backend, label), records in level_groups(evidence.records).items():
        # Cold starts never enter a level's figures: they are one note, on the backend's first row.
        row = level_summary([r for r in records if not r.cold_start])
        notes = notes_of[(backend, label)]
        table.add_row(
            backend,
            escape(served.get(backend, "-")),
            load_cell(label, limits.get((backend, label))),
            f"{row.completed}/{row.failed}",
            fmt(row.request_throughput, 2),
            fmt(row.output_tok_s, 1),
            ms_triple(row.ttft_s),
            ms_triple(row.itl_s),
            fmt(_ms(row.tpot_s.median), 1),
            f"{fmt(row.e2e_s.median, 2)}/{fmt(row.e2e_s.p99, 2)}",
            "; ".join(notes),
        )
    return table


def sweep_notes(evidence: BenchFile) -> dict[tuple[str, str], list[str]]:
    """Per backend and level of a sweep, what its figures need said beside them (cold starts once,
    on the backend's first level)."""
    colds = cold_records(evidence)
    limit = time_limit_notes(evidence)
    limits = client_limits(evidence)
    noted: set[str] = set()
    found = {}
    for (backend, label), records in level_groups(evidence.records).items():
        row = level_summary([r for r in records if not r.cold_start])
        notes = client_notes(limits.get((backend, label)), records)
        if colds.get(backend) and backend not in noted:
            noted.add(backend)
            cold = cold_summary(colds[backend])
            notes.append(cold_note(cold) + (f" ({fmt(cold.median_s, 2)} s)" if cold.median_s is not None else ""))
        if row.itl_method and row.itl_method != ["server running count"]:
            notes.append("ITL: " + "; ".join(row.itl_method))
        if row.max_send_lag_s is not None and row.max_send_lag_s > 0.05:
            notes.append(f"sends up to {row.max_send_lag_s * 1000:.0f} ms late")
        notes += limit.get((backend, label), [])
        if row.first_error:
            notes.append(row.first_error)
        found[(backend, label)] = notes
    return found


# How a level the client could not keep up with is marked in its load cell.
CLIENT_MARK = " (client-limited)"


def client_limits(evidence: BenchFile) -> dict[tuple[str, str], str]:
    """Per backend and level, why the client, not the server, may have set its figures (only the
    levels where a client saturated: runner/timing/client_load.py)."""
    return {key: read.client_limit for key, read in readings_by_level(evidence).items() if read.client_limit}


def load_cell(label: str, client_limit: str | None) -> str:
    return label + (CLIENT_MARK if client_limit else "")


def client_notes(client_limit: str | None, records: list[RequestRecord]) -> list[str]:
    """A level's notes on its clients: why it is not the server's figure, and how many client
    processes sent it (`--clients K`)."""
    notes = [f"not the server's figure: {client_limit}"] if client_limit else []
    clients = {r.client for r in records if r.client is not None}
    if clients:
        notes.append(f"sent by {len(clients)} client processes, one merged distribution")
    return notes


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1000


def ms_triple(figures: Distribution) -> str:
    return "/".join(fmt(_ms(value), 1) for value in (figures.median, figures.p90, figures.p99))


def is_workload(evidence: BenchFile) -> bool:
    return bool(evidence.config.get("workload"))


# Turns whose prompt the input cell lists; more are shown as the first few, "..." and the last.
TURNS_SHOWN = 5


def tokens_cell(figures: TokenFigures, side: str) -> str:
    if side == "input":
        target, counted, missed = figures.input_target, figures.input_counted, figures.input_miss
    else:
        target, counted, missed = figures.output_target, figures.output_counted, figures.output_miss
    if side == "input" and figures.input_by_turn:
        # A conversation's context grows turn by turn: each turn's prompt, not the first's alone.
        turns = [f"{v:.0f}" for v in figures.input_by_turn]
        if len(turns) > TURNS_SHOWN:
            turns = [*turns[: TURNS_SHOWN - 2], "...", turns[-1]]
        lead = f"{target:.0f} → " if target is not None else ""
        return f"{lead}turns {', '.join(turns)}" + (f" ({len(figures.input_by_turn)})" if "..." in turns else "")
    if target is None:
        return fmt(counted, 0) if counted is not None else "-"
    text = f"{target:.0f} → {fmt(counted, 0)}"
    return text + " (!)" if missed is not None else text


def server_cell(metrics: ServerMetrics | None, accelerator: AcceleratorReadings | None = None) -> str:
    """Requests running and waiting at most, KV cache use at most, prefix-cache hits; on a
    server's own host, how busy its accelerator was during the level."""
    parts = []
    if metrics and metrics.samples:
        parts = [f"run {fmt(metrics.running_max, 0)}", f"wait {fmt(metrics.waiting_max, 0)}"]
        if metrics.kv_cache_usage_max is not None:
            parts.append(f"KV {metrics.kv_cache_usage_max:.0%}")
        if metrics.prefix_cache_hit_rate is not None:
            parts.append(f"prefix hits {metrics.prefix_cache_hit_rate:.0%}")
    if accelerator and accelerator.utilization_pct_mean is not None:
        parts.append(f"{accelerator.unit} {accelerator.utilization_pct_mean:.0f}% mean")
    return ", ".join(parts) or "-"


def workload_notes(row: LevelSummary, metrics: ServerMetrics | None, asked_output: bool) -> list[str]:
    notes = []
    figures = row.tokens
    if figures.input_miss is not None:
        notes.append(f"prompts counted {figures.input_miss:+.0%} off their target (more than 5 %)")
    if asked_output and not figures.forced:
        notes.append("the model chose the output length (this path cannot force it)")
    if figures.force_ignored:
        notes.append(
            f"told to ignore the end of the answer, {figures.force_ignored} ended early: the server ignores it"
        )
    if metrics and metrics.queueing:
        notes.append("queueing at the server: requests waited there (more load buys latency, not throughput)")
    if metrics and metrics.problem:
        notes.append(metrics.problem)
    if row.goodput and row.goodput.unjudged:
        notes.append(f"objectives not judged: {row.goodput.unjudged}")
    if row.first_error:
        notes.append(row.first_error)
    return notes


def goodput_cell(goodput: Goodput | None) -> str:
    if not goodput or goodput.share_met is None:
        return "-"
    return f"{goodput.share_met:.0%}, {fmt(goodput.goodput_rps, 2)}/s"


def workload_table(evidence: BenchFile) -> Table:
    """Per backend and level of a workload: tokens beside their targets, latency, throughput, the
    prefill rate, goodput within the objectives, and what the server's metrics said."""
    config = evidence.config
    workload = config["workload"]
    slo = (config.get("slo") or {}).get("text")
    title = f"bench: workload {workload.get('name')}" + (f", objectives {slo}" if slo else "")
    table = SummaryTable(title=title)
    columns = ["backend", "model", "load", "ok/failed", "in tok", "out tok", "TTFT ms p50/p90/p99", "TPOT ms p50",
               "e2e s p50/p99", "req/s", "out tok/s", "prefill tok/s", "goodput", "server", "notes"]  # fmt: skip
    add_columns(table, columns, left=("backend", "model", "load", "server", "notes"))
    served = models(evidence)
    readings = readings_by_level(evidence)
    slo_config = config.get("slo")
    asked_output = workload.get("output_tokens") is not None
    notes_of = workload_level_notes(evidence)
    for (backend, label), records in level_groups(evidence.records).items():
        row = level_summary([r for r in records if not r.cold_start], slo_config)
        read = readings.get((backend, label))
        metrics, accelerator = (read.server_metrics, read.accelerator) if read else (None, None)
        client_limit = read.client_limit if read else None
        table.add_row(
            backend,
            escape(served.get(backend, "-")),
            load_cell(label, client_limit),
            f"{row.completed}/{row.failed}",
            tokens_cell(row.tokens, "input"),
            tokens_cell(row.tokens, "output") + (" (chosen)" if asked_output and not row.tokens.forced else ""),
            ms_triple(row.ttft_s),
            fmt(_ms(row.tpot_s.median), 1),
            f"{fmt(row.e2e_s.median, 2)}/{fmt(row.e2e_s.p99, 2)}",
            fmt(row.request_throughput, 2),
            fmt(row.output_tok_s, 1),
            fmt(prefill_shown(evidence, records, row), 0),
            "not the server's" if client_limit else goodput_cell(row.goodput),
            server_cell(metrics, accelerator),
            "; ".join(notes_of[(backend, label)]),
        )
    return table


def prefill_shown(evidence: BenchFile, records: list[RequestRecord], row: LevelSummary) -> float | None:
    """The level's prefill rate where it means one: input over TTFT only for one prompt at a time
    computed whole (no shared prefix or earlier turns in the cache, no queue)."""
    workload = evidence.config["workload"]
    plain = not workload.get("prefix_tokens") and (workload.get("turns") or 1) == 1
    level = records[0].level if records else None
    one_at_a_time = level is None or (level.mode == "concurrency" and level.value == 1)
    return row.prefill_tok_s if plain and one_at_a_time else None


def readings_by_level(evidence: BenchFile) -> dict[tuple[str, str], LevelReadings]:
    """What was read of each server, by backend and level label."""
    return {(r.backend, r.label): r for r in evidence.levels or []}


def workload_level_notes(evidence: BenchFile) -> dict[tuple[str, str], list[str]]:
    """Per backend and level of a workload, what its figures need said beside them."""
    config = evidence.config
    asked_output = config["workload"].get("output_tokens") is not None
    readings = readings_by_level(evidence)
    limit = time_limit_notes(evidence)
    found = {}
    for (backend, label), records in level_groups(evidence.records).items():
        row = level_summary([r for r in records if not r.cold_start], config.get("slo"))
        read = readings.get((backend, label))
        notes = workload_notes(row, read.server_metrics if read else None, asked_output)
        clients = client_notes(read.client_limit if read else None, records)
        found[(backend, label)] = clients + limit.get((backend, label), []) + notes
    return found


def capacity_table(evidence: BenchFile) -> Table | None:
    """Per backend (and input length): the most load within the objectives, and its figures."""
    searches = evidence.capacity
    if not searches:
        return None
    config = evidence.config
    share = config.get("slo_share")
    table = Table(
        title=f"capacity: the most load at which {share:.0%} of requests meet {(config.get('slo') or {}).get('text')}"
    )
    columns = [
        "backend",
        "input tokens",
        "capacity",
        "met",
        "out tok/s",
        "goodput req/s",
        "levels tried",
        "how it ended",
    ]
    add_columns(table, columns, left=("backend", "how it ended"))
    for search in searches:
        best = search.at_capacity
        share_met = best.share_met if best else None
        unit = " at a time" if search.mode == "concurrency" else "/s"
        table.add_row(
            search.backend,
            str(search.input_tokens or "-"),
            f"{search.capacity:g}{unit}" if search.capacity is not None else "none",
            f"{share_met:.0%}" if share_met is not None else "-",
            fmt(best.output_tok_s if best else None, 1),
            fmt(best.goodput_rps if best else None, 2),
            ", ".join(f"{t.value:g}{tried_mark(t)}" for t in search.tried),
            search.stopped,
        )
    return table


def fleet_table(evidence: BenchFile) -> Table | None:
    """Per inference component (`--copies`) and copy count: the capacity found with that many copies,
    the ideal line N x capacity(1) and the scaling efficiency, the routing and the shared share it
    was measured at; a count not measured says why."""
    if not evidence.fleet:
        return None
    config = evidence.config
    table = Table(title=f"fleet: capacity by copy count at {(config.get('slo') or {}).get('text')}")
    columns = ["backend", "routing", "shared", "input tokens", "copies", "capacity", "ideal", "efficiency",
               "levels tried", "how it ended"]  # fmt: skip
    add_columns(table, columns, left=("backend", "routing", "how it ended"))
    for fleet in evidence.fleet:
        for count in fleet.counts:
            search = count.capacity
            unit = (" at a time" if search.mode == "concurrency" else "/s") if search else ""
            table.add_row(
                fleet.backend,
                fleet.routing,
                f"{count.shared_share:.0%}",
                str(count.input_tokens or "-"),
                str(count.copies),
                f"{count.found:g}{unit}" if count.found is not None else ("not measured" if count.marked else "none"),
                fmt(count.ideal, 1),
                fmt(count.efficiency, 2),
                ", ".join(f"{t.value:g}{tried_mark(t)}" for t in search.tried) if search else "-",
                escape(count.marked or (search.stopped if search else "")),
            )
    return table


def tried_mark(tried: Tried) -> str:
    """A level the search tried: met, missed, or the client's limit (no figure of the server's)."""
    return " (client-limited)" if tried.client_limit else "✓" if tried.met else "✗"


def workload_lines(evidence: BenchFile) -> list[str]:
    """How each backend's prompts were sized, where its metrics came from, and (with
    `--in-region`) which path each row measured."""
    lines = []
    paths = {b.name: b.path_note for b in evidence.backends}
    for name, info in (evidence.workload_backends or {}).items():
        parts = [paths[name]] if paths.get(name) else []
        if info.token_count:
            parts.append(f"prompt lengths from {info.token_count}")
        if info.metrics:
            parts.append(f"server metrics from {info.metrics}")
        if parts:
            lines.append(f"{name}: " + "; ".join(parts))
    for name, fit in prefill_fit(evidence.records).items():
        lines.append(
            f"{name}: prefill {fit.prefill_tok_s:,.0f} tok/s from the sweep, one at a time "
            f"(TTFT ≈ {fit.fixed_s * 1000:.0f} ms + prompt tokens / {fit.prefill_tok_s:,.0f}; "
            f"{fit.lengths} lengths, {fit.from_tokens:.0f} to {fit.to_tokens:.0f} tokens)"
        )
    for fleet in evidence.fleet or []:
        if fleet.restored:
            lines.append(f"{fleet.component}: {fleet.restored}")
    source = (evidence.config.get("workload") or {}).get("source")
    if source:
        lines.append(f"workload: {source}")
    return lines


def agent_table(evidence: BenchFile) -> Table:
    """Agent traffic per backend and number of sessions (runner/agent/traffic.py)."""
    table = Table(title="bench: agent traffic (the counting demo and the tool-use family, in turn)")
    columns = ["backend", "model", "sessions", "passed/tasks", "task s p50/p95", "model calls/task",
               "tool calls/task", "tool calls right", "tasks/s", "first error"]  # fmt: skip
    add_columns(table, columns, left=("backend", "model", "first error"))
    served = models(evidence)
    for row in agent_levels(evidence.tasks or []):
        table.add_row(
            row.backend,
            escape(served.get(row.backend, "-")),
            str(row.sessions),
            f"{row.passed}/{row.tasks}",
            f"{fmt(row.task_s_median, 2)}/{fmt(row.task_s_p95, 2)}",
            fmt(row.model_calls_per_task, 1),
            fmt(row.tool_calls_per_task, 1),
            f"{row.tool_calls_right}/{row.tasks}",
            fmt(row.tasks_per_s, 2),
            escape((row.first_error or "")[:80]),
        )
    return table


def from_zero_table(evidence: BenchFile) -> Table:
    """Per component: the time from zero copies to the first token over the repeats, with the
    phases (median over the repeats that got an answer)."""
    table = Table(title="from zero copies to the first token (s from the first send; p50 over the repeats)")
    columns = ["backend", "ok/repeats", "first token p50", "first token each", "refused until p50",
               "copy seen p50", "to zero p50", "instances at zero"]  # fmt: skip
    add_columns(table, columns, left=("backend", "first token each", "instances at zero"))
    runs = evidence.from_zero or []
    for backend in dict.fromkeys(r.backend for r in runs):
        mine = [r for r in runs if r.backend == backend]
        ok = [r for r in mine if r.ok]
        table.add_row(
            backend,
            f"{len(ok)}/{len(mine)}",
            fmt(from_zero_p50(mine), 2),
            ", ".join(fmt(r.first_token_s, 2) for r in mine),
            fmt(median(r.last_refusal_s for r in ok if r.last_refusal_s is not None), 2),
            fmt(median(r.in_service_s for r in ok if r.in_service_s is not None), 2),
            fmt(median(r.zero_after_s for r in mine if r.zero_after_s is not None), 2),
            ", ".join("-" if r.instances_at_zero is None else str(r.instances_at_zero) for r in mine),
        )
    return table


def step_load_tables(evidence: BenchFile) -> list[Table]:
    """Per step: how long the TTFT objective was missed after it, then its timeline."""
    tables = []
    for step in evidence.step_load or []:
        caught = catch_up(step)
        slo_ms = step.ttft_slo_s * 1000
        summary = Table(
            title=f"{step.backend}: {step.base} -> {step.stepped} in flight at {step.step_at_s:g} s, "
            f"TTFT p95 objective {slo_ms:g} ms"
        )
        columns = ["backend", "step", "copies", "scaled after s", "SLO missed s", "failed/sent"]
        add_columns(summary, columns, left=("backend",))
        summary.add_row(
            step.backend,
            f"{step.base} -> {step.stepped}",
            f"{caught.copies_before if caught.copies_before is not None else '-'} -> "
            f"{caught.copies_after if caught.copies_after is not None else '-'}",
            fmt(caught.scaled_s, 1),
            fmt(caught.missed_s, 1) if caught.caught_up else f"never caught up (> {step.bound_s:g})",
            f"{step.failed}/{step.requests}",
        )
        timeline = Table(title=f"{step.backend}: the timeline, every {step.sample_s:g} s")
        add_columns(timeline, ["t s", "copies", "in flight", "first tokens", "TTFT p95 ms", "SLO"], left=("SLO",))
        for sample in step.samples:
            verdict = missed(sample, step.ttft_slo_s)
            timeline.add_row(
                f"{sample.at_s:g}" + (" (step)" if sample.at_s - step.sample_s < step.step_at_s <= sample.at_s else ""),
                "-" if sample.copies is None else str(sample.copies),
                str(sample.in_flight),
                str(sample.first_tokens),
                fmt(_ms(sample.ttft_p95_s), 0),
                {True: "missed", False: "met", None: "-"}[verdict],
            )
        tables += [summary, timeline]
    return tables


# What each table's columns say that a run's block (runner/render/run_blocks.py) says in its own lines.
IN_BLOCK_SINGLE = ("backend", "model", "ok/runs", "median s", "median TTFT s")
IN_BLOCK_LEVELS = ("backend", "model", "load", "ok/failed", "req/s", "out tok/s", "TTFT ms p50/p90/p99",
                   "ITL ms p50/p90/p99", "TPOT ms p50", "e2e s p50/p99")  # fmt: skip


def render_report(evidence: BenchFile, out: Console, baseline: BenchFile | None = None) -> None:
    """On the terminal, a block per backend and level as `vllm bench serve` prints its run, then
    the table (where the terminal is wide enough for it)."""
    if evidence.agent:
        out.print(agent_table(evidence))
        return
    if evidence.from_zero is not None or evidence.step_load is not None:
        for table in ([from_zero_table(evidence)] if evidence.from_zero else []) + step_load_tables(evidence):
            out.print(table)
        return
    if is_workload(evidence):
        table = workload_table(evidence)
        out.print(run_blocks(evidence, table, IN_BLOCK_LEVELS))
        out.print(table)
        capacity = capacity_table(evidence)
        if capacity is not None:
            out.print(capacity)
        fleet = fleet_table(evidence)
        if fleet is not None:
            out.print(fleet)
        for line in workload_lines(evidence):
            out.print(f"[dim]{line}[/dim]")
        vendor_tables(evidence.vendor_benchmark or [], out)
        return
    if is_sweep(evidence):
        table = sweep_table(evidence)
        out.print(run_blocks(evidence, table, IN_BLOCK_LEVELS))
    else:
        table = bench_table(evidence, baseline)
        out.print(run_blocks(evidence, table, IN_BLOCK_SINGLE))
    out.print(table)
