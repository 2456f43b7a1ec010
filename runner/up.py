"""`python -m runner.up [STACK...] [--extend HOURS]`: deploy, bring every server to ready or to zero.

Each stack is deployed with the pinned CDK CLI into the region its config gives, with what only
the account knows passed in as context: its zones of that region (DescribeAvailabilityZones)
and each server's AMI id (recorded in placement.json with the region, and reused, so a later
deploy does not swap the image under a running server), and the deploy's time-to-live (every
server goes to zero at its expiry; `ttlHours`, default 12, `0` turns it off). Then every backend
is watched (runner/cloud/bring_up/watch/server.py): a group held at zero on purpose (waiting for its image,
stopped by a fault or by the time-to-live) is brought back, a build the image needs is waited
for (or started), a server that fails is left at zero and its watch ends while the others go on.
Only a capacity or quota refusal (at deploy, or no instance within `--launch-timeout`) destroys
the attempt and moves the stack to the next region its backends share. The run ends with what
is still billing, where, at what hourly price, and when the time-to-live takes it to zero.

`--extend HOURS` redeploys what runner.up deployed with the expiry HOURS from now, and nothing else.
`--leave-building` ends a backend whose image is still building as `building` once every other
backend is over (its group waits at zero and its build brings it back: nothing bills), so what is
ready can be measured; `--no-deploy --backends NAMES` then watches those to ready, deploying
nothing (runner.survey does both when an image takes hours to build).
"""

from __future__ import annotations

import argparse

from catalog.backends import stack_names
from runner.cli.options import add_aws_switch, add_results_dir
from runner.cli.session import main_guard
from runner.cloud.aws import require_aws
from runner.cloud.bring_up.all_stacks import extend, up
from runner.cloud.bring_up.one_stack import BUILDING, StackExtended, UpOptions, parse_context
from runner.cloud.bring_up.watch.common import READY
from runner.render.tables import print_report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.up", description=__doc__.splitlines()[0])
    parser.add_argument("stacks", nargs="*", help=f"stacks to bring up (default: all: {', '.join(stack_names())})")
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE", help="CDK context")
    parser.add_argument(
        "--launch-timeout", type=float, default=600.0, help="seconds without any instance before moving region"
    )
    parser.add_argument(
        "--ready-timeout", type=float, help="seconds from launch to ready (default: each backend's own bound + 10 min)"
    )
    parser.add_argument("--poll", type=float, default=15.0, help="seconds between checks (default: %(default)s)")
    parser.add_argument(
        "--build-grace", type=float, default=120.0, help="seconds to wait for the deploy's own image build to show up"
    )
    parser.add_argument("--no-failover", action="store_true", help="stay in the first region")
    parser.add_argument("--backends", help="only these backends of the chosen stacks (comma-separated)")
    parser.add_argument(
        "--no-deploy", action="store_true", help="watch what is deployed to ready, deploying and moving nothing"
    )
    parser.add_argument(
        "--leave-building",
        action="store_true",
        help="once the others are over, leave a backend whose image is still building (at zero; its build "
        "brings it back) instead of waiting for it",
    )
    parser.add_argument(
        "--method", choices=("change-set", "direct"), default="change-set", help="CloudFormation deploy method"
    )
    parser.add_argument(
        "--extend",
        type=float,
        metavar="HOURS",
        help="move the time-to-live of what runner.up deployed to HOURS from now",
    )
    add_aws_switch(parser, no_aws_help=None)
    add_results_dir(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # Before the context is read or anything is deployed: one line, as every AWS command refuses.
    require_aws("runner.up deploys with the CDK CLI and watches through the AWS API", args.aws)
    options = UpOptions(
        stacks=args.stacks,
        context=parse_context(args.context),
        launch_timeout_s=args.launch_timeout,
        ready_timeout_s=args.ready_timeout,
        poll_s=args.poll,
        build_grace_s=args.build_grace,
        method=args.method,
        failover=not args.no_failover,
        results_dir=args.results_dir,
        backends=[b.strip() for b in args.backends.split(",") if b.strip()] if args.backends else None,
        deploy=not args.no_deploy,
        leave_building=args.leave_building,
    )
    if args.extend is not None:
        extended = extend(args.extend, options)
        print_report(extended.file, notices=False)
        extended.announce()
        moved = [r for r in extended.file.records if isinstance(r, StackExtended)]
        return 0 if all(r.outcome == "extended" for r in moved) else 1
    evidence = up(options)
    print_report(evidence.file, notices=False)
    evidence.announce()
    records = evidence.file.records
    done = (READY, BUILDING) if options.leave_building else (READY,)
    return 0 if records and all(isinstance(r, dict) and r["outcome"] in done for r in records) else 1


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
