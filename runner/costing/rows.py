"""The rows the costing package writes into evidence, typed at the package's boundary: a cost row
(`runner.cost`: per backend and load level, cold start, storage line or batch job), the
second-instance verdict beside them, and an advice option (`runner.advise`).

Each row writes exactly the JSON its evidence holds (`to_json`) and reads it back (`from_json`),
a malformed row refused in one line. A cost or advise file records its rows' version
(`ROWS_SCHEMA`, as `rows_schema`); a file of another version is refused in one line. A file written
before the version was recorded holds version 1's rows and is read as such.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from catalog.backends import Billing
from catalog.prices import Price
from runner.core.accuracy import Accuracy
from runner.core.errors import RunnerError
from runner.core.typed_json import FlatJson, JsonObject, fits, named, read_fields
from runner.costing.billing_models import billing_model

ROWS_SCHEMA = 1
ROW_COMMANDS = ("cost", "advise")
R = TypeVar("R")


def _billing(data: JsonObject, what: str) -> Billing:
    try:
        return Billing(data.get("billing"))
    except ValueError:
        raise RunnerError(f"{what}: 'billing' is {data.get('billing')!r}, not a billing model") from None


def _price(data: JsonObject, what: str) -> Price | None:
    if data.get("price") is None:
        return None
    return Price(**read_fields(Price, data["price"], f"{what}, its price"))


@dataclass
class LevelFigures(FlatJson):
    """What one backend sustained at one load level, from its warm bench records."""

    level: str
    requests: int
    output_tok_s: float | None
    method: str
    input_per_output: float | None
    mode: str | None = None
    value: float | None = None
    duration_s: float | None = None
    output_tokens: int = 0
    prompt_tokens: int = 0
    e2e_sum_s: float = 0.0
    p95_e2e_s: float | None = None
    instances: int | None = None


@dataclass
class ColdFigures:
    """The cold starts of one backend: how many, their median end-to-end time and output tokens,
    and the phase measured apart where its billing makes it count (`leave_zero_s` for async, the
    time leaving zero; `not_ready_s` for Custom Model Import, the wait for its copy)."""

    requests: int
    median_e2e_s: float | None
    output_tokens: int
    phase: str | None = None
    phase_s: float | None = None

    def to_json(self) -> JsonObject:
        figures = {"requests": self.requests, "median_e2e_s": self.median_e2e_s, "output_tokens": self.output_tokens}
        return figures | ({self.phase: self.phase_s} if self.phase else {})


COLD_PHASES = ("leave_zero_s", "not_ready_s")


@dataclass
class JobFigures(FlatJson):
    """A batch transform job's figures, as `runner.batch` recorded them."""

    billable_s: float | None
    instance_count: int | None
    output_tokens: int | None
    records_per_s: float | None


Figures = LevelFigures | ColdFigures | JobFigures


def _figures(data: object, what: str) -> Figures:
    """The figures of a row, told apart by their own fields: a job's billable time, a cold start's
    median, else a load level's."""
    if isinstance(data, dict) and "billable_s" in data:
        return JobFigures(**read_fields(JobFigures, data, f"{what}, its figures"))
    if isinstance(data, dict) and "median_e2e_s" in data:
        phase = next((key for key in COLD_PHASES if key in data), None)
        cold = read_fields(ColdFigures, data, f"{what}, its figures", apart=("phase", "phase_s"))
        phase_s = data.get(phase) if phase else None
        if not fits(phase_s, float | None):
            raise RunnerError(f"{what}, its figures: {phase!r} is {phase_s!r}, not a number")
        return ColdFigures(**cold, phase=phase, phase_s=phase_s)
    return LevelFigures(**read_fields(LevelFigures, data, f"{what}, its figures"))


