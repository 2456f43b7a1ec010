"""What a command shows while it works: per request, and step by step.

On a terminal, rich's live bars (a bar per backend that moves with every request; a spinner with
the time so far for a step). Without one (CI, `make bench > log`, a pipe) a live bar draws nothing
until its end, so a plain line goes to stderr instead, as GuideLLM and `vllm bench serve` print
theirs to a log: a backend's count at most every PLAIN_EVERY_S seconds and when it is done, and a
step as it starts and as it ends, with its time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from runner.core.console import console as stderr

# Without a terminal, a backend's count at most this often (seconds), and always when it is done.
PLAIN_EVERY_S = 5.0


@dataclass
class PlainTask:
    description: str
    total: int | None
    started: float
    completed: int = 0
    said_at: float = field(default=0.0)


class RequestProgress:
    """Requests done per backend (or per row), moving with every request."""

    def __init__(self, console: Console = stderr, unit: str = "requests") -> None:
        self.console = console
        self.unit = unit
        self.live = console.is_terminal
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not self.live,
        )
        self.plain: dict[TaskID, PlainTask] = {}

    def __enter__(self) -> RequestProgress:
        self.bars.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.bars.__exit__(*exc)

    def add_task(self, description: str, total: int | None) -> TaskID:
        task = self.bars.add_task(f"{description:<10}", total=total)
        now = time.monotonic()
        self.plain[task] = PlainTask(description, total, now, said_at=now)
        return task

    def remove_task(self, task: TaskID) -> None:
        self.bars.remove_task(task)
        self.plain.pop(task, None)

    def advance(self, task: TaskID, count: int = 1) -> None:
        self.bars.advance(task, count)
        state = self.plain.get(task)
        if state is None or self.live or count <= 0:
            return
        state.completed += count
        now = time.monotonic()
        done = state.total is not None and state.completed >= state.total
        if done or now - state.said_at >= PLAIN_EVERY_S:
            state.said_at = now
            of = f"/{state.total}" if state.total is not None else ""
            self.console.print(
                f"[dim]{escape(state.description)}: {state.completed}{of} {self.unit}, {now - state.started:.0f} s[/dim]"
            )

    def advancing(self, task: TaskID) -> Callable[..., None]:
        """The task's advance, as the measuring code takes it: `advance()` or `advance(n)`."""
        return lambda count=1: self.advance(task, count)


@contextmanager
def step(text: str, console: Console = stderr) -> Iterator[Callable[[str], None]]:
    """One step of a command, said as it starts and, when it ends, with how long it took (and what
    the step set with the callable it yields: `done("passed")`). On a terminal a spinner shows the
    time so far meanwhile."""
    started = time.monotonic()
    outcome: list[str] = []
    if console.is_terminal:
        spinner = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console, transient=True
        )
        with spinner:
            spinner.add_task(escape(text), total=None)
            yield outcome.append
    else:
        console.print(f"[dim]{escape(text)} …[/dim]")
        yield outcome.append
    said = f": {outcome[-1]}" if outcome else ""
    console.print(f"[dim]{escape(text)}{escape(said)} ({time.monotonic() - started:.1f} s)[/dim]")
