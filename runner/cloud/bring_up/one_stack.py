"""One stack brought up: deployed with the account's facts and the time-to-live as context, every
backend watched (cloud/bring_up/watch/server.py) to its end, and a capacity refusal answered by moving only
what was refused: a server refused while a sibling serves (or failed for a reason a region does
not change) goes alone to its next region, as a satellite stack of its own (catalog/config.py),
so the sibling, its image and its compiled graphs stay; a stack refused whole (at deploy, or every
backend) is destroyed and moved to its next region."""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from catalog import CatalogError
from catalog.boot import STORE_KINDS, boot_models, store_stack_name
from catalog.config import (
    StackConfig,
    load_config,
    read_placement_records,
    satellite_name,
    write_placement,
)
from catalog.contract import BackendOutput
from catalog.serving import serving
from runner.cloud.aws import boto_client
from runner.cloud.bring_up.account_facts import deploy_context
from runner.cloud.bring_up.staged_weights import StagedCopy, account_id, staged_copy, start_copy
from runner.cloud.bring_up.watch.common import FAILED, NO_CAPACITY, READY, Watch, WatchOptions
from runner.cloud.bring_up.watch.server import ServerWatch
from runner.cloud.cdk_cli import cdk, cli_dir
from runner.cloud.image_builds import BuildRefused, follow, last_log_lines, start_build
from runner.cloud.outputs import parse_outputs, read_stack_outputs
from runner.cloud.readiness import is_capacity_refusal
from runner.core.console import console
from runner.core.errors import RunnerError, describe
from runner.core.evidence import DEFAULT_RESULTS, Evidence, EvidenceFile, now_iso
from runner.core.references import resolve
from runner.core.typed_json import FlatJson, JsonObject, where_set

DESTROY_ATTEMPTS = 3


# The outcome of a backend left to its image build (UpOptions.leave_building).
BUILDING = "building"


def building(watch: Any) -> bool:
    """A server held at zero while its image's build runs: nothing of it bills."""
    return (
        isinstance(watch, ServerWatch) and watch.waiting_for_image and watch.record.get("build_status") == "IN_PROGRESS"
    )


