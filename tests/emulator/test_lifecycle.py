"""The whole lifecycle on the emulator, from an empty account: the servers boot their real user
data on stand-in hosts (tests/host), the image builds run their real buildspec, and every call
either makes lands in moto. Nothing but the servers and the builds writes readiness, and no
stand-in writes `ready` (asserted in every flow).

What moto never does on its own is done here, and said where: CloudFormation's stack events are
delivered to the app's EventBridge rules (`fire_stack_deployed`), and the time-to-live's
scheduled actions and Scheduler schedule are run at "their time" (`fire_scheduled_actions`,
`fire_schedules`).
"""

from __future__ import annotations

import json
import re
import stat
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest

from runner import bench, check, cost, forward, images, sweep
from runner import up as up_command
from runner.cloud.reach.forwards_file import read_forwards
from runner.up import extend, up
from tests.emulator.cdk_cycle import CONTEXT, bootstrap, cli_folder, deploy, destroy, up_options
from tests.emulator.observe import (
    SERVERS,
    group,
    image_builds,
    kept_images,
    leftovers,
    readiness,
    running_instances,
    ttl_schedules,
    wait_for_states,
    wait_until,
)
from tests.host.container import REPLY_TOKENS
from tests.host.machine import HostOptions

pytestmark = pytest.mark.emulator
STAND_IN = Path(__file__).with_name("stand_in_plugin.py")
BUILT = {"g5g": "us-east-1", "inf2": "us-east-2", "trn1": "us-east-2"}


def assert_only_servers_and_builds_wrote_readiness(emulator) -> None:
    writes = emulator.readiness_writes
    assert writes, "nothing wrote readiness"
    assert {w["writer"] for w in writes} <= {"inference-server", "inference-build"}, writes
    for write in writes:
        if json.loads(write["value"])["state"] == "ready":
            assert write["writer"] == "inference-server", write


def newest(results: Path, command: str) -> dict:
    (path,) = sorted(results.glob(f"*/{command}-*.json"))[-1:]
    return json.loads(path.read_text())


@pytest.fixture
def empty_account(emulator):
    """An empty account, bootstrapped by `cdk bootstrap` as the README says."""
    emulator.reset()
    bootstrap(emulator.scratch, through_cli=True)
    yield emulator


@pytest.fixture
def bootstrapped_account(emulator):
    """An empty account with the CLI's bootstrap stack in every region (made without the CLI)."""
    emulator.reset()
    bootstrap(emulator.scratch)
    yield emulator


