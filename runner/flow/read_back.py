"""Evidence a step of the survey wrote, read back typed: what `runner.survey` goes on from (which
backends `up` brought up and where, what bills and until when, whether this run started an import,
which transform jobs it ran) comes through these dataclasses, never as loose dictionaries.

Each reader checks the file's schema and command (runner/core/evidence.py `load`: a file of
another schema is refused with one line) and the fields it needs; a missing one is one line naming
the file and the field, not a KeyError later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.core.backend_entries import entries_of
from runner.core.batch_jobs import jobs_of
from runner.core.errors import RunnerError
from runner.core.evidence import load
from runner.core.typed_json import FromFile, JsonObject
from runner.costing.billing_now import BillingNow


def read_command(path: Path, command: str) -> FromFile:
    data = load(path)
    if data["command"] != command:
        raise RunnerError(f"{path}: {data['command']} evidence where {command} evidence was expected")
    return data


def required(path: Path, entry: JsonObject, key: str, where: str) -> Any:
    if key not in entry:
        raise RunnerError(f"{path}: {where} has no {key!r}")
    return entry[key]


@dataclass(frozen=True)
class UpOutcome:
    """One backend's end in `up`: ready, building (its image), or why not, and where it was placed."""

    backend: str
    outcome: str
    stack: str | None = None
    region: str | None = None
    reason: str | None = None

    @property
    def line(self) -> str:
        return self.outcome + (f": {self.reason}" if self.reason else "")


@dataclass(frozen=True)
class UpEvidence:
    outcomes: tuple[UpOutcome, ...]
    billing: tuple[BillingNow, ...] = ()
    expires_at: str | None = None
    # A stack's error when it stopped before its servers were watched.
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> UpEvidence:
        data = read_command(path, "up")
        outcomes = tuple(
            UpOutcome(
                backend=required(path, entry, "backend", "a record"),
                outcome=required(path, entry, "outcome", f"the record of {entry.get('backend')}"),
                stack=entry.get("stack"),
                region=entry.get("region"),
                reason=entry.get("reason"),
            )
            for entry in data.get("records", [])
        )
        billing = tuple(
            BillingNow(
                backend=required(path, row, "backend", "a billing row"),
                region=required(path, row, "region", "a billing row"),
                what=required(path, row, "what", "a billing row"),
                usd_per_hour=row.get("usd_per_hour"),
                note=row.get("note") or "",
            )
            for row in data.get("billing") or []
        )
        config = data.get("config") or {}
        return cls(outcomes, billing, config.get("expires_at"), dict(data.get("errors") or {}))


@dataclass(frozen=True)
class ImportEvidence:
    """`runner.model_import`: whether this run started an import job (only then is the model its
    to delete)."""

    started: bool

    @classmethod
    def read(cls, path: Path) -> ImportEvidence:
        data = read_command(path, "model_import")
        return cls(any(r.get("outcome") == "started" for r in data.get("records", [])))


@dataclass(frozen=True)
class TransformJob:
    region: str
    name: str


@dataclass(frozen=True)
class BatchEvidence:
    """`runner.batch`: the transform jobs it ran, so a teardown can stop one still running."""

    jobs: tuple[TransformJob, ...]

    @classmethod
    def read(cls, path: Path) -> BatchEvidence:
        data = read_command(path, "batch")
        region = next((b.region for b in entries_of(data, path) if b.region), None)
        names = [job.job_name for job in jobs_of(data, path)]
        return cls(tuple(TransformJob(region, name) for name in names if name and region))
