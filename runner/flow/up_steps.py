"""The survey's `up` step and what it brought: the plan's stacks deployed (recorded as this run's
before the deploy starts), each backend read back as ready, building or failed, the stacks that
stood before measured as they are, and the Custom Model Import when Bedrock's imported model is
measured."""

from __future__ import annotations

from catalog.backends import get_backend
from catalog.serving import serving
from runner import up
from runner.commands import BY_NAME
from runner.core.evidence import load
from runner.core.typed_json import to_json
from runner.flow.options import MANAGED
from runner.flow.read_back import ImportEvidence, UpEvidence
from runner.flow.state import SurveyState
from runner.flow.steps import INTERRUPTED, PASSED, StepRecord, skipped


def up_step(state: SurveyState) -> None:
    file = state.file
    plan = file.plan or {}
    deployable = list(plan["runs"])
    if ("up", None) not in state.done:
        if not plan["deploy"]:
            state.record(
                skipped("up", None, "nothing to deploy" + (": every stack already stands" if deployable else ""))
            )
        else:
            # Recorded before the deploy starts: an interrupted deploy is taken back too.
            for stack in plan["deploy"]:
                state.created.stacks[stack] = plan["candidates"][stack]
            state.save()
            context = plan.get("context", state.options.context) | {"backends": ",".join(deployable)}
            argv = [*plan["deploy"], *[f"-c{k}={v}" for k, v in context.items()], "--poll", f"{state.options.poll_s:g}",
                    "--launch-timeout", f"{state.options.launch_timeout_s:g}", "--build-grace",
                    f"{state.options.build_grace_s:g}", "--method", state.options.method, "--leave-building",
                    *state.results(), *state.aws()]  # fmt: skip
            if state.options.ready_timeout_s is not None:
                argv += ["--ready-timeout", f"{state.options.ready_timeout_s:g}"]
            record = state.step("up", None, lambda: up.run(argv))
            read_up(state, record)
            if record.status == INTERRUPTED:
                raise KeyboardInterrupt
    pre_existing = set(file.pre_existing or {})
    ready, failed = file.ready or [], file.failed
    assert failed is not None  # every section of a survey's state is made with it (runner/flow/state.py)
    standing = [b for b in plan["runs"] if get_backend(b).stack in pre_existing]
    measured = [*ready, *[b for b in standing if b not in ready], *(MANAGED if state.options.with_bedrock else ())]
    for name in measured:
        # What makes a deployed stack servable, as its serving row names it (Custom Model Import's import).
        prepared_by = serving(get_backend(name).kind).prepared_by
        if not prepared_by:
            continue
        command, *args = prepared_by
        run = BY_NAME[command].load().run
        record = state.step_once(args[0], None, lambda run=run, args=args: run([*args, *state.results(), *state.aws()]))
        if record is not None:
            note_import(state, record)
            if record.status != PASSED:
                failed[name] = f"{command.replace('_', ' ')}: {record.line}"
    file.measured = [b for b in measured if b not in failed]
    state.save()


def read_up(state: SurveyState, record: StepRecord, late: bool = False) -> None:
    """What `up` brought up: ready, left building (its image), or failed with the reason. The
    late round's `up` adds to what the first one found."""
    file = state.file
    if not late:
        file.ready, file.failed, file.building = [], {}, []
    ready, failed, building, placed = file.ready, file.failed, file.building, file.placed
    # Every section of a survey's state is made with it (runner/flow/state.py): filled in place.
    assert ready is not None and failed is not None and building is not None and placed is not None
    plan = file.plan or {}
    for path in record.evidence:
        if load(state.folder.root / path)["command"] != "up":
            continue
        up_evidence = UpEvidence.read(state.folder.root / path)
        if not late:
            file.billing = [to_json(row) for row in up_evidence.billing]  # type: ignore[misc]  # rows are objects
            file.expires_at = up_evidence.expires_at
        for entry in up_evidence.outcomes:
            backend = entry.backend
            placed[backend] = [entry.stack, entry.region]  # type: ignore[list-item]  # either may be unknown
            if backend in building:
                building.remove(backend)
            if entry.outcome == "ready":
                ready.append(backend)
            elif entry.outcome == "building":
                building.append(backend)
            else:
                failed[backend] = entry.line
        errors = up_evidence.errors
        # A stack that stopped before its servers were watched leaves no record for them.
        for backend in plan["runs"] if not late else []:
            stack = get_backend(backend).stack
            if backend not in (*ready, *failed, *building) and stack in plan["deploy"]:
                failed[backend] = f"{stack}: {errors.get(stack) or 'no outcome from up'}"
    if failed:
        record.line = "; ".join(f"{b}: {why}" for b, why in failed.items())
        state.steps[-1].line = record.line
    state.save()


def note_import(state: SurveyState, record: StepRecord) -> None:
    """Only an import job this run started makes the model this run's to delete."""
    for path in record.evidence:
        started = ImportEvidence.read(state.folder.root / path).started
        state.created.imported_model = state.created.imported_model or started
    state.save()