@pytest.fixture
def plugin(tmp_path) -> str:
    path = tmp_path / "session-manager-plugin"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STAND_IN}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_the_readme_flow_from_an_empty_account_to_a_table_and_back_to_nothing(
    empty_account, plugin, tmp_path, monkeypatch
):
    """README, "Deploying for real": up, forward, check, bench, cost, forward --stop, destroy, sweep."""
    emulator = empty_account
    evidence = up(up_options(tmp_path))
    records = {r["backend"]: r for r in evidence.data["records"]}
    assert {name: r["outcome"] for name, r in records.items()} == dict.fromkeys(
        ["g6", "g5g", "inf2", "trn1", "sagemaker"], "ready"
    ), json.dumps(evidence.data["notices"])
    # Images before servers: each built image was pushed before its server's instance launched.
    for name, region in BUILT.items():
        ecr = boto3.client("ecr", region_name=region)
        folder = "vllm-sm75" if name == "g5g" else "neuron"
        (image,) = ecr.describe_images(repositoryName=f"inference-survey/{folder}")["imageDetails"]
        launched = datetime.fromisoformat(records[name]["launched_at"])
        assert launched >= image["imagePushedAt"].replace(microsecond=0), name
        codebuild = boto3.client("codebuild", region_name=region)
        (build,) = codebuild.batch_get_builds(ids=[records[name]["build_id"]])["builds"]
        assert build["buildStatus"] in ("SUCCEEDED", "IN_PROGRESS")  # it may still be finishing its last phases
    assert records["g6"].get("build_id") is None  # a public image: no build, one instance at once
    assert_only_servers_and_builds_wrote_readiness(emulator)
    billing = {row["backend"] for row in evidence.data["billing"]}
    assert billing == {"g6", "g5g", "inf2", "trn1", "sagemaker"}
    assert evidence.data["config"]["expires_at"]

    # Forward: one SSM port forward per server, through the stand-in plugin to each host's own
    # container (the scripted server its `docker run` started), by instance id.
    upstreams = {}
    for name, region in SERVERS.items():
        instance = readiness(region, name)["instance_id"]
        port = 8080 if name in ("inf2", "trn1") else 8000
        upstreams[instance] = f"127.0.0.1:{emulator.hosts[instance].container_port(port)}"
    monkeypatch.setenv("STAND_IN_UPSTREAMS", json.dumps(upstreams))
    assert forward.run(["--plugin", plugin]) == 0
    assert sorted(f.backend for f in read_forwards()) == sorted(SERVERS)
    try:
        results = tmp_path / "results"
        assert check.run(["--backends", ",".join(SERVERS), "--results-dir", str(results)]) in (0, 1)
        health = {r["backend"]: r["health"]["healthy"] for r in newest(results, "check")["records"]}
        assert health == dict.fromkeys(SERVERS, True)
        assert bench.run(["--repeats", "1", "--backends", ",".join(SERVERS), "--results-dir", str(results)]) == 0
        bench_records = newest(results, "bench")["records"]
        assert {r["backend"] for r in bench_records if r["ok"]} == set(SERVERS)
        assert all(r["output_tokens"] == REPLY_TOKENS for r in bench_records)
        (bench_file,) = sorted(results.glob("*/bench-*.json"))[-1:]
        assert cost.run([str(bench_file), "--offline", "--results-dir", str(results)]) == 0
        priced = {r["backend"]: r["usd_per_hour"] for r in newest(results, "cost")["records"]}
        assert priced["g6"] == 0.8048 and priced["trn1"] == 1.3438
    finally:
        assert forward.run(["--stop"]) == 0

    destroy(emulator.scratch, {"backends": "g6,g5g,inf2,trn1,sagemaker"})
    emulator.builds.wait()  # the weights copies runner.up started
    assert sweep.run(["--results-dir", str(tmp_path / "sweep")]) in (0, 1)
    found = newest(tmp_path / "sweep", "sweep")["records"]
    # Emulator gap (see test_around_the_run): moto keeps the volumes of terminated instances.
    # Only what the store stacks retained is left, on purpose (the next deploy takes it back and
    # builds, copies and compiles nothing), with its cost.
    left = [f for f in found if f["ours"] and f["kind"] != "volume"]
    assert {(f["region"], f["kind"], f["id"], f["kept"]) for f in left} == {
        ("us-east-1", "image-repository", "inference-survey/vllm-sm75", True),
        ("us-east-2", "image-repository", "inference-survey/neuron", True),
        ("us-east-1", "bucket", "inference-survey-123456789012-us-east-1", True),
        ("us-east-2", "bucket", "inference-survey-123456789012-us-east-2", True),
    }
    assert all(
        re.search(r"^1 image\(s\), \d+\.\d\d GB: \$\d+\.\d\d a month of storage; kept", f["detail"])
        for f in left
        if f["kind"] == "image-repository"
    )
    assert all(
        re.search(r"^the app's store: \d+\.\d\d GB: \$\d+\.\d\d a month of storage; kept", f["detail"])
        for f in left
        if f["kind"] == "bucket"
    )
    assert leftovers() == {}
    assert kept_images() == {"us-east-1": ["inference-survey/vllm-sm75"], "us-east-2": ["inference-survey/neuron"]}

    # A second deploy finds its image built: the server comes up on it, and the build the deploy's
    # event starts pushes nothing.
    builds_before = len(emulator.builds.records)
    again = up(up_options(tmp_path, stacks=["InferenceGpuStack"], context=CONTEXT | {"backends": "g5g"}))
    assert [(r["backend"], r["outcome"]) for r in again.data["records"]] == [("g5g", "ready")]
    assert len(emulator.builds.records) == builds_before  # the runner started none
    (build_id,) = image_builds(emulator.fire_stack_deployed("us-east-1", "InferenceGpuStack"))
    emulator.builds.wait()
    assert any("already in the repository; not rebuilt" in line for line in emulator.builds.records[build_id].lines)
    ecr = boto3.client("ecr", region_name="us-east-1")
    assert len(ecr.describe_images(repositoryName="inference-survey/vllm-sm75")["imageDetails"]) == 1
    destroy(emulator.scratch, {"backends": "g5g"})

    # --delete --purge-images takes the kept images too: nothing of the app's is left.
    assert sweep.run(["--delete", "--purge-images", "--results-dir", str(tmp_path / "purge")]) in (0, 1)
    assert leftovers() == {} and kept_images() == {}


