"""runner.up's two jobs: every chosen stack brought up at once (StackUp each), the billing table at
the end; and --extend, the deployed stacks redeployed with a later expiry and nothing else."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from catalog import CatalogError
from catalog.backends import stack_names
from catalog.config import (
    EXPIRY_FORMAT,
    StackConfig,
    load_config,
    read_placement_records,
    time_to_live,
    ttl_notice,
)
from runner.cloud.bring_up.account_facts import account_zones
from runner.cloud.bring_up.one_stack import RegionStores, StackExtended, StackUp, UpFile, UpOptions, deploy_stack
from runner.core.console import console
from runner.core.errors import RunnerError, describe
from runner.core.evidence import Evidence
from runner.core.typed_json import JsonObject


def chosen_stacks(options: UpOptions, records: dict[str, JsonObject]) -> tuple[list[StackConfig], Any]:
    """The stacks asked for (a satellite's name stands for its family), each with its satellites
    (backends a capacity refusal moved out of it), each once."""
    try:
        config = load_config(options.context, records=records)
    except CatalogError as error:
        raise RunnerError(str(error)) from None
    families = {s.name: s.kind for s in config.stacks}
    unknown = [s for s in options.stacks if s not in families]
    if unknown:
        raise RunnerError(f"unknown stack {unknown[0]!r}; stacks: {', '.join(stack_names())}")
    wanted = dict.fromkeys(families[name] for name in options.stacks or stack_names())
    return [stack for name in wanted for stack in config.family(name)], config


def up(options: UpOptions, *, on_start: Callable[[list[StackUp]], None] | None = None) -> Evidence[UpFile]:
    records = read_placement_records_or_fail()
    chosen, config = chosen_stacks(options, records)
    unknown = [b for b in options.backends or [] if b not in {c.name for s in chosen for c in s.backends}]
    if unknown:
        raise RunnerError(f"--backends: {', '.join(unknown)} not among the chosen stacks' backends")
    # Watching what stands: its own expiry, not a new one (a deploy would move it).
    expires_at = config.expiry_text if options.deploy else None
    evidence = Evidence(
        UpFile,
        {
            "stacks": [s.name for s in chosen],
            "placement": {s.name: {"region": s.region, "candidates": list(s.candidate_regions)} for s in chosen},
            "launch_timeout_s": options.launch_timeout_s,
            "ready_timeout_s": options.ready_timeout_s,
            "context": options.context,
            "expires_at": expires_at,
            "ttl_hours": config.ttl_hours,
            "backends": options.backends,
            "deploy": options.deploy,
            "leave_building": options.leave_building,
        },
        options.results_dir,
    )
    console.print(ttl_notice(config))
    lock = threading.Lock()
    stores = RegionStores()
    runs = [StackUp(stack, options, evidence, lock, expires_at, records, stores=stores) for stack in chosen]
    errors: dict[str, str] = {}

    def guarded(run: StackUp) -> None:
        """One stack's run; whatever stops it is that stack's line, never the other stacks' end."""
        try:
            run.run()
        except Exception as error:
            errors[run.config.name] = describe(error)
            run.stopped_by(describe(error))

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
    evidence.file.errors = errors
    evidence.file.billing = [row for run in runs for row in run.billing()]
    evidence.finish(interrupted=interrupted)
    if interrupted:
        raise KeyboardInterrupt
    return evidence


def read_placement_records_or_fail() -> dict[str, JsonObject]:
    try:
        return read_placement_records()
    except CatalogError as error:
        raise RunnerError(str(error)) from None


def extend(hours: float, options: UpOptions) -> Evidence[UpFile]:
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
        UpFile, {"extend_hours": hours, "expires_at": expires_at, "stacks": sorted(records)}, options.results_dir
    )
    for stack, record in sorted(records.items()):
        region = record["region"]
        context = dict(record.get("context") or {}) | {f"{region}.zones": ",".join(account_zones(region))}
        context |= {f"{name}.ami": ami for name, ami in (record.get("amis") or {}).items()}
        context["expiresAt"] = expires_at or ""
        console.print(f"[bold]{stack}[/bold] moving its time-to-live to {expires_at} in {region} …")
        result = deploy_stack(stack, context, options.method)
        outcome = "extended" if result.returncode == 0 else "deploy-failed"
        evidence.add_record(
            StackExtended(stack, region, outcome, expires_at, None if result.returncode == 0 else result.tail)
        )
    evidence.finish()
    return evidence
