"""Load levels summarised from their records: per backend and level (counts, throughputs, latency
distributions), and the roofline share of single-request decoding. A pure pass over evidence."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from runner.core.stats import mean, median, percentile
from runner.figures.latency import distribution, time_per_output_token, token_gaps
from runner.workloads.slo import goodput


def level_groups(evidence: dict[str, Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in evidence.get("records", []):
        groups[(record["backend"], (record.get("level") or {}).get("label", "1 at a time"))].append(record)
    return groups


# A level whose counted tokens miss the workload's target by more than this share says so.
TARGET_MISS = 0.05


def token_figures(done: list[dict[str, Any]]) -> dict[str, Any]:
    """What the workload asked of a level's prompts and outputs beside what the server counted:
    the mean target and the mean count, whether they are more than 5 % apart, whether the path
    was told to produce exactly the output asked for, and whether it did."""
    asked_in = [r["target_input_tokens"] for r in done if r.get("target_input_tokens")]
    counted_in = [r["prompt_tokens"] for r in done if r.get("target_input_tokens") and r.get("prompt_tokens")]
    asked_out = [r["target_output_tokens"] for r in done if r.get("target_output_tokens")]
    counted_out = [r.get("output_tokens") or 0 for r in done if r.get("target_output_tokens")]
    forced = [r for r in done if r.get("forced_length")]
    figures: dict[str, Any] = {
        "input_target": mean(asked_in),
        "input_counted": mean(counted_in),
        "output_target": mean(asked_out),
        "output_counted": mean(counted_out),
        "forced": bool(forced) and len(forced) == len(done),
    }
    figures["input_miss"] = miss(figures["input_target"], figures["input_counted"])
    figures["output_miss"] = miss(figures["output_target"], figures["output_counted"]) if forced else None
    # Told to produce exactly N and ending short on its own: a server that ignores the field.
    short = [
        r
        for r in forced
        if (r.get("output_tokens") or 0) < r["target_output_tokens"] and r.get("finish_reason") != "length"
    ]
    figures["force_ignored"] = len(short)
    return figures


def miss(target: float | None, counted: float | None) -> float | None:
    """The share by which the count missed its target, when more than TARGET_MISS; else None."""
    if not target or counted is None:
        return None
    share = counted / target - 1
    return share if abs(share) > TARGET_MISS else None


def prefill_rate(done: list[dict[str, Any]]) -> float | None:
    """Input tokens over time to first token (median over requests): the prefill rate at this level."""
    return median(r["prompt_tokens"] / r["ttft_s"] for r in done if r.get("prompt_tokens") and r.get("ttft_s"))


def prefill_fit(evidence: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per backend measured one request at a time at two or more input lengths: the line through
    (prompt tokens counted, median TTFT) by least squares. Its slope is the prefill rate the sweep
    shows (tokens per second of TTFT added per token), its intercept the fixed part of the first
    token (the path, the queue, the first decode step), separated as no single length can."""
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for (backend, _label), records in level_groups(evidence).items():
        done = [r for r in records if r.get("ok") and not r.get("cold_start")]
        level = (done[0].get("level") or {}) if done else {}
        if level.get("mode", "concurrency") != "concurrency" or level.get("value", 1) != 1:
            continue
        tokens = median(r.get("prompt_tokens") for r in done)
        ttft = median(r.get("ttft_s") for r in done)
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
        fits[backend] = {
            "prefill_tok_s": 1 / slope,
            "fixed_s": mean_y - slope * mean_x,
            "lengths": len(pairs),
            "from_tokens": min(x for x, _ in pairs),
            "to_tokens": max(x for x, _ in pairs),
        }
    return fits


def level_summary(records: list[dict[str, Any]], slo: Any = None) -> dict[str, Any]:
    """One backend at one level: counts, throughputs over the level's wall time, and latency
    distributions (time to first token, inter-token latency per token, time per output token,
    end-to-end); with a workload, its tokens beside their targets, the prefill rate, and the
    share of requests within the objectives (goodput)."""
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
        "tokens": token_figures(done),
        "prefill_tok_s": prefill_rate(done),
        "goodput": goodput(records, duration) if slo or any(r.get("slo") for r in records) else None,
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


def agent_levels(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Agent traffic's tasks (runner/agent/traffic.py) per backend and number of sessions: tasks, passed, task latency, calls per task, tool calls
    right, and tasks per second over the level's wall time (first start to last end)."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((record["backend"], (record.get("level") or {}).get("value", 1)), []).append(record)
    rows = []
    for (backend, sessions), group in groups.items():
        done = [r for r in group if r.get("seconds") is not None and r.get("ok")]
        ends = [r["sent_s"] + r["seconds"] for r in done if r.get("sent_s") is not None]
        starts = [r["sent_s"] for r in group if r.get("sent_s") is not None]
        wall = max(ends) - min(starts) if ends and starts else None
        latencies = [r["seconds"] for r in done]
        rows.append(
            {
                "backend": backend,
                "sessions": sessions,
                "tasks": len(group),
                "finished": len(done),
                "passed": sum(1 for r in group if r.get("passed")),
                "task_s_median": median(latencies),
                "task_s_p95": percentile(latencies, 95) if latencies else None,
                "model_calls_per_task": mean([r["model_calls"] for r in done]),
                "tool_calls_per_task": mean([r["tool_calls"] for r in done]),
                "tool_calls_right": sum(1 for r in group if r.get("tool_calls_right")),
                "tasks_per_s": len(done) / wall if wall else None,
                "wall_s": wall,
                "first_error": next((r["error"] for r in group if r.get("error")), None),
            }
        )
    return rows
