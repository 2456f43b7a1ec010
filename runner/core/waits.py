"""Waits between looks at something AWS is changing: the first soon, each after twice the last, up
to the poll. A change that ends at once is seen then, and a long one is looked at no more often
than the poll."""

from __future__ import annotations

from collections.abc import Iterator


def doubling_waits(first_s: float, poll_s: float) -> Iterator[float]:
    """Seconds to wait before each look: `first_s` (or `poll_s` if shorter), doubling up to `poll_s`."""
    wait = min(first_s, poll_s)
    while True:
        yield wait
        wait = min(wait * 2, poll_s)
