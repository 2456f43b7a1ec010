"""One EC2 model server: an Auto Scaling group of exactly one instance, across every zone given.

A capacity refusal in one zone moves the launch to the next zone with no person involved (the
group retries in its other subnets); the instance id is known only at run time, so the server
writes it, with its zone, into its readiness parameter. The instance has no inbound ports: the
server listens on loopback and is reached through SSM port forwarding. It logs to its own
CloudWatch group; both the group and the parameter belong to this construct, so `cdk destroy`
removes them.
"""

from __future__ import annotations

import json

from aws_cdk import CfnOutput, Stack, Tags
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from catalog.config import BackendConfig
from catalog.contract import BACKEND_TAG_KEY, BackendOutput, output_key
from inference_constructs.image_build import ImageBuild
from inference_constructs.instance_role import LOG_GROUP_PREFIX, PARAMETER_PREFIX
from inference_constructs.log_group import owned_log_group
from inference_constructs.nag import acknowledge
from inference_constructs.user_data import ServerBoot, render_boot_script


class ModelServer(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        backend: BackendConfig,
        vpc: ec2.IVpc,
        security_group: ec2.ISecurityGroup,
        role: iam.IRole,
        hf_token_secret_name: str,
        image_uri: str,
        image_build: ImageBuild | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        spec = backend.spec
        if not (spec.instance_type and spec.ami_parameter):
            raise ValueError(f"backend {spec.name} is not an EC2 backend")
        region = Stack.of(self).region

        self.log_group = owned_log_group(self, "Logs", f"{LOG_GROUP_PREFIX}{spec.name}")
        self.readiness = ssm.StringParameter(
            self,
            "Readiness",
            parameter_name=f"{PARAMETER_PREFIX}{spec.name}/ready",
            string_value=json.dumps({"state": "launching"}),
            description=f"Readiness of backend {spec.name}, written by the instance",
        )
        boot = ServerBoot(
            backend=spec.name,
            image=image_uri,
            model_id=spec.model_id,
            serve_args=spec.serve_flags,
            accelerator=spec.accelerator,
            host_port=spec.port,
            container_port=spec.container_port,
            health_path=spec.health_path,
            region=region,
            hf_token_secret_name=hf_token_secret_name,
            log_group=self.log_group.log_group_name,
            readiness_parameter=self.readiness.parameter_name,
            swap_gib=spec.swap_gib,
            model_argument=spec.model_argument,
            data_volume=spec.data_volume,
            image_build_hint=spec.image_build_hint,
            container_env=spec.container_env,
        )
        self.launch_template = ec2.LaunchTemplate(
            self,
            "LaunchTemplate",
            instance_type=ec2.InstanceType(spec.instance_type),
            machine_image=ec2.MachineImage.from_ssm_parameter(spec.ami_parameter, os=ec2.OperatingSystemType.LINUX),
            security_group=security_group,
            role=role,
            require_imdsv2=True,
            user_data=ec2.UserData.custom(render_boot_script(boot)),
            block_devices=[
                ec2.BlockDevice(
                    device_name="/dev/sda1",
                    volume=ec2.BlockDeviceVolume.ebs(
                        spec.root_volume_gib,
                        encrypted=True,
                        volume_type=ec2.EbsDeviceVolumeType.GP3,
                        throughput=spec.root_volume_throughput_mbs,
                        delete_on_termination=True,
                    ),
                )
            ],
        )
        self.group = autoscaling.AutoScalingGroup(
            self,
            "Group",
            vpc=vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC, availability_zones=list(backend.zones)),
            launch_template=self.launch_template,
            min_capacity=1,
            max_capacity=1,
            # A new launch template version (flags, image, model) replaces the server.
            update_policy=autoscaling.UpdatePolicy.rolling_update(max_batch_size=1, min_instances_in_service=0),
        )
        # Which backend a group (and the instance it launches) serves, for the runner and the sweep.
        Tags.of(self.group).add(BACKEND_TAG_KEY, spec.name)
        for rule, reason in (
            ("AwsSolutions-AS1", "No load balancer: one server reached over SSM; readiness is reported in SSM."),
            ("AwsSolutions-AS2", "One instance with no load balancer: EC2 status checks are the only health signal."),
            ("AwsSolutions-AS3", "Launch and capacity events are watched by runner.up, not by a notification topic."),
        ):
            acknowledge(self.group, rule, reason)
        acknowledge(
            self.launch_template,
            "AwsSolutions-EC28",
            "Detailed monitoring costs extra per instance; these are short-lived benchmark servers.",
        )

        self.output = BackendOutput(
            name=spec.name,
            kind=spec.kind.value,
            region=region,
            model_id=spec.model_id,
            port=spec.port,
            health_path=spec.health_path,
            auto_scaling_group=self.group.auto_scaling_group_name,
            zones=list(backend.zones),
            instance_type=spec.instance_type,
            readiness_parameter=self.readiness.parameter_name,
            log_group=self.log_group.log_group_name,
            image=image_uri,
            image_build_project=image_build.project.project_name if image_build else None,
            supports_tools=spec.supports_tools,
            max_total_tokens=spec.max_total_tokens,
        )
        CfnOutput(
            Stack.of(self),
            output_key(spec.name),
            value=Stack.of(self).to_json_string(self.output.to_json()),
            description=f"{spec.title}: backend contract v{self.output.contract} (JSON)",
        )
