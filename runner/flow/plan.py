"""The survey's plan, before anything bills: the preflight run once, what it found kept in the
state (what runs, what is left out and why, which stacks already stand and are left as they are,
which to deploy), and the plan shown."""

from __future__ import annotations

from collections.abc import Callable

from catalog.config import AppConfig
from runner.cloud.bring_up.preflight import Preflight
from runner.cloud.cleanup.survey_teardown import existing_stacks
from runner.core.console import console
from runner.flow.state import SurveyState
from runner.flow.steps import INTERRUPTED, PASSED


def plan(state: SurveyState, preflight: Callable[[], tuple[Preflight, AppConfig]]) -> bool:
    """The preflight, once; False when nothing can run (nothing is deployed then)."""
    if ("preflight", None) in state.done:
        return True
    record = state.step("preflight", None, lambda: preflight_step(state, preflight))
    if record.status == INTERRUPTED:
        raise KeyboardInterrupt
    return record.status == PASSED


def preflight_step(state: SurveyState, preflight: Callable[[], tuple[Preflight, AppConfig]]) -> int:
    checked, config = preflight()
    file = state.file
    file.preflight = checked
    runs = [r for r in checked.rows if r.runs]
    file.left_out = {r.backend: r.reason for r in checked.rows if not r.runs}
    candidates = {s.name: list(s.candidate_regions) for s in config.stacks if any(b.name in {r.backend for r in runs} for b in s.backends)}  # fmt: skip
    pre_existing = file.pre_existing = existing_stacks(candidates, state.client)
    file.plan = {
        "context": checked.context,
        "runs": [r.backend for r in runs],
        "deploy": [s for s in candidates if s not in pre_existing],
        "candidates": candidates,
    }
    for line in checked.notices:
        state.evidence.notice(line)
    from runner.render.survey import render_plan

    render_plan(checked, console)
    for stack, region in pre_existing.items():
        console.print(
            f"[yellow]{stack} already stands in {region}:[/yellow] this survey measures it as it is, "
            "does not deploy it and leaves it as it was"
        )
    if not runs and not state.options.with_bedrock:
        console.print("[red]no backend can run: nothing is deployed[/red]")
        return 1
    return 0
