"""`python -m runner.survey [BACKEND...] [--keep | --down] [--dry-run] [--resume FOLDER]`: the whole survey.

From nothing to a report to nothing, in one results folder (`results/survey-<UTC time>/`):
a preflight before anything bills (the account, the Session Manager plugin, per backend its
region and failover regions, the instance type offered there, the account's quota summed per
quota and region, the images it needs, its hourly price and one time-to-live's worst case; a
backend that cannot run is left out with its reason), then `up` → `forward` → `check` → one
`ask` per backend → demo 1 (filter, rows) → demo 2 → `bench` (the survey's prompt one at a time,
then a concurrency sweep, a prompt-length sweep, and a preset at its objectives with the most
load within them) → `quality` → `cost` → `report` (HTML and Markdown) → teardown of what this run created
and nothing else → a sweep that lists and never deletes. `--dry-run` stops after the preflight.

The backends are the default ones and Bedrock unless named (opt-in ones join when named; `-c
lane=open` serves one open model on all of them). `--keep` leaves what it made running with its
time-to-live armed; `--down` tears it down without asking; with neither, a terminal is asked
and no terminal means teardown. `--resume FOLDER` continues a survey whose machine went away.
Exit 0 when every step passed (a kept survey too), 1 when one failed or a stack it created
outlived its teardown, 2 for bad input, 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

from catalog.config import AppConfig
from catalog.serving import serving
from runner.cli.options import add_aws_switch, add_results_dir
from runner.cli.session import main_guard
from runner.cloud.aws import boto_client, require_aws
from runner.cloud.bring_up.one_stack import parse_context
from runner.cloud.bring_up.preflight import (
    PLUGIN,
    Preflight,
    Quotas,
    account_check,
    choose_backends,
    known_backends,
    load_plan,
    plugin_check,
    run_preflight,
)
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence
from runner.flow.folder import SurveyFolder
from runner.flow.options import MANAGED, SurveyOptions
from runner.flow.survey_run import SurveyRun
from runner.measure.load import parse_numbers
from runner.render.survey import SurveyFile
from runner.render.tables import print_report
from runner.workloads.presets import get_preset

TIMEOUT_S = 20.0
PREFLIGHT_NEEDS = "runner.survey's preflight asks STS and Service Quotas"
# The numeric settings: (group, flag, SurveyOptions field, type, help).
NUMBERS = (
    ("steps", "--repeats", "repeats", int, "bench: timed requests per backend"),
    ("steps", "--demo1-runs", "demo1_runs", int, "demo 1 runs per backend and mode"),
    ("steps", "--demo2-runs", "demo2_runs", int, "demo 2 runs"),
    ("steps", "--quality-items", "quality_items", int, "quality items, 0 to skip"),
    ("steps", "--check-wait", "check_wait_s", float, "check: seconds to wait for health"),
    ("steps", "--capacity-levels", "capacity_levels", int, "bench-workload: most levels of the capacity search"),
    ("steps", "--capacity-seconds", "capacity_seconds", float, "bench-workload: most seconds of the capacity search"),
    ("up", "--poll", "poll_s", float, "up: seconds between checks"),
    ("up", "--launch-timeout", "launch_timeout_s", float, "up: seconds without any instance before moving region"),
    (
        "up",
        "--ready-timeout",
        "ready_timeout_s",
        float,
        "up: seconds from launch to ready (none: each backend's own bound)",
    ),
    ("up", "--build-grace", "build_grace_s", float, "up: seconds to wait for the deploy's own image build"),
    ("up", "--delete-wait", "delete_wait_s", float, "teardown: seconds to wait for each stack deletion"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.survey", description=__doc__.splitlines()[0])
    parser.add_argument(
        "backends", nargs="*", metavar="BACKEND", help="backends to survey (default: the default ones and bedrock)"
    )
    parser.add_argument("--dry-run", action="store_true", help="the preflight only: check, print the plan, stop")
    parser.add_argument("--keep", action="store_true", help="leave what the survey made running (time-to-live armed)")
    parser.add_argument("--down", action="store_true", help="tear down what the survey made without asking")
    parser.add_argument(
        "--resume", type=Path, metavar="FOLDER", help="continue the survey whose results folder this is"
    )
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE", help="CDK context")
    parser.add_argument("--plugin", default=PLUGIN, help="the Session Manager plugin's name or path")
    groups = {
        "steps": parser.add_argument_group("the steps (defaults: the survey's own runs)"),
        "up": parser.add_argument_group("up and teardown"),
    }
    groups["steps"].add_argument(
        "--question", help="the question each backend is asked once (default: the benchmark's prompt)"
    )
    groups["steps"].add_argument(
        "--concurrency", default=SurveyOptions.concurrency, help="bench sweep levels, or `none` (default: %(default)s)"
    )
    groups["steps"].add_argument(
        "--lengths",
        default=SurveyOptions.lengths,
        help="bench-lengths: prompt lengths in tokens, one request at a time, or `none` (default: %(default)s)",
    )
    groups["steps"].add_argument(
        "--workload",
        default=SurveyOptions.workload,
        help="bench-workload: a preset measured at its objectives with the most load within them, or `none` "
        "(default: %(default)s)",
    )
    groups["steps"].add_argument(
        "--offline-prices", action="store_true", help="cost: the offline price table, not the Pricing API"
    )
    groups["up"].add_argument(
        "--method", choices=("change-set", "direct"), default=SurveyOptions.method, help="CloudFormation deploy method"
    )
    for group, flag, field, kind, text in NUMBERS:
        groups[group].add_argument(
            flag,
            dest=field,
            type=kind,
            metavar="N" if kind is int else "SECONDS",
            default=getattr(SurveyOptions, field),
            help=f"{text} (default: %(default)s)",
        )
    add_aws_switch(parser, no_aws_help=None)
    add_results_dir(parser)
    return parser


def check_steps(args: argparse.Namespace) -> None:
    """The benchmark steps' workload and lengths, checked before anything is deployed."""
    if args.workload != "none":
        preset = get_preset(args.workload)  # an unknown name is one line naming the known ones
        if preset is None or not preset.slo_limits:
            raise RunnerError(
                f"--workload {args.workload}: the survey measures a preset with objectives (chat, rag, code), or none"
            )
    if args.lengths != "none":
        parse_numbers(args.lengths, "--lengths", integer=True)


