"""BenchmarkRole alone in a bare Stack, under cdk-nag's AwsSolutions checks: the role SageMaker AI's
benchmarking service runs a job as, trusted by SageMaker for this account's own requests, allowed
to invoke the endpoints named and to write under the results prefix, nothing else."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from inference_constructs.benchmark_role import RESULTS_PREFIX, BenchmarkRole
from tests.cdk.test_construct_server import bare_stack, only

REGION = "us-east-2"
ENDPOINTS = ["inference-sagemaker", "inference-sagemaker-components"]


def test_the_role_invokes_the_endpoints_and_writes_under_its_prefix_and_nag_finds_nothing(tmp_path):
    stack = bare_stack(tmp_path, REGION)
    made = BenchmarkRole(stack, "Benchmark", endpoint_names=ENDPOINTS, bucket_name="inference-store-example")
    cdk.Validations.of(stack.node.root).add_plugins(AwsSolutionsChecks(stack.node.root))
    template = Template.from_stack(stack)  # an unacknowledged finding would raise here
    (_, role) = only(template, "AWS::IAM::Role")
    (trust,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert set(trust["Condition"]) == {"StringEquals", "ArnLike"}
    (_, policy) = only(template, "AWS::IAM::Policy")
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert [s["Action"] for s in statements] == [
        ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
        "s3:PutObject",
    ]
    invoked = stack.resolve(statements[0]["Resource"])
    assert [part["Fn::Join"][1][-1] for part in invoked] == [f":endpoint/{name}" for name in ENDPOINTS]
    written = stack.resolve(statements[1]["Resource"])
    assert written["Fn::Join"][1][-1].endswith(f"inference-store-example/{RESULTS_PREFIX}*")
    assert made.output_location == f"s3://inference-store-example/{RESULTS_PREFIX}"
