"""A batch transform job as `runner.batch` keeps it under `jobs` (runner/measure/transform_job.py
writes and updates it as the job runs), read back typed by the batch table, `cost`, `advise` and a
survey's teardown, which read attributes, not keys. Every field may be missing: a job refused
before it started keeps little more than its name, and a file from before a field was added lacks it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runner.core.typed_json import FlatJson, read_entries, where_set


@dataclass
class BatchJob(FlatJson):
    """One transform job: its records and the good ones, tokens, status, billable seconds on its
    instances, rates over those seconds (start-up included), and its price where priced."""

    backend: str | None = None
    job_name: str | None = None
    # The job's name in files written before `job_name`, and a region some of them kept.
    name: str | None = where_set()
    status: str | None = None
    failure_reason: str | None = None
    region: str | None = where_set()
    records: int = 0
    ok_records: int = 0
    output_tokens: int = 0
    prompt_tokens: int = 0
    started_at: str | None = None
    ended_at: str | None = None
    billable_s: float | None = None
    instance_type: str | None = None
    instance_count: int | None = None
    records_per_s: float | None = None
    output_tok_s: float | None = None
    # The instances' hourly rate, where the job was priced.
    usd_per_hour: float | None = where_set()
    price_usd: float | None = None
    input: str | None = None
    output: str | None = None

    @property
    def label(self) -> str:
        return self.job_name or self.name or ""

    @property
    def instances(self) -> int:
        return self.instance_count or 1


def jobs_of(evidence: Mapping[str, Any], where: object = None) -> list[BatchJob]:
    """A batch evidence file's transform jobs, typed, in order; a malformed one is one line."""
    return read_entries(evidence, "jobs", BatchJob.from_json, where)
