"""The endpoint of inference components from an empty account to a measurement and back to
nothing, through the app's real CDK deploy: `runner.up` (the stack's model, its endpoint config
without a model, the endpoint and the component, watched until the component is InService),
`runner.bench` at one level with the cold start of a request that found zero copies kept apart,
`runner.cost` pricing it by the instance-hour while an instance runs, the time-to-live taking the
copies (and so the instances) to zero, and `runner.sweep --delete`, after which nothing of ours
is left. The answers come from the known-rate server behind the component, through the
emulator's streamed InvokeEndpointWithResponseStream (tests/aws_emulator/sagemaker_runtime.py)."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from catalog.backends import get_backend
from runner import bench, cost, sweep
from runner.up import UpOptions, up
from tests.aws_emulator.component_scaling import arm_scale_from_zero
from tests.aws_emulator.sagemaker_runtime import hold_copies_at_zero
from tests.emulator.cdk_cycle import bootstrap
from tests.emulator.observe import leftovers
from tests.runner.known_server import known_server

pytestmark = pytest.mark.emulator
REGION = "us-east-2"
ENDPOINT = "inference-sagemaker-components"
COMPONENT = f"{ENDPOINT}-model"
CONTEXT = {"lane": "open", "backends": "sagemaker-components"}


def newest(results: Path, command: str) -> tuple[Path, dict]:
    (path,) = sorted(results.glob(f"*/{command}-*.json"))[-1:]
    return path, json.loads(path.read_text())


def test_the_components_endpoint_from_an_empty_account_to_a_measurement_and_back_to_nothing(emulator, tmp_path):
    emulator.reset()
    bootstrap(emulator.scratch)
    results = tmp_path / "results"
    options = UpOptions(
        stacks=["InferenceSageMakerStack"], context=CONTEXT, poll_s=0.2, method="direct", results_dir=results
    )
    evidence = up(options)
    (record,) = evidence.data["records"]
    assert (record["backend"], record["outcome"]) == ("sagemaker-components", "ready"), json.dumps(record)
    assert record["readiness"] == "endpoint InService, component InService" and record["copies"] == 1
    sagemaker = boto3.client("sagemaker", region_name=REGION)
    component = sagemaker.describe_inference_component(InferenceComponentName=COMPONENT)
    assert component["EndpointName"] == ENDPOINT and component["RuntimeConfig"]["CurrentCopyCount"] == 1
    requirements = component["Specification"]["ComputeResourceRequirements"]
    spec = get_backend("sagemaker-components")
    assert (requirements["NumberOfAcceleratorDevicesRequired"], requirements["MinMemoryRequiredInMb"]) == (
        spec.accelerators_per_copy,
        spec.copy_memory_mb,
    )
    (variant,) = sagemaker.describe_endpoint_config(
        EndpointConfigName=sagemaker.describe_endpoint(EndpointName=ENDPOINT)["EndpointConfigName"]
    )["ProductionVariants"]
    assert "ModelName" not in variant and variant["ManagedInstanceScaling"]["MinInstanceCount"] == 0
    (billing,) = evidence.data["billing"]
    assert billing["what"].startswith(f"endpoint {ENDPOINT} (ml.g6.xlarge") and billing["usd_per_hour"] > 0

    with known_server(ttft=0.05, rate=200.0, tokens=16, tokenize=False) as server:
        emulator.model_servers[COMPONENT] = server.url
        # Scaled in since the deploy: the bench's first request finds no copy and waits for one,
        # which the stack's alarm and step policy start. moto's CloudFormation makes neither them
        # nor the scalable target: they are made here as the stack declares them.
        arm_scale_from_zero(REGION, COMPONENT)
        hold_copies_at_zero(emulator, COMPONENT, 0.4)
        assert bench.run(["--repeats", "2", "--backends", "sagemaker-components", "--results-dir", str(results)]) == 0
        served = len(server.stats()["total_s"])
    bench_file, measured = newest(results, "bench")
    assert measured["emulated"]
    (cold,) = measured["warm_up"]
    assert cold["ok"] and cold["cold_start"] and cold["phases"]["leave_zero_s"] >= 0.4
    records = measured["records"]
    assert [(r["backend"], r["ok"], r["cold_start"]) for r in records] == [("sagemaker-components", True, False)] * 2
    assert served == 3 and emulator.no_capacity_refusals and set(emulator.no_capacity_refusals) == {COMPONENT}

    assert cost.run([str(bench_file), "--offline", "--results-dir", str(results)]) == 0
    _, priced = newest(results, "cost")
    rows = [r for r in priced["records"] if r["backend"] == "sagemaker-components"]
    assert {r.get("billing") for r in rows} == {"instance-hours-while-running"}
    assert any(r["level"] == "leaving zero" for r in rows), rows

    # The time-to-live: the copies to zero, and with them the instances; the component stays, and
    # the alarm that would start a copy on the next request acts no more. (moto's CloudFormation
    # makes no alarm: it is made here from the stack's own template, as CloudFormation makes it.)
    alarm = make_alarm_as_the_stack_declares(REGION, "InferenceSageMakerStack")
    fired = emulator.fire_schedules(REGION, "InferenceSageMakerStack")
    ids = {props["Target"]["Arn"]["Fn::Join"][1][-1].rpartition(":")[2]: i for i, props in _schedules(REGION).items()}
    assert sorted(fired) == sorted([
        f"{ids['updateInferenceComponentRuntimeConfig']}: {COMPONENT} to 0 copies",
        f"{ids['disableAlarmActions']}: actions of {alarm} disabled",
    ])  # fmt: skip
    described = sagemaker.describe_inference_component(InferenceComponentName=COMPONENT)
    assert described["RuntimeConfig"]["CurrentCopyCount"] == 0
    assert sagemaker.describe_endpoint(EndpointName=ENDPOINT)["ProductionVariants"][0]["CurrentInstanceCount"] == 0
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    (disarmed,) = cloudwatch.describe_alarms(AlarmNames=[alarm])["MetricAlarms"]
    assert disarmed["ActionsEnabled"] is False
    # runner.up brings it back: a deploy with a new expiry, the alarm armed again, ready at zero.
    (record,) = up(options).data["records"]
    assert record["outcome"] == "ready", json.dumps(record)
    assert record["held_at_zero"] == f"zero copies: the first request starts one; its alarm {alarm} armed again"
    (armed,) = cloudwatch.describe_alarms(AlarmNames=[alarm])["MetricAlarms"]
    assert armed["ActionsEnabled"] is True
    cloudwatch.delete_alarms(AlarmNames=[alarm])  # CloudFormation's to delete with the stack

    assert sweep.run(["--delete", "--wait", "60", "--results-dir", str(tmp_path / "delete")]) in (0, 1)
    _, deleted = newest(tmp_path / "delete", "sweep")
    actions = {(a["kind"], a["id"]): a["outcome"] for a in deleted["deleted"]}
    assert actions[("stack", "InferenceSageMakerStack")] == "deleted"
    # CloudFormation took the component (before its endpoint) with the stack.
    assert actions[("inference-component", COMPONENT)] == "gone with its stack"
    assert sagemaker.list_inference_components()["InferenceComponents"] == []
    assert leftovers() == {}


def make_alarm_as_the_stack_declares(region: str, stack: str) -> str:
    """The stack's no-capacity alarm, made with its template's properties; its name."""
    from tests.aws_emulator.schedules import deployed_stack

    resources = deployed_stack(region, stack).template_dict["Resources"]
    (properties,) = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    keys = ("AlarmName", "AlarmDescription", "ActionsEnabled", "Namespace", "MetricName", "Dimensions", "Statistic",
            "Period", "EvaluationPeriods", "DatapointsToAlarm", "Threshold", "ComparisonOperator")  # fmt: skip
    boto3.client("cloudwatch", region_name=region).put_metric_alarm(**{k: properties[k] for k in keys})
    return properties["AlarmName"]


def _schedules(region: str) -> dict:
    from tests.emulator.observe import ttl_schedules

    return ttl_schedules(region, "InferenceSageMakerStack")
