"""Load levels summarised from their records: per backend and level (counts, throughputs, latency
distributions), and the roofline share of single-request decoding. A pure pass over typed
records; each figure a dataclass whose `to_json` is the entry the reports and evidence hold."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runner.core.backend_entries import BackendEntry
from runner.core.records import AgentTask, RequestRecord
from runner.core.stats import mean, median, percentile
from runner.core.typed_json import FlatJson, where_set
from runner.figures.latency import Distribution, distribution, time_per_output_token, token_gaps
from runner.workloads.slo import Goodput, goodput


def level_groups(records: Sequence[RequestRecord]) -> dict[tuple[str, str], list[RequestRecord]]:
    """Records by backend and the label of the level they ran in, in the order first met."""
    groups: dict[tuple[str, str], list[RequestRecord]] = defaultdict(list)
    for record in records:
        groups[(record.backend, record.label)].append(record)
    return groups


# A level whose counted tokens miss the workload's target by more than this share says so.
TARGET_MISS = 0.05


@dataclass(frozen=True)
class TokenFigures(FlatJson):
    """What the workload asked of a level's prompts and outputs beside what the server counted
    (means), the share by which each missed when more than TARGET_MISS, whether the path was told
    to produce exactly the output asked for, and how many ended short on their own regardless."""

    input_target: float | None
    input_counted: float | None
    output_target: float | None
    output_counted: float | None
    forced: bool
    input_miss: float | None
    output_miss: float | None
    force_ignored: int
    # Conversations (`--turns`): the prompt the server counted at each turn (the context so far), means.
    input_by_turn: tuple[float, ...] = ()


def token_figures(done: list[RequestRecord]) -> TokenFigures:
    """What the workload asked of a level's prompts and outputs beside what the server counted:
    the mean target and the mean count, whether they are more than 5 % apart, whether the path
    was told to produce exactly the output asked for, and whether it did."""
    asked_in = [r.target_input_tokens for r in done if r.target_input_tokens]
    counted_in = [r.prompt_tokens for r in done if r.target_input_tokens and r.prompt_tokens]
    asked_out = [r.target_output_tokens for r in done if r.target_output_tokens]
    counted_out = [r.output_tokens or 0 for r in done if r.target_output_tokens]
    forced = [r for r in done if r.forced_length]
    input_target, input_counted = mean(asked_in), mean(counted_in)
    output_target, output_counted = mean(asked_out), mean(counted_out)
    # Told to produce exactly N and ending short on its own: a server that ignores the field.
    short = [
        r for r in forced if (r.output_tokens or 0) < (r.target_output_tokens or 0) and r.finish_reason != "length"
    ]
    return TokenFigures(
        input_target=input_target,
        input_counted=input_counted,
        output_target=output_target,
        output_counted=output_counted,
        forced=bool(forced) and len(forced) == len(done),
        input_miss=miss(input_target, input_counted),
        output_miss=miss(output_target, output_counted) if forced else None,
        force_ignored=len(short),
        input_by_turn=by_turn(done),
    )


def by_turn(done: list[RequestRecord]) -> tuple[float, ...]:
    """The mean prompt the server counted at each turn of a level's conversations (none: ())."""
    turns: dict[int, list[int]] = defaultdict(list)
    for record in done:
        if record.turn is not None and record.prompt_tokens is not None:
            turns[record.turn].append(record.prompt_tokens)
    if len(turns) < 2:
        return ()
    return tuple(sum(turns[t]) / len(turns[t]) for t in sorted(turns))


def miss(target: float | None, counted: float | None) -> float | None:
    """The share by which the count missed its target, when more than TARGET_MISS; else None."""
    if not target or counted is None:
        return None
    share = counted / target - 1
    return share if abs(share) > TARGET_MISS else None


def prefill_rate(done: list[RequestRecord]) -> float | None:
    """Input tokens over time to first token (median over requests): the prefill rate at this level."""
    return median(r.prompt_tokens / r.ttft_s for r in done if r.prompt_tokens and r.ttft_s)


@dataclass(frozen=True)
class PrefillFit(FlatJson):
    """The line through (prompt tokens, median TTFT) of one backend's one-at-a-time levels: its
    slope as a rate, its intercept, and the lengths it was drawn through."""

    prefill_tok_s: float
    fixed_s: float
    lengths: int
    from_tokens: float
    to_tokens: float


