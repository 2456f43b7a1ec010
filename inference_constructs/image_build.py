"""An image the app builds itself: an ECR repository it owns and a CodeBuild project that builds
`images/<folder>` on the server's own architecture (arm64 compute for g5g: never under emulation)
and pushes it there, tagged with the folder's content hash, so a changed Dockerfile is a new tag
and a new launch template. `python -m runner.images build BACKEND` starts the build and follows it.

`cdk destroy` removes the repository with its images (empty_on_delete), so nothing is left billing.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from catalog import Architecture
from inference_constructs.log_group import owned_log_group
from inference_constructs.nag import acknowledge

REPOSITORY_PREFIX = "inference-survey/"
KEEP_IMAGES = 5
BUILD_SPEC = {
    "version": "0.2",
    "phases": {
        "pre_build": {
            "commands": [
                'aws ecr get-login-password --region "$AWS_REGION" | '
                'docker login --username AWS --password-stdin "${IMAGE_URI%%/*}"',
            ]
        },
        "build": {"commands": ['docker build --tag "$IMAGE_URI" .']},
        "post_build": {
            "commands": [
                'if [ "$CODEBUILD_BUILD_SUCCEEDING" = 1 ]; then docker push "$IMAGE_URI"; fi',
            ]
        },
    },
}


class ImageBuild(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, folder: Path, architecture: Architecture, timeout_hours: int
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.repository = ecr.Repository(
            self,
            "Repository",
            repository_name=f"{REPOSITORY_PREFIX}{folder.name}",
            image_scan_on_push=True,
            lifecycle_rules=[ecr.LifecycleRule(max_image_count=KEEP_IMAGES, description="keep the newest images")],
            removal_policy=RemovalPolicy.DESTROY,
            empty_on_delete=True,
        )
        self.source = s3_assets.Asset(self, "Source", path=str(folder))
        self.tag = self.source.asset_hash[:16]
        self.image_uri = self.repository.repository_uri_for_tag(self.tag)
        arm = architecture is Architecture.ARM64
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("codebuild.amazonaws.com"),
            description=f"Builds images/{folder.name} and pushes it to its one repository",
        )
        role.add_to_policy(iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]))
        role.add_to_policy(
            iam.PolicyStatement(
                sid="PushToItsRepository",
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:CompleteLayerUpload",
                    "ecr:GetDownloadUrlForLayer",
                    "ecr:InitiateLayerUpload",
                    "ecr:PutImage",
                    "ecr:UploadLayerPart",
                ],
                resources=[self.repository.repository_arn],
            )
        )
        self.source.grant_read(role)
        logs = owned_log_group(self, "Logs", f"/inference/build/{folder.name}")
        logs.grant_write(role)
        self.project = codebuild.Project(
            self,
            "Project",
            description=f"Builds images/{folder.name} ({architecture.value}) into {REPOSITORY_PREFIX}{folder.name}",
            role=role,
            source=codebuild.Source.s3(bucket=self.source.bucket, path=self.source.s3_object_key),
            build_spec=codebuild.BuildSpec.from_object(BUILD_SPEC),
            environment=codebuild.BuildEnvironment(
                build_image=(
                    codebuild.LinuxArmBuildImage.AMAZON_LINUX_2_STANDARD_3_0
                    if arm
                    else codebuild.LinuxBuildImage.STANDARD_7_0
                ),
                compute_type=codebuild.ComputeType.LARGE,
                privileged=True,  # docker build needs the Docker daemon
            ),
            environment_variables={"IMAGE_URI": codebuild.BuildEnvironmentVariable(value=self.image_uri)},
            timeout=Duration.hours(timeout_hours),
            logging=codebuild.LoggingOptions(cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=logs)),
        )
        acknowledge(
            self.project,
            "AwsSolutions-CB3",
            "Privileged mode is what lets CodeBuild run the Docker daemon that builds the image.",
        )
        acknowledge(
            self.project,
            "AwsSolutions-CB4",
            "Build artifacts are the pushed image only; the AWS-managed key encrypts the logs and cache. A customer "
            "key would outlive cdk destroy by its pending-deletion window and bill meanwhile.",
        )
        project_id = stack.resolve(stack.get_logical_id(self.project.node.default_child))
        region = stack.region
        for finding, reason in (
            ("Resource::*", "ecr:GetAuthorizationToken takes no resource; pushes are limited to this one repository."),
            ("Action::s3:GetBucket*", "CDK's read grant on the source asset: scoped to the asset bucket and object."),
            ("Action::s3:GetObject*", "CDK's read grant on the source asset: scoped to the asset bucket and object."),
            ("Action::s3:List*", "CDK's read grant on the source asset: scoped to the asset bucket."),
            (
                f"Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-{region}/*",
                "The CDK bootstrap bucket holding the source asset; the object key is content-addressed.",
            ),
            (
                f"Resource::arn:<AWS::Partition>:logs:{region}:<AWS::AccountId>:log-group:/aws/codebuild/<{project_id}>:*",
                "CodeBuild's own default log group for this one project (the build logs to its owned group).",
            ),
            (
                f"Resource::arn:<AWS::Partition>:codebuild:{region}:<AWS::AccountId>:report-group/<{project_id}>-*",
                "CodeBuild's own report groups for this one project.",
            ),
        ):
            acknowledge(role, f"AwsSolutions-IAM5[{finding}]", reason)
        self.region = stack.region
