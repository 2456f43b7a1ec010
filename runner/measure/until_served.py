"""A request to a managed model that may be at zero (an imported model not yet ready, an
inference component at zero copies): sent again with backoff while it is refused for that reason,
within a budget, so the cold start is timed from the first attempt to the one that answered."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runner.measure.records import Stopwatch


@dataclass(frozen=True)
class Served:
    response: Any
    # The clock of the attempt that answered (its time to first token and end-to-end are its own).
    watch: Stopwatch
    refusals: int
    # From the first attempt to the start of the one that answered: an upper bound on the cold start.
    waited_s: float


def send_until_served(
    send: Callable[[], Any],
    refused: Callable[[Exception], bool],
    *,
    first_backoff_s: float,
    max_backoff_s: float,
    budget_s: float,
    on_refusal: Callable[[float], None],
    too_long: Callable[[float, int], Exception],
) -> Served:
    """`send` until it answers; a refusal `refused` names is told to `on_refusal` (seconds since the
    first attempt) and waited out with doubling backoff, until the next wait would pass `budget_s`
    (then `too_long`'s fault). Any other fault is raised as it is."""
    first = time.perf_counter()
    backoff = first_backoff_s
    refusals = 0
    while True:
        watch = Stopwatch()
        try:
            response = send()
        except Exception as error:
            if not refused(error):
                raise
            refusals += 1
            waited = time.perf_counter() - first
            on_refusal(waited)
            if waited + backoff > budget_s:
                raise too_long(waited, refusals) from None
            time.sleep(backoff)
            backoff = min(backoff * 2, max_backoff_s)
        else:
            return Served(response, watch, refusals, watch.start - first)
