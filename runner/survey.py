"""`python -m runner.survey [BACKEND...] --dry-run [-c KEY=VALUE]`: the survey's preflight.

Before anything bills, one table of what would run where: the account (STS GetCallerIdentity) and
the Session Manager plugin; per backend (the default ones, or those named, opt-in ones included)
its region and failover regions (from the app's config with the `-c` context), whether its
instance type is offered there, the account's quota for it (Service Quotas, summed per quota and
region over the backends that share it), the images the app would build, its hourly list price
and the worst case of one time-to-live. A backend that cannot run is left out with its reason.
Only the preflight exists yet: without `--dry-run` the command says so (exit 2). Exit 0 when at
least one backend can run, 1 when none can; no credentials is one line (exit 2) and calls nothing.
"""

from __future__ import annotations

import argparse

from catalog.backends import EC2_KINDS
from runner.cli.options import add_aws_switch, add_results_dir
from runner.cli.session import main_guard
from runner.cloud.aws import boto_client, credentials_configured
from runner.cloud.preflight import (
    PLUGIN,
    Quotas,
    account_check,
    choose_backends,
    load_plan,
    plugin_check,
    run_preflight,
)
from runner.cloud.stack_up import parse_context
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence
from runner.render.tables import print_report

TIMEOUT_S = 20.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.survey", description=__doc__.splitlines()[0])
    parser.add_argument("backends", nargs="*", metavar="BACKEND", help="backends to survey (default: the default ones)")
    parser.add_argument("--dry-run", action="store_true", help="the preflight only: check, print the plan, stop")
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE", help="CDK context")
    parser.add_argument("--plugin", default=PLUGIN, help="the Session Manager plugin's name or path")
    add_aws_switch(parser, no_aws_help=None)
    add_results_dir(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    chosen = choose_backends(args.backends)
    if not args.dry_run:
        raise RunnerError("only the preflight exists yet: run python -m runner.survey --dry-run")
    context = parse_context(args.context)
    config, refused = load_plan(context, chosen, None)
    if not (args.aws or credentials_configured()):
        raise RunnerError("no AWS credentials configured: the preflight asks STS and Service Quotas (or pass --aws)")
    home = config.backends[0].region if config.backends else "us-east-1"
    account = account_check(boto_client("sts", home, TIMEOUT_S))
    clients: dict[str, object] = {}

    def quotas_client(region: str) -> object:
        if region not in clients:
            clients[region] = boto_client("service-quotas", region, TIMEOUT_S)
        return clients[region]

    needs_plugin = any(b.spec.kind in EC2_KINDS for b in config.backends)
    preflight = run_preflight(
        config, chosen, account, Quotas(quotas_client), plugin_check(args.plugin, needs_plugin), refused
    )
    evidence = Evidence("survey", {"backends": chosen, "context": context, "dry_run": True}, args.results_dir)
    evidence.data["preflight"] = preflight.to_json()
    evidence.data["records"] = [r["backend"] for r in evidence.data["preflight"]["rows"] if r["runs"]]
    for line in preflight.notices:
        evidence.notice(line)
    path = evidence.finish()
    print_report(evidence.data)
    print(f"evidence: {path}")
    return 0 if any(r.runs for r in preflight.rows) else 1


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
