"""Bedrock Custom Model Import, which CloudFormation does not cover: the weights copy (the stack's
CodeBuild project fills the stack's bucket from the Hugging Face hub), the architecture check
before any import, the import job and its end, the imported model by name, deleting it, and
listing ours (for the sweep).

Every call and field is named as botocore's service model names it (`bedrock` 2023-04-20):
CreateModelImportJob (jobName, importedModelName, roleArn, modelDataSource.s3DataSource.s3Uri,
jobTags, importedModelTags), GetModelImportJob (status InProgress | Completed | Failed,
failureMessage), GetImportedModel (modelIdentifier: a name or an ARN; customModelUnits.
customModelUnitsPerModelCopy), ListImportedModels (modelSummaries), ListModelImportJobs
(statusEquals, modelImportJobSummaries), DeleteImportedModel, ListTagsForResource (resourceARN,
tags as key/value). There is no call that stops an import job.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from catalog.backends import BackendKind
from catalog.contract import APP_TAG, BACKEND_TAG_KEY, BackendOutput
from runner.cloud.image_builds import RUNNING, BuildRecord, build_record, follow, last_log_lines, start_build
from runner.core.errors import RunnerError, aws_error_code, describe
from runner.core.typed_json import FlatJson

# The model architectures Custom Model Import accepts, as the `architectures` of a Hugging Face
# config.json names them. Source: Amazon Bedrock user guide, "Import a customized model into Amazon
# Bedrock" (model-customization-import-model.html), section "Supported architectures": Mistral,
# Mixtral, Flan (T5), Llama 2/3/3.1/3.2/3.3 and Mllama, GPTBigCode, Qwen2 and Qwen2.5, Qwen2-VL,
# Qwen2.5-VL; "Invoke your imported model" (invoke-imported-model.html) names Qwen2.5, Qwen2-VL,
# Qwen2.5-VL and GPT-OSS imports, and AWS's GPT-OSS announcement (2025-11) adds GPT-OSS. Read
# 2026-12-01. An architecture missing here is refused before any job starts; AWS still has the
# last word (a job that fails says why in its failureMessage).
SUPPORTED_ARCHITECTURES = frozenset(
    {
        "LlamaForCausalLM",
        "MllamaForConditionalGeneration",
        "MistralForCausalLM",
        "MixtralForCausalLM",
        "T5ForConditionalGeneration",
        "GPTBigCodeForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen2VLForConditionalGeneration",
        "Qwen2_5_VLForConditionalGeneration",
        "GptOssForCausalLM",
    }
)
ARCHITECTURES_SOURCE = "Bedrock user guide, Custom Model Import, Supported architectures (read 2026-12-01)"
# What an imported model costs, as AWS bills it (the cost command prices it; this only says how).
PRICE_LINE = "billed per Custom Model Unit per minute in 5-minute windows while active, plus storage per CMU-month"
IN_PROGRESS, COMPLETED, FAILED = "InProgress", "Completed", "Failed"
# What the copy must leave in the bucket before an import can start.
CONFIG_FILE = "config.json"
WEIGHTS_SUFFIX = ".safetensors"


class ImportFailed(Exception):
    """The copy or the import job failed in AWS: one line, exit status 1 (not bad input)."""


def import_tags(backend: str) -> list[dict[str, str]]:
    """The app's tag and the backend's, in Bedrock's key/value form."""
    return [{"key": APP_TAG[0], "value": APP_TAG[1]}, {"key": BACKEND_TAG_KEY, "value": backend}]


def import_tags_are_ours(tags: list[dict[str, str]] | None) -> bool:
    """The app's tag among Bedrock's key/value tags."""
    return any(t.get("key") == APP_TAG[0] and t.get("value") == APP_TAG[1] for t in tags or [])


def check_output(output: BackendOutput) -> BackendOutput:
    """A bedrock-import output with everything an import needs, or one line saying what is missing."""
    if output.kind != BackendKind.BEDROCK_IMPORT:
        raise RunnerError(f"backend {output.name} is a {output.kind} backend, not a Custom Model Import one")
    missing = [
        f for f in ("bucket", "input_prefix", "model_name", "import_role_arn", "weights_job") if not getattr(output, f)
    ]
    if missing:
        raise RunnerError(f"backend {output.name}: its stack output lacks {', '.join(missing)}; redeploy its stack")
    return output


