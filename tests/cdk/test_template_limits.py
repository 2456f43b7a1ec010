"""The AWS limits the app's templates touch (catalog/aws_limits.py), checked on every synthesized
template with each token at its longest, and the check itself proven on templates made to pass
each limit by one unit: a check that cannot fail does not count."""

from __future__ import annotations

import json
from typing import Any

import pytest

from catalog.aws_limits import GENERATED_NAME_MAX, LIMITS, PSEUDO_MAX
from inference_constructs.template_limits import Resolver, Unbounded, check_template, check_templates


def test_every_synthesized_template_is_inside_every_limit(templates):
    assert check_templates(templates) == []


def test_every_launch_templates_user_data_is_at_most_4_kb_at_its_longest(templates):
    sizes = {}
    for template in templates.values():
        resolver = Resolver(template)
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] == "AWS::EC2::LaunchTemplate":
                user_data = resource["Properties"]["LaunchTemplateData"]["UserData"]
                sizes[logical_id] = len(resolver.string(user_data).encode())
    assert len(sizes) == 4 and max(sizes.values()) <= LIMITS["user-data-goal"].value, sizes


# --- the resolver -------------------------------------------------------------------------------


def template(resources: dict[str, Any], **sections: Any) -> dict[str, Any]:
    return {"Resources": resources, **sections}


def launch_template(user_data: Any) -> dict[str, Any]:
    return {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {"UserData": user_data}}}


def test_each_token_counts_at_its_longest():
    resolver = Resolver(
        template(
            {
                "Project": {"Type": "AWS::CodeBuild::Project", "Properties": {}},
                "Named": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/inference/g6"}},
                "Role": {"Type": "AWS::IAM::Role", "Properties": {}},
            }
        )
    )
    assert len(resolver.string({"Ref": "AWS::Region"})) == PSEUDO_MAX["AWS::Region"] == len("us-isof-south-1")
    assert len(resolver.string({"Ref": "AWS::URLSuffix"})) == len("amazonaws.com.cn")
    # A name CloudFormation makes is as long as the service allows; a name given is itself.
    assert len(resolver.string({"Ref": "Project"})) == GENERATED_NAME_MAX["AWS::CodeBuild::Project"] == 150
    assert resolver.string({"Ref": "Named"}) == "/inference/g6"
    arn = resolver.string({"Fn::GetAtt": ["Role", "Arn"]})
    assert arn.startswith("arn:") and arn.endswith(":role/" + "x" * 64)
    assert len(resolver.string({"Fn::Sub": "a-${AWS::AccountId}-${Named}"})) == len("a--/inference/g6") + 12
    joined = {"Fn::Join": ["/", ["a", {"Ref": "AWS::AccountId"}, "b"]]}
    assert resolver.string(joined) == "a/" + "x" * 12 + "/b"
    assert resolver.string({"Fn::Base64": joined}) == "a/" + "x" * 12 + "/b"  # the bytes before base64
    # A dynamic reference may resolve to a whole standard parameter's value.
    assert len(resolver.string("{{resolve:ssm:/some/parameter}}")) == LIMITS["parameter-value"].value


def test_a_token_it_cannot_bound_is_refused_not_guessed():
    resolver = Resolver(template({"Custom": {"Type": "Custom::Thing", "Properties": {}}}))
    with pytest.raises(Unbounded, match=r"GetAtt Custom\.Answer"):
        resolver.string({"Fn::GetAtt": ["Custom", "Answer"]})
    (line,) = check_templates({"S": template({"Lt": launch_template({"Fn::GetAtt": ["Custom", "Answer"]})})})
    assert line.startswith("S: no bound known for GetAtt Custom.Answer")


def test_user_data_small_as_written_but_over_the_limit_at_its_longest_is_caught():
    """Tokens rendered as short placeholders looked small; at their longest the data passes 16 KB."""
    refs = [{"Ref": "Project"}, "\n"] * 110
    nominal = sum(len(p) if isinstance(p, str) else len("${Token[TOKEN.123]}") for p in refs)
    assert nominal < 2_500
    breaches = check_template(
        "S",
        template(
            {
                "Project": {"Type": "AWS::CodeBuild::Project", "Properties": {}},
                "Lt": launch_template({"Fn::Base64": {"Fn::Join": ["", refs]}}),
            }
        ),
    )
    assert {b.limit for b in breaches} == {"user-data", "user-data-goal"}
    # A project name at its longest (150) and its newline, 110 times.
    assert [b.size for b in breaches] == [110 * 151, 110 * 151]


def test_a_heredoc_does_not_hide_the_script_it_carries():
    """A pattern that took `<<…>` for one token read 15 KB of a heredoc as a few bytes: every byte counts."""
    body = "cat > /etc/x <<'EOF'\n" + ("y" * 17_000) + "\nEOF\n[[ 1 > 0 ]]\n"
    breaches = check_template("S", template({"Lt": launch_template({"Fn::Base64": body})}))
    assert [b.limit for b in breaches] == ["user-data", "user-data-goal"]
    assert breaches[0].size == len(body)


