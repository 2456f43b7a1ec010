"""Image builds in AWS: whether an image is in the account's ECR, the project's latest build,
starting one (or finding the one running when the project allows one at a time), its last log
lines, following it to its end."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.contract import BackendOutput
from runner.cloud.outputs import read_outputs_file, read_stack_outputs
from runner.core.errors import RunnerError, aws_error_code, describe
from runner.core.evidence import EvidenceFile
from runner.core.typed_json import FlatJson, where_set

RUNNING = "IN_PROGRESS"


LIMIT_ERRORS = ("AccountLimitExceededException", "ResourceAlreadyExistsException")


class BuildRefused(RunnerError):
    """CodeBuild would not start a build (a new account's concurrent-build quota of 0, a project
    gone, a role it cannot assume): the backends that need it fail with AWS's words, the others go on."""


def image_state(ecr: Any, image_uri: str) -> str:
    """`present`, `missing`, or `no-repository` for an image in this account's ECR."""
    from botocore.exceptions import ClientError

    repository = image_uri.split("/", 1)[1].rsplit(":", 1)[0]
    tag = image_uri.rsplit(":", 1)[1]
    try:
        ecr.describe_images(repositoryName=repository, imageIds=[{"imageTag": tag}])
    except ClientError as error:
        code = aws_error_code(error)
        if code == "RepositoryNotFoundException":
            return "no-repository"
        if code == "ImageNotFoundException":
            return "missing"
        raise
    return "present"


def latest_build(codebuild: Any, project: str) -> dict[str, Any] | None:
    ids = codebuild.list_builds_for_project(projectName=project, sortOrder="DESCENDING").get("ids", [])
    if not ids:
        return None
    (build,) = codebuild.batch_get_builds(ids=ids[:1])["builds"]
    return build


def start_build(codebuild: Any, project: str) -> tuple[dict[str, Any], bool]:
    """(build, started): a new build, or the one already running when the project's limit of one
    refuses a second. Any other refusal is BuildRefused, with CodeBuild's own code and message
    (`AccountLimitExceededException: Cannot have more than 0 builds in queue for the account`)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        # No override: the project runs as its stack declares it.
        return codebuild.start_build(projectName=project)["build"], True
    except ClientError as error:
        try:
            running = latest_build(codebuild, project)
        except (BotoCoreError, ClientError):
            running = None
        if aws_error_code(error) in LIMIT_ERRORS and running and running["buildStatus"] == RUNNING:
            return running, False
        raise BuildRefused(f"CodeBuild refused to start {project}: {describe(error)}") from None
    except BotoCoreError as error:
        raise BuildRefused(f"CodeBuild could not be asked to start {project}: {describe(error)}") from None


def last_log_lines(logs: Any, build: dict[str, Any], count: int = 6) -> str:
    """The build's last non-empty log lines, as CodeBuild wrote them to CloudWatch Logs."""
    where = build.get("logs") or {}
    if not where.get("groupName") or not where.get("streamName"):
        return ""
    try:
        events = logs.get_log_events(
            logGroupName=where["groupName"], logStreamName=where["streamName"], limit=200, startFromHead=False
        )["events"]
    except Exception:
        return ""
    lines = [e["message"].strip() for e in events if e["message"].strip()]
    return " | ".join(lines[-count:])


def find_backend(name: str, outputs_file: Path | None, region: str | None) -> BackendOutput:
    reading = read_outputs_file(outputs_file) if outputs_file else read_stack_outputs(region)
    by_name = {b.name: b for b in reading.backends}
    if name not in by_name:
        deployed = ", ".join(sorted(by_name)) or "none"
        raise RunnerError(f"backend {name} is not deployed (deployed: {deployed}); deploy its stack first")
    backend = by_name[name]
    if not backend.image_build_project:
        raise RunnerError(
            f"backend {name} runs an image this app does not build ({backend.image or 'its catalog image'}); "
            "nothing to build"
        )
    return backend


def follow(codebuild: Any, build_id: str, poll_s: float, on_phase) -> dict[str, Any]:
    """Poll the build until it ends; `on_phase(phase)` once for every phase that ended."""
    reported: set[str] = set()
    while True:
        (build,) = codebuild.batch_get_builds(ids=[build_id])["builds"]
        for phase in build.get("phases", []):
            if phase.get("phaseStatus") and phase["phaseType"] not in reported:
                reported.add(phase["phaseType"])
                on_phase(phase)
        if build["buildStatus"] != RUNNING:
            return build
        time.sleep(poll_s)


@dataclass
class BuildRecord(FlatJson):
    """One CodeBuild build as the evidence keeps it (`runner.images`, a weights copy of
    `runner.model_import`): whose, where, which project and image, how it ended and in how long,
    its phases (CodeBuild's names and figures, as text), the phase that failed and why, and its
    log; for a failed image build, the log's last lines."""

    backend: str
    region: str | None
    project: str | None
    image: str | None
    build_id: str
    status: str
    duration_s: float | None = None
    phases: list[dict[str, str]] = field(default_factory=list)
    failed_phase: str | None = None
    failure: str | None = None
    logs: str | None = None
    last_log_lines: str | None = where_set()


def build_record(backend: BackendOutput, build: dict[str, Any]) -> BuildRecord:
    """A build as CodeBuild's BatchGetBuilds describes it, kept as its record."""
    started, ended = build.get("startTime"), build.get("endTime")
    seconds = (
        (ended - started).total_seconds() if hasattr(started, "isoformat") and hasattr(ended, "isoformat") else None
    )
    failed = next((p for p in build.get("phases", []) if p.get("phaseStatus") not in (None, "SUCCEEDED")), None)
    return BuildRecord(
        backend=backend.name,
        region=backend.region,
        project=backend.image_build_project,
        image=backend.image,
        build_id=build["id"],
        status=build["buildStatus"],
        duration_s=seconds,
        phases=[
            {k: str(v) for k, v in p.items() if k in ("phaseType", "phaseStatus", "durationInSeconds")}
            for p in build.get("phases", [])
        ],
        failed_phase=failed.get("phaseType") if failed else None,
        failure=" ".join(c.get("message", "") for c in (failed or {}).get("contexts", [])).strip() or None,
        logs=(build.get("logs") or {}).get("deepLink"),
    )


@dataclass(kw_only=True)
class ImagesFile(EvidenceFile):
    COMMAND = "images"
    records: list[BuildRecord] = field(default_factory=list)


def rebuild_hint(output: BackendOutput, reason: str | None) -> str:
    """What to run when a server's image is missing or its build failed (the runner's own command;
    the catalog and the stacks name none)."""
    if output.image_build_project and reason and reason.startswith(("image build", "image not found")):
        return f"; after a fix: python -m runner.images build {output.name}"
    return ""
