"""The survey's way back to zero: keep or tear down (the flag, else the terminal's answer, else
down), the teardown of what this run created and nothing else, then a sweep that lists what is
left and never deletes."""

from __future__ import annotations

import io
import select
import sys

from runner import forward, model_import, sweep
from runner.cloud.cleanup.survey_teardown import tear_down
from runner.core.console import console
from runner.core.evidence import load
from runner.core.typed_json import JsonObject
from runner.flow.state import SurveyState
from runner.flow.steps import KEPT, StepRecord, skipped

# How long the teardown question waits for an answer before tearing down (an unattended terminal).
ANSWER_WAIT_S = 300.0


def decide(state: SurveyState, interrupted: bool) -> str:
    """`keep` or `down`: the flag; else a terminal's answer (none in ANSWER_WAIT_S, or the end
    of its input: down); else, without a terminal, down."""
    if state.options.keep:
        state.kept_because = "--keep"
        return "keep"
    if state.options.down or not (state.created.stacks or state.created.imported_model):
        return "down"
    if not sys.stdin.isatty():
        console.print("no terminal to ask: tearing down what this survey created")
        return "down"
    made = ", ".join([*state.created.stacks, *(["the imported model"] if state.created.imported_model else [])])
    prompt = f"{'interrupted. ' if interrupted else ''}Tear down what this survey created ({made})? [Y/n] "
    answer = ask_with_timeout(prompt, ANSWER_WAIT_S)
    if answer is None:
        console.print(
            f"no answer (none in {ANSWER_WAIT_S:.0f} s, or the input ended): tearing down what this survey created"
        )
        return "down"
    if answer.strip().lower() in ("n", "no"):
        state.kept_because = "your answer"
        return "keep"
    return "down"


def close(state: SurveyState, interrupted: bool) -> None:
    if state.torn_down:
        console.print("this survey's teardown already passed: sweeping again")
    elif decide(state, interrupted) == "keep":
        state.record(kept_record(state))
    else:
        teardown(state)
    state.step_once("sweep", None, lambda: final_sweep(state))
    state.summary()


def kept_record(state: SurveyState) -> StepRecord:
    ttl = state.ttl_text() or (
        "; NO time-to-live (ttlHours 0): it bills until it is taken down" if state.created.stacks else ""
    )
    line = (
        f"kept ({state.kept_because}): {state.billing_text() or 'nothing billing'}{ttl}; "
        f"its placements are in {state.folder.root / 'placement.json'} (INFERENCE_PLACEMENT_FILE for runner.up "
        f"--extend and runner.sweep); python -m runner.survey --resume {state.folder.root} --down takes it down"
    )
    record = skipped("teardown", None, line)
    record.status = KEPT
    return record


def teardown(state: SurveyState) -> None:
    if ("teardown", None) in state.done:
        return
    if (state.folder.root / "forwards.json").exists():
        state.step_once("forwards-closed", None, lambda: forward.run(["--stop"]))
    if state.created.imported_model:
        state.step_once("import-deleted", None, lambda: model_import.run(["delete", *state.results(), *state.aws()]))
    state.step_once("teardown", None, lambda: remove_created(state))


def remove_created(state: SurveyState) -> int:
    if not state.created.stacks and not state.created.transform_jobs:
        console.print("nothing this survey created is left to remove")
        return 0
    created = state.created_where_placed()
    console.print(f"[bold]removing what this survey created[/bold]: {', '.join(created.stacks) or 'no stack'}")

    def kept(action: JsonObject) -> None:
        state.teardown.append(action)
        console.print(f"  {action['region']} {action['kind']} {action['id']}: {action['outcome']}")
        state.save()

    actions = tear_down(created, state.options.delete_wait_s, state.client, on_action=kept)
    refused = [a for a in actions if a["outcome"].startswith("not ") and not a["outcome"].startswith("not found")]
    if not refused:
        state.file.billing = []
    return 1 if refused else 0


def final_sweep(state: SurveyState) -> int:
    before = set(state.folder.evidence_files())
    code = sweep.run([*state.results(), *state.aws()])
    written = [p for p in state.folder.evidence_files() if p not in before and p.name.startswith("sweep-")]
    if not written:
        console.print("[red]the sweep wrote no evidence: what is left is not known[/red]")
        state.file.left, state.file.sweep_problems = [], ["the sweep wrote no evidence"]
        return code or 1
    data = load(written[-1])
    found = [f for f in data.get("records", []) if (f.get("ours") or f.get("billing")) and not f.get("kept")]
    kept = [f for f in data.get("records", []) if f.get("kept")]
    problems = list(data.get("problems") or [])
    state.file.left, state.file.sweep_problems, state.file.kept = found, problems, kept
    for item in kept:
        console.print(f"kept for the next survey: {item['region']} {item['kind']} {item['id']} {item['detail']}")
    pre = state.file.pre_existing or {}
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
