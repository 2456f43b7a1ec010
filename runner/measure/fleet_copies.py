"""`bench --copies 1,2,4`: a fleet's capacity at each copy count of an inference component.

For each count the component's copies are set with UpdateInferenceComponentRuntimeConfig
(DesiredCopyCount), the run waits until DescribeInferenceComponent says that many are in service
(RuntimeConfig.CurrentCopyCount, status InService), then the capacity search runs as for any
backend, its levels labelled with the count. Each count's answer is kept apart from the evidence's
`capacity` (which holds one answer per backend), under `fleet`, with the scaling efficiency
capacity(N) / (N x capacity(1)) (runner/figures/fleet.py), the endpoint's routing strategy
(DescribeEndpointConfig's RoutingConfig) and the shared share of each prompt.

A count AWS refuses (past the instances' accelerators or the account's quota), a scale-out that
never comes within `--copies-wait`, and a copy that dies mid-level (requests failed, not for lack of
time) are one line each, the count marked and not reported as the fleet's capacity. When the run
ends, however it ends, the copy count the component had before is set again, and the evidence says
so (or why not: the count it is left at, which bills until changed).

Application Auto Scaling owns DesiredCopyCount (the stack's target tracking policy, and the step
policy out of zero): left acting, it moves the copies mid-count, and the figure would be another
count's. So before the first count its dynamic scaling is suspended (runner/measure/copy_target.py),
and its SuspendedState put back after the copies, one line each way. A count above the target's
MaxCapacity is said in one line and measured: set by hand while dynamic scaling is suspended, it
holds. After each level DescribeInferenceComponent is read again: copies that moved mark the count.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields
from typing import Any

from catalog.backends import BackendKind
from runner.cloud.aws import boto_client
from runner.core.backends import Backend
from runner.core.console import console
from runner.core.errors import RunnerError, describe
from runner.core.evidence import Evidence
from runner.core.records import RequestRecord
from runner.figures.capacity import CapacityFound
from runner.figures.fleet import CopyCount, FleetCopies, FleetPoint, scaling
from runner.figures.levels import LevelSummary
from runner.measure.bench_file import BenchFile
from runner.measure.copy_target import (
    CopyTarget,
    dynamic_held,
    instances_in_service,
    look_delays,
    read_target,
    register,
    restore_command,
    set_once_settled,
)
from runner.measure.load import LoadLevel, parse_numbers
from runner.measure.records import warm_up
from runner.measure.workload_run import Advance, BackendRun, BenchPlan

# What the runner assumes a variant without RoutingConfig routes by (the stack always sets one;
# neither the API reference nor botocore's model names a default).
DEFAULT_ROUTING = "LEAST_OUTSTANDING_REQUESTS"
# Prefix-aware routing needs two instances (botocore's sagemaker model, RoutingStrategy: "The
# endpoint applies prefix-aware routing only when two or more instances can serve the request").
PREFIX_AWARE = "PREFIX_AWARE"
# How long a change of copies may take: a copy past the instances running needs a new instance,
# and SageMaker's guide says provisioning takes several minutes.
COPIES_WAIT_S = 900.0
POLL_S = 5.0
IN_SERVICE = "InService"
FAILED = "Failed"


def parse_copies(text: str) -> list[int]:
    """`--copies 1,2,4`: whole numbers above 0, each once, in the order given."""
    counts = [int(v) for v in parse_numbers(text, "--copies", integer=True)]
    if len(set(counts)) != len(counts):
        raise RunnerError(f"--copies {text!r}: each count once")
    return counts


def copies_text(count: int) -> str:
    return f"{count} {'copy' if count == 1 else 'copies'}"


def not_a_component(backend: Backend) -> str | None:
    """One line for a backend whose copies cannot be set (None: its stack output names an inference
    component, whose copies are what this measures)."""
    if backend.output is not None and backend.output.inference_component_name:
        return None
    return (
        f"{backend.name}: skipped: --copies sets the copies of an inference component "
        f"({BackendKind.SAGEMAKER_COMPONENTS.value}); {backend.name} is {backend.kind.value}: measure it without --copies"
    )


@dataclass(frozen=True)
class CopiesState:
    desired: int
    current: int
    status: str
    failure: str | None = None


class ComponentCopies:
    """The copies of one inference component, through SageMaker's control plane."""

    def __init__(self, backend: Backend, timeout_s: float, poll_s: float = POLL_S) -> None:
        component = backend.output.inference_component_name if backend.output else None
        if not component or not backend.endpoint_name:
            raise RunnerError(f"{backend.name}: no endpoint and inference component in its stack output")
        self.endpoint, self.component, self.poll_s = backend.endpoint_name, component, poll_s
        self.client = boto_client("sagemaker", backend.region or "us-east-1", timeout_s)
        self.scaling = boto_client("application-autoscaling", backend.region or "us-east-1", timeout_s)

    def state(self) -> CopiesState:
        described = self.client.describe_inference_component(InferenceComponentName=self.component)
        runtime = described.get("RuntimeConfig") or {}
        return CopiesState(
            int(runtime.get("DesiredCopyCount") or 0),
            int(runtime.get("CurrentCopyCount") or 0),
            str(described.get("InferenceComponentStatus")),
            described.get("FailureReason"),
        )

    def routing(self) -> dict[str, Any]:
        """The RoutingConfig of the component's variant (empty: the default)."""
        variant = self.client.describe_inference_component(InferenceComponentName=self.component).get("VariantName")
        config = self.client.describe_endpoint(EndpointName=self.endpoint)["EndpointConfigName"]
        described = self.client.describe_endpoint_config(EndpointConfigName=config)
        for entry in described.get("ProductionVariants") or []:
            if variant in (None, entry.get("VariantName")):
                return entry.get("RoutingConfig") or {}
        return {}

    def instances(self) -> int | None:
        """The endpoint's instances in service (None: DescribeEndpoint gives no CurrentInstanceCount)."""
        return instances_in_service(self.client, self.endpoint)

    def set(self, copies: int) -> None:
        self.client.update_inference_component_runtime_config(
            InferenceComponentName=self.component, DesiredRuntimeConfig={"CopyCount": copies}
        )

    def wait(self, copies: int, budget_s: float) -> str | None:
        """None once `copies` are in service; else the one line of what was seen at the end."""
        deadline = time.monotonic() + budget_s
        delays = look_delays(self.poll_s)
        while True:
            seen = self.state()
            if seen.status == IN_SERVICE and seen.current == copies:
                return None
            if seen.status == FAILED:
                # What AWS refuses only once it tries (an instance past the account's quota).
                return f"{copies_text(copies)}: the component Failed: {seen.failure or 'no FailureReason given'}"
            if time.monotonic() >= deadline:
                return (
                    f"{copies_text(copies)} not in service after {budget_s:g} s (DescribeInferenceComponent: "
                    f"CurrentCopyCount {seen.current}, DesiredCopyCount {seen.desired}, {seen.status})"
                )
            time.sleep(min(next(delays), max(0.0, deadline - time.monotonic())))


