"""A stack's way into the app's store in its region (catalog/boot.py) and into its mirrors.

The store is one S3 bucket per account and region, `inference-survey-<account>-<region>`, which no
stack owns: the weights copy makes it on first use (weights_copy.sh: every public access blocked,
TLS only, encrypted, the app's tag), and `cdk destroy` leaves it, so the next deploy in the region,
a failover back to it or a return from the time-to-live finds the weights copied and the graphs
compiled. It bills storage only: `runner.sweep` lists it, kept on purpose, with its cost a month,
and `runner.sweep --delete --purge-images` removes it.

Two CodeBuild projects fill it and the region's ECR, each started by a server that found what
it makes missing (it takes the slow way meanwhile and says so; nothing waits for them):

- the weights copy (`weights_copy.sh`, the copy Custom Model Import uses): each model of the
  stack from the Hugging Face hub into `weights/<model>/`, its manifest written last, once per
  region (a model already copied is skipped);
- one mirror per public image (`image_build.sh` with MIRROR_SOURCE): `docker pull`, `tag` and
  `push` into `inference-survey/mirror/<repository>` (catalog/builds.py), which `cdk destroy`
  leaves too, like the images the app builds.
"""

from __future__ import annotations

from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from constructs import Construct

from catalog import Architecture
from catalog.boot import GRAPHS_PREFIX, STORE_PREFIX, WEIGHTS_PREFIX, store_bucket
from catalog.builds import mirror_repository, mirror_tag
from catalog.contract import APP_TAG
from inference_constructs.image_build import (
    BUILD_SCRIPT,
    KEEP_IMAGES,
    acknowledge_codebuild_defaults,
    build_spec,
)
from inference_constructs.log_group import owned_log_group
from inference_constructs.nag import acknowledge

COPY_SCRIPT = BUILD_SCRIPT.with_name("weights_copy.sh")
# The huggingface_hub release the copy installs: the one the vLLM tier pins (constraints-vllm.txt).
HF_HUB_VERSION = "2.4.0"


