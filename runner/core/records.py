"""What one timed request records, typed: written by `runner.measure` as it times a request, read
back from a bench evidence file's `records` (and `warm_up`) by `runner.figures`, `runner.costing`
and the reports, which read attributes, not keys.

It sits in the lowest layer so that every package reading evidence can hold a record without
depending on the measuring machinery. `RequestRecord.to_json` writes exactly the entry the
evidence holds (through `runner.core.typed_json`); `from_json` reads it back (the derived rates
are recomputed, not read), a malformed entry refused in one line that names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, ClassVar

from runner.core.typed_json import FlatJson, JsonObject, fields_json, read_entries, read_fields, unwritten, where_set

# The level a record without one ran in: the survey's requests, one at a time.
SINGLE = "1 at a time"


@dataclass(frozen=True)
class Level(FlatJson):
    """The load level a request ran in, as its record keeps it (runner/measure/load.py
    `LoadLevel.to_json`): closed loop (`concurrency`, `value` at a time) or open (`rate`, `value`
    a second), its label as the reports show it."""

    mode: str = "concurrency"
    value: float = 1
    requests: int | None = None
    max_concurrency: int | None = None
    # A workload's prompt length at this level (a prompt-length sweep crosses lengths with levels).
    input_tokens: int | None = None
    label: str = SINGLE
    # Set on a level stopped before its end (Ctrl-C, SIGTERM): how many of its requests (or agent
    # tasks) had finished, all of them kept.
    stopped_after: int | None = where_set()

    def stopped(self, finished: int) -> Level:
        """The level as the records it kept when it was stopped hold it: its label says so, so no
        table, cost row or advice takes the figures of what finished for the whole level's."""
        of = f" of {self.requests}" if self.requests else ""
        return replace(self, label=f"{self.label} (stopped after {finished}{of})", stopped_after=finished)


@dataclass(frozen=True)
class SloVerdict(FlatJson):
    """One request against the service-level objectives (runner/workloads/slo.py `judge`): met
    (None: not judged here, `unjudged` says why), and the objectives it missed (`failed` for a
    request that failed)."""

    met: bool | None
    missed: list[str] = field(default_factory=list)
    unjudged: str | None = where_set()


@dataclass
class RequestRecord(FlatJson):
    """One request's raw figures; derived rates are computed here, once, from the raw times, and
    written after them (never read back)."""

    JSON_DERIVED: ClassVar[tuple[str, ...]] = ("tokens_per_s", "decode_tokens_per_s", "client_overhead_s")

    backend: str
    run: int
    ok: bool = False
    error: str | None = None
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))
    ttft_s: float | None = None
    e2e_s: float | None = None
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    token_source: str | None = None
    finish_reason: str | None = None
    text: str = ""
    chunks: int = 0
    # The server's own figures where it reports them (llama.cpp's `timings`; vLLM has none).
    server_timings: dict[str, float] | None = None
    # False when the request went out on the connection the previous one used (None: not knowable).
    new_connection: bool | None = None
    # True when the reused connection turned out closed by the server and the request went again.
    stale_connection_retry: bool = False
    # Arrival time (s from the request start) of every chunk that carried output, and, where the
    # server reports a running count in each chunk, the completion tokens after that chunk.
    chunk_times: list[float] = field(default_factory=list)
    chunk_token_counts: list[int] | None = None
    # The load level this request ran in (bench sweeps), and when it was meant to go and went
    # (s from the level's start; open loop: a late send means the client fell behind).
    level: Level | None = None
    scheduled_s: float | None = None
    sent_s: float | None = None
    # True for the first request after idle on a path that scales from zero (serverless, async,
    # Custom Model Import): timed and kept, but summarised apart from the warm requests.
    cold_start: bool | None = None
    # A path's own stages in seconds (async: queued_s, leave_zero_s, work_s; import: not_ready_s).
    phases: dict[str, float] | None = None
    # The workload's targets: the prompt's tokens as meant, the output asked for, and whether the
    # path was told to produce exactly that many (False: the model chose the length).
    target_input_tokens: int | None = None
    target_output_tokens: int | None = None
    forced_length: bool | None = None
    # A conversation's index in its level and the turn within it (multi-turn workloads).
    session: int | None = None
    turn: int | None = None
    # The service-level objectives' verdict (runner/workloads/slo.py `judge`), set when the level ends.
    slo: SloVerdict | None = None
    # Kept only where the entry has them (no measuring path writes them; runner.costing reads
    # them): a mark that the figure came from emulated AWS or a scripted server (True, or what it
    # was), and a Custom Model Import's units per model copy (a number, or GetImportedModel's
    # `customModelUnits` object).
    emulated: str | bool | None = where_set()
    scripted: str | bool | None = where_set()
    custom_model_units: int | JsonObject | None = where_set()
    # bench --in-region: which path measured it (`tunnel`, `in-region`), on the rows measured both ways.
    path: str | None = where_set()
    # bench --clients K: which of the K client processes sent it (1 to K; unset with one client).
    client: int | None = where_set()

    @property
    def label(self) -> str:
        """The label of the level it ran in (one at a time when it kept none)."""
        return self.level.label if self.level else SINGLE

    @property
    def client_overhead_s(self) -> float | None:
        """End-to-end time the server's own prompt and decode times do not account for."""
        timings = self.server_timings or {}
        if not self.ok or self.e2e_s is None or "prompt_ms" not in timings or "predicted_ms" not in timings:
            return None
        return self.e2e_s - (timings["prompt_ms"] + timings["predicted_ms"]) / 1000

    @property
    def tokens_per_s(self) -> float | None:
        """Output tokens over end-to-end time (network and prompt included), as the survey reports."""
        if not self.ok or not self.output_tokens or not self.e2e_s:
            return None
        return self.output_tokens / self.e2e_s

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Tokens after the first over the time after the first token: the server's decode rate."""
        if not self.ok or not self.output_tokens or self.output_tokens < 2 or self.ttft_s is None or not self.e2e_s:
            return None
        span = self.e2e_s - self.ttft_s
        return (self.output_tokens - 1) / span if span > 0 else None

    @classmethod
    def from_json(cls, data: object, what: str) -> RequestRecord:
        """The entry read back; the derived rates (tokens_per_s, decode_tokens_per_s,
        client_overhead_s) are not read: they are recomputed from the raw times."""
        found = read_fields(cls, data, what, apart=("level", "slo"))
        assert isinstance(data, dict)  # read_fields refused anything else
        level, slo = data.get("level"), data.get("slo")
        return cls(
            **found,
            level=Level.from_json(level, f"{what}, its level") if level is not None else None,
            slo=SloVerdict.from_json(slo, f"{what}, its verdict") if slo is not None else None,
        )


