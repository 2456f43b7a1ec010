"""`bench --copies`: a fleet's capacity at each copy count of an inference component, against the
emulator's component (tests/aws_emulator/inference_components.py) served by local known-rate
servers behind SageMaker's routing (tests/aws_emulator/component_fleet.py): the copies set with
UpdateInferenceComponentRuntimeConfig and waited for, the capacity each count carries checked
against the capacity worked out here from the servers' speeds and the objective, the scaling
efficiency that follows, the endpoint's routing and the shared share in the evidence; a backend
that is not a component skipped, a count AWS refuses, a scale-out that never comes and a copy
that dies mid-level each one line and the count marked; the copy count given back at the end."""

from __future__ import annotations

import json
import signal
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from catalog.backends import OPEN_MODEL
from catalog.contract import APP_TAG, BackendOutput
from runner import advise, bench
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence, strict_json
from runner.figures.capacity import CapacityFound
from runner.figures.fleet import CopyCount
from runner.measure.bench_file import BenchFile
from runner.measure.copy_target import look_delays, set_once_settled
from runner.measure.fleet_copies import ComponentCopies, give_back, served_by, shared_share, with_scaling
from runner.measure.workload_run import BenchPlan
from runner.render.bench import fleet_table
from runner.workloads import Workload
from runner.workloads.slo import Slo
from tests.aws_emulator.account import ACCOUNT
from tests.aws_emulator.component_fleet import fleet_behind
from tests.aws_emulator.component_scaling import TargetTracking, tracking
from tests.aws_emulator.inference_components import COPY_DIMENSION, components
from tests.runner.known_server import known_server
from tests.runner.test_inference_components import REGION, ROLE, aws, emulated_with_a_model

ENDPOINT = "inference-sagemaker-components"
COMPONENT = f"{ENDPOINT}-model"
TAGS = [{"Key": APP_TAG[0], "Value": APP_TAG[1]}]
# Each copy: a known-rate server that runs SLOTS requests at once (the rest wait for a slot), each
# taking TTFT + (TOKENS - 1) / RATE; the objective sits between one service time and two, so a
# request that waited for a slot misses it and one that did not meets it. Near two service times:
# a request that waited takes two at least however loaded the machine, while one that did not has
# 0.8 of one (344 ms) for the router and a busy machine's scheduling: a full suite on two cores
# added 260 ms to a request through the emulator and the router, all in the test's process.
SLOTS = 2
TTFT_S, RATE, TOKENS = 0.4, 100.0, 4
SERVICE_S = TTFT_S + (TOKENS - 1) / RATE
E2EL_MS = round(1.8 * SERVICE_S * 1000)
USD_PER_HOUR = 7.0  # the endpoint's instance, priced as given
INPUT_TOKENS = 32  # short: the servers' speed sets the figures, not the prompt


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    with emulated_with_a_model(tmp_path_factory.mktemp("emulator")) as emulator:
        yield emulator


@pytest.fixture
def deployed(emulator):
    """An endpoint of inference components on one ml.g6.12xlarge (4 GPUs), one copy of one GPU."""
    sagemaker = aws("sagemaker")
    sagemaker.create_endpoint_config(
        EndpointConfigName=ENDPOINT,
        ExecutionRoleArn=ROLE,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "InstanceType": "ml.g6.12xlarge",
                "InitialInstanceCount": 1,
                "ManagedInstanceScaling": {"Status": "ENABLED", "MinInstanceCount": 0, "MaxInstanceCount": 1},
                "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
            }
        ],
    )
    sagemaker.create_endpoint(EndpointName=ENDPOINT, EndpointConfigName=ENDPOINT, Tags=TAGS)
    sagemaker.create_inference_component(
        InferenceComponentName=COMPONENT,
        EndpointName=ENDPOINT,
        VariantName="AllTraffic",
        Specification={
            "ModelName": "inference-model",
            "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024},
        },
        RuntimeConfig={"CopyCount": 1},
        Tags=TAGS,
    )
    yield emulator
    sagemaker.delete_inference_component(InferenceComponentName=COMPONENT)
    sagemaker.delete_endpoint(EndpointName=ENDPOINT)
    sagemaker.delete_endpoint_config(EndpointConfigName=ENDPOINT)


