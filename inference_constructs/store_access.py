"""A server's way into the app's store (stacks/store_stack.py), by name: no stack imports another's.

Each server may read its own model's weights and its own backend's compiled graphs (in any of its
regions' stores) and keep graphs under its own backend's prefix, in this account's bucket only
(`s3:ResourceAccount`); nothing else of the store. An engine that streams its weights from S3
reads them with an hour's credentials of a role that may read that model's weights and nothing
else, which the server takes for it (the container cannot reach the instance's own credentials:
the metadata service's hop limit is 1).
"""

from __future__ import annotations

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam

from catalog.boot import GRAPHS_PREFIX, STORE_PREFIX, store_bucket, weights_marker, weights_prefix
from inference_constructs.nag import acknowledge, finding_account


def bucket_arn(account: str, region: str) -> str:
    return f"arn:{Aws.PARTITION}:s3:::{store_bucket(account, region)}"


def graphs_prefix(backend: str) -> str:
    return f"{GRAPHS_PREFIX}{backend}/"


def in_this_account() -> dict[str, dict[str, str]]:
    return {"StringEquals": {"s3:ResourceAccount": Aws.ACCOUNT_ID}}


def weights_read(model_id: str, account: str, region: str) -> list[iam.PolicyStatement]:
    """Find the store and read one model's copy: its files, its manifest, its listing."""
    bucket = bucket_arn(account, region)
    return [
        iam.PolicyStatement(
            sid="FindTheStore",
            actions=["s3:GetBucketLocation"],
            resources=[bucket],
            conditions=in_this_account(),
        ),
        iam.PolicyStatement(
            sid="ListItsModelsWeights",
            actions=["s3:ListBucket"],
            resources=[bucket],
            conditions=in_this_account() | {"StringLike": {"s3:prefix": [f"{weights_prefix(model_id)}*"]}},
        ),
        iam.PolicyStatement(
            sid="ReadItsModelsWeights",
            actions=["s3:GetObject"],
            resources=[f"{bucket}/{weights_prefix(model_id)}*", f"{bucket}/{weights_marker(model_id)}"],
            conditions=in_this_account(),
        ),
    ]


def allow_server(
    role: iam.Role, *, backend: str, model_id: str, regions: tuple[str, ...], stream: bool
) -> iam.Role | None:
    """The server's statements; the weights reader role when its engine streams them (else None)."""
    stack = Stack.of(role)
    account, region = stack.account, stack.region
    for statement in weights_read(model_id, account, region):
        role.add_to_policy(statement)
    stores = [region, *(r for r in regions if r != region)]
    role.add_to_policy(
        iam.PolicyStatement(
            sid="ReadItsGraphs",
            actions=["s3:GetObject"],
            resources=[f"{bucket_arn(account, r)}/{graphs_prefix(backend)}*" for r in stores],
            conditions=in_this_account(),
        )
    )
    role.add_to_policy(
        iam.PolicyStatement(
            sid="KeepItsGraphs",
            actions=["s3:PutObject"],
            resources=[f"{bucket_arn(account, region)}/{graphs_prefix(backend)}*"],
            conditions=in_this_account(),
        )
    )
    reader = None
    if stream:
        # Beside the instance role, not under it: the launch template depends on that role and all of
        # its children, and the user data names this one already.
        reader = iam.Role(
            role.node.scope,  # type: ignore[arg-type]
            "WeightsReader",
            assumed_by=iam.ArnPrincipal(role.role_arn),
            description=f"Streams {model_id}'s weights from the app's store into {backend}'s engine",
        )
        for statement in weights_read(model_id, account, region):
            reader.add_to_policy(statement)
        role.add_to_policy(
            iam.PolicyStatement(sid="LendTheEngineItsWeights", actions=["sts:AssumeRole"], resources=[reader.role_arn])
        )
    shown_account = finding_account(stack)
    for finding, reason in (
        (
            f"Resource::arn:<AWS::Partition>:s3:::{STORE_PREFIX}{shown_account}-{region}/{weights_prefix(model_id)}*",
            "The files of this server's own model in the app's store, in this account.",
        ),
        *(
            (
                f"Resource::arn:<AWS::Partition>:s3:::{STORE_PREFIX}{shown_account}-{r}/{graphs_prefix(backend)}*",
                "This backend's own compiled graphs in the app's store, keyed by what they were compiled for.",
            )
            for r in stores
        ),
    ):
        for grantee in (role, *([reader] if reader else [])):
            acknowledge(grantee, f"AwsSolutions-IAM5[{finding}]", reason)
    return reader
