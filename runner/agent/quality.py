"""Running the quality task set (`runner.agent.tasks`) on one backend and grading every item.

Which client asks, and why:

- `counting`, `arithmetic`, `extraction`: the plain timed client (`timed_client_for`), one user
  message and no tools. The same client the bench times, so every path the bench measures answers
  the same prompt word for word (the asynchronous endpoint and Custom Model Import too, where no
  agent runs), with each answer's time to first token and tokens kept; an agent would only add
  its system prompt and a loop these one-answer items do not need.
- `tool_use`: the Strands agent (`run_agent`) under limits, with `add_numbers` and `lookup` offered:
  the task is the tool loop itself. Only on backends that take tools (`Backend.supports_tools`) and
  run an agent; others skip the family with a note.

Grading never trusts the model: every expected answer was computed by the generator; the
sentences an answer copied from the question are set aside (`strip_echo`: a base model writes the
question out again, and its numbers are not answers); numbers are read by `read_count` and
strings by `read_text` (a last `Answer: X` line asked for; hedged, ambiguous and contradictory
answers fail); a tool item passes only with a call that ran with the
right arguments, the right number stated, and an agent that finished on its own. Each record has a
`verdict` and a one-line `reason`. An item the backend gave no answer to at all (unreachable, HTTP
error, a broken stream) is an `error`: kept, not graded, counted apart; a backend that is down
(unreachable or timing out, or two items in a row without an answer) has its remaining items
recorded as errors without being asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from strands import tool

from runner.agent.grading import normalise_text, read_count, read_text, strip_echo
from runner.agent.limits import AgentLimits
from runner.agent.models import strands_model
from runner.agent.run import AgentRun, run_agent
from runner.agent.tasks import TOOL_SYSTEM, Task, ToolTask, call_label
from runner.core.accuracy import Accuracy, QualitySummary
from runner.core.agent_evidence import ItemAgent, ItemReading, ItemTiming, QualityItem, ToolRun
from runner.core.backends import BATCH_COMMAND, Backend
from runner.core.errors import as_fault, backend_down
from runner.core.records import RequestRecord
from runner.core.stats import wilson_interval
from runner.core.typed_json import JsonObject
from runner.measure import ChatRequest, timed_client_for

CLIENTS = {
    "counting": "timed client",
    "arithmetic": "timed client",
    "extraction": "timed client",
    "tool_use": "agent",
}
# Items in a row that got no answer at all through the agent before the backend counts as down
# (the timed client's faults are typed: unreachable or timing out stops at once).
UNANSWERED_IN_A_ROW = 2
REASON_TEXT = 80


@dataclass(frozen=True)
class QualitySettings:
    max_tokens: int = 128
    timeout_s: float = 60.0
    max_model_calls: int = 4
    max_tool_calls: int = 4


# --- the tools of the tool family ----------------------------------------------------------------


def tools_for(task: Task, executed: list[ToolRun]) -> list[object]:
    """Both tools, whichever the item asks for (choosing the right one is part of the task);
    `executed` gets every call that ran, with the arguments the tool received."""
    table = task.tool.table if task.tool else {}

    @tool
    def add_numbers(a: int, b: int) -> int:
        """Add two whole numbers.

        Args:
            a: first number
            b: second number
        """
        executed.append(ToolRun("add_numbers", {"a": a, "b": b}, a + b))
        return a + b

    @tool
    def lookup(id: str) -> JsonObject:
        """Look up an item of the stock table by its id: its name and how many units are in stock.

        Args:
            id: the item's id, such as K-204
        """
        row = table.get(str(id).strip().upper())
        result: JsonObject = dict(row) if row else {"error": f"no item with id {id!r}"}
        executed.append(ToolRun("lookup", {"id": id}, result))
        return result

    return [add_numbers, lookup]


def call_matches(expected: ToolTask, call: ToolRun) -> bool:
    """The call the item asks for, whatever the order of addends or the case of an id."""
    if call.name != expected.name:
        return False
    arguments = call.arguments
    if expected.name == "add_numbers":
        values = [arguments.get("a"), arguments.get("b")]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return False
        return sorted(values) == sorted([expected.arguments["a"], expected.arguments["b"]])  # type: ignore[type-var]
    return str(arguments.get("id", "")).strip().upper() == expected.arguments["id"]


# --- grading -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Graded:
    """An item's grade: right or not, its verdict and one-line reason, what grading read in the
    answer, and for a tool item whether the right call ran, the agent finished, and what ran."""

    correct: bool
    verdict: str
    reason: str
    reading: ItemReading
    right_call: bool | None = None
    finished: bool | None = None
    tools_run: list[ToolRun] | None = None


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= REASON_TEXT else text[: REASON_TEXT - 1] + "…"


def _verdict_of(problem: str) -> str:
    if problem == "hedged":
        return "hedged"
    if problem.startswith("ambiguous"):
        return "ambiguous"
    if problem.startswith("contradicts"):
        return "contradictory"
    return "no answer"


def grade_answer(task: Task, answer: str) -> Graded:
    """The stated answer against the expected one: correct, a verdict and a one-line reason. What
    the answer copied from the question (and, for a tool item, from the system prompt) is set
    aside first: an echoed sentence states nothing (`strip_echo`)."""
    question = f"{TOOL_SYSTEM}\n{task.prompt}" if task.tool else task.prompt
    own, echoed = strip_echo(answer, question)
    read = read_count(own) if task.answer_kind == "number" else read_text(own)
    reading = ItemReading(read.quoted, read.route, read.graded_text, read.problem, echoed)
    expected = task.expected if task.answer_kind == "number" else _normalised_expected(task)
    where = f"{reading.grading_route}: {_short(reading.graded_text)!r}"
    if reading.reading_problem is not None:
        verdict = _verdict_of(reading.reading_problem)
        problem = reading.reading_problem
        reason = f"{problem} ({where})" if reading.graded_text else f"no answer read: {problem}"
        return Graded(False, verdict, reason, reading)
    if reading.quoted == expected:
        return Graded(True, "right", f"right: {task.expected!r} ({where})", reading)
    return Graded(False, "wrong", f"wrong: stated {reading.quoted!r}, expected {task.expected!r} ({where})", reading)


def _normalised_expected(task: Task) -> str:
    return normalise_text(str(task.expected))


def grade_tool_run(task: Task, run: AgentRun, executed: list[ToolRun]) -> Graded:
    """A tool item: the call as well as the answer, and an agent that finished on its own."""
    assert task.tool is not None
    answer = grade_answer(task, run.answer)
    expected = task.tool.label()
    ran = [call_label(c.name, c.arguments) for c in executed]
    right_call = any(call_matches(task.tool, c) for c in executed)
    finished = run.ok and not run.error
    if not finished:
        made = "; it had made the right call" if right_call else ""
        verdict, reason = "stopped", f"stopped: {run.error}{made}"
    elif not run.tool_calls:
        verdict, reason = "no tool call", f"no tool call (expected {expected}); the answer: {answer.reason}"
    elif not executed:
        requested = [call_label(str(c.name), c.input) for c in run.tool_calls]
        verdict, reason = "malformed call", f"no call ran: requested {', '.join(requested)} (expected {expected})"
    elif not any(c.name == task.tool.name for c in executed):
        verdict, reason = "wrong tool", f"called {', '.join(ran)}, not {task.tool.name} (expected {expected})"
    elif not right_call:
        verdict, reason = "wrong arguments", f"called {', '.join(ran)}, expected {expected}"
    elif not answer.correct:
        verdict, reason = answer.verdict, f"right call {expected}, but {answer.reason}"
    else:
        verdict, reason = "right", f"right call {expected} and right answer {task.expected}"
    return Graded(verdict == "right", verdict, reason, answer.reading, right_call, finished, executed)


# --- running -------------------------------------------------------------------------------------


def tool_skip_reason(backend: Backend) -> str | None:
    """Why this backend runs no tool item (None: it runs them)."""
    if not backend.supports.agent:
        return backend.supports.reason("agent").split(":")[0]
    if not backend.supports_tools:
        return "its server ignores tool definitions"
    return None


def item_of(backend: Backend, task: Task, graded: Graded | None = None, **asked: Any) -> QualityItem:
    """The item as the evidence keeps it: the task's facts, what asking it gave (`asked`: the
    answer, the client's figures, an error), and its grade where it was graded."""
    if graded is not None:
        asked |= {"graded": True, "correct": graded.correct, "verdict": graded.verdict, "reason": graded.reason}
        asked |= {"reading": graded.reading, "right_call": graded.right_call, "finished": graded.finished}
        asked |= {"tools_run": graded.tools_run}
    return QualityItem(
        backend=backend.name, family=task.family, item=task.item, prompt=task.prompt, expected=task.expected,
        client=CLIENTS[task.family], data=task.data, **asked,
    )  # fmt: skip


