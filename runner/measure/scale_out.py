"""An inference component's scaling, measured (`bench --from-zero R`, `bench --step-load C1,C2`).

From zero: each repeat takes the component to zero copies (UpdateInferenceComponentRuntimeConfig
CopyCount 0), waits until DescribeInferenceComponent says none is left, then sends one request,
resent while it is refused for no capacity (the refusal is what starts a copy: the stack's alarm
on NoCapacityInvocationFailures), and keeps its phases: refused while starting, the first look
that saw a copy in service, the first token. At the end the component gets back the copies it
had before, and one line says what that leaves billing. Before any copy is taken away the run
checks that something starts one from zero: the stack's no-capacity alarm (made only at a minimum
of 0 copies), its actions enabled (the time-to-live disables them), and the scalable target's
MinCapacity 0 (Application Auto Scaling keeps copies within its bounds). Target tracking cannot
leave zero (no copy, no per-copy figure: SageMaker developer guide, "Scale an endpoint to zero
instances"). Without them one line says which, and the copies are left as they are.

A step in load: a closed loop of C1 requests in flight for the first part, then C2 (the
issue's 4x step: 2,8 or 4,16) until the bound; every sampling step a look at the copies
(CurrentCopyCount) and the requests in flight, and, per window, the TTFT p95 of the first tokens
that came in it (runner/figures/scale_out.py reads how long the objective was missed). Nothing is
set on the component: its target tracking policy scales it (ConcurrentRequestsPerCopy).
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runner.cloud.aws import alarm_actions_enabled, boto_client
from runner.core.backends import Backend
from runner.core.console import console
from runner.core.errors import RunnerError, describe
from runner.core.evidence import Evidence
from runner.core.flags import above, at_least
from runner.core.records import RequestRecord
from runner.figures.scale_out import FromZeroRun, StepLoad, catch_up, windows
from runner.measure import ChatRequest, timed_client_for
from runner.measure.bench_file import BenchFile
from runner.measure.copy_target import instances_in_service, read_target, set_once_settled
from runner.measure.load import parse_numbers
from runner.workloads.slo import parse_goodput

# AWS's figures these defaults follow: ConcurrentRequestsPerCopy is a high-resolution metric, a
# point every 10 s (SageMaker developer guide, "Define a scaling policy"), so a sample a period;
# a copy takes minutes to come (an instance, then the container and the weights): 15 minutes
# after the step is the most the run waits for the copies to catch up.
SAMPLE_S = 10.0
STEP_SECONDS = (120.0, 900.0)
# How long the copies may take to reach zero after CopyCount 0 (the scale-in takes the copies
# off, and managed instance scaling the instances).
ZERO_BUDGET_S = 900.0


@dataclass(frozen=True)
class ScaleOutPlan:
    """What the flags asked for: repeats from zero, and the step (base, stepped) with how long
    each part runs and the sampling step."""

    from_zero: int | None
    step: tuple[int, int] | None
    before_s: float
    bound_s: float
    sample_s: float
    # The TTFT objective (--goodput ttft:MS) a window of the step is held to.
    ttft_slo_s: float | None = None
    poll_s: float = 1.0
    zero_budget_s: float = ZERO_BUDGET_S


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "scale-out of an inference component (backend kind sagemaker-components; it changes the copies)"
    )
    group.add_argument(
        "--from-zero",
        type=int,
        metavar="R",
        help="R times: the component to zero copies, one request, timed to its first token; its copies restored",
    )
    group.add_argument(
        "--step-load",
        metavar="C1,C2",
        help="C1 requests in flight, then C2 (a 4x step: 2,8): copies, in flight and TTFT p95 over time; "
        "needs --goodput ttft:MS",
    )
    group.add_argument(
        "--step-seconds",
        metavar="BEFORE,AFTER",
        help=f"seconds at C1, and the most after the step (default: {STEP_SECONDS[0]:g},{STEP_SECONDS[1]:g})",
    )
    group.add_argument(
        "--sample-seconds",
        type=float,
        default=SAMPLE_S,
        metavar="S",
        help="the timeline's step: a look at the copies and a TTFT window (default: %(default)s, the metric's period)",
    )


def wanted(args: argparse.Namespace) -> bool:
    return args.from_zero is not None or args.step_load is not None


def plan_from(args: argparse.Namespace) -> ScaleOutPlan:
    """The plan, or one line for what does not make one."""
    if args.from_zero is not None:
        at_least("--from-zero", args.from_zero, 1)
    step = None
    if args.step_load is not None:
        values = [int(v) for v in parse_numbers(args.step_load, "--step-load", integer=True)]
        if len(values) != 2 or values[0] < 1 or values[1] <= values[0]:
            raise RunnerError(f"--step-load {args.step_load}: two concurrencies C1,C2 with 1 <= C1 < C2, e.g. 2,8")
        step = (values[0], values[1])
    elif args.step_seconds is not None:
        raise RunnerError("--step-seconds times the parts of --step-load: give --step-load C1,C2")
    before, bound = STEP_SECONDS
    if args.step_seconds is not None:
        parts = parse_numbers(args.step_seconds, "--step-seconds", integer=False)
        if len(parts) != 2 or min(parts) <= 0:
            raise RunnerError(f"--step-seconds {args.step_seconds}: two durations BEFORE,AFTER above 0, e.g. 120,900")
        before, bound = parts
    above("--sample-seconds", args.sample_seconds, 0, "seconds")
    ttft = dict(parse_goodput(args.goodput).limits).get("ttft") if args.goodput else None
    if step and ttft is None:
        raise RunnerError(
            "--step-load times how long the TTFT objective is missed after the step: give --goodput ttft:MS"
        )
    return ScaleOutPlan(args.from_zero, step, before, bound, args.sample_seconds, ttft / 1000 if ttft else None)


class Copies:
    """An inference component's copies through the SageMaker API: read, set, and its endpoint's
    instances (what bills)."""

    def __init__(self, backend: Backend, timeout_s: float, client: Any | None = None) -> None:
        output = backend.output
        if output is None or not output.inference_component_name or not backend.endpoint_name:
            raise RunnerError(
                f"backend {backend.name}: --from-zero and --step-load measure an inference component's copies; "
                f"it is kind {backend.kind.value}, with no component in its stack output"
            )
        self.name = output.inference_component_name
        self.endpoint = backend.endpoint_name
        self.instance_type = output.instance_type or "its instance type"
        self.alarm = output.no_capacity_alarm
        self.region, self.timeout_s = backend.region or "us-east-1", timeout_s
        self.client = client or boto_client("sagemaker", self.region, timeout_s)

    def not_from_zero(self) -> str | None:
        """None when a request at zero copies starts one (the stack's no-capacity alarm, acting, and a
        scalable target whose MinCapacity is 0); else what is missing, in words."""
        if not self.alarm:
            return "no no-capacity alarm in its stack output (the stack makes one only at minCopies 0)"
        try:
            acts = alarm_actions_enabled(boto_client("cloudwatch", self.region, self.timeout_s), self.alarm)
            target = read_target(boto_client("application-autoscaling", self.region, self.timeout_s), self.name)
        except Exception as error:
            return f"what starts a copy from zero could not be read ({describe(error)})"
        if acts is None:
            return f"its alarm {self.alarm} is not in CloudWatch (DescribeAlarms)"
        if not acts:
            return f"its alarm {self.alarm} has its actions disabled (the time-to-live; runner.up brings it back)"
        if target is None:
            return "no scalable target on its copies (DescribeScalableTargets)"
        if target.min_capacity != 0:
            return f"its scalable target's MinCapacity is {target.min_capacity}, not 0 ({target.bounds()})"
        return None

    def read(self) -> tuple[int, int, str]:
        """(desired copies, current copies, status)."""
        found = self.client.describe_inference_component(InferenceComponentName=self.name)
        runtime = found.get("RuntimeConfig") or {}
        return (
            int(runtime.get("DesiredCopyCount") or 0),
            int(runtime.get("CurrentCopyCount") or 0),
            str(found.get("InferenceComponentStatus")),
        )

    def current(self) -> int | None:
        """CurrentCopyCount, or None when the look failed (a sample goes on without it)."""
        try:
            return self.read()[1]
        except Exception:
            return None

    def set(self, copies: int) -> None:
        self.client.update_inference_component_runtime_config(
            InferenceComponentName=self.name, DesiredRuntimeConfig={"CopyCount": copies}
        )

    def instances(self) -> int | None:
        """The endpoint's instances in service; None when unknown (unread, or no CurrentInstanceCount)."""
        try:
            return instances_in_service(self.client, self.endpoint)
        except Exception:
            return None

    def most_copies(self, output_max: int | None) -> tuple[int | None, str]:
        """The most copies its policies may scale to, and where that was read: the scalable target's
        MaxCapacity, else the stack output's max copies (the target unread)."""
        try:
            target = read_target(boto_client("application-autoscaling", self.region, self.timeout_s), self.name)
        except Exception as error:
            return output_max, f"its stack output's max copies (the scalable target unread: {describe(error)})"
        if target is None:
            return 0, "no scalable target on its copies: no policy scales them"
        return target.max_capacity, f"its scalable target's MaxCapacity ({target.bounds()})"

    def billing(self) -> str:
        """What the endpoint bills now, in words."""
        desired, current, _ = self.read()
        count = self.instances()
        running = "an unknown number of" if count is None else str(count)
        bills = "nothing billing" if count == 0 else f"billing {running} {self.instance_type} by the instance-hour"
        return f"{self.name} at {current} cop{'y' if current == 1 else 'ies'} (desired {desired}): {bills}"


