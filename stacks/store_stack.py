"""InferenceStore-<region>: what the app keeps in a region across deploys, as CloudFormation holds it.

- The store: one bucket per account and region (catalog/boot.py `store_bucket`), versioned, every
  public access blocked, TLS only, S3-managed encryption, objects' old versions and unfinished
  uploads expired; the weights the copy makes under `weights/`, each backend's compiled graphs
  under `graphs/<backend>/`, which the bucket policy lets nobody overwrite (a put must carry
  If-None-Match: S3's conditional-write enforcement, `s3:if-none-match`).
- One ECR repository per image the app builds in the region (`inference-survey/<folder>`):
  immutable tags (the tag is the source's content hash, so a tag names one image forever), scan
  on push, the newest images kept.
- The weights copy (`weights_copy.sh` in CodeBuild): every model the region's servers and
  endpoints read, from the Hugging Face hub into the store, started by every deploy of any of the
  app's stacks in the region (an EventBridge rule on CloudFormation's own status events, no
  Lambda); a model already copied is skipped.

The bucket and the repositories are retained (DeletionPolicy Retain) under names fixed by the
account and region: the survey's teardown leaves this stack, so the next deploy finds the weights
copied, the graphs compiled and the images built; after a `cdk destroy --all` the retained
resources are taken back by the next deploy's import (`cdk deploy --import-existing-resources`,
which CloudFormation allows for a retained resource of a static name; runner.up passes it), and
`runner.sweep --delete --purge-images` removes them for good.
"""

from __future__ import annotations

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from catalog.backends import needs_hub_token, pinned
from catalog.boot import GRAPHS_PREFIX, WEIGHTS_PREFIX, store_bucket
from catalog.builds import WEIGHTS_COPY_COMPUTE, repository_name
from inference_constructs.build_trigger import STACK_EVENTS, started_by_events
from inference_constructs.image_build import CDK_COMPUTE, KEEP_IMAGES, acknowledge_codebuild_defaults, build_spec
from inference_constructs.log_group import owned_log_group
from inference_constructs.nag import acknowledge
from inference_constructs.service_roles import service_role
from inference_constructs.weights_copy import COPY_PROJECT, COPY_SCRIPT, HF_HUB_VERSION

# Days an overwritten or deleted object's old version is kept (a mistake can be undone that long).
OLD_VERSIONS_DAYS = 3
# The stacks whose deploys start the copy: every stack of the app is named Inference... .
APP_STACK_PREFIX = "Inference"


class InferenceStoreStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        models: list[str],
        built_images: list[str],
        hf_token_secret_name: str,
        **kwargs,
    ):
        super().__init__(scope, construct_id, **kwargs)
        region = self.region
        # The account as the deploy knows it (CDK_DEFAULT_ACCOUNT), so the name is static, which
        # CloudFormation's import of a retained bucket needs; the pseudo parameter where it is not.
        self.bucket_name = store_bucket(self.account, region)
        self.bucket = s3.Bucket(
            self,
            "Store",
            bucket_name=self.bucket_name,
            versioned=True,
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="old-versions-and-unfinished-uploads",
                    noncurrent_version_expiration=Duration.days(OLD_VERSIONS_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                    expired_object_delete_marker=True,
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        # Graphs are written once: a put without If-None-Match is refused, so no server replaces
        # graphs another boot recorded (S3 user guide, "Enforce conditional writes on Amazon S3
        # buckets": s3:if-none-match; a single PutObject, which is how the servers keep them).
        self.bucket.add_to_resource_policy(
            iam.PolicyStatement(
                sid="GraphsAreWrittenOnce",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["s3:PutObject"],
                resources=[self.bucket.arn_for_objects(f"{GRAPHS_PREFIX}*")],
                conditions={"Null": {"s3:if-none-match": "true"}},
            )
        )
        # The policy goes with the stack and is made again with it: a retained policy would stop the
        # next deploy ("The bucket policy already exists"), since CloudFormation imports by static
        # name only and the policy names its bucket by Ref. No server of the region runs between.
        acknowledge(
            self.bucket,
            "AwsSolutions-S1",
            "The app's weights and compiled graphs; access logs would need a second bucket kept as long as this one.",
        )
        self.repositories = {
            folder: ecr.Repository(
                self,
                f"Repository{''.join(p.capitalize() for p in folder.split('-'))}",
                repository_name=repository_name(folder),
                image_tag_mutability=ecr.TagMutability.IMMUTABLE,
                image_scan_on_push=True,
                lifecycle_rules=[ecr.LifecycleRule(max_image_count=KEEP_IMAGES, description="keep the newest images")],
                removal_policy=RemovalPolicy.RETAIN,
            )
            for folder in sorted(set(built_images))
        }
        self.copy = weights_copy(self, models, self.bucket, hf_token_secret_name) if models else None


def weights_copy(stack: Stack, models: list[str], bucket: s3.Bucket, hf_token_secret_name: str) -> codebuild.Project:
    """The copy of the region's models into the store, started by every deploy of the app here."""
    role = service_role(stack, "CopyRole", "codebuild.amazonaws.com", "Copies models from the hub into the app's store")
    role.add_to_policy(
        iam.PolicyStatement(
            sid="FindTheStore", actions=["s3:GetBucketLocation", "s3:ListBucket"], resources=[bucket.bucket_arn]
        )
    )
    role.add_to_policy(
        iam.PolicyStatement(
            sid="CopyTheWeights",
            actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
            resources=[bucket.arn_for_objects(f"{WEIGHTS_PREFIX}*")],
        )
    )
    gated = [m for m in models if needs_hub_token(m)]
    if gated:
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
    logs = owned_log_group(stack, "CopyLogs", f"/inference/weights-copy/{stack.region}")
    logs.grant_write(role)
    project = codebuild.Project(
        stack,
        "Copy",
        project_name=COPY_PROJECT,
        description="Copies the region's models (MODEL_IDS) from the Hugging Face hub into the app's store",
        role=role,
        build_spec=codebuild.BuildSpec.from_object(build_spec(COPY_SCRIPT)),
        # No project limit: CreateProject refuses one above the account's own concurrent-build
        # limit ("cannot exceed the account-level concurrent build limit", hashicorp/terraform-
        # provider-aws#37748), which a new account may have at 0, and the store stack would then
        # stop every stack of its region. runner.up starts none while one runs; each copy stages
        # under its build's id and writes its manifest last.
        environment=codebuild.BuildEnvironment(
            build_image=codebuild.LinuxBuildImage.STANDARD_7_0, compute_type=CDK_COMPUTE[WEIGHTS_COPY_COMPUTE]
        ),
        environment_variables={
            "MODEL_IDS": codebuild.BuildEnvironmentVariable(value=" ".join(pinned(m) for m in models)),
            "STORE_BUCKET": codebuild.BuildEnvironmentVariable(value=bucket.bucket_name),
            "ACCOUNT_ID": codebuild.BuildEnvironmentVariable(value=Aws.ACCOUNT_ID),
            "HF_TOKEN_SECRET": codebuild.BuildEnvironmentVariable(value=hf_token_secret_name if gated else ""),
            "HF_HUB_VERSION": codebuild.BuildEnvironmentVariable(value=HF_HUB_VERSION),
        },
        timeout=Duration.hours(1),
        logging=codebuild.LoggingOptions(cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=logs)),
    )
    started_by_events(
        stack,
        "CopyOnDeploy",
        project,
        events.EventPattern(
            source=["aws.cloudformation"],
            detail_type=["CloudFormation Stack Status Change"],
            detail={
                "stack-id": [
                    {
                        "prefix": f"arn:{Aws.PARTITION}:cloudformation:{stack.region}:{Aws.ACCOUNT_ID}:stack/"
                        f"{APP_STACK_PREFIX}"
                    }
                ],
                "status-details": {"status": list(STACK_EVENTS)},
            },
        ),
        description="Copy the region's models into the store whenever one of the app's stacks here is deployed",
    )
    acknowledge(
        project,
        "AwsSolutions-CB4",
        "The copy's only artifact is the weights in the store, encrypted by S3; a customer key would outlive "
        "cdk destroy.",
    )
    acknowledge_codebuild_defaults(role, project)
    acknowledge(
        role,
        f"AwsSolutions-IAM5[Resource::<{stack.resolve(stack.get_logical_id(bucket.node.default_child))}.Arn>/"
        f"{WEIGHTS_PREFIX}*]",
        "The weights prefix of the app's store in this region.",
    )
    return project
