"""The role SageMaker AI's benchmarking service runs a benchmark job as (`runner.bench
--vendor-benchmark`): trusted by SageMaker for this account's requests only, allowed to invoke the
stack's endpoints and to write under one prefix of one bucket, nothing else.

Sources: the developer guide ("SageMaker AI inference optimization", Execution roles: "The service
assumes this role ... Writing benchmark results to Amazon S3"; "The execution role must have a trust
policy that allows the SageMaker AI service to assume it", with `aws:SourceAccount` and
`aws:SourceArn` against the confused deputy; "Scope Amazon S3 permissions to specific buckets"),
and the Service Authorization Reference (CreateAIBenchmarkJob passes the role with
`iam:PassedToService` sagemaker.amazonaws.com). NOT wired into a stack yet: which further
permissions the job's own compute needs only a real account shows, so wiring it in is a change
for a deploy review; until then `--vendor-benchmark` takes a role of the user's. Unconfirmed, each
a way a first real job may fail with this role: whether InvokeEndpoint naming an inference
component is also authorised against the component's ARN (`inference-component/NAME`), not only
the endpoint's; whether the job's compute writes CloudWatch Logs as this role (logs:*;
DescribeAIBenchmarkJob returns OutputConfig.CloudWatchLogs); whether writing results needs
s3:ListBucket or s3:AbortMultipartUpload beside s3:PutObject; and a gated tokenizer's download.
"""

from __future__ import annotations

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from inference_constructs.nag import acknowledge
from inference_constructs.service_roles import service_role

RESULTS_PREFIX = "benchmarks/"


class BenchmarkRole(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, endpoint_names: list[str], bucket_name: str) -> None:
        super().__init__(scope, construct_id)
        region = Stack.of(self).region
        # The region's store bucket (another stack's: catalog.boot.store_bucket), named.
        self.output_location = f"s3://{bucket_name}/{RESULTS_PREFIX}"
        self.role = service_role(
            self,
            "Role",
            "sagemaker.amazonaws.com",
            "SageMaker AI benchmark jobs: invoke the stack's endpoints, write results under one prefix",
        )
        endpoints = [
            f"arn:{Aws.PARTITION}:sagemaker:{region}:{Aws.ACCOUNT_ID}:endpoint/{name}" for name in endpoint_names
        ]
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
                resources=endpoints,
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject"], resources=[f"arn:{Aws.PARTITION}:s3:::{bucket_name}/{RESULTS_PREFIX}*"]
            )
        )
        acknowledge(
            self.role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::{bucket_name}/{RESULTS_PREFIX}*]",
            f"A benchmark job writes its results under {RESULTS_PREFIX} in a folder it names itself; the role may "
            "write nowhere else in the bucket.",
        )
