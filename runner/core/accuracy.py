"""Accuracy as `runner.quality` grades it, typed: its summary per backend and task family, read back
from quality evidence by the tables, `bench --quality`, `cost`, `advise` and the report, which read
attributes, not keys.

It sits in the lowest layer because the quality command writes it and the costing and report
packages, below and beside it, read it. Each is written as the entry the evidence holds
(`runner.core.typed_json`); `from_json` refuses a malformed one in a line that names it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from runner.core.errors import RunnerError
from runner.core.typed_json import FlatJson, read_entries, read_fields, where_set


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
    errors: int | None = where_set()
    skipped: str | None = where_set()
    measured_at: str | None = where_set()


@dataclass(frozen=True)
class QualitySummary(FlatJson):
    """One backend and model: its overall accuracy and one per task family."""

    backend: str
    model: str
    overall: Accuracy
    families: dict[str, Accuracy] = field(default_factory=dict)

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


def accuracy_of(evidence: Mapping[str, Any], where: object = None) -> dict[str, Accuracy]:
    """The accuracy per backend a bench or cost evidence file keeps beside its figures, typed."""
    kept = evidence.get("accuracy") or {}
    try:
        return {name: Accuracy.from_json(figures, f"accuracy of {name}") for name, figures in kept.items()}
    except RunnerError as error:
        raise RunnerError(f"{where}: {error}" if where is not None else str(error)) from None