class RegionStore(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        models: list[str],
        hf_token_secret_name: str,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.bucket_name = store_bucket(Aws.ACCOUNT_ID, stack.region)
        self.bucket_arn = f"arn:{Aws.PARTITION}:s3:::{self.bucket_name}"
        self.mirrors: dict[str, codebuild.Project] = {}
        self.mirror_uris: dict[str, str] = {}
        role = iam.Role(
            self,
            "CopyRole",
            assumed_by=iam.ServicePrincipal("codebuild.amazonaws.com"),
            description="Copies the stack's models from the Hugging Face hub into the app's store in this region",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="KeepTheStore",
                actions=[
                    "s3:CreateBucket",
                    "s3:GetBucketLocation",
                    "s3:ListBucket",
                    "s3:PutBucketPolicy",
                    "s3:PutBucketPublicAccessBlock",
                    "s3:PutBucketTagging",
                    "s3:PutEncryptionConfiguration",
                    "s3:PutLifecycleConfiguration",
                ],
                resources=[self.bucket_arn],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="CopyTheWeights",
                actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                resources=[f"{self.bucket_arn}/{WEIGHTS_PREFIX}*"],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadTheHuggingFaceToken",
                actions=["secretsmanager:GetSecretValue"],
                # Secrets Manager appends six characters to a secret's name in its ARN.
                resources=[
                    f"arn:{Aws.PARTITION}:secretsmanager:{stack.region}:{Aws.ACCOUNT_ID}:secret:{hf_token_secret_name}-??????"
                ],
            )
        )
        # Per stack: two stacks in one region (the GPU or Neuron stack and the SageMaker one) each copy.
        logs = owned_log_group(self, "CopyLogs", f"/inference/weights-copy/{stack.stack_name}")
        logs.grant_write(role)
        self.copy = codebuild.Project(
            self,
            "Copy",
            description=f"Copies {', '.join(models)} from the Hugging Face hub into s3://{STORE_PREFIX}<account>-"
            f"{stack.region}/{WEIGHTS_PREFIX}",
            role=role,
            build_spec=codebuild.BuildSpec.from_object(build_spec(COPY_SCRIPT)),
            concurrent_build_limit=1,
            environment=codebuild.BuildEnvironment(
                build_image=codebuild.LinuxBuildImage.STANDARD_7_0, compute_type=codebuild.ComputeType.MEDIUM
            ),
            environment_variables={
                "MODEL_IDS": codebuild.BuildEnvironmentVariable(value=" ".join(models)),
                "STORE_BUCKET": codebuild.BuildEnvironmentVariable(value=self.bucket_name),
                "ACCOUNT_ID": codebuild.BuildEnvironmentVariable(value=Aws.ACCOUNT_ID),
                "APP_TAG": codebuild.BuildEnvironmentVariable(value="=".join(APP_TAG)),
                "HF_TOKEN_SECRET": codebuild.BuildEnvironmentVariable(value=hf_token_secret_name),
                "HF_HUB_VERSION": codebuild.BuildEnvironmentVariable(value=HF_HUB_VERSION),
            },
            timeout=Duration.hours(1),
            logging=codebuild.LoggingOptions(cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=logs)),
        )
        acknowledge(
            self.copy,
            "AwsSolutions-CB4",
            "The copy's only artifact is the weights in the store, encrypted by S3; a customer key would outlive "
            "cdk destroy.",
        )
        acknowledge_codebuild_defaults(role, self.copy)
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{STORE_PREFIX}<AWS::AccountId>-{stack.region}/"
            f"{WEIGHTS_PREFIX}*]",
            "The weights prefix of the app's store in this region.",
        )

    def mirror(self, image: str, architecture: Architecture | None) -> str:
        """The mirror of a public image in this region's ECR (its URI), and the project that makes it."""
        if image in self.mirror_uris:
            return self.mirror_uris[image]
        name = mirror_repository(image)
        repository = ecr.Repository.from_repository_name(self, f"MirrorRepository{len(self.mirrors)}", name)
        uri = repository.repository_uri_for_tag(mirror_tag(image))
        role = iam.Role(
            self,
            f"MirrorRole{len(self.mirrors)}",
            assumed_by=iam.ServicePrincipal("codebuild.amazonaws.com"),
            description=f"Mirrors {image} into this region's ECR",
        )
        role.add_to_policy(iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]))
        role.add_to_policy(
            iam.PolicyStatement(
                sid="PushToTheMirror",
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:CompleteLayerUpload",
                    "ecr:CreateRepository",
                    "ecr:DescribeImages",
                    "ecr:DescribeRepositories",
                    "ecr:GetDownloadUrlForLayer",
                    "ecr:InitiateLayerUpload",
                    "ecr:PutImage",
                    "ecr:PutLifecyclePolicy",
                    "ecr:TagResource",
                    "ecr:UploadLayerPart",
                ],
                resources=[repository.repository_arn],
            )
        )
        logs = owned_log_group(
            self,
            f"MirrorLogs{len(self.mirrors)}",
            f"/inference/mirror/{Stack.of(self).stack_name}/{name.rsplit('/', 1)[-1]}",
        )
        logs.grant_write(role)
        arm = architecture is Architecture.ARM64
        project = codebuild.Project(
            self,
            f"Mirror{len(self.mirrors)}",
            description=f"Mirrors {image} into {name} in this region",
            role=role,
            build_spec=codebuild.BuildSpec.from_object(build_spec()),
            concurrent_build_limit=1,
            environment=codebuild.BuildEnvironment(
                build_image=(
                    codebuild.LinuxArmBuildImage.AMAZON_LINUX_2_STANDARD_3_0
                    if arm
                    else codebuild.LinuxBuildImage.STANDARD_7_0
                ),
                # Large: its 128 GB disk holds the extracted image (28.6 GB for vLLM's) while it is pushed.
                compute_type=codebuild.ComputeType.LARGE,
                privileged=True,  # docker pull and push need the Docker daemon
            ),
            environment_variables={
                "MIRROR_SOURCE": codebuild.BuildEnvironmentVariable(value=image),
                "IMAGE_URI": codebuild.BuildEnvironmentVariable(value=uri),
                "IMAGE_FOLDER": codebuild.BuildEnvironmentVariable(value=name.split("/", 1)[1]),
                "KEEP_IMAGES": codebuild.BuildEnvironmentVariable(value=str(KEEP_IMAGES)),
                "APP_TAG": codebuild.BuildEnvironmentVariable(value="=".join(APP_TAG)),
                "FORCE_BUILD": codebuild.BuildEnvironmentVariable(value="0"),
            },
            timeout=Duration.hours(1),
            logging=codebuild.LoggingOptions(cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=logs)),
        )
        acknowledge(project, "AwsSolutions-CB3", "Privileged mode runs the Docker daemon that pulls and pushes.")
        acknowledge(
            project,
            "AwsSolutions-CB4",
            "The mirror's only artifact is the pushed image; a customer key would outlive cdk destroy.",
        )
        acknowledge_codebuild_defaults(role, project)
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:GetAuthorizationToken takes no resource; pushes to one repository.",
        )
        self.mirrors[image] = project
        self.mirror_uris[image] = uri
        return uri

    def allow_server(self, role: iam.Role, *, regions: tuple[str, ...], mirror: codebuild.Project | None) -> None:
        """A server of the stack: read its weights and any region's stored graphs, keep its own
        graphs here, and start the copy or its mirror when it finds them missing."""
        role.add_to_policy(
            iam.PolicyStatement(
                sid="FindTheStore", actions=["s3:GetBucketLocation", "s3:ListBucket"], resources=[self.bucket_arn]
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadTheWeightsAndGraphs",
                actions=["s3:GetObject"],
                resources=[f"{self.bucket_arn}/{WEIGHTS_PREFIX}*", f"{self.bucket_arn}/{GRAPHS_PREFIX}*"],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="KeepCompiledGraphs", actions=["s3:PutObject"], resources=[f"{self.bucket_arn}/{GRAPHS_PREFIX}*"]
            )
        )
        others = [r for r in regions if r != Stack.of(self).region]
        if others:
            role.add_to_policy(
                iam.PolicyStatement(
                    sid="ReadGraphsCompiledElsewhere",
                    actions=["s3:GetObject"],
                    resources=[
                        f"arn:{Aws.PARTITION}:s3:::{store_bucket(Aws.ACCOUNT_ID, r)}/{GRAPHS_PREFIX}*" for r in others
                    ],
                )
            )
        projects = [self.copy, *([mirror] if mirror else [])]
        role.add_to_policy(
            iam.PolicyStatement(
                sid="StartTheCopyOrTheMirror",
                actions=["codebuild:StartBuild", "codebuild:ListBuildsForProject", "codebuild:BatchGetBuilds"],
                resources=[p.project_arn for p in projects],
            )
        )
        region = Stack.of(self).region
        bucket = f"arn:<AWS::Partition>:s3:::{STORE_PREFIX}<AWS::AccountId>-{region}"
        for finding, reason in (
            (f"Resource::{bucket}/{WEIGHTS_PREFIX}*", "The weights the app copied into its store in this region."),
            (
                f"Resource::{bucket}/{GRAPHS_PREFIX}*",
                "Compiled graphs in the app's store, keyed by what they were compiled for.",
            ),
            *(
                (
                    f"Resource::arn:<AWS::Partition>:s3:::{STORE_PREFIX}<AWS::AccountId>-{r}/{GRAPHS_PREFIX}*",
                    "Compiled graphs the app's servers kept in another region's store.",
                )
                for r in others
            ),
        ):
            acknowledge(role, f"AwsSolutions-IAM5[{finding}]", reason)
