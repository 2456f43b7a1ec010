"""The steps of `runner.model_import`, each kept in the evidence: copy the weights inside AWS
(skipped when they are there), check the architecture, import (or follow the running job, or find
the model already imported), show where things stand, delete the imported model. Each step is
kept as a record of its own shape (the dataclasses below), in the order it was taken."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from catalog.contract import BackendOutput
from runner.cloud.aws import boto_client
from runner.cloud.image_builds import BuildRecord
from runner.cloud.jobs.custom_model_import import (
    ARCHITECTURES_SOURCE,
    PRICE_LINE,
    ImportFailed,
    ModelRecord,
    check_architectures,
    copy_weights,
    delete_imported_model,
    find_imported_model,
    follow_import,
    job_name,
    model_record,
    model_units,
    read_architectures,
    running_import,
    start_import,
    weights_in_bucket,
    weights_uri,
)
from runner.core.console import console
from runner.core.evidence import Evidence, EvidenceFile
from runner.core.typed_json import UNSET, FlatJson, JsonValue, Unset, flat, where_set


@dataclass(frozen=True)
class ModelStep(FlatJson):
    """The imported model found, imported or deleted: its record, then the step and its outcome."""

    model: ModelRecord = flat()
    step: str
    outcome: str


@dataclass(frozen=True)
class JobStep(FlatJson):
    """An import job started or followed."""

    step: str
    job_arn: str
    job_name: str
    outcome: str


@dataclass(frozen=True)
class ArchitectureStep(FlatJson):
    """The architectures the weights' config.json names, and where Custom Model Import lists those it takes."""

    step: str
    architectures: list[str]
    source: str


@dataclass(frozen=True)
class ImportEnded(FlatJson):
    """The import job at its end: how it ended, how long it was followed, when it was made and ended
    (`failure` for one that failed)."""

    step: str
    job_arn: str
    job_name: str | None = where_set()
    status: str | None = None
    failure: str | None = where_set()
    followed_s: float | None = where_set()
    created: str | Unset | None = where_set(UNSET)
    ended: str | Unset | None = where_set(UNSET)


@dataclass(frozen=True)
class CopyStep(FlatJson):
    """The weights copy: skipped (they were there) or copied (its build's record after it), and the
    files in the bucket."""

    step: str
    outcome: str
    files: list[str]
    build: BuildRecord | None = flat(default=None)


@dataclass(frozen=True)
class StatusStep(FlatJson):
    """Where things stand: the weights in the bucket, the import job running, the imported model."""

    step: str
    weights: list[str]
    running_job: str | None
    model: ModelRecord | None


@dataclass(frozen=True)
class NothingToDelete(FlatJson):
    step: str
    model_name: str
    outcome: str


ImportStep = ModelStep | JobStep | ArchitectureStep | ImportEnded | CopyStep | StatusStep | NothingToDelete


@dataclass(kw_only=True)
class ModelImportFile(EvidenceFile):
    """Model-import evidence: each step in the order taken (read back as written: no table reads
    them), and why the action failed or was refused, where it was."""

    COMMAND = "model_import"
    records: list[ImportStep | JsonValue] = field(default_factory=list)
    failure: str | None = where_set()
    refused: str | None = where_set()


@dataclass(frozen=True)
class StepOptions:
    poll_s: float = 15.0
    recopy: bool = False


