"""An endpoint of inference components, through the emulator (tests/aws_emulator/inference_components.py
and sagemaker_runtime.py), made with boto3 as its stack would make it: the API and what AWS refuses,
Application Auto Scaling's copy dimension, the timed client against a known-rate server behind the
component (time to first token and decode as the server's own settings make them), a request that
finds zero copies and waits for one (timed apart as the cold start), the health check and `up`'s
watch, and the sweep that finds the component and removes it before its endpoint."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

from catalog.backends import OPEN_MODEL, BackendKind, get_backend
from catalog.contract import APP_TAG, BackendOutput
from runner import bench
from runner.agent.models import strands_model
from runner.cloud.bring_up.watch.common import FAILED, READY, WatchOptions
from runner.cloud.bring_up.watch.endpoint import ComponentWatch
from runner.cloud.cleanup.leftovers import RegionScan
from runner.cloud.cleanup.removal import delete_ours, delete_stack
from runner.cloud.cleanup.survey_teardown import Created, tear_down
from runner.core.backends import from_output
from runner.core.errors import TimedOut, describe
from runner.core.evidence import load
from runner.core.records import RequestRecord
from runner.measure import ChatRequest
from runner.measure.clients import timed_client_for
from runner.measure.health import wait_healthy
from runner.measure.sagemaker import InferenceComponentStreamClient
from tests.aws_emulator import emulated_aws
from tests.aws_emulator.account import ACCOUNT
from tests.aws_emulator.component_scaling import arm_scale_from_zero, disarm_scale_from_zero
from tests.aws_emulator.inference_components import components
from tests.aws_emulator.sagemaker_runtime import hold_copies_at_zero
from tests.aws_emulator.server import Emulator
from tests.runner.fake_openai import FakeOpenAI, Step
from tests.runner.known_server import known_server
from tests.runner.test_sagemaker_usage import VLLM_BODY, collect

REGION = "us-east-1"
ROLE = f"arn:aws:iam::{'1' * 12}:role/x"
ENDPOINT = "inference-sagemaker-components"
COMPONENT = f"{ENDPOINT}-model"
TAGS = [{"Key": APP_TAG[0], "Value": APP_TAG[1]}]


@contextlib.contextmanager
def emulated_with_a_model(scratch: Path) -> Iterator[Emulator]:
    """The emulator holding the SageMaker model whose copies the components' tests serve."""
    with emulated_aws(scratch) as emulator:
        aws("sagemaker").create_model(
            ModelName="inference-model", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "x"}
        )
        yield emulator


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    with emulated_with_a_model(tmp_path_factory.mktemp("emulator")) as emulator:
        yield emulator


def aws(service: str):
    return boto3.client(service, region_name=REGION)


def variant(instance_type: str = "ml.g6.xlarge", max_instances: int = 1, **extra) -> dict:
    """The variant of an endpoint of inference components: an instance type, no model."""
    return {
        "VariantName": "AllTraffic",
        "InstanceType": instance_type,
        "InitialInstanceCount": 1,
        "ManagedInstanceScaling": {"Status": "ENABLED", "MinInstanceCount": 0, "MaxInstanceCount": max_instances},
        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
    } | extra


def endpoint(name: str, **variant_settings) -> None:
    sagemaker = aws("sagemaker")
    sagemaker.create_endpoint_config(
        EndpointConfigName=name, ExecutionRoleArn=ROLE, ProductionVariants=[variant(**variant_settings)]
    )
    sagemaker.create_endpoint(EndpointName=name, EndpointConfigName=name, Tags=TAGS)


def component(name: str, endpoint_name: str, copies: int = 1, accelerators: float = 1):
    return aws("sagemaker").create_inference_component(
        InferenceComponentName=name,
        EndpointName=endpoint_name,
        VariantName="AllTraffic",
        Specification={
            "ModelName": "inference-model",
            "ComputeResourceRequirements": {
                "NumberOfAcceleratorDevicesRequired": accelerators,
                "MinMemoryRequiredInMb": 1024,
            },
        },
        RuntimeConfig={"CopyCount": copies},
        Tags=TAGS,
    )


def refused(call, *args, **kwargs) -> ClientError:
    with pytest.raises(ClientError) as caught:
        call(*args, **kwargs)
    return caught.value


