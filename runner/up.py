"""`python -m runner.up [STACK...]`: deploy, watch every server to ready, fail over to the next region.

Each stack is deployed with the pinned CDK CLI into the region its config gives (recorded in
`placement.json`, which the app reads, so `cdk destroy --all` finds it). Then each server is
watched: its Auto Scaling group (did an instance launch, which refusals did it meet) and its
readiness parameter (`starting`, `ready`, `failed: reason`). When no instance launches anywhere in
the region within `--launch-timeout`, or the deploy itself is refused for capacity or quota, the
failed attempt is destroyed and the stack moves to the next region every backend of it lists.
A `failed: reason` stops that stack at once: another region would not fix a missing image.
Evidence: per backend, every attempt, launch and ready times and where it landed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from catalog import BackendKind, CatalogError
from catalog.backends import stack_names
from catalog.config import StackConfig, load_config, read_placements, write_placement
from catalog.contract import BackendOutput
from runner.aws import boto_client
from runner.cdk_cli import PROJECT_ROOT, cdk
from runner.errors import RunnerError
from runner.evidence import DEFAULT_RESULTS, Evidence, now_iso
from runner.outputs import parse_outputs
from runner.readiness import is_capacity_refusal, read_group, read_readiness
from runner.session import console, main_guard
from runner.tables import print_report

DESTROY_ATTEMPTS = 3


@dataclass
class UpOptions:
    stacks: list[str]
    context: dict[str, str] = field(default_factory=dict)
    launch_timeout_s: float = 600.0
    ready_timeout_s: float = 2700.0
    poll_s: float = 15.0
    method: str = "change-set"
    failover: bool = True
    results_dir: Path = DEFAULT_RESULTS


def parse_context(items: list[str]) -> dict[str, str]:
    context = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise RunnerError(f"--context {item!r}: expected KEY=VALUE")
        context[key] = value
    return context


def _minutes(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    delta = datetime.fromisoformat(end.replace("Z", "+00:00")) - datetime.fromisoformat(start.replace("Z", "+00:00"))
    return round(delta.total_seconds() / 60, 1)


class StackUp:
    """Brings one stack up: deploy, watch, and move region on capacity refusal."""

    def __init__(self, config: StackConfig, options: UpOptions, evidence: Evidence, lock: threading.Lock) -> None:
        self.config = config
        self.options = options
        self.evidence = evidence
        self.lock = lock
        self.stop = threading.Event()
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
            if outcome != "no-capacity":
                return
            self.destroy(region)
            if not self.options.failover or position + 1 >= len(regions):
                self.log(f"no capacity in {region} and no region left to try ({', '.join(regions)})")
                for record in self.records.values():
                    if record["outcome"] != "ready":
                        record["outcome"] = "no-capacity"
                self.save()
                return
            self.log(f"no capacity in {region}: moving to {regions[position + 1]}")

    def attempt(self, region: str) -> str:
        attempt = {"region": region, "deploy_started_at": now_iso()}
        for record in self.records.values():
            record["attempts"].append(attempt)
            record["region"] = region
        self.save()
        write_placement(self.config.name, region)
        self.log(f"deploying in {region} …")
        outputs_file = Path(tempfile.mkdtemp(prefix="inference-up-")) / "outputs.json"
        result = cdk(
            [
                "deploy",
                self.config.name,
                "--require-approval",
                "never",
                f"--method={self.options.method}",
                "--outputs-file",
                str(outputs_file),
                *self.common_args(),
            ]
        )
        attempt["deployed_at"] = now_iso()
        if result.returncode != 0:
            attempt["deploy_error"] = result.tail
            if is_capacity_refusal(result.output):
                attempt["outcome"] = "no-capacity"
                self.log(f"deploy refused for capacity or quota in {region}: {result.tail[:200]}")
                return "no-capacity"
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
        outcome = self.watch(region, outputs, attempt)
        attempt["outcome"] = outcome
        self.save()
        return outcome

    def watch(self, region: str, outputs: dict[str, BackendOutput], attempt: dict[str, Any]) -> str:
        """Poll until every backend is ready, one failed, or no instance launched within the bound."""
        timeout = self.options.launch_timeout_s
        clients = {
            service: boto_client(service, region, 30)
            for service in ("autoscaling", "ssm", "ec2", "sagemaker")
            if self._needs(service)
        }
        deployed = time.monotonic()
        pending = dict(outputs)
        while pending and not self.stop.is_set():
            for name, output in list(pending.items()):
                record = self.records[name]
                done = (
                    self._watch_endpoint(clients["sagemaker"], output, record)
                    if output.kind == BackendKind.SAGEMAKER
                    else self._watch_server(clients, output, record)
                )
                if done:
                    pending.pop(name)
                    if record["outcome"] == "failed":
                        self.log(f"{name} failed: {record['reason']}")
                        return "failed"
                    self.log(f"{name} ready in {record['zone'] or region} after {record['launch_to_ready_min']} min")
            self.save()
            waited = time.monotonic() - deployed
            unlaunched = [n for n in pending if not self.records[n].get("launched_at")]
            if unlaunched and waited > timeout:
                for name in unlaunched:
                    attempt.setdefault("refusals", {})[name] = self.records[name].get("refusals", [])
                self.log(f"no instance for {', '.join(unlaunched)} in {region} after {waited:.0f} s")
                return "no-capacity"
            if pending and waited > timeout + self.options.ready_timeout_s:
                for name in pending:
                    self.records[name].update(outcome="timeout", reason=f"not ready after {waited / 60:.0f} min")
                return "timeout"
            if pending:
                self.stop.wait(self.options.poll_s)
        return "interrupted" if pending else "ready"

    def _needs(self, service: str) -> bool:
        kinds = {b.spec.kind for b in self.config.backends}
        if service == "sagemaker":
            return BackendKind.SAGEMAKER in kinds
        return bool(kinds - {BackendKind.SAGEMAKER})

    def _watch_server(self, clients: dict[str, Any], output: BackendOutput, record: dict[str, Any]) -> bool:
        group = read_group(clients["autoscaling"], output.auto_scaling_group or "")
        record["refusals"] = group.refusals
        if group.instance_id and not record.get("launched_at"):
            (reservation,) = clients["ec2"].describe_instances(InstanceIds=[group.instance_id])["Reservations"]
            launch_time = reservation["Instances"][0]["LaunchTime"]
            record.update(
                instance_id=group.instance_id,
                zone=group.zone,
                launched_at=launch_time.astimezone(UTC).isoformat(timespec="seconds"),
            )
        readiness = read_readiness(clients["ssm"], output.readiness_parameter or "")
        record["readiness"] = readiness.line
        if readiness.state == "failed":
            record.update(outcome="failed", reason=readiness.reason)
            return True
        if readiness.state == "ready":
            record.update(
                outcome="ready",
                ready_at=readiness.at or now_iso(),
                zone=readiness.zone or record.get("zone"),
                instance_id=readiness.instance_id or record.get("instance_id"),
                weights_load_s=readiness.weights_load_s,
            )
            record["launch_to_ready_min"] = _minutes(record.get("launched_at"), record["ready_at"])
            return True
        return False

    def _watch_endpoint(self, client: Any, output: BackendOutput, record: dict[str, Any]) -> bool:
        description = client.describe_endpoint(EndpointName=output.endpoint_name)
        status = description["EndpointStatus"]
        record["readiness"] = status
        record["launched_at"] = description["CreationTime"].astimezone(UTC).isoformat(timespec="seconds")
        if status == "InService":
            ready = description.get("LastModifiedTime") or datetime.now(UTC)
            record.update(outcome="ready", ready_at=ready.astimezone(UTC).isoformat(timespec="seconds"), zone=None)
            record["launch_to_ready_min"] = _minutes(record["launched_at"], record["ready_at"])
            return True
        if status in ("Failed", "OutOfService"):
            record.update(outcome="failed", reason=description.get("FailureReason", status))
            return True
        return False

    def common_args(self) -> list[str]:
        """A cloud assembly folder per stack (stacks deploy in parallel) and the user's context."""
        output = PROJECT_ROOT / ".cache" / "cdk-up" / self.config.name
        return ["--output", str(output), *[f"--context={k}={v}" for k, v in self.options.context.items()]]

    def destroy(self, region: str) -> None:
        """Remove the failed attempt before moving on, so nothing is left billing in `region`."""
        write_placement(self.config.name, region)
        self.log(f"destroying the attempt in {region} …")
        for attempt in range(1, DESTROY_ATTEMPTS + 1):
            result = cdk(["destroy", self.config.name, "--force", *self.common_args()])
            if result.returncode == 0:
                break
            # A deletion can fail once on dependencies still being released (network interfaces).
            self.log(f"destroy attempt {attempt} in {region} failed: {result.tail[:200]}")
            if attempt == DESTROY_ATTEMPTS:
                raise RunnerError(f"could not destroy {self.config.name} in {region}: {result.tail[:300]}")
            self.stop.wait(self.options.poll_s)
        write_placement(self.config.name, None)


