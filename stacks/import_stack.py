"""InferenceBedrockImportStack: what Bedrock Custom Model Import needs and CloudFormation can hold.

Custom Model Import itself is not in CloudFormation: `python -m runner.model_import` runs the
import job and `runner.sweep --delete` (or `runner.model_import delete`) deletes the imported
model. The stack owns the rest: a private bucket for the weights, a CodeBuild project that copies
them from the Hugging Face hub into it inside AWS (`weights_copy.sh`), and the role Bedrock
assumes to read them, trusted only by Bedrock for this account's model-import jobs (the trust
policy AWS documents for Custom Model Import: aws:SourceAccount and an aws:SourceArn of
`arn:aws:bedrock:<region>:<account>:model-import-job/*`).
"""

from __future__ import annotations

import re

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from catalog.backends import needs_hub_token
from catalog.config import BackendConfig, StackConfig
from inference_constructs.backend_output import backend_output, publish_output
from inference_constructs.image_build import acknowledge_codebuild_defaults, build_spec
from inference_constructs.log_group import owned_log_group
from inference_constructs.nag import acknowledge
from inference_constructs.service_roles import service_role
from inference_constructs.stack_marker import StackMarker
from inference_constructs.weights_copy import COPY_SCRIPT, HF_HUB_VERSION

WEIGHTS_PREFIX = "weights/"


def imported_model_name(model_id: str, lane: str) -> str:
    """'Qwen/Qwen2.5-1.5B-Instruct' -> 'inference-survey-qwen2-5-1-5b-instruct' (CMI names: [a-zA-Z0-9-])."""
    slug = re.sub(r"[^a-z0-9]+", "-", model_id.split("/")[-1].lower()).strip("-")
    return f"inference-survey-{slug}" if lane == "survey" else f"inference-survey-{lane}-{slug}"


class InferenceBedrockImportStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, config: StackConfig, hf_token_secret_name: str, **kwargs
    ):
        super().__init__(scope, construct_id, **kwargs)
        self.marker = StackMarker(self, "Marker", config=config)
        self.imports = {
            b.name: ModelImport(self, "Import", backend=b, hf_token_secret_name=hf_token_secret_name)
            for b in config.backends
        }


