"""Load levels summarised from their records: per backend and level (counts, throughputs, latency
distributions), and the roofline share of single-request decoding. A pure pass over evidence."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from runner.core.stats import median
from runner.measure.latency import distribution, time_per_output_token, token_gaps


def level_groups(evidence: dict[str, Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in evidence.get("records", []):
        groups[(record["backend"], (record.get("level") or {}).get("label", "1 at a time"))].append(record)
    return groups


def level_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """One backend at one level: counts, throughputs over the level's wall time, and latency
    distributions (time to first token, inter-token latency per token, time per output token,
    end-to-end)."""
    done = [r for r in records if r.get("ok")]
    sent = [r["sent_s"] for r in records if r.get("sent_s") is not None]
    ends = [r["sent_s"] + r["e2e_s"] for r in done if r.get("sent_s") is not None and r.get("e2e_s") is not None]
    duration = (max(ends) - min(sent)) if ends and sent else None
    output = sum(r.get("output_tokens") or 0 for r in done)
    gaps_values: list[float] = []
    gaps_weights: list[float] = []
    methods = set()
    for record in done:
        gaps = token_gaps(record)
        gaps_values += gaps.values
        gaps_weights += gaps.weights
        methods.add(gaps.method)
    late = [
        r["sent_s"] - r["scheduled_s"]
        for r in records
        if r.get("scheduled_s") is not None and r.get("sent_s") is not None
    ]
    return {
        "requests": len(records),
        "completed": len(done),
        "failed": len(records) - len(done),
        "duration_s": duration,
        "request_throughput": len(done) / duration if duration else None,
        "output_tok_s": output / duration if duration else None,
        "ttft_s": distribution([r["ttft_s"] for r in done if r.get("ttft_s") is not None]),
        "itl_s": distribution(gaps_values, gaps_weights),
        "itl_method": sorted(methods),
        "tpot_s": distribution([t for t in map(time_per_output_token, done) if t is not None]),
        "e2e_s": distribution([r["e2e_s"] for r in done]),
        "max_send_lag_s": max(late) if late else None,
        "first_error": next((r["error"] for r in records if r.get("error")), None),
    }


def roofline(evidence: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Per backend with a catalog bandwidth and bytes per token: the decode ceiling (bandwidth /
    bytes read per token) and the share of it the median single-request decode rate reached."""
    ceilings = {}
    for backend in evidence.get("backends", []):
        spec = backend.get("catalog") or {}
        if spec.get("memory_bandwidth_gbs") and spec.get("decode_read_gb"):
            ceilings[backend["name"]] = spec["memory_bandwidth_gbs"] / spec["decode_read_gb"]
    result = {}
    for (name, label), records in level_groups(evidence).items():
        if name in ceilings and label == "1 at a time":
            rate = median(r.get("decode_tokens_per_s") for r in records if r.get("ok"))
            result[name] = {
                "ceiling_tok_s": ceilings[name],
                "decode_tok_s": rate,
                "share": rate / ceilings[name] if rate else None,
            }
    return result
