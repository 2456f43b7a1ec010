"""Service-level objectives per request, in `vllm bench serve`'s form (`--goodput ttft:MS tpot:MS
e2el:MS`): a request is good when every objective given holds (time to first token, time per
output token after the first, end-to-end latency, each at most so many milliseconds); goodput is
the good requests per second of a level (vllm/benchmarks/serve.py: `calculate_metrics`, its
`good_completed`).

A path that does not stream (SageMaker serverless and async answer whole) has no time to first
token: an objective on TTFT or TPOT cannot be judged there, and the request is left unjudged
with that reason rather than counted as good or bad.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.core.errors import RunnerError
from runner.core.flags import finite
from runner.core.records import RequestRecord, SloVerdict
from runner.core.typed_json import FlatJson, JsonObject

KEYS = {
    "ttft": "time to first token",
    "tpot": "time per output token after the first",
    "e2el": "end-to-end latency",
}


@dataclass(frozen=True)
class Slo:
    """Limits in milliseconds, by key (ttft, tpot, e2el)."""

    limits: tuple[tuple[str, float], ...]
    source: str = "--goodput"

    def __bool__(self) -> bool:
        return bool(self.limits)

    @property
    def text(self) -> str:
        return " ".join(f"{key}:{value:g}" for key, value in self.limits)

    def to_json(self) -> JsonObject:
        return {"limits_ms": dict(self.limits), "source": self.source, "text": self.text}


def parse_goodput(items: list[str] | None, source: str = "--goodput") -> Slo:
    """`["ttft:200", "e2el:3000"]` -> Slo; an unknown key, a key given twice, or a number that is
    not finite and above 0 is one line."""
    limits: dict[str, float] = {}
    for item in items or []:
        key, sep, value = item.partition(":")
        if not sep:
            raise RunnerError(f"--goodput {item!r}: expected KEY:MILLISECONDS, e.g. ttft:200")
        if key not in KEYS:
            known = ", ".join(f"{k} ({v})" for k, v in KEYS.items())
            raise RunnerError(f"--goodput {item!r}: unknown objective {key!r}; known: {known}")
        if key in limits:
            raise RunnerError(f"--goodput {item!r}: {key} is given twice; give each objective once")
        try:
            limit = float(value)
        except ValueError:
            raise RunnerError(f"--goodput {item!r}: {value!r} is not a number of milliseconds") from None
        finite("--goodput", limit, "milliseconds", text=repr(item))
        if not limit > 0:
            raise RunnerError(f"--goodput {item!r}: the limit must be above 0 ms")
        limits[key] = limit
    return Slo(tuple(limits.items()), source)


def request_figures(record: RequestRecord) -> dict[str, float | None]:
    """A record's TTFT, TPOT and end-to-end latency in ms (None where not measured)."""
    ttft, e2e, tokens = record.ttft_s, record.e2e_s, record.output_tokens or 0
    tpot = None
    if ttft is not None and e2e is not None:
        tpot = (e2e - ttft) / (tokens - 1) if tokens > 1 else 0.0
    return {
        "ttft": ttft * 1000 if ttft is not None else None,
        "tpot": tpot * 1000 if tpot is not None else None,
        "e2el": e2e * 1000 if e2e is not None else None,
    }


def judge(record: RequestRecord, slo: Slo) -> SloVerdict:
    """Met, the objectives missed, or why it could not be judged. A failed request misses."""
    if not record.ok:
        return SloVerdict(False, ["failed"])
    figures = request_figures(record)
    unmeasured = [key for key, _ in slo.limits if figures[key] is None]
    if unmeasured:
        return SloVerdict(None, [], f"{', '.join(unmeasured)} not measured on this path")
    missed = [key for key, limit in slo.limits if figures[key] > limit]  # type: ignore[operator]
    return SloVerdict(not missed, missed)


@dataclass(frozen=True)
class Goodput(FlatJson):
    """A level against the objectives: judged requests, those that met every one (their share and
    rate over the level's wall time), how many missed each, and why any went unjudged."""

    judged: int
    met: int
    share_met: float | None
    goodput_rps: float | None
    missed_by: dict[str, int]
    unjudged: str | None


def goodput(records: list[RequestRecord], duration_s: float | None) -> Goodput:
    """Per level: the share of judged requests that met every objective, and good requests per second."""
    verdicts = [r.slo for r in records if r.slo]
    judged = [v for v in verdicts if v.met is not None]
    met = sum(1 for v in judged if v.met)
    missed: dict[str, int] = {}
    for verdict in judged:
        for key in verdict.missed:
            missed[key] = missed.get(key, 0) + 1
    unjudged = next((v.unjudged for v in verdicts if v.unjudged), None)
    return Goodput(
        judged=len(judged),
        met=met,
        share_met=met / len(judged) if judged else None,
        goodput_rps=met / duration_s if duration_s and judged else None,
        missed_by=missed,
        unjudged=unjudged,
    )