def prefill_fit(records: Sequence[RequestRecord]) -> dict[str, PrefillFit]:
    """Per backend measured one request at a time at two or more input lengths: the line through
    (prompt tokens counted, median TTFT) by least squares. Its slope is the prefill rate the sweep
    shows (tokens per second of TTFT added per token), its intercept the fixed part of the first
    token (the path, the queue, the first decode step), separated as no single length can."""
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for (backend, _label), group in level_groups(records).items():
        done = [r for r in group if r.ok and not r.cold_start]
        level = done[0].level if done else None
        if level is not None and (level.mode != "concurrency" or level.value != 1):
            continue
        tokens = median(r.prompt_tokens for r in done)
        ttft = median(r.ttft_s for r in done)
        if tokens and ttft:
            points[backend].append((tokens, ttft))
    fits = {}
    for backend, pairs in points.items():
        if len({x for x, _ in pairs}) < 2:
            continue
        mean_x = sum(x for x, _ in pairs) / len(pairs)
        mean_y = sum(y for _, y in pairs) / len(pairs)
        sxx = sum((x - mean_x) ** 2 for x, _ in pairs)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in pairs) / sxx
        if slope <= 0:
            continue  # TTFT did not grow with the prompt: no prefill rate to read
        fits[backend] = PrefillFit(
            prefill_tok_s=1 / slope,
            fixed_s=mean_y - slope * mean_x,
            lengths=len(pairs),
            from_tokens=min(x for x, _ in pairs),
            to_tokens=max(x for x, _ in pairs),
        )
    return fits


@dataclass(frozen=True)
class LevelSummary(FlatJson):
    """One backend at one level: counts, throughputs over the level's wall time, latency
    distributions, the tokens beside their targets, the prefill rate and the goodput (None
    without objectives)."""

    requests: int
    completed: int
    failed: int
    duration_s: float | None
    request_throughput: float | None
    output_tok_s: float | None
    ttft_s: Distribution
    itl_s: Distribution
    itl_method: list[str]
    tpot_s: Distribution
    e2e_s: Distribution
    max_send_lag_s: float | None
    first_error: str | None
    tokens: TokenFigures
    prefill_tok_s: float | None
    goodput: Goodput | None
    # Tokens of the completed requests (input: None when the server did not count every prompt),
    # and input and output tokens together over the level's wall time (vllm's total throughput).
    input_tokens: int | None = None
    output_tokens: int = 0
    total_tok_s: float | None = None
    # Units sent (a conversation counts once): fewer than the level planned when its time limit ended it.
    units: int = 0
    # Why the client, not the server, may have set these figures (runner/timing/client_load.py):
    # set by the measuring from the level's readings, never from the records.
    client_limit: str | None = where_set()


def level_summary(records: list[RequestRecord], slo: Any = None) -> LevelSummary:
    """One backend at one level: counts, throughputs over the level's wall time, and latency
    distributions (time to first token, inter-token latency per token, time per output token,
    end-to-end); with a workload, its tokens beside their targets, the prefill rate, and the
    share of requests within the objectives (goodput)."""
    done = [r for r in records if r.ok]
    sent = [r.sent_s for r in records if r.sent_s is not None]
    ends = [r.sent_s + r.e2e_s for r in done if r.sent_s is not None and r.e2e_s is not None]
    duration = (max(ends) - min(sent)) if ends and sent else None
    output = sum(r.output_tokens or 0 for r in done)
    prompts = [r.prompt_tokens for r in done]
    input_tokens = sum(p for p in prompts if p is not None) if None not in prompts else None
    gaps_values: list[float] = []
    gaps_weights: list[float] = []
    methods = set()
    for record in done:
        gaps = token_gaps(record)
        gaps_values += gaps.values
        gaps_weights += gaps.weights
        methods.add(gaps.method)
    late = [r.sent_s - r.scheduled_s for r in records if r.scheduled_s is not None and r.sent_s is not None]
    return LevelSummary(
        requests=len(records),
        completed=len(done),
        failed=len(records) - len(done),
        duration_s=duration,
        request_throughput=len(done) / duration if duration else None,
        output_tok_s=output / duration if duration else None,
        input_tokens=input_tokens,
        output_tokens=output,
        total_tok_s=(input_tokens + output) / duration if duration and input_tokens is not None else None,
        units=len({(r.session if r.session is not None else ("run", r.run)) for r in records}),
        ttft_s=distribution([r.ttft_s for r in done if r.ttft_s is not None]),
        itl_s=distribution(gaps_values, gaps_weights),
        itl_method=sorted(methods),
        tpot_s=distribution([t for t in map(time_per_output_token, done) if t is not None]),
        e2e_s=distribution([r.e2e_s for r in done if r.e2e_s is not None]),
        max_send_lag_s=max(late) if late else None,
        first_error=next((r.error for r in records if r.error), None),
        tokens=token_figures(done),
        prefill_tok_s=prefill_rate(done),
        goodput=goodput(records, duration) if slo or any(r.slo for r in records) else None,
    )