def wait_for_zero(copies: Copies, plan: ScaleOutPlan, sleep: Callable[[float], None] = time.sleep) -> float:
    """Seconds until the component has no copy and is not changing; a fault when it does not get there."""
    start = time.perf_counter()
    while True:
        _, current, status = copies.read()
        waited = time.perf_counter() - start
        if current == 0 and status == "InService":
            return waited
        if waited + plan.poll_s > plan.zero_budget_s:
            raise RunnerError(
                f"inference component {copies.name}: still {current} cop{'y' if current == 1 else 'ies'} ({status}) "
                f"{waited:.0f} s after CopyCount 0 (budget {plan.zero_budget_s:g} s)"
            )
        sleep(plan.poll_s)


class FirstCopy:
    """A thread that looks at the component every `poll_s` until it sees a copy: when, from `start`."""

    def __init__(self, copies: Copies, poll_s: float) -> None:
        self.copies, self.poll_s = copies, poll_s
        self.start = time.perf_counter()
        self.seen_s: float | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.look, name="first-copy", daemon=True)
        self.thread.start()

    def look(self) -> None:
        while not self.stop.is_set():
            if (self.copies.current() or 0) >= 1:
                self.seen_s = time.perf_counter() - self.start
                return
            self.stop.wait(self.poll_s)

    def finish(self) -> float | None:
        """When a copy was seen; a look after the answer when none was seen yet."""
        if self.seen_s is None and not self.stop.is_set():
            self.thread.join(timeout=self.poll_s * 3)
        self.stop.set()
        return None if self.seen_s is None else round(self.seen_s, 6)


