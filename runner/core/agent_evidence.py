"""What the agent commands write per record, typed: `runner.ask`'s timed answer, `runner.check`'s
result per backend, `runner.counting`'s graded runs, `runner.orchestrator`'s runs and
`runner.quality`'s graded items. Written by `runner.agent` and the commands, read back by their
tables (`runner.render`) and their exit status, which read attributes, not keys.

They sit in the lowest layer, beside the request records, so that the renderers can hold them
without depending on the agent machinery. Each is written as the entry the evidence holds (keys
and their order) by `runner.core.typed_json`, where a part's keys sit in the entry itself
(`flat`) or only some entries have a key (`where_set`); the two whose entry differs by how the
backend was asked (a check, a counting run) write their own. `from_json` reads each back, a
malformed entry refused in one line that names it (`*_of` prefixes the file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.core.accuracy import QualitySummary
from runner.core.errors import RunnerError
from runner.core.evidence import EvidenceFile
from runner.core.records import RequestRecord
from runner.core.typed_json import FlatJson, JsonObject, JsonValue, flat, read_entries, read_fields, where_set

# --- one run of the shared agent ----------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall(FlatJson):
    """A tool call the model asked for (runner/agent/limits.py records every one, a malformed one
    too): the tool's name and arguments as the model gave them, and whether the cap cancelled it."""

    name: str | None
    input: JsonValue = None
    cancelled: bool = False


@dataclass(frozen=True)
class ToolRun(FlatJson):
    """A tool call that ran (a quality or traffic item's tools): the arguments the tool received
    and what it gave back."""

    name: str
    arguments: JsonObject
    result: JsonValue = None


@dataclass
class AgentRun(FlatJson):
    """One run of the shared Strands agent (runner/agent/run.py `run_agent`): what it said, every
    tool call the model asked for, how many model calls, and why it stopped, if it did."""

    ok: bool
    seconds: float
    answer: str = ""
    error: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    model_calls: int = 0
    stopped: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    # False when the backend never gave a usable response (unreachable, HTTP error, cut stream).
    reached: bool = True


# --- runner.ask ----------------------------------------------------------------------------------


@dataclass
class AskRecord(FlatJson):
    """One question to one backend: the timed request (as the bench records it), the question,
    whether the text came in pieces (and how many), and whether Ctrl-C cut it."""

    request: RequestRecord = flat()
    question: str = ""
    streamed: bool = False
    pieces: int = 0
    interrupted: bool = False

    @classmethod
    def from_json(cls, data: object, what: str) -> AskRecord:
        request = RequestRecord.from_json(data, what)
        return cls(request, **read_fields(cls, data, what, apart=("request",)))


@dataclass(kw_only=True)
class AskFile(EvidenceFile):
    COMMAND = "ask"
    records: list[AskRecord] = field(default_factory=list)


def asks_of(evidence: Mapping[str, Any], where: object = None) -> list[AskRecord]:
    """An ask evidence file's records, typed, in order; a malformed one is one line."""
    return read_entries(evidence, "records", AskRecord.from_json, where)


# --- runner.check --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckHealth(FlatJson):
    """What waiting for the backend found: healthy or not, after how long, and what it last saw."""

    healthy: bool
    waited_s: float
    detail: str


@dataclass
class TimedAnswer(FlatJson):
    """A plain answer through the path's own timed client (a path no agent runs on): the timed
    request, and its text as the check's `answer`."""

    request: RequestRecord = flat()
    answer: str = ""

    @property
    def error(self) -> str | None:
        return self.request.error

    @classmethod
    def from_json(cls, data: object, what: str) -> TimedAnswer:
        return cls(RequestRecord.from_json(data, what), **read_fields(cls, data, what, apart=("request",)))


