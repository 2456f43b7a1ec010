"""ImageBuild alone in a bare Stack: the CodeBuild project on the catalog's compute
(catalog/builds.py), privileged for Docker, pushing to a repository it does not own, its log
group, its role and the stack event that starts it; and image_build_for, which shares one build
per folder. The whole-app tests keep what needs a whole stack (inf2 and trn1 sharing one build in
the Neuron stack, the servers pulling what it pushes)."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Stack
from aws_cdk.assertions import Match, Template

from catalog import Architecture
from catalog.backends import get_backend
from catalog.builds import COMPUTE_TYPES, IMAGE_BUILDS, image_build, repository_name
from inference_constructs.image_build import BUILD_SCRIPT, IMAGES_DIR, ImageBuild, image_build_for
from tests.cdk.conftest import render_join
from tests.cdk.test_construct_server import EXPIRY, REGION, actions, bare_stack, by_sid, logical_id, only, statements

# Each image the catalog builds, on the architecture of the server that runs it.
ARCHITECTURES = {
    "vllm-sm75": Architecture.ARM64,
    "neuron": Architecture.X86_64,
    "llama-serverless": Architecture.X86_64,
}
# docs/stacks.md: ARM XLarge for vllm-sm75 (up to 8 hours), Linux Large for the others.
DOCUMENTED = {
    "vllm-sm75": ("ARM_CONTAINER", "BUILD_GENERAL1_XLARGE", 480),
    "neuron": ("LINUX_CONTAINER", "BUILD_GENERAL1_LARGE", 60),
    "llama-serverless": ("LINUX_CONTAINER", "BUILD_GENERAL1_LARGE", 60),
}
BUILD_IMAGES = {
    Architecture.ARM64: ("ARM_CONTAINER", "aws/codebuild/amazonlinux2-aarch64-standard:3.0"),
    Architecture.X86_64: ("LINUX_CONTAINER", "aws/codebuild/standard:7.0"),
}


def test_every_image_the_catalog_builds_is_covered_here():
    assert sorted(ARCHITECTURES) == sorted(IMAGE_BUILDS)


@pytest.fixture(scope="module", params=sorted(ARCHITECTURES))
def built(request, tmp_path_factory) -> tuple[ImageBuild, Template]:
    folder = request.param
    stack = bare_stack(tmp_path_factory.mktemp(f"build-{folder}"))
    build = ImageBuild(
        stack, "Build", folder=IMAGES_DIR / folder, architecture=ARCHITECTURES[folder], expires_at=EXPIRY
    )
    return build, Template.from_stack(stack)


def project_of(built: tuple[ImageBuild, Template]) -> dict[str, Any]:
    build, template = built
    return template.to_json()["Resources"][logical_id(build.project)]["Properties"]


def test_the_project_runs_on_the_catalogs_compute_privileged_on_the_servers_architecture(built):
    build, _ = built
    spec = image_build(build.folder)
    environment = project_of(built)["Environment"]
    kind, image = BUILD_IMAGES[ARCHITECTURES[build.folder]]
    # arm64 compute for an arm64 server (never under emulation); ARM XLarge for vLLM's kernels.
    assert (environment["Type"], environment["Image"]) == (kind, image)
    assert environment["ComputeType"] == COMPUTE_TYPES[spec.compute]
    assert environment["PrivilegedMode"] is True  # docker build needs the Docker daemon
    assert project_of(built)["TimeoutInMinutes"] == spec.timeout_hours * 60


def test_the_docs_compute_arm_xlarge_for_vllm_and_linux_large_for_the_others(built):
    """docs/stacks.md's numbers themselves, so a change to catalog/builds.py shows here too."""
    build, _ = built
    environment = project_of(built)["Environment"]
    found = (environment["Type"], environment["ComputeType"], project_of(built)["TimeoutInMinutes"])
    assert found == DOCUMENTED[build.folder]


def test_no_project_limit_and_the_folders_asset_with_the_build_script(built):
    """No ConcurrentBuildLimit: CreateProject refuses one above the account's limit (a new account's
    may be 0), and two builds of one image end with one image (image_build.sh)."""
    build, _ = built
    project = project_of(built)
    assert "ConcurrentBuildLimit" not in project
    assert project["Source"]["Type"] == "S3"
    assert render_join(project["Source"]["Location"]).endswith(f"/{build.source.s3_object_key}")
    spec = json.loads(project["Source"]["BuildSpec"])
    (command,) = spec["phases"]["build"]["commands"]
    encoded = re.search(r"echo (\S+) \| base64 -d", command).group(1)
    assert base64.b64decode(encoded).decode() == BUILD_SCRIPT.read_text()