def instances(name: str) -> int:
    (summary,) = aws("sagemaker").describe_endpoint(EndpointName=name)["ProductionVariants"]
    return summary["CurrentInstanceCount"]


def output(**fields) -> BackendOutput:
    base = {
        "name": "sagemaker-components", "kind": "sagemaker-components", "region": REGION, "model_id": OPEN_MODEL,
        "port": 8080, "health_path": "/ping", "endpoint_name": ENDPOINT, "inference_component_name": COMPONENT,
        "instance_type": "ml.g6.xlarge", "lane": "open", "precision": "bf16", "min_instances": 0, "max_instances": 1,
        "copies": 1, "min_copies": 0, "max_copies": 1, "contract": 2,
    }  # fmt: skip
    return BackendOutput.parse("BackendSagemakerComponents", base | fields, stack="InferenceSageMakerStack")


@pytest.fixture
def deployed(emulator):
    """The catalog's endpoint of inference components, as its stack leaves it: one copy, one instance,
    and what takes it out of zero copies (its scalable target, step policy and alarm)."""
    endpoint(ENDPOINT)
    component(COMPONENT, ENDPOINT)
    arm_scale_from_zero(REGION, COMPONENT)
    yield emulator
    disarm_scale_from_zero(REGION, COMPONENT)
    sagemaker = aws("sagemaker")
    for found in sagemaker.list_inference_components()["InferenceComponents"]:
        sagemaker.delete_inference_component(InferenceComponentName=found["InferenceComponentName"])
    for found in sagemaker.list_endpoints()["Endpoints"]:
        sagemaker.delete_endpoint(EndpointName=found["EndpointName"])
    for found in sagemaker.list_endpoint_configs()["EndpointConfigs"]:
        sagemaker.delete_endpoint_config(EndpointConfigName=found["EndpointConfigName"])
    emulator.model_servers.clear()


# --- the API, and what AWS refuses ------------------------------------------------------------


def test_components_are_made_described_listed_scaled_and_deleted_with_the_apis_shapes(emulator):
    endpoint("inference-four-gpus", instance_type="ml.g6.12xlarge", max_instances=2)
    made = component("four", "inference-four-gpus", copies=5)
    sagemaker = aws("sagemaker")
    described = sagemaker.describe_inference_component(InferenceComponentName="four")
    assert described["InferenceComponentArn"] == made["InferenceComponentArn"]
    assert (described["InferenceComponentStatus"], described["EndpointName"]) == ("InService", "inference-four-gpus")
    assert described["RuntimeConfig"] == {"DesiredCopyCount": 5, "CurrentCopyCount": 5}
    assert described["Specification"]["ComputeResourceRequirements"]["NumberOfAcceleratorDevicesRequired"] == 1
    # Five one-GPU copies need two four-GPU instances; managed instance scaling holds two.
    assert instances("inference-four-gpus") == 2
    listed = sagemaker.list_inference_components(EndpointNameEquals="inference-four-gpus")["InferenceComponents"]
    assert [c["InferenceComponentName"] for c in listed] == ["four"]
    assert sagemaker.list_tags(ResourceArn=made["InferenceComponentArn"])["Tags"] == TAGS
    sagemaker.update_inference_component_runtime_config(
        InferenceComponentName="four", DesiredRuntimeConfig={"CopyCount": 0}
    )
    assert instances("inference-four-gpus") == 0  # no copy: no instance (MinInstanceCount 0)
    sagemaker.update_inference_component(InferenceComponentName="four", RuntimeConfig={"CopyCount": 3})
    assert (
        sagemaker.describe_inference_component(InferenceComponentName="four")["RuntimeConfig"]["CurrentCopyCount"] == 3
    )
    assert instances("inference-four-gpus") == 1
    # The endpoint goes only once its components have gone.
    error = refused(sagemaker.delete_endpoint, EndpointName="inference-four-gpus")
    assert error.response["Error"]["Code"] == "ValidationException" and "delete them first" in str(error)
    sagemaker.delete_inference_component(InferenceComponentName="four")
    error = refused(sagemaker.describe_inference_component, InferenceComponentName="four")
    assert error.response["Error"]["Code"] == "ValidationException" and "Could not find inference component" in str(
        error
    )
    sagemaker.delete_endpoint(EndpointName="inference-four-gpus")


