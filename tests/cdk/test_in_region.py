"""What `runner.bench --in-region` needs from each EC2 stack: the kit as an S3 asset, a bucket of the
stack's own for the records, and instance roles scoped to the one kit object and their own prefix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalog.contract import BackendOutput, output_key
from inference_constructs.in_region import CORE_DIR, KIT_DIR
from tests.cdk.conftest import render_join, resources
from tests.cdk.test_stacks import EC2_BACKENDS, fake_refs

SERVER_STACKS = ("InferenceGpuStack", "InferenceNeuronStack")


def evidence_bucket(template) -> tuple[str, dict]:
    (item,) = resources(template, "AWS::S3::Bucket").items()
    return item


def kit_asset(assembly, stack: str) -> tuple[str, dict]:
    manifest = json.loads(Path(assembly.directory, f"{stack}.assets.json").read_text())
    (item,) = [(k, v) for k, v in manifest["files"].items() if v.get("displayName") == "InRegionBench/Kit"]
    return item


def role_statements(template, backend: str) -> list[dict]:
    (policy,) = [
        r
        for k, r in resources(template, "AWS::IAM::Policy").items()
        if k.startswith(f"{backend.capitalize()}RoleDefaultPolicy")
    ]
    return policy["Properties"]["PolicyDocument"]["Statement"]


@pytest.mark.parametrize("stack", SERVER_STACKS)
def test_each_server_stack_owns_an_encrypted_private_tls_only_expiring_bucket(templates, stack):
    template = templates[stack]
    logical_id, bucket = evidence_bucket(template)
    assert (bucket["DeletionPolicy"], bucket["UpdateReplacePolicy"]) == ("Delete", "Delete")
    props = bucket["Properties"]
    assert "BucketName" not in props  # CloudFormation names it: no clash between stacks or regions
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    (rule,) = props["LifecycleConfiguration"]["Rules"]
    assert rule == {
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
        "ExpirationInDays": 7,
        "Status": "Enabled",
    }
    # Tagged like every resource of the app, so runner.sweep --delete empties it before its stack.
    assert {"Key": "app", "Value": "inference-survey"} in props["Tags"]
    (policy,) = resources(template, "AWS::S3::BucketPolicy").values()
    assert policy["Properties"]["Bucket"] == {"Ref": logical_id}
    (deny,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Action"] == "s3:*" and deny["Principal"] == {"AWS": "*"}
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    # No other stack's bucket: self-contained (and the SageMaker stack has none by default).
    assert not resources(templates["InferenceSageMakerStack"], "AWS::S3::Bucket")


@pytest.mark.parametrize("backend", EC2_BACKENDS)
def test_each_role_reads_the_one_kit_object_and_reads_and_writes_under_its_own_prefix_only(
    templates, assembly, backend
):
    stack = EC2_BACKENDS[backend]
    template = templates[stack]
    bucket_id, _ = evidence_bucket(template)
    asset_hash, asset = kit_asset(assembly, stack)
    (destination,) = asset["destinations"].values()
    statements = {s["Sid"]: s for s in role_statements(template, backend) if s.get("Sid")}
    read = statements["ReadTheBenchKit"]
    assert read["Action"] == "s3:GetObject" and read["Effect"] == "Allow"
    region = "us-east-1" if stack == "InferenceGpuStack" else "us-east-2"
    assert render_join(read["Resource"]) == (
        f"arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-${{AWS::AccountId}}-{region}/{destination['objectKey']}"
    )
    assert destination["objectKey"] == f"{asset_hash}.zip"
    write = statements["WriteInRegionEvidence"]
    assert write["Action"] == "s3:PutObject" and write["Effect"] == "Allow"
    assert render_join(write["Resource"]) == f"<{bucket_id}.Arn>/in-region/{backend}/*"
    # A workload's request bodies come in through the same prefix (the runner puts them there).
    fetch = statements["ReadInRegionRequests"]
    assert fetch["Action"] == "s3:GetObject" and fetch["Effect"] == "Allow"
    assert render_join(fetch["Resource"]) == f"<{bucket_id}.Arn>/in-region/{backend}/*/requests.json.gz"
    # Nothing else of the role touches the evidence bucket: no list, no delete, no other prefix;
    # its other S3 statements are its boot scripts' and the app's store's (weights and compiled
    # graphs, inference_constructs/store_access.py).
    s3 = [s for s in role_statements(template, backend) if "s3:" in json.dumps(s["Action"])]
    assert [s["Sid"] for s in s3 if bucket_id in json.dumps(s["Resource"])] == [
        "WriteInRegionEvidence", "ReadInRegionRequests"
    ]  # fmt: skip
    assert sorted(s["Sid"] for s in s3) == sorted(
        ["ReadTheBenchKit", "WriteInRegionEvidence", "ReadInRegionRequests", "ReadItsBootScripts", "FindTheStore",
         "ListItsModelsWeights", "ReadItsModelsWeights", "ReadItsGraphs", "KeepItsGraphs"]
    )  # fmt: skip
    assert all("inference-survey-" in json.dumps(s["Resource"]) for s in s3 if s["Sid"] not in (
        "ReadTheBenchKit", "WriteInRegionEvidence", "ReadInRegionRequests", "ReadItsBootScripts"))  # fmt: skip
    # No other role of the stack may write the evidence bucket.
    for logical_id, policy in resources(template, "AWS::IAM::Policy").items():
        if not logical_id.startswith(f"{backend.capitalize()}Role"):
            text = json.dumps(policy["Properties"]["PolicyDocument"])
            assert f"in-region/{backend}/" not in text, logical_id


@pytest.mark.parametrize("backend", EC2_BACKENDS)
def test_the_output_names_the_bucket_the_prefix_and_the_kit(templates, assembly, backend):
    stack = EC2_BACKENDS[backend]
    template = templates[stack]
    bucket_id, _ = evidence_bucket(template)
    refs = fake_refs(template) | {bucket_id: "evidence-bucket"}
    value = render_join(template["Outputs"][output_key(backend)]["Value"], refs)
    parsed = BackendOutput.parse(output_key(backend), json.loads(value), stack=stack)
    asset_hash, _ = kit_asset(assembly, stack)
    region = parsed.region
    assert parsed.evidence_bucket == "evidence-bucket"
    assert parsed.evidence_prefix == f"in-region/{backend}/"
    assert parsed.bench_kit == f"s3://cdk-hnb659fds-assets-${{AWS::AccountId}}-{region}/{asset_hash}.zip"


@pytest.mark.parametrize("stack", SERVER_STACKS)
def test_the_asset_is_the_kit_with_its_program_at_the_root_and_the_runners_measuring_core_beside_it(assembly, stack):
    """The CDK CLI zips a staged folder with its files at the zip's root, so `python3 kit.zip` runs
    `__main__.py`, which imports the runner's measuring core as the package `timing`: its files
    as they are in runner/timing, source only (no bytecode a local run left, nor in the hash)."""
    _, asset = kit_asset(assembly, stack)
    assert asset["source"]["packaging"] == "zip"
    staged = Path(assembly.directory, asset["source"]["path"])
    files = {p.relative_to(staged).as_posix(): p.read_bytes() for p in staged.rglob("*") if p.is_file()}
    core = {f"timing/{p.name}": p.read_bytes() for p in CORE_DIR.glob("*.py")}
    assert files == {"__main__.py": (KIT_DIR / "__main__.py").read_bytes()} | core


def test_the_kit_replaces_no_server(templates, assembly):
    """The kit is fetched at run time: nothing of it is in a launch template's user data (which
    names one asset, the boot scripts)."""
    for stack in SERVER_STACKS:
        kit_hash, _ = kit_asset(assembly, stack)
        for template in resources(templates[stack], "AWS::EC2::LaunchTemplate").values():
            text = json.dumps(template)
            assert kit_hash not in text and "in-region" not in text