def from_zero(
    backend: Backend,
    copies: Copies,
    plan: ScaleOutPlan,
    request: ChatRequest,
    timeout_s: float,
    keep: Callable[[FromZeroRun], None],
) -> None:
    """`plan.from_zero` repeats (each kept as it ends); the copies it had restored at the end,
    whatever stopped the runs. A repeat that cannot reach zero or whose request fails ends the
    runs: kept with its one line."""
    client = timed_client_for(backend, timeout_s)
    desired, _, _ = copies.read()
    try:
        for repeat in range(1, (plan.from_zero or 0) + 1):
            run = one_from_zero(backend.name, repeat, copies, plan, client, request)
            keep(run)
            if not run.ok:
                break
    finally:
        restore(copies, desired, plan)


def restore(copies: Copies, desired: int, plan: ScaleOutPlan) -> None:
    """The copies the component had before the runs (refused while the copy a request started is
    still coming: once more when it is in service, within the zero budget); one line to set them
    by hand when it fails."""
    try:
        set_once_settled(lambda: copies.set(desired), lambda: copies.read()[2], plan.zero_budget_s, plan.poll_s)
    except Exception as error:
        raise RunnerError(
            f"inference component {copies.name}: could not set its {desired} cop{'y' if desired == 1 else 'ies'} "
            f"back ({describe(error)}): aws sagemaker update-inference-component-runtime-config "
            f"--inference-component-name {copies.name} --desired-runtime-config CopyCount={desired}"
        ) from None