@dataclass
class CostRow:
    """One row of `runner.cost`: a backend as priced (evidence, billing model, provenance, region,
    what it is billed by, the price), and then one of: why it is not priced (`note`); a load level
    or a batch job (`figures`, `output_tok_s`, $ per million output tokens and how); a cold start
    (its `figures`, what one costs); or a fixed monthly line (`fixed_usd_per_month`)."""

    evidence: str
    backend: str
    billing: Billing
    provenance: str | None
    region: str | None
    billed_by: str | None
    price: Price | None
    usd_per_hour: float | None
    usd_per_month_24x7: float | None
    level: str | None = None
    figures: Figures | None = None
    output_tok_s: float | None = None
    usd_per_event: float | None = None
    usd_per_job: float | None = None
    usd_per_million_output: float | None = None
    sustained_usd_per_million_output: float | None = None
    fixed_usd_per_month: float | None = None
    basis: str | None = None
    breakeven_vs_bedrock_tok_s: float | None = None
    bedrock_usd_per_million_output: float | None = None
    note: str | None = None

    @property
    def is_level(self) -> bool:
        """A load level or a batch job (not a cold start, a fixed line, or a row not priced)."""
        return isinstance(self.figures, LevelFigures | JobFigures)

    def to_json(self) -> JsonObject:
        row: JsonObject = {
            "evidence": self.evidence,
            "backend": self.backend,
            "billing": self.billing.value,
            "provenance": self.provenance,
            "region": self.region,
            "billed_by": self.billed_by,
            "price": self.price.to_json() if self.price else None,
            "usd_per_hour": self.usd_per_hour,
            "usd_per_month_24x7": self.usd_per_month_24x7,
        }
        if self.figures is not None or self.fixed_usd_per_month is not None:
            row["level"] = self.level
        if self.figures is not None:
            row["figures"] = self.figures.to_json()
        if self.is_level:
            row["output_tok_s"] = self.output_tok_s
        said = self._said_when_unknown()
        for key in COST_ROW_OPTIONAL:
            if getattr(self, key) is not None or key in said:
                row[key] = getattr(self, key)
        return row

    def _said_when_unknown(self) -> tuple[str, ...]:
        """A level priced by its requests (serverless, Custom Model Import, a batch job) always says
        its $ per million output tokens, null when it had no output tokens; Custom Model Import
        also its $ per million while busy, null when its rate is unknown."""
        if not self.is_level or self.basis is None:
            return ()
        return billing_model(self.billing).said_when_unknown

    @classmethod
    def from_json(cls, data: object) -> CostRow:
        what = named(data, "backend", "a cost row")
        found = read_fields(cls, data, what, apart=("billing", "price", "figures"))
        assert isinstance(data, dict)  # _read refused anything else
        figures = _figures(data["figures"], what) if data.get("figures") is not None else None
        return cls(**found, billing=_billing(data, what), price=_price(data, what), figures=figures)


# Written where set (or said when unknown), in this order.
COST_ROW_OPTIONAL = (
    "usd_per_event",
    "usd_per_job",
    "usd_per_million_output",
    "sustained_usd_per_million_output",
    "fixed_usd_per_month",
    "basis",
    "breakeven_vs_bedrock_tok_s",
    "bedrock_usd_per_million_output",
    "note",
)


@dataclass
class Scaling:
    """For the real-time endpoint: where one instance stops growing (its capacity level and the
    next one) and whether a second instance pays for itself, with the verdict in one line."""

    backend: str
    max_instances: int
    bound_s: float | None
    verdict: str = ""
    capacity_level: str | None = None
    capacity_tok_s: float | None = None
    one_instance_usd_per_million: float | None = None
    next_level: str | None = None
    next_tok_s: float | None = None
    next_p95_e2e_s: float | None = None
    instances: int | None = None
    scaled_level: str | None = None
    scaled_tok_s: float | None = None
    scaled_usd_per_million: float | None = None
    pays_for_itself: bool | None = None
    evidence: str | None = None  # the bench evidence it came from, set by runner.cost

    def to_json(self) -> JsonObject:
        row: JsonObject = {"backend": self.backend, "max_instances": self.max_instances, "bound_s": self.bound_s}
        if self.capacity_level is not None:
            row |= {key: getattr(self, key) for key in SCALING_CAPACITY}
        if self.scaled_level is not None:
            row |= {key: getattr(self, key) for key in SCALING_SCALED}
        row["verdict"] = self.verdict
        if self.evidence is not None:
            row["evidence"] = self.evidence
        return row

    @classmethod
    def from_json(cls, data: object) -> Scaling:
        return cls(**read_fields(cls, data, named(data, "backend", "a second-instance verdict")))