def test_the_build_is_told_its_image_and_the_expiry(built):
    build, _ = built
    variables = {v["Name"]: v["Value"] for v in project_of(built)["Environment"]["EnvironmentVariables"]}
    assert set(variables) == {"IMAGE_URI", "IMAGE_FOLDER", "EXPIRES_AT"}
    # Tagged with the folder's content hash: a changed Dockerfile is a new tag, a new launch template.
    assert build.tag == build.source.asset_hash[:16] and re.fullmatch(r"[0-9a-f]{16}", build.tag)
    assert render_join(variables["IMAGE_URI"]) == (
        f"<AWS::AccountId>.dkr.ecr.{REGION}.<AWS::URLSuffix>/{repository_name(build.folder)}:{build.tag}"
    )
    # The URI the servers are given is the one the build pushes.
    assert Stack.of(build).resolve(build.image_uri) == variables["IMAGE_URI"]
    assert (variables["IMAGE_FOLDER"], variables["EXPIRES_AT"]) == (build.folder, EXPIRY)


def test_the_repository_is_not_the_stacks(built):
    """The region's store stack holds it (retained), so the next survey finds its image built."""
    build, template = built
    template.resource_count_is("AWS::ECR::Repository", 0)
    assert build.repository_name == repository_name(build.folder) == f"inference-survey/{build.folder}"


def test_the_build_logs_to_its_own_group_kept_two_weeks(built):
    build, template = built
    (group_id, group) = only(template, "AWS::Logs::LogGroup")
    assert group["Properties"] == {"LogGroupName": f"/inference/build/{build.folder}", "RetentionInDays": 14}
    assert (group["DeletionPolicy"], group["UpdateReplacePolicy"]) == ("Delete", "Delete")
    assert project_of(built)["LogsConfig"] == {"CloudWatchLogs": {"GroupName": {"Ref": group_id}, "Status": "ENABLED"}}


def test_the_build_role_pushes_to_its_one_repository_and_touches_only_the_servers_of_its_image(built):
    build, template = built
    role_id = project_of(built)["ServiceRole"]["Fn::GetAtt"][0]
    (trust,) = template.to_json()["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "codebuild.amazonaws.com"}
    # Trusted for this account's own projects only (the confused deputy: inference_constructs/service_roles.py).
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert render_join(trust["Condition"]["ArnLike"]["aws:SourceArn"]) == (
        f"arn:<AWS::Partition>:codebuild:{REGION}:<AWS::AccountId>:project/*"
    )
    sids = by_sid(statements(template, role_id))
    assert set(sids) - {"ReadAndReportItsServersReadiness"} == {
        "EcrLogin",
        "PushToItsRepository",
        "ReadItsSource",
        "FindTheServers",
        "BringBackTheServersOfThisImage",
        "SeeItsOwnBuilds",
    }
    # It reads which builds of its own project run (an earlier one building the same image), nothing more.
    assert sorted(actions(sids["SeeItsOwnBuilds"])) == ["codebuild:BatchGetBuilds", "codebuild:ListBuildsForProject"]
    assert sids["SeeItsOwnBuilds"]["Resource"] == {"Fn::GetAtt": [logical_id(build.project), "Arn"]}
    repository_arn = f"arn:<AWS::Partition>:ecr:{REGION}:<AWS::AccountId>:repository/inference-survey/{build.folder}"
    assert render_join(sids["PushToItsRepository"]["Resource"]) == repository_arn
    assert "ecr:PutImage" in actions(sids["PushToItsRepository"])
    # The repository is the store stack's: the build makes, changes and deletes none.
    for action in (
        "ecr:CreateRepository",
        "ecr:PutLifecyclePolicy",
        "ecr:DeleteRepository",
        "ecr:PutImageTagMutability",
    ):
        assert action not in json.dumps(statements(template, role_id)), action
    # Its source, that one object (not the whole bootstrap bucket).
    assert render_join(sids["ReadItsSource"]["Resource"]).endswith(f"/{build.source.s3_object_key}")
    assert sids["BringBackTheServersOfThisImage"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/inference:image": build.folder}
    }
    # It runs nothing on a server (a new image is a new tag and a new server): no Run Command.
    assert "ssm:SendCommand" not in json.dumps(statements(template, role_id))


def test_the_build_reads_and_writes_the_readiness_of_its_own_servers_only(tmp_path):
    stack = bare_stack(tmp_path)
    build = ImageBuild(stack, "Build", folder=IMAGES_DIR / "neuron", architecture=Architecture.X86_64)
    build.serves("inf2")
    build.serves("trn1")
    template = Template.from_stack(stack)
    role_id = template.to_json()["Resources"][logical_id(build.project)]["Properties"]["ServiceRole"]["Fn::GetAtt"][0]
    readiness = by_sid(statements(template, role_id))["ReadAndReportItsServersReadiness"]
    assert sorted(render_join(r).rsplit(":", 1)[1] for r in readiness["Resource"]) == [
        "parameter/inference/inf2/ready",
        "parameter/inference/trn1/ready",
    ]


def test_every_create_or_update_of_the_stack_starts_the_build_with_no_lambda_and_no_override(built):
    build, template = built
    (_, rule) = only(template, "AWS::Events::Rule")
    assert rule["Properties"]["EventPattern"] == {
        "source": ["aws.cloudformation"],
        "detail-type": ["CloudFormation Stack Status Change"],
        "detail": {
            "stack-id": [{"Ref": "AWS::StackId"}],
            "status-details": {"status": ["CREATE_COMPLETE", "UPDATE_COMPLETE"]},
        },
    }
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [logical_id(build.project), "Arn"]}
    # An empty request: the project as it is, not the event itself as StartBuild's request.
    assert target["Input"] == "{}" and "InputTransformer" not in target
    # The rule's role may start this one project and nothing else, and never with an override of
    # what the project runs or as whom.
    events_role = target["RoleArn"]["Fn::GetAtt"][0]
    allowed = [s for s in statements(template, events_role) if s["Effect"] == "Allow"]
    assert [(actions(s), s["Resource"]) for s in allowed] == [
        (["codebuild:StartBuild"], {"Fn::GetAtt": [logical_id(build.project), "Arn"]})
    ]
    denied = {next(iter(s["Condition"]["Null"])) for s in statements(template, events_role) if s["Effect"] == "Deny"}
    assert {
        "codebuild:source.buildspec",
        "codebuild:environment",
        "codebuild:serviceRole",
        "codebuild:source",
    } <= denied
    template.resource_count_is("AWS::Lambda::Function", 0)