def outputs_file(tmp_path: Path) -> Path:
    output = {
        "name": "sagemaker-components", "kind": "sagemaker-components", "region": REGION, "model_id": OPEN_MODEL,
        "port": 8080, "health_path": "/ping", "endpoint_name": ENDPOINT, "inference_component_name": COMPONENT,
        "instance_type": "ml.g6.12xlarge", "lane": "open", "precision": "bf16", "min_instances": 0,
        "max_instances": 1, "copies": 1, "min_copies": 0, "max_copies": 4, "contract": 2,
    }  # fmt: skip
    parsed = BackendOutput.parse("BackendSagemakerComponents", output, stack="InferenceSageMakerStack")
    path = tmp_path / "outputs.json"
    path.write_text(
        json.dumps({"InferenceSageMakerStack": {"BackendSagemakerComponents": json.dumps(parsed.to_json())}})
    )
    return path


def copies_bench(tmp_path: Path, copies: str, *extra: str) -> tuple[int, BenchFile]:
    results = tmp_path / "results"
    argv = ["--aws", "--backends", "sagemaker-components", "--outputs-file", str(outputs_file(tmp_path)),
            "--results-dir", str(results), "--copies", copies, "--copies-wait", "2", "--find-capacity",
            "--goodput", f"e2el:{E2EL_MS}", "--output-tokens", str(TOKENS), "--requests", "12", "--concurrency",
            str(SLOTS), "--timeout", "10", "--no-server-metrics", *extra]  # fmt: skip
    code = bench.run(argv)
    (path,) = results.glob("*/bench-*.json")
    return code, BenchFile.from_json(json.loads(path.read_text()))


def servers(stack: ExitStack, count: int) -> list:
    return [
        stack.enter_context(known_server(ttft=TTFT_S, rate=RATE, tokens=TOKENS, max_running=SLOTS, tokenize=False))
        for _ in range(count)
    ]


def copy_count() -> int:
    return aws("sagemaker").describe_inference_component(InferenceComponentName=COMPONENT)["RuntimeConfig"][
        "CurrentCopyCount"
    ]


