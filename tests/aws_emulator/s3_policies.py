"""S3 bucket policies that deny plain HTTP: moto ignores a statement's Condition (its
put_bucket_policy says so) and so applies a TLS-only Deny (`"Bool": {"aws:SecureTransport":
"false"}`, what CDK's `enforce_ssl` and the app's store write) to every request, where S3 applies
it to requests without TLS only. The clients these stand-ins stand for (the AWS CLI, boto3) speak
TLS to S3, so here the condition is taken as S3 would take it for them: the request is secure,
and a statement that holds only when it is not does not apply. Any other condition is left as
moto has it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

INSECURE_ONLY = {"Bool": {"aws:SecureTransport": "false"}}


def applies_over_tls(statement: dict[str, Any]) -> bool:
    condition = statement.get("Condition")
    return not (condition and json.loads(json.dumps(condition)) == INSECURE_ONLY)


def install(_emulator: Any = None) -> Callable[[], None]:
    from moto.iam.access_control import IAMPolicy, PermissionResult
    from moto.s3.models import FakeBucket

    original = FakeBucket.get_permission

    def get_permission(bucket: Any, action: str, resource: str) -> Any:
        if bucket.policy is None:
            return PermissionResult.NEUTRAL
        policy = json.loads(bucket.policy.decode())
        statements = policy.get("Statement", [])
        statements = [statements] if isinstance(statements, dict) else statements
        kept = [s for s in statements if applies_over_tls(s)]
        if not kept:
            return PermissionResult.NEUTRAL
        return IAMPolicy(json.dumps(policy | {"Statement": kept})).is_action_permitted(action, resource)

    FakeBucket.get_permission = get_permission

    def undo() -> None:
        FakeBucket.get_permission = original

    return undo