def test_what_aws_refuses_is_refused_with_its_error_shape(emulator):
    sagemaker = aws("sagemaker")
    # A routing value AWS does not list: the constraint error of an enum.
    error = refused(
        sagemaker.create_endpoint_config,
        EndpointConfigName="bad-routing",
        ProductionVariants=[variant(RoutingConfig={"RoutingStrategy": "ROUND_ROBIN"})],
    )
    assert error.response["Error"]["Code"] == "ValidationException"
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "Value 'ROUND_ROBIN' at 'productionVariants.1.member.routingConfig.routingStrategy'" in str(error)
    assert "Member must satisfy enum value set: [LEAST_OUTSTANDING_REQUESTS, RANDOM, PREFIX_AWARE, KV_AWARE]" in str(
        error
    )
    # Prefix-aware routing without its settings.
    error = refused(
        sagemaker.create_endpoint_config,
        EndpointConfigName="bare-prefix",
        ProductionVariants=[variant(RoutingConfig={"RoutingStrategy": "PREFIX_AWARE"})],
    )
    assert "PREFIX_AWARE requires PrefixAwareRoutingConfig" in str(error)
    # A variant with a model hosts no components.
    sagemaker.create_endpoint_config(
        EndpointConfigName="with-model", ProductionVariants=[variant(ModelName="inference-model")]
    )
    sagemaker.create_endpoint(EndpointName="with-model", EndpointConfigName="with-model")
    error = refused(component, "on-a-model", "with-model")
    assert error.response["Error"]["Code"] == "ValidationException" and "it hosts model inference-model" in str(error)
    # Copies past the instances' accelerators: two one-GPU copies on at most one one-GPU instance,
    # and a copy asking for more accelerators than the type has.
    endpoint("one-gpu")
    error = refused(component, "two-copies", "one-gpu", copies=2)
    assert "CopyCount 2 needs 2 accelerators; variant AllTraffic holds 1 copy" in str(error)
    error = refused(component, "two-gpus", "one-gpu", accelerators=2)
    assert "NumberOfAcceleratorDevicesRequired 2 exceeds the 1 accelerator(s) of ml.g6.xlarge" in str(error)
    component("fits", "one-gpu")
    error = refused(
        sagemaker.update_inference_component_runtime_config,
        InferenceComponentName="fits",
        DesiredRuntimeConfig={"CopyCount": 2},
    )
    assert "holds 1 copy" in str(error)
    # Nothing refused was made.
    names = [c["InferenceComponentName"] for c in sagemaker.list_inference_components()["InferenceComponents"]]
    assert "two-copies" not in names and "two-gpus" not in names and "on-a-model" not in names


def test_application_auto_scaling_takes_the_copy_count_of_a_component(emulator):
    scaling = aws("application-autoscaling")
    scaling.register_scalable_target(
        ServiceNamespace="sagemaker",
        ResourceId="inference-component/scaled",
        ScalableDimension="sagemaker:inference-component:DesiredCopyCount",
        MinCapacity=0,
        MaxCapacity=4,
    )
    (target,) = [
        t for t in scaling.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]
        if t["ResourceId"] == "inference-component/scaled"
    ]  # fmt: skip
    assert (target["MinCapacity"], target["MaxCapacity"]) == (0, 4)


# --- serving it -------------------------------------------------------------------------------


def test_a_request_that_names_no_component_is_refused_as_the_runtime_refuses_it(deployed):
    error = refused(
        aws("sagemaker-runtime").invoke_endpoint_with_response_stream,
        EndpointName=ENDPOINT, ContentType="application/json", Body=b"{}",
    )  # fmt: skip
    assert error.response["Error"]["Code"] == "ValidationError"
    assert str(error).endswith(
        "Inference Component Name header is required for endpoints to which you plan to deploy inference "
        "components. Please include Inference Component Name header or consider using SageMaker models."
    )


def timed(client: InferenceComponentStreamClient, max_tokens: int) -> RequestRecord:
    record = RequestRecord(backend="sagemaker-components", run=1)
    return client.chat(ChatRequest("Say something.", max_tokens=max_tokens), record)