@pytest.mark.emulator
def test_capacity_at_each_copy_count_is_the_servers_and_scales_as_they_do(deployed, tmp_path):
    with ExitStack() as stack:
        running = servers(stack, 4)
        fleet = stack.enter_context(fleet_behind(deployed, COMPONENT, [s.url for s in running]))
        code, evidence = copies_bench(tmp_path, "1,2,4", "--input-tokens", str(INPUT_TOKENS))
        routed = fleet.fleet.state()["routed"]
    assert code == 0
    (measured,) = evidence.fleet or []
    assert (measured.routing, measured.copies_before, measured.component) == (
        "LEAST_OUTSTANDING_REQUESTS", 1, COMPONENT
    )  # fmt: skip
    assert [c.copies for c in measured.counts] == [1, 2, 4] and not any(c.marked for c in measured.counts)
    # N copies of SLOTS at once each: N x SLOTS requests in flight meet the objective, one more waits.
    for count in measured.counts:
        assert count.found is not None and abs(count.found - count.copies * SLOTS) <= 1, count
        assert count.instances == 1 and count.routing_note is None  # one ml.g6.12xlarge holds four
        assert count.shared_share == 0.0
    one = measured.counts[0].found
    for count in measured.counts:
        assert count.ideal == count.copies * one
        assert count.efficiency == round(count.found / (count.copies * one), 3)
    # The four servers served the four-copy levels; one copy's levels went to the first alone.
    assert all(routed)
    # The searches are the fleet's, not the backend's one capacity.
    assert not evidence.capacity
    assert {r.level.label.split(",")[0] for r in evidence.records if r.level} == {"1 copy", "2 copies", "4 copies"}
    assert copy_count() == 1 and "set back to 1 copy" in (measured.restored or "")
    rows = [row for row in fleet_table(evidence).columns[0].cells]
    assert rows == ["sagemaker-components"] * 3
    # advise --load reads the counts from this file: a load past one copy's good requests a second
    # and within two copies' takes two copies (never one copy's capacity times two).
    goodput = {c.copies: c.capacity.at_capacity.goodput_rps for c in measured.counts}
    load = (goodput[1] + goodput[2]) / 2
    (path,) = (tmp_path / "results").glob("*/bench-*.json")
    out = tmp_path / "advice"
    argv = ["--evidence", str(path), "--offline", "--results-dir", str(out), "--load", f"{load:.3f}",
            "--goodput", f"e2el:{E2EL_MS}", "--input-tokens", str(INPUT_TOKENS), "--output-tokens", str(TOKENS),
            "--allow-unmeasured-sources", "--price", f"sagemaker-components={USD_PER_HOUR}"]  # fmt: skip
    assert advise.run(argv) == 0
    (saved,) = out.glob("*/advise-*.json")
    (row,) = [r for r in json.loads(saved.read_text())["fleet"] if r["option"] == "sagemaker-components"]
    # One ml.g6.12xlarge (4 GPUs) holds both one-GPU copies: one instance's hour.
    assert (row["count"], row["unit"], row["instances"], row["meets"]) == (2, "copies", 1, True), row
    assert row["usd_per_hour"] == USD_PER_HOUR


def round_trips(path: Path) -> None:
    """The evidence reads back typed and is written again as it was."""
    raw = path.read_text()
    assert strict_json(BenchFile.from_json(json.loads(raw)).to_json()) + "\n" == raw


def test_copies_past_the_instances_accelerators_are_refused_in_one_line_and_the_count_marked(
    deployed, tmp_path, capsys
):
    code, evidence = copies_bench(tmp_path, "8")
    assert code == 1  # nothing measured
    (measured,) = evidence.fleet or []
    (count,) = measured.counts
    # 8 one-GPU copies on at most one ml.g6.12xlarge of 4 GPUs: AWS refuses the update.
    assert count.copies == 8 and count.capacity is None and count.efficiency is None
    assert count.marked.startswith("8 copies refused: ValidationException: CopyCount 8 needs 8 accelerators")
    assert not evidence.records
    lines = [line for line in capsys.readouterr().err.splitlines() if "8 copies refused" in line]
    assert len(lines) == 1 and lines[0].endswith("not measured")
    assert copy_count() == 1 and measured.restored == "left at 1 copy, as it was before the run"


def test_a_scale_out_that_never_comes_is_one_line_the_count_marked_and_the_copies_given_back(deployed, tmp_path):
    deployed.component_settle_s = 30.0  # every change of copies stays Updating past the wait
    try:
        code, evidence = copies_bench(tmp_path, "2", "--copies-wait", "0.3")
    finally:
        deployed.component_settle_s = 0
        for component in components_of(deployed):
            component.busy = ""  # what 30 s would have done, so the fixture can delete it
    assert code == 1
    (measured,) = evidence.fleet or []
    (count,) = measured.counts
    assert count.marked == (
        "2 copies not in service after 0.3 s (DescribeInferenceComponent: CurrentCopyCount 2, DesiredCopyCount 2, "
        "Updating)"
    )
    assert any(n.endswith("Updating): not measured") for n in evidence.notices)
    # Set back to the one copy it had, not left at two.
    assert (
        aws("sagemaker").describe_inference_component(InferenceComponentName=COMPONENT)["RuntimeConfig"][
            "DesiredCopyCount"
        ]
        == 1
        and measured.restored == "set back to 1 copy, as it was before the run"
    )