@dataclass
class CheckResult:
    """One backend checked: its health, then one plain answer (through the shared agent, or the
    path's own timed client where no agent runs) and one tool call through the agent. None: the
    check does not apply (`tool_note` says why; a batch model has nothing to converse with)."""

    backend: str
    health: CheckHealth
    reached: bool | None = None
    plain_ok: bool | None = None
    tool_ok: bool | None = None
    plain: AgentRun | TimedAnswer | None = None
    plain_says_paris: bool | None = None
    tool: AgentRun | None = None
    # The arguments the check's tool received, call by call.
    tool_args_seen: list[JsonObject] | None = None
    tool_note: str | None = None
    error: str | None = None

    @property
    def passed(self) -> bool:
        if self.plain_ok is None and self.tool_ok is None and self.reached is None:
            return True  # nothing to converse with (a batch model): its health is the check
        return bool(self.plain_ok or self.tool_ok)

    def to_json(self) -> JsonObject:
        """The keys each way of checking has (and in its order): through the agent, through the
        path's own timed client (or nothing to ask), or not healthy."""
        data: JsonObject = {"backend": self.backend, "health": self.health.to_json()}
        if isinstance(self.plain, AgentRun):  # through the shared agent
            data |= {"plain": self.plain.to_json(), "plain_ok": self.plain_ok}
            data |= {"plain_says_paris": self.plain_says_paris, "reached": self.reached}
            if self.tool is None:
                return data | {"tool_ok": self.tool_ok, "tool_note": self.tool_note}
            data |= {"tool": self.tool.to_json(), "tool_args_seen": self.tool_args_seen}
            return data | {"tool_ok": self.tool_ok}
        if self.tool_note is not None:  # through the path's own timed client, or nothing to ask
            data |= {"tool_ok": self.tool_ok, "tool_note": self.tool_note}
            if self.plain is not None:
                data["plain"] = self.plain.to_json()
            data |= {"reached": self.reached, "plain_ok": self.plain_ok}
            if self.plain is not None:
                data["plain_says_paris"] = self.plain_says_paris
            return data | ({"error": self.error} if self.error is not None else {})
        # not healthy, or no model to ask
        return data | {"reached": self.reached, "plain_ok": self.plain_ok, "tool_ok": self.tool_ok, "error": self.error}

    @classmethod
    def from_json(cls, data: object, what: str) -> CheckResult:
        found = read_fields(cls, data, what, apart=("health", "plain", "tool"))
        assert isinstance(data, dict)  # read_fields refused anything else
        plain, tool = data.get("plain"), data.get("tool")
        if plain is None:
            answer: AgentRun | TimedAnswer | None = None
        elif isinstance(plain, dict) and "run" in plain:
            answer = TimedAnswer.from_json(plain, f"{what}, its plain answer")
        else:
            answer = AgentRun.from_json(plain, f"{what}, its plain answer")
        return cls(
            **found,
            health=CheckHealth.from_json(data.get("health"), f"{what}, its health"),
            plain=answer,
            tool=AgentRun.from_json(tool, f"{what}, its tool call") if tool is not None else None,
        )


@dataclass(kw_only=True)
class CheckFile(EvidenceFile):
    COMMAND = "check"
    records: list[CheckResult] = field(default_factory=list)


def checks_of(evidence: Mapping[str, Any], where: object = None) -> list[CheckResult]:
    """A check evidence file's results, typed, in order; a malformed one is one line."""
    return read_entries(evidence, "records", CheckResult.from_json, where)


# --- runner.counting -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CountingGrade(FlatJson):
    """One counting run graded (runner/agent/counting.py `grade`): the number the answer states and
    how it was read, then whether the number, the filter sent and the finish were right."""

    quoted: float | None
    grading_route: str
    graded_text: str
    reading_problem: str | None
    correct: bool
    right_filter: bool
    finished: bool
    passed: bool
    filters_sent: list[str] = field(default_factory=list)
    tool_calls_requested: list[ToolCall] = field(default_factory=list)
    no_tool_call: bool = False


