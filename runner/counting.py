"""`python -m runner.counting` (demo 1): how many of eleven ids are 10 or more?

The agent's only tool is `count_ids(op, value)`, which returns the exact count, minimum and
maximum, so the model chooses a filter and quotes a number. A run passes only when the number
is right AND the filter sent was right: an agent that sends `id > 10` gets 7 back, and saying
8 anyway is right by accident. `--tools rows` gives a `list_ids()` tool instead and the model
counts the ids itself (only the number is graded there).
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from rich.progress import Progress
from rich.table import Table
from strands import tool

from runner.agent_limits import AgentLimits
from runner.agent_run import run_agent
from runner.models import strands_model
from runner.report import counts
from runner.session import add_common_arguments, conclude, console, main_guard, run_session
from runner.stats import fmt, median

IDS = (3, 7, 9, 10, 12, 15, 21, 34, 42, 57, 88)
THRESHOLD = 10
EXPECTED = sum(1 for i in IDS if i >= THRESHOLD)
QUESTION = f"How many of the ids are {THRESHOLD} or more?"
OPS = {
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    "==": lambda a, b: a == b,
}
# `id > 9` selects exactly the same integer ids as `id >= 10`; both express the question.
RIGHT_FILTERS = {(">=", THRESHOLD), (">", THRESHOLD - 1)}
SYSTEM_FILTER = "You answer questions about a fixed list of ids. Always use the count_ids tool, then quote its count."
SYSTEM_ROWS = "You answer questions about a fixed list of ids. Call list_ids to get them, count them yourself, and quote the number."
NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven"]
    )
}


def make_count_tool(sent: list[dict[str, Any]]):
    @tool
    def count_ids(op: str, value: int) -> dict[str, Any]:
        """Count the ids that satisfy `id <op> value`.

        Args:
            op: one of >=, >, <=, <, ==
            value: the number to compare each id with
        """
        sent.append({"op": op, "value": value})
        if op not in OPS:
            return {"error": f"unknown op {op!r}; use one of {', '.join(OPS)}"}
        matched = [i for i in IDS if OPS[op](i, value)]
        return {"count": len(matched), "min": min(matched, default=None), "max": max(matched, default=None)}

    return count_ids


def make_rows_tool(sent: list[dict[str, Any]]):
    @tool
    def list_ids() -> list[int]:
        """Return every id in the list."""
        sent.append({})
        return list(IDS)

    return list_ids


def quoted_number(answer: str) -> int | None:
    """The count the answer states: the first number that is not the threshold or the list size."""
    tokens = re.findall(r"\b\d+\b|\b(?:" + "|".join(NUMBER_WORDS) + r")\b", answer.lower())
    for token in tokens:
        number = int(token) if token.isdigit() else NUMBER_WORDS[token]
        if number not in (THRESHOLD, len(IDS)):
            return number
    return None


def filter_label(call: dict[str, Any]) -> str:
    if not call:
        return "list_ids()"
    return f"id {call.get('op')} {call.get('value')}"


def grade(answer: str, sent: list[dict[str, Any]], requested: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """`sent`: calls the tool executed; `requested`: every call the model asked for (malformed too)."""
    number = quoted_number(answer)
    # rows mode: the model had to fetch the ids before counting them.
    right_filter = any((c.get("op"), c.get("value")) in RIGHT_FILTERS for c in sent) if mode == "filter" else bool(sent)
    correct = number == EXPECTED
    return {
        "quoted": number,
        "correct": correct,
        "right_filter": right_filter,
        "passed": correct and bool(right_filter),
        "filters_sent": [filter_label(c) for c in sent],
        "tool_calls_requested": requested,
        "no_tool_call": not requested,
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.counting", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="agent runs per backend (default: %(default)s)")
    parser.add_argument("--tools", choices=("filter", "rows"), default="filter", help="tool variant (default: filter)")
    parser.add_argument("--max-tokens", type=int, default=256, help="per model call (default: %(default)s)")
    add_common_arguments(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    config = {"ids": list(IDS), "question": QUESTION, "expected": EXPECTED, "tools": args.tools, "runs": args.runs}
    interrupted = False
    with run_session("counting", args, config) as (discovery, evidence):
        try:
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
        except KeyboardInterrupt:
            interrupted = True
        measured = any(r.get("reached") for r in evidence.data["records"])
        return conclude(evidence, interrupted=interrupted, measured=measured)


def count_once(backend, run_number: int, args) -> dict[str, Any]:
    sent: list[dict[str, Any]] = []
    try:
        model = strands_model(backend, max_tokens=args.max_tokens, timeout_s=args.timeout)
    except Exception as error:
        from runner.errors import describe

        return {"backend": backend.name, "run": run_number, "ok": False, "reached": False, "error": describe(error)}
    tools = [make_count_tool(sent)] if args.tools == "filter" else [make_rows_tool(sent)]
    limits = AgentLimits(max_model_calls=6, max_tool_calls=6)
    result = run_agent(
        model,
        QUESTION,
        tools=tools,
        system_prompt=SYSTEM_FILTER if args.tools == "filter" else SYSTEM_ROWS,
        limits=limits,
    )
    record = {"backend": backend.name, "run": run_number, **result.to_json()}
    record.update(grade(result.answer, sent, result.tool_calls, args.tools))
    status = "ok " if record["passed"] else "FAIL"
    console.print(
        f"{backend.name:<10} run {run_number}/{args.runs}  {status} quoted={record['quoted']} "
        f"filters={record['filters_sent']} {result.seconds:.2f}s"
        + (f"  [red]{result.error}[/red]" if result.error else "")
    )
    return record


def counting_table(evidence: dict[str, Any]) -> Table:
    mode = evidence["config"].get("tools", "filter")
    table = Table(
        title=f"counting ({mode}): {evidence['config']['question']} expected {evidence['config']['expected']}"
    )
    for column in ("backend", "runs", "correct", "right filter", "passed", "errors", "median s", "filters sent"):
        table.add_column(column, justify="left" if column in ("backend", "filters sent") else "right")
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
            str(n),
            f"{correct}/{n}",
            f"{right}/{n}" if mode == "filter" else "-",
            f"{passed}/{n}",
            str(errors),
            fmt(median(r["seconds"] for r in records if r.get("seconds") is not None), 2),
            counts(filters),
        )
    return table


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
