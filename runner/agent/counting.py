"""Demo 1, the survey's counting task: its ids and question, the count_ids tool (and its bounded
variant for forced tool calls), and the grade of one run (the number, the filter sent, a
finished agent)."""

from __future__ import annotations

import argparse
import operator
from dataclasses import dataclass
from typing import Literal

from pydantic import Field
from strands import tool

from runner.agent.grading import read_count
from runner.agent.limits import AgentLimits
from runner.agent.models import strands_model
from runner.agent.run import AgentRun, run_agent
from runner.core.agent_evidence import CountingGrade, CountingRun
from runner.core.backends import Backend
from runner.core.console import console
from runner.core.typed_json import JsonObject

# The survey's fixture (demo1_counting.py), in its order: unsorted, so counting is not reading off a position.
IDS = (0, 2, 3, 20, 21, 22, 23, 10, 11, 12, 13)


THRESHOLD = 10


TRUTH = frozenset(i for i in IDS if i >= THRESHOLD)


EXPECTED = len(TRUTH)


QUESTION = f"How many of the ids are {THRESHOLD} or more? Answer with the number."


OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq}


SYSTEM = (
    "You answer questions about a table of integer ids, and you look at the table only through the tools. "
    "Finish with a sentence stating the number, then a last line of the form `Answer: <number>`."
)


@dataclass(frozen=True)
class Sent:
    """One call the tool executed: the filter `count_ids` was sent, or (`op` None) `list_ids`."""

    op: str | None = None
    value: float | None = None

    @property
    def label(self) -> str:
        return "list_ids()" if self.op is None else f"id {self.op} {self.value}"


def selected(op: str, value: float) -> frozenset[int]:
    return frozenset(i for i in IDS if OPS[op](i, value))


def count_result(sent: list[Sent], op: str, value: int) -> JsonObject:
    sent.append(Sent(op, value))
    if op not in OPS:
        return {"error": f"op must be one of {', '.join(OPS)}"}
    matched = selected(op, value)
    return {
        "where": f"id {op} {value}",
        "count": len(matched),
        "min": min(matched, default=None),
        "max": max(matched, default=None),
    }


def make_count_tool(sent: list[Sent], *, bounded: bool = False):
    """The survey's tool (`op` a string, `value` an integer). `bounded`: the same tool with `op` an
    enum and `value` within ±1000, for constrained decoding (`--force-tool`): there the server
    writes whatever the schema allows, and a base model fills an unbounded integer until the
    token limit cuts the call."""
    if not bounded:

        @tool
        def count_ids(op: str, value: int) -> JsonObject:
            """Count the ids matching `id <op> value`, computed by the engine.

            Args:
                op: one of >=, >, <=, <, ==
                value: the integer to compare each id against
            """
            return count_result(sent, op, value)

        return count_ids

    @tool(name="count_ids")
    def bounded_count_ids(
        op: Literal[">=", ">", "<=", "<", "=="],
        value: int = Field(ge=-1000, le=1000, description="the integer to compare each id against"),
    ) -> JsonObject:
        """Count the ids matching `id <op> value`, computed by the engine.

        Args:
            op: one of >=, >, <=, <, ==
        """
        return count_result(sent, op, value)

    return bounded_count_ids


def make_rows_tool(sent: list[Sent]):
    @tool
    def list_ids() -> list[int]:
        """Return every id in the table."""
        sent.append(Sent())
        return list(IDS)

    return list_ids


def right_filter(call: Sent) -> bool:
    """A filter is right when it selects exactly the ids the question asks for, whatever its form."""
    op, value = call.op, call.value
    return op in OPS and isinstance(value, int | float) and selected(op, value) == TRUTH


def grade(agent: AgentRun, sent: list[Sent], mode: str) -> CountingGrade:
    """`sent`: the calls the tool executed; the agent run holds every call the model asked for."""
    reading = read_count(agent.answer)
    correct = reading.definite and reading.number == EXPECTED
    # rows mode: the model had to fetch the ids before counting them.
    filter_ok = any(right_filter(c) for c in sent) if mode == "filter" else bool(sent)
    finished = agent.ok and not agent.error
    return CountingGrade(
        quoted=reading.quoted,
        grading_route=reading.route,
        graded_text=reading.graded_text,
        reading_problem=reading.problem,
        correct=correct,
        right_filter=filter_ok,
        finished=finished,
        passed=correct and filter_ok and finished,
        filters_sent=[c.label for c in sent],
        tool_calls_requested=agent.tool_calls,
        no_tool_call=not agent.tool_calls,
    )


def count_once(backend: Backend, run_number: int, args: argparse.Namespace) -> CountingRun:
    sent: list[Sent] = []
    forced = ("count_ids" if args.tools == "filter" else "list_ids") if getattr(args, "force_tool", False) else None
    try:
        model = strands_model(backend, max_tokens=args.max_tokens, timeout_s=args.timeout, force_first_tool=forced)
    except Exception as error:
        return CountingRun(backend.name, run_number, refused=backend.explain(error))
    tools = [make_count_tool(sent, bounded=bool(forced))] if args.tools == "filter" else [make_rows_tool(sent)]
    limits = AgentLimits(max_model_calls=getattr(args, "max_model_calls", 6), max_tool_calls=6)
    result = run_agent(model, QUESTION, tools=tools, system_prompt=SYSTEM, limits=limits)
    graded = grade(result, sent, args.tools)
    status = "ok " if graded.passed else "FAIL"
    console.print(
        f"{backend.name:<10} run {run_number}/{args.runs}  {status} quoted={graded.quoted} "
        f"({graded.grading_route}) filters={graded.filters_sent} {result.seconds:.2f}s"
        + (f"  [red]{result.error}[/red]" if result.error else "")
    )
    return CountingRun(backend.name, run_number, agent=result, grade=graded)