def prefix_of(output: BackendOutput) -> str:
    """The weights' folder in the bucket, ending in one slash."""
    prefix = (output.input_prefix or "").strip("/")
    return f"{prefix}/" if prefix else ""


def weights_uri(output: BackendOutput) -> str:
    return f"s3://{output.bucket}/{prefix_of(output)}"


def weights_in_bucket(s3: Any, output: BackendOutput) -> list[str]:
    """The files under the weights' prefix, or [] unless config.json and a safetensors file are there."""
    prefix = prefix_of(output)
    names: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=output.bucket, Prefix=prefix):
        names += [o["Key"][len(prefix) :] for o in page.get("Contents", [])]
    complete = CONFIG_FILE in names and any(n.endswith(WEIGHTS_SUFFIX) for n in names)
    return sorted(names) if complete and copy_marked_complete(s3, output) else []


def copy_marked_complete(s3: Any, output: BackendOutput) -> bool:
    """The copy job's last step writes `<prefix>.complete` beside the weights (weights_copy.sh):
    without it a copy may have died half-way, and the weights are copied again."""
    from botocore.exceptions import ClientError

    try:
        s3.head_object(Bucket=output.bucket, Key=prefix_of(output).rstrip("/") + ".complete")
    except ClientError as error:
        if aws_error_code(error) in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    return True


def copy_weights(
    codebuild: Any,
    output: BackendOutput,
    *,
    poll_s: float,
    on_phase: Callable[[dict[str, Any]], None],
    logs: Any | None = None,
) -> BuildRecord:
    """Start the weights job (or follow the one running) to its end; the build's record, or
    ImportFailed with the failed phase's reason (and the build's last log lines) on one line."""
    try:
        build, _ = start_build(codebuild, output.weights_job)
    except Exception as error:
        raise ImportFailed(f"could not start the weights copy {output.weights_job}: {describe(error)}") from None
    if build["buildStatus"] == RUNNING:
        build = follow(codebuild, build["id"], poll_s, on_phase)
    record = replace(build_record(output, build), project=output.weights_job)
    if build["buildStatus"] != "SUCCEEDED":
        reason = record.failure or f"phase {record.failed_phase or '?'} {build['buildStatus']}"
        tail = last_log_lines(logs, build, count=2) if logs is not None else ""
        reason = f"{reason}; last log lines: {tail}" if tail else reason
        raise ImportFailed(f"weights copy {build['id']} {build['buildStatus']}: {' '.join(str(reason).split())}")
    return record


def read_architectures(s3: Any, output: BackendOutput) -> list[str]:
    """`architectures` of the config.json the copy left in the bucket."""
    key = prefix_of(output) + CONFIG_FILE
    where = f"s3://{output.bucket}/{key}"
    try:
        body = s3.get_object(Bucket=output.bucket, Key=key)["Body"].read()
    except Exception as error:
        raise RunnerError(f"cannot read {where}: {describe(error)}") from None
    try:
        config = json.loads(body)
    except ValueError:
        raise RunnerError(f"{where} is not JSON") from None
    architectures = config.get("architectures") if isinstance(config, dict) else None
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures) or not architectures:
        raise RunnerError(f"{where} names no architectures: Custom Model Import needs one it supports")
    return architectures


def check_architectures(architectures: list[str], where: str) -> None:
    """Refuse, in one line, an architecture Custom Model Import does not accept."""
    refused = [a for a in architectures if a not in SUPPORTED_ARCHITECTURES]
    if refused:
        raise RunnerError(
            f"{where}: architecture {', '.join(refused)} is not one Custom Model Import accepts "
            f"({', '.join(sorted(SUPPORTED_ARCHITECTURES))}; {ARCHITECTURES_SOURCE}); no import job was started"
        )


def find_imported_model(bedrock: Any, name_or_arn: str) -> dict[str, Any] | None:
    """GetImportedModel by name or ARN; None when there is none."""
    try:
        return bedrock.get_imported_model(modelIdentifier=name_or_arn)
    except Exception as error:
        if aws_error_code(error) == "ResourceNotFoundException":
            return None
        raise


