"""runner.sweep's buckets, Custom Model Import models and transform jobs, against moto in process
(S3, CloudFormation, SageMaker) and Bedrock's import APIs on loopback (tests/runner/
fake_bedrock_import.py): ours are emptied, stopped or deleted, in an order CloudFormation can
finish; what is not ours is listed where it bills and never touched.

moto gaps filled here: a transform job moto creates is already Completed, and moto has no
StopTransformJob; the job is set InProgress in moto's backend and StopTransformJob stops it, as
SageMaker does (Stopping, then Stopped).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from rich.console import Console

from runner.cloud.cleanup.leftovers import RegionScan, sweep_regions
from runner.cloud.cleanup.removal import delete_ours
from runner.render.sweep import SweepFile, render_report
from tests.runner.fake_bedrock_import import FakeBedrockImport

REGION = "us-east-1"
OURS = [{"Key": "app", "Value": "inference-survey"}]


@pytest.fixture
def aws(monkeypatch) -> Iterator[FakeBedrockImport]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    with FakeBedrockImport(REGION) as fake:
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        with mock_aws():
            yield fake


def versioned_bucket(s3, name: str, tags: list[dict[str, str]] | None) -> None:
    s3.create_bucket(Bucket=name)
    if tags:
        s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": tags})
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"one", b"two"):
        s3.put_object(Bucket=name, Key="weights/config.json", Body=body)
    s3.put_object(Bucket=name, Key="weights/model.safetensors", Body=b"\0" * 32)
    s3.delete_object(Bucket=name, Key="weights/model.safetensors")  # a delete marker over a version


def test_our_bucket_is_emptied_of_every_version_then_deletable_and_a_stranger_is_untouched(aws):
    s3 = boto3.client("s3", region_name=REGION)
    versioned_bucket(s3, "inference-survey-async-io", OURS)
    versioned_bucket(s3, "someone-elses-data", [{"Key": "team", "Value": "other"}])
    versioned_bucket(s3, "untagged-data", None)
    scan = RegionScan(REGION)
    scan.buckets()
    (bucket,) = scan.found
    assert (bucket.kind, bucket.id, bucket.ours, bucket.billing) == ("bucket", "inference-survey-async-io", True, True)
    assert bucket.detail == "4 object version(s)"
    with pytest.raises(ClientError, match="BucketNotEmpty"):
        s3.delete_bucket(Bucket="inference-survey-async-io")  # why the sweep empties it first

    actions = delete_ours(scan.found, 5)
    assert [a["outcome"] for a in actions] == ["emptied (4 object version(s))", "deleted"]
    assert "inference-survey-async-io" not in {b["Name"] for b in s3.list_buckets()["Buckets"]}
    for stranger in ("someone-elses-data", "untagged-data"):
        versions = s3.list_object_versions(Bucket=stranger)
        assert len(versions["Versions"]) == 3 and len(versions["DeleteMarkers"]) == 1


def test_a_stacks_bucket_is_emptied_before_the_stack_so_the_stack_takes_it_along(aws):
    template = {
        "Resources": {
            "Weights": {
                "Type": "AWS::S3::Bucket",
                "Properties": {"BucketName": "inference-survey-import-weights", "Tags": OURS},
            }
        }
    }
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cloudformation.create_stack(StackName="InferenceBedrockImportStack", TemplateBody=json.dumps(template), Tags=OURS)
    s3 = boto3.client("s3", region_name=REGION)
    s3.put_object(Bucket="inference-survey-import-weights", Key="weights/config.json", Body=b"{}")
    scan = RegionScan(REGION)
    scan.stacks()
    scan.buckets()
    assert [(f.kind, f.ours) for f in scan.found] == [("stack", True), ("bucket", True)]

    actions = delete_ours(scan.found, 5)
    assert [(a["kind"], a["outcome"]) for a in actions] == [
        ("bucket", "emptied (1 object version(s))"),
        ("stack", "deleted"),
        ("bucket", "gone with its stack"),
    ]
    assert s3.list_buckets()["Buckets"] == []


def test_imported_models_ours_deleted_not_ours_listed_and_kept(aws):
    ours = aws.add_model("inference-survey-qwen2-5-1-5b-instruct", ours=True)
    theirs = aws.add_model("someone-elses-llama", ours=False, architecture="LlamaForCausalLM")
    aws.add_running_job("inference-survey-next", ours=True)
    scan = RegionScan(REGION)
    scan.model_imports()
    found = {(f.kind, f.id): f for f in scan.found}
    assert set(found) == {
        ("imported-model", ours["modelName"]),
        ("imported-model", theirs["modelName"]),
        ("import-job", "inference-survey-next-running"),
    }
    assert found[("imported-model", ours["modelName"])].ours and found[("imported-model", ours["modelName"])].billing
    assert not found[("imported-model", theirs["modelName"])].ours
    assert found[("imported-model", theirs["modelName"])].billing  # it bills whoever's it is
    job = found[("import-job", "inference-survey-next-running")]
    assert (job.state, job.ours, job.billing) == ("InProgress", True, False)
    assert "per CMU-minute" in found[("imported-model", ours["modelName"])].detail

    calls = len(aws.calls)
    outside = RegionScan("us-east-2")  # Custom Model Import is not offered there: no call at all
    outside.model_imports()
    assert outside.found == [] and len(aws.calls) == calls

    actions = delete_ours(scan.found, 5)
    outcomes = {(a["kind"], a["id"]): a["outcome"] for a in actions}
    assert outcomes[("imported-model", ours["modelName"])] == "deleted"
    assert outcomes[("import-job", "inference-survey-next-running")].startswith("left: Bedrock has no call")
    assert ("imported-model", theirs["modelName"]) not in outcomes
    assert set(aws.models) == {theirs["modelName"]}

    out = Console(record=True, width=200)
    render_report(SweepFile(config={"regions": [REGION]}, records=scan.found, deleted=actions), out)
    text = out.export_text()
    assert "a Custom Model Import model bills per Custom Model Unit per minute" in text
    assert "not ours" in text


@pytest.fixture
def transform_jobs(monkeypatch):
    """moto's transform jobs, running until StopTransformJob stops them."""
    from moto.core.responses import ActionResult
    from moto.sagemaker.models import sagemaker_backends
    from moto.sagemaker.responses import SageMakerResponse

    def stop_transform_job(response):
        job = response.sagemaker_backend.transform_jobs[response._get_param("TransformJobName")]
        job.transform_job_status = "Stopped"
        return ActionResult({})

    monkeypatch.setattr(SageMakerResponse, "stop_transform_job", stop_transform_job, raising=False)
    sagemaker = boto3.client("sagemaker", region_name=REGION)

    def start(name: str, tags: list[dict[str, str]]) -> None:
        sagemaker.create_transform_job(
            TransformJobName=name,
            ModelName="inference-sagemaker-batch",
            TransformInput={"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/in/"}}},
            TransformOutput={"S3OutputPath": "s3://b/out/"},
            TransformResources={"InstanceType": "ml.g4dn.xlarge", "InstanceCount": 1},
            Tags=tags,
        )
        sagemaker_backends["123456789012"][REGION].transform_jobs[name].transform_job_status = "InProgress"

    return start