def one_from_zero(
    backend: str, repeat: int, copies: Copies, plan: ScaleOutPlan, client: Any, request: ChatRequest
) -> FromZeroRun:
    zero_after = None
    try:
        copies.set(0)
        zero_after = round(wait_for_zero(copies, plan), 6)
    except Exception as error:
        return FromZeroRun(backend, repeat, False, zero_after, None, None, None, None, describe(error))
    instances = copies.instances()
    record = RequestRecord(backend=backend, run=repeat)
    watch = FirstCopy(copies, plan.poll_s)
    error = None
    try:
        client.chat(request, record)
    except Exception as fault:
        error = describe(fault)
    in_service = watch.finish()
    phases = record.phases or {}
    first_token = None if error else seen_ttft(record)
    return FromZeroRun(
        backend,
        repeat,
        error is None and record.ok,
        zero_after,
        instances,
        phases.get("last_refusal_s"),
        in_service,
        first_token,
        error,
    )


def seen_ttft(record: RequestRecord) -> float | None:
    """The time to first token from the first send: a request resent at zero copies waited
    `leave_zero_s` before the attempt that streamed (whose own TTFT the record keeps)."""
    if record.ttft_s is None:
        return None
    waited = (record.phases or {}).get("leave_zero_s", 0.0) if record.cold_start else 0.0
    return round(waited + record.ttft_s, 6)


@dataclass
class Sent:
    """One request of the step: when it went (from the load's start), its TTFT, and its fault."""

    at: float
    ttft_s: float | None
    error: str | None


class StepRun:
    """The closed loop: `stepped` workers, the first `base` of them sending until the step, all of
    them after it; a sampler looking at the copies and the requests in flight every `sample_s`."""

    def __init__(self, backend: Backend, copies: Copies, plan: ScaleOutPlan, request: ChatRequest, timeout_s: float):
        assert plan.step is not None
        self.backend, self.copies, self.plan, self.request = backend, copies, plan, request
        self.base, self.stepped = plan.step
        self.clients = [timed_client_for(backend, timeout_s) for _ in range(self.stepped)]
        self.lock = threading.Lock()
        self.in_flight = 0
        self.sent: list[Sent] = []
        self.sampled: list[tuple[float, int | None, int]] = []
        self.stepped_up = threading.Event()
        self.stop = threading.Event()
        self.start = 0.0

    def worker(self, index: int) -> None:
        if index >= self.base:
            self.stepped_up.wait()
        client = self.clients[index]
        run = 0
        while not self.stop.is_set():
            run += 1
            record = RequestRecord(backend=self.backend.name, run=run)
            with self.lock:
                self.in_flight += 1
            at = time.perf_counter() - self.start
            error = None
            try:
                client.chat(self.request, record)
            except Exception as fault:
                error = describe(fault)
            with self.lock:
                self.in_flight -= 1
                self.sent.append(Sent(at, seen_ttft(record) if error is None else None, error))

    def sample(self) -> None:
        step = self.plan.sample_s
        number = 1
        while not self.stop.wait(max(0.0, self.start + number * step - time.perf_counter())):
            copies = self.copies.current()
            with self.lock:
                in_flight = self.in_flight
            self.sampled.append((number * step, copies, in_flight))
            number += 1

    def run(self) -> StepLoad:
        self.start = time.perf_counter()
        threads = [threading.Thread(target=self.worker, args=(i,), daemon=True) for i in range(self.stepped)]
        threads.append(threading.Thread(target=self.sample, daemon=True))
        for thread in threads:
            thread.start()
        try:
            self.stop.wait(self.plan.before_s)
            self.stepped_up.set()
            self.stop.wait(self.plan.bound_s)
        finally:
            self.stop.set()
            self.stepped_up.set()
            for thread in threads:
                thread.join(timeout=self.plan.sample_s + 5)
        return self.result()

    def result(self) -> StepLoad:
        with self.lock:
            sent, sampled = list(self.sent), list(self.sampled)
        first_tokens = [(s.at + s.ttft_s, s.ttft_s) for s in sent if s.ttft_s is not None]
        errors = [s.error for s in sent if s.error]
        return StepLoad(
            backend=self.backend.name,
            base=self.base,
            stepped=self.stepped,
            step_at_s=self.plan.before_s,
            bound_s=self.plan.bound_s,
            sample_s=self.plan.sample_s,
            ttft_slo_s=self.plan.ttft_slo_s or 0.0,
            samples=windows(first_tokens, sampled, self.plan.sample_s),
            requests=len(sent),
            failed=len(errors),
            first_error=errors[0] if errors else None,
        )