def model_units(model: dict[str, Any]) -> int | None:
    """Custom Model Units per model copy: what AWS bills by the minute while a copy is active."""
    units = (model.get("customModelUnits") or {}).get("customModelUnitsPerModelCopy")
    return int(units) if units is not None else None


def running_import(bedrock: Any, model_name: str) -> dict[str, Any] | None:
    """An import job still in progress for this model name (a second one would be refused)."""
    return next((j for j in import_jobs(bedrock, IN_PROGRESS) if j.get("importedModelName") == model_name), None)


def import_jobs(bedrock: Any, status: str | None = None) -> list[dict[str, Any]]:
    params = {"statusEquals": status} if status else {}
    jobs: list[dict[str, Any]] = []
    for page in bedrock.get_paginator("list_model_import_jobs").paginate(**params):
        jobs += page.get("modelImportJobSummaries", [])
    return jobs


def job_name(model_name: str, now: datetime | None = None) -> str:
    """A new job's name: the model's, then the UTC time (63 characters at most)."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return f"{model_name[: 63 - len(stamp) - 1]}-{stamp}"


def start_import(bedrock: Any, output: BackendOutput, name: str) -> str:
    """CreateModelImportJob from the bucket's weights, tagged as the app's; the job's ARN."""
    tags = import_tags(output.name)
    try:
        response = bedrock.create_model_import_job(
            jobName=name,
            importedModelName=output.model_name,
            roleArn=output.import_role_arn,
            modelDataSource={"s3DataSource": {"s3Uri": weights_uri(output)}},
            jobTags=tags,
            importedModelTags=tags,
        )
    except Exception as error:
        raise ImportFailed(f"could not start import job {name}: {describe(error)}") from None
    return response["jobArn"]


def follow_import(
    bedrock: Any, job_arn: str, *, poll_s: float, on_poll: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """GetModelImportJob until the job ends; ImportFailed with its failureMessage when it failed."""
    while True:
        job = bedrock.get_model_import_job(jobIdentifier=job_arn)
        if on_poll is not None:
            on_poll(job)
        if job.get("status") == FAILED:
            message = " ".join(str(job.get("failureMessage") or "no failureMessage given").split())
            raise ImportFailed(f"import job {job.get('jobName', job_arn)} failed: {message}")
        if job.get("status") != IN_PROGRESS:
            return job
        time.sleep(poll_s)


def delete_imported_model(bedrock: Any, name_or_arn: str) -> bool:
    """DeleteImportedModel; False when there was none."""
    try:
        bedrock.delete_imported_model(modelIdentifier=name_or_arn)
    except Exception as error:
        if aws_error_code(error) == "ResourceNotFoundException":
            return False
        raise
    return True


def resource_tags(bedrock: Any, arn: str) -> list[dict[str, str]]:
    return bedrock.list_tags_for_resource(resourceARN=arn).get("tags", [])


def imported_models(bedrock: Any) -> list[dict[str, Any]]:
    """Every imported model in the region, each with its tags and `ours`."""
    models: list[dict[str, Any]] = []
    for page in bedrock.get_paginator("list_imported_models").paginate():
        for summary in page.get("modelSummaries", []):
            tags = resource_tags(bedrock, summary["modelArn"])
            models.append(summary | {"tags": tags, "ours": import_tags_are_ours(tags)})
    return models


@dataclass(frozen=True)
class ModelRecord(FlatJson):
    """What the evidence keeps of an imported model (GetImportedModel's answer), with the price
    AWS bills it at."""

    model_arn: str | None
    model_name: str | None
    architecture: str | None
    custom_model_units: int | None
    custom_model_units_version: str | None
    instruct_supported: bool | None
    created: str | None
    job_arn: str | None
    price: str = PRICE_LINE


def model_record(model: dict[str, Any]) -> ModelRecord:
    """An imported model as GetImportedModel describes it, kept as its record."""
    return ModelRecord(
        model_arn=model.get("modelArn"),
        model_name=model.get("modelName"),
        architecture=model.get("modelArchitecture"),
        custom_model_units=model_units(model),
        custom_model_units_version=(model.get("customModelUnits") or {}).get("customModelUnitsVersion"),
        instruct_supported=model.get("instructSupported"),
        created=str(model.get("creationTime")) if model.get("creationTime") else None,
        job_arn=model.get("jobArn"),
    )