def up(options: UpOptions, *, on_start: Callable[[list[StackUp]], None] | None = None) -> Evidence:
    try:
        config = load_config(options.context, read_placements())
    except CatalogError as error:
        raise RunnerError(str(error)) from None
    unknown = [s for s in options.stacks if s not in stack_names()]
    if unknown:
        raise RunnerError(f"unknown stack {unknown[0]!r}; stacks: {', '.join(stack_names())}")
    chosen = [config.stack(name) for name in (options.stacks or stack_names())]
    evidence = Evidence(
        "up",
        {
            "stacks": [s.name for s in chosen],
            "placement": {s.name: {"region": s.region, "candidates": list(s.candidate_regions)} for s in chosen},
            "launch_timeout_s": options.launch_timeout_s,
            "ready_timeout_s": options.ready_timeout_s,
            "context": options.context,
        },
        options.results_dir,
    )
    lock = threading.Lock()
    runs = [StackUp(stack, options, evidence, lock) for stack in chosen]
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
    try:
        while any(t.is_alive() for t in threads):
            for thread in threads:
                thread.join(timeout=0.5)
    except KeyboardInterrupt:
        for run in runs:
            run.stop.set()
        for thread in threads:
            thread.join()
        evidence.data["errors"] = errors
        evidence.finish(interrupted=True)
        raise
    evidence.data["errors"] = errors
    evidence.finish()
    return evidence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.up", description=__doc__.splitlines()[0])
    parser.add_argument("stacks", nargs="*", help=f"stacks to bring up (default: all: {', '.join(stack_names())})")
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE", help="CDK context")
    parser.add_argument(
        "--launch-timeout", type=float, default=600.0, help="seconds without any instance before moving region"
    )
    parser.add_argument("--ready-timeout", type=float, default=2700.0, help="seconds from launch to ready")
    parser.add_argument("--poll", type=float, default=15.0, help="seconds between checks (default: %(default)s)")
    parser.add_argument("--no-failover", action="store_true", help="stay in the first region")
    parser.add_argument(
        "--method", choices=("change-set", "direct"), default="change-set", help="CloudFormation deploy method"
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
        method=args.method,
        failover=not args.no_failover,
        results_dir=args.results_dir,
    )
    evidence = up(options)
    print_report(evidence.data, notices=False)
    print(f"evidence: {evidence.path}")
    records = evidence.data["records"]
    return 0 if records and all(r["outcome"] == "ready" for r in records) else 1


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    table = Table(title="up: launch to ready (survey: run 2 of 2026-10-05)")
    columns = (
        "backend",
        "outcome",
        "region",
        "zone",
        "attempts",
        "launched",
        "ready",
        "min",
        "survey min",
        "weights s",
        "survey weights s",
    )
    for column in columns:
        table.add_column(column)
    for record in evidence["records"]:
        regions = " → ".join(a["region"] for a in record["attempts"]) or "-"
        table.add_row(
            record["backend"],
            record["outcome"] + (f": {record['reason']}" if record.get("reason") else ""),
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


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