def test_the_client_streams_through_the_component_at_the_servers_own_speed(deployed):
    ttft, rate, tokens = 0.3, 40.0, 12
    with known_server(ttft=ttft, rate=rate, tokens=tokens, tokenize=False) as server:
        deployed.model_servers[COMPONENT] = server.url
        backend = from_output(output(), {})
        client = timed_client_for(backend, 30)
        assert isinstance(client, InferenceComponentStreamClient) and client.component_name == COMPONENT
        record = timed(client, tokens)
        truth = server.stats()
    assert record.ok and record.cold_start is False and record.phases is None
    assert (record.output_tokens, record.token_source) == (tokens, "server")
    # The first token comes after the server's own first token (its ttft), and the rest at its rate:
    # the emulator only adds its relay on top.
    (server_first,) = truth["first_token_s"]
    assert ttft <= server_first <= record.ttft_s
    decode = (tokens - 1) / rate
    assert record.e2e_s - record.ttft_s >= decode * 0.9
    assert record.e2e_s - record.ttft_s <= decode + (record.ttft_s - ttft) + 0.5


def test_a_request_at_zero_copies_waits_for_one_and_is_timed_as_a_cold_start(deployed):
    with known_server(ttft=0.05, rate=100.0, tokens=4, tokenize=False) as server:
        deployed.model_servers[COMPONENT] = server.url
        hold_copies_at_zero(deployed, COMPONENT, 0.6)
        assert instances(ENDPOINT) == 0
        client = InferenceComponentStreamClient(ENDPOINT, COMPONENT, OPEN_MODEL, REGION)
        client.first_backoff_s = 0.05
        cold = timed(client, 4)
        refusals = len(deployed.no_capacity_refusals)
        warm = timed(client, 4)
    # Refused while no copy ran (each refusal what NoCapacityInvocationFailures counts), then served.
    assert cold.ok and cold.cold_start is True and refusals >= 2
    assert set(deployed.no_capacity_refusals) == {COMPONENT}
    assert cold.phases["leave_zero_s"] >= 0.6
    # Its own times are the attempt that streamed, apart from the wait.
    assert cold.ttft_s >= 0.05 and cold.e2e_s < cold.phases["leave_zero_s"] + 5
    assert warm.ok and warm.cold_start is False and len(deployed.no_capacity_refusals) == refusals
    assert instances(ENDPOINT) == 1


def test_the_cold_start_is_bracketed_within_the_clients_longest_wait_between_tries(deployed):
    # The copy answers 3.2 s after the first refusal; the client's own backoff (1 s, then 2 s at
    # most) tries at 0, 1, 3 and 5 s: the copy came up after the last refusal and before the try
    # that streamed, and that try came at most one wait after it.
    comes_up_s, longest_wait_s = 3.2, 2.0
    with known_server(ttft=0.05, rate=100.0, tokens=4, tokenize=False) as server:
        deployed.model_servers[COMPONENT] = server.url
        hold_copies_at_zero(deployed, COMPONENT, comes_up_s)
        cold = timed(InferenceComponentStreamClient(ENDPOINT, COMPONENT, OPEN_MODEL, REGION), 4)
    assert cold.ok and cold.cold_start is True
    last_refusal, leave_zero = cold.phases["last_refusal_s"], cold.phases["leave_zero_s"]
    assert last_refusal < comes_up_s <= leave_zero
    assert leave_zero - comes_up_s <= longest_wait_s + 0.5


def test_a_copy_that_never_comes_is_one_line_within_the_budget(deployed):
    hold_copies_at_zero(deployed, COMPONENT, 60.0)
    client = InferenceComponentStreamClient(ENDPOINT, COMPONENT, OPEN_MODEL, REGION, leave_zero_budget_s=0.5)
    client.first_backoff_s = 0.05
    record = RequestRecord(backend="sagemaker-components", run=1)
    with pytest.raises(TimedOut) as caught:
        client.chat(ChatRequest("Hi.", max_tokens=4), record)
    line = describe(caught.value)
    assert line.startswith(f"inference component {COMPONENT}: no copy after ") and "budget 0.5 s" in line
    assert "\n" not in line and record.cold_start is True


