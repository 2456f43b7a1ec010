"""InferenceStoreStack alone in a fresh App: the store bucket, the image repositories and the
weights copy of one region, as CloudFormation holds them. The bucket and the repositories are
retained under fixed names (the next deploy takes them back), versioned and immutable, private
and TLS only; graphs are written once; the copy runs the copy script on every deploy of the app's
stacks in the region, told the store and the models (pinned where the catalog pins them)."""

from __future__ import annotations

import base64
import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from catalog.backends import MODEL_REVISIONS, OPEN_MODEL
from inference_constructs.weights_copy import COPY_PROJECT, COPY_SCRIPT
from stacks.store_stack import InferenceStoreStack
from tests.cdk.conftest import render_join
from tests.cdk.test_construct_server import actions, by_sid, only, statements

REGION = "us-east-2"
ACCOUNT = "123456789012"
MODELS = [OPEN_MODEL, "google/gemma-4-E2B-it"]


def store_stack(outdir, *, account: str | None = ACCOUNT, models=MODELS, images=("neuron",)) -> InferenceStoreStack:
    app = cdk.App(outdir=str(outdir), builtin_cloud_formation_validation=False)
    return InferenceStoreStack(
        app,
        f"InferenceStore-{REGION}",
        env=cdk.Environment(account=account, region=REGION),
        models=list(models),
        built_images=list(images),
        hf_token_secret_name="inference/hf-token",
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[InferenceStoreStack, Template]:
    stack = store_stack(tmp_path_factory.mktemp("store"))
    return stack, Template.from_stack(stack)


def test_the_store_is_retained_under_a_static_name_versioned_private_and_tls_only(built):
    _, template = built
    bucket_id, bucket = only(template, "AWS::S3::Bucket")
    # Retained, and named without a token when the account is known: what CloudFormation's import of
    # an existing resource needs (the next deploy after a `cdk destroy --all` takes it back).
    assert (bucket["DeletionPolicy"], bucket["UpdateReplacePolicy"]) == ("Retain", "Retain")
    props = bucket["Properties"]
    assert props["BucketName"] == f"inference-survey-{ACCOUNT}-{REGION}"
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert props["PublicAccessBlockConfiguration"] == dict.fromkeys(
        ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"), True
    )
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    (rule,) = props["LifecycleConfiguration"]["Rules"]
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 3}
    assert rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    (_, policy) = only(template, "AWS::S3::BucketPolicy")
    # Deleted with the stack, made again with it: CloudFormation's import of existing resources
    # takes a static name only, and a retained policy left on the kept bucket would be refused as
    # already existing at the next deploy (S3: "The bucket policy already exists on bucket").
    assert policy.get("DeletionPolicy", "Delete") == "Delete"
    statements_ = policy["Properties"]["PolicyDocument"]["Statement"]
    tls = [s for s in statements_ if s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}]
    assert tls and tls[0]["Effect"] == "Deny" and tls[0]["Action"] == "s3:*"
    # Graphs are written once: a put without If-None-Match is refused, whoever makes it.
    (once,) = [s for s in statements_ if s.get("Sid") == "GraphsAreWrittenOnce"]
    assert (once["Effect"], once["Principal"], once["Action"]) == ("Deny", {"AWS": "*"}, "s3:PutObject")
    assert once["Condition"] == {"Null": {"s3:if-none-match": "true"}}
    assert render_join(once["Resource"]) == f"<{bucket_id}.Arn>/graphs/*"