def import_model(output: BackendOutput, bedrock: Any, evidence: Evidence[ModelImportFile], options: StepOptions) -> int:
    existing = find_imported_model(bedrock, output.model_name)
    if existing is not None:
        evidence.add_record(ModelStep(model_record(existing), "model", "already imported"))
        console.print(
            f"{output.model_name} is already imported in {output.region}: no import job started "
            "(runner.model_import delete, then import, to import it again)"
        )
        print_model(existing)
        return 0
    s3 = boto_client("s3", output.region, 30)
    uri = weights_uri(output)
    job = running_import(bedrock, output.model_name)
    if job is not None:
        console.print(f"an import job for {output.model_name} is running: following {job['jobName']}")
        job_arn, name = job["jobArn"], job["jobName"]
        evidence.add_record(JobStep("import", job_arn, name, "followed"))
    else:
        copy_if_needed(output, s3, evidence, options)
        architectures = read_architectures(s3, output)
        evidence.add_record(ArchitectureStep("architecture", architectures, ARCHITECTURES_SOURCE))
        check_architectures(architectures, f"{uri}config.json")
        name = job_name(output.model_name)
        console.print(f"importing {uri} as {output.model_name} in {output.region} (job {name}) …")
        job_arn = start_import(bedrock, output, name)
        evidence.add_record(JobStep("import", job_arn, name, "started"))
    started = time.monotonic()
    try:
        job = follow_import(bedrock, job_arn, poll_s=options.poll_s)
    except ImportFailed as failure:
        evidence.add_record(ImportEnded("import", job_arn, status="Failed", failure=str(failure)))
        raise
    created, ended = job.get("creationTime"), job.get("endTime")
    evidence.add_record(
        ImportEnded(
            "import", job_arn, name, job.get("status"), followed_s=round(time.monotonic() - started, 3),
            created=str(created) if created else None, ended=str(ended) if ended else None,
        )
    )  # fmt: skip
    model = find_imported_model(bedrock, job.get("importedModelArn") or output.model_name)
    if model is None:
        raise ImportFailed(f"import job {name} completed, but there is no imported model {output.model_name}")
    evidence.add_record(ModelStep(model_record(model), "model", "imported"))
    print_model(model)
    return 0


def copy_if_needed(output: BackendOutput, s3: Any, evidence: Evidence[ModelImportFile], options: StepOptions) -> None:
    uri = weights_uri(output)
    present = [] if options.recopy else weights_in_bucket(s3, output)
    if present:
        console.print(f"the weights are in {uri} ({len(present)} files): copy skipped (--recopy to copy again)")
        evidence.add_record(CopyStep("copy", "skipped", present))
        return
    console.print(f"copying {output.model_id} into {uri} with CodeBuild project {output.weights_job} …")
    started = time.monotonic()
    record = copy_weights(
        boto_client("codebuild", output.region, 30),
        output,
        poll_s=options.poll_s,
        on_phase=lambda phase: console.print(
            f"  {phase['phaseType']:<16} {phase['phaseStatus']:<10} ({time.monotonic() - started:.0f} s in)"
        ),
        logs=boto_client("logs", output.region, 30),
    )
    present = weights_in_bucket(s3, output)
    evidence.add_record(CopyStep("copy", "copied", present, record))
    if not present:
        raise ImportFailed(f"weights copy {record.build_id} succeeded, but {uri} holds no config.json and safetensors")


def show_status(output: BackendOutput, bedrock: Any, evidence: Evidence[ModelImportFile], options: StepOptions) -> int:
    uri = weights_uri(output)
    present = weights_in_bucket(boto_client("s3", output.region, 30), output)
    job = running_import(bedrock, output.model_name)
    model = find_imported_model(bedrock, output.model_name)
    evidence.add_record(
        StatusStep("status", present, job.get("jobArn") if job else None, model_record(model) if model else None)
    )
    print(f"weights: {len(present)} files in {uri}" if present else f"weights: not in {uri}")
    if job is not None:
        print(f"import job running: {job['jobName']} (started {job.get('creationTime')})")
    if model is None:
        print(f"imported model: none named {output.model_name} in {output.region}")
    else:
        print_model(model)
    return 0


def delete_model(output: BackendOutput, bedrock: Any, evidence: Evidence[ModelImportFile], options: StepOptions) -> int:
    model = find_imported_model(bedrock, output.model_name)
    job = running_import(bedrock, output.model_name)
    if job is not None:
        console.print(
            f"[yellow]note:[/yellow] import job {job['jobName']} is still running (it cannot be stopped): "
            "delete again once it ends"
        )
    if model is None:
        evidence.add_record(NothingToDelete("delete", output.model_name, "none to delete"))
        print(f"nothing to delete: no imported model {output.model_name} in {output.region}")
        return 0
    delete_imported_model(bedrock, model["modelArn"])
    evidence.add_record(ModelStep(model_record(model), "delete", "deleted"))
    print(f"deleted imported model {output.model_name} ({model['modelArn']})")
    print(f"the weights stay in {weights_uri(output)} until the stack goes (runner.sweep --delete empties the bucket)")
    return 0


def print_model(model: dict[str, Any]) -> None:
    units = model_units(model)
    print(f"imported model: {model['modelArn']}")
    print(f"custom model units: {units} per model copy" if units is not None else "custom model units: not reported")
    print(f"price: {PRICE_LINE}")
