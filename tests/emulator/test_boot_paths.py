"""Ready in fewer minutes, on the emulator from an empty account: a server's first boot in a region
takes every slow way (the image from its public registry, the weights from the hub, the graphs
compiled) and says why, starting the mirror and the weights copy, which run their buildspecs under
bash with the real AWS CLI as the builds do; a server launched later in the region takes every
fast way (the region's mirror, the store's copy of the weights, the stored graphs). Every boot's
phases come out in order with their times, in the readiness record and in runner.up's evidence."""

from __future__ import annotations

import json

import boto3
import pytest

from catalog.boot import PHASES, store_bucket, weights_marker
from runner.up import UpOptions, up
from tests.aws_emulator import ACCOUNT
from tests.emulator.cdk_cycle import CONTEXT, bootstrap, destroy, up_options
from tests.emulator.observe import group, readiness, running_instances, wait_until

pytestmark = pytest.mark.emulator
# g6 alone: the GPU stack follows g6's own regions, the survey's order (docs/stacks.md).
REGION = "us-east-2"
G6_MODEL = "xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4"
MIRROR_REPOSITORY = "inference-survey/mirror/vllm/vllm-openai"


def options(tmp_path, **changes) -> UpOptions:
    """The GPU stack with g6 alone."""
    return up_options(
        tmp_path, **({"stacks": ["InferenceGpuStack"], "context": CONTEXT | {"backends": "g6"}} | changes)
    )


def assert_phases_in_order(record: dict) -> None:
    """runner.up's evidence: each phase's moment from the launch, in the order reached, and the
    seconds each took adding up to them."""
    marks = record["phases_s"]
    assert list(marks) == list(PHASES), record
    assert list(marks.values()) == sorted(marks.values()) and marks["running"] >= 0
    assert sum(record["phase_s"].values()) == pytest.approx(marks["answer"], abs=0.2)
    assert (record["answer"], record["answer_correct"]) == ("Paris", True)


def relaunch(tmp_path, name: str) -> dict:
    """The group to zero and back by runner.up (as after the time-to-live): a new instance's boot."""
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    autoscaling.set_desired_capacity(
        AutoScalingGroupName=group(REGION, "g6")["AutoScalingGroupName"], DesiredCapacity=0
    )
    wait_until(lambda: not running_instances(REGION), what="g6 at zero")
    evidence = up(options(tmp_path / name, deploy=False))
    (record,) = evidence.data["records"]
    assert record["outcome"] == "ready", json.dumps(evidence.data["notices"])
    return record