SCALING_CAPACITY = (
    "capacity_level",
    "capacity_tok_s",
    "one_instance_usd_per_million",
    "next_level",
    "next_tok_s",
    "next_p95_e2e_s",
)
SCALING_SCALED = ("instances", "scaled_level", "scaled_tok_s", "scaled_usd_per_million", "pays_for_itself")


@dataclass
class Advice:
    """One option of `runner.advise`: its month for the workload with the arithmetic in one line,
    whether it meets the bounds and why not, the latency it was judged on, and (with objectives)
    whether its capacity was measured or extrapolated."""

    option: str
    billing: Billing
    evidence: str
    provenance: str | None
    monthly_usd: float | None = None
    arithmetic: str = ""
    meets: bool | None = None
    price: Price | None = None
    why: str = ""
    p95_s: float | None = None
    p95_ttft_s: float | None = None
    level: str | None = None
    cold_share: float | None = None
    notes: list[str] | None = None
    measured_capacity: bool | None = None
    extrapolated: str | None = None
    # From the quality evidence given beside (runner.quality's overall figures), set by runner.advise.
    accuracy: Accuracy | None = None

    def to_json(self) -> JsonObject:
        row: JsonObject = {
            "option": self.option,
            "billing": self.billing.value,
            "evidence": self.evidence,
            "provenance": self.provenance,
            "monthly_usd": self.monthly_usd,
            "arithmetic": self.arithmetic,
            "meets": self.meets,
        }
        if self.price is not None:
            row["price"] = self.price.to_json()
        row["why"] = self.why
        if self.monthly_usd is not None:
            # A priced month says the latency it was judged on: a batch job has no first token, and
            # Bedrock per token no load level.
            row["p95_s"] = self.p95_s
            model = billing_model(self.billing)
            if model.first_token:
                row["p95_ttft_s"] = self.p95_ttft_s
            if model.load_level:
                row["level"] = self.level
        for key in ("cold_share", "notes", "measured_capacity", "extrapolated"):
            if getattr(self, key) is not None:
                row[key] = getattr(self, key)
        row["accuracy"] = self.accuracy.to_json() if self.accuracy is not None else None
        return row

    @classmethod
    def from_json(cls, data: object) -> Advice:
        what = named(data, "option", "an advice row")
        found = read_fields(cls, data, what, apart=("billing", "price", "accuracy"))
        assert isinstance(data, dict)  # _read refused anything else
        accuracy = data.get("accuracy")
        return cls(
            **found,
            billing=_billing(data, what),
            price=_price(data, what),
            accuracy=Accuracy.from_json(accuracy, f"{what}, its accuracy") if accuracy is not None else None,
        )


def check_rows_schema(evidence: JsonObject, where: object) -> None:
    """A cost or advise file whose rows are of another version than this runner's is one line."""
    if evidence.get("command") not in ROW_COMMANDS:
        return
    version = evidence.get("rows_schema", 1)
    if version != ROWS_SCHEMA:
        raise RunnerError(
            f"{where}: {evidence['command']} rows of version {version!r}; this runner reads version {ROWS_SCHEMA} "
            f"(python -m runner.{evidence['command']} writes them again)"
        )


def _rows_in(evidence: JsonObject, where: object, key: str, read: Callable[[object], R]) -> list[R]:
    check_rows_schema(evidence, where)
    try:
        return [read(entry) for entry in evidence.get(key) or []]
    except RunnerError as error:
        raise RunnerError(f"{where}: {error}") from None


def cost_rows_in(evidence: JsonObject, where: object) -> list[CostRow]:
    """The rows of a cost evidence file, typed (its version checked; a malformed row is one line)."""
    return _rows_in(evidence, where, "records", CostRow.from_json)


def scaling_in(evidence: JsonObject, where: object) -> list[Scaling]:
    """The second-instance verdicts of a cost evidence file, typed."""
    return _rows_in(evidence, where, "scaling", Scaling.from_json)


def advice_in(evidence: JsonObject, where: object) -> list[Advice]:
    """The options of an advise evidence file, typed (its version checked; a malformed row is one line)."""
    return _rows_in(evidence, where, "records", Advice.from_json)