@dataclass(frozen=True)
class Roofline(FlatJson):
    """One backend's decode ceiling (bandwidth / bytes read per token), the median single-request
    decode rate, and the share of the ceiling it reached."""

    ceiling_tok_s: float
    decode_tok_s: float | None
    share: float | None


def roofline(records: Sequence[RequestRecord], backends: Sequence[BackendEntry]) -> dict[str, Roofline]:
    """Per backend with a catalog bandwidth and bytes per token: the decode ceiling (bandwidth /
    bytes read per token) and the share of it the median single-request decode rate reached."""
    ceilings = {}
    for backend in backends:
        spec = backend.spec
        if spec.memory_bandwidth_gbs and spec.decode_read_gb:
            ceilings[backend.name] = spec.memory_bandwidth_gbs / spec.decode_read_gb
    result = {}
    for (name, label), group in level_groups(records).items():
        if name in ceilings and label == "1 at a time":
            rate = median(r.decode_tokens_per_s for r in group if r.ok)
            result[name] = Roofline(ceilings[name], rate, rate / ceilings[name] if rate else None)
    return result


@dataclass(frozen=True)
class AgentLevel(FlatJson):
    """Agent traffic on one backend at one number of sessions: tasks, finished, passed, task
    latency, calls per task, tool calls right, and tasks per second over the level's wall time."""

    backend: str
    sessions: float
    tasks: int
    finished: int
    passed: int
    task_s_median: float | None
    task_s_p95: float | None
    model_calls_per_task: float | None
    tool_calls_per_task: float | None
    tool_calls_right: int
    tasks_per_s: float | None
    wall_s: float | None
    first_error: str | None


def agent_levels(tasks: Sequence[AgentTask]) -> list[AgentLevel]:
    """Agent traffic's tasks (runner/agent/traffic.py) per backend and number of sessions: tasks,
    passed, task latency, calls per task, tool calls right, and tasks per second over the level's
    wall time (first start to last end)."""
    groups: dict[tuple[str, float], list[AgentTask]] = {}
    for task in tasks:
        groups.setdefault((task.backend, task.sessions), []).append(task)
    rows = []
    for (backend, sessions), group in groups.items():
        done = [t for t in group if t.seconds is not None and t.ok]
        ends = [t.sent_s + t.seconds for t in done if t.sent_s is not None and t.seconds is not None]
        starts = [t.sent_s for t in group if t.sent_s is not None]
        wall = max(ends) - min(starts) if ends and starts else None
        latencies = [t.seconds for t in done if t.seconds is not None]
        rows.append(
            AgentLevel(
                backend=backend,
                sessions=sessions,
                tasks=len(group),
                finished=len(done),
                passed=sum(1 for t in group if t.passed),
                task_s_median=median(latencies),
                task_s_p95=percentile(latencies, 95) if latencies else None,
                model_calls_per_task=mean([t.model_calls for t in done if t.model_calls is not None]),
                tool_calls_per_task=mean([t.tool_calls for t in done if t.tool_calls is not None]),
                tool_calls_right=sum(1 for t in group if t.tool_calls_right),
                tasks_per_s=len(done) / wall if wall else None,
                wall_s=wall,
                first_error=next((t.error for t in group if t.error), None),
            )
        )
    return rows
