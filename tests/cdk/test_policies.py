"""Every role an instance can act as, read from the synthesized templates: it may start no build,
write only under its own backend's prefixes, read only its own model's weights, its own backend's
graphs, its boot scripts and bench kit, write only its own readiness, read no secret of an open
model, and hold no AWS managed policy; and the check, run on roles planted to break each rule,
reports each one."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from catalog.backends import get_backend, needs_hub_token
from inference_constructs.instance_role import SSM_AGENT_ACTIONS
from tests.cdk.conftest import render_join

# What a server's role may do on every resource ("*"): the SSM agent's channels, finding its own
# group and taking it to zero (a tag condition names the group), the ECR login.
ANY_RESOURCE = {*SSM_AGENT_ACTIONS, "autoscaling:DescribeAutoScalingInstances", "autoscaling:SetDesiredCapacity",
                "ecr:GetAuthorizationToken"}  # fmt: skip
WRITES = re.compile(
    r"^(s3:(Put|Delete|Abort|Restore|Replicate)|ssm:(Put|Delete|Label)|ecr:(Put|Upload|Complete|Initiate))"
)


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def instance_roles(template: dict[str, Any]) -> dict[str, str]:
    """{role logical id: backend} for every role an instance of the template runs as, and the roles
    those may assume (their trust names the instance role)."""
    resources = template["Resources"]
    found: dict[str, str] = {}
    for group in resources.values():
        if group["Type"] != "AWS::AutoScaling::AutoScalingGroup":
            continue
        backend = next(t["Value"] for t in group["Properties"]["Tags"] if t["Key"] == "inference:backend")
        launch = resources[group["Properties"]["LaunchTemplate"]["LaunchTemplateId"]["Ref"]]
        profile = resources[launch["Properties"]["LaunchTemplateData"]["IamInstanceProfile"]["Arn"]["Fn::GetAtt"][0]]
        for role in profile["Properties"]["Roles"]:
            found[role["Ref"]] = backend
    for logical_id, resource in resources.items():
        if resource["Type"] != "AWS::IAM::Role":
            continue
        for statement in resource["Properties"]["AssumeRolePolicyDocument"]["Statement"]:
            principal = statement.get("Principal", {}).get("AWS")
            if isinstance(principal, dict) and principal.get("Fn::GetAtt", [None])[0] in found:
                found[logical_id] = found[principal["Fn::GetAtt"][0]]
    return found


def role_statements(template: dict[str, Any], role_id: str) -> list[dict[str, Any]]:
    return [
        statement
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in resource["Properties"]["Roles"]
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]


def allowed_reads(backend: str, role_id: str, template: dict[str, Any]) -> list[re.Pattern[str]]:
    model = re.escape(get_backend(backend).model_id)
    b = re.escape(backend)
    return [
        re.compile(rf"^arn:<AWS::Partition>:s3:::inference-survey-<AWS::AccountId>-[a-z0-9-]+/weights/{model}(/\*|\.complete)$"),
        re.compile(rf"^arn:<AWS::Partition>:s3:::inference-survey-<AWS::AccountId>-[a-z0-9-]+/graphs/{b}/\*$"),
        # Its boot scripts and its bench kit: one object each of the CDK's asset bucket.
        re.compile(r"^arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-\$\{AWS::AccountId\}-[a-z0-9-]+/[0-9a-f]{64}\.(gz|zip)$"),
        re.compile(rf"^<\w+\.Arn>/in-region/{b}/\*/requests\.json\.gz$"),
    ]  # fmt: skip


def violations(template: dict[str, Any]) -> list[str]:
    """What any instance role (or a role it may assume) is allowed beyond its own backend."""
    found = []
    roles = instance_roles(template)
    for role_id, backend in roles.items():
        role = template["Resources"][role_id]["Properties"]
        if role.get("ManagedPolicyArns"):
            found.append(f"{role_id} ({backend}): an AWS managed policy")
        for statement in role_statements(template, role_id):
            if statement.get("Effect", "Allow") != "Allow":
                continue
            actions = as_list(statement["Action"])
            resources = [render_join(r) for r in as_list(statement["Resource"])]
            where = f"{role_id} ({backend}) {statement.get('Sid', '?')}"
            for action in actions:
                if action.startswith("codebuild:") or action in ("iam:PassRole", "*"):
                    found.append(f"{where}: {action}")
                if action.startswith("secretsmanager:") and not needs_hub_token(get_backend(backend).model_id):
                    found.append(f"{where}: {action} for an open model")
                if "*" in resources and action not in ANY_RESOURCE:
                    found.append(f"{where}: {action} on every resource")
                if action.endswith("*") and action != "*":
                    found.append(f"{where}: the action pattern {action}")
            for resource in resources:
                if any(WRITES.match(a) for a in actions):
                    own = (f"/graphs/{backend}/*", f"/in-region/{backend}/*", f"parameter/inference/{backend}/ready")
                    if not resource.endswith(own):
                        found.append(f"{where}: writes {resource}")
                if "s3:GetObject" in actions and not any(
                    p.match(resource) for p in allowed_reads(backend, role_id, template)
                ):
                    found.append(f"{where}: reads {resource}")  # fmt: skip
                if "ssm:GetParameter" in actions and not resource.endswith(
                    (f"parameter/inference/{backend}/ready", f"parameter/inference/{backend}/graphs")
                ):
                    found.append(f"{where}: reads the parameter {resource}")
                if "sts:AssumeRole" in actions:
                    assumed = statement["Resource"]
                    if not (isinstance(assumed, dict) and roles.get(assumed.get("Fn::GetAtt", [""])[0]) == backend):
                        found.append(f"{where}: assumes {resource}")
    return found


@pytest.mark.parametrize("stack", ["InferenceGpuStack", "InferenceNeuronStack"])
def test_no_instance_role_reaches_past_its_own_backend(templates, stack):
    template = templates[stack]
    roles = instance_roles(template)
    # Each server's role, and the weights reader g6's streams with.
    assert sorted(set(roles.values())) == sorted({"InferenceGpuStack": ["g6", "g5g"], "InferenceNeuronStack": ["inf2", "trn1"]}[stack])  # fmt: skip
    assert violations(template) == []


def planted(templates, change) -> dict[str, Any]:
    """The GPU stack with one statement added to g6's instance role."""
    template = copy.deepcopy(templates["InferenceGpuStack"])
    (role_id,) = [r for r, b in instance_roles(template).items() if b == "g6" and "Reader" not in r]
    policy = next(
        p for p in template["Resources"].values() if p["Type"] == "AWS::IAM::Policy" and p["Properties"]["Roles"] == [{"Ref": role_id}]
    )  # fmt: skip
    policy["Properties"]["PolicyDocument"]["Statement"].append({"Sid": "Planted", "Effect": "Allow", **change})
    return template


