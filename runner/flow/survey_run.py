"""The survey from nothing to a report to nothing, one step after another, in one folder.

preflight (nothing bills) → up → [model_import] → forward → check → one ask per backend → demo 1
(filter, then rows) → demo 2 → bench (single requests, then the concurrency sweep) → [batch] →
quality → cost → report → teardown of what this run created (or kept, time-to-live armed) →
a sweep that lists and never deletes.

Every step is a command's own `run(argv)` (runner/flow/steps.py); a step that fails is recorded
and the steps that can still run do. The state file is written after every step, so
`--resume FOLDER` continues from it: the placements and forwards live in the folder, and the
stack outputs come from CloudFormation again. Ctrl-C at any step stops cleanly, says what is
running and billing, and offers the teardown (without a terminal: tears down what this run
created); a second Ctrl-C leaves the time-to-live to take it to zero.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from catalog.backends import EC2_KINDS, BackendKind, get_backend
from catalog.config import AppConfig
from runner import (
    ask,
    batch,
    bench,
    check,
    cost,
    counting,
    forward,
    model_import,
    orchestrator,
    quality,
    report,
    sweep,
    up,
)
from runner.cloud.preflight import Preflight
from runner.cloud.teardown import ClientFor, Created, default_clients, existing_stacks, tear_down
from runner.core.console import console
from runner.core.evidence import Evidence, load
from runner.flow.folder import SurveyFolder
from runner.flow.options import BEDROCK, SurveyOptions
from runner.flow.steps import FAILED, INTERRUPTED, KEPT, PASSED, SETTLED, StepRecord, run_step, skipped

PAGE_STEPS = ("up", "check", "ask", "demo1-filter", "demo1-rows", "demo2", "bench", "bench-sweep", "quality", "cost")
# Steps a resumed survey runs again even when they were done: the forwards were processes of the
# machine that went away, and the closing sweep must see the account as it is now.
REDONE_ON_RESUME = ("forward", "sweep")


class SurveyRun:
    def __init__(
        self, options: SurveyOptions, folder: SurveyFolder, evidence: Evidence, *, resumed: bool = False
    ) -> None:
        self.options, self.folder, self.evidence = options, folder, evidence
        data = evidence.data
        for key, empty in (("steps", []), ("created", {}), ("pre_existing", {}), ("billing", []), ("ready", []),
                           ("failed", {}), ("measured", []), ("teardown", []), ("left", []), ("resumed", [])):  # fmt: skip
            data.setdefault(key, empty)
        data["options"] = options.to_json()
        self.created = Created.from_json(data["created"])
        self.elapsed_before = float(data.get("elapsed_s") or 0.0)
        self.clock = time.monotonic()
        self.done = {
            (r["step"], r["backend"])
            for r in data["steps"]
            if r["status"] in SETTLED and not (resumed and r["step"] in REDONE_ON_RESUME)
        }
        if resumed:
            data["resumed"].append(evidence.data.get("finished_at"))

    # --- the run ---------------------------------------------------------------------------

    def run(self, preflight: Callable[[], tuple[Preflight, AppConfig]], client: ClientFor | None = None) -> int:
        """The whole survey; its exit status (0 all passed, 1 something failed or is left, 130 Ctrl-C)."""
        self.client = client or default_clients()
        with self.folder.in_use():
            try:
                if not self.plan(preflight):
                    self.summary()
                    return 1
                self.bring_up()
                self.measure()
            except KeyboardInterrupt:
                return self.after_interrupt()
            try:
                self.close(interrupted=False)
            except KeyboardInterrupt:
                return self.teardown_interrupted()
        return self.exit_status()

    def plan(self, preflight: Callable[[], tuple[Preflight, AppConfig]]) -> bool:
        """The preflight, once; False when nothing can run (nothing is deployed then)."""
        if ("preflight", None) in self.done:
            return True
        record = self.step("preflight", None, lambda: self._preflight(preflight))
        if record.status == INTERRUPTED:
            raise KeyboardInterrupt
        return record.status == PASSED

    def _preflight(self, preflight: Callable[[], tuple[Preflight, AppConfig]]) -> int:
        checked, config = preflight()
        data = self.evidence.data
        data["preflight"] = checked.to_json()
        runs = [r for r in checked.rows if r.runs]
        data["left_out"] = {r.backend: r.reason for r in checked.rows if not r.runs}
        candidates = {s.name: list(s.candidate_regions) for s in config.stacks if any(b.name in {r.backend for r in runs} for b in s.backends)}  # fmt: skip
        data["pre_existing"] = existing_stacks(candidates, self.client)
        data["plan"] = {
            "runs": [r.backend for r in runs],
            "deploy": [s for s in candidates if s not in data["pre_existing"]],
            "candidates": candidates,
        }
        for line in checked.notices:
            self.evidence.notice(line)
        from runner.render.survey import render_plan

        render_plan(data, console)
        for stack, region in data["pre_existing"].items():
            console.print(
                f"[yellow]{stack} already stands in {region}:[/yellow] this survey measures it as it is, "
                "does not deploy it and leaves it as it was"
            )
        if not runs and not self.options.with_bedrock:
            console.print("[red]no backend can run: nothing is deployed[/red]")
            return 1
        return 0

    def bring_up(self) -> None:
        data = self.evidence.data
        plan = data["plan"]
        deployable = list(plan["runs"])
        if ("up", None) not in self.done:
            if not plan["deploy"]:
                self.record(
                    skipped("up", None, "nothing to deploy" + (": every stack already stands" if deployable else ""))
                )
            else:
                # Recorded before the deploy starts: an interrupted deploy is taken back too.
                for stack in plan["deploy"]:
                    self.created.stacks[stack] = plan["candidates"][stack]
                self.save()
                context = self.options.context | {"backends": ",".join(deployable)}
                argv = [*plan["deploy"], *[f"-c{k}={v}" for k, v in context.items()], "--poll", f"{self.options.poll_s:g}",
                        "--launch-timeout", f"{self.options.launch_timeout_s:g}", "--build-grace",
                        f"{self.options.build_grace_s:g}", "--method", self.options.method, *self.results()]  # fmt: skip
                if self.options.ready_timeout_s is not None:
                    argv += ["--ready-timeout", f"{self.options.ready_timeout_s:g}"]
                record = self.step("up", None, lambda: up.run(argv))
                self.read_up(record)
                if record.status == INTERRUPTED:
                    raise KeyboardInterrupt
        pre_existing = set(data["pre_existing"])
        standing = [b for b in plan["runs"] if get_backend(b).stack in pre_existing]
        measured = [*data["ready"], *[b for b in standing if b not in data["ready"]]]
        data["measured"] = [*measured, *([BEDROCK] if self.options.with_bedrock else [])]
        if "bedrock-import" in data["measured"]:
            record = self.step_once("import", None, lambda: model_import.run(["import", *self.results(), *self.aws()]))
            if record is not None and record.status != PASSED:
                data["failed"]["bedrock-import"] = f"model import: {record.line}"
        data["measured"] = [b for b in data["measured"] if b not in data["failed"]]
        self.save()

    def read_up(self, record: StepRecord) -> None:
        data = self.evidence.data
        data["ready"], data["failed"] = [], {}
        for path in record.evidence:
            up_data = load(self.folder.root / path)
            if up_data.get("command") != "up":
                continue
            data["billing"] = up_data.get("billing") or []
            data["expires_at"] = (up_data.get("config") or {}).get("expires_at")
            for entry in up_data.get("records", []):
                if entry.get("outcome") == "ready":
                    data["ready"].append(entry["backend"])
                else:
                    data["failed"][entry["backend"]] = entry["outcome"] + (f": {entry['reason']}" if entry.get("reason") else "")  # fmt: skip
        if data["failed"]:
            record.line = "; ".join(f"{b}: {why}" for b, why in data["failed"].items())
            data["steps"][-1]["line"] = record.line
        self.save()

    def measure(self) -> None:
        data = self.evidence.data
        measured: list[str] = data["measured"]
        names = ",".join(measured)
        common = ["--local", "never", *self.results(), *self.aws()]
        why_not = "no backend is ready" if not measured else ""
        ec2 = [b for b in measured if b != BEDROCK and get_backend(b).kind in EC2_KINDS]
        tools = [b for b in measured if self.supports_tools(b)]
        agent = BEDROCK if BEDROCK in measured else (tools[0] if tools else None)
        options = self.options
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
        ]  # fmt: skip
        if "sagemaker-batch" in measured:
            steps.append(("batch", None, lambda: batch.run([*self.results(), *self.aws()]), ""))
        steps.append(
            ("quality", None,
             (lambda: quality.run(["--items", str(options.quality_items), "--backends", names, *common]))
             if options.quality_items > 0 else None, why_not or "--quality-items 0")
        )  # fmt: skip
        for name, backend, call, why in steps:
            if not measured:
                call, why = None, why_not
            if (name, backend) in self.done:
                continue
            if call is None:
                self.record(skipped(name, backend, why))
                continue
            record = self.step(name, backend, call)
            if name == "batch":
                self.note_transform_jobs(record)
            if record.status == INTERRUPTED:
                raise KeyboardInterrupt
        self.step_once("cost", None, self.cost)
        self.step_once("report", None, self.report)

    def supports_tools(self, name: str) -> bool:
        spec = get_backend(name)
        return spec.supports_tools and spec.kind not in (BackendKind.SAGEMAKER_ASYNC, BackendKind.SAGEMAKER_BATCH)

    def cost(self) -> int:
        inputs = [str(self.folder.root / p) for p in self.evidence_of("bench", "bench-sweep", "batch", "quality")]
        return cost.run(
            [*inputs, *(["--offline"] if self.options.offline_prices else []), *self.results(), *self.aws()]
        )

    def report(self) -> int:
        self.save()
        inputs = [str(self.folder.state), *[str(self.folder.root / p) for p in self.evidence_of(*PAGE_STEPS)]]
        return report.run(
            [*inputs, "--html", str(self.folder.report_html), "--markdown", str(self.folder.report_markdown)]
        )

    def note_transform_jobs(self, record: StepRecord) -> None:
        for path in record.evidence:
            for job in load(self.folder.root / path).get("jobs", []):
                region = next((b.get("region") for b in load(self.folder.root / path).get("backends", [])), None)
                if job.get("job_name") and region:
                    self.created.transform_jobs.append((region, job["job_name"]))
        self.save()

    # --- the end: teardown or keep, then the sweep ---------------------------------------

    def decide(self, interrupted: bool) -> str:
        """`keep` or `down`: the flag; else a terminal's answer; else (no terminal) down."""
        if self.options.keep:
            return "keep"
        if self.options.down or not self.created.stacks:
            return "down"
        if not sys.stdin.isatty():
            console.print("no terminal to ask: tearing down what this survey created")
            return "down"
        stacks = ", ".join(self.created.stacks)
        answer = input(f"{'interrupted. ' if interrupted else ''}Tear down what this survey created ({stacks})? [Y/n] ")
        return "keep" if answer.strip().lower() in ("n", "no") else "down"

    def close(self, interrupted: bool) -> None:
        if self.decide(interrupted) == "keep":
            self.record(self.kept_record())
        else:
            self.teardown()
        self.step_once("sweep", None, self.final_sweep)
        self.summary()

    def kept_record(self) -> StepRecord:
        record = skipped(
            "teardown", None, "kept (--keep): " + (self.billing_text() or "nothing billing") + self.ttl_text()
        )
        record.status = KEPT
        return record

    def teardown(self) -> None:
        if ("teardown", None) in self.done:
            return
        if (self.folder.root / "forwards.json").exists():
            self.step("forwards-closed", None, lambda: forward.run(["--stop"]))
        if any(r["step"] == "import" for r in self.evidence.data["steps"]):
            self.step("import-deleted", None, lambda: model_import.run(["delete", *self.results(), *self.aws()]))
        self.step("teardown", None, self.remove_created)

    def remove_created(self) -> int:
        if not self.created.stacks and not self.created.transform_jobs:
            console.print("nothing this survey created is left to remove")
            return 0
        console.print(f"[bold]removing what this survey created[/bold]: {', '.join(self.created.stacks) or 'no stack'}")
        actions = tear_down(self.created, self.options.delete_wait_s, self.client)
        self.evidence.data["teardown"] += actions
        refused = [a for a in actions if a["outcome"].startswith("not ")]
        for action in actions:
            console.print(f"  {action['region']} {action['kind']} {action['id']}: {action['outcome']}")
        if not refused:
            self.evidence.data["billing"] = []
        return 1 if refused else 0

    def final_sweep(self) -> int:
        before = set(self.folder.evidence_files())
        code = sweep.run([*self.results(), *self.aws()])
        found = []
        for path in [p for p in self.folder.evidence_files() if p not in before and p.name.startswith("sweep-")]:
            found = [f for f in load(path).get("records", []) if f.get("ours") or f.get("billing")]
        self.evidence.data["left"] = found
        pre = self.evidence.data["pre_existing"]
        if not found:
            console.print("[green]nothing of ours billing, and nothing of ours left[/green]")
        else:
            console.print(f"[yellow]left ({len(found)}):[/yellow]")
            for item in found:
                mark = " (existed before this survey)" if item["kind"] == "stack" and item["id"] in pre else ""
                console.print(
                    f"  {item['region']} {item['kind']} {item['id']} {item['state']}{mark} {item.get('detail', '')}"
                )
        # Exit 1 is the sweep's "something billing is left": the step ran; the survey's status says the rest.
        return 0 if code in (0, 1) else code

    def after_interrupt(self) -> int:
        self.evidence.data["interrupted_at"] = next(
            (r["step"] for r in reversed(self.evidence.data["steps"]) if r["status"] == INTERRUPTED), "between steps"
        )
        console.print(f"[yellow]interrupted[/yellow] ({self.evidence.data['interrupted_at']}); "
                      f"running now: {self.billing_text() or 'nothing billing'}{self.ttl_text()}")  # fmt: skip
        try:
            self.close(interrupted=True)
        except KeyboardInterrupt:
            return self.teardown_interrupted()
        self.save(interrupted=True)
        return 130

    def teardown_interrupted(self) -> int:
        console.print(
            f"[yellow]interrupted again: stopping here.[/yellow]{self.ttl_text()} "
            f"`python -m runner.survey --resume {self.folder.root} --down` finishes the teardown"
        )
        self.save(interrupted=True)
        return 130

    def exit_status(self) -> int:
        data = self.evidence.data
        failed = [r for r in data["steps"] if r["status"] == FAILED]
        teardown = next((r for r in data["steps"] if r["step"] == "teardown"), None)
        created_left = (
            teardown is not None
            and teardown["status"] != KEPT
            and any(f["kind"] == "stack" and f["id"] in self.created.stacks for f in data["left"])
        )
        return 1 if failed or created_left else 0

    # --- bookkeeping -------------------------------------------------------------------------

    def step(self, name: str, backend: str | None, call: Callable[[], int]) -> StepRecord:
        self.progress(name, backend)
        index = len(self.evidence.data["steps"]) + 1
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
        self.evidence.data["steps"].append(record.to_json())
        if record.status in SETTLED:
            self.done.add(record.key)
        self.save()

    def save(self, *, interrupted: bool = False) -> Path:
        self.evidence.data["created"] = self.created.to_json()
        self.evidence.data["elapsed_s"] = round(self.elapsed_before + time.monotonic() - self.clock, 1)
        self.evidence.data["records"] = self.evidence.data["steps"]
        return self.evidence.finish(interrupted=interrupted)

    def progress(self, name: str, backend: str | None) -> None:
        elapsed = self.elapsed_before + time.monotonic() - self.clock
        minutes, seconds = divmod(int(elapsed), 60)
        console.rule(
            f"[bold]{name}[/bold]{' ' + backend if backend else ''} · {minutes}m{seconds:02d}s so far · "
            f"{self.billing_text() or 'nothing billing'}"
        )

    def billing_text(self) -> str:
        rows = [r for r in self.evidence.data["billing"] if r.get("usd_per_hour")]
        if not rows:
            return ""
        total = sum(r["usd_per_hour"] for r in rows)
        parts = ", ".join(f"{r['backend']} {r['usd_per_hour']:.4f}" for r in rows)
        return f"billing now {total:.4f} $/h ({parts})"

    def ttl_text(self) -> str:
        expiry = self.evidence.data.get("expires_at")
        return f"; the time-to-live takes it to zero at {expiry}" if expiry else ""

    def evidence_of(self, *steps: str) -> list[str]:
        return [p for r in self.evidence.data["steps"] if r["step"] in steps for p in r["evidence"]]

    def results(self) -> list[str]:
        return ["--results-dir", str(self.folder.evidence_dir)]

    def aws(self) -> list[str]:
        return ["--aws"] if self.options.aws else []

    def summary(self) -> None:
        from runner.render.survey import render_steps

        self.save()
        render_steps(self.evidence.data, console)
        console.print(f"survey folder: {self.folder.root}")
