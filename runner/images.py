"""`python -m runner.images build BACKEND`: rebuild a backend's server image in AWS and follow it.

The backend's stack declares the ECR repository and the CodeBuild project (arm64 compute for g5g,
x86_64 for the Neuron image), names the project in the backend's stack output, and starts the
build itself on every deploy (the build skips an image already pushed, then brings back the
servers waiting for it). This command rebuilds on purpose (FORCE_BUILD=1), prints each phase as
it ends and how long the build took; the build then restarts the servers that run the image, so
the new image serves. A build that fails prints its last log lines. `status BACKEND` shows the
latest build. Ctrl-C stops following, not the build.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from catalog.contract import BackendOutput
from runner.aws import boto_client, check_region, credentials_configured
from runner.errors import RunnerError, describe
from runner.evidence import DEFAULT_RESULTS, Evidence
from runner.outputs import read_outputs_file, read_stack_outputs
from runner.session import console, main_guard
from runner.tables import print_report

RUNNING = "IN_PROGRESS"
LIMIT_ERRORS = ("AccountLimitExceededException", "ResourceAlreadyExistsException")


def image_state(ecr: Any, image_uri: str) -> str:
    """`present`, `missing`, or `no-repository` for an image in this account's ECR."""
    from botocore.exceptions import ClientError

    repository = image_uri.split("/", 1)[1].rsplit(":", 1)[0]
    tag = image_uri.rsplit(":", 1)[1]
    try:
        ecr.describe_images(repositoryName=repository, imageIds=[{"imageTag": tag}])
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
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


def start_build(codebuild: Any, project: str, *, force: bool = False) -> tuple[dict[str, Any], bool]:
    """(build, started): a new build, or the one already running when the project's limit of one
    refuses a second."""
    from botocore.exceptions import ClientError

    overrides = [{"name": "FORCE_BUILD", "value": "1", "type": "PLAINTEXT"}] if force else []
    try:
        return codebuild.start_build(projectName=project, environmentVariablesOverride=overrides)["build"], True
    except ClientError as error:
        running = latest_build(codebuild, project)
        if (
            error.response.get("Error", {}).get("Code") in LIMIT_ERRORS
            and running
            and running["buildStatus"] == RUNNING
        ):
            return running, False
        raise


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


def build_record(backend: BackendOutput, build: dict[str, Any]) -> dict[str, Any]:
    started, ended = build.get("startTime"), build.get("endTime")
    seconds = (
        (ended - started).total_seconds() if hasattr(started, "isoformat") and hasattr(ended, "isoformat") else None
    )
    failed = next((p for p in build.get("phases", []) if p.get("phaseStatus") not in (None, "SUCCEEDED")), None)
    return {
        "backend": backend.name,
        "region": backend.region,
        "project": backend.image_build_project,
        "image": backend.image,
        "build_id": build["id"],
        "status": build["buildStatus"],
        "duration_s": seconds,
        "phases": [
            {k: str(v) for k, v in p.items() if k in ("phaseType", "phaseStatus", "durationInSeconds")}
            for p in build.get("phases", [])
        ],
        "failed_phase": failed.get("phaseType") if failed else None,
        "failure": " ".join(c.get("message", "") for c in (failed or {}).get("contexts", [])).strip() or None,
        "logs": (build.get("logs") or {}).get("deepLink"),
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.images", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("build", "status"))
    parser.add_argument("backend", help="g5g, inf2 or trn1 (a backend whose stack builds its image)")
    parser.add_argument("--outputs-file", type=Path, help="read stack outputs from `cdk deploy --outputs-file` JSON")
    parser.add_argument("--region", help="look for the app's stacks only in this region")
    parser.add_argument("--no-follow", action="store_true", help="start the build and return")
    parser.add_argument("--poll", type=float, default=15.0, help="seconds between status reads (default: 15)")
    parser.add_argument("--aws", dest="aws", action="store_true", default=None, help="use AWS even without credentials")
    parser.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS, help="where evidence files go")
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not (args.aws or credentials_configured()):
        raise RunnerError("runner.images starts builds through the AWS API, and no AWS credentials are configured")
    if args.region:
        check_region(args.region)
    backend = find_backend(args.backend, args.outputs_file, args.region)
    codebuild = boto_client("codebuild", backend.region, 30)
    evidence = Evidence("images", {"action": args.action, "backend": backend.name}, args.results_dir)
    if args.action == "status":
        ids = codebuild.list_builds_for_project(projectName=backend.image_build_project, sortOrder="DESCENDING")["ids"]
        if not ids:
            raise RunnerError(
                f"project {backend.image_build_project} has never built: python -m runner.images build {backend.name}"
            )
        (build,) = codebuild.batch_get_builds(ids=ids[:1])["builds"]
    else:
        try:
            build, started = start_build(codebuild, backend.image_build_project, force=True)
        except Exception as error:
            raise RunnerError(
                f"could not start {backend.image_build_project} in {backend.region}: {describe(error)}"
            ) from None
        if started:
            console.print(f"started {build['id']} in {backend.region}: {backend.image}")
        else:
            console.print(f"a build is already running: following {build['id']} (one build at a time)")
        if not args.no_follow:
            started = time.monotonic()
            try:
                build = follow(
                    codebuild,
                    build["id"],
                    args.poll,
                    lambda phase: console.print(
                        f"  {phase['phaseType']:<16} {phase['phaseStatus']:<10} {phase.get('durationInSeconds', '-')} s "
                        f"({time.monotonic() - started:.0f} s in)"
                    ),
                )
            except KeyboardInterrupt:
                console.print(
                    f"[yellow]stopped following; {build['id']} goes on in AWS[/yellow] (runner.images status {backend.name})"
                )
                raise
    record = build_record(backend, build)
    if build["buildStatus"] == "FAILED":
        record["last_log_lines"] = last_log_lines(boto_client("logs", backend.region, 30), build)
    evidence.add_record(record)
    path = evidence.finish()
    print_report(evidence.data)
    print(f"evidence: {path}")
    return 0 if build["buildStatus"] in ("SUCCEEDED", RUNNING) else 1


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    table = Table(title="image builds")
    for column in ("backend", "region", "project", "status", "duration", "failed phase", "image"):
        table.add_column(column)
    for row in evidence.get("records", []):
        seconds = row.get("duration_s")
        duration = f"{seconds / 60:.1f} min" if seconds is not None else "-"
        failure = f"{row['failed_phase']}: {row.get('failure') or ''}" if row.get("failed_phase") else ""
        if row.get("last_log_lines"):
            failure += f" (log: {row['last_log_lines']})"
        table.add_row(
            row["backend"], row["region"], row["project"], row["status"], duration, failure, row.get("image") or ""
        )
    out.print(table)


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