def error_item(backend: Backend, task: Task, line: str, **asked: Any) -> QualityItem:
    """An item that got no answer at all: an error, not graded."""
    return item_of(backend, task, verdict="error", reason=line, error=line, **asked)


class BackendQuality:
    """One backend's items, one at a time, through one timed client and one agent model."""

    def __init__(self, backend: Backend, settings: QualitySettings) -> None:
        self.backend = backend
        self.settings = settings
        self.client: Any = None
        self.model: Any = None
        self.down: str | None = None
        self.unanswered = 0

    def ask(self, task: Task) -> QualityItem:
        """The item asked and graded, typed as the evidence keeps it."""
        if self.down:
            return error_item(self.backend, task, f"not asked: {self.backend.name} is down ({self.down})")
        item = self._agent_item(task) if task.tool else self._plain_item(task)
        self.unanswered = self.unanswered + 1 if item.verdict == "error" else 0
        if self.unanswered >= UNANSWERED_IN_A_ROW and not self.down:
            self.down = f"{self.unanswered} items in a row got no answer: {item.error}"
        return item

    def _plain_item(self, task: Task) -> QualityItem:
        try:
            if self.client is None:
                self.client = timed_client_for(self.backend, self.settings.timeout_s)
        except Exception as error:
            self.down = self.backend.explain(error)
            return error_item(self.backend, task, self.down)
        timed = RequestRecord(backend=self.backend.name, run=0)
        try:
            self.client.chat(ChatRequest(prompt=task.prompt, max_tokens=self.settings.max_tokens), timed)
        except Exception as error:
            line = self.backend.explain(error)
            fault = as_fault(error)
            if fault is None or not fault.answered:
                if backend_down(error):
                    self.down = line
                return error_item(self.backend, task, line, timing=_timing(timed))
            # It answered, but not with an answer that counts (an abnormal finish, nothing at all).
            return item_of(
                self.backend, task, answer=timed.text, graded=True, verdict="no usable answer",
                reason=f"no usable answer: {line}", error=line, timing=_timing(timed),
            )  # fmt: skip
        graded = grade_answer(task, timed.text)
        return item_of(self.backend, task, graded, answer=timed.text, timing=_timing(timed))

    def _agent_item(self, task: Task) -> QualityItem:
        try:
            if self.model is None:
                self.model = strands_model(
                    self.backend, max_tokens=self.settings.max_tokens, timeout_s=self.settings.timeout_s
                )
        except Exception as error:
            self.down = self.backend.explain(error)
            return error_item(self.backend, task, self.down)
        executed: list[ToolRun] = []
        limits = AgentLimits(max_model_calls=self.settings.max_model_calls, max_tool_calls=self.settings.max_tool_calls)
        run = run_agent(
            self.model, task.prompt, tools=tools_for(task, executed), system_prompt=TOOL_SYSTEM, limits=limits
        )
        asked = {
            "answer": run.answer,
            "tool_calls": run.tool_calls,
            "agent": ItemAgent(round(run.seconds, 3), run.model_calls, run.output_tokens),
        }
        if not run.reached:
            return error_item(self.backend, task, run.error or "no answer", tools_run=executed, **asked)
        return item_of(self.backend, task, grade_tool_run(task, run, executed), **asked)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()