def components_of(emulator) -> list:
    from moto.sagemaker.models import sagemaker_backends

    return list(components(sagemaker_backends[ACCOUNT][REGION]).values())


def test_a_backend_that_is_not_a_component_is_skipped_in_one_line_and_the_component_measured(deployed, tmp_path):
    with ExitStack() as stack:
        (copy,) = servers(stack, 1)
        stack.enter_context(fleet_behind(deployed, COMPONENT, [copy.url]))
        other = stack.enter_context(known_server(ttft=0.01, rate=1000.0, tokens=TOKENS))
        code, evidence = copies_bench(tmp_path, "1", "--endpoint", other.endpoint, "--capacity-levels", "1",
                                      "--backends", "sagemaker-components,known")  # fmt: skip
    assert code == 0
    (skipped,) = [n for n in evidence.notices if n.startswith("known: skipped")]
    assert skipped == (
        "known: skipped: --copies sets the copies of an inference component (sagemaker-components); known is "
        "openai: measure it without --copies"
    )
    assert {r.backend for r in evidence.records} == {"sagemaker-components"}
    (measured,) = evidence.fleet or []
    assert [c.copies for c in measured.counts] == [1] and measured.counts[0].found == SLOTS
    round_trips(next((tmp_path / "results").glob("*/bench-*.json")))
    table = fleet_table(evidence)
    assert table is not None
    (capacity,) = table.columns[5].cells
    (efficiency,) = table.columns[7].cells
    assert (capacity, efficiency) == (f"{SLOTS} at a time", "1.00")


def test_a_copy_that_dies_mid_level_marks_the_level_not_the_fleets_capacity(deployed, tmp_path):
    with ExitStack() as stack:
        first, second = (ExitStack(), ExitStack())
        stack.enter_context(first)
        copies = [first.enter_context(known_server(ttft=0.05, rate=RATE, tokens=TOKENS, tokenize=False)),
                  second.enter_context(known_server(ttft=0.05, rate=RATE, tokens=TOKENS, tokenize=False))]  # fmt: skip
        fleet = stack.enter_context(fleet_behind(deployed, COMPONENT, [c.url for c in copies]))
        served = lambda: sum(len(c.server.total_s) for c in copies)  # noqa: E731
        warm_ups = 2  # the backend's, then one more for the second copy

        def stop_the_second_copy() -> None:
            # After a few of the first level's requests were answered: the level is under way.
            while served() < warm_ups + 3:
                time.sleep(0.005)
            second.close()

        killer = threading.Thread(target=stop_the_second_copy, daemon=True)
        killer.start()
        code, evidence = copies_bench(tmp_path, "2")
        killer.join(5)
        failed = fleet.fleet.state()["failed"]
    (measured,) = evidence.fleet or []
    (count,) = measured.counts
    assert count.capacity is None and count.efficiency is None
    level = f"2 copies, {SLOTS} at a time"
    bad = [r for r in evidence.records if r.label == level and not r.ok]
    assert bad and failed[0] == 0 and failed[1] >= len(bad)
    assert count.marked.startswith(f"{level}: {len(bad)} of 12 requests failed with 2 copies set in service")
    assert count.marked.endswith("2 of 2 in service: not the fleet's capacity")
    assert sum(1 for n in evidence.notices if n.endswith("not the fleet's capacity")) == 1
    # The search stopped at that level: no other level of the count was run.
    assert {r.label for r in evidence.records} == {level}
    assert code == 0  # the requests that were answered are measured, and kept


@pytest.mark.parametrize(
    ("argv", "refused"),
    [
        (["--copies", "1,2"], "--copies runs the capacity search at each copy count: give --find-capacity"),
        (["--copies", "1,1", "--find-capacity", "--goodput", "e2el:500"], "--copies '1,1': each count once"),
        (["--copies", "0,2", "--find-capacity", "--goodput", "e2el:500"], "every value must be above 0"),
        (["--copies", "2", "--find-capacity", "--goodput", "e2el:500", "--copies-wait", "0"], "--copies-wait"),
    ],
)
def test_copies_asked_wrongly_is_one_line_before_anything_is_measured(argv, refused, tmp_path):
    with pytest.raises(RunnerError) as caught:
        bench.run(["--no-aws", "--results-dir", str(tmp_path), *argv])
    assert refused in str(caught.value) and "\n" not in str(caught.value)
    assert not list(tmp_path.iterdir())


