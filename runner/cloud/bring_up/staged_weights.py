"""The app's store in a region (catalog/boot.py), as `runner.up` reads it before it deploys an
endpoint: whether it holds a complete copy of the endpoint's model (its manifest written last, by
the weights copy), so the endpoint reads the weights from S3 instead of the hub; and starting the
copy when it does not, for the next deploy. The servers on EC2 read the store themselves
(inference_constructs/server_scripts/store.sh); a SageMaker endpoint is told at deploy time."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from catalog.boot import WEIGHTS_MANIFEST_VERSION, store_bucket, weights_marker, weights_prefix
from runner.cloud.image_builds import RUNNING, BuildRefused, last_log_lines, latest_build, start_build
from runner.core.errors import aws_error_code, describe


@dataclass(frozen=True)
class StagedCopy:
    """The store's copy of one model in one region: its URI, or why there is none to read."""

    uri: str | None
    why: str = ""
    # True when the copy job can make what is missing (not for a store in another region).
    copy_helps: bool = False


def account_id(sts: Any) -> str:
    return sts.get_caller_identity()["Account"]


def staged_copy(s3: Any, account: str, region: str, model_id: str) -> StagedCopy:
    """The store's complete copy of `model_id` in `region`, never another account's bucket of the
    name (ExpectedBucketOwner) nor one in another region."""
    bucket = store_bucket(account, region)
    try:
        location = s3.get_bucket_location(Bucket=bucket, ExpectedBucketOwner=account).get("LocationConstraint")
    except Exception as error:
        if aws_error_code(error) == "NoSuchBucket":
            return StagedCopy(None, f"the region's store {bucket} does not exist yet", copy_helps=True)
        return StagedCopy(None, f"the region's store {bucket} cannot be read: {describe(error)}")
    location = {None: "us-east-1", "": "us-east-1", "EU": "eu-west-1"}.get(location, location)
    if location != region:
        return StagedCopy(None, f"the store {bucket} is in {location}, not {region}")
    try:
        body = s3.get_object(Bucket=bucket, Key=weights_marker(model_id), ExpectedBucketOwner=account)["Body"].read()
        manifest = json.loads(body)
    except Exception as error:
        if aws_error_code(error) in ("NoSuchKey", "404", "AccessDenied"):
            return StagedCopy(None, f"no complete copy of {model_id} in {bucket} yet", copy_helps=True)
        return StagedCopy(None, f"the copy's manifest in {bucket} cannot be read: {describe(error)}")
    if isinstance(manifest, dict) and manifest.get("version") != WEIGHTS_MANIFEST_VERSION:
        return StagedCopy(
            None, f"the copy of {model_id} in {bucket} was made by an older weights copy", copy_helps=True
        )
    if not isinstance(manifest, dict) or manifest.get("model") != model_id or not manifest.get("files"):
        return StagedCopy(None, f"the copy's manifest in {bucket} is not one for {model_id}")
    return StagedCopy(f"s3://{bucket}/{weights_prefix(model_id)}")


FAILED_BUILD = ("FAILED", "FAULT", "TIMED_OUT", "STOPPED")


def last_failure(logs: Any, last: dict[str, Any] | None) -> str:
    """Why the copy's last build failed, from its own log, where it did: a model the hub refuses
    fails every copy until someone looks, and a new build alone would say nothing of it."""
    if not last or last.get("buildStatus") not in FAILED_BUILD:
        return ""
    why = last_log_lines(logs, last, count=2) if logs is not None else ""
    return f" (the last copy, {last['id']}, {last['buildStatus'].lower().replace('_', ' ')}{': ' + why if why else ''})"


def start_copy(codebuild: Any, project: str, logs: Any = None) -> str:
    """Start the weights copy for the next deploy, unless one is running (the project has no limit
    of its own: see stacks/store_stack.py); what happened, in words."""
    try:
        last = latest_build(codebuild, project)
    except Exception:
        last = None
    if last and last.get("buildStatus") == RUNNING:
        return f"build {last['id']} is making the copy"
    failure = last_failure(logs, last)
    try:
        build, started = start_build(codebuild, project)
    except BuildRefused as error:
        return f"the copy could not be started: {error}{failure}"
    made = f"{'started' if started else 'build'} {build['id']} {'to make' if started else 'is making'} the copy"
    return made + (failure if started else "")
