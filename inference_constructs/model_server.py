"""One EC2 model server: an Auto Scaling group of at most one instance, across every zone given.

A capacity refusal in one zone moves the launch to the next zone with no person involved (the
group retries in its other subnets); the instance id is known only at run time, so the server
writes it, with its zone, into its readiness parameter. The instance has no inbound ports: the
server listens on loopback and is reached through SSM port forwarding. It logs to its own
CloudWatch group; both the group and the parameter belong to this construct, so `cdk destroy`
removes them.

Nothing bills without serving: the group may hold zero instances, and is at zero while the image
the app builds for it does not exist yet (the build brings it to one); the server takes its own
group to zero when it fails or is not ready within its bound (`user_data.py`); and at the deploy's
expiry a one-time Scheduler schedule takes it to zero (`time_to_live.py`; `runner.up` brings it
back). Updates of the
stack leave the group's size as it is (IgnoreUnmodifiedGroupSizeProperties), so a later deploy
neither starts a stopped server nor stops a running one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from aws_cdk import (
    Annotations,
    CfnAutoScalingRollingUpdate,
    CfnAutoScalingScheduledAction,
    CfnUpdatePolicy,
    Stack,
    Tags,
    Token,
)
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from catalog.backends import ModelArgument, WeightsLoad, needs_hub_token
from catalog.boot import disk_needed_gb, store_bucket
from catalog.config import BackendConfig
from catalog.contract import BACKEND_TAG_KEY, IMAGE_TAG_KEY
from inference_constructs import store_access
from inference_constructs.backend_output import backend_output, publish_output
from inference_constructs.image_build import ImageBuild
from inference_constructs.in_region import InRegionBench, evidence_prefix
from inference_constructs.instance_role import (
    LOG_GROUP_PREFIX,
    ServerInstanceRole,
    graphs_parameter_name,
    readiness_parameter_name,
)
from inference_constructs.log_group import owned_log_group
from inference_constructs.nag import acknowledge, finding_account
from inference_constructs.time_to_live import expiry_id, scheduled_call
from inference_constructs.user_data import (
    DEFAULT_READY_MINUTES,
    DeployValues,
    ServerBoot,
    archive_file,
    boot_archive,
    missing_image_hint,
    render_user_data,
    sha256,
)
from inference_constructs.weights_copy import COPY_PROJECT


@dataclass(frozen=True)
class ServerImage:
    """The image a server runs: its URI, the ECR repository it pulls from (None for a registry
    outside ECR), and the same image in a public registry, pulled when the first cannot be."""

    uri: str
    repository_arn: str | None = None
    fallback_uri: str = ""


def machine_image(scope: Construct, backend: BackendConfig) -> ec2.IMachineImage:
    """The AMI a server boots, never changed under a running server unless asked:
    a pinned id (context `<b>.ami`, or the one runner.up recorded for this region in
    placement.json); else, with the account known, the CDK's own lookup of the parameter, cached in
    cdk.context.json (`cdk context --reset` to take a newer one); else (a synth without an account:
    tests, previews) the parameter resolved by CloudFormation at deploy."""
    spec = backend.spec
    if backend.ami_id:
        return ec2.MachineImage.generic_linux({backend.region: backend.ami_id})
    cached = not Token.is_unresolved(Stack.of(scope).account)
    return ec2.MachineImage.from_ssm_parameter(
        spec.ami_parameter or "", os=ec2.OperatingSystemType.LINUX, cached_in_context=cached
    )


class ModelServer(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        backend: BackendConfig,
        vpc: ec2.IVpc,
        security_group: ec2.ISecurityGroup,
        hf_token_secret_name: str,
        image: ServerImage,
        image_build: ImageBuild | None = None,
        store: bool = False,
        expires_at: str | None = None,
        in_region: InRegionBench | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        spec = backend.spec
        if not (spec.instance_type and spec.ami_parameter):
            raise ValueError(f"backend {spec.name} is not an EC2 backend")
        stack = Stack.of(self)
        region = stack.region
        ready_minutes = backend.ready_minutes or DEFAULT_READY_MINUTES
        log_group_name = f"{LOG_GROUP_PREFIX}{spec.name}"

        self.log_group = owned_log_group(self, "Logs", log_group_name)
        self.readiness = ssm.StringParameter(
            self,
            "Readiness",
            parameter_name=readiness_parameter_name(spec.name),
            string_value=json.dumps(
                {
                    "state": "waiting-for-image",
                    "reason": "the deploy starts the image build, which brings this server up",
                }
                if image_build
                else {"state": "launching"}
            ),
            description=f"Readiness of backend {spec.name}, written by the instance",
        )
        self.instance_role = ServerInstanceRole(self, "Role", backend=spec.name)
        role = self.instance_role.role
        if image.repository_arn:
            self.instance_role.allow_image(image.repository_arn)
        gated = needs_hub_token(spec.model_id)
        if gated:
            self.instance_role.allow_hub_token(hf_token_secret_name)
        if image_build:
            image_build.serves(spec.name)
        # serve.sh streams only where the model is vLLM's first argument (the engine reads it from S3).
        stream = store and spec.weights_load is WeightsLoad.STREAM and spec.model_argument is ModelArgument.POSITIONAL
        self.weights_reader = None
        if store:
            self.graphs_record = ssm.StringParameter(
                self,
                "GraphsRecord",
                parameter_name=graphs_parameter_name(spec.name),
                string_value=json.dumps({"graphs": {}}),
                description=f"Compiled graphs of backend {spec.name} its servers may load, recorded by runner.up",
            )
            self.instance_role.allow_graphs_record()
            self.weights_reader = store_access.allow_server(
                role, backend=spec.name, model_id=spec.model_id, regions=spec.regions, stream=stream
            )
        if in_region:
            # runner.bench --in-region: the kit, and its evidence under this backend's prefix only.
            in_region.allow(role, spec.name)
        boot = ServerBoot(
            backend=spec.name,
            model_id=spec.model_id,
            serve_args=spec.serve_flags,
            accelerator=spec.accelerator,
            host_port=spec.port,
            container_port=spec.container_port,
            health_path=spec.health_path,
            log_group=log_group_name,
            readiness_parameter=readiness_parameter_name(spec.name),
            hf_token_secret_name=hf_token_secret_name if gated else "",
            swap_gib=spec.swap_gib,
            model_argument=spec.model_argument,
            data_volume=spec.data_volume,
            missing_image_hint=""
            if image_build
            else missing_image_hint(image.uri, spec.name, dlc=bool(image.fallback_uri)),
            container_env=spec.container_env,
            image_built=image_build is not None,
            ready_minutes=ready_minutes,
            has_store=store,
            store_regions=spec.regions if store else (),
            graphs_parameter=graphs_parameter_name(spec.name) if store else "",
            weights_load=spec.weights_load,
            compile_cache=spec.compile_cache or "",
            needs_disk_gb=disk_needed_gb(spec.image, spec.model_id),
        )
        self.boot = boot
        # The boot scripts, the units and the settings: one archive, uploaded by the CDK as a file
        # asset; the instance may read that one object.
        archive = boot_archive(boot)
        self.boot_asset = s3_assets.Asset(self, "Boot", path=str(archive_file(archive)))
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadItsBootScripts",
                actions=["s3:GetObject"],
                resources=[self.boot_asset.bucket.arn_for_objects(self.boot_asset.s3_object_key)],
            )
        )
        self.deploy_values = DeployValues(
            region=region,
            account_id=stack.account,
            image=image.uri,
            fallback_image=image.fallback_uri,
            store_bucket=store_bucket(stack.account, region) if store else "",
            weights_reader_role=self.weights_reader.role_arn if self.weights_reader else "",
            boot_bucket=self.boot_asset.s3_bucket_name,
            boot_key=self.boot_asset.s3_object_key,
            boot_sha256=sha256(archive),
        )
        self.launch_template = ec2.LaunchTemplate(
            self,
            "LaunchTemplate",
            instance_type=ec2.InstanceType(spec.instance_type),
            machine_image=machine_image(self, backend),
            security_group=security_group,
            role=role,
            require_imdsv2=True,
            # The container cannot reach the instance's credentials: one hop (the EC2 user guide,
            # "Configure the instance metadata options": a container needs 2). An engine that streams
            # its weights gets the weights reader's credentials instead (serve.sh).
            http_put_response_hop_limit=1,
            user_data=ec2.UserData.custom(render_user_data(boot, self.deploy_values)),
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
            vpc_subnets=ec2.SubnetSelection(
                subnet_type=ec2.SubnetType.PUBLIC, availability_zones=list(backend.zones) or None
            ),
            launch_template=self.launch_template,
            min_capacity=0,
            max_capacity=1,
            # One instance at creation when its image exists; none while the app builds it (the
            # build brings the group to one). Omitted, CloudFormation starts the group at its minimum.
            desired_capacity=None if image_build else 1,
        )
        if not image_build:
            Annotations.of(self.group).acknowledge_warning(
                "@aws-cdk/aws-autoscaling:desiredCapacitySet",
                "One instance at creation only: IgnoreUnmodifiedGroupSizeProperties keeps later deploys off its size.",
            )
        # Deleted before the parameters its instances write (a destroy): a server still running would
        # otherwise write its readiness again after the stack deleted it (put-parameter --overwrite
        # makes it), and the next deploy would stop at a name that exists.
        self.group.node.add_dependency(self.readiness)
        if store:
            self.group.node.add_dependency(self.graphs_record)
        cfn_group = self.group.node.default_child
        # A new launch template version (flags, image, model) replaces the server; a stack update
        # leaves the group's size alone unless the template changes it (the time-to-live and the
        # servers themselves set it).
        cfn_group.cfn_options.update_policy = CfnUpdatePolicy(
            auto_scaling_rolling_update=CfnAutoScalingRollingUpdate(max_batch_size=1, min_instances_in_service=0),
            auto_scaling_scheduled_action=CfnAutoScalingScheduledAction(ignore_unmodified_group_size_properties=True),
        )
        # Which backend a group (and the instance it launches) serves, for the runner and the sweep.
        Tags.of(self.group).add(BACKEND_TAG_KEY, spec.name)
        if image_build:
            Tags.of(self.group).add(IMAGE_TAG_KEY, image_build.folder)
        self.time_to_live = None
        if expires_at:
            group_arn = (
                f"arn:{stack.partition}:autoscaling:{region}:{stack.account}:autoScalingGroup:*:"
                f"autoScalingGroupName/{self.group.auto_scaling_group_name}"
            )
            self.time_to_live = scheduled_call(
                self,
                expires_at=expires_at,
                what=f"Take backend {spec.name}'s group to zero instances",
                api="autoscaling:updateAutoScalingGroup",
                request={
                    "AutoScalingGroupName": self.group.auto_scaling_group_name,
                    "MinSize": 0,
                    "DesiredCapacity": 0,
                },
                action="autoscaling:UpdateAutoScalingGroup",
                resource=group_arn,
                construct_id=f"TimeToLive{expiry_id(expires_at)}",
                wildcard=(
                    f"Resource::arn:<AWS::Partition>:autoscaling:{region}:{finding_account(stack)}:autoScalingGroup:*:"
                    f"autoScalingGroupName/<{stack.resolve(stack.get_logical_id(cfn_group))}>",
                    "The group's ARN holds an id CloudFormation does not return; its name names the one group.",
                ),
            )
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

        self.output = backend_output(
            backend,
            stack,
            auto_scaling_group=self.group.auto_scaling_group_name,
            zones=list(backend.zones) or list(vpc.availability_zones),
            instance_type=spec.instance_type,
            readiness_parameter=self.readiness.parameter_name,
            log_group=self.log_group.log_group_name,
            image=image.uri,
            image_build_project=image_build.project.project_name if image_build else None,
            supports_tools=spec.supports_tools,
            max_total_tokens=spec.max_total_tokens,
            expires_at=expires_at,
            ready_minutes=ready_minutes,
            evidence_bucket=in_region.bucket.bucket_name if in_region else None,
            evidence_prefix=evidence_prefix(spec.name) if in_region else None,
            bench_kit=in_region.kit_url if in_region else None,
            store_bucket=store_bucket(stack.account, region) if store else None,
            weights_job=COPY_PROJECT if store else None,
            graphs_record=graphs_parameter_name(spec.name) if store else None,
        )
        publish_output(stack, backend, self.output)
