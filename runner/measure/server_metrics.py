"""Why a curve bends: the server's own Prometheus `/metrics`, sampled while a level runs, through
the same address (and so the same SSM forward) the requests take.

vLLM and llama.cpp expose requests running and waiting and how full the KV cache is; vLLM also
its prefix cache's queries and hits. A level whose server kept requests waiting was queueing at
the server: more load there buys latency, not throughput, whatever the path or the client did.
The reading is the measuring core's (runner/timing/metrics.py, as the in-region kit reads them on
a server's host); samples are parsed here with prometheus_client's own text parser and kept in
the evidence; a server without metrics is one line, and nothing else changes.

Names: vLLM's in vllm/v1/metrics/loggers.py (0.30: gauges `vllm:num_requests_running`,
`vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc`; counters `vllm:prefix_cache_queries` and
`vllm:prefix_cache_hits`, scraped with prometheus_client's `_total`); llama.cpp's with `--metrics`
(`llamacpp:requests_processing`, `llamacpp:requests_deferred`; no KV-cache gauge in this build;
its cache reuse as `llamacpp:prompt_tokens_cached_total` beside `llamacpp:prompt_tokens_total`,
which excludes the cached tokens). See `GAUGES` and `COUNTERS`.
"""

from __future__ import annotations

import urllib.request
from typing import Any

from runner.core.tls import tls_context
from runner.timing import metrics

# What each figure is called by each server; the first name a server reports is used.
GAUGES = {
    "running": ("vllm:num_requests_running", "llamacpp:requests_processing"),
    "waiting": ("vllm:num_requests_waiting", "llamacpp:requests_deferred"),
    "kv_cache_usage": ("vllm:kv_cache_usage_perc",),
}
COUNTERS = {
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries"),
    "prefix_cache_hits": (
        "vllm:prefix_cache_hits_total",
        "vllm:prefix_cache_hits",
        "llamacpp:prompt_tokens_cached_total",
    ),
}
# llama.cpp counts the prompt tokens it processed apart from those it took from its cache.
LLAMA_PROCESSED = "llamacpp:prompt_tokens_total"
LLAMA_CACHED = "llamacpp:prompt_tokens_cached_total"
# A level counts as queueing at the server when it kept requests waiting in this share of samples.
QUEUEING_SHARE = 0.25


def parse(text: str) -> dict[str, float]:
    """The figures of one scrape (summed over label sets), by our names."""
    from prometheus_client.parser import text_string_to_metric_families

    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            values[sample.name] = values.get(sample.name, 0.0) + float(sample.value)
    out: dict[str, float] = {}
    for ours, names in (*GAUGES.items(), *COUNTERS.items()):
        found = next((n for n in names if n in values), None)
        if found is not None:
            out[ours] = values[found]
    if LLAMA_CACHED in values and LLAMA_PROCESSED in values:
        out["prefix_cache_queries"] = values[LLAMA_PROCESSED] + values[LLAMA_CACHED]
    return out


def opener() -> urllib.request.OpenerDirector:
    """How the runner reaches a server's metrics: the environment's proxies, the process's TLS context."""
    return urllib.request.build_opener(urllib.request.HTTPSHandler(context=tls_context()))


class MetricsSampler(metrics.MetricsSampler):
    """Reads `url` every `every_s` while in use (the core's sampler); `samples` are (s from the
    start, figures)."""

    def __init__(self, url: str, every_s: float = 0.5) -> None:
        super().__init__(url, metric_names(), every_s, opener())

    @property
    def samples(self) -> list[tuple[float, dict[str, float]]]:
        return [(float(at), parse(str(text))) for at, text in self.readings]

    def summary(self) -> dict[str, Any]:
        return summarize(self.samples, self.url, self.problem)


def summarize(samples: list[tuple[float, dict[str, float]]], url: str, problem: str | None = None) -> dict[str, Any]:
    """A level's samples in figures: each gauge's max and mean, each counter's change, whether
    requests kept waiting (queueing at the server), the prefix cache's hit rate."""
    figures = [values for _, values in samples]
    result: dict[str, Any] = {"samples": len(figures), "url": url}
    for name in GAUGES:
        seen = [f[name] for f in figures if name in f]
        if seen:
            result[f"{name}_max"] = max(seen)
            result[f"{name}_mean"] = sum(seen) / len(seen)
    waiting = [f["waiting"] for f in figures if "waiting" in f]
    result["queueing"] = bool(waiting) and sum(1 for w in waiting if w > 0) / len(waiting) >= QUEUEING_SHARE
    for name in COUNTERS:
        seen = [f[name] for f in figures if name in f]
        if len(seen) >= 2:
            result[f"{name}_delta"] = seen[-1] - seen[0]
    queries, hits = result.get("prefix_cache_queries_delta"), result.get("prefix_cache_hits_delta")
    if queries:
        result["prefix_cache_hit_rate"] = (hits or 0.0) / queries
    if problem:
        result["problem"] = problem
    return result


def metric_names() -> list[str]:
    """Every sample name `parse` reads: the lines a sampler elsewhere (the in-region kit) keeps."""
    names = [name for names in (*GAUGES.values(), *COUNTERS.values()) for name in names]
    return sorted({*names, LLAMA_PROCESSED})


def probe(url: str) -> str | None:
    """None when `url` answers Prometheus text with figures we know; else why not, in one line."""
    try:
        figures = parse(metrics.read_page(url, opener(), timeout_s=3.0))
    except Exception as error:
        return f"no server metrics at {url} ({type(error).__name__})"
    return None if figures else f"{url} answers, but with none of the figures known here"
