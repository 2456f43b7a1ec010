"""A VPC with public subnets only and a security group that accepts nothing inbound.

Servers are reached through SSM port forwarding, never through an open port, so there is no
NAT gateway to pay for and no ingress rule to get wrong.
"""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from inference_constructs.nag import acknowledge


class SsmOnlyNetwork(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, zones: list[str], cidr: str = "10.42.0.0/16") -> None:
        super().__init__(scope, construct_id)
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(cidr),
            availability_zones=zones,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24)
            ],
            # The default group is never used; restricting it would add a Lambda-backed custom resource.
            restrict_default_security_group=False,
        )
        acknowledge(
            self.vpc,
            "AwsSolutions-VPC7",
            "No flow logs: the VPC holds only short-lived servers with no inbound rule at all (reached through SSM "
            "port forwarding); its traffic is their own outbound HTTPS to AWS and the model hub. Flow logs would bill "
            "per GB for a record of that alone.",
        )
        self.security_group = ec2.SecurityGroup(
            self,
            "ServerSecurityGroup",
            vpc=self.vpc,
            description="Inference servers: no inbound rules (SSM only); outbound HTTPS and HTTP for images and weights",
            allow_all_outbound=False,
        )
        self.security_group.add_egress_rule(
            ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "SSM, ECR, Hugging Face, CloudWatch"
        )
        self.security_group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(80), "Ubuntu package mirrors")
