"""An image the app builds itself: a CodeBuild project that builds `images/<folder>` on the
server's own architecture (arm64 compute for g5g: never under emulation) and pushes it to the
folder's repository in the region's store stack (stacks/store_stack.py: immutable tags, scan on
push), tagged with the folder's content hash, so a changed Dockerfile is a new tag and a new
launch template, and a tag once pushed names that image forever.

Images before servers, with no person in the loop: every create or update of the stack starts
the build (an EventBridge rule on CloudFormation's own "Stack Status Change" events, which need no
Lambda, whose role may start this project with no override: build_trigger.py). The build
(`image_build.sh`) skips an image whose tag is already pushed, then brings back the servers that
run it (their groups start at zero, so nothing bills while a build takes hours); a failed build
leaves them at zero with its last log lines as their reason. No build limit on the project (see
below): a build leaves its image to an earlier one still building it, and of two that race the
first push holds the tag. No instance starts a build, and the build runs nothing on an instance
(a new image is a new tag, a new launch template, a new server): `runner.up` starts one for a
server that waits for its image, and `python -m runner.images build BACKEND` starts one by hand.

The repository outlives the stack (the store stack retains it), so the next deploy, in any survey,
finds its image built and builds nothing (a vLLM build for sm_75 is an hour of ARM XLarge). It
bills storage only (catalog/prices.py ECR_USD_PER_GB_MONTH); `runner.sweep` lists it with that
cost, and `runner.sweep --delete --purge-images` removes it.
"""

from __future__ import annotations

import base64
from pathlib import Path

from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from catalog import Architecture, BackendSpec
from catalog.builds import REPOSITORY_PREFIX, built_image, image_build, repository_name
from catalog.contract import IMAGE_TAG_KEY
from inference_constructs.build_trigger import STACK_EVENTS, started_by_events
from inference_constructs.instance_role import parameter_arn, readiness_parameter_name
from inference_constructs.log_group import owned_log_group
from inference_constructs.nag import acknowledge, finding_account
from inference_constructs.service_roles import service_role

IMAGES_DIR = Path(__file__).resolve().parent.parent / "images"
# Left out of every folder uploaded as an asset: Python's bytecode caches (written wherever a test
# or a user imports a file from the folder) would change the asset's hash, so the image tag and
# the build would differ between two checkouts of the same source.
SOURCE_EXCLUDE = ["__pycache__", "*.pyc"]
# The catalog's compute names (catalog/builds.py) as the CDK spells them (BUILD_GENERAL1_MEDIUM, ...).
CDK_COMPUTE = {
    "MEDIUM": codebuild.ComputeType.MEDIUM,
    "LARGE": codebuild.ComputeType.LARGE,
    "XLARGE": codebuild.ComputeType.X_LARGE,
}
KEEP_IMAGES = 5
BUILD_SCRIPT = Path(__file__).with_name("image_build.sh")


def build_spec(script: Path = BUILD_SCRIPT) -> dict[str, object]:
    """One command: the script, carried base64-encoded so no shell quoting can change it, written
    to a file of its own (mktemp) and run (the image build; the weights copy of import_stack)."""
    encoded = base64.b64encode(script.read_bytes()).decode()
    command = f'script=$(mktemp) && echo {encoded} | base64 -d > "$script" && bash "$script"'
    return {"version": "0.2", "env": {"shell": "bash"}, "phases": {"build": {"commands": [command]}}}


def acknowledge_codebuild_defaults(role: iam.Role, project: codebuild.Project) -> None:
    """CDK's grants for a project's own default log group and report groups, scoped to the project."""
    stack = Stack.of(project)
    project_id = stack.resolve(stack.get_logical_id(project.node.default_child))
    region, account = stack.region, finding_account(stack)
    for finding, reason in (
        (
            f"Resource::arn:<AWS::Partition>:logs:{region}:{account}:log-group:/aws/codebuild/<{project_id}>:*",
            "CodeBuild's own default log group for this one project (the build logs to its owned group).",
        ),
        (
            f"Resource::arn:<AWS::Partition>:codebuild:{region}:{account}:report-group/<{project_id}>-*",
            "CodeBuild's own report groups for this one project.",
        ),
    ):
        acknowledge(role, f"AwsSolutions-IAM5[{finding}]", reason)