def test_running_transform_jobs_bill_and_ours_are_stopped(aws, transform_jobs):
    transform_jobs("inference-batch-1", OURS)
    transform_jobs("someone-elses-batch", [{"Key": "team", "Value": "other"}])
    scan = RegionScan(REGION)
    scan.transform_jobs()
    found = {f.id: f for f in scan.found}
    assert {(f.kind, f.state, f.billing) for f in found.values()} == {("transform-job", "InProgress", True)}
    assert found["inference-batch-1"].ours and not found["someone-elses-batch"].ours
    actions = delete_ours(scan.found, 5)
    assert [(a["id"], a["outcome"]) for a in actions] == [("inference-batch-1", "stopped")]
    again = RegionScan(REGION)
    again.transform_jobs()
    assert [f.id for f in again.found] == ["someone-elses-batch"]


def test_the_region_sweep_runs_the_new_listings(aws):
    s3 = boto3.client("s3", region_name=REGION)
    versioned_bucket(s3, "inference-survey-async-io", OURS)
    aws.add_model("inference-survey-qwen2-5-1-5b-instruct", ours=True)
    found, problems, skipped = sweep_regions([REGION])
    kinds = {(f.kind, f.id) for f in found}
    assert {
        ("bucket", "inference-survey-async-io"),
        ("imported-model", "inference-survey-qwen2-5-1-5b-instruct"),
    } <= kinds
    # moto 5 has no Session Manager DescribeSessions and no ListInferenceComponents
    # (tests/aws_emulator/sessions.py and inference_components.py fill them there).
    assert all(" sessions: " in line or " inference_components: " in line for line in problems) and skipped == []