@dataclass(frozen=True)
class CopiesLevel(LoadLevel):
    """A level run with `copies` in service: its label says the count (the same load at another
    count is another level), its records keep no other field than a level's."""

    copies: int = 1

    @property
    def label(self) -> str:
        return f"{copies_text(self.copies)}, {super().label}"

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        del data["copies"]
        return data


@dataclass
class CopiesPlan(BenchPlan):
    """The bench's plan at one copy count: every level it makes is a `CopiesLevel`."""

    copies: int = 1

    @classmethod
    def at(cls, plan: BenchPlan, copies: int) -> CopiesPlan:
        return cls(**{f.name: getattr(plan, f.name) for f in fields(plan)}, copies=copies)

    def levels(self, input_tokens: int | None) -> list[LoadLevel]:
        return [self.with_copies(level) for level in super().levels(input_tokens)]

    def level_at(self, value: float, input_tokens: int | None) -> LoadLevel:
        return self.with_copies(super().level_at(value, input_tokens))

    def with_copies(self, level: LoadLevel) -> CopiesLevel:
        return CopiesLevel(**asdict(level), copies=self.copies)


class CopyLost(RunnerError):
    """Requests of a level failed with every copy set in service: a copy died (or stopped
    answering) mid-level, so the level is not the fleet's capacity."""