class RefusingClient:
    """SageMaker refusing every change of copies (the component gone, or the caller's role)."""

    def describe_inference_component(self, InferenceComponentName: str) -> dict:
        return {
            "RuntimeConfig": {"DesiredCopyCount": 4, "CurrentCopyCount": 4},
            "InferenceComponentStatus": "InService",
        }

    def update_inference_component_runtime_config(self, **kwargs) -> None:
        from botocore.exceptions import ClientError

        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}, "Update")


def test_copies_that_cannot_be_given_back_are_said_with_what_they_bill_and_how_to_set_them(tmp_path, capsys):
    copies = ComponentCopies.__new__(ComponentCopies)
    copies.endpoint, copies.component, copies.poll_s, copies.client = ENDPOINT, COMPONENT, 0, RefusingClient()
    evidence = Evidence(BenchFile, {}, tmp_path)
    line = give_back(copies, 1, evidence)
    assert line == (
        "NOT set back to 1 copy (AccessDeniedException: not allowed): its copies bill until changed (aws sagemaker "
        f"update-inference-component-runtime-config --inference-component-name {COMPONENT} "
        "--desired-runtime-config CopyCount=1)"
    )
    assert evidence.file.notices == [f"{COMPONENT}: {line}"]


def test_the_components_copies_are_the_routers_and_a_count_past_its_servers_is_refused(deployed):
    sagemaker = aws("sagemaker")
    urls = ["http://127.0.0.1:9", "http://127.0.0.1:10"]  # never reached: no request is sent
    with fleet_behind(deployed, COMPONENT, urls) as fleet:
        assert (fleet.fleet.serving, fleet.fleet.config.strategy) == (1, "LEAST_OUTSTANDING_REQUESTS")
        assert deployed.model_servers[COMPONENT] == fleet.url
        sagemaker.update_inference_component_runtime_config(
            InferenceComponentName=COMPONENT, DesiredRuntimeConfig={"CopyCount": 2}
        )
        assert fleet.fleet.serving == 2
        with pytest.raises(ClientError, match=f"the emulator's fleet behind {COMPONENT} has 2 server"):
            sagemaker.update_inference_component_runtime_config(
                InferenceComponentName=COMPONENT, DesiredRuntimeConfig={"CopyCount": 3}
            )
        assert fleet.fleet.serving == 2 and copy_count() == 2
    sagemaker.update_inference_component_runtime_config(
        InferenceComponentName=COMPONENT, DesiredRuntimeConfig={"CopyCount": 1}
    )
    assert COMPONENT not in deployed.model_servers


def test_a_count_past_the_quota_that_aws_fails_once_it_tries_is_its_failure_reason_in_one_line(deployed, tmp_path):
    (component,) = components_of(deployed)
    quota = (
        "ResourceLimitExceeded: The account-level service limit 'ml.g6.12xlarge for endpoint usage' is 1 "
        "Instances, with current utilization of 1 Instances and a request delta of 1 Instances."
    )

    def as_aws_fails_it(name: str, copies: int) -> None:
        # The update is taken, then the component fails for want of an instance (the quota's words
        # are SageMaker's ResourceLimitExceeded message for an endpoint's instances).
        component.status, component.failure_reason = ("Failed", quota) if copies == 2 else ("InService", None)

    deployed.inference_components.copy_hooks["quota"] = as_aws_fails_it
    try:
        code, evidence = copies_bench(tmp_path, "2")
    finally:
        deployed.inference_components.copy_hooks.pop("quota")
    assert code == 1
    (measured,) = evidence.fleet or []
    (count,) = measured.counts
    assert count.marked == f"2 copies: the component Failed: {quota}"
    assert copy_count() == 1 and component.status == "InService"