# A backend's record fields that belong to one attempt (one region).
ATTEMPT_FIELDS = (
    "reason", "readiness", "refusals", "instance_id", "zone", "launched_at", "ready_at", "launch_to_ready_min",
    "launch_to_ready_unknown", "weights_load_s", "image_state", "build_id", "build_status", "held_at_zero",
    "brought_back_at", "phases_s", "phase_s", "paths", "answer", "answer_correct", "answer_error",
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
    # Only these backends (None: every backend of the chosen stacks).
    backends: list[str] | None = None
    # Watch what is deployed, deploy nothing (a survey's second look at what was still building).
    deploy: bool = True
    # Once every other backend is over, end those still waiting for their image build as `building`
    # (at zero, their build brings them back) instead of waiting hours for it.
    leave_building: bool = False

    def watch_options(self) -> WatchOptions:
        return WatchOptions(
            self.launch_timeout_s, self.ready_timeout_s, self.build_grace_s, self.poll_s, start_builds=self.deploy
        )


def modelled_minutes(backend: str) -> float | None:
    model = boot_models().get(backend)
    return round(model.after_s / 60, 1) if model else None


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
    """A cloud assembly folder per stack (stacks deploy in parallel), in the CLI's own folder."""
    return str(cli_dir() / "cdk.out.up" / stack)


def deploy_stack(stack: str, context: dict[str, str], method: str, outputs_file: Path | None = None):
    """This stack alone: its region's store stack is deployed first, once (RegionStores)."""
    args = ["deploy", stack, "--exclusively", "--require-approval", "never", f"--method={method}"]
    if outputs_file:
        args += ["--outputs-file", str(outputs_file)]
    return cdk([*args, "--output", cli_output_folder(stack), *context_args(context)])


def deploy_store(region: str, context: dict[str, str]):
    """The region's store stack. Its bucket and repositories are retained under fixed names: after a
    `cdk destroy --all` the next deploy takes them back (CloudFormation's import of existing
    resources, which only a change set does: always one here, whatever `--method` says)."""
    stack = store_stack_name(region)
    args = ["deploy", stack, "--exclusively", "--require-approval", "never", "--method=change-set"]
    args.append("--import-existing-resources")
    return cdk([*args, "--output", cli_output_folder(stack), *context_args(context)])


class RegionStores:
    """Each region's store stack deployed once per runner.up, before the first stack of the region
    (stacks deploy in parallel, and two CLI processes must not deploy one stack at once)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.outcomes: dict[str, str | None] = {}

    def ensure(self, region: str, context: dict[str, str]) -> str | None:
        """None once the region's store stack is deployed; else why it is not."""
        with self.lock:
            if region not in self.outcomes:
                result = deploy_store(region, context)
                self.outcomes[region] = None if result.returncode == 0 else result.tail
            return self.outcomes[region]


@dataclass(frozen=True)
class StackExtended(FlatJson):
    """One stack's time-to-live moved (`runner.up --extend`): where, how it ended, its new expiry."""

    stack: str
    region: str
    outcome: str
    expires_at: str | None
    error: str | None = None


@dataclass(kw_only=True)
class UpFile(EvidenceFile):
    """Up evidence: a record per backend as its stack's run and its watch keep it (its attempts,
    phases and outcome; `--extend`: one per stack moved), each stack's run that stopped on a fault,
    and what bills now."""

    COMMAND = "up"
    # A backend's record is filled key by key as its boot goes (runner/cloud/bring_up/watch).
    records: list[JsonObject | StackExtended] = field(default_factory=list)
    errors: dict[str, str] | None = where_set()
    billing: list[JsonObject] | None = where_set()


class StackUp:
    """Brings one stack up: deploy, watch every backend, and move region on capacity refusal."""

    def __init__(
        self,
        config: StackConfig,
        options: UpOptions,
        evidence: Evidence[UpFile],
        lock: threading.Lock,
        expires_at: str | None,
        records: dict[str, JsonObject],
        *,
        stop: threading.Event | None = None,
        inherited: dict[str, JsonObject] | None = None,
        stores: RegionStores | None = None,
    ) -> None:
        self.config = config
        self.stores = stores or RegionStores()
        self.options = options
        self.evidence = evidence
        self.lock = lock
        self.expires_at = expires_at
        self.placement = records.get(config.name, {})
        self.stop = stop or threading.Event()
        self.watches: list[Watch] = []
        # A satellite's placement record always says whose backend it holds.
        self.placement_details = (
            {"of": config.family, "backend": config.backends[0].name} if config.family and config.backends else {}
        )
        # Backends refused in the last attempt, and the satellites they moved to.
        self.refused: list[str] = []
        self.satellites: list[StackUp] = []
        self.context: dict[str, str] = {}
        self.records = {
            b.name: {
                "backend": b.name,
                "stack": config.name,
                "instance_type": b.spec.instance_type,
                "outcome": "pending",
                "attempts": [],
                "survey_launch_to_ready_min": b.spec.survey_launch_to_ready_min,
                "survey_weights_load_s": b.spec.survey_weights_load_s,
                # What catalog/boot.py's model expects with the region's image, store and graphs.
                "modelled_launch_to_ready_min": modelled_minutes(b.name),
            }
            for b in config.backends
            if options.backends is None or b.name in options.backends
        }
        for name, record in (inherited or {}).items():  # a moved backend keeps its attempts so far
            self.records[name] = record | {"stack": config.name, "outcome": "pending"}

    def log(self, line: str) -> None:
        console.print(f"[bold]{self.config.name}[/bold] {line}")
        with self.lock:
            self.evidence.notice(f"{self.config.name}: {line}")
            self.evidence.save()

    def stopped_by(self, reason: str) -> None:
        """The stack's run stopped on a fault: each backend not ready fails with it, at zero."""
        self.log(f"stopped: {reason}")
        for watch in self.watches:
            record = self.records.get(watch.output.name)  # a moved backend's record went with it
            if record is not None and record["outcome"] == "pending":
                watch.take_to_zero("its stack's run stopped")
        for record in self.records.values():
            if record["outcome"] == "pending":
                record.update(outcome=FAILED, reason=f"{self.config.name} stopped: {reason}")
        self.save()

    def save(self) -> None:
        with self.lock:
            file = self.evidence.file
            # The backends' records as they stand: the same objects the watches go on filling.
            file.records = [r for r in file.records if r.get("stack") != self.config.name]
            file.records += self.records.values()
            self.evidence.save()

    def run(self) -> None:
        if not self.records:
            if not self.config.backends:
                self.log("no backends enabled: nothing to bring up")
            return
        if not self.options.deploy:
            self.watch_deployed()
            return
        regions = list(self.config.candidate_regions)
        start = regions.index(self.config.region)
        for position, region in enumerate(regions[start:], start=start):
            if self.stop.is_set():
                return
            outcome = self.attempt(region)
            if outcome != NO_CAPACITY or self.stop.is_set():
                return
            if self.refused and len(self.refused) < len(self.records):
                self.move_refused(region)  # the others serve (or failed for their own reasons): they stay
                return
            self.destroy(region)
            if not self.options.failover or position + 1 >= len(regions):
                self.log(f"no capacity in {region} and no region left to try ({', '.join(regions)})")
                for record in self.records.values():
                    if record["outcome"] != READY:
                        record["outcome"] = NO_CAPACITY
                if self.config.family:
                    # The backend stays out of its family's stack (which would put it back where it
                    # was refused first): its satellite's record names the last region it tried.
                    write_placement(self.config.name, region, exhausted=True, **self.placement_details)
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
        attempt: JsonObject = {"region": region, "deploy_started_at": now_iso()}
        for record in self.records.values():
            record["attempts"].append(attempt)
            for key in ATTEMPT_FIELDS:  # what the last region's attempt saw is not this one's
                record.pop(key, None)
            record["region"] = region
        self.save()
        recorded = self.placement.get("amis", {}) if self.placement.get("region") == region else {}
        facts, amis = deploy_context(self.config, region, recorded)
        context = self.options.context | facts | ({"expiresAt": self.expires_at} if self.expires_at else {})
        context |= self.stage_weights(region)
        attempt["amis"] = amis
        attempt["zones"] = facts[f"{region}.zones"].split(",")
        write_placement(self.config.name, region, amis=amis, context=self.options.context, **self.placement_details)
        self.context = context
        self.say_what_the_deploy_adds(region)
        self.log(f"deploying in {region} (zones {', '.join(attempt['zones'])}) …")
        since = datetime.now(UTC)
        needs_store = any(b.spec.kind in STORE_KINDS for b in self.config.backends)
        store_failure = self.stores.ensure(region, context) if needs_store else None
        if store_failure is not None:
            attempt["outcome"] = "deploy-failed"
            reason = f"the store stack {store_stack_name(region)} did not deploy: {store_failure[:300]}"
            for record in self.records.values():
                record.update(outcome="deploy-failed", reason=reason)
            self.log(reason)
            self.save()
            return "deploy-failed"
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
        outputs = self.read_outputs(outputs_file)
        self.start_copies(region, outputs)
        if any(o.waiting_for_image for o in outputs.values()):
            outputs = self.build_images_then_redeploy(region, outputs, context)
        outcome = self.watch(region, outputs, since)
        attempt["outcome"] = outcome
        if outcome == NO_CAPACITY:
            attempt["refusals"] = {name: self.records[name].get("refusals") or [] for name in outputs}
        self.save()
        return outcome

    def stage_weights(self, region: str) -> dict[str, str]:
        """Context for each real-time endpoint about to be made: the store's complete copy of its
        model in `region` (`<backend>.stagedWeights`), read by SageMaker instead of the hub. An
        endpoint that stands keeps the source it has: another would replace its instance."""
        endpoints = [
            b for b in self.config.backends if serving(b.spec.kind).reads_staged_weights and b.name in self.records
        ]
        self.copies_wanted: list[str] = []
        if not endpoints:
            return {}
        try:
            standing = {o.name: o for o in read_stack_outputs(region).backends}
        except RunnerError:
            standing = {}
        client = self.clients(region)
        context: dict[str, str] = {}
        for backend in endpoints:
            record = self.records[backend.name]
            if backend.name in standing:
                uri = standing[backend.name].staged_weights
                record["paths"] = {
                    "weights": f"copied by SageMaker from {uri}"
                    if uri
                    else "from the hub: the endpoint stands, and another source would replace its instance"
                }
                if uri:
                    context[f"{backend.name}.stagedWeights"] = uri
                continue
            try:
                copy = staged_copy(client("s3"), account_id(client("sts")), region, backend.spec.model_id)
            except Exception as error:  # the store is a fast path: never a reason not to deploy
                copy = StagedCopy(None, f"the region's store could not be read: {describe(error)}")
            if copy.uri:
                context[f"{backend.name}.stagedWeights"] = copy.uri
                record["paths"] = {"weights": f"copied by SageMaker from {copy.uri}"}
            else:
                record["paths"] = {"weights": f"from the hub: {copy.why}"}
                if copy.copy_helps:
                    self.copies_wanted.append(backend.name)
            self.log(f"{backend.name}: weights {record['paths']['weights']}")
        return context

    def start_copies(self, region: str, outputs: dict[str, BackendOutput]) -> None:
        """The copy each endpoint made without one needs, started for the next deploy, and the copy
        the servers need when the store has none of their model yet, for the next boot (neither is
        waited for; the deploy's own event starts it too: a second start finds it running). No
        server starts it: its role may start no build."""
        client = self.clients(region)
        servers = [o for o in outputs.values() if o.graphs_record and o.weights_job and o.store_bucket]
        for output in servers:
            try:
                copy = staged_copy(client("s3"), account_id(client("sts")), region, output.model_id)
            except Exception as error:  # the store is a fast path: never a reason to stop
                copy = StagedCopy(None, f"the region's store could not be read: {describe(error)}")
            if copy.uri or not copy.copy_helps:
                continue
            try:
                note = start_copy(client("codebuild"), output.weights_job or "", client("logs"))
            except Exception as error:
                note = f"the copy could not be started: {describe(error)}"
            self.records[output.name]["weights_copy"] = note
            self.log(f"{output.name}: {copy.why}; {note}")
        for name in getattr(self, "copies_wanted", []):
            job = outputs[name].weights_job if name in outputs else None
            if not job:
                continue
            try:
                note = start_copy(self.clients(region)("codebuild"), job, self.clients(region)("logs"))
            except Exception as error:
                note = f"the copy could not be started: {describe(error)}"
            self.records[name].setdefault("paths", {})["weights"] += f"; {note}"
            self.log(f"{name}: {note}")

    def watch_deployed(self) -> None:
        """Watch the stack where it stands, deploying and moving nothing."""
        region = self.placement.get("region") or self.config.region
        outputs = {o.name: o for o in read_stack_outputs(region).backends if o.name in self.records}
        for name in [n for n in self.records if n not in outputs]:
            self.records[name].update(outcome=FAILED, reason=f"not deployed in {region}")
        for record in self.records.values():
            record["region"] = region
        self.log(f"watching {', '.join(outputs) or 'nothing'} in {region} (no deploy) …")
        self.watch(region, outputs, datetime.now(UTC))
        self.save()

    def read_outputs(self, outputs_file: Path) -> dict[str, BackendOutput]:
        reading = parse_outputs(json.loads(outputs_file.read_text()), source=str(outputs_file))
        outputs = {o.name: o for o in reading.backends if o.name in self.records}
        missing = [name for name in self.records if name not in outputs]
        if missing:
            raise RunnerError(f"stack {self.config.name} deployed without outputs for {', '.join(missing)}")
        return outputs

    def build_images_then_redeploy(
        self, region: str, outputs: dict[str, BackendOutput], context: dict[str, str]
    ) -> dict[str, BackendOutput]:
        """An endpoint that cannot exist before its image (serverless): follow the image's build
        (the one the stack's deploy started, or a new one), record the image as built, and deploy
        again so the stack makes the endpoint. A failed build leaves that backend failed with the
        build's last log lines, and nothing of it billing; the others are watched as usual."""
        client = self.clients(region)
        built: list[str] = []
        for output in [o for o in outputs.values() if o.waiting_for_image]:
            record = self.records[output.name]
            self.log(f"{output.name}: its endpoint waits for its image: following the build of {output.image} …")
            try:
                build, _ = start_build(client("codebuild"), output.image_build_project or "")
            except BuildRefused as error:
                record.update(outcome=FAILED, reason=f"image {output.image} cannot be built: {error}")
                self.log(f"{output.name} failed: {error} (no endpoint was made: nothing bills)")
                continue
            done = follow(client("codebuild"), build["id"], self.options.poll_s, lambda phase: None)
            record.update(build_id=done["id"], build_status=done["buildStatus"])
            if done["buildStatus"] != "SUCCEEDED":
                reason = f"image build {done['buildStatus'].lower()}: {last_log_lines(client('logs'), done)}"
                record.update(outcome=FAILED, reason=reason)
                self.log(f"{output.name} failed: {reason[:300]} (no endpoint was made: nothing bills)")
                continue
            repository, tag = (output.image or "").split("/", 1)[-1].rsplit(":", 1)
            built.append(f"{repository.rsplit('/', 1)[-1]}:{tag}")
        failed = {name for name, record in self.records.items() if record["outcome"] == FAILED}
        if not built:
            return {name: o for name, o in outputs.items() if name not in failed}
        images = sorted({*self.placement.get("images", []), *built})
        self.placement["images"] = images
        write_placement(self.config.name, region, images=images, **self.placement_details)
        self.log(
            f"image{'s' if len(built) > 1 else ''} {', '.join(built)} built: deploying again to make the endpoint …"
        )
        outputs_file = Path(tempfile.mkdtemp(prefix="inference-up-")) / "outputs.json"
        result = deploy_stack(self.config.name, context, self.options.method, outputs_file)
        if result.returncode != 0:
            # What the first deploy made is still there (and may bill): watch it; the backends that
            # waited for the second one failed, with its reason.
            reason = f"second deploy (to make the endpoint) failed: {result.tail[:300]}"
            for output in outputs.values():
                if output.waiting_for_image:
                    self.records[output.name].update(outcome=FAILED, reason=reason)
            self.log(reason)
            return {name: o for name, o in outputs.items() if not o.waiting_for_image and name not in failed}
        return {name: o for name, o in self.read_outputs(outputs_file).items() if name not in failed}

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
            reference = serving(output.kind).watch
            if not reference:
                self.log(f"{name}: deployed; its kind {output.kind} has nothing to watch")
                continue
            watch = resolve(reference)(output, self.records[name], client, watch_options, self.log, since)
            if watch.waits_for:
                # Nothing runs until asked: a transform job (runner.batch) or an import (runner.model_import).
                self.records[name].update(outcome=READY, reason=watch.waits_for)
                self.log(f"{name}: deployed; {watch.waits_for}")
                continue
            pending[name] = watch
        self.watches = list(pending.values())
        self.refused = []
        while pending and not self.stop.is_set():
            for name, watch in list(pending.items()):
                outcome = watch.guarded_step()
                if outcome is None:
                    continue
                pending.pop(name)
                record = self.records[name]
                if outcome == READY:
                    minutes = record.get("launch_to_ready_min")
                    unknown = record.get("launch_to_ready_unknown") or "launch to ready not timed"
                    after = f"after {minutes} min" if minutes is not None else f"({unknown})"
                    self.log(f"{name} ready in {record.get('zone') or region} {after}")
                elif outcome == NO_CAPACITY:
                    self.refused.append(name)
                    self.log(f"{name}: no instance in {region}; refusals: {len(record.get('refusals') or [])}")
                    if not isinstance(watch, ServerWatch) or not self.options.deploy:
                        # An endpoint refused: its stack moves whole (the survey's quota is per type
                        # and region). Watching without deploying: nothing moves; it waits at zero.
                        watch.take_to_zero(f"refused in {region}")
                        self.refused = []
                        self.save()
                        return NO_CAPACITY
                else:
                    self.log(f"{name} {outcome}: {record.get('reason')} (no longer watched; the others go on)")
            if pending and self.options.leave_building and all(building(w) for w in pending.values()):
                for name, watch in pending.items():
                    watch.end(BUILDING, f"its image is still building (build {watch.record.get('build_id')}): at "
                              "zero until the build brings it back")  # fmt: skip
                    self.log(f"{name}: left building (nothing bills while its image builds)")
                pending = {}
            self.save()
            if pending:
                self.stop.wait(self.options.poll_s)
        if pending:
            return "interrupted"
        # A server keeps its compiled graphs just after it reports ready: one more look records
        # those a server kept since, for the backend's next servers.
        for watch in self.watches:
            if isinstance(watch, ServerWatch) and watch.record.get("outcome") == READY:
                watch.record_kept_graphs()
        return NO_CAPACITY if self.refused else "done"

    def move_refused(self, region: str) -> None:
        """Each refused server alone to its own next region, as a satellite; its sibling stays."""
        by_name = {b.name: b for b in self.config.backends}
        watches = {w.output.name: w for w in self.watches}
        moving: list[tuple[str, str]] = []
        for name in self.refused:
            watch = watches[name]
            watch.take_to_zero(f"refused in {region}")  # its group would launch later, unwatched
            regions = list(by_name[name].spec.regions)
            later = regions[regions.index(region) + 1 :] if region in regions else []
            if not self.options.failover or not later:
                self.records[name]["outcome"] = NO_CAPACITY
                self.log(f"{name}: no capacity in {region} and no region left to try ({', '.join(regions)}); at zero")
                continue
            satellite = satellite_name(self.config.kind, name)
            write_placement(satellite, later[0], of=self.config.kind, backend=name)
            moving.append((name, satellite))
        if not moving or self.stop.is_set():
            self.save()
            return
        names = ", ".join(name for name, _ in moving)
        staying = ", ".join(n for n in self.records if n not in dict(moving))
        self.log(f"moving {names} alone; {staying} stay{'s' if ',' not in staying else ''} in {region}")
        # This stack again without them: their groups and servers go; the others are left as they are.
        result = deploy_stack(self.config.name, self.context, self.options.method)
        if result.returncode != 0:
            self.log(
                f"could not take {names} out of {self.config.name}: {result.tail[:300]} (their groups are at zero)"
            )
        records = read_placement_records()
        try:
            config = load_config(self.options.context, records=records)
        except CatalogError as error:
            raise RunnerError(f"moving {names}: {error}") from None
        for name, satellite in moving:
            if self.stop.is_set():
                return
            moved = StackUp(
                config.stack(satellite),
                self.options,
                self.evidence,
                self.lock,
                self.expires_at,
                records,
                stop=self.stop,
                inherited={name: self.records.pop(name)},
                stores=self.stores,
            )
            self.satellites.append(moved)
            self.save()
            try:
                moved.run()
            except Exception as error:  # the satellite's fault is its own line, never its sibling's end
                moved.stopped_by(describe(error))

    def billing(self) -> list[JsonObject]:
        """What bills now, a row per backend (runner.costing.billing_now's rows, its watch reads them)."""
        rows: list[JsonObject] = [row for satellite in self.satellites for row in satellite.billing()]
        for watch in [w for w in self.watches if w.output.name in self.records]:  # moved ones bill there
            try:
                rows += watch.billing()
            except Exception as error:
                rows.append({"backend": watch.output.name, "region": watch.output.region, "what": "unknown",
                             "usd_per_hour": None, "note": f"could not read: {error}"})  # fmt: skip
        return rows

    def destroy(self, region: str) -> None:
        """Remove the failed attempt before moving on, so nothing is left billing in `region`."""
        write_placement(self.config.name, region, **self.placement_details)
        self.log(f"destroying the attempt in {region} …")
        # The attempt's own cloud assembly (its deploy synthesized it into this folder, for this
        # region): destroying from it needs no second synth; without one, the app is synthesized.
        assembly = Path(cli_output_folder(self.config.name))
        source = (
            ["--app", str(assembly)]
            if (assembly / "manifest.json").is_file()
            else ["--output", str(assembly), *context_args(self.options.context)]
        )
        for attempt in range(1, DESTROY_ATTEMPTS + 1):
            result = cdk(["destroy", self.config.name, "--force", *source])
            if result.returncode == 0:
                break
            # A deletion can fail once on dependencies still being released (network interfaces).
            self.log(f"destroy attempt {attempt} in {region} failed: {result.tail[:200]}")
            if attempt == DESTROY_ATTEMPTS:
                raise RunnerError(f"could not destroy {self.config.name} in {region}: {result.tail[:300]}")
            self.stop.wait(self.options.poll_s)
        write_placement(self.config.name, None)