@dataclass
class CountingRun:
    """One run of the counting demo on one backend: the agent's run and its grade, side by side in
    one entry, or (no model to run: `refused` says why) neither."""

    backend: str
    run: int
    agent: AgentRun | None = None
    grade: CountingGrade | None = None
    refused: str | None = None

    @property
    def error(self) -> str | None:
        return self.agent.error if self.agent else self.refused

    @property
    def reached(self) -> bool:
        return self.agent.reached if self.agent else False

    @property
    def passed(self) -> bool:
        return self.grade.passed if self.grade else False

    @property
    def correct(self) -> bool:
        return self.grade.correct if self.grade else False

    @property
    def right_filter(self) -> bool:
        return self.grade.right_filter if self.grade else False

    @property
    def seconds(self) -> float | None:
        return self.agent.seconds if self.agent else None

    @property
    def filters_sent(self) -> list[str]:
        return self.grade.filters_sent if self.grade else []

    @property
    def grading_route(self) -> str | None:
        return self.grade.grading_route if self.grade else None

    def to_json(self) -> JsonObject:
        """The run and its grade side by side; with no model, what the run never got."""
        data: JsonObject = {"backend": self.backend, "run": self.run}
        if self.agent is None or self.grade is None:
            return data | {"ok": False, "reached": False, "passed": False, "error": self.refused}
        return data | self.agent.to_json() | self.grade.to_json()

    @classmethod
    def from_json(cls, data: object, what: str) -> CountingRun:
        found = read_fields(cls, data, what, apart=("agent", "grade", "refused"))
        assert isinstance(data, dict)  # read_fields refused anything else
        if "seconds" not in data:  # no model to run
            refused = data.get("error")
            if refused is not None and not isinstance(refused, str):
                raise RunnerError(f"{what}: 'error' is {refused!r}, not a string")
            return cls(**found, refused=refused)
        return cls(**found, agent=AgentRun.from_json(data, what), grade=CountingGrade.from_json(data, what))


@dataclass(kw_only=True)
class CountingFile(EvidenceFile):
    COMMAND = "counting"
    records: list[CountingRun] = field(default_factory=list)


def counting_runs_of(evidence: Mapping[str, Any], where: object = None) -> list[CountingRun]:
    """A counting evidence file's runs, typed, in order; a malformed one is one line."""
    return read_entries(evidence, "records", CountingRun.from_json, where)


# --- runner.orchestrator -------------------------------------------------------------------------


@dataclass
class OrchestratorAsk(FlatJson):
    """One ask the agent made of a backend: the backend's title, the answer (one line, cut), and
    the timed request."""

    title: str
    answer: str
    request: RequestRecord = flat()

    @classmethod
    def from_json(cls, data: object, what: str) -> OrchestratorAsk:
        return cls(request=RequestRecord.from_json(data, what), **read_fields(cls, data, what, apart=("request",)))


@dataclass(frozen=True)
class ScoreRow(FlatJson):
    """A backend's row of the code's table: its asks, how many were measured, the last measured
    answer, the median seconds and tokens/s over them, or the last error when none was."""

    backend: str
    title: str
    asks: int
    measured: int
    answer: str
    seconds: float | None
    tokens_per_s: float | None
    error: str | None


@dataclass(frozen=True)
class AgentFailure(FlatJson):
    """An agent that never ran (no model for it): what the run keeps in place of its run."""

    ok: bool
    error: str | None
    answer: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class OrchestratorRun(FlatJson):
    """One orchestrator run: the agent's run, the code's table and every ask behind it, the
    backends never asked, and the agent's closing sentence checked against the table's winner."""

    run: int
    agent_backend: str
    agent: AgentRun | AgentFailure
    table: list[ScoreRow]
    table_markdown: str
    asks: list[OrchestratorAsk]
    warm_ups: list[RequestRecord]
    never_asked: list[str]
    agent_table: str
    closing_sentence: str
    table_winner: str | None
    sentence_names: list[str]
    sentence_names_different_winner: bool

    @classmethod
    def from_json(cls, data: object, what: str) -> OrchestratorRun:
        found = read_fields(cls, data, what, apart=("agent", "table", "asks", "warm_ups"))
        assert isinstance(data, dict)  # read_fields refused anything else
        agent = data.get("agent")
        read_agent = AgentRun.from_json if isinstance(agent, dict) and "seconds" in agent else AgentFailure.from_json
        return cls(
            **found,
            agent=read_agent(agent, f"{what}, its agent"),
            table=read_entries(data, "table", ScoreRow.from_json, what),
            asks=read_entries(data, "asks", OrchestratorAsk.from_json, what),
            warm_ups=read_entries(data, "warm_ups", RequestRecord.from_json, what),
        )