def test_each_length_has_its_shared_share_and_a_marked_count_no_efficiency():
    plan = BenchPlan(workload=Workload(input_tokens=(1000, 4000), prefix_tokens=900), slo=Slo(()))
    assert (shared_share(plan, 1000), shared_share(plan, 4000), shared_share(plan, None)) == (0.9, 0.225, 0.0)

    def found(value: float) -> CapacityFound:
        return CapacityFound("sagemaker-components", 1000, None, "concurrency", 0.9, value, "done", ())

    counts = with_scaling([
        CopyCount(1, 0.9, input_tokens=1000, capacity=found(3)),
        CopyCount(2, 0.9, input_tokens=1000, marked="2 copies refused: ..."),
        CopyCount(4, 0.9, input_tokens=1000, capacity=found(10)),
    ])  # fmt: skip
    assert [(c.efficiency, c.ideal) for c in counts] == [(1.0, 3), (None, None), (round(10 / 12, 3), 12)]


def scalable_target(maximum: int) -> dict:
    """The stack's scalable target on the component's copies (inference_constructs/endpoint_scaling.py)."""
    scaling = aws("application-autoscaling")
    scaling.register_scalable_target(
        ServiceNamespace="sagemaker",
        ResourceId=f"inference-component/{COMPONENT}",
        ScalableDimension=COPY_DIMENSION,
        MinCapacity=0,
        MaxCapacity=maximum,
    )
    return described_target()


def deregister_target() -> None:
    aws("application-autoscaling").deregister_scalable_target(
        ServiceNamespace="sagemaker", ResourceId=f"inference-component/{COMPONENT}", ScalableDimension=COPY_DIMENSION
    )


def described_target() -> dict:
    (target,) = aws("application-autoscaling").describe_scalable_targets(
        ServiceNamespace="sagemaker", ResourceIds=[f"inference-component/{COMPONENT}"]
    )["ScalableTargets"]
    return target


# Target tracking that would add a copy at any level of the search: each level keeps at least one
# request per copy in flight, over the target of 0.5 a copy (tests/aws_emulator/component_scaling.py).
EAGER = {"target": 0.5, "min_copies": 1, "max_copies": 3, "copy_start_s": 0.05, "time_scale": 0.02}


@pytest.mark.emulator
def test_target_tracking_is_suspended_for_the_counts_so_the_copies_hold_and_its_state_is_put_back(deployed, tmp_path):
    """Application Auto Scaling owns DesiredCopyCount: its policies act whatever was set by hand
    unless the target's dynamic scaling is suspended (API reference, SuspendedState). 2 copies is
    above this target's MaxCapacity of 1: said, and measured, held while suspended."""
    before = scalable_target(maximum=1)
    try:
        with ExitStack() as stack:
            running = servers(stack, 3)
            fleet = stack.enter_context(fleet_behind(deployed, COMPONENT, [s.url for s in running]))
            policy = TargetTracking(COMPONENT, **EAGER)
            simulation = stack.enter_context(tracking(deployed, fleet.fleet, policy))
            code, evidence = copies_bench(tmp_path, "2")
        after = described_target()
    finally:
        deregister_target()
    assert code == 0
    # The policy would have added copies during the counts and did not while suspended; once the bench
    # puts its scaling back, it may act on the load it saw, as Application Auto Scaling would.
    assert simulation.held_back
    assert [a for a in simulation.activities if a.decided <= simulation.held_back[-1]] == []
    (measured,) = evidence.fleet or []
    (count,) = measured.counts
    assert count.marked is None and count.found is not None and abs(count.found - 2 * SLOTS) <= 1
    assert measured.scaling == (
        f"its dynamic scaling suspended for the counts (inference-component/{COMPONENT} DesiredCopyCount 0-1; "
        "it was: nothing suspended)"
    )
    assert measured.scaling_restored == "its scaling put back as it was (nothing suspended)"
    assert not any((before.get("SuspendedState") or {}).values())
    assert after["SuspendedState"] == {
        "DynamicScalingInSuspended": False, "DynamicScalingOutSuspended": False, "ScheduledScalingSuspended": False
    }  # fmt: skip
    assert (after["MinCapacity"], after["MaxCapacity"]) == (0, 1)
    (above,) = [n for n in evidence.notices if "above its scalable target's MaxCapacity" in n]
    assert above.startswith("sagemaker-components: 2 copies is above its scalable target's MaxCapacity")