def _timing(timed: RequestRecord) -> ItemTiming:
    return ItemTiming(timed.e2e_s, timed.ttft_s, timed.output_tokens, timed.token_source, timed.finish_reason)


def run_backend(
    backend: Backend,
    tasks: list[Task],
    settings: QualitySettings,
    emit: Callable[[QualityItem], None],
    advance: Callable[[], None] = lambda: None,
) -> dict[str, str]:
    """Every item on `backend`, each record handed to `emit` as it is graded; never raises for a
    backend's fault. Returns the families skipped on this backend, with why."""
    if not backend.timed_chat:
        for _ in tasks:
            advance()
        why = f"a transform job's model, not a chat: measured by {BATCH_COMMAND}"
        return dict.fromkeys(dict.fromkeys(t.family for t in tasks), why)
    skipped: dict[str, str] = {}
    no_tools = tool_skip_reason(backend)
    asking = BackendQuality(backend, settings)
    try:
        for task in tasks:
            if task.tool and no_tools:
                skipped[task.family] = no_tools
            else:
                emit(asking.ask(task))
            advance()
    finally:
        asking.close()
    return skipped


# --- the summary ---------------------------------------------------------------------------------


def tally(records: Iterable[QualityItem], skipped: str | None = None) -> Accuracy:
    """Correct over graded, with its 95 % Wilson interval; errors (no answer at all) counted apart."""
    records = list(records)
    graded = [r for r in records if r.graded]
    correct = sum(1 for r in graded if r.correct)
    bounds = wilson_interval(correct, len(graded))
    return Accuracy(
        correct=correct,
        total=len(graded),
        accuracy=correct / len(graded) if graded else None,
        low=bounds[0] if bounds else None,
        high=bounds[1] if bounds else None,
        errors=len(records) - len(graded),
        skipped=skipped,
    )


def summarise(
    records: list[QualityItem],
    backends: list[tuple[str, str]],
    families: list[str],
    skipped: dict[str, dict[str, str]] | None = None,
) -> list[QualitySummary]:
    """Per backend (name, model): overall and per family; a family a backend skipped says why."""
    skipped = skipped or {}
    summary = []
    for name, model in backends:
        mine = [r for r in records if r.backend == name]
        per_family = {
            family: tally((r for r in mine if r.family == family), skipped.get(name, {}).get(family))
            for family in families
        }
        summary.append(QualitySummary(name, model, tally(mine), per_family))
    return summary


def model_of(backend: Backend) -> str:
    return backend.model_label or backend.model_id or "-"
