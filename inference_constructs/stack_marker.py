"""A parameter every stack owns: which backends it holds and where, even when it holds none.

A stack with no enabled backend still exists (this parameter is its one resource, and it is free),
so narrowing `backends` empties a stack instead of dropping it from the app, and
`cdk destroy --all` always sees every stack. `runner.up` and the sweep read it to find the app's
stacks in any region.
"""

from __future__ import annotations

import json

from aws_cdk import Stack
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from catalog.config import StackConfig
from inference_constructs.instance_role import PARAMETER_PREFIX

MARKER_PREFIX = f"{PARAMETER_PREFIX}stacks/"


def marker_parameter_name(stack: str) -> str:
    return f"{MARKER_PREFIX}{stack}"


class StackMarker(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: StackConfig) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.parameter = ssm.StringParameter(
            self,
            "Parameter",
            parameter_name=marker_parameter_name(config.name),
            string_value=json.dumps(
                {
                    "stack": config.name,
                    "region": config.region,
                    "candidate_regions": list(config.candidate_regions),
                    "backends": [b.name for b in config.backends],
                },
                separators=(",", ":"),
            ),
            description=f"Backends of {stack.stack_name} (inference survey app)",
        )
