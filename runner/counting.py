"""`python -m runner.counting` (demo 1): the survey's counting demo, so its 20/20 compares.

Eleven ids in the survey's order, its question, and its instruction to finish with a sentence
stating the number (plus, here, a last line `Answer: <number>` that `runner.grading` reads
first). The agent's only tool is `count_ids(op, value)`, which returns the exact count, minimum
and maximum, so the model chooses a filter and quotes a number. A run passes only when the
number is right, a filter sent selects exactly the ids the question asks for (`id >= 10`,
`id > 9`, `id > 9.5`: whatever its form), and the agent finished on its own: a run stopped by
its limits or by a backend error never passes. `--tools rows` gives a `list_ids()` tool instead
and the model counts the ids itself (only the number is graded there).
"""

from __future__ import annotations

import argparse
import operator
from typing import Any, Literal

from pydantic import Field
from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from strands import tool

from runner.agent_limits import AgentLimits
from runner.agent_run import AgentRun, run_agent
from runner.backends import Backend
from runner.evidence import Evidence
from runner.grading import read_count
from runner.models import strands_model
from runner.session import Discovery, add_common_arguments, console, main_guard, run_command
from runner.stats import counts, fmt, median
from runner.tables import models

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


def selected(op: str, value: float) -> frozenset[int]:
    return frozenset(i for i in IDS if OPS[op](i, value))


def count_result(sent: list[dict[str, Any]], op: str, value: int) -> dict[str, Any]:
    sent.append({"op": op, "value": value})
    if op not in OPS:
        return {"error": f"op must be one of {', '.join(OPS)}"}
    matched = selected(op, value)
    return {
        "where": f"id {op} {value}",
        "count": len(matched),
        "min": min(matched, default=None),
        "max": max(matched, default=None),
    }


def make_count_tool(sent: list[dict[str, Any]], *, bounded: bool = False):
    """The survey's tool (`op` a string, `value` an integer). `bounded`: the same tool with `op` an
    enum and `value` within ±1000, for constrained decoding (`--force-tool`): there the server
    writes whatever the schema allows, and a base model fills an unbounded integer until the
    token limit cuts the call."""
    if not bounded:

        @tool
        def count_ids(op: str, value: int) -> dict[str, Any]:
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
    ) -> dict[str, Any]:
        """Count the ids matching `id <op> value`, computed by the engine.

        Args:
            op: one of >=, >, <=, <, ==
        """
        return count_result(sent, op, value)

    return bounded_count_ids


def make_rows_tool(sent: list[dict[str, Any]]):
    @tool
    def list_ids() -> list[int]:
        """Return every id in the table."""
        sent.append({})
        return list(IDS)

    return list_ids


def filter_label(call: dict[str, Any]) -> str:
    if not call:
        return "list_ids()"
    return f"id {call.get('op')} {call.get('value')}"


def right_filter(call: dict[str, Any]) -> bool:
    """A filter is right when it selects exactly the ids the question asks for, whatever its form."""
    op, value = call.get("op"), call.get("value")
    return op in OPS and isinstance(value, int | float) and selected(op, value) == TRUTH


