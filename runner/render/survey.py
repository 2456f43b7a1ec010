"""The survey's tables: the preflight's plan (what runs where, its quota, price and time-to-live),
then, for a whole survey, every step (took how long, passed or not, why), what the teardown did
and what the closing sweep found left."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner.cloud.bring_up.preflight import Preflight
from runner.cloud.cleanup.survey_teardown import Created
from runner.core.evidence import EvidenceFile
from runner.core.typed_json import FlatJson, JsonObject, read_sections, where_set
from runner.render.tables import add_columns

COLUMNS = ("backend", "region", "failover", "type", "quota", "images", "$/h", "TTL h", "TTL worst $", "runs")
STEP_COLUMNS = ("#", "step", "backend", "outcome", "took s", "why", "evidence")


@dataclass
class StepRecord(FlatJson):
    """One step of a survey (runner/flow/steps.py runs it): the command and backend, how it
    ended and in how long, its exit status and one line, the evidence it wrote and its log."""

    step: str
    backend: str | None
    status: str
    seconds: float = 0.0
    started_at: str = ""
    exit_code: int | None = None
    line: str = ""
    evidence: list[str] = field(default_factory=list)
    log: str | None = None

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.step, self.backend)


@dataclass(kw_only=True)
class SurveyFile(EvidenceFile):
    """A survey's state file (survey.json), or the plan of a dry run (only its `preflight`, its
    records the backends that would run). The state: every step (`records` holds the same), what
    the survey created and found standing, what bills, which backends are ready, failed, measured
    or still building and where each was placed, what the teardown did and the closing sweep left,
    and the run's options, plan and time; each section only once the survey has it."""

    COMMAND = "survey"
    records: list[StepRecord | str] = field(default_factory=list)
    steps: list[StepRecord] | None = where_set()
    created: Created | None = where_set()
    pre_existing: dict[str, str] | None = where_set()
    # What bills now, as runner.up's evidence lists it (runner.costing.billing_now's rows).
    billing: list[JsonObject] | None = where_set()
    ready: list[str] | None = where_set()
    failed: dict[str, str] | None = where_set()
    measured: list[str] | None = where_set()
    # Each teardown action as runner.cloud.cleanup reports it (region, kind, id, outcome).
    teardown: list[JsonObject] | None = where_set()
    # What the closing sweep found of ours (or billing), as runner.sweep lists it.
    left: list[JsonObject] | None = where_set()
    resumed: list[str | None] | None = where_set()
    building: list[str] | None = where_set()
    placed: dict[str, list[str]] | None = where_set()
    options: JsonObject | None = where_set()
    preflight: Preflight | None = where_set()
    left_out: dict[str, str] | None = where_set()
    plan: JsonObject | None = where_set()
    elapsed_s: float | None = where_set()
    expires_at: str | None = where_set()
    late: list[str] | None = where_set()
    sweep_problems: list[str] | None = where_set()
    kept: list[JsonObject] | None = where_set()
    interrupted_at: str | None = where_set()
    fault: str | None = where_set()

    @classmethod
    def from_json(cls, data: Mapping[str, object], where: object = None) -> Self:
        """The state read back (a dry run's records are its backends' names; a survey's, its steps)."""
        where = getattr(data, "source", None) if where is None else where
        found = read_sections(cls, data, where, apart=("records", "created"))
        steps = found.get("steps")
        records = steps if steps is not None else [str(name) for name in data.get("records") or []]  # type: ignore[union-attr]
        created = Created.from_json(data["created"]) if "created" in data else None  # type: ignore[arg-type]
        return cls(**found, records=records, created=created)  # type: ignore[arg-type]


def render_report(evidence: SurveyFile, out: Console, baseline: SurveyFile | None = None) -> None:
    if evidence.preflight:
        render_plan(evidence.preflight, out)
    if evidence.steps is not None:
        render_steps(evidence, out)


