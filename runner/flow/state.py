"""The survey's state, kept in its folder's state file: what it created, its steps and which are
done, what bills now, and the bookkeeping every step goes through (run, recorded, saved, shown).
Each part of the survey reads and writes it; `--resume` starts from it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from catalog import CatalogError
from catalog.config import read_placement_records
from runner.cloud.cleanup.survey_teardown import ClientFor, Created
from runner.core.console import console
from runner.core.evidence import Evidence
from runner.core.typed_json import JsonObject
from runner.flow.folder import SurveyFolder
from runner.flow.options import SurveyOptions
from runner.flow.steps import FAILED, INTERRUPTED, PASSED, SETTLED, StepRecord, run_step
from runner.render.survey import SurveyFile

# Steps a resumed survey runs again even when they were done: the forwards were processes of the
# machine that went away, and the closing sweep must see the account as it is now.
REDONE_ON_RESUME = ("forward", "sweep")


class SurveyState:
    """One survey's state file, read back on `--resume`, and the steps it records."""

    # How AWS is asked (set when the run starts), and why what this run created is kept.
    client: ClientFor
    kept_because = "--keep"

    def __init__(
        self, options: SurveyOptions, folder: SurveyFolder, evidence: Evidence[SurveyFile], *, resumed: bool = False
    ) -> None:
        self.options, self.folder, self.evidence = options, folder, evidence
        self.file = file = evidence.file
        # Every section a survey keeps, empty until it has it (a resumed one keeps its own).
        file.steps = file.steps or []
        file.created = file.created or Created()
        file.pre_existing, file.billing = file.pre_existing or {}, file.billing or []
        file.ready, file.failed, file.measured = file.ready or [], file.failed or {}, file.measured or []
        file.teardown, file.left, file.resumed = file.teardown or [], file.left or [], file.resumed or []
        file.building, file.placed = file.building or [], file.placed or {}
        file.options = options.to_json()
        self.created = file.created
        self.elapsed_before = float(file.elapsed_s or 0.0)
        self.clock = time.monotonic()
        latest = self.latest_records()
        self.done = {
            key for key, r in latest.items() if r.status in SETTLED and not (resumed and r.step in REDONE_ON_RESUME)
        }
        teardown = latest.get(("teardown", None))
        # A survey whose teardown passed is over: a resume only sweeps again (it never deploys again).
        self.torn_down = teardown is not None and teardown.status == PASSED
        if teardown is not None and teardown.status == FAILED:
            self.done.discard(("teardown", None))  # tried again
        if resumed:
            file.resumed.append(file.finished_at)
            file.interrupted_at = None

    @property
    def steps(self) -> list[StepRecord]:
        return self.file.steps  # type: ignore[return-value]  # made in __init__

    @property
    def teardown(self) -> list[JsonObject]:
        """The teardown's actions so far (runner.cloud.cleanup's, each as it reports it)."""
        return self.file.teardown  # type: ignore[return-value]  # made in __init__

    def step(self, name: str, backend: str | None, call: Callable[[], int]) -> StepRecord:
        self.progress(name, backend)
        index = len(self.steps) + 1
        record = run_step(self.folder, index, name, backend, call)
        self.record(record)
        mark = {PASSED: "[green]passed[/green]", FAILED: "[red]failed[/red]"}.get(record.status, record.status)
        console.print(f"{name}{' ' + backend if backend else ''}: {mark} in {record.seconds:.1f} s"
                      f"{': ' + record.line if record.line else ''}")  # fmt: skip
        return record

    def step_once(self, name: str, backend: str | None, call: Callable[[], int]) -> StepRecord | None:
        if (name, backend) in self.done:
            return None
        record = self.step(name, backend, call)
        if record.status == INTERRUPTED:
            raise KeyboardInterrupt
        return record

    def record(self, record: StepRecord) -> None:
        self.steps.append(record)
        if record.status in SETTLED:
            self.done.add(record.key)
        self.save()

    def save(self, *, interrupted: bool = False) -> Path:
        self.file.created = self.created
        self.file.elapsed_s = round(self.elapsed_before + time.monotonic() - self.clock, 1)
        self.file.records = list(self.steps)
        return self.evidence.finish(interrupted=interrupted)

    def progress(self, name: str, backend: str | None) -> None:
        elapsed = self.elapsed_before + time.monotonic() - self.clock
        minutes, seconds = divmod(int(elapsed), 60)
        console.rule(
            f"[bold]{name}[/bold]{' ' + backend if backend else ''} · {minutes}m{seconds:02d}s so far · "
            f"{self.billing_text() or 'nothing billing'}"
        )

    def billing_text(self) -> str:
        """What bills now, as up's billing table left it (price unknown said so), and what it cannot see:
        stacks this run is still deploying, and stacks that stood before it."""
        file = self.file
        rows = file.billing or []
        parts = [f"{r['backend']} {r['usd_per_hour']:.4f}" if r.get("usd_per_hour") is not None
                 else f"{r['backend']} (price unknown)" for r in rows]  # fmt: skip
        text = (
            f"billing now {sum(r.get('usd_per_hour') or 0.0 for r in rows):.4f} $/h ({', '.join(parts)})"
            if rows
            else ""
        )
        up_record = self.latest_records().get(("up", None))
        if self.created.stacks and (up_record is None or up_record.status == INTERRUPTED):
            text += ("; " if text else "") + (
                f"billing not known: {', '.join(self.created.stacks)} may still be deploying (CloudFormation carries on)"
            )
        if file.pre_existing:
            text += ("; " if text else "") + f"not counted: {', '.join(file.pre_existing)} (stood before this survey)"
        return text

    def ttl_text(self) -> str:
        expiry = self.file.expires_at
        return f"; the time-to-live takes it to zero at {expiry}" if expiry else ""

    def evidence_of(self, *steps: str) -> list[str]:
        """The evidence of the latest run of each of these steps (a resumed survey ran some twice)."""
        return [p for (step, _), r in self.latest_records().items() if step in steps for p in r.evidence]

    def latest_records(self) -> dict[tuple[str, str | None], StepRecord]:
        latest: dict[tuple[str, str | None], StepRecord] = {}
        for record in self.steps:
            latest.pop(record.key, None)
            latest[record.key] = record
        return latest

    def results(self) -> list[str]:
        return ["--results-dir", str(self.folder.evidence_dir)]

    def aws(self) -> list[str]:
        return ["--aws"] if self.options.aws else []

    def summary(self) -> None:
        from runner.render.survey import render_steps

        self.save()
        render_steps(self.file, console)
        console.print(f"survey folder: {self.folder.root}")

    def created_where_placed(self) -> Created:
        """What this run created, with wherever runner.up placed each stack (its failover included)
        among the regions looked at, and a backend it moved out of a created stack on its own (a
        satellite) as this run's too."""
        created = replace(self.created, stacks={k: list(v) for k, v in self.created.stacks.items()})
        for stack, record in read_placement_records_quietly().items():
            if record.get("of") in created.stacks and stack not in created.stacks:
                created.stacks[stack] = []
            if stack in created.stacks and record.get("region") not in created.stacks[stack]:
                created.stacks[stack].append(record["region"])
        return created


def read_placement_records_quietly() -> dict[str, JsonObject]:
    try:
        return read_placement_records()
    except CatalogError:
        return {}
