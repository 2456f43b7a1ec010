"""AWS's own benchmark beside ours (`bench --vendor-benchmark`): per job, each figure the runner
measured at the level and AWS's job measured at the same workload, and how far apart."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner.core.stats import fmt
from runner.measure.vendor_benchmark import VendorBenchmark
from runner.render.tables import add_columns


def vendor_tables(jobs: list[VendorBenchmark], out: Console) -> None:
    for job in jobs:
        asked = job.workload
        what = (
            f"{job.backend} ({job.endpoint}), {asked.input_tokens} in / {asked.output_tokens} out, "
            f"{asked.concurrency} at a time, {asked.requests} requests"
        )
        if not job.beside:
            out.print(f"[yellow]AWS's benchmark of {escape(what)}: job {job.job_name} {job.status}[/yellow]"
                      + (f": {escape(job.failure_reason)}" if job.failure_reason else ""))  # fmt: skip
            continue
        table = Table(title=f"AWS's benchmark (job {job.job_name}, AIPerf) beside ours: {what}")
        add_columns(table, ["figure", "runner", "AWS", "AWS - runner", "relative"], left=("figure",))
        for row in job.beside:
            relative = "-" if row.relative is None else f"{row.relative:+.0%}"
            table.add_row(row.figure, fmt(row.runner, 3), fmt(row.vendor, 3), fmt(row.difference, 3), relative)
        out.print(table)
