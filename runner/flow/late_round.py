"""The survey's late round, for the backends whose images were still building after the first:
what was measured is parked (nothing bills while the build runs), the late backends are watched
to ready (`up --no-deploy`) and measured with the same steps."""

from __future__ import annotations

from catalog.backends import get_backend
from runner import up
from runner.cloud.cleanup.survey_teardown import Created, tear_down
from runner.core.console import console
from runner.core.errors import describe
from runner.flow.measure_steps import measure
from runner.flow.state import SurveyState
from runner.flow.up_steps import read_up


def measure_late(state: SurveyState) -> None:
    """The backends whose images were still building: park what was measured, watch them to
    ready, measure them with the same steps (keyed by their names)."""
    file = state.file
    # The first round's building backends, kept so that a resumed survey finishes their round.
    if file.late is None:
        file.late = list(file.building or [])
    late = file.late
    if not late:
        return
    key = ",".join(late)
    state.step_once("park", key, lambda: park(state))
    stacks = sorted({get_backend(b).stack or "" for b in late})
    # The first up's context, so the config watched is the one deployed.
    plan = file.plan or {}
    context = plan.get("context", state.options.context) | {"backends": ",".join(plan["runs"])}
    argv = [*[f"-c{k}={v}" for k, v in context.items()], *stacks, "--no-deploy", "--backends", key, "--poll", f"{state.options.poll_s:g}",
            "--launch-timeout", f"{state.options.launch_timeout_s:g}", "--build-grace",
            f"{state.options.build_grace_s:g}", *state.results(), *state.aws()]  # fmt: skip
    if state.options.ready_timeout_s is not None:
        argv += ["--ready-timeout", f"{state.options.ready_timeout_s:g}"]
    record = state.step_once("up", key, lambda: up.run(argv))
    if record is not None:
        read_up(state, record, late=True)
    ready = [b for b in late if b in (file.ready or [])]
    measured = file.measured or []
    file.measured = [*measured, *[b for b in ready if b not in measured]]
    state.save()
    if ready:
        measure(state, ready, key=",".join(ready))


def park(state: SurveyState) -> int:
    """While the late images build, nothing measured bills: a stack this survey created that
    holds no late backend is taken down now, and a measured server beside a late one goes to
    zero (the teardown removes it at the end). Stacks that stood before are left as they were."""
    file = state.file
    late = set(file.late or [])
    placed = file.placed or {}
    late_stacks = {placed.get(b, [None])[0] for b in late} | {get_backend(b).stack for b in late}
    created = state.created_where_placed()
    done = Created(stacks={s: regions for s, regions in created.stacks.items() if s not in late_stacks})
    failures = 0
    if done.stacks:
        console.print(f"[bold]parking[/bold]: taking down {', '.join(done.stacks)} (measured; nothing of it is late)")
        for action in tear_down(done, state.options.delete_wait_s, state.client):
            state.teardown.append(action)
            failures += action["outcome"].startswith("not ") and not action["outcome"].startswith("not found")
    for backend in file.measured or []:
        stack, region = (placed.get(backend) or [None, None])[:2]
        # Only a server (an EC2 group) goes to zero; an endpoint's stack went down above.
        if stack not in late_stacks or stack not in created.stacks or not get_backend(backend).ami_parameter:
            continue
        failures += not to_zero(state, backend, stack, region)
    file.billing = [r for r in file.billing or [] if r.get("backend") in late]
    state.save()
    return 1 if failures else 0


def to_zero(state: SurveyState, backend: str, stack: str, region: str) -> bool:
    """A measured server's group at zero instances (found by the stack's outputs)."""
    from runner.cloud.outputs import read_stack_outputs

    try:
        output = next(o for o in read_stack_outputs(region).backends if o.name == backend)
        state.client("autoscaling", region).set_desired_capacity(
            AutoScalingGroupName=output.auto_scaling_group, DesiredCapacity=0
        )
    except Exception as error:
        console.print(f"[red]{backend}: could not take its group to zero: {describe(error)}[/red]")
        return False
    console.print(f"parking: {backend} taken to zero in {region} (measured; its stack waits for a late image)")
    return True