def test_a_plain_cdk_deploy_builds_first_and_the_time_to_live_takes_everything_to_zero_until_up_brings_it_back(
    bootstrapped_account, tmp_path
):
    emulator = bootstrapped_account
    # A plain `cdk deploy`: the CLI knows the account, so the CDK's own lookups give the zones and
    # AMI ids (moto answers them), kept in the CLI folder's cdk.context.json, never the project's.
    deploy(emulator.scratch, tmp_path / "outputs.json")
    looked_up = json.loads((cli_folder(emulator.scratch) / "cdk.context.json").read_text())
    assert looked_up["availability-zones:account=123456789012:region=us-east-1"] == [f"us-east-1{z}" for z in "abcdef"]
    assert not (Path(__file__).resolve().parents[2] / "cdk.context.json").exists()
    # Until its image exists a server has no instance: only g6 (a public image) runs.
    backends = {tag["Value"] for i in running_instances("us-east-1") + running_instances("us-east-2")
                for tag in i.get("Tags", []) if tag["Key"] == "inference:backend"}  # fmt: skip
    assert backends == {"g6"}
    for name in BUILT:
        assert readiness(BUILT[name], name)["state"] == "waiting-for-image"
        assert group(BUILT[name], name)["DesiredCapacity"] == 0

    # CloudFormation's CREATE_COMPLETE reaches the GPU stack's rule and the store stack's (delivered
    # by hand: moto sends none): the image build and the weights copy start.
    started = emulator.fire_stack_deployed("us-east-1", "InferenceGpuStack")
    assert len(image_builds(started)) == 1 and len(started) == 2
    # The Neuron image's build ends after the stack's expiry (StartBuild's environment override puts
    # its EXPIRES_AT in the past): the image is pushed, and no server comes back to bill.
    codebuild = boto3.client("codebuild", region_name="us-east-2")
    (project,) = [p for p in codebuild.list_projects()["projects"] if "BuildNeuron" in p]
    late = [{"name": "EXPIRES_AT", "value": "2026-01-01T00:00:00Z", "type": "PLAINTEXT"}]
    codebuild.start_build(projectName=project, environmentVariablesOverride=late)
    emulator.builds.wait()
    wait_for_states({"g6": "us-east-1", "g5g": "us-east-1"})
    for name in ("inf2", "trn1"):
        assert group("us-east-2", name)["DesiredCapacity"] == 0
        stopped = readiness("us-east-2", name)
        assert (
            stopped["state"] == "stopped" and "built after the time-to-live (2026-01-01T00:00:00Z)" in stopped["reason"]
        )
    # Every stack update starts the build again: it brings back nothing held at zero on purpose.
    (rebuild,) = image_builds(emulator.fire_stack_deployed("us-east-2", "InferenceNeuronStack", "UPDATE_COMPLETE"))
    emulator.builds.wait()
    assert any("inf2 (" in line and "stays at zero: held there on purpose (stopped)" in line
               for line in emulator.builds.records[rebuild].lines)  # fmt: skip
    assert [group("us-east-2", name)["DesiredCapacity"] for name in ("inf2", "trn1")] == [0, 0]
    assert_only_servers_and_builds_wrote_readiness(emulator)

    # The time-to-live's moment (run by hand: moto never runs schedules): one schedule a server.
    assert len(emulator.fire_schedules("us-east-1", "InferenceGpuStack")) == 2
    assert len(emulator.fire_schedules("us-east-2", "InferenceNeuronStack")) == 2
    assert emulator.fire_schedules("us-east-2", "InferenceSageMakerStack") == [
        "InferenceTimeToLive13FCBF45: deleted endpoint inference-sagemaker"
    ]
    wait_until(lambda: not running_instances("us-east-1") and not running_instances("us-east-2"), what="zero")
    assert boto3.client("sagemaker", region_name="us-east-2").list_endpoints()["Endpoints"] == []
    assert sweep.run(["--results-dir", str(tmp_path / "expired")]) in (0, 1)
    swept = newest(tmp_path / "expired", "sweep")["records"]
    # Nothing billing but the built images, which are kept on purpose (storage only).
    assert not [f for f in swept if f["ours"] and f["billing"] and not f["kept"] and f["kind"] != "volume"]
    assert all(
        re.search(r"time-to-live \d{4}-\d{2}-\d{2}T", f["detail"]) for f in swept if f["kind"] == "auto-scaling-group"
    )

    # No Auto Scaling scheduled action anywhere: AWS deletes a one-time action once it has run.
    autoscaling = boto3.client("autoscaling", region_name="us-east-1")
    assert autoscaling.describe_scheduled_actions()["ScheduledUpdateGroupActions"] == []
    # runner.up tells groups held at zero from a capacity refusal and brings them back. Its deploy
    # comes after the expiry, so its own expiry is later (ttlHours 13 stands for the hours that have
    # passed here in an instant): a new schedule per server.
    evidence = up(up_options(tmp_path, context=CONTEXT | {"ttlHours": "13"}))
    records = {r["backend"]: r for r in evidence.data["records"]}
    assert {n: r["outcome"] for n, r in records.items()} == dict.fromkeys(records, "ready")
    assert all("held at zero" in " ".join(evidence.data["notices"]) for _ in [0])
    assert records["g6"]["held_at_zero"] == "ready" and records["sagemaker"]["held_at_zero"].startswith(
        "endpoint deleted"
    )
    assert [a["region"] for a in records["inf2"]["attempts"]] == ["us-east-2"]  # no failover

    before = ttl_schedules("us-east-1", "InferenceGpuStack")
    assert len(before) == 2  # one a server: g6 and g5g

    # --extend moves only the expiry: one new schedule per server, the old ones gone.
    moved = extend(30, up_options(tmp_path))
    assert [r["outcome"] for r in moved.data["records"]] == ["extended"] * 3, [
        r.get("error") for r in moved.data["records"]
    ]
    after = ttl_schedules("us-east-1", "InferenceGpuStack")
    expected = (datetime.now(UTC) + timedelta(hours=30)).replace(second=0, microsecond=0)
    assert len(after) == 2 and not set(after) & set(before)
    for schedule in after.values():
        at = datetime.fromisoformat(schedule["ScheduleExpression"].removeprefix("at(").removesuffix(")"))
        assert schedule["ScheduleExpressionTimezone"] == "UTC"
        assert abs(at.replace(tzinfo=UTC) - expected) <= timedelta(minutes=2)
    assert group("us-east-1", "g6")["DesiredCapacity"] == 1  # the servers were not touched

    # Building a running server's image again pushes nothing and touches no server: its tag is
    # pushed already (immutable tags; a changed image is a new tag and a rolling replacement).
    instance = readiness("us-east-1", "g5g")["instance_id"]
    writes_before = len(emulator.readiness_writes)
    assert images.run(["build", "g5g", "--poll", "0.2", "--results-dir", str(tmp_path / "images")]) == 0
    (followed,) = newest(tmp_path / "images", "images")["records"]
    build = emulator.builds.records[followed["build_id"]]
    assert any("already in the repository; not rebuilt" in line for line in build.lines)
    assert readiness("us-east-1", "g5g")["instance_id"] == instance
    assert not [w for w in emulator.readiness_writes[writes_before:] if "/g5g/" in w["name"]]