class CopiesRun(BackendRun):
    """The workload at one copy count: its search's answer kept for the fleet, and a level whose
    requests failed (not for time) ending that count's search, marked."""

    def __init__(
        self,
        backend: Backend,
        plan: CopiesPlan,
        evidence: Evidence[BenchFile],
        advance: Advance,
        copies: ComponentCopies,
    ) -> None:
        super().__init__(backend, plan, evidence, advance)
        self.count, self.copies = plan.copies, copies
        self.found: dict[int | None, CapacityFound] = {}
        self.marked: dict[int | None, str] = {}
        self.kept: list[RequestRecord] = []

    def prepare(self, client) -> None:
        """The backend's preparation and warm-up, then as many more warm-ups at once as the first
        level has in flight, at least one per copy: a copy just started answers its first request
        cold, and each connection through the endpoint is opened before the timed levels."""
        super().prepare(client)
        more = max(self.count, int(self.plan.search_start)) - 1
        if more > 0:
            with ThreadPoolExecutor(more) as pool:
                self.evidence.file.warm_up.extend(pool.map(lambda _: warm_up(client, self.backend.name), range(more)))

    def keep_found(self, found: CapacityFound) -> None:
        self.found[found.input_tokens] = found

    def keep_level(self, level: LoadLevel, records: list[RequestRecord], *args: Any, **kwargs: Any) -> LevelSummary:
        self.kept = records
        return super().keep_level(level, records, *args, **kwargs)

    def measure_level(self, client, level: LoadLevel) -> LevelSummary:
        timed_out = self.evidence.file.timed_out or 0
        summary = super().measure_level(client, level)
        failed = [r for r in self.kept if not r.ok]
        # Past --timeout is a slow level, judged on the objectives like any other.
        lost = len(failed) - ((self.evidence.file.timed_out or 0) - timed_out)
        try:
            seen: CopiesState | None = self.copies.state()
            after = f"; after it DescribeInferenceComponent says {seen.current} of {self.count} in service"
        except Exception as error:
            seen, after = None, f"; DescribeInferenceComponent after it: {describe(error)}"
        if lost <= 0 and seen is not None and (seen.current, seen.desired) != (self.count, self.count):
            raise CopyLost(
                f"{level.label}: the copies moved during the level (DescribeInferenceComponent after it: "
                f"CurrentCopyCount {seen.current}, DesiredCopyCount {seen.desired}, not {self.count}): "
                "not the fleet's capacity at this count"
            )
        if lost > 0:
            first = next((r.error for r in failed if r.error), "no error said")
            raise CopyLost(
                f"{level.label}: {lost} of {len(self.kept)} requests failed with {copies_text(self.count)} set in service "
                f"(a copy died or stopped answering mid-level; first: {first}){after}: not the fleet's capacity"
            )
        return summary

    def search(self, client, input_tokens: int | None) -> None:
        try:
            super().search(client, input_tokens)
        except CopyLost as lost:
            self.mark(input_tokens, str(lost))

    def fail_all(self, line: str) -> None:
        for length in self.plan.workload.input_tokens or [None]:
            if length not in self.found:
                self.marked.setdefault(length, line)
        super().fail_all(line)

    def mark(self, input_tokens: int | None, line: str) -> None:
        self.marked[input_tokens] = line
        self.note(line)


def shared_share(plan: BenchPlan, input_tokens: int | None) -> float:
    """The share of each prompt that is a prefix shared with others (0: none, or no lengths set)."""
    prefix = plan.workload.prefix_tokens
    return round(min(1.0, prefix / input_tokens), 4) if prefix and input_tokens else 0.0