STORE = "arn:aws:s3:::inference-survey-123456789012-us-east-1"


@pytest.mark.parametrize(
    ("change", "reported"),
    [
        ({"Action": "codebuild:StartBuild", "Resource": "arn:aws:codebuild:us-east-1:1:project/p"}, "codebuild:StartBuild"),
        ({"Action": "s3:PutObject", "Resource": f"{STORE}/graphs/*"}, "writes"),
        ({"Action": "s3:PutObject", "Resource": f"{STORE}/graphs/g5g/*"}, "writes"),
        ({"Action": "s3:GetObject", "Resource": f"{STORE}/graphs/g5g/*"}, "reads"),
        ({"Action": "s3:GetObject", "Resource": f"{STORE}/weights/*"}, "reads"),
        ({"Action": "secretsmanager:GetSecretValue", "Resource": "arn:aws:secretsmanager:us-east-1:1:secret:x"}, "open model"),
        ({"Action": "ssm:PutParameter", "Resource": "arn:aws:ssm:us-east-1:1:parameter/inference/g5g/ready"}, "writes"),
        ({"Action": "ssm:GetParameter", "Resource": "*"}, "every resource"),
        ({"Action": "s3:*", "Resource": f"{STORE}/graphs/g6/*"}, "the action pattern"),
        ({"Action": "sts:AssumeRole", "Resource": "arn:aws:iam::1:role/Other"}, "assumes"),
    ],
)  # fmt: skip
def test_the_check_reports_each_reach_past_the_backend(templates, change, reported):
    found = violations(planted(templates, change))
    assert [line for line in found if "Planted" in line and reported in line], found


def test_the_check_reports_a_managed_policy(templates):
    template = copy.deepcopy(templates["InferenceGpuStack"])
    role_id = next(r for r, b in instance_roles(template).items() if b == "g5g")
    template["Resources"][role_id]["Properties"]["ManagedPolicyArns"] = [
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
    ]
    assert violations(template) == [f"{role_id} (g5g): an AWS managed policy"]


def test_no_role_of_the_app_starts_a_build_but_the_rules_and_no_rule_may_override(templates):
    """Builds are started by EventBridge rules (and runner.up, with the user's own credentials):
    the only roles with codebuild:StartBuild are the rules', each denied every override."""
    for name, template in templates.items():
        for role_id, resource in template["Resources"].items():
            if resource["Type"] != "AWS::IAM::Role":
                continue
            statements = role_statements(template, role_id)
            starts = [
                s for s in statements if s.get("Effect") == "Allow" and "codebuild:StartBuild" in as_list(s["Action"])
            ]
            if not starts:
                continue
            trust = json.dumps(resource["Properties"]["AssumeRolePolicyDocument"])
            assert '"events.amazonaws.com"' in trust, (name, role_id)
            denied = {next(iter(s["Condition"]["Null"])) for s in statements if s.get("Effect") == "Deny"}
            assert {"codebuild:source.buildspec", "codebuild:environment", "codebuild:serviceRole"} <= denied, role_id