def test_up_with_a_failed_build_a_server_failing_at_boot_and_one_never_ready_leaves_those_at_zero(
    bootstrapped_account, tmp_path
):
    emulator = bootstrapped_account
    emulator.build_behaviour["vllm-sm75"] = "fail:nvcc error: out of memory (killed: 9)"
    emulator.host_options["trn1"] = HostOptions(neuron_devices=0)
    emulator.host_options["inf2"] = HostOptions(container="never-healthy")
    # The command itself, as a user runs it: it left servers not ready, so it exits 1.
    argv = ["--launch-timeout", "20", "--poll", "0.3", "--build-grace", "1", "--method", "direct"]
    argv += ["--results-dir", str(tmp_path / "results")]
    argv += [f"-c{k}={v}" for k, v in (CONTEXT | {"inf2.readyMinutes": "5"}).items()]
    assert up_command.run(argv) == 1
    evidence = newest(tmp_path / "results", "up")
    records = {r["backend"]: r for r in evidence["records"]}
    outcomes = {n: r["outcome"] for n, r in records.items()}
    assert outcomes == {"g6": "ready", "sagemaker": "ready", "g5g": "failed", "inf2": "failed", "trn1": "failed"}
    assert "nvcc error: out of memory" in records["g5g"]["reason"]
    assert records["g5g"]["reason"].startswith("image build ")
    assert records["g5g"]["reason"].endswith("; after a fix: python -m runner.images build g5g")
    assert records["trn1"]["reason"].startswith("no Neuron device")
    assert records["inf2"]["reason"] == "not ready within 5 min of launch (last state: starting)"
    # Nothing bills without serving: each failed server is at zero, and the table lists the others.
    for name in ("g5g", "inf2", "trn1"):
        region = SERVERS[name]
        wait_until(lambda n=name, r=region: group(r, n)["DesiredCapacity"] == 0 and not group(r, n)["Instances"])
    assert {row["backend"] for row in evidence["billing"]} == {"g6", "sagemaker"}
    assert_only_servers_and_builds_wrote_readiness(emulator)
    # The failed build wrote its reason into the waiting server's readiness.
    assert [w["writer"] for w in emulator.readiness_writes if w["name"] == "/inference/g5g/ready"] == [
        "inference-build"
    ]


