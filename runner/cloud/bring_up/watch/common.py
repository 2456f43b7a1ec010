"""What every backend's watch shares: its options, its outcomes, a clock, and time arithmetic."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from catalog.contract import BackendOutput

# Seconds a server that went to zero gets to say why, before the watch calls it stopped.
SETTLE_S = 60.0
# Looks in a row that may fail (throttling, a dropped connection) before the backend is given up.
FAULTS_IN_A_ROW = 3
# Outcomes a watch ends with.
READY, FAILED, NO_CAPACITY, TIMEOUT, STOPPED = "ready", "failed", "no-capacity", "timeout", "stopped"


@dataclass
class WatchOptions:
    launch_timeout_s: float = 600.0
    # None: the backend's own bound (its stack output's ready_minutes) and ten minutes more.
    ready_timeout_s: float | None = None
    # How long a missing image may wait for the build the deploy starts before the watch starts one.
    build_grace_s: float = 120.0
    poll_s: float = 15.0
    # False when watching without a deploy: a build that ended (failed or not) is the answer,
    # never started again.
    start_builds: bool = True


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def minutes_between(start: str | None, end: str | None) -> float | None:
    first, last = parse_time(start), parse_time(end)
    if not first or not last:
        return None
    return round((last - first).total_seconds() / 60, 1)


class Watch:
    """What every watch holds: the backend's output, its evidence record, clients, a clock."""

    # What a deployed backend waits for when nothing runs until it is asked ("" runs: it is watched).
    waits_for = ""

    def __init__(
        self,
        output: BackendOutput,
        record: dict[str, Any],
        clients: Callable[[str], Any],
        options: WatchOptions,
        log: Callable[[str], None],
        since: datetime | None = None,
    ) -> None:
        self.output = output
        self.record = record
        self.client = clients
        self.options = options
        self.log = log
        self.started = time.monotonic()
        # What happened since the deploy began is this run's; older records are stale.
        self.started_at = (since or datetime.now(UTC)).replace(microsecond=0)
        self.first = True
        self.faults_in_a_row = 0

    def step(self) -> str | None:
        """One look; the outcome when the watch of this backend is over, else None."""
        raise NotImplementedError

    def take_to_zero(self, why: str) -> None:
        """What a backend that does not serve is left at (nothing, unless the kind holds instances)."""

    def guarded_step(self) -> str | None:
        """`step`, where a fault ends this backend's watch (after FAULTS_IN_A_ROW looks), never the others'."""
        try:
            outcome = self.step()
        except Exception as error:
            from runner.core.errors import describe

            self.faults_in_a_row += 1
            self.log(f"{self.output.name}: look {self.faults_in_a_row} of {FAULTS_IN_A_ROW} failed: {describe(error)}")
            if self.faults_in_a_row < FAULTS_IN_A_ROW:
                return None
            self.take_to_zero("its watch failed")
            return self.end(FAILED, f"watch failed {FAULTS_IN_A_ROW} times in a row: {describe(error)}")
        self.faults_in_a_row = 0
        return outcome

    def end(self, outcome: str, reason: str | None = None) -> str:
        self.record["outcome"] = outcome
        if reason:
            self.record["reason"] = reason
        return outcome
