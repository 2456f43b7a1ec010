"""The survey's measuring steps over the backends that are ready: forward, check, one ask each,
demo 1 (filter, then rows), demo 2, the bench and its sweeps, the batch job, quality; each skipped
with its reason when it cannot run, and keyed by the backends' names in the late round."""

from __future__ import annotations

from collections.abc import Callable

from catalog.backends import get_backend
from catalog.serving import serving
from runner import ask, batch, bench, check, counting, forward, orchestrator, quality
from runner.flow.options import SWEEP_OUTPUT_TOKENS
from runner.flow.read_back import BatchEvidence
from runner.flow.state import SurveyState
from runner.flow.steps import INTERRUPTED, StepRecord, skipped


def measured_by(name: str) -> str:
    """The command that measures backend `name` where the chat steps cannot ("" for those steps)."""
    return serving(get_backend(name).kind).measured_by


def agent_default(name: str) -> int:
    return serving(get_backend(name).kind).agent_default


def measure(state: SurveyState, backends: list[str], key: str | None = None) -> None:
    """The measuring steps over `backends`; `key` tells a late round's steps apart (None: the first)."""
    measured: list[str] = [b for b in backends if not measured_by(b)]
    names = ",".join(measured)
    common = ["--local", "never", *state.results(), *state.aws()]
    why_not = "no backend is ready" if not measured else ""
    ec2 = [b for b in measured if serving(get_backend(b).kind).port_forward]
    tools = [b for b in measured if supports_tools(b)]
    # The agent runs on the backend its serving row ranks first as the default, else a tool-capable one.
    ranked = sorted((b for b in measured if agent_default(b)), key=lambda b: -agent_default(b))
    agent = ranked[0] if ranked else (tools[0] if tools else None)
    options = state.options
    steps: list[tuple[str, str | None, Callable[[], int] | None, str]] = [
        ("forward", None, (lambda: forward.run(["--backends", ",".join(ec2), "--plugin", options.plugin])) if ec2 else None,
         why_not or "no EC2 backend to forward"),
        ("check", None, lambda: check.run(["--wait", f"{options.check_wait_s:g}", "--backends", names, *common]), why_not),
    ]  # fmt: skip
    question = options.question or bench.PROMPT
    steps += [("ask", b, (lambda b=b: ask.run([b, question, *common])), why_not) for b in measured]
    for mode in ("filter", "rows"):
        steps.append(
            (f"demo1-{mode}", None,
             (lambda m=mode: counting.run(["--runs", str(options.demo1_runs), "--tools", m, "--backends", names, *common]))
             if options.demo1_runs > 0 else None, why_not or "--demo1-runs 0")
        )  # fmt: skip
    steps += [
        ("demo2", None,
         (lambda: orchestrator.run(["--agent", agent or "", "--runs", str(options.demo2_runs), "--backends", names, *common]))
         if agent and options.demo2_runs > 0 else None,
         why_not or ("no backend here calls tools to drive the agent" if not agent else "--demo2-runs 0")),
        ("bench", None, lambda: bench.run(["--repeats", str(options.repeats), "--backends", names, *common]), why_not),
        ("bench-sweep", None,
         (lambda: bench.run(["--concurrency", options.concurrency, "--backends", names, *common]))
         if options.concurrency != "none" else None, why_not or "--concurrency none"),
        ("bench-lengths", None,
         (lambda: bench.run(["--input-tokens", options.lengths, "--output-tokens", str(SWEEP_OUTPUT_TOKENS),
                             "--repeats", str(min(options.repeats, 5)), "--backends", names, *common]))
         if options.lengths != "none" else None, why_not or "--lengths none"),
        ("bench-workload", None,
         (lambda: bench.run(["--workload", options.workload, "--find-capacity",
                             "--capacity-levels", str(options.capacity_levels),
                             "--capacity-seconds", f"{options.capacity_seconds:g}", "--backends", names, *common]))
         if options.workload != "none" else None, why_not or "--workload none"),
    ]  # fmt: skip
    if any(measured_by(b) == "batch" for b in backends):
        steps.append(("batch", None, lambda: batch.run([*state.results(), *state.aws()]), ""))
    steps.append(
        ("quality", None,
         (lambda: quality.run(["--items", str(options.quality_items), "--backends", names, *common]))
         if options.quality_items > 0 else None, why_not or "--quality-items 0")
    )  # fmt: skip
    for name, backend, call, why in steps:
        if not measured and name != "batch":
            call, why = None, why_not
        backend = backend or key  # a late round's steps carry the names they measured
        if (name, backend) in state.done:
            continue
        if call is None:
            state.record(skipped(name, backend, why))
            continue
        record = state.step(name, backend, call)
        if name == "batch":
            note_transform_jobs(state, record)
        if record.status == INTERRUPTED:
            raise KeyboardInterrupt


def supports_tools(name: str) -> bool:
    spec = get_backend(name)
    return spec.supports_tools and serving(spec.kind).agent


def note_transform_jobs(state: SurveyState, record: StepRecord) -> None:
    for path in record.evidence:
        for job in BatchEvidence.read(state.folder.root / path).jobs:
            state.created.transform_jobs.append((job.region, job.name))
    state.save()