@pytest.mark.parametrize("missing", ["no alarm", "alarm actions off", "scale-out suspended"])
def test_a_component_without_what_starts_a_copy_stays_at_zero(deployed, missing):
    """At zero copies only the alarm and its step policy start a copy (target tracking has no
    datapoint there): without an armed alarm, or with the target's scale-out suspended, the
    runtime refuses every request and no copy comes."""
    if missing == "no alarm":
        disarm_scale_from_zero(REGION, COMPONENT)
        arm_scale_from_zero(REGION, COMPONENT)
        aws("cloudwatch").delete_alarms(AlarmNames=[f"{COMPONENT}-no-capacity"])
    elif missing == "alarm actions off":
        aws("cloudwatch").disable_alarm_actions(AlarmNames=[f"{COMPONENT}-no-capacity"])
    else:
        aws("application-autoscaling").register_scalable_target(
            ServiceNamespace="sagemaker", ResourceId=f"inference-component/{COMPONENT}",
            ScalableDimension="sagemaker:inference-component:DesiredCopyCount", MinCapacity=0, MaxCapacity=4,
            SuspendedState={"DynamicScalingOutSuspended": True},
        )  # fmt: skip
    hold_copies_at_zero(deployed, COMPONENT, 0.1)
    client = InferenceComponentStreamClient(ENDPOINT, COMPONENT, OPEN_MODEL, REGION, leave_zero_budget_s=0.6)
    client.first_backoff_s = 0.05
    with pytest.raises(TimedOut):
        client.chat(ChatRequest("Hi.", max_tokens=4), RequestRecord(backend="sagemaker-components", run=1))
    described = aws("sagemaker").describe_inference_component(InferenceComponentName=COMPONENT)
    assert described["RuntimeConfig"]["CurrentCopyCount"] == 0


def test_bench_keeps_the_cold_start_apart_and_measures_a_level_on_the_copy(deployed, tmp_path):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"InferenceSageMakerStack": {"BackendSagemakerComponents": json.dumps(
        output().to_json())}}))  # fmt: skip
    with known_server(ttft=0.05, rate=200.0, tokens=8, tokenize=False) as server:
        deployed.model_servers[COMPONENT] = server.url
        hold_copies_at_zero(deployed, COMPONENT, 0.4)
        results = tmp_path / "bench"
        code = bench.run(
            ["--aws", "--backends", "sagemaker-components", "--outputs-file", str(outputs), "--results-dir",
             str(results), "--repeats", "2", "--max-tokens", "8"]
        )  # fmt: skip
    assert code == 0
    (path,) = results.glob("*/bench-*.json")
    evidence = load(path)
    (cold,) = evidence["warm_up"]
    assert cold["ok"] and cold["cold_start"] is True and cold["phases"]["leave_zero_s"] >= 0.4
    records = evidence["records"]
    assert len(records) == 2 and all(r["ok"] and r["cold_start"] is False for r in records)
    assert all(r["output_tokens"] == 8 and r["ttft_s"] >= 0.05 for r in records)


def test_the_agent_runs_on_the_component_through_strands_sagemaker_model(deployed):
    # Strands' SageMakerAIModel sends InferenceComponentName when its config names one: without it
    # the runtime would refuse the request (above).
    with FakeOpenAI([Step(kind="body", text=json.dumps(VLLM_BODY))]) as fake:
        deployed.model_servers[COMPONENT] = fake.url
        events = collect(strands_model(from_output(output(), {}), max_tokens=64))
        (sent,) = fake.requests
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e)
    assert text == "Paris" and sent["stream"] is False and sent["max_tokens"] == 64


def test_health_waits_for_the_endpoint_and_its_component_and_says_when_it_sits_at_zero(deployed):
    backend = from_output(output(), {})
    health = wait_healthy(backend, 5, poll_s=0.1)
    assert health.healthy and health.detail == f"InService, {COMPONENT} InService with 1 copies"
    hold_copies_at_zero(deployed, COMPONENT, 0.1)
    health = wait_healthy(backend, 5, poll_s=0.1)
    assert health.healthy and health.detail == f"InService at zero copies of {COMPONENT}; the first request starts one"
    gone = from_output(output(inference_component_name="inference-no-such-model"), {})
    health = wait_healthy(gone, 5, poll_s=0.1)
    assert not health.healthy and "Could not find inference component" in health.detail


def watch(record: dict, since: datetime | None = None, deploying: bool = True, **fields) -> ComponentWatch:
    clients = {"sagemaker": aws("sagemaker"), "cloudwatch": aws("cloudwatch")}
    options = WatchOptions(poll_s=0.1, start_builds=deploying)
    return ComponentWatch(output(**fields), record, clients.__getitem__, options, lambda line: None, since)


