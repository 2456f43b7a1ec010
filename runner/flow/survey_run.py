"""The survey from nothing to a report to nothing, one step after another, in one folder.

preflight (nothing bills) → up → [model_import] → forward → check → one ask per backend → demo 1
(filter, then rows) → demo 2 → bench (single requests; the concurrency sweep; the prompt-length
sweep; the chat preset at its objectives and the most load within them) → [batch] →
quality → [the late round] → cost → report → teardown of what this run created (or kept,
time-to-live armed) → a sweep that lists and never deletes.

What is ready is measured at once: `up` leaves a backend whose image is still building (hours
for g5g's) as `building`, at zero. After the first round the late round parks what was measured
(a created stack with no late backend is taken down, a measured server beside one goes to zero:
nothing bills while the build runs), watches the late backends to ready (`up --no-deploy`), and
measures them with the same steps, each keyed by their names.

Every step is a command's own `run(argv)` (runner/flow/steps.py); a step that fails is recorded
and the steps that can still run do. The state file is written after every step, so
`--resume FOLDER` continues from it: the placements and forwards live in the folder, and the
stack outputs come from CloudFormation again. Ctrl-C at any step stops cleanly, says what is
running and billing, and offers the teardown (without a terminal: tears down what this run
created); a second Ctrl-C leaves the time-to-live to take it to zero.
"""

from __future__ import annotations

import contextlib
import io
import select
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from catalog import CatalogError
from catalog.backends import get_backend
from catalog.config import AppConfig, read_placement_records
from catalog.serving import serving
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
from runner.cloud.bring_up.preflight import Preflight
from runner.cloud.cleanup.survey_teardown import ClientFor, Created, default_clients, existing_stacks, tear_down
from runner.core.console import console
from runner.core.errors import describe
from runner.core.evidence import Evidence, load
from runner.flow.folder import SurveyFolder
from runner.flow.options import BEDROCK, SWEEP_OUTPUT_TOKENS, SurveyOptions
from runner.flow.read_back import BatchEvidence, ImportEvidence, UpEvidence
from runner.flow.steps import FAILED, INTERRUPTED, KEPT, PASSED, SETTLED, StepRecord, run_step, skipped

PAGE_STEPS = ("up", "check", "ask", "demo1-filter", "demo1-rows", "demo2", "bench", "bench-sweep", "bench-lengths",
              "bench-workload", "quality", "cost")  # fmt: skip
# Steps a resumed survey runs again even when they were done: the forwards were processes of the
# machine that went away, and the closing sweep must see the account as it is now.
REDONE_ON_RESUME = ("forward", "sweep")
# How long the teardown question waits for an answer before tearing down (an unattended terminal).
ANSWER_WAIT_S = 300.0
# Backends measured by their own step only (a transform job answers no chat request).
OWN_STEP_ONLY = ("sagemaker-batch",)