def render_plan(preflight: Preflight, out: Console) -> None:
    account = preflight.account
    out.print(f"account {account.account} ({account.arn})")
    mark = {True: "ok", False: "missing", None: "not found (not needed)"}[preflight.plugin.ok]
    out.print(f"Session Manager plugin: {mark}: {preflight.plugin.detail}")
    table = Table(title="preflight: what will run where (nothing deployed)")
    add_columns(table, COLUMNS, ("backend", "region", "failover", "type", "quota", "images", "runs"))
    rows = preflight.rows
    for row in rows:
        price, worst, ttl = row.usd_per_hour, row.ttl_worst_usd, row.ttl_hours
        table.add_row(
            row.backend,
            row.region or "-",
            ", ".join(row.failover) or "-",
            row.instance_type or "-",
            row.quota or "-",
            ", ".join(row.images) or "-",
            f"{price:.4f}" if price is not None else "-",
            f"{ttl:g}" if ttl is not None else "off",
            f"{worst:.2f}" if worst is not None else "-",
            "yes" if row.runs else f"left out: {row.reason}",
        )
    out.print(table)
    # One line per image build (inf2 and trn1 share the neuron image), for the backends that run.
    builds: dict[str, list[str]] = {}
    for row in (r for r in rows if r.runs):
        for check in row.checks:
            if check.what.startswith("image "):
                builds.setdefault(f"{check.what}: {check.detail}", []).append(row.backend)
    for line, users in builds.items():
        out.print(f"[dim]{line} (for {', '.join(users)})[/dim]")
    # A failed check that leaves nothing out (the weights copy's quota): said once, with who it touches.
    warnings: dict[str, list[str]] = {}
    for row in (r for r in rows if r.runs):
        for check in row.checks:
            if check.ok is False:
                warnings.setdefault(check.detail, []).append(row.backend)
    for line, users in warnings.items():
        out.print(f"[yellow]{line} ({', '.join(users)})[/yellow]")
    running = [r for r in rows if r.runs]
    if running:
        total = sum(r.usd_per_hour or 0.0 for r in running)
        out.print(f"{len(running)} of {len(rows)} backend(s) can run; {total:.4f} $/h together at list prices")
    else:
        out.print("[red]no backend can run: see the reasons above[/red]")


def render_steps(evidence: SurveyFile, out: Console) -> None:
    elapsed = evidence.elapsed_s
    title = "survey: every step" + (f" ({elapsed / 60:.1f} min in all)" if elapsed is not None else "")
    table = Table(title=title)
    add_columns(table, STEP_COLUMNS, ("step", "backend", "outcome", "why", "evidence"))
    steps = evidence.steps or []
    for index, step in enumerate(steps, start=1):
        shown = {"passed": "[green]passed[/green]", "failed": "[red]failed[/red]"}.get(step.status, step.status)
        table.add_row(
            str(index),
            step.step,
            step.backend or "-",
            shown,
            f"{step.seconds:.1f}",
            escape(step.line or ""),
            ", ".join(p.rsplit("/", 1)[-1] for p in step.evidence) or "-",
        )
    out.print(table)
    for backend, why in (evidence.left_out or {}).items():
        out.print(f"left out before anything billed: {backend}: {escape(why)}")
    for backend, why in (evidence.failed or {}).items():
        out.print(f"[yellow]not measured: {backend}: {escape(why)}[/yellow]")
    for stack, region in (evidence.pre_existing or {}).items():
        out.print(f"{stack} stood in {region} before this survey: measured as it was, left as it was")
    for action in evidence.teardown or []:
        out.print(
            f"[dim]teardown: {action['region']} {action['kind']} {action['id']}: {escape(action['outcome'])}[/dim]"
        )
    if any(s.step == "sweep" for s in steps):
        left = evidence.left or []
        problems = evidence.sweep_problems or []
        if problems:
            out.print(f"[red]the sweep is incomplete: {escape('; '.join(problems))}[/red]")
        elif not left:
            out.print("[green]nothing of ours billing, and nothing of ours left[/green]")
        for item in left:
            out.print(f"[yellow]left: {item['region']} {item['kind']} {item['id']} ({item['state']})[/yellow]")