def test_up_watches_the_endpoint_and_its_component_to_ready_and_prices_its_instances(deployed):
    record: dict = {}
    assert watch(record).step() == READY
    assert record["readiness"] == "endpoint InService, component InService" and record["copies"] == 1
    assert "held_at_zero" not in record
    (row,) = watch({}).billing()
    assert row["what"].startswith(f"endpoint {ENDPOINT} (ml.g6.xlarge") and row["usd_per_hour"] > 0
    # At zero copies (scaled in, or the time-to-live): ready, and nothing bills by the hour.
    hold_copies_at_zero(deployed, COMPONENT, 0.1)
    record = {}
    assert watch(record).step() == READY and record["held_at_zero"] == "zero copies: the first request starts one"
    (row,) = watch({}).billing()
    assert row["usd_per_hour"] == 0.0
    # A component that is not there fails the watch at once, naming it.
    record = {}
    assert watch(record, inference_component_name="inference-no-such-model").step() == FAILED
    assert record["reason"] == "inference component inference-no-such-model does not exist"


def emulated_component(emulator, name: str = COMPONENT):
    """The emulator's own record of a component (what AWS does on its own, set by a test)."""
    operations = emulator.inference_components
    return operations.get(operations.backend(ACCOUNT, REGION), name)


def dated(emulator, *, endpoint_made: timedelta, component_made: timedelta, component_modified: timedelta) -> None:
    """The endpoint and its component as made and last modified that long ago (times SageMaker keeps)."""
    from moto.core.utils import utcnow

    now = utcnow()
    operations = emulator.inference_components
    operations.backend(ACCOUNT, REGION).endpoints[ENDPOINT].creation_time = now - endpoint_made
    component = emulated_component(emulator)
    component.created, component.modified = now - component_made, now - component_modified


def test_a_component_this_up_made_is_ready_no_earlier_than_the_look_that_saw_it_in_service(deployed):
    # The deploy began 15 min ago, made the endpoint 12 min ago and the component 8 min ago; the
    # component's LastModifiedTime never moved (its creation), so only the look says when it was ready.
    dated(deployed, endpoint_made=timedelta(minutes=12), component_made=timedelta(minutes=8),
          component_modified=timedelta(minutes=8))  # fmt: skip
    record: dict = {}
    looked = datetime.now(UTC).replace(microsecond=0)
    assert watch(record, since=looked - timedelta(minutes=15)).step() == READY
    assert datetime.fromisoformat(record["ready_at"]) >= looked
    assert record["launch_to_ready_min"] == pytest.approx(12.0, abs=0.1)
    assert "launch_to_ready_unknown" not in record


def test_a_scaled_component_an_earlier_up_made_has_no_launch_to_ready(deployed):
    # Made three hours ago; scale-in (or the time-to-live) moved its LastModifiedTime a minute ago.
    dated(deployed, endpoint_made=timedelta(hours=3, minutes=4), component_made=timedelta(hours=3),
          component_modified=timedelta(minutes=1))  # fmt: skip
    record: dict = {}
    assert watch(record, since=datetime.now(UTC) - timedelta(seconds=30)).step() == READY
    assert record["launch_to_ready_min"] is None
    assert record["launch_to_ready_unknown"].startswith("the component was made before this up (at ")


def test_a_component_this_up_made_at_zero_copies_has_no_launch_to_ready(deployed):
    dated(deployed, endpoint_made=timedelta(minutes=5), component_made=timedelta(minutes=2),
          component_modified=timedelta(minutes=2))  # fmt: skip
    hold_copies_at_zero(deployed, COMPONENT, 0.1)
    record: dict = {}
    assert watch(record, since=datetime.now(UTC) - timedelta(minutes=6)).step() == READY
    assert record["launch_to_ready_min"] is None
    assert record["launch_to_ready_unknown"] == "zero copies: no copy was started to time"