class ImageBuild(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        folder: Path,
        architecture: Architecture,
        expires_at: str | None = None,
        name_suffix: str = "",
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        spec = image_build(folder.name)
        # Kept across deploys in the region's store stack: referred to here by its name.
        self.repository_name = repository_name(folder.name)
        self.repository = ecr.Repository.from_repository_name(self, "Repository", self.repository_name)
        self.source = s3_assets.Asset(self, "Source", path=str(folder), exclude=SOURCE_EXCLUDE)
        self.tag = self.source.asset_hash[:16]
        self.image_uri = self.repository.repository_uri_for_tag(self.tag)
        arm = architecture is Architecture.ARM64
        role = service_role(
            self, "Role", "codebuild.amazonaws.com", f"Builds images/{folder.name} and pushes it to its one repository"
        )
        self.role = role
        role.add_to_policy(iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]))
        role.add_to_policy(
            iam.PolicyStatement(
                sid="PushToItsRepository",
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:CompleteLayerUpload",
                    "ecr:DescribeImages",
                    "ecr:GetDownloadUrlForLayer",
                    "ecr:InitiateLayerUpload",
                    "ecr:PutImage",
                    "ecr:UploadLayerPart",
                ],
                resources=[self.repository.repository_arn],
            )
        )
        # Its own source, that one object (CDK's grant would read the whole bootstrap bucket).
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadItsSource",
                actions=["s3:GetObject"],
                resources=[self.source.bucket.arn_for_objects(self.source.s3_object_key)],
            )
        )
        self.folder = folder.name
        # What the build does after it pushed, or when it failed: the servers that run this image.
        role.add_to_policy(
            iam.PolicyStatement(
                sid="FindTheServers", actions=["autoscaling:DescribeAutoScalingGroups"], resources=["*"]
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="BringBackTheServersOfThisImage",
                actions=["autoscaling:SetDesiredCapacity"],
                resources=["*"],
                conditions={"StringEquals": {f"aws:ResourceTag/{IMAGE_TAG_KEY}": folder.name}},
            )
        )
        # The readiness of the servers that run this image only (serves()): read to tell a server
        # waiting for its image from one held at zero on purpose, written when the build fails.
        self.readiness: iam.PolicyStatement | None = None
        # A satellite stack (one backend moved to another region) names its own: its family's may
        # stand in the same region later.
        logs = owned_log_group(self, "Logs", f"/inference/build/{folder.name}{name_suffix}")
        logs.grant_write(role)
        self.project = codebuild.Project(
            self,
            "Project",
            description=f"Builds images/{folder.name} ({architecture.value}) into {REPOSITORY_PREFIX}{folder.name}",
            role=role,
            source=codebuild.Source.s3(bucket=self.source.bucket, path=self.source.s3_object_key),
            build_spec=codebuild.BuildSpec.from_object(build_spec()),
            # No project limit: CreateProject refuses one above the account's own concurrent-build
            # limit (hashicorp/terraform-provider-aws#37748), which a new account may have at 0 and
            # Service Quotas may state above the real one (data-dot-all/dataall#100). Two builds of
            # one image end with one image: the tag is the source's hash, and the first push holds it.
            environment=codebuild.BuildEnvironment(
                build_image=(
                    codebuild.LinuxArmBuildImage.AMAZON_LINUX_2_STANDARD_3_0
                    if arm
                    else codebuild.LinuxBuildImage.STANDARD_7_0
                ),
                # The catalog's compute for this image (catalog/builds.py): ARM XLarge for vLLM's kernels.
                compute_type=CDK_COMPUTE[spec.compute],
                privileged=True,  # docker build needs the Docker daemon
            ),
            environment_variables={
                "IMAGE_URI": codebuild.BuildEnvironmentVariable(value=self.image_uri),
                "IMAGE_FOLDER": codebuild.BuildEnvironmentVariable(value=folder.name),
                # Past it, a finished build brings no server back (image_build.sh).
                "EXPIRES_AT": codebuild.BuildEnvironmentVariable(value=expires_at or ""),
            },
            timeout=Duration.hours(spec.timeout_hours),
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
        acknowledge_codebuild_defaults(role, self.project)
        # Which builds of this project run now, and for which image: a build leaves its image to an
        # earlier one still building it (image_build.sh), since every stack update starts one. A
        # policy of its own: the project already depends on the role's default policy.
        iam.Policy(
            self,
            "SeeItsOwnBuilds",
            roles=[role],
            statements=[
                iam.PolicyStatement(
                    sid="SeeItsOwnBuilds",
                    actions=["codebuild:ListBuildsForProject", "codebuild:BatchGetBuilds"],
                    resources=[self.project.project_arn],
                )
            ],
        )
        for finding, reason in (
            (
                "Resource::*",
                "ecr:GetAuthorizationToken and DescribeAutoScalingGroups take no resource; SetDesiredCapacity is "
                "limited to groups tagged with this image; pushes to this one repository.",
            ),
            *(
                (finding, "CodeBuild's own read of the project's S3 source: the one source object of this build.")
                for finding in ("Action::s3:GetBucket*", "Action::s3:GetObject*", "Action::s3:List*")
            ),
        ):
            acknowledge(role, f"AwsSolutions-IAM5[{finding}]", reason)
        # Every create or update of the stack starts the build: images before servers.
        self.trigger = started_by_events(
            self,
            "OnStackDeployed",
            self.project,
            events.EventPattern(
                source=["aws.cloudformation"],
                detail_type=["CloudFormation Stack Status Change"],
                detail={"stack-id": [Aws.STACK_ID], "status-details": {"status": list(STACK_EVENTS)}},
            ),
            description=f"Build images/{folder.name} (or bring its servers back) when the stack is deployed",
        )
        self.region = stack.region

    def serves(self, backend: str) -> None:
        """A server of this image: the build may read and write its readiness."""
        if self.readiness is None:
            self.readiness = iam.PolicyStatement(
                sid="ReadAndReportItsServersReadiness", actions=["ssm:GetParameter", "ssm:PutParameter"]
            )
            self.role.add_to_policy(self.readiness)
        self.readiness.add_resources(parameter_arn(readiness_parameter_name(backend)))


def image_build_for(
    scope: Construct,
    spec: BackendSpec,
    builds: dict[str, ImageBuild],
    expires_at: str | None = None,
    name_suffix: str = "",
) -> ImageBuild | None:
    """`build:DIR`: one repository and CodeBuild project per folder and stack, shared by the
    backends of the stack that use it (kept in `builds`); None for an image the app does not build."""
    folder = built_image(spec)
    if folder is None:
        return None
    if folder not in builds:
        builds[folder] = ImageBuild(
            scope,
            f"Build{''.join(part.capitalize() for part in folder.split('-'))}",
            folder=IMAGES_DIR / folder,
            architecture=spec.architecture or Architecture.X86_64,
            expires_at=expires_at,
            name_suffix=name_suffix,
        )
    return builds[folder]