def test_a_codebuild_quota_of_zero_fails_only_the_backend_whose_image_needs_a_build(bootstrapped_account, tmp_path):
    """A new account's concurrent-build quota of 0: CodeBuild refuses every StartBuild there. The
    deploy's own start (EventBridge) fails unseen; the watch's start is refused: g5g fails with AWS's
    words, at zero, and g6 (a public image) is measured as usual."""
    emulator = bootstrapped_account
    emulator.refuse_builds("us-east-1")
    evidence = up(up_options(tmp_path, stacks=["InferenceGpuStack"]))
    records = {r["backend"]: r for r in evidence.data["records"]}
    assert {n: r["outcome"] for n, r in records.items()} == {"g6": "ready", "g5g": "failed"}
    assert re.fullmatch(
        r"image \S+/inference-survey/vllm-sm75:[0-9a-f]{16} cannot be built: CodeBuild refused to start \S+: "
        r"AccountLimitExceededException: Cannot have more than 0 builds in queue for the account",
        records["g5g"]["reason"],
    ), records["g5g"]["reason"]
    assert evidence.data["errors"] == {}  # the stack's run went on to its end
    assert group("us-east-1", "g5g")["DesiredCapacity"] == 0 and not group("us-east-1", "g5g")["Instances"]
    assert [row["backend"] for row in evidence.data["billing"]] == ["g6"]
    # EventBridge's own start of the build (delivered by hand here) is refused too, and nobody sees it.
    assert emulator.fire_stack_deployed("us-east-1", "InferenceGpuStack") == []
    # Both of the event's targets, the image build and the store stack's weights copy.
    refused = emulator.failed_invocations
    assert len(refused) == 2 and len(image_builds([f"{project}:x" for _, project, _ in refused])) == 1
    for region, _, why in refused:
        assert region == "us-east-1" and "Cannot have more than 0 builds in queue for the account" in why
    assert emulator.builds.records == {}