class SurveyRun:
    def __init__(
        self, options: SurveyOptions, folder: SurveyFolder, evidence: Evidence, *, resumed: bool = False
    ) -> None:
        self.options, self.folder, self.evidence = options, folder, evidence
        data = evidence.data
        for key, empty in (("steps", []), ("created", {}), ("pre_existing", {}), ("billing", []), ("ready", []),
                           ("failed", {}), ("measured", []), ("teardown", []), ("left", []), ("resumed", []),
                           ("building", []), ("placed", {})):  # fmt: skip
            data.setdefault(key, empty)
        data["options"] = options.to_json()
        self.created = Created.from_json(data["created"])
        self.elapsed_before = float(data.get("elapsed_s") or 0.0)
        self.clock = time.monotonic()
        latest = self.latest_records()
        self.done = {
            key
            for key, r in latest.items()
            if r["status"] in SETTLED and not (resumed and r["step"] in REDONE_ON_RESUME)
        }
        teardown = latest.get(("teardown", None))
        # A survey whose teardown passed is over: a resume only sweeps again (it never deploys again).
        self.torn_down = teardown is not None and teardown["status"] == PASSED
        if teardown is not None and teardown["status"] == FAILED:
            self.done.discard(("teardown", None))  # tried again
        if resumed:
            data["resumed"].append(evidence.data.get("finished_at"))
            data.pop("interrupted_at", None)

    # --- the run ---------------------------------------------------------------------------

    def run(self, preflight: Callable[[], tuple[Preflight, AppConfig]], client: ClientFor | None = None) -> int:
        """The whole survey; its exit status (0 all passed, 1 something failed or is left, 130 Ctrl-C)."""
        self.client = client or default_clients()
        with self.folder.in_use(), hangup_is_ctrl_c():
            try:
                if not self.torn_down:
                    if not self.plan(preflight):
                        self.summary()
                        return 1
                    self.bring_up()
                    self.measure(self.evidence.data["measured"])
                    self.measure_late()
                    self.step_once("cost", None, self.cost)
                    self.step_once("report", None, self.report)
            except KeyboardInterrupt:
                return self.after_interrupt()
            except Exception as error:  # the survey's own fault: what it made still goes back to zero
                return self.after_failure(error)
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
            "context": checked.context,
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
                context = plan.get("context", self.options.context) | {"backends": ",".join(deployable)}
                argv = [*plan["deploy"], *[f"-c{k}={v}" for k, v in context.items()], "--poll", f"{self.options.poll_s:g}",
                        "--launch-timeout", f"{self.options.launch_timeout_s:g}", "--build-grace",
                        f"{self.options.build_grace_s:g}", "--method", self.options.method, "--leave-building",
                        *self.results()]  # fmt: skip
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
            if record is not None:
                self.note_import(record)
                if record.status != PASSED:
                    data["failed"]["bedrock-import"] = f"model import: {record.line}"
        data["measured"] = [b for b in data["measured"] if b not in data["failed"]]
        self.save()

    def read_up(self, record: StepRecord, late: bool = False) -> None:
        """What `up` brought up: ready, left building (its image), or failed with the reason. The
        late round's `up` adds to what the first one found."""
        data = self.evidence.data
        if not late:
            data["ready"], data["failed"], data["building"] = [], {}, []
        for path in record.evidence:
            if load(self.folder.root / path)["command"] != "up":
                continue
            up_evidence = UpEvidence.read(self.folder.root / path)
            if not late:
                data["billing"] = [row.to_json() for row in up_evidence.billing]
                data["expires_at"] = up_evidence.expires_at
            for entry in up_evidence.outcomes:
                backend = entry.backend
                data["placed"][backend] = [entry.stack, entry.region]
                if backend in data["building"]:
                    data["building"].remove(backend)
                if entry.outcome == "ready":
                    data["ready"].append(backend)
                elif entry.outcome == "building":
                    data["building"].append(backend)
                else:
                    data["failed"][backend] = entry.line
            errors = up_evidence.errors
            # A stack that stopped before its servers were watched leaves no record for them.
            for backend in data["plan"]["runs"] if not late else []:
                stack = get_backend(backend).stack
                seen = (*data["ready"], *data["failed"], *data["building"])
                if backend not in seen and stack in data["plan"]["deploy"]:
                    data["failed"][backend] = f"{stack}: {errors.get(stack) or 'no outcome from up'}"
        if data["failed"]:
            record.line = "; ".join(f"{b}: {why}" for b, why in data["failed"].items())
            data["steps"][-1]["line"] = record.line
        self.save()

    def measure_late(self) -> None:
        """The backends whose images were still building: park what was measured, watch them to
        ready, measure them with the same steps (keyed by their names)."""
        data = self.evidence.data
        # The first round's building backends, kept so that a resumed survey finishes their round.
        late = data.setdefault("late", list(data["building"]))
        if not late:
            return
        key = ",".join(late)
        self.step_once("park", key, self.park)
        stacks = sorted({get_backend(b).stack or "" for b in late})
        # The first up's context, so the config watched is the one deployed.
        context = data["plan"].get("context", self.options.context) | {"backends": ",".join(data["plan"]["runs"])}
        argv = [*[f"-c{k}={v}" for k, v in context.items()], *stacks, "--no-deploy", "--backends", key, "--poll", f"{self.options.poll_s:g}",
                "--launch-timeout", f"{self.options.launch_timeout_s:g}", "--build-grace",
                f"{self.options.build_grace_s:g}", *self.results()]  # fmt: skip
        if self.options.ready_timeout_s is not None:
            argv += ["--ready-timeout", f"{self.options.ready_timeout_s:g}"]
        record = self.step_once("up", key, lambda: up.run(argv))
        if record is not None:
            self.read_up(record, late=True)
        ready = [b for b in late if b in data["ready"]]
        data["measured"] = [*data["measured"], *[b for b in ready if b not in data["measured"]]]
        self.save()
        if ready:
            self.measure(ready, key=",".join(ready))

    def park(self) -> int:
        """While the late images build, nothing measured bills: a stack this survey created that
        holds no late backend is taken down now, and a measured server beside a late one goes to
        zero (the teardown removes it at the end). Stacks that stood before are left as they were."""
        data = self.evidence.data
        late = set(data["late"])
        late_stacks = {data["placed"].get(b, [None])[0] for b in late} | {get_backend(b).stack for b in late}
        created = self.created_where_placed()
        done = Created(stacks={s: regions for s, regions in created.stacks.items() if s not in late_stacks})
        failures = 0
        if done.stacks:
            console.print(
                f"[bold]parking[/bold]: taking down {', '.join(done.stacks)} (measured; nothing of it is late)"
            )
            for action in tear_down(done, self.options.delete_wait_s, self.client):
                data["teardown"].append(action)
                failures += action["outcome"].startswith("not ") and not action["outcome"].startswith("not found")
        for backend in data["measured"]:
            stack, region = (data["placed"].get(backend) or [None, None])[:2]
            # Only a server (an EC2 group) goes to zero; an endpoint's stack went down above.
            if stack not in late_stacks or stack not in created.stacks or not get_backend(backend).ami_parameter:
                continue
            failures += not self.to_zero(backend, stack, region)
        data["billing"] = [r for r in data["billing"] if r.get("backend") in late]
        self.save()
        return 1 if failures else 0

    def to_zero(self, backend: str, stack: str, region: str) -> bool:
        """A measured server's group at zero instances (found by the stack's outputs)."""
        from runner.cloud.outputs import read_stack_outputs

        try:
            output = next(o for o in read_stack_outputs(region).backends if o.name == backend)
            self.client("autoscaling", region).set_desired_capacity(
                AutoScalingGroupName=output.auto_scaling_group, DesiredCapacity=0
            )
        except Exception as error:
            console.print(f"[red]{backend}: could not take its group to zero: {describe(error)}[/red]")
            return False
        console.print(f"parking: {backend} taken to zero in {region} (measured; its stack waits for a late image)")
        return True

    def measure(self, backends: list[str], key: str | None = None) -> None:
        """The measuring steps over `backends`; `key` tells a late round's steps apart (None: the first)."""
        measured: list[str] = [b for b in backends if b not in OWN_STEP_ONLY]
        names = ",".join(measured)
        common = ["--local", "never", *self.results(), *self.aws()]
        why_not = "no backend is ready" if not measured else ""
        ec2 = [b for b in measured if b != BEDROCK and serving(get_backend(b).kind).ec2_server]
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
        if "sagemaker-batch" in backends:
            steps.append(("batch", None, lambda: batch.run([*self.results(), *self.aws()]), ""))
        steps.append(
            ("quality", None,
             (lambda: quality.run(["--items", str(options.quality_items), "--backends", names, *common]))
             if options.quality_items > 0 else None, why_not or "--quality-items 0")
        )  # fmt: skip
        for name, backend, call, why in steps:
            if not measured and name != "batch":
                call, why = None, why_not
            backend = backend or key  # a late round's steps carry the names they measured
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

    def supports_tools(self, name: str) -> bool:
        spec = get_backend(name)
        return spec.supports_tools and serving(spec.kind).agent

    def cost(self) -> int:
        inputs = [
            str(self.folder.root / p)
            for p in self.evidence_of("bench", "bench-sweep", "bench-workload", "batch", "quality")
        ]
        return cost.run(
            [*inputs, *(["--offline"] if self.options.offline_prices else []), *self.results(), *self.aws()]
        )

    def report(self) -> int:
        self.save()
        inputs = [str(self.folder.state), *[str(self.folder.root / p) for p in self.evidence_of(*PAGE_STEPS)]]
        return report.run(
            [*inputs, "--html", str(self.folder.report_html), "--markdown", str(self.folder.report_markdown)]
        )

    def note_import(self, record: StepRecord) -> None:
        """Only an import job this run started makes the model this run's to delete."""
        for path in record.evidence:
            started = ImportEvidence.read(self.folder.root / path).started
            self.created.imported_model = self.created.imported_model or started
        self.save()

    def note_transform_jobs(self, record: StepRecord) -> None:
        for path in record.evidence:
            for job in BatchEvidence.read(self.folder.root / path).jobs:
                self.created.transform_jobs.append((job.region, job.name))
        self.save()

    # --- the end: teardown or keep, then the sweep ---------------------------------------

    def decide(self, interrupted: bool) -> str:
        """`keep` or `down`: the flag; else a terminal's answer (none in ANSWER_WAIT_S, or the end
        of its input: down); else, without a terminal, down."""
        if self.options.keep:
            self.kept_because = "--keep"
            return "keep"
        if self.options.down or not (self.created.stacks or self.created.imported_model):
            return "down"
        if not sys.stdin.isatty():
            console.print("no terminal to ask: tearing down what this survey created")
            return "down"
        made = ", ".join([*self.created.stacks, *(["the imported model"] if self.created.imported_model else [])])
        prompt = f"{'interrupted. ' if interrupted else ''}Tear down what this survey created ({made})? [Y/n] "
        answer = ask_with_timeout(prompt, ANSWER_WAIT_S)
        if answer is None:
            console.print(
                f"no answer (none in {ANSWER_WAIT_S:.0f} s, or the input ended): tearing down what this survey created"
            )
            return "down"
        if answer.strip().lower() in ("n", "no"):
            self.kept_because = "your answer"
            return "keep"
        return "down"

    def close(self, interrupted: bool) -> None:
        if self.torn_down:
            console.print("this survey's teardown already passed: sweeping again")
        elif self.decide(interrupted) == "keep":
            self.record(self.kept_record())
        else:
            self.teardown()
        self.step_once("sweep", None, self.final_sweep)
        self.summary()

    def kept_record(self) -> StepRecord:
        ttl = self.ttl_text() or (
            "; NO time-to-live (ttlHours 0): it bills until it is taken down" if self.created.stacks else ""
        )
        line = (
            f"kept ({getattr(self, 'kept_because', '--keep')}): {self.billing_text() or 'nothing billing'}{ttl}; "
            f"its placements are in {self.folder.root / 'placement.json'} (INFERENCE_PLACEMENT_FILE for runner.up "
            f"--extend and runner.sweep); python -m runner.survey --resume {self.folder.root} --down takes it down"
        )
        record = skipped("teardown", None, line)
        record.status = KEPT
        return record

    def teardown(self) -> None:
        if ("teardown", None) in self.done:
            return
        if (self.folder.root / "forwards.json").exists():
            self.step_once("forwards-closed", None, lambda: forward.run(["--stop"]))
        if self.created.imported_model:
            self.step_once("import-deleted", None, lambda: model_import.run(["delete", *self.results(), *self.aws()]))
        self.step_once("teardown", None, self.remove_created)

    def remove_created(self) -> int:
        if not self.created.stacks and not self.created.transform_jobs:
            console.print("nothing this survey created is left to remove")
            return 0
        created = self.created_where_placed()
        console.print(f"[bold]removing what this survey created[/bold]: {', '.join(created.stacks) or 'no stack'}")

        def kept(action: dict[str, Any]) -> None:
            self.evidence.data["teardown"].append(action)
            console.print(f"  {action['region']} {action['kind']} {action['id']}: {action['outcome']}")
            self.save()

        actions = tear_down(created, self.options.delete_wait_s, self.client, on_action=kept)
        refused = [a for a in actions if a["outcome"].startswith("not ") and not a["outcome"].startswith("not found")]
        if not refused:
            self.evidence.data["billing"] = []
        return 1 if refused else 0

    def created_where_placed(self) -> Created:
        """What this run created, with wherever runner.up placed each stack (its failover included)
        among the regions looked at, and a backend it moved out of a created stack on its own (a
        satellite) as this run's too."""
        created = Created.from_json(self.created.to_json())
        for stack, record in read_placement_records_quietly().items():
            if record.get("of") in created.stacks and stack not in created.stacks:
                created.stacks[stack] = []
            if stack in created.stacks and record.get("region") not in created.stacks[stack]:
                created.stacks[stack].append(record["region"])
        return created

    def final_sweep(self) -> int:
        before = set(self.folder.evidence_files())
        code = sweep.run([*self.results(), *self.aws()])
        written = [p for p in self.folder.evidence_files() if p not in before and p.name.startswith("sweep-")]
        if not written:
            console.print("[red]the sweep wrote no evidence: what is left is not known[/red]")
            self.evidence.data["left"], self.evidence.data["sweep_problems"] = [], ["the sweep wrote no evidence"]
            return code or 1
        data = load(written[-1])
        found = [f for f in data.get("records", []) if (f.get("ours") or f.get("billing")) and not f.get("kept")]
        kept = [f for f in data.get("records", []) if f.get("kept")]
        problems = list(data.get("problems") or [])
        self.evidence.data["left"], self.evidence.data["sweep_problems"] = found, problems
        self.evidence.data["kept"] = kept
        for item in kept:
            console.print(f"kept for the next survey: {item['region']} {item['kind']} {item['id']} {item['detail']}")
        pre = self.evidence.data["pre_existing"]
        if found:
            console.print(f"[yellow]left ({len(found)}):[/yellow]")
            for item in found:
                mark = " (existed before this survey)" if item["kind"] == "stack" and item["id"] in pre else ""
                console.print(
                    f"  {item['region']} {item['kind']} {item['id']} {item['state']}{mark} {item.get('detail', '')}"
                )
        if problems:
            console.print(f"[red]the sweep is incomplete[/red]: {'; '.join(problems)}")
            return 1
        if not found:
            console.print("[green]nothing of ours billing, and nothing of ours left[/green]")
        # Exit 1 alone is the sweep's "something billing is left": listed above; the survey's status says the rest.
        return 0 if code in (0, 1) else code

    def after_interrupt(self) -> int:
        data = self.evidence.data
        data["interrupted_at"] = next(
            (r["step"] for r in reversed(data["steps"]) if r["status"] == INTERRUPTED), "between steps"
        )
        console.print(f"[yellow]interrupted[/yellow] ({data['interrupted_at']}); "
                      f"running now: {self.billing_text() or 'nothing billing'}{self.ttl_text()}")  # fmt: skip
        if not any(r["step"] == "preflight" and r["status"] == PASSED for r in data["steps"]):
            self.save(interrupted=True)
            return 130  # nothing was deployed yet: nothing to take down
        try:
            self.close(interrupted=True)
        except KeyboardInterrupt:
            return self.teardown_interrupted()
        self.save(interrupted=True)
        return 130

    def after_failure(self, error: Exception) -> int:
        """A fault of the survey itself (not of a step): said in one line, then the same way back
        to zero as after Ctrl-C; exit 1."""
        self.evidence.data["fault"] = f"{type(error).__name__}: {error}"
        console.print(f"[red]the survey stopped on a fault of its own:[/red] {self.evidence.data['fault']}")
        try:
            self.close(interrupted=True)
        except KeyboardInterrupt:
            return self.teardown_interrupted()
        return 1

    def teardown_interrupted(self) -> int:
        console.print(
            f"[yellow]interrupted: stopping here.[/yellow] {self.billing_text() or ''}{self.ttl_text()}; "
            f"`python -m runner.survey --resume {self.folder.root} --down` finishes the teardown"
        )
        self.save(interrupted=True)
        return 130

    def exit_status(self) -> int:
        data = self.evidence.data
        latest = self.latest_records()
        failed = [r for r in latest.values() if r["status"] == FAILED]
        teardown = latest.get(("teardown", None))
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
        """What bills now, as up's billing table left it (price unknown said so), and what it cannot see:
        stacks this run is still deploying, and stacks that stood before it."""
        data = self.evidence.data
        rows = data["billing"]
        parts = [f"{r['backend']} {r['usd_per_hour']:.4f}" if r.get("usd_per_hour") is not None
                 else f"{r['backend']} (price unknown)" for r in rows]  # fmt: skip
        text = (
            f"billing now {sum(r.get('usd_per_hour') or 0.0 for r in rows):.4f} $/h ({', '.join(parts)})"
            if rows
            else ""
        )
        up_record = self.latest_records().get(("up", None))
        if self.created.stacks and (up_record is None or up_record["status"] == INTERRUPTED):
            text += ("; " if text else "") + (
                f"billing not known: {', '.join(self.created.stacks)} may still be deploying (CloudFormation carries on)"
            )
        if data["pre_existing"]:
            text += (
                "; " if text else ""
            ) + f"not counted: {', '.join(data['pre_existing'])} (stood before this survey)"
        return text

    def ttl_text(self) -> str:
        expiry = self.evidence.data.get("expires_at")
        return f"; the time-to-live takes it to zero at {expiry}" if expiry else ""

    def evidence_of(self, *steps: str) -> list[str]:
        """The evidence of the latest run of each of these steps (a resumed survey ran some twice)."""
        return [p for (step, _), r in self.latest_records().items() if step in steps for p in r["evidence"]]

    def latest_records(self) -> dict[tuple[str, str | None], dict[str, Any]]:
        latest: dict[tuple[str, str | None], dict[str, Any]] = {}
        for record in self.evidence.data["steps"]:
            latest.pop((record["step"], record["backend"]), None)
            latest[(record["step"], record["backend"])] = record
        return latest

    def results(self) -> list[str]:
        return ["--results-dir", str(self.folder.evidence_dir)]

    def aws(self) -> list[str]:
        return ["--aws"] if self.options.aws else []

    def summary(self) -> None:
        from runner.render.survey import render_steps

        self.save()
        render_steps(self.evidence.data, console)
        console.print(f"survey folder: {self.folder.root}")


@contextlib.contextmanager
def hangup_is_ctrl_c() -> Iterator[None]:
    """A closed terminal (SIGHUP) or a SIGTERM ends a survey the way Ctrl-C does: what it made is
    taken down (or kept, as asked), never left without a word."""

    def interrupt(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    names = [signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])]
    saved = {}
    with contextlib.suppress(ValueError):  # not the main thread: signals stay as they are
        saved = {name: signal.signal(name, interrupt) for name in names}
    try:
        yield
    finally:
        for name, handler in saved.items():
            signal.signal(name, handler)


def ask_with_timeout(prompt: str, timeout_s: float) -> str | None:
    """The terminal's answer, or None after `timeout_s` without one or at the end of its input."""
    print(prompt, end="", flush=True)
    try:
        ready, _, _ = select.select([sys.stdin], [], [], timeout_s)
    except (OSError, ValueError, io.UnsupportedOperation):
        ready = [sys.stdin]  # no select on this stream: read it as it is
    if not ready:
        print()
        return None
    line = sys.stdin.readline()
    return line if line else None


def read_placement_records_quietly() -> dict[str, dict[str, Any]]:
    try:
        return read_placement_records()
    except CatalogError:
        return {}
