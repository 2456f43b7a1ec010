"""Per-request latency figures from the raw chunk arrival times a record keeps.

Inter-token latency is per token, not per chunk: a chunk that brings k tokens after a gap g
stands for k tokens each g/k apart (a server that batches tokens into chunks must not look
k times slower). The tokens a chunk brought are exact where the server reports a running count
in every chunk (vLLM's `continuous_usage_stats`); otherwise the output tokens after the first
chunk are spread evenly over the later chunks, and the record says so.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from runner.core.errors import RunnerError
from runner.core.records import RequestRecord
from runner.core.stats import percentiles, weighted_mean
from runner.core.typed_json import FlatJson


@dataclass
class TokenGaps:
    """Inter-token latencies (s) with the number of tokens each stands for."""

    values: list[float]
    weights: list[float]
    method: str

    @property
    def tokens(self) -> float:
        return sum(self.weights)


def token_gaps(record: RequestRecord) -> TokenGaps:
    times = record.chunk_times
    if len(times) < 2:
        return TokenGaps([], [], "fewer than two chunks")
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    counts = record.chunk_token_counts
    if counts and len(counts) == len(times):
        brought = [later - earlier for earlier, later in itertools.pairwise(counts)]
        values, weights = [], []
        for gap, tokens in zip(gaps, brought, strict=True):
            if tokens > 0:
                values.append(gap / tokens)
                weights.append(float(tokens))
        return TokenGaps(values, weights, "server running count")
    output = record.output_tokens or 0
    after_first = output - output / len(times)  # the first chunk's share is not a gap
    per_chunk = after_first / len(gaps) if after_first > 0 else 1.0
    return TokenGaps([g / per_chunk for g in gaps], [per_chunk] * len(gaps), "tokens spread evenly over chunks")


def time_per_output_token(record: RequestRecord) -> float | None:
    """(end-to-end - time to first token) / (output tokens - 1): the decode time per token."""
    tokens, ttft, e2e = record.output_tokens, record.ttft_s, record.e2e_s
    if not record.ok or not tokens or tokens < 2 or ttft is None or e2e is None:
        return None
    return (e2e - ttft) / (tokens - 1)


@dataclass(frozen=True)
class Distribution(FlatJson):
    """One figure over a level's requests (None where there was none to take)."""

    mean: float | None
    median: float | None
    p90: float | None
    p99: float | None


def distribution(values: list[float], weights: list[float] | None = None) -> Distribution:
    """mean, median, p90 and p99 of one figure."""
    mean = weighted_mean(values, weights if weights is not None else [1.0] * len(values))
    return Distribution(mean, *percentiles(values, (50, 90, 99), weights))


# The latency metrics a run's block can give percentiles of, by `vllm bench serve`'s names
# (`--percentile-metrics`), with its headings.
METRICS = {
    "ttft": ("TTFT", "Time to First Token"),
    "tpot": ("TPOT", "Time per Output Token (excl. 1st token)"),
    "itl": ("ITL", "Inter-token Latency"),
    "e2el": ("E2EL", "End-to-end Latency"),
}


def metric_values(records: Sequence[RequestRecord], metric: str) -> tuple[list[float], list[float] | None]:
    """One metric's values (s) over a level's completed requests, with the weight of each
    (inter-token latency is per token: a gap carries the tokens it stands for; None elsewhere)."""
    done = [r for r in records if r.ok]
    if metric == "ttft":
        return [r.ttft_s for r in done if r.ttft_s is not None], None
    if metric == "tpot":
        return [t for t in map(time_per_output_token, done) if t is not None], None
    if metric == "e2el":
        return [r.e2e_s for r in done if r.e2e_s is not None], None
    if metric == "itl":
        values: list[float] = []
        weights: list[float] = []
        for record in done:
            gaps = token_gaps(record)
            values += gaps.values
            weights += gaps.weights
        return values, weights
    raise ValueError(f"unknown metric {metric!r}")


@dataclass(frozen=True)
class MetricFigures:
    """One metric over a level: its mean and median, and each percentile asked for (s)."""

    mean: float | None
    median: float | None
    percentiles: tuple[tuple[float, float | None], ...]


def metric_figures(records: Sequence[RequestRecord], metric: str, asked: Sequence[float]) -> MetricFigures:
    values, weights = metric_values(records, metric)
    mean = weighted_mean(values, weights if weights is not None else [1.0] * len(values))
    median, *at = percentiles(values, (50, *asked), weights)
    return MetricFigures(mean, median, tuple(zip(asked, at, strict=True)))


# What a run's block gives unless asked otherwise: every metric (vllm's default leaves out e2el),
# and p90 and p99 beside the mean and median (vllm's default is p99 alone); the tables always
# showed these.
DEFAULT_METRICS = ("ttft", "tpot", "itl", "e2el")
DEFAULT_PERCENTILES = (90.0, 99.0)


def parse_percentile_metrics(text: str) -> tuple[str, ...]:
    """`--percentile-metrics ttft,tpot,itl,e2el` (vllm bench serve's flag and names)."""
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [name for name in names if name not in METRICS]
    if unknown or not names:
        raise RunnerError(
            f"--percentile-metrics {text!r}: comma-separated names of {', '.join(METRICS)} (vllm bench serve's)"
        )
    return tuple(dict.fromkeys(names))


def parse_metric_percentiles(text: str) -> tuple[float, ...]:
    """`--metric-percentiles 50,90,99`: each above 0 and at most 100."""
    values = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not 0 < value <= 100:
            raise RunnerError(f"--metric-percentiles {text!r}: comma-separated percentiles above 0 and at most 100")
        values.append(value)
    return tuple(dict.fromkeys(values))
