"""Accuracy as `runner.quality` grades it, typed: its summary per backend and task family, read back
from quality evidence by the tables, `bench --quality`, `cost`, `advise` and the report, which read
attributes, not keys.

It sits in the lowest layer because the quality command writes it and the costing and report
packages, below and beside it, read it. `to_json` writes exactly the entry the evidence holds;
`from_json` refuses a malformed one in a line that names it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from runner.core.errors import RunnerError
from runner.core.typed_json import FlatJson, read_entries, read_fields


@dataclass(frozen=True)
class Accuracy(FlatJson):
    """Correct over graded with its 95 % Wilson interval; `errors` counts items with no answer at
    all (not graded). A family a backend skipped says why; `bench --quality` and `advise` keep
    when the quality run started (`measured_at`)."""

    correct: int
    total: int
    accuracy: float | None = None
    low: float | None = None
    high: float | None = None
    errors: int | None = None
    skipped: str | None = None
    measured_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "correct": self.correct,
            "total": self.total,
            "accuracy": self.accuracy,
            "low": self.low,
            "high": self.high,
        }
        for key in ("errors", "skipped", "measured_at"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        return data


@dataclass(frozen=True)
class QualitySummary:
    """One backend and model: its overall accuracy and one per task family."""

    backend: str
    model: str
    overall: Accuracy
    families: dict[str, Accuracy] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "model": self.model,
            "overall": self.overall.to_json(),
            "families": {name: figures.to_json() for name, figures in self.families.items()},
        }

    @classmethod
    def from_json(cls, data: object, what: str) -> QualitySummary:
        found = read_fields(cls, data, what, apart=("overall", "families"))
        assert isinstance(data, dict)  # read_fields refused anything else
        families = data.get("families") or {}
        if not isinstance(families, dict):
            raise RunnerError(f"{what}: 'families' is {families!r}, not an object")
        return cls(
            **found,
            overall=Accuracy.from_json(data.get("overall"), f"{what}, overall"),
            families={name: Accuracy.from_json(entry, f"{what}, {name}") for name, entry in families.items()},
        )


def summaries_of(evidence: Mapping[str, Any], where: object = None) -> list[QualitySummary]:
    """A quality evidence file's summary, typed, in order; a malformed entry is one line."""
    return read_entries(evidence, "summary", QualitySummary.from_json, where)


def accuracy_by_backend(evidence: Iterable[Mapping[str, Any]]) -> dict[str, Accuracy]:
    """Per backend, its overall accuracy from `runner.quality` evidence, with the file's start
    time; a later file wins, and a backend with nothing graded has none."""
    found: dict[str, Accuracy] = {}
    for data in sorted(evidence, key=lambda d: str(d.get("started_at"))):
        if data.get("command") != "quality":
            continue
        for summary in summaries_of(data, data.get("started_at")):
            if summary.overall.total:
                found[summary.backend] = replace(summary.overall, measured_at=data.get("started_at"))
    return found


def accuracy_json(accuracy: Mapping[str, Accuracy]) -> dict[str, dict[str, Any]]:
    """The accuracy per backend as `bench --quality` and `cost` keep it beside their figures."""
    return {name: figures.to_json() for name, figures in accuracy.items()}


def accuracy_of(evidence: Mapping[str, Any], where: object = None) -> dict[str, Accuracy]:
    """The accuracy per backend a bench or cost evidence file keeps beside its figures, typed."""
    kept = evidence.get("accuracy") or {}
    try:
        return {name: Accuracy.from_json(figures, f"accuracy of {name}") for name, figures in kept.items()}
    except RunnerError as error:
        raise RunnerError(f"{where}: {error}" if where is not None else str(error)) from None
