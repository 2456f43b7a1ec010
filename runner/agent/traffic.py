"""Agent traffic (`runner.bench --workload agent`): N sessions of the shared Strands agent at once,
each a closed loop of tasks with tool calls, so a backend is measured on what an agent sends it:
bursts of short model calls that each wait for a tool, with the context growing call by call.

The tasks are the survey's counting demo (`count_ids`, graded on the filter and the number) and
the quality set's tool-use family (`add_numbers`, `lookup`: graded on the call and the answer),
dealt in turn. Per task the record keeps its latency (first model call to final answer), model
calls, tool calls asked for and whether one ran with the right arguments, and the grade; per
backend and number of sessions the summary gives tasks per second over the level's wall time.
No other benchmark of this kind measures it, so the figures stand on their own: a backend whose
tokens are fast but whose tool calls are wrong or slow to parse shows it here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from runner.agent.counting import QUESTION, SYSTEM, Sent, make_count_tool
from runner.agent.counting import grade as grade_counting
from runner.agent.limits import AgentLimits
from runner.agent.models import strands_model
from runner.agent.quality import grade_tool_run, tools_for
from runner.agent.run import run_agent
from runner.agent.tasks import TOOL_SYSTEM, generate
from runner.core.agent_evidence import ToolRun
from runner.core.backends import Backend
from runner.core.records import AgentTask, Level
from runner.core.typed_json import JsonObject

COUNTING = "counting-demo"
TOOL_USE = "tool-use"
KINDS = (COUNTING, TOOL_USE)


@dataclass(frozen=True)
class AgentSettings:
    sessions: tuple[int, ...] = (1,)
    # Tasks per level (default: four per session, at least four).
    tasks: int | None = None
    max_tokens: int = 256
    timeout_s: float = 60.0
    max_model_calls: int = 6
    max_tool_calls: int = 6
    seed: int = 0

    def tasks_at(self, sessions: int) -> int:
        return self.tasks or max(4 * sessions, 4)

    def to_json(self) -> JsonObject:
        """The settings as the bench's config keeps them."""
        return {
            "sessions": list(self.sessions),
            "tasks": self.tasks,
            "max_tokens": self.max_tokens,
            "max_model_calls": self.max_model_calls,
            "max_tool_calls": self.max_tool_calls,
            "seed": self.seed,
            "kinds": list(KINDS),
        }


def level_label(sessions: int) -> str:
    return f"{sessions} session{'s' if sessions != 1 else ''}"


def run_task(backend: Backend, model: Any, number: int, settings: AgentSettings) -> AgentTask:
    """One task on a fresh agent over its session's model object (sessions share nothing but the
    server). Even numbers are the counting demo, odd ones the tool-use family's items in order."""
    kind = KINDS[number % 2]
    limits = AgentLimits(max_model_calls=settings.max_model_calls, max_tool_calls=settings.max_tool_calls)
    if kind == COUNTING:
        sent: list[Sent] = []
        run = run_agent(model, QUESTION, tools=[make_count_tool(sent)], system_prompt=SYSTEM, limits=limits)
        graded = grade_counting(run, sent, "filter")
        right, passed, item = graded.right_filter, graded.passed, "counting demo"
    else:
        (task,) = generate(1 + number // 2, seed=settings.seed, families=["tool_use"])[-1:]
        executed: list[ToolRun] = []
        run = run_agent(model, task.prompt, tools=tools_for(task, executed), system_prompt=TOOL_SYSTEM, limits=limits)
        graded_tool = grade_tool_run(task, run, executed)
        right, passed, item = graded_tool.right_call, graded_tool.correct, task.item
    return AgentTask(
        backend=backend.name, task=number, kind=kind, item=item, ok=run.reached and not run.error,
        passed=bool(passed), seconds=run.seconds, model_calls=run.model_calls, tool_calls=len(run.tool_calls),
        tool_calls_right=bool(right), input_tokens=run.input_tokens, output_tokens=run.output_tokens,
        answer=run.answer[:200], error=run.error,
    )  # fmt: skip


def sessions_level(sessions: int, settings: AgentSettings) -> Level:
    """The level its tasks ran in: `sessions` at once, its tasks planned."""
    return Level("sessions", sessions, settings.tasks_at(sessions), label=level_label(sessions))


def stopped_tasks(sessions: int, settings: AgentSettings, finished: list[AgentTask]) -> list[AgentTask]:
    """What a level stopped midway (Ctrl-C, SIGTERM) keeps: the tasks that finished, in order, each
    under the level marked stopped after them (runner/core/records.py `Level.stopped`)."""
    marked = sessions_level(sessions, settings).stopped(len(finished))
    return [replace(task, level=marked) for task in sorted(finished, key=lambda t: t.task)]


def run_level(
    backend: Backend,
    sessions: int,
    settings: AgentSettings,
    on_task: Callable[[], None] = lambda: None,
    finished: list[AgentTask] | None = None,
) -> tuple[list[AgentTask], list[AgentTask]]:
    """`sessions` workers, each taking the next task as soon as its last one ends (a closed loop),
    until the level's tasks are done. Each session first runs one untimed task (its client, its
    connection and the process's first call are warm before the clock starts, as the bench warms
    every backend), then all start together. Returns the timed records, each with its start
    relative to the level, and the warm-up records. Each record also goes to `finished` as its
    task ends; stopped (Ctrl-C, SIGTERM), the sessions take no further task and the stop goes on
    up at once, without waiting for the tasks still out."""
    count = settings.tasks_at(sessions)
    numbers = iter(range(count))
    lock = threading.Lock()
    records: list[AgentTask] = [] if finished is None else finished
    warm: list[AgentTask] = []
    clock = {"started": 0.0}
    stop = threading.Event()
    level = sessions_level(sessions, settings)

    def start_clock() -> None:
        clock["started"] = time.perf_counter()

    barrier = threading.Barrier(sessions, action=start_clock)

    def session(index: int) -> None:
        model, why = None, None
        try:
            model = strands_model(backend, max_tokens=settings.max_tokens, timeout_s=settings.timeout_s)
        except Exception as error:
            why = backend.explain(error)
        if model is not None:
            warm_up = run_task(backend, model, index, settings)
            with lock:
                warm.append(replace(warm_up, session=index, warm_up=True, level=level))
        barrier.wait()
        while not stop.is_set():
            with lock:
                number = next(numbers, None)
            if number is None:
                return
            sent_s = time.perf_counter() - clock["started"]
            if why is not None:
                record = AgentTask(backend.name, number, KINDS[number % 2], error=why, ran=False)
            else:
                record = run_task(backend, model, number, settings)
            record = replace(record, session=index, sent_s=sent_s, level=level)
            with lock:
                records.append(record)
            on_task()

    # Daemon threads, not a pool: a pool's threads are waited for at exit, and a stopped level must
    # not wait for the tasks still out (up to the timeout for each model call).
    faults: list[BaseException] = []

    def guarded(index: int) -> None:
        try:
            session(index)
        except threading.BrokenBarrierError:
            pass  # the level was stopped while this session warmed up
        except BaseException as fault:
            faults.append(fault)
            barrier.abort()  # the others would wait for this session at the start forever

    threads = [
        threading.Thread(target=guarded, args=(i,), name=f"agent-{backend.name}-{i}", daemon=True)
        for i in range(sessions)
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException:
        stop.set()
        barrier.abort()  # sessions still warming up end there
        raise
    if faults:
        raise faults[0]
    return sorted(records, key=lambda r: r.task), warm