def test_a_first_boot_takes_the_slow_ways_and_starts_what_makes_the_next_boot_take_the_fast_ways(emulator, tmp_path):
    emulator.reset()
    bootstrap(emulator.scratch)
    first = up(options(tmp_path / "first"))
    (record,) = first.data["records"]
    assert record["outcome"] == "ready", json.dumps(first.data["notices"])
    assert_phases_in_order(record)
    paths = record["paths"]
    # g6.xlarge has its instance store: Docker's data goes there.
    assert paths["storage"].startswith("instance store /dev/nvme1n1 at ") and "(250 GB free)" in paths["storage"]
    # Nothing is in the region yet: the public image, the hub, a compile; the mirror and the copy started.
    assert paths["image"].startswith("from vllm/vllm-openai:v0.30.0: its mirror could not be pulled (")
    assert "to make the mirror" in paths["image"]
    store = store_bucket(ACCOUNT, REGION)
    assert paths["weights"].startswith(f"from the hub: the region's store {store} does not exist yet; ")
    assert "to make the copy" in paths["weights"]
    assert paths["graphs"].startswith("compiling: no graphs stored for these inputs")
    # The builds a server started ran their buildspecs (bash, the real AWS CLI): the mirror pushed to
    # the region's ECR, the store made and the weights copied with their manifest last.
    emulator.builds.wait()
    assert {b.project.name: b.status for b in emulator.builds.records.values()} == dict.fromkeys(
        [b.project.name for b in emulator.builds.records.values()], "SUCCEEDED"
    )
    ecr = boto3.client("ecr", region_name=REGION)
    (image,) = ecr.describe_images(repositoryName=MIRROR_REPOSITORY)["imageDetails"]
    assert image["imageTags"] == ["v0.30.0"]
    s3 = boto3.client("s3", region_name=REGION)
    manifest = json.loads(s3.get_object(Bucket=store, Key=weights_marker(G6_MODEL))["Body"].read())
    assert manifest["model"] == G6_MODEL and "model.safetensors" in manifest["files"]
    assert s3.get_bucket_tagging(Bucket=store)["TagSet"] == [{"Key": "app", "Value": "inference-survey"}]

    # The next instance in the region: the mirror, the weights streamed from the store, no build started.
    builds = len(emulator.builds.records)
    second = relaunch(tmp_path, "second")
    assert_phases_in_order(second)
    mirror = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{MIRROR_REPOSITORY}:v0.30.0"
    assert second["paths"]["image"] == f"the region's mirror {mirror}"
    assert second["paths"]["weights"] == f"streamed by the engine from s3://{store}/weights/{G6_MODEL}/"
    assert len(emulator.builds.records) == builds
    # The graphs: kept by a server that compiled them once the store existed, restored by the next.
    if not second["paths"]["graphs"].startswith("restored from"):
        second = relaunch(tmp_path, "third")
    assert second["paths"]["graphs"].startswith(f"restored from s3://{store}/graphs/nvidia/")
    # What the evidence holds is what the instance wrote.
    assert readiness(REGION, "g6")["paths"] == second["paths"]


def test_an_endpoint_made_once_the_copy_is_in_its_region_reads_the_weights_from_the_store(emulator, tmp_path):
    """runner.up looks for the store's complete copy before it deploys an endpoint: none the first
    time (the hub, and the copy started for the next deploy); a standing endpoint keeps its source
    (another would replace its instance); an endpoint made after the copy reads it from S3."""
    emulator.reset()
    bootstrap(emulator.scratch)
    region, model = "us-east-2", G6_MODEL
    store = store_bucket(ACCOUNT, region)

    def endpoint(name: str) -> dict:
        evidence = up(options(tmp_path / name, stacks=["InferenceSageMakerStack"], context=dict(CONTEXT)))
        (record,) = evidence.data["records"]
        assert (record["outcome"], record["region"]) == ("ready", region), json.dumps(evidence.data["notices"])
        return record

    def container() -> dict:
        sagemaker = boto3.client("sagemaker", region_name=region)
        (summary,) = sagemaker.list_models()["Models"]
        return sagemaker.describe_model(ModelName=summary["ModelName"])["PrimaryContainer"]

    first = endpoint("first")
    assert first["paths"]["weights"].startswith(
        f"from the hub: the region's store {store} does not exist yet; started "
    )
    assert first["paths"]["weights"].endswith(" to make the copy")
    assert container()["Environment"]["SM_VLLM_MODEL"] == model and "ModelDataSource" not in container()
    emulator.builds.wait()
    assert endpoint("standing")["paths"]["weights"] == (
        "from the hub: the endpoint stands, and another source would replace its instance"
    )
    destroy(emulator.scratch, {"backends": "sagemaker"})
    made = endpoint("made")
    uri = f"s3://{store}/weights/{model}/"
    assert made["paths"]["weights"] == f"copied by SageMaker from {uri}"
    staged = container()
    assert staged["ModelDataSource"]["S3DataSource"] == {
        "S3Uri": uri,
        "S3DataType": "S3Prefix",
        "CompressionType": "None",
    }
    assert (staged["Environment"]["SM_VLLM_MODEL"], staged["Environment"]["SM_VLLM_SERVED_MODEL_NAME"]) == (
        "/opt/ml/model",
        model,
    )
    destroy(emulator.scratch, {"backends": "sagemaker"})
