"""`python -m runner.sweep [--regions ...|all] [--delete]`: what is left, and billing, and until when.

Across the four US regions plus every region the app deployed to (placement.json) or may fail
over to (its stacks' candidate regions) by default, or every commercial region with `--regions
all` (a region the account has not enabled is one line, not a stop): everything this app made,
told by its tag (`app=inference-survey`,
and for a volume the instance it is attached to), and everything that bills by the hour whatever
its tag: instances, EBS volumes, SageMaker endpoints, running SageMaker transform jobs, NAT
gateways and Elastic IPs. Also ours that do not bill by the hour but are left over: endpoint
configs, models, Auto Scaling groups, the app's CloudFormation stacks, open SSM sessions to its
instances, and the app's S3 buckets (the async and import stacks own one each; billing while they
hold objects). Where Custom Model Import is offered (catalog IMPORT_REGIONS), every imported model
(it is not in CloudFormation, so no stack removes it: billing, since it is charged per Custom Model
Unit-minute while active and for storage every month while it exists) and every import job still
running; and the repositories of the images the app builds and the app's store of weights and
compiled graphs in each region, which the region's store stack retains and `cdk destroy` leaves so the
next deploy builds, copies and compiles nothing (their storage cost a month; kept on purpose, so
not a failure; `--delete --purge-images` removes them). A table per region; the exit status is 1 while
anything billing is left that is not kept on purpose. Each of our
groups and endpoints shows its time-to-live: when its scheduled action (or its stack's expiry)
takes it to zero. `--delete` prints what it will remove, then removes ours only: our running
transform jobs are stopped and our buckets emptied (every object version) before the stacks go,
so that CloudFormation can delete them (emptying on `cdk destroy` would need a custom-resource
Lambda); then the stacks (CloudFormation does the rest), what they left, and our imported models.
An import job cannot be stopped (Bedrock has no such call): it is reported. Nothing else is
ever touched.
"""

from __future__ import annotations

import argparse

from catalog.offerings import COMMERCIAL_REGIONS
from runner.cli.options import add_aws_switch, add_results_dir
from runner.cli.session import main_guard
from runner.cloud.aws import check_region, require_aws
from runner.cloud.cleanup.leftovers import REGIONS, default_regions, sweep_regions
from runner.cloud.cleanup.removal import delete_ours
from runner.core.console import console
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence
from runner.render.sweep import SweepFile
from runner.render.tables import print_report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.sweep", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--regions",
        help="comma-separated regions, or `all` for every commercial region "
        f"(default: {','.join(REGIONS)} and wherever the app deployed or may fail over to)",
    )
    parser.add_argument("--delete", action="store_true", help="remove what this app left (prints the list first)")
    parser.add_argument(
        "--purge-images",
        action="store_true",
        help="with --delete: also remove the images the app built and its store of weights and graphs "
        "(kept so the next deploy builds, copies and compiles nothing)",
    )
    parser.add_argument("--wait", type=float, default=900.0, help="seconds to wait for each stack deletion")
    add_aws_switch(parser, no_aws_help=None)
    add_results_dir(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.regions == "all":
        regions = list(COMMERCIAL_REGIONS)
    elif args.regions:
        regions = [check_region(r.strip()) for r in args.regions.split(",") if r.strip()]
    else:
        regions = default_regions()
    if not regions:
        raise RunnerError("--regions: give at least one region")
    require_aws("runner.sweep lists resources through the AWS API", args.aws)
    evidence = Evidence(SweepFile, {"regions": regions, "delete": args.delete}, args.results_dir)
    file = evidence.file
    found, problems, skipped = sweep_regions(regions)
    file.found, file.problems = list(found), list(problems)
    for line in [*problems, *skipped]:
        evidence.notice(line)
    if args.purge_images and not args.delete:
        raise RunnerError("--purge-images removes the kept images with --delete: give both")
    if args.delete:
        doomed = [f for f in found if f.ours and (args.purge_images or not f.kept)]
        console.print(f"[bold]removing {len(doomed)} item(s) of this app[/bold] (nothing else is touched):")
        for item in doomed:
            console.print(f"  {item.region} {item.kind} {item.id} {item.detail}")
        file.deleted = delete_ours(found, args.wait, purge_kept=args.purge_images)
        found, problems, _ = sweep_regions(regions)
        file.problems = list(problems)
        for line in problems:
            evidence.notice(line)
    file.records = list(found)
    evidence.finish()
    print_report(file)
    evidence.announce()
    # What is kept on purpose (the built images, storage only) is listed with its cost, not a failure.
    return 1 if any(f.billing and not f.kept for f in found) or problems else 0


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