def survey_options(args: argparse.Namespace) -> SurveyOptions:
    check_steps(args)
    named = list(dict.fromkeys(args.backends))
    unknown = [n for n in named if n not in MANAGED and n not in known_backends()]
    if unknown:
        raise RunnerError(
            f"unknown backend {unknown[0]!r}; known backends: {', '.join(known_backends())}, {', '.join(MANAGED)} (nothing deployed)"
        )
    context = parse_context(args.context)
    if "backends" in context:
        raise RunnerError("-c backends=…: name the backends as arguments (python -m runner.survey g6 inf2 …)")
    deployed = [n for n in named if n not in MANAGED]
    # Every other option is a flag whose dest is its field's name.
    given = {f.name: getattr(args, f.name) for f in fields(SurveyOptions) if hasattr(args, f.name)}
    return SurveyOptions(
        **given
        | {
            "backends": choose_backends(deployed) if deployed or not named else [],
            "with_bedrock": any(n in MANAGED for n in named) or not named,
            "context": context,
            "question": args.question or "",
        }
    )


def preflight(options: SurveyOptions) -> tuple[Preflight, AppConfig]:
    """Every check before anything bills; no credentials is one line (exit 2) and calls nothing.

    A backend left out can move the others: a stack goes to the first region all its backends
    share, so the plan is made again with only those that run until none more drops out, and
    the regions, quotas and prices shown are where runner.up will really put them."""
    require_aws(PREFLIGHT_NEEDS, options.aws)
    clients: dict[str, object] = {}

    def quotas_client(region: str) -> object:
        if region not in clients:
            clients[region] = boto_client("service-quotas", region, TIMEOUT_S)
        return clients[region]

    quotas = Quotas(quotas_client)
    chosen, left_out, context = list(options.backends), [], dict(options.context)
    account: dict | None = None
    while True:
        config, refused = load_plan(context, chosen, None)
        if account is None:
            home = config.backends[0].region if config.backends else "us-east-1"
            account = account_check(boto_client("sts", home, TIMEOUT_S))
        needs_plugin = any(serving(b.spec.kind).port_forward for b in config.backends)
        checked = run_preflight(config, chosen, account, quotas, plugin_check(options.plugin, needs_plugin), refused)
        runs = [r.backend for r in checked.rows if r.runs]
        if len(runs) == len(chosen) or not runs:
            break
        left_out += [r for r in checked.rows if not r.runs]
        # A left-out backend's own context keys go with it (they may name where it cannot run).
        context = {k: v for k, v in context.items() if not any(k.startswith(f"{r.backend}.") for r in left_out)}
        chosen = runs
    checked.context = context
    order = {name: index for index, name in enumerate(options.backends)}
    checked.rows = sorted([*left_out, *checked.rows], key=lambda r: order.get(r.backend, len(order)))
    if options.with_bedrock:
        for name in MANAGED:
            checked.notices.append(f"{name}: measured through the Bedrock API, billed per token; nothing deployed")
    return checked, config


def dry_run(options: SurveyOptions, results_dir: Path) -> int:
    checked, _ = preflight(options)
    evidence = Evidence(
        SurveyFile, {"backends": options.backends, "context": options.context, "dry_run": True}, results_dir
    )
    evidence.file.preflight = checked
    evidence.file.records = [r.backend for r in checked.rows if r.runs]
    for line in checked.notices:
        evidence.notice(line)
    evidence.finish()
    print_report(evidence.file)
    evidence.announce()
    return 0 if any(r.runs for r in checked.rows) or options.with_bedrock else 1


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.keep and args.down:
        raise RunnerError("--keep and --down: choose one (keep it running, or tear it down)")
    if args.resume:
        parser = build_parser()
        free = ("resume", "keep", "down", "aws", "results_dir", "backends")
        given = [name for name, value in vars(args).items() if name not in free and value != parser.get_default(name)]
        if given or args.backends:
            raise RunnerError(
                "--resume FOLDER continues that survey as it was asked: give no backends and no other option "
                f"than --keep or --down (given: {', '.join(given or ['backends'])})"
            )
        folder, state = SurveyFolder.existing(args.resume)
        options = SurveyOptions.from_json(state.options or {})
        if args.keep or args.down:
            options.keep, options.down = args.keep, args.down
        evidence = Evidence(SurveyFile, state.config, folder.root)
        evidence.file, evidence.path = state, folder.state
        survey = SurveyRun(options, folder, evidence, resumed=True)
        return survey.run(lambda: preflight(options))
    options = survey_options(args)
    if args.dry_run:
        return dry_run(options, args.results_dir)
    # Credentials first: without them nothing is created, not even the folder.
    require_aws(PREFLIGHT_NEEDS, options.aws)
    folder = SurveyFolder.new(args.results_dir)
    evidence = Evidence(SurveyFile, {"backends": options.measured_names, "context": options.context}, folder.root)
    evidence.path = folder.state
    survey = SurveyRun(options, folder, evidence)
    return survey.run(lambda: preflight(options))


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