def say(evidence: Evidence[BenchFile], line: str, style: str = "yellow") -> None:
    console.print(f"[{style}]note:[/{style}] {line}")
    evidence.notice(line)


def measure_backend(
    backend: Backend,
    copies: Copies,
    plan: ScaleOutPlan,
    request: ChatRequest,
    timeout_s: float,
    evidence: Evidence[BenchFile],
) -> None:
    """The runs the plan asks for on one component, each kept as it ends; then one line of what
    the endpoint bills. A fault is its run's line, never the end of the others' evidence."""

    def keep(run: FromZeroRun) -> None:
        evidence.file.keep_from_zero(run)
        evidence.save()
        if run.error:
            say(evidence, f"{backend.name} from zero, repeat {run.repeat}: {run.error}", "red")

    try:
        missing = copies.not_from_zero() if plan.from_zero else None
        if missing:
            say(
                evidence,
                f"{backend.name}: --from-zero skipped: {missing}: nothing would start a copy from zero; "
                "its copies left as they are",
                "red",
            )
        elif plan.from_zero:
            from_zero(backend, copies, plan, request, timeout_s, keep)
        if plan.step:
            step_load(backend, copies, plan, request, timeout_s, evidence)
    except Exception as error:
        say(evidence, f"{backend.name}: {describe(error)}", "red")
    finally:
        try:
            say(evidence, f"{backend.name}: {copies.billing()}")
        except Exception as error:
            say(evidence, f"{backend.name}: what it bills could not be read: {describe(error)}", "red")


def step_load(
    backend: Backend,
    copies: Copies,
    plan: ScaleOutPlan,
    request: ChatRequest,
    timeout_s: float,
    evidence: Evidence[BenchFile],
) -> None:
    most, read = copies.most_copies(backend.output.max_copies if backend.output else None)
    now = copies.current()
    if most is not None and most <= max(1, now or 0):
        say(
            evidence,
            f"{backend.name}: --step-load: its copies cannot scale out ({read}; {now} in service): the step "
            "measures what they do with the load as they are",
        )
    stepper = StepRun(backend, copies, plan, request, timeout_s)
    try:
        step = stepper.run()
    except KeyboardInterrupt:
        evidence.file.keep_step_load(stepper.result())  # what was sampled before Ctrl-C
        raise
    evidence.file.keep_step_load(step)
    evidence.save()
    caught = catch_up(step)
    if not caught.caught_up:
        say(
            evidence,
            f"{backend.name}: the step {step.base} -> {step.stepped} never caught up within {step.bound_s:g} s: "
            f"TTFT p95 still over {step.ttft_slo_s * 1000:g} ms at the end "
            f"({caught.copies_before} -> {caught.copies_after} copies)",
            "red",
        )


def measured(file: BenchFile) -> bool:
    """Whether anything was measured: a first token from zero, or one during the step."""
    return any(run.ok for run in file.from_zero or []) or any(
        sample.first_tokens for step in file.step_load or [] for sample in step.samples
    )