def measure_copies(
    backend: Backend,
    plan: BenchPlan,
    counts: list[int],
    evidence: Evidence[BenchFile],
    advance: Advance,
    wait_s: float = COPIES_WAIT_S,
    poll_s: float = POLL_S,
) -> None:
    """The capacity search at each copy count of `backend`'s inference component, the copies given
    back as they were when it ends; a backend whose copies cannot be read is one line."""
    try:
        copies = ComponentCopies(backend, plan.timeout_s, poll_s)
        before = copies.state()
        routing = copies.routing()
    except Exception as error:
        say(evidence, f"{backend.name}: --copies: {describe(error)}: not measured")
        return
    prefix = routing.get("PrefixAwareRoutingConfig") or {}
    held, fleet_scaling = hold_scaling(copies, evidence)
    fleet = FleetCopies(
        backend=backend.name,
        endpoint=copies.endpoint,
        component=copies.component,
        routing=str(routing.get("RoutingStrategy") or DEFAULT_ROUTING),
        copies_before=before.desired,
        prefix_length=prefix.get("PrefixLength"),
        concurrency_threshold=prefix.get("ConcurrencyThreshold"),
        scaling=fleet_scaling,
    )
    evidence.file.keep_fleet(fleet)
    lengths = plan.workload.input_tokens or (None,)
    try:
        for count in counts:
            if held is not None and count > held.max_capacity:
                say(
                    evidence,
                    f"{backend.name}: {copies_text(count)} is above its scalable target's MaxCapacity "
                    f"({held.bounds()}): set by hand while its dynamic scaling is suspended, the count holds; "
                    "its policies would not keep it there",
                )
            fleet.counts += measure_count(backend, plan, count, copies, evidence, advance, wait_s, lengths)
            fleet.counts = with_scaling(fleet.counts)
            evidence.save()
    finally:
        try:
            fleet.restored = give_back(copies, before.desired, evidence)
        finally:
            fleet.scaling_restored = let_scale(copies, held, evidence)
            evidence.save()


def hold_scaling(copies: ComponentCopies, evidence: Evidence[BenchFile]) -> tuple[CopyTarget | None, str]:
    """Dynamic scaling of the component's copies suspended for the counts: the target as it was
    (None: nothing was suspended) and the one line of what was done."""
    try:
        target = read_target(copies.scaling, copies.component)
        if target is None:
            line = "no scalable target on its copies (DescribeScalableTargets): nothing to suspend"
        elif target.dynamic_suspended:
            line = f"its dynamic scaling already suspended ({target.bounds()}): left as it is"
            target = None
        else:
            register(copies.scaling, target, dynamic_held(target))
            line = f"its dynamic scaling suspended for the counts ({target.bounds()}; it was: {target.state_text()})"
    except Exception as error:
        line = (
            f"its dynamic scaling NOT suspended ({describe(error)}): its policies may move the copies mid-count; "
            "each level is checked"
        )
        say(evidence, f"{copies.component}: {line}")
        return None, line
    console.print(f"[dim]{copies.component}: {line}[/dim]")
    return target, line


def let_scale(copies: ComponentCopies, held: CopyTarget | None, evidence: Evidence[BenchFile]) -> str | None:
    """The SuspendedState the target had before the counts, put back; what was done, said."""
    if held is None:
        return None
    try:
        register(copies.scaling, held, held.suspended)
    except Exception as error:
        line = (
            f"its scaling NOT put back ({describe(error)}): dynamic scaling stays suspended until changed "
            f"({restore_command(held)})"
        )
        say(evidence, f"{copies.component}: {line}", "red")
        return line
    line = f"its scaling put back as it was ({held.state_text()})"
    console.print(f"[dim]{copies.component}: {line}[/dim]")
    return line


