"""Per-request latency figures from the raw chunk arrival times a record keeps.

Inter-token latency is per token, not per chunk: a chunk that brings k tokens after a gap g
stands for k tokens each g/k apart (a server that batches tokens into chunks must not look
k times slower). The tokens a chunk brought are exact where the server reports a running count
in every chunk (vLLM's `continuous_usage_stats`); otherwise the output tokens after the first
chunk are spread evenly over the later chunks, and the record says so.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from runner.core.records import RequestRecord
from runner.core.stats import percentile, weighted_mean
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
    return Distribution(
        mean, percentile(values, 50, weights), percentile(values, 90, weights), percentile(values, 99, weights)
    )
