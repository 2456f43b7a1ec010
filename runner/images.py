"""`python -m runner.images build BACKEND`: rebuild a backend's server image in AWS and follow it.

The region's store stack declares the ECR repository (immutable tags) and the backend's stack the
CodeBuild project (arm64 compute for g5g, x86_64 for the Neuron image), names the project in the
backend's stack output, and starts the build itself on every deploy (the build skips an image
already pushed, then brings back the servers waiting for it). This command starts it now (after a
failed build, say), prints each phase as it ends and how long the build took. The tag is the
source's hash and cannot be pushed over: a build of a source whose image is pushed already skips
it and says so (change images/<folder> for a new image; its deploy replaces the servers). A build
that fails prints its last log lines. `status BACKEND` shows the
latest build. Ctrl-C stops following, not the build.
"""

from __future__ import annotations

import argparse
import time

from runner.cli.options import add_aws_switch, add_outputs_and_region, add_results_dir
from runner.cli.session import main_guard
from runner.cloud.aws import boto_client, check_region, require_aws
from runner.cloud.image_builds import (
    RUNNING,
    ImagesFile,
    build_record,
    find_backend,
    follow,
    last_log_lines,
    start_build,
)
from runner.core.console import console
from runner.core.errors import RunnerError, describe
from runner.core.evidence import Evidence
from runner.render.tables import print_report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.images", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("build", "status"))
    parser.add_argument("backend", help="g5g, inf2 or trn1 (a backend whose stack builds its image)")
    add_outputs_and_region(parser)
    parser.add_argument("--no-follow", action="store_true", help="start the build and return")
    parser.add_argument("--poll", type=float, default=15.0, help="seconds between status reads (default: 15)")
    add_aws_switch(parser, no_aws_help=None)
    add_results_dir(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    require_aws("runner.images starts builds through the AWS API", args.aws)
    if args.region:
        check_region(args.region)
    backend = find_backend(args.backend, args.outputs_file, args.region)
    codebuild = boto_client("codebuild", backend.region, 30)
    evidence = Evidence(ImagesFile, {"action": args.action, "backend": backend.name}, args.results_dir)
    if args.action == "status":
        ids = codebuild.list_builds_for_project(projectName=backend.image_build_project, sortOrder="DESCENDING")["ids"]
        if not ids:
            raise RunnerError(
                f"project {backend.image_build_project} has never built: python -m runner.images build {backend.name}"
            )
        (build,) = codebuild.batch_get_builds(ids=ids[:1])["builds"]
    else:
        try:
            build, started = start_build(codebuild, backend.image_build_project)
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
        record.last_log_lines = last_log_lines(boto_client("logs", backend.region, 30), build)
    evidence.add_record(record)
    evidence.finish()
    print_report(evidence.file)
    evidence.announce()
    return 0 if build["buildStatus"] in ("SUCCEEDED", RUNNING) else 1


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
