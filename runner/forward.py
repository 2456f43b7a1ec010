"""`python -m runner.forward`: one SSM port forward per ready EC2 server, tracked in a state file.

For each EC2 server in the stack outputs: its readiness parameter must say `ready` (it names the
instance the Auto Scaling group picked), SSM must report that instance `Online`, then an
`AWS-StartPortForwardingSession` is started through the API and handed to the Session Manager
plugin (as the AWS CLI does: the response in `AWS_SSM_START_SESSION_RESPONSE`, so no token is
on a command line) on a free loopback port. The plugins run detached and are recorded in the
forwards file that every other command reads. Re-running closes the old forwards first;
`--stop` only closes them; `--hold` stays in the foreground until Ctrl-C and then closes them.
"""

from __future__ import annotations

import argparse

from runner.cli.options import add_stack_arguments, parse_forwards
from runner.cli.session import main_guard
from runner.cloud.aws import check_region, credentials_configured, require_aws
from runner.cloud.reach.ssm_forward import PLUGIN, ForwardOptions, close_forwards, find_plugin, forward_all, hold
from runner.core.console import console
from runner.render.forward import outcome_table
from runner.render.tables import stdout


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.forward", description=__doc__.splitlines()[0])
    parser.add_argument("--stop", action="store_true", help="close every forward this runner opened, and exit")
    parser.add_argument("--hold", action="store_true", help="stay in the foreground; Ctrl-C closes the forwards")
    parser.add_argument("--backends", help="comma-separated EC2 backends to forward (default: every one deployed)")
    parser.add_argument("--plugin", default=PLUGIN, help="the Session Manager plugin executable (default: on PATH)")
    parser.add_argument(
        "--open-timeout", type=float, default=30.0, help="seconds for a plugin to open its port (default: 30)"
    )
    add_stack_arguments(parser, no_aws_help="refused: forwarding needs the SSM API")
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    aws = args.aws if args.aws is not None else credentials_configured()
    if args.stop:
        closed = close_forwards(aws)
        stdout.print(f"closed {len(closed)} forward(s)" + "".join(f"\n  {f.backend} (pid {f.pid})" for f in closed))
        return 0
    require_aws("runner.forward opens SSM sessions through the AWS API", args.aws)
    if args.region:
        check_region(args.region)
    options = ForwardOptions(
        backends=[b.strip() for b in args.backends.split(",") if b.strip()] if args.backends else None,
        outputs_file=args.outputs_file,
        region=args.region,
        ports=parse_forwards(args.forward),
        plugin=args.plugin,
        open_timeout_s=args.open_timeout,
    )
    find_plugin(options.plugin)
    previous = close_forwards(aws)
    if previous:
        console.print(f"[dim]closed {len(previous)} earlier forward(s)[/dim]")
    outcomes = forward_all(options)
    stdout.print(outcome_table(outcomes))
    opened = [o.forward for o in outcomes if o.forward]
    if opened and args.hold:
        try:
            hold(opened)
        finally:
            close_forwards(aws)
    return 0 if opened else 1


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