def over_by_one(key: str) -> tuple[dict[str, Any], str]:
    """A template past the limit `key` by one unit, and the stack name to check it under."""
    value = LIMITS[key].value + 1
    name = "S"

    def policy(size: int) -> dict[str, Any]:
        # IAM counts the document without whitespace: pad one statement's Sid to the size asked for.
        base = {
            "Version": "2012-10-17",
            "Statement": [{"Sid": "", "Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
        }
        base["Statement"][0]["Sid"] = "A" * (size - len(json.dumps(base, separators=(",", ":"))))
        return base

    role = {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": policy(500)}}
    resources: dict[str, Any] = {}
    sections: dict[str, Any] = {}
    if key in ("user-data", "user-data-goal"):
        resources["Lt"] = launch_template({"Fn::Base64": "x" * value})
    elif key == "parameter-value":
        resources["P"] = {"Type": "AWS::SSM::Parameter", "Properties": {"Name": "/p", "Value": "v" * value}}
    elif key == "parameter-name":
        resources["P"] = {"Type": "AWS::SSM::Parameter", "Properties": {"Name": "/" + "n" * (value - 1), "Value": "v"}}
    elif key == "role-inline-policies":
        resources["R"] = role
        half = value // 2
        for index, size in enumerate((half, value - half)):
            resources[f"Policy{index}"] = {
                "Type": "AWS::IAM::Policy",
                "Properties": {"PolicyDocument": policy(size), "Roles": [{"Ref": "R"}]},
            }
    elif key == "managed-policy":
        resources["M"] = {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": policy(value)}}
    elif key == "trust-policy":
        resources["R"] = {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": policy(value)}}
    elif key == "template-body":
        resources["P"] = {"Type": "AWS::SSM::Parameter", "Properties": {"Name": "/p", "Value": "v"}}
        sections["Metadata"] = {"Pad": ""}
        sections["Metadata"]["Pad"] = "m" * (
            value - len(json.dumps(template(resources, **sections), indent=1).encode())
        )
    elif key in ("resources", "outputs", "parameters", "mappings"):
        section = {"resources": "Resources", "outputs": "Outputs", "parameters": "Parameters", "mappings": "Mappings"}
        entry = {
            "resources": {"Type": "AWS::SSM::Parameter", "Properties": {"Name": "/p", "Value": "v"}},
            "outputs": {"Value": "v"},
            "parameters": {"Type": "String", "MaxLength": 1},
            "mappings": {"k": {"k": "v"}},
        }[key]
        table = {f"E{i}": entry for i in range(value)}
        if key == "resources":
            resources = table
        else:
            sections[section[key]] = table
    elif key == "logical-id":
        resources["L" * value] = {"Type": "AWS::SSM::Parameter", "Properties": {"Name": "/p", "Value": "v"}}
    elif key == "stack-name":
        name = "S" * value
    elif key == "output-value":
        sections["Outputs"] = {"O": {"Value": "o" * value}}
    else:
        named = {
            "log-group-name": ("AWS::Logs::LogGroup", "LogGroupName"),
            "bucket-name": ("AWS::S3::Bucket", "BucketName"),
            "repository-name": ("AWS::ECR::Repository", "RepositoryName"),
            "codebuild-project-name": ("AWS::CodeBuild::Project", "Name"),
            "sagemaker-name": ("AWS::SageMaker::Endpoint", "EndpointName"),
            "schedule-name": ("AWS::Scheduler::Schedule", "Name"),
            "codebuild-description": ("AWS::CodeBuild::Project", "Description"),
            "role-description": ("AWS::IAM::Role", "Description"),
            "rule-description": ("AWS::Events::Rule", "Description"),
            "schedule-description": ("AWS::Scheduler::Schedule", "Description"),
        }
        if key not in named:
            raise AssertionError(f"no template made to pass {key}")
        kind, prop = named[key]
        properties = {prop: "n" * value}
        if kind == "AWS::IAM::Role":
            properties["AssumeRolePolicyDocument"] = policy(200)
        resources["N"] = {"Type": kind, "Properties": properties}
    return template(resources, **sections), name


# Checked on what runner.bench --in-region sends, not on a template (runner/cloud/reach/in_region.py).
NOT_IN_TEMPLATES = {"run-command-document"}


@pytest.mark.parametrize("key", sorted(set(LIMITS) - NOT_IN_TEMPLATES))
def test_each_limit_is_caught_one_unit_past_it_and_not_at_it(key):
    past, name = over_by_one(key)
    breaches = check_template(name, past)
    assert key in {b.limit for b in breaches}, (key, [b.line for b in breaches])
    (breach,) = [b for b in breaches if b.limit == key]
    assert breach.size == LIMITS[key].value + 1
    assert LIMITS[key].source in breach.line and f"{LIMITS[key].value + 1:,} > {LIMITS[key].value:,}" in breach.line


def test_every_limit_in_the_table_has_a_source():
    for key, limit in LIMITS.items():
        assert limit.value > 0 and len(limit.source) > 10 and limit.what, key


def test_deploying_md_holds_the_table_the_catalog_writes():
    from catalog.aws_limits import limits_markdown
    from tests.cdk.conftest import ROOT

    text = (ROOT / "docs/deploying.md").read_text()
    block = text.split("<!-- limits: written by catalog/aws_limits.py limits_markdown() -->\n", 1)[1]
    assert block.split("<!-- end of the limits -->", 1)[0] == limits_markdown()
