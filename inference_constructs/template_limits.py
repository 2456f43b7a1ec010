"""Every synthesized template held to the AWS limits it touches (catalog/aws_limits.py), with each
CloudFormation token counted at the longest value it can resolve to.

`worst(value, template)` resolves a template value the way CloudFormation would, but with every
token (a pseudo parameter, a parameter, a Ref or GetAtt of a resource, a dynamic reference)
replaced by a string as long as that token can ever be: a literal name where the template gives
one, else the service's own limit on the name (catalog/aws_limits.py GENERATED_NAME_MAX), and an
ARN built from those. What it cannot bound (an attribute it does not know) it refuses, naming it,
rather than guess: a check that meets an unknown token fails instead of passing.

`check_template` returns each limit a template passes, in one line each; app.py runs it on every
synth and refuses the deploy, and the tests run it on the synthesized templates and on templates
made to pass each limit (tests/cdk/test_template_limits.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from catalog.aws_limits import (
    AMI_ID_MAX,
    AZ_NAME_MAX,
    DYNAMIC_REFERENCE_MAX,
    GENERATED_NAME_MAX,
    LIMITS,
    PSEUDO_MAX,
)

FILLER = "x"
DYNAMIC_REFERENCE = re.compile(r"\{\{resolve:(ssm|ssm-secure|secretsmanager):[^}]*\}\}")
SUB_VARIABLE = re.compile(r"\$\{(?!!)([^}]+)\}")


class Unbounded(Exception):
    """A token whose longest value this module does not know."""


@dataclass(frozen=True)
class Breach:
    stack: str
    where: str
    limit: str
    size: int

    @property
    def line(self) -> str:
        limit = LIMITS[self.limit]
        return f"{self.stack} {self.where}: {self.size:,} > {limit.value:,} ({limit.what}; {limit.source})"


# The property that holds a resource's name, where the template may give it.
NAME_PROPERTY = {
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::InstanceProfile": "InstanceProfileName",
    "AWS::CodeBuild::Project": "Name",
    "AWS::S3::Bucket": "BucketName",
    "AWS::ECR::Repository": "RepositoryName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::SSM::Parameter": "Name",
    "AWS::AutoScaling::AutoScalingGroup": "AutoScalingGroupName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::Events::Rule": "Name",
    "AWS::Scheduler::Schedule": "Name",
    "AWS::SageMaker::Endpoint": "EndpointName",
    "AWS::SageMaker::EndpointConfig": "EndpointConfigName",
    "AWS::SageMaker::Model": "ModelName",
}
# Ids EC2 makes: a prefix and 17 hexadecimal digits (EC2 API Reference: resource ids).
EC2_IDS = {
    "AWS::EC2::VPC": "vpc-",
    "AWS::EC2::Subnet": "subnet-",
    "AWS::EC2::SecurityGroup": "sg-",
    "AWS::EC2::LaunchTemplate": "lt-",
    "AWS::EC2::InternetGateway": "igw-",
    "AWS::EC2::RouteTable": "rtb-",
    "AWS::EC2::VPCGatewayAttachment": "igw-",
}
# What Ref gives where it is not the name (CloudFormation's return values of each type).
REF_IS_ARN = {"AWS::SNS::Topic", "AWS::SageMaker::Endpoint", "AWS::SageMaker::EndpointConfig", "AWS::SageMaker::Model"}


def _fill(length: int) -> str:
    return FILLER * length


def _pseudo(name: str) -> str:
    return _fill(PSEUDO_MAX[name])


def _arn(service: str, resource: str, *, region: bool = True, account: bool = True) -> str:
    parts = [
        "arn",
        _pseudo("AWS::Partition"),
        service,
        _pseudo("AWS::Region") if region else "",
        _pseudo("AWS::AccountId") if account else "",
        resource,
    ]
    return ":".join(parts)


class Resolver:
    def __init__(self, template: dict[str, Any]) -> None:
        self.template = template
        self.resources: dict[str, Any] = template.get("Resources", {})
        self.parameters: dict[str, Any] = template.get("Parameters", {})
        self.mappings: dict[str, Any] = template.get("Mappings", {})

    # --- names and attributes ---------------------------------------------------------------

    def name(self, logical_id: str) -> str:
        resource = self.resources[logical_id]
        kind = resource["Type"]
        given = resource.get("Properties", {}).get(NAME_PROPERTY.get(kind, ""))
        if given is not None:
            return self.string(given)
        if kind in GENERATED_NAME_MAX:
            return _fill(GENERATED_NAME_MAX[kind])
        raise Unbounded(f"the name of {logical_id} ({kind})")

    def ref(self, name: str) -> str:
        if name in PSEUDO_MAX:
            return _pseudo(name)
        if name in self.parameters:
            parameter = self.parameters[name]
            if parameter.get("Type") == "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>":
                return _fill(AMI_ID_MAX)
            if "MaxLength" in parameter:
                return _fill(int(parameter["MaxLength"]))
            if parameter.get("AllowedValues"):
                return _fill(max(len(str(v)) for v in parameter["AllowedValues"]))
            raise Unbounded(f"parameter {name} (no MaxLength)")
        if name not in self.resources:
            raise Unbounded(f"Ref {name}")
        kind = self.resources[name]["Type"]
        if kind in EC2_IDS:
            return EC2_IDS[kind] + _fill(17)
        if kind in REF_IS_ARN:
            return self.get_att(name, "Arn")
        return self.name(name)

    def get_att(self, logical_id: str, attribute: str) -> str:
        if logical_id not in self.resources:
            raise Unbounded(f"GetAtt {logical_id}.{attribute}")
        kind = self.resources[logical_id]["Type"]
        properties = self.resources[logical_id].get("Properties", {})
        if kind in EC2_IDS and attribute in ("GroupId", "VpcId", "LaunchTemplateId", "SubnetId"):
            return self.ref(logical_id)
        if kind == "AWS::EC2::LaunchTemplate" and attribute in ("LatestVersionNumber", "DefaultVersionNumber"):
            return _fill(20)
        if attribute == "Arn" or (kind in REF_IS_ARN and attribute.endswith("Arn")):
            return self.arn(logical_id, kind, properties)
        simple = {
            ("AWS::SageMaker::Endpoint", "EndpointName"),
            ("AWS::SageMaker::EndpointConfig", "EndpointConfigName"),
            ("AWS::SageMaker::Model", "ModelName"),
            ("AWS::SNS::Topic", "TopicName"),
            ("AWS::IAM::Role", "RoleId"),
        }
        if (kind, attribute) in simple:
            return self.name(logical_id) if attribute != "RoleId" else _fill(21)
        if kind == "AWS::S3::Bucket" and attribute == "DomainName":
            return f"{self.name(logical_id)}.s3.{_pseudo('AWS::URLSuffix')}"
        if kind == "AWS::S3::Bucket" and attribute == "RegionalDomainName":
            return f"{self.name(logical_id)}.s3.{_pseudo('AWS::Region')}.{_pseudo('AWS::URLSuffix')}"
        if kind == "AWS::ECR::Repository" and attribute == "RepositoryUri":
            return f"{_pseudo('AWS::AccountId')}.dkr.ecr.{_pseudo('AWS::Region')}.{_pseudo('AWS::URLSuffix')}/" + (
                self.name(logical_id)
            )
        raise Unbounded(f"GetAtt {logical_id}.{attribute} ({kind})")

    def arn(self, logical_id: str, kind: str, properties: dict[str, Any]) -> str:
        name = self.name(logical_id) if kind in GENERATED_NAME_MAX else ""
        if kind == "AWS::IAM::Role":
            path = self.string(properties.get("Path", "/"))
            return _arn("iam", f"role{path}{name}", region=False)
        if kind == "AWS::IAM::InstanceProfile":
            return _arn("iam", f"instance-profile/{name}", region=False)
        patterns = {
            "AWS::S3::Bucket": ("s3", name, False, False),
            "AWS::CodeBuild::Project": ("codebuild", f"project/{name}", True, True),
            "AWS::Logs::LogGroup": ("logs", f"log-group:{name}:*", True, True),
            "AWS::ECR::Repository": ("ecr", f"repository/{name}", True, True),
            "AWS::SNS::Topic": ("sns", name, True, True),
            "AWS::Events::Rule": ("events", f"rule/{name}", True, True),
            "AWS::Scheduler::Schedule": ("scheduler", f"schedule/default/{name}", True, True),
            "AWS::SageMaker::Endpoint": ("sagemaker", f"endpoint/{name}", True, True),
            "AWS::SageMaker::EndpointConfig": ("sagemaker", f"endpoint-config/{name}", True, True),
            "AWS::SageMaker::Model": ("sagemaker", f"model/{name}", True, True),
            "AWS::SSM::Parameter": ("ssm", f"parameter/{name}", True, True),
        }
        if kind not in patterns:
            raise Unbounded(f"GetAtt {logical_id}.Arn ({kind})")
        service, resource, region, account = patterns[kind]
        return _arn(service, resource, region=region, account=account)

    # --- values -----------------------------------------------------------------------------

    def string(self, value: Any) -> str:
        resolved = self.worst(value)
        if isinstance(resolved, list):
            raise Unbounded(f"a list where a string is expected: {json.dumps(value)[:80]}")
        return resolved if isinstance(resolved, str) else json.dumps(resolved)

    def worst(self, value: Any) -> Any:
        """`value` with every token at its longest."""
        if isinstance(value, str):
            return DYNAMIC_REFERENCE.sub(lambda _: _fill(DYNAMIC_REFERENCE_MAX), value)
        if isinstance(value, list):
            return [self.worst(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1 or not next(iter(value)).startswith(("Fn::", "Ref")) or "Condition" in value:
            return {k: self.worst(v) for k, v in value.items()}
        ((function, argument),) = value.items()
        if function == "Ref":
            return self.ref(argument)
        if function == "Fn::GetAtt":
            logical_id, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
            return self.get_att(logical_id, attribute)
        if function == "Fn::Join":
            separator, items = argument
            parts = self.worst(items)
            if not isinstance(parts, list):
                raise Unbounded(f"Fn::Join of {json.dumps(items)[:80]}")
            return separator.join(p if isinstance(p, str) else json.dumps(p) for p in parts)
        if function == "Fn::Sub":
            text, variables = (argument, {}) if isinstance(argument, str) else argument
            return SUB_VARIABLE.sub(lambda m: self.sub_variable(m.group(1), variables), text)
        if function == "Fn::Base64":
            return self.string(argument)  # the limits count the bytes before base64
        if function == "Fn::GetAZs":
            return [_fill(AZ_NAME_MAX)] * 6
        if function == "Fn::Select":
            _, items = argument
            options = self.worst(items)
            return max((o for o in options), key=lambda o: len(o) if isinstance(o, str) else len(json.dumps(o)))
        if function == "Fn::FindInMap":
            return self.find_in_map(argument)
        if function == "Fn::If":
            _, yes, no = argument
            options = [self.worst(yes), self.worst(no)]
            return max(options, key=lambda o: len(json.dumps(o)))
        if function == "Fn::Split":
            separator, text = argument
            return self.string(text).split(separator)
        if function == "Fn::ImportValue":
            raise Unbounded("Fn::ImportValue (no stack of this app imports another's exports)")
        raise Unbounded(function)

    def sub_variable(self, name: str, variables: dict[str, Any]) -> str:
        if name in variables:
            return self.string(variables[name])
        if "." in name:
            logical_id, attribute = name.split(".", 1)
            return self.get_att(logical_id, attribute)
        return self.ref(name)

    def find_in_map(self, argument: list[Any]) -> str:
        mapping, first, second = argument
        table = self.mappings[mapping]
        firsts = [self.string(first)] if isinstance(first, str) else list(table)
        values = []
        for key in firsts:
            row = table.get(key, {})
            seconds = [second] if isinstance(second, str) else list(row)
            values += [row[k] for k in seconds if k in row]
        if not values:
            raise Unbounded(f"Fn::FindInMap {mapping}")
        return max((self.string(v) for v in values), key=len)


def compact_size(document: Any) -> int:
    """Characters of a policy document as IAM counts them: JSON without whitespace."""
    return len(json.dumps(document, separators=(",", ":"), ensure_ascii=False))


def _size(value: str) -> int:
    return len(value.encode())


def check_template(stack: str, template: dict[str, Any]) -> list[Breach]:
    """Each limit of catalog/aws_limits.py that `template` passes at its longest, in one line each;
    a token the resolver cannot bound raises Unbounded."""
    resolver = Resolver(template)
    breaches: list[Breach] = []

    def over(where: str, limit: str, size: int) -> None:
        if size > LIMITS[limit].value:
            breaches.append(Breach(stack, where, limit, size))

    over("stack name", "stack-name", len(stack))
    # As the CDK writes the file it uploads (JSON indented by one space), not a compact dump.
    over("template", "template-body", len(json.dumps(template, indent=1).encode()))
    for section, limit in (("Resources", "resources"), ("Outputs", "outputs"), ("Parameters", "parameters")):
        over(section, limit, len(template.get(section, {})))
    over("Mappings", "mappings", len(template.get("Mappings", {})))
    inline: dict[str, int] = {}
    for logical_id, resource in template.get("Resources", {}).items():
        over(f"logical id {logical_id[:40]}…", "logical-id", len(logical_id))
        kind, properties = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::EC2::LaunchTemplate":
            user_data = properties.get("LaunchTemplateData", {}).get("UserData")
            if user_data is not None:
                size = _size(resolver.string(user_data))
                over(f"{logical_id} user data", "user-data", size)
                over(f"{logical_id} user data", "user-data-goal", size)
        elif kind == "AWS::SSM::Parameter":
            over(f"{logical_id} value", "parameter-value", len(resolver.string(properties.get("Value", ""))))
            over(f"{logical_id} name", "parameter-name", len(resolver.string(properties.get("Name", ""))))
        elif kind == "AWS::IAM::Role":
            over(
                f"{logical_id} trust policy",
                "trust-policy",
                compact_size(resolver.worst(properties["AssumeRolePolicyDocument"])),
            )
            for policy in properties.get("Policies", []):
                inline[logical_id] = inline.get(logical_id, 0) + compact_size(resolver.worst(policy["PolicyDocument"]))
        elif kind == "AWS::IAM::Policy":
            size = compact_size(resolver.worst(properties["PolicyDocument"]))
            for role in properties.get("Roles", []):
                if isinstance(role, dict) and "Ref" in role:
                    inline[role["Ref"]] = inline.get(role["Ref"], 0) + size
        elif kind == "AWS::IAM::ManagedPolicy":
            over(f"{logical_id}", "managed-policy", compact_size(resolver.worst(properties["PolicyDocument"])))
        limit = {
            "AWS::Logs::LogGroup": "log-group-name",
            "AWS::S3::Bucket": "bucket-name",
            "AWS::ECR::Repository": "repository-name",
            "AWS::CodeBuild::Project": "codebuild-project-name",
            "AWS::SageMaker::Endpoint": "sagemaker-name",
            "AWS::SageMaker::EndpointConfig": "sagemaker-name",
            "AWS::SageMaker::Model": "sagemaker-name",
            "AWS::Scheduler::Schedule": "schedule-name",
        }.get(kind)
        name = properties.get(NAME_PROPERTY.get(kind, ""))
        if limit and name is not None:
            over(f"{logical_id} name", limit, len(resolver.string(name)))
        described = {
            "AWS::CodeBuild::Project": "codebuild-description",
            "AWS::IAM::Role": "role-description",
            "AWS::Events::Rule": "rule-description",
            "AWS::Scheduler::Schedule": "schedule-description",
        }.get(kind)
        if described and "Description" in properties:
            over(f"{logical_id} description", described, len(resolver.string(properties["Description"])))
    for role, size in inline.items():
        over(f"{role} inline policies", "role-inline-policies", size)
    for key, output in template.get("Outputs", {}).items():
        over(f"output {key}", "output-value", len(resolver.string(output["Value"])))
    return breaches


def check_templates(templates: dict[str, dict[str, Any]]) -> list[str]:
    """One line per breach (or per token no bound is known for) over every template."""
    lines = []
    for stack, template in templates.items():
        try:
            lines += [b.line for b in check_template(stack, template)]
        except Unbounded as error:
            lines.append(f"{stack}: no bound known for {error}; add one to inference_constructs/template_limits.py")
    return lines
