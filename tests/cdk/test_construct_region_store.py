"""RegionStore alone in a bare Stack: the weights copy's project (the copy script, once at a time,
told the store, the models, the account and the app's tag; a role that may make and fill only
the store's weights prefix), a mirror's project (privileged Docker, the source and its mirror in
the region's ECR, a role that pushes to that one repository), and no bucket or repository of the
stack's own: the store and the mirror outlive `cdk destroy`."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from catalog import Architecture
from inference_constructs.region_store import COPY_SCRIPT, RegionStore
from tests.cdk.conftest import render_join

REGION = "us-east-2"
MODELS = ["Qwen/Qwen2.5-1.5B-Instruct", "google/gemma-4-E2B-it"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[RegionStore, dict[str, Any]]:
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("store")), builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Bare", env=cdk.Environment(region=REGION))
    store = RegionStore(stack, "Store", models=MODELS, hf_token_secret_name="inference/hf-token")
    store.mirror("vllm/vllm-openai:v0.30.0", Architecture.X86_64)
    return store, Template.from_stack(stack).to_json()


def resource(template: dict[str, Any], stack_id: str) -> dict[str, Any]:
    return template["Resources"][stack_id]


def logical_id(construct: Any) -> str:
    stack = cdk.Stack.of(construct)
    return stack.resolve(stack.get_logical_id(construct.node.default_child))


def role_statements(template: dict[str, Any], project: Any) -> dict[str, dict[str, Any]]:
    role = resource(template, logical_id(project))["Properties"]["ServiceRole"]["Fn::GetAtt"][0]
    return {
        s.get("Sid", ""): s
        for p in template["Resources"].values()
        if p["Type"] == "AWS::IAM::Policy" and p["Properties"]["Roles"] == [{"Ref": role}]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    }


def variables(template: dict[str, Any], project: Any) -> dict[str, str]:
    env = resource(template, logical_id(project))["Properties"]["Environment"]["EnvironmentVariables"]
    return {v["Name"]: render_join(v["Value"]) for v in env}


def test_the_stack_owns_no_bucket_and_no_repository(built):
    _, template = built
    kinds = {r["Type"] for r in template["Resources"].values()}
    assert "AWS::S3::Bucket" not in kinds and "AWS::ECR::Repository" not in kinds


def test_the_copy_runs_the_copy_script_once_at_a_time_told_the_store_and_the_models(built):
    store, template = built
    project = resource(template, logical_id(store.copy))["Properties"]
    assert project["Source"]["Type"] == "NO_SOURCE" and project["ConcurrentBuildLimit"] == 1
    command = project["Source"]["BuildSpec"]
    assert base64.b64encode(COPY_SCRIPT.read_bytes()).decode() in command
    assert variables(template, store.copy) == {
        "MODEL_IDS": " ".join(MODELS),
        "STORE_BUCKET": f"inference-survey-<AWS::AccountId>-{REGION}",
        "ACCOUNT_ID": "<AWS::AccountId>",
        "APP_TAG": "app=inference-survey",
        "HF_TOKEN_SECRET": "inference/hf-token",
        "HF_HUB_VERSION": "2.4.0",
    }


def test_the_copy_may_make_and_fill_only_the_stores_weights(built):
    store, template = built
    sids = role_statements(template, store.copy)
    bucket = f"arn:<AWS::Partition>:s3:::inference-survey-<AWS::AccountId>-{REGION}"
    assert render_join(sids["KeepTheStore"]["Resource"]) == bucket
    assert (
        "s3:CreateBucket" in sids["KeepTheStore"]["Action"] and "s3:DeleteBucket" not in sids["KeepTheStore"]["Action"]
    )
    assert render_join(sids["CopyTheWeights"]["Resource"]) == f"{bucket}/weights/*"
    assert render_join(sids["ReadTheHuggingFaceToken"]["Resource"]).endswith(":secret:inference/hf-token-??????")


def test_a_mirror_pushes_the_public_image_into_its_one_repository(built):
    store, template = built
    (project,) = store.mirrors.values()
    properties = resource(template, logical_id(project))["Properties"]
    assert properties["Environment"]["PrivilegedMode"] is True
    assert properties["Environment"]["ComputeType"] == "BUILD_GENERAL1_LARGE"
    values = variables(template, project)
    assert values["MIRROR_SOURCE"] == "vllm/vllm-openai:v0.30.0"
    assert values["IMAGE_URI"].endswith("/inference-survey/mirror/vllm/vllm-openai:v0.30.0")
    assert values["IMAGE_FOLDER"] == "mirror/vllm/vllm-openai"
    push = role_statements(template, project)["PushToTheMirror"]
    assert render_join(push["Resource"]) == (
        f"arn:<AWS::Partition>:ecr:{REGION}:<AWS::AccountId>:repository/inference-survey/mirror/vllm/vllm-openai"
    )
    # One mirror per image, however many servers run it.
    assert (
        store.mirror("vllm/vllm-openai:v0.30.0", Architecture.X86_64) == store.mirror_uris["vllm/vllm-openai:v0.30.0"]
    )
    assert len(store.mirrors) == 1


def test_the_log_groups_carry_the_stacks_name(built):
    """Two stacks in one region (a server stack and the SageMaker one) each copy: their groups differ."""
    _, template = built
    names = sorted(
        r["Properties"]["LogGroupName"] for r in template["Resources"].values() if r["Type"] == "AWS::Logs::LogGroup"
    )
    assert names == ["/inference/mirror/Bare/vllm-openai", "/inference/weights-copy/Bare"]


def test_the_copy_script_is_the_one_the_import_stack_runs():
    from stacks.import_stack import COPY_SCRIPT as IMPORT_COPY

    assert Path(IMPORT_COPY).resolve() == COPY_SCRIPT.resolve()
