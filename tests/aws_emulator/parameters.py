"""SSM parameters: the public AMI parameters moto lacks, the Tags shape CloudFormation gives, and a
record of who wrote each readiness parameter.

- The DLAMI and Neuron AMI parameters (`/aws/service/...`) are not preloaded and cannot be put
  through the API: they are appended to the SSM backend, pointing at moto's own AMIs.
- CloudFormation gives `AWS::SSM::Parameter` Tags as a map, moto expects a list.
- Every PutParameter on an `/inference/…/ready` name is recorded with its caller, read from the
  user agent's `exec-env/` part (the servers' scripts and the image build set AWS_EXECUTION_ENV):
  a test can prove that nothing but them writes readiness.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from catalog.backends import GPU_AMI_PARAMETERS, NEURON_AMI_PARAMETER

AMI_PARAMETERS = {**{path: arch for arch, path in GPU_AMI_PARAMETERS.items()}, NEURON_AMI_PARAMETER: "x86_64"}
MOTO_AMI_PARAMETERS = {
    "x86_64": "/aws/service/ami-amazon-linux-latest/amzn2-ami-hvm-x86_64-gp2",
    "arm64": "/aws/service/ami-amazon-linux-latest/amzn2-ami-hvm-arm64-gp2",
}
READINESS = re.compile(r"^/inference/[^/]+/ready$")


def seed_ami_parameters(account: str, regions: tuple[str, ...]) -> None:
    from moto.ssm.models import Parameter, ssm_backends

    for region in regions:
        backend = ssm_backends[account][region]
        for name, arch in AMI_PARAMETERS.items():
            image_id = backend.get_parameter(MOTO_AMI_PARAMETERS[arch]).value
            backend._parameters[name] = [
                Parameter(
                    account_id=account,
                    name=name,
                    value=image_id,
                    parameter_type="String",
                    description=None,
                    allowed_pattern=None,
                    keyid=None,
                    last_modified_date=time.time(),
                    version=1,
                    data_type="text",
                )
            ]


def writer(user_agent: str) -> str:
    match = re.search(r"exec-env/(\S+)", user_agent)
    return match.group(1) if match else user_agent.split(" ", 1)[0]


def install(emulator: Any) -> Callable[[], None]:
    from moto.ssm.models import Parameter
    from moto.ssm.responses import SimpleSystemManagerResponse

    original_create = Parameter.create_from_cloudformation_json.__func__
    original_put = SimpleSystemManagerResponse.put_parameter

    def create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
        tags = cloudformation_json.get("Properties", {}).get("Tags")
        if isinstance(tags, dict):
            cloudformation_json["Properties"]["Tags"] = [{"Key": k, "Value": v} for k, v in tags.items()]
        return original_create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)

    def put_parameter(response):
        name = response._get_param("Name") or ""
        if READINESS.match(name):
            emulator.readiness_writes.append(
                {
                    "region": response.region,
                    "name": name,
                    "value": response._get_param("Value"),
                    "writer": writer(response.headers.get("User-Agent", "")),
                }
            )
        return original_put(response)

    Parameter.create_from_cloudformation_json = classmethod(create)
    SimpleSystemManagerResponse.put_parameter = put_parameter

    def undo() -> None:
        Parameter.create_from_cloudformation_json = classmethod(original_create)
        SimpleSystemManagerResponse.put_parameter = original_put

    return undo