def test_without_the_account_the_name_still_carries_it(tmp_path):
    template = Template.from_stack(store_stack(tmp_path, account=None)).to_json()
    (bucket,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::S3::Bucket"]
    assert render_join(bucket["Properties"]["BucketName"]) == f"inference-survey-<AWS::AccountId>-{REGION}"


def test_each_image_the_region_builds_has_its_retained_immutable_repository(built):
    _, template = built
    (_, repository) = only(template, "AWS::ECR::Repository")
    assert (repository["DeletionPolicy"], repository["UpdateReplacePolicy"]) == ("Retain", "Retain")
    props = repository["Properties"]
    assert props["RepositoryName"] == "inference-survey/neuron"
    # A tag is the source's content hash: pushed once, it names one image forever.
    assert props["ImageTagMutability"] == "IMMUTABLE"
    assert props["ImageScanningConfiguration"] == {"ScanOnPush": True}
    (rule,) = json.loads(props["LifecyclePolicy"]["LifecyclePolicyText"])["rules"]
    assert rule["selection"]["countNumber"] == 5 and rule["action"] == {"type": "expire"}


def project(template: Template) -> tuple[str, dict[str, Any]]:
    return only(template, "AWS::CodeBuild::Project")


def test_the_copy_runs_the_copy_script_told_the_store_and_the_pinned_models(built):
    _, template = built
    _, copy = project(template)
    props = copy["Properties"]
    assert props["Name"] == COPY_PROJECT
    # No project limit: one above the account's own is refused at CreateProject (a new account's may be 0).
    assert props["Source"]["Type"] == "NO_SOURCE" and "ConcurrentBuildLimit" not in props
    assert base64.b64encode(COPY_SCRIPT.read_bytes()).decode() in props["Source"]["BuildSpec"]
    variables = {v["Name"]: render_join(v["Value"]) for v in props["Environment"]["EnvironmentVariables"]}
    assert variables == {
        "MODEL_IDS": f"{OPEN_MODEL}@{MODEL_REVISIONS[OPEN_MODEL]} google/gemma-4-E2B-it",
        "STORE_BUCKET": f"<{logical_id_of(template, 'AWS::S3::Bucket')}>",
        "ACCOUNT_ID": "<AWS::AccountId>",
        # The catalog's models are open: no token is read, and the role may read none.
        "HF_TOKEN_SECRET": "",
        "HF_HUB_VERSION": "2.4.0",
    }


def logical_id_of(template: Template, kind: str) -> str:
    return only(template, kind)[0]


def test_the_copy_may_fill_only_the_stores_weights_and_is_trusted_for_this_accounts_projects(built):
    _, template = built
    _, copy = project(template)
    role_id = copy["Properties"]["ServiceRole"]["Fn::GetAtt"][0]
    sids = by_sid(statements(template, role_id))
    bucket_id = logical_id_of(template, "AWS::S3::Bucket")
    assert render_join(sids["CopyTheWeights"]["Resource"]) == f"<{bucket_id}.Arn>/weights/*"
    assert "ReadTheHuggingFaceToken" not in sids
    # No bucket-level write: the copy makes and changes no bucket.
    assert not [a for s in sids.values() for a in actions(s) if a.startswith("s3:Put") and a != "s3:PutObject"]
    (trust,) = template.to_json()["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}


def test_a_gated_model_gives_the_copy_the_token(tmp_path):
    template = Template.from_stack(store_stack(tmp_path, models=["meta-llama/Llama-3.2-1B-Instruct"]))
    _, copy = project(template)
    role_id = copy["Properties"]["ServiceRole"]["Fn::GetAtt"][0]
    sids = by_sid(statements(template, role_id))
    assert render_join(sids["ReadTheHuggingFaceToken"]["Resource"]).endswith(":secret:inference/hf-token-??????")


def test_every_deploy_of_the_apps_stacks_in_the_region_starts_the_copy_with_no_override(built):
    _, template = built
    copy_id, _ = project(template)
    (_, rule) = only(template, "AWS::Events::Rule")
    pattern = rule["Properties"]["EventPattern"]
    (prefix,) = pattern["detail"]["stack-id"]
    assert (
        render_join(prefix["prefix"])
        == f"arn:<AWS::Partition>:cloudformation:{REGION}:<AWS::AccountId>:stack/Inference"
    )
    assert pattern["detail"]["status-details"] == {"status": ["CREATE_COMPLETE", "UPDATE_COMPLETE"]}
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [copy_id, "Arn"]} and target["Input"] == "{}"
    events_role = target["RoleArn"]["Fn::GetAtt"][0]
    denied = {next(iter(s["Condition"]["Null"])) for s in statements(template, events_role) if s["Effect"] == "Deny"}
    assert "codebuild:source.buildspec" in denied and "codebuild:environment" in denied


def test_a_region_with_no_model_to_copy_has_no_copy(tmp_path):
    template = Template.from_stack(store_stack(tmp_path, models=[]))
    template.resource_count_is("AWS::CodeBuild::Project", 0)
    template.resource_count_is("AWS::S3::Bucket", 1)


def test_the_copy_script_is_the_one_the_import_stack_runs():
    from stacks import import_stack

    assert import_stack.COPY_SCRIPT.resolve() == COPY_SCRIPT.resolve()