@pytest.mark.emulator
def test_copies_a_policy_moved_during_a_level_mark_the_count(deployed, tmp_path):
    """No scalable target to suspend (none registered): the simulation's policy acts, and the
    look after the level sees DesiredCopyCount moved."""
    with ExitStack() as stack:
        running = servers(stack, 3)
        fleet = stack.enter_context(fleet_behind(deployed, COMPONENT, [s.url for s in running]))
        simulation = stack.enter_context(tracking(deployed, fleet.fleet, TargetTracking(COMPONENT, **EAGER)))
        code, evidence = copies_bench(tmp_path, "1")
    assert code == 0 and simulation.activities  # the level's requests were answered, and kept
    (measured,) = evidence.fleet or []
    (count,) = measured.counts
    assert measured.scaling == "no scalable target on its copies (DescribeScalableTargets): nothing to suspend"
    assert count.capacity is None and count.efficiency is None
    assert count.marked.startswith(f"1 copy, {SLOTS} at a time: the copies moved during the level")
    assert count.marked.endswith("not 1): not the fleet's capacity at this count")


def test_a_prefix_aware_count_on_one_instance_is_noted_with_the_instances_it_ran_on(emulator, tmp_path):
    """botocore's sagemaker model, RoutingStrategy: "The endpoint applies prefix-aware routing only
    when two or more instances can serve the request": two copies packed on one ml.g6.12xlarge are
    not routed by prefix, whatever the variant says."""
    sagemaker, name = aws("sagemaker"), "prefix-aware"
    routing = {"RoutingStrategy": "PREFIX_AWARE",
               "PrefixAwareRoutingConfig": {"PrefixLength": 1024, "ConcurrencyThreshold": 4}}  # fmt: skip
    sagemaker.create_endpoint_config(
        EndpointConfigName=name,
        ExecutionRoleArn=ROLE,
        ProductionVariants=[{"VariantName": "AllTraffic", "InstanceType": "ml.g6.12xlarge", "InitialInstanceCount": 1,
                             "ManagedInstanceScaling": {"Status": "ENABLED", "MinInstanceCount": 0,
                                                        "MaxInstanceCount": 2}, "RoutingConfig": routing}],
    )  # fmt: skip
    sagemaker.create_endpoint(EndpointName=name, EndpointConfigName=name, Tags=TAGS)
    sagemaker.create_inference_component(
        InferenceComponentName=name, EndpointName=name, VariantName="AllTraffic", RuntimeConfig={"CopyCount": 2},
        Specification={"ModelName": "inference-model", "ComputeResourceRequirements": {
            "NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024}},
    )  # fmt: skip
    copies = ComponentCopies.__new__(ComponentCopies)
    copies.endpoint, copies.component, copies.poll_s, copies.client = name, name, 0, sagemaker
    evidence = Evidence(BenchFile, {}, tmp_path)
    try:
        instances, note = served_by(copies, "sagemaker-components", 2, evidence)
        # Five one-GPU copies need a second instance of four GPUs: routed by prefix, no note.
        copies.set(5)
        five = served_by(copies, "sagemaker-components", 5, evidence)
    finally:
        sagemaker.delete_inference_component(InferenceComponentName=name)
        sagemaker.delete_endpoint(EndpointName=name)
        sagemaker.delete_endpoint_config(EndpointConfigName=name)
    assert instances == 1 and note == (
        "PREFIX_AWARE with 2 copies on 1 instance: prefix-aware routing applies only when two or more instances can "
        "serve the request, so these copies were not routed by prefix"
    )
    assert evidence.file.notices == [f"sagemaker-components: {note}"]
    assert five == (2, None)


def test_copies_refused_while_a_change_is_under_way_are_set_back_once_it_is_done(deployed, tmp_path):
    """A count that timed out may leave its change under way; the emulator then refuses another
    (tests/aws_emulator/inference_components.py: AWS's answer there is UNCONFIRMED). The copies are
    set back once the component is InService, not left billing."""
    deployed.component_settle_s = 0.6
    deployed.inference_components.refuse_updates_while_busy = True
    try:
        code, evidence = copies_bench(tmp_path, "2", "--copies-wait", "0.2")
        described = aws("sagemaker").describe_inference_component(InferenceComponentName=COMPONENT)
    finally:
        deployed.component_settle_s = 0
        deployed.inference_components.refuse_updates_while_busy = False
        for component in components_of(deployed):
            component.busy = ""  # settled, so the fixture can delete it
    assert code == 1
    (measured,) = evidence.fleet or []
    assert measured.counts[0].marked.startswith("2 copies not in service after 0.2 s")
    assert measured.restored == (
        "set back to 1 copy, as it was before the run (refused while a change was under way: set once it was done)"
    )
    assert described["RuntimeConfig"]["DesiredCopyCount"] == 1


@pytest.mark.emulator
def test_ctrl_c_mid_count_still_gives_back_the_copies_and_the_targets_suspended_state(deployed, tmp_path):
    """The SuspendedState is put back in the run's `finally`: a suspended target stays suspended
    until changed (Application Auto Scaling API reference, SuspendedState), so an interrupted run
    must not leave the component's scaling off."""
    scalable_target(maximum=4)
    try:
        with ExitStack() as stack:
            running = servers(stack, 2)
            stack.enter_context(fleet_behind(deployed, COMPONENT, [s.url for s in running]))
            served = lambda: sum(len(s.server.total_s) for s in running)  # noqa: E731

            def ctrl_c_once_the_count_is_measured() -> None:
                deadline = time.monotonic() + 30
                while served() < 4 and time.monotonic() < deadline:
                    time.sleep(0.005)
                signal.raise_signal(signal.SIGINT)

            threading.Thread(target=ctrl_c_once_the_count_is_measured, daemon=True).start()
            with pytest.raises(KeyboardInterrupt):
                copies_bench(tmp_path, "2")
        after = described_target()
    finally:
        deregister_target()
    assert not any(after["SuspendedState"].values())
    assert copy_count() == 1
    (path,) = (tmp_path / "results").glob("*/bench-*.json")
    (measured,) = BenchFile.from_json(json.loads(path.read_text())).fleet or []
    assert measured.scaling_restored == "its scaling put back as it was (nothing suspended)"


def test_a_change_is_looked_at_from_half_a_second_doubling_up_to_the_poll():
    """A count that settles at once is seen at the first look, not a whole poll later; a long
    change is still looked at no more often than the poll once the looks have doubled up to it."""
    delays = look_delays(5.0)
    assert [next(delays) for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    assert next(look_delays(0.2)) == 0.2  # a poll shorter than the first look is the poll
    # Refused while Updating, busy for three looks, then set once it is InService.
    statuses, slept, tries = iter(["Updating", "Updating", "Updating", "InService"]), [], []

    def set_copies() -> None:
        tries.append(len(slept))
        if len(tries) == 1:
            raise ClientError({"Error": {"Code": "ValidationException", "Message": "busy"}}, "Update")

    assert set_once_settled(set_copies, lambda: next(statuses), 900.0, 5.0, sleep=slept.append) is True
    assert slept == [0.5, 1.0, 2.0] and tries == [0, 3]