def grade(agent: AgentRun, sent: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """`sent`: the calls the tool executed; the agent run holds every call the model asked for."""
    reading = read_count(agent.answer)
    correct = reading.definite and reading.number == EXPECTED
    # rows mode: the model had to fetch the ids before counting them.
    filter_ok = any(right_filter(c) for c in sent) if mode == "filter" else bool(sent)
    finished = agent.ok and not agent.error
    return {
        **reading.to_json(),
        "correct": correct,
        "right_filter": filter_ok,
        "finished": finished,
        "passed": correct and filter_ok and finished,
        "filters_sent": [filter_label(c) for c in sent],
        "tool_calls_requested": agent.tool_calls,
        "no_tool_call": not agent.tool_calls,
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.counting", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="agent runs per backend (default: %(default)s)")
    parser.add_argument("--tools", choices=("filter", "rows"), default="filter", help="tool variant (default: filter)")
    parser.add_argument("--max-tokens", type=int, default=256, help="per model call (default: %(default)s)")
    parser.add_argument(
        "--force-tool",
        action="store_true",
        help="the first model call must call the tool (tool_choice names it; the server constrains the output)",
    )
    add_common_arguments(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    config = {
        "ids": list(IDS),
        "question": QUESTION,
        "system": SYSTEM,
        "expected": EXPECTED,
        "tools": args.tools,
        "tool_choice": "forced on the first call" if args.force_tool else "auto",
        "runs": args.runs,
    }

    def measure(discovery: Discovery, evidence: Evidence) -> None:
        with Progress(console=console) as progress:
            for backend in discovery.backends:
                task = progress.add_task(f"{backend.name:<10}", total=args.runs)
                if not backend.supports_tools:
                    evidence.notice(f"{backend.name}: skipped, its server ignores tool definitions")
                    progress.update(task, completed=args.runs)
                    continue
                for run_number in range(1, args.runs + 1):
                    evidence.add_record(count_once(backend, run_number, args))
                    progress.advance(task)

    return run_command(
        "counting", args, config, measure, measured=lambda records: any(r.get("reached") for r in records)
    )


def count_once(backend: Backend, run_number: int, args: argparse.Namespace) -> dict[str, Any]:
    sent: list[dict[str, Any]] = []
    forced = ("count_ids" if args.tools == "filter" else "list_ids") if getattr(args, "force_tool", False) else None
    try:
        model = strands_model(backend, max_tokens=args.max_tokens, timeout_s=args.timeout, force_first_tool=forced)
    except Exception as error:
        return {
            "backend": backend.name,
            "run": run_number,
            "ok": False,
            "reached": False,
            "passed": False,
            "error": backend.explain(error),
        }
    tools = [make_count_tool(sent, bounded=bool(forced))] if args.tools == "filter" else [make_rows_tool(sent)]
    limits = AgentLimits(max_model_calls=6, max_tool_calls=6)
    result = run_agent(model, QUESTION, tools=tools, system_prompt=SYSTEM, limits=limits)
    record = {"backend": backend.name, "run": run_number, **result.to_json()}
    record.update(grade(result, sent, args.tools))
    status = "ok " if record["passed"] else "FAIL"
    console.print(
        f"{backend.name:<10} run {run_number}/{args.runs}  {status} quoted={record['quoted']} "
        f"({record['grading_route']}) filters={record['filters_sent']} {result.seconds:.2f}s"
        + (f"  [red]{result.error}[/red]" if result.error else "")
    )
    return record


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    mode = evidence["config"].get("tools", "filter")
    table = Table(
        title=f"counting ({mode}): {evidence['config']['question']} expected {evidence['config']['expected']}"
    )
    columns = (
        "backend",
        "model",
        "runs",
        "correct",
        "right filter",
        "passed",
        "errors",
        "median s",
        "graded by",
        "filters sent",
    )
    for column in columns:
        table.add_column(
            column, justify="left" if column in ("backend", "model", "graded by", "filters sent") else "right"
        )
    served = models(evidence)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in evidence["records"]:
        grouped.setdefault(record["backend"], []).append(record)
    for name, records in grouped.items():
        n = len(records)
        correct = sum(1 for r in records if r.get("correct"))
        right = sum(1 for r in records if r.get("right_filter"))
        passed = sum(1 for r in records if r.get("passed"))
        errors = sum(1 for r in records if r.get("error"))
        filters = [f for r in records for f in r.get("filters_sent", [])] or (["none"] if records else [])
        table.add_row(
            name,
            served.get(name, "-"),
            str(n),
            f"{correct}/{n}",
            f"{right}/{n}" if mode == "filter" else "-",
            f"{passed}/{n}",
            str(errors),
            fmt(median(r["seconds"] for r in records if r.get("seconds") is not None), 2),
            counts([r["grading_route"] for r in records if r.get("grading_route")]),
            counts(filters),
        )
    out.print(table)


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