def measure_count(
    backend: Backend,
    plan: BenchPlan,
    count: int,
    copies: ComponentCopies,
    evidence: Evidence[BenchFile],
    advance: Advance,
    wait_s: float,
    lengths: tuple[int | None, ...],
) -> list[CopyCount]:
    """One copy count: set, waited for, searched; marked where it could not be."""

    def marked(line: str) -> list[CopyCount]:
        say(evidence, f"{backend.name}: {line}: not measured")
        return [CopyCount(count, shared_share(plan, n), input_tokens=n, marked=line) for n in lengths]

    try:
        copies.set(count)
    except Exception as error:
        return marked(f"{copies_text(count)} refused: {describe(error)}")
    try:
        late = copies.wait(count, wait_s)
    except Exception as error:
        late = f"{copies_text(count)}: DescribeInferenceComponent: {describe(error)}"
    if late:
        return marked(late)
    instances, routing_note = served_by(copies, backend.name, count, evidence)
    run = CopiesRun(backend, CopiesPlan.at(plan, count), evidence, advance, copies)
    run.run()
    return [
        CopyCount(
            count,
            shared_share(plan, n),
            input_tokens=n,
            capacity=run.found.get(n),
            marked=None if n in run.found else run.marked.get(n, "not searched"),
            instances=instances,
            routing_note=routing_note,
        )
        for n in lengths
    ]


def served_by(
    copies: ComponentCopies, backend: str, count: int, evidence: Evidence[BenchFile]
) -> tuple[int | None, str | None]:
    """The endpoint's instances at this count, and a note where PREFIX_AWARE cannot apply (one instance)."""
    try:
        instances = copies.instances()
        strategy = copies.routing().get("RoutingStrategy")
    except Exception as error:
        say(evidence, f"{backend}: {copies_text(count)}: its instances could not be read: {describe(error)}")
        return None, None
    if strategy != PREFIX_AWARE or instances != 1:
        return instances, None
    note = (
        f"{PREFIX_AWARE} with {copies_text(count)} on 1 instance: prefix-aware routing applies only when two or "
        "more instances can serve the request, so these copies were not routed by prefix"
    )
    say(evidence, f"{backend}: {note}")
    return instances, note


def with_scaling(counts: list[CopyCount]) -> list[CopyCount]:
    """Each count's efficiency against one copy's capacity at the same input length."""
    done = []
    for length in dict.fromkeys(c.input_tokens for c in counts):
        same = [c for c in counts if c.input_tokens == length]
        rows = {row.copies: row for row in scaling([FleetPoint(c.copies, c.found) for c in same if not c.marked])}
        for entry in same:
            row = rows.get(entry.copies)
            entry.efficiency, entry.ideal = (row.efficiency, row.ideal) if row else (None, None)
            done.append(entry)
    return done


def give_back(
    copies: ComponentCopies, before: int, evidence: Evidence[BenchFile], wait_s: float = COPIES_WAIT_S
) -> str:
    """The copy count the component had before the run, set again (refused while a change is still
    under way: once more when it is done, waiting at most `wait_s`); what was done, said."""
    try:
        if copies.state().desired == before:
            line = f"left at {copies_text(before)}, as it was before the run"
        else:
            later = set_once_settled(lambda: copies.set(before), lambda: copies.state().status, wait_s, copies.poll_s)
            line = f"set back to {copies_text(before)}, as it was before the run"
            if later:
                line += " (refused while a change was under way: set once it was done)"
    except Exception as error:
        line = (
            f"NOT set back to {copies_text(before)} ({describe(error)}): its copies bill until changed "
            f"(aws sagemaker update-inference-component-runtime-config --inference-component-name {copies.component} "
            f"--desired-runtime-config CopyCount={before})"
        )
        say(evidence, f"{copies.component}: {line}", "red")
        return line
    console.print(f"[dim]{copies.component}: {line}[/dim]")
    return line


def say(evidence: Evidence[BenchFile], line: str, colour: str = "yellow") -> None:
    console.print(f"[{colour}]note:[/{colour}] {line}")
    evidence.notice(line)
