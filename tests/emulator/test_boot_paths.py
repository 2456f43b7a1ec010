"""Ready in fewer minutes, on the emulator from an empty account: a server's first boot in a region
takes the slow ways where the region has nothing yet (the weights from the hub, the graphs
compiled) and says why, while runner.up starts the weights copy, which runs its buildspec under
bash with the real AWS CLI as the build does; the image comes from AWS's ECR in the region from
the first boot on. A server launched later in the region takes every fast way (the store's copy
of the weights, the graphs runner.up recorded). Every boot's phases come out in order with their
times, in the readiness record and in runner.up's evidence."""

from __future__ import annotations

import json

import boto3
import pytest

from catalog.boot import PHASES, store_bucket, weights_marker
from inference_constructs.weights_copy import COPY_PROJECT
from runner.up import UpOptions, up
from tests.aws_emulator import ACCOUNT
from tests.emulator.cdk_cycle import CONTEXT, bootstrap, destroy, up_options
from tests.emulator.observe import graphs_record, group, readiness, running_instances, wait_until

pytestmark = pytest.mark.emulator
# g6 alone: the GPU stack follows g6's own regions, the survey's order (docs/stacks.md).
REGION = "us-east-2"
G6_MODEL = "xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4"
DLC = "763104351884.dkr.ecr.us-east-2.amazonaws.com/vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-ec2"


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
    # The copy runs once the first server has taken its way to the weights (held until then: a
    # real copy takes minutes, and which finishes first must not be left to this machine's load).
    first = up(options(tmp_path / "first"))
    (record,) = first.data["records"]
    assert record["outcome"] == "ready", json.dumps(first.data["notices"])
    assert_phases_in_order(record)
    paths = record["paths"]
    # g6.xlarge has its instance store: Docker's data goes there.
    assert paths["storage"].startswith("instance store /dev/nvme1n1 at ") and "(250 GB free)" in paths["storage"]
    # The image from AWS's ECR in the region from the first boot on; nothing else is there yet:
    # the hub, a compile (not kept: the hub's cache is not where the next server reads weights).
    assert paths["image"] == DLC
    store = store_bucket(ACCOUNT, REGION)
    assert paths["weights"] == f"from the hub: no complete copy of {G6_MODEL} in {store} yet"
    assert paths["graphs"].startswith("compiling: the weights come from the hub's cache")
    # runner.up (never the server) started the copy, which ran its buildspec (bash, the real AWS
    # CLI) into the store stack's bucket, its manifest last.
    assert record["weights_copy"].startswith("started ") and record["weights_copy"].endswith(" to make the copy")
    emulator.builds.release(COPY_PROJECT)
    emulator.builds.wait()
    assert {b.project.name: b.status for b in emulator.builds.records.values()} == {
        "inference-weights-copy": "SUCCEEDED"
    }
    s3 = boto3.client("s3", region_name=REGION)
    manifest = json.loads(s3.get_object(Bucket=store, Key=weights_marker(G6_MODEL))["Body"].read())
    assert manifest["model"] == G6_MODEL and manifest["version"] == 2
    # Every file an engine reads, Gemma 4's chat template among them, each with its sha256.
    assert {"model.safetensors", "chat_template.jinja", "config.json"} <= set(manifest["files"])
    assert all(len(f["sha256"]) == 64 for f in manifest["files"].values())

    # The next instance in the region: the weights streamed from the store; it compiles, keeps its
    # graphs, and runner.up records them; no build started.
    builds = len(emulator.builds.records)
    second = relaunch(tmp_path, "second")
    assert_phases_in_order(second)
    assert second["paths"]["weights"] == f"streamed by the engine from s3://{store}/weights/{G6_MODEL}/"
    assert second["paths"]["graphs"] == "compiling: runner.up has recorded no graphs of g6 for these inputs"
    assert len(emulator.builds.records) == builds
    recorded = wait_until(lambda: graphs_record(REGION, "g6"), what="the graphs recorded")
    # The one after restores what runner.up recorded.
    third = relaunch(tmp_path, "third")
    assert third["paths"]["graphs"].startswith(f"restored from s3://{store}/graphs/g6/")
    ((key, digest),) = recorded.items()
    assert f"/graphs/g6/{key}/{digest}.tar.gz" in third["paths"]["graphs"]
    # What the evidence holds is what the instance wrote.
    assert readiness(REGION, "g6")["paths"] == third["paths"]
    assert readiness(REGION, "g6")["image_digest"].startswith("sha256:")


def test_an_endpoint_made_once_the_copy_is_in_its_region_reads_the_weights_from_the_store(emulator, tmp_path):
    """runner.up looks for the store's complete copy before it deploys an endpoint: none the first
    time (the hub, and the copy started for the next deploy); a standing endpoint keeps its source
    (another would replace its instance); an endpoint made after the copy reads it from S3."""
    emulator.reset()
    emulator.builds.release(COPY_PROJECT)  # the copy is what these flows are about
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
    # Looked for before the deploy, which makes the region's store stack: there is none yet.
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