def test_up_arms_again_the_alarm_the_time_to_live_disarmed_and_a_look_without_a_deploy_leaves_it(deployed):
    # The stack's alarm (moto's CloudFormation makes no alarm: made here as the stack makes it),
    # its actions disabled at the expiry with the copies at zero.
    alarm = f"{COMPONENT}-no-capacity"
    cloudwatch = aws("cloudwatch")
    cloudwatch.put_metric_alarm(
        AlarmName=alarm, Namespace="AWS/SageMaker", MetricName="NoCapacityInvocationFailures",
        Dimensions=[{"Name": "InferenceComponentName", "Value": COMPONENT}], Statistic="Sum", Period=60,
        EvaluationPeriods=1, Threshold=1, ComparisonOperator="GreaterThanThreshold",
    )  # fmt: skip
    hold_copies_at_zero(deployed, COMPONENT, 0.1)
    cloudwatch.disable_alarm_actions(AlarmNames=[alarm])

    def armed() -> bool:
        (described,) = cloudwatch.describe_alarms(AlarmNames=[alarm])["MetricAlarms"]
        return described["ActionsEnabled"]

    try:
        record: dict = {}
        assert watch(record, deploying=False, no_capacity_alarm=alarm).step() == READY
        assert not armed() and record["held_at_zero"].endswith(f"its alarm {alarm} is disarmed (the time-to-live)")
        # Nothing is measured that no request could start: one line, not a wait of the whole budget.
        health = wait_healthy(from_output(output(no_capacity_alarm=alarm), {}), 5, poll_s=0.1)
        assert not health.healthy and health.detail == (
            f"{COMPONENT} at zero copies with its alarm {alarm} disarmed (the time-to-live): no request "
            "starts a copy; runner.up brings it back"
        )
        record = {}
        assert watch(record, no_capacity_alarm=alarm).step() == READY
        assert armed() and record["held_at_zero"].endswith(f"its alarm {alarm} armed again")
        assert wait_healthy(from_output(output(no_capacity_alarm=alarm), {}), 5, poll_s=0.1).healthy
    finally:
        cloudwatch.delete_alarms(AlarmNames=[alarm])


def test_an_alarm_that_cannot_be_read_leaves_the_component_ready_and_says_so(deployed):
    class Refusing:
        def describe_alarms(self, **_):
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no cloudwatch:DescribeAlarms"}}, "x")

    clients = {"sagemaker": aws("sagemaker"), "cloudwatch": Refusing()}
    hold_copies_at_zero(deployed, COMPONENT, 0.1)
    record: dict = {}
    alarm = f"{COMPONENT}-no-capacity"
    looked = ComponentWatch(output(no_capacity_alarm=alarm), record, clients.__getitem__, WatchOptions(), print)
    assert looked.step() == READY
    assert record["held_at_zero"].endswith(
        f"its alarm {alarm} not read or armed: AccessDenied: no cloudwatch:DescribeAlarms"
    )


def test_a_component_that_fails_to_start_is_one_line_naming_where_its_container_logged(deployed):
    logs = f"/aws/sagemaker/InferenceComponents/{COMPONENT}"
    component = emulated_component(deployed)
    component.status, component.failure_reason = "Failed", "The container failed to pass its ping health check."
    record: dict = {}
    assert watch(record, log_group=logs).step() == FAILED
    assert record["reason"] == (
        f"inference component {COMPONENT}: The container failed to pass its ping health check. "
        f"(its container's logs: {logs})"
    )


def test_the_sweep_finds_the_component_and_removes_it_before_its_endpoint(deployed):
    deployed.component_deleting_s = 0.3  # Deleting a while, as AWS's is: the endpoint must wait
    try:
        scan = RegionScan(REGION)
        scan.sagemaker()
        scan.inference_components()
        found = {(f.kind, f.id): f for f in scan.found}
        listed = found[("inference-component", COMPONENT)]
        assert listed.ours and not listed.billing and listed.detail.startswith(f"on endpoint {ENDPOINT}")
        assert found[("endpoint", ENDPOINT)].billing
        actions = delete_ours(scan.found, 10)
    finally:
        deployed.component_deleting_s = 0.0
    outcomes = [(a["kind"], a["id"], a["outcome"]) for a in actions if a["kind"] in ("inference-component", "endpoint")]
    assert outcomes == [("inference-component", COMPONENT, "deleted"), ("endpoint", ENDPOINT, "deleted")]
    assert aws("sagemaker").list_inference_components()["InferenceComponents"] == []