def test_without_an_expiry_the_build_brings_servers_back_whenever_it_ends(tmp_path):
    stack = bare_stack(tmp_path)
    ImageBuild(stack, "Build", folder=IMAGES_DIR / "neuron", architecture=Architecture.X86_64)
    Template.from_stack(stack).has_resource_properties(
        "AWS::CodeBuild::Project",
        {
            "Environment": {
                "EnvironmentVariables": Match.array_with([{"Name": "EXPIRES_AT", "Type": "PLAINTEXT", "Value": ""}])
            }
        },
    )


def test_a_satellites_build_logs_under_a_name_of_its_own(tmp_path):
    """A backend moved to another region on its own may later share that region with its family."""
    stack = bare_stack(tmp_path)
    ImageBuild(stack, "Build", folder=IMAGES_DIR / "neuron", architecture=Architecture.X86_64, name_suffix="-inf2")
    Template.from_stack(stack).has_resource_properties(
        "AWS::Logs::LogGroup", {"LogGroupName": "/inference/build/neuron-inf2"}
    )


def test_a_folder_the_catalog_does_not_list_gets_linux_large_for_two_hours(tmp_path):
    folder = tmp_path / "images" / "custom"
    shutil.copytree(IMAGES_DIR / "neuron", folder)
    stack = bare_stack(tmp_path / "out")
    ImageBuild(stack, "Build", folder=folder, architecture=Architecture.X86_64)
    Template.from_stack(stack).has_resource_properties(
        "AWS::CodeBuild::Project",
        {
            "Environment": Match.object_like({"ComputeType": "BUILD_GENERAL1_LARGE", "Type": "LINUX_CONTAINER"}),
            "TimeoutInMinutes": 120,
        },
    )


def test_one_build_per_folder_shared_by_the_backends_that_use_it(tmp_path: Path):
    stack = bare_stack(tmp_path)
    builds: dict[str, ImageBuild] = {}
    assert image_build_for(stack, get_backend("g6"), builds) is None  # AWS's own image: nothing to build
    inf2 = image_build_for(stack, get_backend("inf2"), builds)
    trn1 = image_build_for(stack, get_backend("trn1"), builds)
    g5g = image_build_for(stack, get_backend("g5g"), builds)
    assert inf2 is trn1 and inf2 is not g5g
    assert sorted(builds) == ["neuron", "vllm-sm75"]
    assert (inf2.node.id, g5g.node.id) == ("BuildNeuron", "BuildVllmSm75")
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::CodeBuild::Project", 2)
    template.has_resource_properties(
        "AWS::CodeBuild::Project",
        {"Environment": Match.object_like({"Type": "ARM_CONTAINER", "ComputeType": "BUILD_GENERAL1_XLARGE"})},
    )