def records_of(evidence: Mapping[str, Any], key: str = "records", where: object = None) -> list[RequestRecord]:
    """A bench evidence file's request records (`key`: `records`, or `warm_up`), typed, in order;
    a malformed one is one line naming it (prefixed with `where`, the file, when given)."""
    return read_entries(evidence, key, RequestRecord.from_json, where)


@dataclass(frozen=True)
class AgentTask(FlatJson):
    """One task of agent traffic (`bench --workload agent`, runner/agent/traffic.py writes them
    under `tasks`, and its sessions' untimed first tasks under `warm_up`): a different record
    from a request's. A task whose session had no model (`ran` False) keeps only its backend,
    number, kind, failure and error."""

    backend: str
    task: int
    kind: str
    item: str | None = None
    ok: bool = False
    passed: bool = False
    seconds: float | None = None
    model_calls: int | None = None
    tool_calls: int | None = None
    tool_calls_right: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    answer: str | None = None
    error: str | None = None
    # The session that ran it, when it went (s from the level's start; a warm-up, `warm_up`, has
    # no time), and the level: `sessions` at a time.
    session: int | None = None
    sent_s: float | None = where_set()
    warm_up: bool | None = where_set()
    level: Level | None = None
    ran: bool = unwritten(default=True)

    @property
    def sessions(self) -> float:
        """The sessions its level ran at once (one when it kept no level)."""
        return self.level.value if self.level else 1

    def to_json(self) -> JsonObject:
        data = fields_json(self)
        return data if self.ran else {key: value for key, value in data.items() if key not in _RUN_ONLY}

    @classmethod
    def from_json(cls, data: object, what: str) -> AgentTask:
        return cls(**read_fields(cls, data, what), ran=isinstance(data, dict) and "seconds" in data)  # type: ignore[arg-type]


# What only a task that ran has.
_RUN_ONLY = (
    "item",
    "seconds",
    "model_calls",
    "tool_calls",
    "tool_calls_right",
    "input_tokens",
    "output_tokens",
    "answer",
)


def tasks_of(evidence: Mapping[str, Any], where: object = None) -> list[AgentTask]:
    """A bench evidence file's agent tasks (`tasks`), typed, in order; a malformed one is one line."""
    return read_entries(evidence, "tasks", AgentTask.from_json, where)