@dataclass(kw_only=True)
class OrchestratorFile(EvidenceFile):
    COMMAND = "orchestrator"
    records: list[OrchestratorRun] = field(default_factory=list)


def orchestrator_runs_of(evidence: Mapping[str, Any], where: object = None) -> list[OrchestratorRun]:
    """An orchestrator evidence file's runs, typed, in order; a malformed one is one line."""
    return read_entries(evidence, "records", OrchestratorRun.from_json, where)


# --- runner.quality ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemTiming:
    """An item asked through the plain timed client: its figures as the bench's records keep them."""

    seconds: float | None
    ttft_s: float | None
    output_tokens: int | None
    token_source: str | None
    finish_reason: str | None


@dataclass(frozen=True)
class ItemAgent:
    """An item asked through the agent: how long its run took, its model calls and output tokens."""

    seconds: float
    model_calls: int
    output_tokens: int | None


@dataclass(frozen=True)
class ItemReading:
    """What grading read in the answer (runner/agent/grading.py): the value quoted, the route that
    read it, the text it graded, why it does not count (if so), and the echoed sentences set aside."""

    quoted: float | str | None
    grading_route: str
    graded_text: str
    reading_problem: str | None
    echoed_sentences_set_aside: int


@dataclass(frozen=True)
class QualityItem(FlatJson):
    """One quality item on one backend, graded (runner/agent/quality.py): the item and its
    expected answer, the answer, the verdict and its one-line reason; an item with no answer at all
    is an `error`, not graded. The figures of the client that asked (`timing`: the plain timed
    client; `agent`: the agent), what grading read (`reading`), and for a tool item whether the
    right call ran, the agent finished, and the calls that ran, where the item has them."""

    backend: str
    family: str
    item: str
    prompt: str = ""
    expected: int | str = ""
    answer: str = ""
    correct: bool = False
    reason: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    verdict: str | None = None
    graded: bool = False
    error: str | None = None
    client: str = ""
    # The item's own facts (the ids counted, the table looked up), as the task set made them.
    data: JsonObject = field(default_factory=dict)
    # The item's keys are followed by the client's figures, what grading read and the tool
    # item's own, each where the item has it.
    timing: ItemTiming | None = flat(default=None)
    agent: ItemAgent | None = flat(default=None)
    reading: ItemReading | None = flat(default=None)
    right_call: bool | None = where_set()
    finished: bool | None = where_set()
    tools_run: list[ToolRun] | None = where_set()

    @classmethod
    def from_json(cls, data: object, what: str) -> QualityItem:
        found = read_fields(cls, data, what, apart=("timing", "agent", "reading"))
        assert isinstance(data, dict)  # read_fields refused anything else
        return cls(
            **found,
            timing=ItemTiming(**read_fields(ItemTiming, data, what)) if "ttft_s" in data else None,
            agent=ItemAgent(**read_fields(ItemAgent, data, what)) if "model_calls" in data else None,
            reading=ItemReading(**read_fields(ItemReading, data, what)) if "grading_route" in data else None,
        )


@dataclass(kw_only=True)
class QualityFile(EvidenceFile):
    """Quality evidence: every item graded, then the accuracy per backend and family."""

    COMMAND = "quality"
    records: list[QualityItem] = field(default_factory=list)
    summary: list[QualitySummary] | None = where_set()


def quality_items_of(evidence: Mapping[str, Any], where: object = None) -> list[QualityItem]:
    """A quality evidence file's graded items, typed, in order; a malformed one is one line."""
    return read_entries(evidence, "records", QualityItem.from_json, where)
