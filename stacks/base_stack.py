"""Network and identity shared by every server; kept between benchmark runs."""

from __future__ import annotations

from aws_cdk import Stack
from constructs import Construct

from inference_constructs import ServerInstanceRole, SsmOnlyNetwork


class InferenceBaseStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, zones: list[str], hf_token_secret_name: str, **kwargs):
        super().__init__(scope, construct_id, **kwargs)
        network = SsmOnlyNetwork(self, "Network", zones=zones)
        self.vpc = network.vpc
        self.security_group = network.security_group
        self.instance_role = ServerInstanceRole(self, "ServerRole", hf_token_secret_name=hf_token_secret_name).role
        self.hf_token_secret_name = hf_token_secret_name