class ModelImport(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, backend: BackendConfig, hf_token_secret_name: str
    ) -> None:
        super().__init__(scope, construct_id)
        spec = backend.spec
        stack = Stack.of(self)
        prefix = f"{WEIGHTS_PREFIX}{imported_model_name(spec.model_id, backend.lane)}/"
        self.bucket = s3.Bucket(
            self,
            "Weights",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            lifecycle_rules=[s3.LifecycleRule(abort_incomplete_multipart_upload_after=Duration.days(1))],
            removal_policy=RemovalPolicy.DESTROY,
        )
        acknowledge(
            self.bucket,
            "AwsSolutions-S1",
            "Public model weights copied by the app; access logs would need a second bucket that outlives cdk destroy.",
        )
        # Bedrock reads the weights with this role, for this account's import jobs only.
        self.import_role = iam.Role(
            self,
            "ImportRole",
            assumed_by=iam.ServicePrincipal(
                "bedrock.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnEquals": {
                        "aws:SourceArn": f"arn:{Aws.PARTITION}:bedrock:{stack.region}:{Aws.ACCOUNT_ID}:model-import-job/*"
                    },
                },
            ),
            description=f"Bedrock Custom Model Import reads {spec.model_id} from the app's weights bucket",
        )
        self.bucket.grant_read(self.import_role, f"{prefix}*")
        self.copy_role = service_role(
            self,
            "CopyRole",
            "codebuild.amazonaws.com",
            f"Copies {spec.model_id} from the Hugging Face hub into the app's weights bucket",
        )
        self.bucket.grant_read_write(self.copy_role, f"{WEIGHTS_PREFIX}*")
        self.bucket.grant_delete(self.copy_role, f"{WEIGHTS_PREFIX}*")
        gated = needs_hub_token(spec.model_id)
        if gated:
            self.copy_role.add_to_policy(
                iam.PolicyStatement(
                    sid="ReadTheHuggingFaceToken",
                    actions=["secretsmanager:GetSecretValue"],
                    resources=[
                        f"arn:{Aws.PARTITION}:secretsmanager:{stack.region}:{Aws.ACCOUNT_ID}:secret:"
                        f"{hf_token_secret_name}-*"
                    ],
                )
            )
        logs = owned_log_group(self, "Logs", f"/inference/weights/{spec.name}")
        logs.grant_write(self.copy_role)
        self.copy = codebuild.Project(
            self,
            "Copy",
            description=f"Copies {spec.model_id} from the Hugging Face hub to s3://<weights bucket>/{prefix}",
            role=self.copy_role,
            build_spec=codebuild.BuildSpec.from_object(build_spec(COPY_SCRIPT)),
            environment=codebuild.BuildEnvironment(
                build_image=codebuild.LinuxBuildImage.STANDARD_7_0, compute_type=codebuild.ComputeType.MEDIUM
            ),
            environment_variables={
                "MODEL_ID": codebuild.BuildEnvironmentVariable(value=spec.model_id),
                "WEIGHTS_URI": codebuild.BuildEnvironmentVariable(value=self.bucket.s3_url_for_object(prefix)),
                "HF_TOKEN_SECRET": codebuild.BuildEnvironmentVariable(value=hf_token_secret_name if gated else ""),
                "HF_HUB_VERSION": codebuild.BuildEnvironmentVariable(value=HF_HUB_VERSION),
            },
            timeout=Duration.hours(1),
            logging=codebuild.LoggingOptions(cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=logs)),
        )
        acknowledge(
            self.copy,
            "AwsSolutions-CB4",
            "The build's only artifact is the weights in the encrypted bucket; a customer key would outlive cdk destroy.",
        )
        account = "<AWS::AccountId>"
        bucket_id = stack.resolve(stack.get_logical_id(self.bucket.node.default_child))
        acknowledge_codebuild_defaults(self.copy_role, self.copy)
        for role, findings in (
            (
                self.import_role,
                [
                    ("Action::s3:GetBucket*", "CDK's read grant on the weights bucket."),
                    ("Action::s3:GetObject*", "CDK's read grant on the weights bucket."),
                    ("Action::s3:List*", "CDK's read grant on the weights bucket."),
                    (f"Resource::<{bucket_id}.Arn>/{prefix}*", "This model's weights only."),
                ],
            ),
            (
                self.copy_role,
                [
                    ("Action::s3:GetBucket*", "CDK's grant on the weights bucket."),
                    ("Action::s3:GetObject*", "CDK's grant on the weights bucket."),
                    ("Action::s3:List*", "CDK's grant on the weights bucket."),
                    ("Action::s3:DeleteObject*", "Replaces a half-finished copy under the weights prefix."),
                    ("Action::s3:Abort*", "CDK's write grant on the weights bucket."),
                    (f"Resource::<{bucket_id}.Arn>/{WEIGHTS_PREFIX}*", "The weights prefix of the app's bucket."),
                    (
                        f"Resource::arn:<AWS::Partition>:secretsmanager:{stack.region}:{account}:secret:"
                        f"{hf_token_secret_name}-*",
                        "The one Hugging Face token secret (Secrets Manager appends a random suffix).",
                    ),
                ],
            ),
        ):
            for finding, reason in findings:
                acknowledge(role, f"AwsSolutions-IAM5[{finding}]", reason)
        self.output = backend_output(
            backend,
            stack,
            bucket=self.bucket.bucket_name,
            input_prefix=prefix,
            model_name=imported_model_name(spec.model_id, backend.lane),
            import_role_arn=self.import_role.role_arn,
            weights_job=self.copy.project_name,
            log_group=logs.log_group_name,
        )
        publish_output(stack, backend, self.output)
