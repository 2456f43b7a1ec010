"""`python -m runner.up [STACK...] [--extend HOURS]`: deploy, bring every server to ready or to zero.

Each stack is deployed with the pinned CDK CLI into the region its config gives, with what only
the account knows passed in as context: its zones of that region (DescribeAvailabilityZones)
and each server's AMI id (recorded in placement.json with the region, and reused, so a later
deploy does not swap the image under a running server), and the deploy's time-to-live (every
server goes to zero at its expiry; `ttlHours`, default 12, `0` turns it off). Then every backend
is watched (runner/server_watch.py): a group held at zero on purpose (waiting for its image,
stopped by a fault or by the time-to-live) is brought back, a build the image needs is waited
for (or started), a server that fails is left at zero and its watch ends while the others go on.
Only a capacity or quota refusal (at deploy, or no instance within `--launch-timeout`) destroys
the attempt and moves the stack to the next region its backends share. The run ends with what
is still billing, where, at what hourly price, and when the time-to-live takes it to zero.

`--extend HOURS` redeploys what runner.up deployed with the expiry HOURS from now, and nothing else.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from catalog import BackendKind, CatalogError
from catalog.backends import stack_names
from catalog.config import (
    EXPIRY_FORMAT,
    StackConfig,
    load_config,
    read_placement_records,
    time_to_live,
    ttl_notice,
    write_placement,
)
from catalog.contract import BackendOutput
from runner import billing
from runner.account_facts import account_zones, deploy_context
from runner.aws import boto_client
from runner.cdk_cli import PROJECT_ROOT, cdk
from runner.errors import RunnerError
from runner.evidence import DEFAULT_RESULTS, Evidence, now_iso
from runner.outputs import parse_outputs, read_stack_outputs
from runner.readiness import is_capacity_refusal
from runner.server_watch import NO_CAPACITY, READY, EndpointWatch, ServerWatch, WatchOptions
from runner.session import console, main_guard
from runner.tables import print_report

DESTROY_ATTEMPTS = 3
# A backend's record fields that belong to one attempt (one region).
ATTEMPT_FIELDS = (
    "reason", "readiness", "refusals", "instance_id", "zone", "launched_at", "ready_at", "launch_to_ready_min",
    "weights_load_s", "image_state", "build_id", "build_status", "held_at_zero", "brought_back_at",
)  # fmt: skip


@dataclass
class UpOptions:
    stacks: list[str]
    context: dict[str, str] = field(default_factory=dict)
    launch_timeout_s: float = 600.0
    # None: each backend's own bound (ready_minutes) plus ten minutes.
    ready_timeout_s: float | None = None
    poll_s: float = 15.0
    build_grace_s: float = 120.0
    method: str = "change-set"
    failover: bool = True
    results_dir: Path = DEFAULT_RESULTS

    def watch_options(self) -> WatchOptions:
        return WatchOptions(self.launch_timeout_s, self.ready_timeout_s, self.build_grace_s, self.poll_s)


def parse_context(items: list[str]) -> dict[str, str]:
    context = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise RunnerError(f"--context {item!r}: expected KEY=VALUE")
        context[key] = value
    return context


def context_args(context: dict[str, str]) -> list[str]:
    return [f"--context={k}={v}" for k, v in context.items()]


def cli_output_folder(stack: str) -> str:
    """A cloud assembly folder per stack (stacks deploy in parallel)."""
    return str(PROJECT_ROOT / ".cache" / "cdk-up" / stack)


def deploy_stack(stack: str, context: dict[str, str], method: str, outputs_file: Path | None = None):
    args = ["deploy", stack, "--require-approval", "never", f"--method={method}"]
    if outputs_file:
        args += ["--outputs-file", str(outputs_file)]
    return cdk([*args, "--output", cli_output_folder(stack), *context_args(context)])


class StackUp:
    """Brings one stack up: deploy, watch every backend, and move region on capacity refusal."""

    def __init__(
        self,
        config: StackConfig,
        options: UpOptions,
        evidence: Evidence,
        lock: threading.Lock,
        expires_at: str | None,
        records: dict[str, dict[str, Any]],
    ) -> None:
        self.config = config
        self.options = options
        self.evidence = evidence
        self.lock = lock
        self.expires_at = expires_at
        self.placement = records.get(config.name, {})
        self.stop = threading.Event()
        self.watches: list[ServerWatch | EndpointWatch] = []
        self.records = {
            b.name: {
                "backend": b.name,
                "stack": config.name,
                "instance_type": b.spec.instance_type,
                "outcome": "pending",
                "attempts": [],
                "survey_launch_to_ready_min": b.spec.survey_launch_to_ready_min,
                "survey_weights_load_s": b.spec.survey_weights_load_s,
            }
            for b in config.backends
        }

    def log(self, line: str) -> None:
        console.print(f"[bold]{self.config.name}[/bold] {line}")
        with self.lock:
            self.evidence.notice(f"{self.config.name}: {line}")
            self.evidence.save()

    def save(self) -> None:
        with self.lock:
            self.evidence.data["records"] = [r for r in self.evidence.data["records"] if r["stack"] != self.config.name]
            self.evidence.data["records"].extend(self.records.values())
            self.evidence.save()

    def run(self) -> None:
        if not self.config.backends:
            self.log("no backends enabled: nothing to bring up")
            return
        regions = list(self.config.candidate_regions)
        start = regions.index(self.config.region)
        for position, region in enumerate(regions[start:], start=start):
            outcome = self.attempt(region)
            if outcome != NO_CAPACITY:
                return
            self.destroy(region)
            if not self.options.failover or position + 1 >= len(regions):
                self.log(f"no capacity in {region} and no region left to try ({', '.join(regions)})")
                for record in self.records.values():
                    if record["outcome"] != READY:
                        record["outcome"] = NO_CAPACITY
                self.save()
                return
            self.log(f"no capacity in {region}: moving to {regions[position + 1]}")

    def say_what_the_deploy_adds(self, region: str) -> None:
        """A stack deployed by an earlier version has no time-to-live: this deploy adds one."""
        if not self.expires_at:
            return
        try:
            existing = read_stack_outputs(region).backends
        except RunnerError:
            return
        mine = [o for o in existing if o.name in self.records]
        if mine and not any(o.expires_at for o in mine):
            self.log(f"was deployed without a time-to-live: this deploy adds one (zero at {self.expires_at})")

    def attempt(self, region: str) -> str:
        attempt: dict[str, Any] = {"region": region, "deploy_started_at": now_iso()}
        for record in self.records.values():
            record["attempts"].append(attempt)
            for key in ATTEMPT_FIELDS:  # what the last region's attempt saw is not this one's
                record.pop(key, None)
            record["region"] = region
        self.save()
        recorded = self.placement.get("amis", {}) if self.placement.get("region") == region else {}
        facts, amis = deploy_context(self.config, region, recorded)
        context = self.options.context | facts | ({"expiresAt": self.expires_at} if self.expires_at else {})
        attempt["amis"] = amis
        attempt["zones"] = facts[f"{region}.zones"].split(",")
        write_placement(self.config.name, region, amis=amis, context=self.options.context)
        self.say_what_the_deploy_adds(region)
        self.log(f"deploying in {region} (zones {', '.join(attempt['zones'])}) …")
        since = datetime.now(UTC)
        outputs_file = Path(tempfile.mkdtemp(prefix="inference-up-")) / "outputs.json"
        result = deploy_stack(self.config.name, context, self.options.method, outputs_file)
        attempt["deployed_at"] = now_iso()
        if result.returncode != 0:
            attempt["deploy_error"] = result.tail
            if is_capacity_refusal(result.output):
                attempt["outcome"] = NO_CAPACITY
                self.log(f"deploy refused for capacity or quota in {region}: {result.tail[:200]}")
                return NO_CAPACITY
            attempt["outcome"] = "deploy-failed"
            for record in self.records.values():
                record.update(outcome="deploy-failed", reason=result.tail)
            self.log(f"deploy failed in {region}: {result.tail[:300]}")
            self.save()
            return "deploy-failed"
        reading = parse_outputs(json.loads(outputs_file.read_text()), source=str(outputs_file))
        outputs = {o.name: o for o in reading.backends}
        missing = [name for name in self.records if name not in outputs]
        if missing:
            raise RunnerError(f"stack {self.config.name} deployed without outputs for {', '.join(missing)}")
        outcome = self.watch(region, outputs, since)
        attempt["outcome"] = outcome
        if outcome == NO_CAPACITY:
            attempt["refusals"] = {name: self.records[name].get("refusals") or [] for name in outputs}
        self.save()
        return outcome

    def clients(self, region: str) -> Callable[[str], Any]:
        made: dict[str, Any] = {}

        def client(service: str) -> Any:
            if service not in made:
                made[service] = boto_client(service, region, 30)
            return made[service]

        return client

    def watch(self, region: str, outputs: dict[str, BackendOutput], since: datetime) -> str:
        """Step every backend's watch until each is over, or one finds no capacity."""
        client = self.clients(region)
        watch_options = self.options.watch_options()
        pending = {}
        for name, output in outputs.items():
            kind = EndpointWatch if output.kind == BackendKind.SAGEMAKER else ServerWatch
            pending[name] = kind(output, self.records[name], client, watch_options, self.log, since)
        self.watches = list(pending.values())
        while pending and not self.stop.is_set():
            for name, watch in list(pending.items()):
                outcome = watch.step()
                if outcome is None:
                    continue
                pending.pop(name)
                record = self.records[name]
                if outcome == READY:
                    self.log(
                        f"{name} ready in {record.get('zone') or region} after {record.get('launch_to_ready_min')} min"
                    )
                elif outcome == NO_CAPACITY:
                    self.log(f"{name}: no instance in {region}; refusals: {len(record.get('refusals') or [])}")
                    self.save()
                    return NO_CAPACITY
                else:
                    self.log(f"{name} {outcome}: {record.get('reason')} (no longer watched; the others go on)")
            self.save()
            if pending:
                self.stop.wait(self.options.poll_s)
        return "interrupted" if pending else "done"

    def billing(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for watch in self.watches:
            try:
                rows += watch.billing()
            except Exception as error:
                rows.append({"backend": watch.output.name, "region": watch.output.region, "what": "unknown",
                             "usd_per_hour": None, "note": f"could not read: {error}"})  # fmt: skip
        return rows

    def destroy(self, region: str) -> None:
        """Remove the failed attempt before moving on, so nothing is left billing in `region`."""
        write_placement(self.config.name, region)
        self.log(f"destroying the attempt in {region} …")
        for attempt in range(1, DESTROY_ATTEMPTS + 1):
            result = cdk(["destroy", self.config.name, "--force", "--output", cli_output_folder(self.config.name),
                          *context_args(self.options.context)])  # fmt: skip
            if result.returncode == 0:
                break
            # A deletion can fail once on dependencies still being released (network interfaces).
            self.log(f"destroy attempt {attempt} in {region} failed: {result.tail[:200]}")
            if attempt == DESTROY_ATTEMPTS:
                raise RunnerError(f"could not destroy {self.config.name} in {region}: {result.tail[:300]}")
            self.stop.wait(self.options.poll_s)
        write_placement(self.config.name, None)


def chosen_stacks(options: UpOptions, records: dict[str, dict[str, Any]]) -> tuple[list[StackConfig], Any]:
    unknown = [s for s in options.stacks if s not in stack_names()]
    if unknown:
        raise RunnerError(f"unknown stack {unknown[0]!r}; stacks: {', '.join(stack_names())}")
    try:
        config = load_config(options.context, records=records)
    except CatalogError as error:
        raise RunnerError(str(error)) from None
    return [config.stack(name) for name in (options.stacks or stack_names())], config


def up(options: UpOptions, *, on_start: Callable[[list[StackUp]], None] | None = None) -> Evidence:
    records = read_placement_records_or_fail()
    chosen, config = chosen_stacks(options, records)
    expires_at = config.expiry_text
    evidence = Evidence(
        "up",
        {
            "stacks": [s.name for s in chosen],
            "placement": {s.name: {"region": s.region, "candidates": list(s.candidate_regions)} for s in chosen},
            "launch_timeout_s": options.launch_timeout_s,
            "ready_timeout_s": options.ready_timeout_s,
            "context": options.context,
            "expires_at": expires_at,
            "ttl_hours": config.ttl_hours,
        },
        options.results_dir,
    )
    console.print(ttl_notice(config))
    lock = threading.Lock()
    runs = [StackUp(stack, options, evidence, lock, expires_at, records) for stack in chosen]
    errors: dict[str, str] = {}

    def guarded(run: StackUp) -> None:
        try:
            run.run()
        except (RunnerError, CatalogError) as error:
            errors[run.config.name] = str(error)
            run.log(f"stopped: {error}")

    threads = [threading.Thread(target=guarded, args=(run,), name=run.config.name) for run in runs]
    for thread in threads:
        thread.start()
    if on_start:
        on_start(runs)
    interrupted = False
    try:
        while any(t.is_alive() for t in threads):
            for thread in threads:
                thread.join(timeout=0.5)
    except KeyboardInterrupt:
        interrupted = True
        for run in runs:
            run.stop.set()
        for thread in threads:
            thread.join()
    evidence.data["errors"] = errors
    evidence.data["billing"] = [row for run in runs for row in run.billing()]
    evidence.finish(interrupted=interrupted)
    if interrupted:
        raise KeyboardInterrupt
    return evidence


def read_placement_records_or_fail() -> dict[str, dict[str, Any]]:
    try:
        return read_placement_records()
    except CatalogError as error:
        raise RunnerError(str(error)) from None


def extend(hours: float, options: UpOptions) -> Evidence:
    """Redeploy every stack runner.up placed, with the expiry `hours` from now; nothing else changes."""
    if hours <= 0:
        raise RunnerError(
            f"--extend {hours:g}: give a number of hours above 0 (to turn the time-to-live off: -c ttlHours=0)"
        )
    records = read_placement_records_or_fail()
    if not records:
        raise RunnerError("--extend: nothing deployed by runner.up to extend (placement.json lists no stack)")
    try:
        _, expiry = time_to_live({"ttlHours": hours}, datetime.now(UTC))
    except CatalogError as error:
        raise RunnerError(str(error).replace("context ttlHours", "--extend")) from None
    expires_at = expiry.strftime(EXPIRY_FORMAT) if expiry else None
    evidence = Evidence(
        "up", {"extend_hours": hours, "expires_at": expires_at, "stacks": sorted(records)}, options.results_dir
    )
    for stack, record in sorted(records.items()):
        region = record["region"]
        context = dict(record.get("context") or {}) | {f"{region}.zones": ",".join(account_zones(region))}
        context |= {f"{name}.ami": ami for name, ami in (record.get("amis") or {}).items()}
        context["expiresAt"] = expires_at or ""
        console.print(f"[bold]{stack}[/bold] moving its time-to-live to {expires_at} in {region} …")
        result = deploy_stack(stack, context, options.method)
        outcome = "extended" if result.returncode == 0 else "deploy-failed"
        evidence.add_record({"stack": stack, "region": region, "outcome": outcome, "expires_at": expires_at,
                             "error": None if result.returncode == 0 else result.tail})  # fmt: skip
    evidence.finish()
    return evidence


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
    parser.add_argument(
        "--method", choices=("change-set", "direct"), default="change-set", help="CloudFormation deploy method"
    )
    parser.add_argument(
        "--extend",
        type=float,
        metavar="HOURS",
        help="move the time-to-live of what runner.up deployed to HOURS from now",
    )
    parser.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS, help="where evidence files go")
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
    )
    if args.extend is not None:
        evidence = extend(args.extend, options)
        print_report(evidence.data, notices=False)
        print(f"evidence: {evidence.path}")
        return 0 if all(r["outcome"] == "extended" for r in evidence.data["records"]) else 1
    evidence = up(options)
    print_report(evidence.data, notices=False)
    print(f"evidence: {evidence.path}")
    records = evidence.data["records"]
    return 0 if records and all(r["outcome"] == READY for r in records) else 1


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    if "extend_hours" in evidence.get("config", {}):
        table = Table(title=f"up --extend {evidence['config']['extend_hours']:g} h")
        for column in ("stack", "region", "outcome", "expires at"):
            table.add_column(column)
        for record in evidence["records"]:
            table.add_row(record["stack"], record["region"], record["outcome"] + (f": {record['error']}" if record.get("error") else ""), record["expires_at"] or "-")  # fmt: skip
        out.print(table)
        return
    table = Table(title="up: launch to ready (survey: run 2 of 2026-10-05)")
    columns = (
        "backend", "outcome", "region", "zone", "attempts", "launched", "ready", "min", "survey min", "weights s",
        "survey weights s",
    )  # fmt: skip
    for column in columns:
        table.add_column(column)
    for record in evidence["records"]:
        regions = " → ".join(a["region"] for a in record["attempts"]) or "-"
        outcome = record["outcome"] + (f": {record['reason']}" if record.get("reason") else "")
        if record.get("held_at_zero"):
            outcome += f" (was held at zero: {record['held_at_zero']})"
        table.add_row(
            record["backend"],
            outcome,
            record.get("region") or "-",
            record.get("zone") or "-",
            regions,
            record.get("launched_at") or "-",
            record.get("ready_at") or "-",
            str(record.get("launch_to_ready_min") or "-"),
            str(record.get("survey_launch_to_ready_min") or "-"),
            str(record.get("weights_load_s") or "-"),
            str(record.get("survey_weights_load_s") or "-"),
        )
    out.print(table)
    billing.render(evidence.get("billing") or [], out, evidence.get("config", {}).get("expires_at"))


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
