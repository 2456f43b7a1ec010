"""The most load a backend carries within its service-level objectives: the largest concurrency
(or arrival rate) at which at least `slo_share` of the requests meet every objective.

The search (`vllm bench sweep serve_sla` answers the same question): double the load from the
start until a level misses (or stops gaining throughput: past saturation more load is only
queueing), then halve the gap between the last level that met and the first that missed, to
the search's precision, never past its budget of levels, requests or time. The answer is the
last level that met, with its figures; a search in which even the first level missed says so,
with that level's figures.

A level the client could not keep up with (its summary's `client_limit`: runner/timing/
client_load.py) is no figure of the server's, met or missed: the search stops there, its answer
the last valid level that met, and says the client was the limit (more client processes,
`--clients K`, or a bigger client machine take it further).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from runner.figures.capacity import CapacityFound, Tried
from runner.figures.levels import LevelSummary

# More load that gains less than this share of throughput is past saturation.
SATURATION_GAIN = 0.05


@dataclass(frozen=True)
class Budget:
    levels: int = 10
    requests: int = 2000
    seconds: float = 1800.0
    # A rate search stops when the gap between met and missed is this share of the met rate.
    rate_precision: float = 0.1


@dataclass
class Search:
    """What was tried, in order, and the answer."""

    mode: str
    slo_share: float
    tried: list[Tried] = field(default_factory=list)
    capacity: float | None = None
    stopped: str = ""

    def found(self, backend: str, input_tokens: int | None, label: str | None) -> CapacityFound:
        """The answer as the evidence keeps it, for `backend` at `input_tokens` (`label`: the
        level at the capacity)."""
        return CapacityFound(
            backend=backend,
            input_tokens=input_tokens,
            label=label,
            mode=self.mode,
            slo_share=self.slo_share,
            capacity=self.capacity,
            stopped=self.stopped,
            tried=tuple(self.tried),
        )


def find_capacity(
    measure: Callable[[float], LevelSummary],
    *,
    mode: str,
    slo_share: float,
    start: float = 1.0,
    budget: Budget | None = None,
    requests_at: Callable[[float], int] = lambda value: 0,
) -> Search:
    """`measure(value)` runs one level and returns its summary (`goodput.share_met`, `output_tok_s`).
    Concurrency is searched in whole numbers, a rate to `rate_precision`."""
    budget = budget or Budget()
    search = Search(mode, slo_share)
    started = time.monotonic()
    spent = 0
    integer = mode == "concurrency"

    def within_budget(value: float) -> str:
        if len(search.tried) >= budget.levels:
            return f"the budget of {budget.levels} levels is spent"
        if spent + requests_at(value) > budget.requests:
            return f"the budget of {budget.requests} requests is spent"
        if time.monotonic() - started > budget.seconds:
            return f"the budget of {budget.seconds:.0f} s is spent"
        return ""

    def attempt(value: float) -> bool | None:
        nonlocal spent
        why = within_budget(value)
        if why:
            search.stopped = why
            return None
        summary = measure(value)
        spent += summary.requests
        share = summary.goodput.share_met if summary.goodput else None
        limit = summary.client_limit
        met = share is not None and share >= slo_share and not limit
        goodput = summary.goodput.goodput_rps if summary.goodput else None
        tried = Tried(value, met, share, summary.output_tok_s, summary.request_throughput, goodput, limit)
        search.tried.append(tried)
        if limit:
            search.stopped = f"the client was the limit at {value:g}, not the server: {limit} (--clients spreads it)"
            return None
        return met

    good: float | None = None
    bad: float | None = None
    value = start
    while True:  # doubling
        met = attempt(value)
        if met is None:
            break
        if not met:
            bad = value
            break
        previous = [t for t in search.tried if t.met and t.value < value]
        good = value
        gained = _gain(previous[-1] if previous else None, search.tried[-1])
        if gained is not None and gained < SATURATION_GAIN:
            search.stopped = f"past saturation: {value:g} gained {gained:.1%} throughput over {previous[-1].value:g}"
            break
        value = value * 2
    # A rate search whose first rate missed goes down (halving) to find one that meets, to a
    # sixteenth of the start; concurrency cannot go below its start of 1 request in flight.
    floor = start / 16
    while not integer and good is None and bad is not None and not search.stopped and bad / 2 >= floor:
        met = attempt(bad / 2)
        if met is None:
            break
        if met:
            good = bad / 2
        else:
            bad = bad / 2
    while good is not None and bad is not None and not search.stopped:  # halving the gap
        if integer and bad - good <= 1:
            break
        if not integer and (bad - good) <= budget.rate_precision * good:
            break
        middle = math.floor((good + bad) / 2) if integer else (good + bad) / 2
        met = attempt(middle)
        if met is None:
            break
        if met:
            good = middle
        else:
            bad = middle
    search.capacity = good
    if good is None and not search.stopped:
        search.stopped = (
            f"no level met the objectives for {slo_share:.0%} of its requests (the first, {start:g}, did not"
            + (f"; nor any rate down to {min(t.value for t in search.tried):g}/s)" if not integer else ")")
        )
    elif not search.stopped:
        search.stopped = f"between {good:g} (met) and {bad:g} (missed)" if bad is not None else "done"
    return search


def _gain(before: Tried | None, after: Tried) -> float | None:
    if before is None or not before.output_tok_s or after.output_tok_s is None:
        return None
    return after.output_tok_s / before.output_tok_s - 1
