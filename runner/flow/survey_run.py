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

from collections.abc import Callable

from catalog.config import AppConfig
from runner.cli.session import stop_signals_as_ctrl_c
from runner.cloud.bring_up.preflight import Preflight
from runner.cloud.cleanup.survey_teardown import ClientFor, default_clients
from runner.core.console import console
from runner.flow.late_round import measure_late
from runner.flow.measure_steps import measure
from runner.flow.plan import plan
from runner.flow.report_steps import cost_step, report_step
from runner.flow.state import SurveyState
from runner.flow.steps import FAILED, INTERRUPTED, KEPT, PASSED
from runner.flow.up_steps import up_step
from runner.flow.way_back import close, decide


class SurveyRun(SurveyState):
    """The survey's steps in their order, and how a run ends: passed, interrupted, or stopped by a
    fault of its own; each part is a module of runner/flow, over the state they share."""

    def run(self, preflight: Callable[[], tuple[Preflight, AppConfig]], client: ClientFor | None = None) -> int:
        """The whole survey; its exit status (0 all passed, 1 something failed or is left, 130 Ctrl-C)."""
        self.client = client or default_clients()
        with self.folder.in_use(), stop_signals_as_ctrl_c():
            try:
                if not self.torn_down:
                    if not plan(self, preflight):
                        self.summary()
                        return 1
                    up_step(self)
                    measure(self, self.file.measured or [])
                    measure_late(self)
                    self.step_once("cost", None, lambda: cost_step(self))
                    self.step_once("report", None, lambda: report_step(self))
            except KeyboardInterrupt:
                return self.after_interrupt()
            except Exception as error:  # the survey's own fault: what it made still goes back to zero
                return self.after_failure(error)
            try:
                close(self, interrupted=False)
            except KeyboardInterrupt:
                return self.teardown_interrupted()
        return self.exit_status()

    def after_interrupt(self) -> int:
        where = next((r.step for r in reversed(self.steps) if r.status == INTERRUPTED), "between steps")
        self.file.interrupted_at = where
        console.print(f"[yellow]interrupted[/yellow] ({where}); "
                      f"running now: {self.billing_text() or 'nothing billing'}{self.ttl_text()}")  # fmt: skip
        if not any(r.step == "preflight" and r.status == PASSED for r in self.steps):
            self.save(interrupted=True)
            return 130  # nothing was deployed yet: nothing to take down
        try:
            close(self, interrupted=True)
        except KeyboardInterrupt:
            return self.teardown_interrupted()
        self.save(interrupted=True)
        return 130

    def after_failure(self, error: Exception) -> int:
        """A fault of the survey itself (not of a step): said in one line, then the same way back
        to zero as after Ctrl-C; exit 1."""
        self.file.fault = f"{type(error).__name__}: {error}"
        console.print(f"[red]the survey stopped on a fault of its own:[/red] {self.file.fault}")
        try:
            close(self, interrupted=True)
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
        latest = self.latest_records()
        failed = [r for r in latest.values() if r.status == FAILED]
        teardown = latest.get(("teardown", None))
        created_left = (
            teardown is not None
            and teardown.status != KEPT
            and any(f["kind"] == "stack" and f["id"] in self.created.stacks for f in self.file.left or [])
        )
        return 1 if failed or created_left else 0

    def decide(self, interrupted: bool) -> str:
        """`keep` or `down` (runner/flow/way_back.py)."""
        return decide(self, interrupted)
