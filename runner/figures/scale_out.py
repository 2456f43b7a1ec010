"""How an inference component's copies follow the load, as `bench --from-zero` and `bench
--step-load` keep it: each repeat from zero copies to the first answer with its phases, and a step
in load as a timeline of samples (copies, requests in flight, TTFT p95 of the first tokens that
came in the window). The figures are the p50 time from zero to the first token over the repeats,
and how long after the step the TTFT objective was missed before the copies caught up.

A window misses when its TTFT p95 is over the objective, or when requests were in flight and no
first token came in it (a queue that answers nothing is no better than a slow answer); it meets
when its p95 is within; a window with nothing in flight and nothing answered says nothing. The
step caught up when the last window that says something meets: the miss lasted from the step to
the end of the last missing window, so it is known to one sampling step. A run whose last such
window still misses never caught up within the seconds it waited (`bound_s`)."""

from __future__ import annotations

from dataclasses import dataclass

from runner.core.stats import median, percentile
from runner.core.typed_json import FlatJson, where_set


@dataclass(frozen=True)
class FromZeroRun(FlatJson):
    """One repeat: the copies taken to zero, then one request sent and resent until a copy answered.
    Times from the first send: until the last refusal for no capacity (refused while starting), to
    the first DescribeInferenceComponent look that saw a copy in service, to the first token."""

    backend: str
    repeat: int
    ok: bool
    # From UpdateInferenceComponentRuntimeConfig(0) to the look that saw zero copies, and the
    # endpoint's instances then (managed instance scaling may not have taken the last one yet: a
    # start with an instance up is only the copy's).
    zero_after_s: float | None
    instances_at_zero: int | None
    last_refusal_s: float | None
    in_service_s: float | None
    first_token_s: float | None
    error: str | None = where_set()


@dataclass(frozen=True)
class Sample(FlatJson):
    """One window of the timeline, ending `at_s` seconds after the load started: the copies
    DescribeInferenceComponent said (CurrentCopyCount; None when the look failed), the requests in
    flight at its end, and the first tokens that came in it with their TTFT p95."""

    at_s: float
    copies: int | None
    in_flight: int
    first_tokens: int
    ttft_p95_s: float | None


@dataclass(frozen=True)
class StepLoad(FlatJson):
    """A step from `base` to `stepped` requests in flight (closed loop), `step_at_s` after the load
    started; the run went on `bound_s` after it, sampled every `sample_s`."""

    backend: str
    base: int
    stepped: int
    step_at_s: float
    bound_s: float
    sample_s: float
    ttft_slo_s: float
    samples: tuple[Sample, ...]
    requests: int
    failed: int
    first_error: str | None = where_set()


def windows(
    first_tokens: list[tuple[float, float]], sampled: list[tuple[float, int | None, int]], every: float
) -> tuple[Sample, ...]:
    """The timeline: each sampled (at, copies, in flight) with the first tokens (time it came,
    its TTFT) that came in the window ending there."""
    samples = []
    for at, copies, in_flight in sampled:
        ttfts = [ttft for came, ttft in first_tokens if at - every < came <= at]
        p95 = percentile(ttfts, 95)
        samples.append(Sample(round(at, 3), copies, in_flight, len(ttfts), None if p95 is None else round(p95, 6)))
    return tuple(samples)


def from_zero_p50(runs: list[FromZeroRun]) -> float | None:
    """The median time from zero copies to the first token over the repeats that got one."""
    return median([r.first_token_s for r in runs if r.ok and r.first_token_s is not None])


@dataclass(frozen=True)
class CatchUp:
    """How the copies caught up with a step: seconds from the step to the end of the last window
    that missed the objective (0 when none did; None when the last one still missed: never caught
    up within `bound_s`), the first window after the step with more copies than at the step, and
    the copies at the end."""

    missed_s: float | None
    caught_up: bool
    scaled_s: float | None
    copies_before: int | None
    copies_after: int | None


def missed(sample: Sample, slo_s: float) -> bool | None:
    """Whether a window missed the objective (None: it says nothing)."""
    if sample.ttft_p95_s is not None:
        return sample.ttft_p95_s > slo_s
    return True if sample.in_flight > 0 else None


def catch_up(step: StepLoad) -> CatchUp:
    before = [s for s in step.samples if s.at_s <= step.step_at_s]
    after = [s for s in step.samples if s.at_s > step.step_at_s]
    copies_before = next((s.copies for s in reversed(before) if s.copies is not None), None)
    copies_after = next((s.copies for s in reversed(after) if s.copies is not None), None)
    scaled = next(
        (s.at_s for s in after if s.copies is not None and copies_before is not None and s.copies > copies_before),
        None,
    )
    verdicts = [(s, missed(s, step.ttft_slo_s)) for s in after]
    telling = [(s, v) for s, v in verdicts if v is not None]
    scaled_s = None if scaled is None else round(scaled - step.step_at_s, 3)
    if not telling or telling[-1][1]:
        return CatchUp(None, False, scaled_s, copies_before, copies_after)
    last_miss = next((s.at_s for s, v in reversed(telling) if v), None)
    missed_s = 0.0 if last_miss is None else round(last_miss - step.step_at_s, 3)
    return CatchUp(missed_s, True, scaled_s, copies_before, copies_after)