@pytest.fixture
def busy_for(deployed):
    """A component is Creating, or Updating after a change of its copies, this many seconds."""
    yield lambda seconds: setattr(deployed, "component_settle_s", seconds)
    deployed.component_settle_s = 0.0
    for component in components(deployed.inference_components.backend(ACCOUNT, REGION)).values():
        component.busy_until = 0.0  # whatever was under way has ended


def test_a_component_is_not_deleted_while_it_is_scaled_as_sagemaker_refuses(deployed, busy_for):
    busy_for(30.0)
    sagemaker = aws("sagemaker")
    sagemaker.update_inference_component_runtime_config(
        InferenceComponentName=COMPONENT, DesiredRuntimeConfig={"CopyCount": 0}
    )
    described = sagemaker.describe_inference_component(InferenceComponentName=COMPONENT)
    assert described["InferenceComponentStatus"] == "Updating"
    error = refused(sagemaker.delete_inference_component, InferenceComponentName=COMPONENT)
    assert error.response["Error"]["Code"] == "ValidationException"
    assert "while it is in state UPDATE_RC_IN_PROGRESS" in str(error)


def test_the_sweep_waits_out_a_component_being_scaled_and_leaves_nothing_billing(deployed, busy_for):
    # A sweep during a scaling of the copies (scale-in, or out of zero): SageMaker refuses to delete
    # the component until it ends, and the endpoint cannot go before the component.
    busy_for(1.0)
    aws("sagemaker").update_inference_component_runtime_config(
        InferenceComponentName=COMPONENT, DesiredRuntimeConfig={"CopyCount": 0}
    )
    scan = RegionScan(REGION)
    scan.sagemaker()
    scan.inference_components()
    actions = delete_ours(scan.found, 10)
    outcomes = [(a["kind"], a["id"], a["outcome"]) for a in actions if a["kind"] in ("inference-component", "endpoint")]
    assert outcomes == [("inference-component", COMPONENT, "deleted"), ("endpoint", ENDPOINT, "deleted")]
    assert aws("sagemaker").list_endpoints()["Endpoints"] == []


def sweep_deletes(stack: str) -> None:
    delete_stack(aws("cloudformation"), stack, 10, sagemaker=aws("sagemaker"))


def survey_tears_down(stack: str) -> None:
    actions = tear_down(Created({stack: [REGION]}), 10)
    assert actions[-1] == {"region": REGION, "kind": "stack", "id": stack, "outcome": "deleted"}, actions


@pytest.mark.parametrize("remove", [sweep_deletes, survey_tears_down])
def test_a_stack_is_deleted_once_its_component_is_no_longer_being_created(deployed, busy_for, remove):
    # CloudFormation's delete of a component SageMaker refuses (the emulator's handler refuses as
    # the API does): the stack's components are waited out of their creation first.
    busy_for(1.0)
    template = {
        "Resources": {
            "Stacked": {
                "Type": "AWS::SageMaker::InferenceComponent",
                "Properties": {
                    "InferenceComponentName": "inference-stacked-model",
                    "EndpointName": ENDPOINT,
                    "VariantName": "AllTraffic",
                    "Specification": {
                        "ModelName": "inference-model",
                        "ComputeResourceRequirements": {"NumberOfAcceleratorDevicesRequired": 1},
                    },
                    "RuntimeConfig": {"CopyCount": 1},
                },
            }
        }
    }
    cloudformation = aws("cloudformation")
    stack_id = cloudformation.create_stack(StackName="InferenceStacked", TemplateBody=json.dumps(template))["StackId"]
    assert (
        aws("sagemaker").describe_inference_component(InferenceComponentName="inference-stacked-model")[
            "InferenceComponentStatus"
        ]
        == "Creating"
    )
    remove("InferenceStacked")
    (gone,) = cloudformation.describe_stacks(StackName=stack_id)["Stacks"]
    assert gone["StackStatus"] == "DELETE_COMPLETE"
    names = [c["InferenceComponentName"] for c in aws("sagemaker").list_inference_components()["InferenceComponents"]]
    assert "inference-stacked-model" not in names


def test_a_component_of_a_catalog_entry_is_the_kind_its_row_serves():
    spec = get_backend("sagemaker-components")
    assert spec.kind is BackendKind.SAGEMAKER_COMPONENTS and spec.opt_in
    assert (spec.copies, spec.min_copies, spec.max_copies, spec.min_instances) == (1, 0, 1, 0)
