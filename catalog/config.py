"""Turns CDK context (`cdk deploy -c key=value`) into typed, checked config.

Defaults live in the catalog only; context holds the user's overrides. Every project key is flat
(`g6.regions`, `sagemaker.instanceType`) so one `-c` overrides one value. Anything wrong stops
synth with one line that names the key and the allowed values.

Placement: each stack lives in ONE region, the first region that every enabled backend of the
stack lists (in the first backend's order); the rest of that common list is the stack's failover
order. `runner.up` records where it deployed each stack in `placement.json` (with the AMI ids it
pinned there and the context it deployed with), and that record wins while it names one of the
stack's candidate regions, so `cdk destroy --all` finds a stack that failed over and a later
deploy does not swap the image under a running server.

Zones: `<region>.zones` (what `runner.up` read from the account's DescribeAvailabilityZones), or
else the stack's own lookup (see stacks/server_stack.py). Time-to-live: every deploy arms one
(`ttlHours`, default 12; `0` disables), at `expiresAt` when given (runner.up passes it).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import shlex
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from catalog.backends import (
    BACKENDS,
    CONCURRENCY_THRESHOLD_RANGE,
    IMAGE_PROFILES,
    INSTANCE_FAMILIES,
    KV_AWARE_NOTE,
    PREFIX_AWARE,
    PREFIX_LENGTH_RANGE,
    ROUTING_STRATEGIES,
    SAGEMAKER_KINDS,
    SERVERLESS_MAX_CONCURRENCY,
    SERVERLESS_MEMORY_SIZES_MB,
    BackendSpec,
    accelerators,
    backend_names,
    get_backend,
    instance_family,
    stack_names,
)
from catalog.errors import CatalogError
from catalog.lanes import DEFAULT_LANE, Lane, get_lane, in_lane
from catalog.offerings import COMMERCIAL_REGIONS, check_offered, check_region
from catalog.serving import ENDPOINT_USAGE, serving

GLOBAL_KEYS = ("backends", "lane", "hfTokenSecretName", "ttlHours", "expiresAt")
# A real-time endpoint keeps at least one instance (scaling it to zero needs inference components);
# an async one may sit at zero. The upper bound is a guard against a typo, not an AWS limit.
MAX_INSTANCES = 20
# Copies of an inference component: a guard against a typo, as MAX_INSTANCES is (AWS's CopyCount
# has a minimum of 0 and no documented maximum).
MAX_COPIES = 100
# Keys of earlier versions: a clear pointer beats "unknown key".
RENAMED_KEYS = {
    "region": "each backend's '<backend>.regions' (failover order; the stack takes the first region its backends share)",
    "zones": "each EC2 backend's '<backend>.zones'",
}
HF_SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
AMI_ID = re.compile(r"^ami-[0-9a-f]{8,17}$")
# Every deploy arms a time-to-live: at expiry each server goes to zero and the endpoint is deleted.
DEFAULT_TTL_HOURS = 12.0
MAX_TTL_HOURS = 24 * 31
EXPIRY_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
REGION_ZONES_KEY = "{region}.zones"
PROJECT_ROOT = Path(__file__).resolve().parent.parent
# INFERENCE_PLACEMENT_FILE moves it (the emulator tests keep theirs in a scratch folder).
PLACEMENT_ENV = "INFERENCE_PLACEMENT_FILE"


def placement_file() -> Path:
    return Path(os.environ.get(PLACEMENT_ENV) or PROJECT_ROOT / "placement.json")


def backend_keys(spec: BackendSpec) -> tuple[str, ...]:
    """The context keys a deploy of it takes: its serving row's (`context_keys`)."""
    return serving(spec.kind).context_keys


def known_keys() -> list[str]:
    keys = list(GLOBAL_KEYS)
    for name in backend_names(deployable_only=True):
        keys += [f"{name}.{k}" for k in backend_keys(get_backend(name))]
    return [*keys, REGION_ZONES_KEY.format(region="<region>")]


def is_region_zones_key(key: str) -> bool:
    region, _, rest = key.partition(".")
    return rest == "zones" and region in COMMERCIAL_REGIONS


def is_framework_key(key: str) -> bool:
    """Keys the CDK itself owns: feature flags (`@aws-cdk/...`), `aws:cdk:*`, lookups (`a:b=c`)."""
    return key.startswith(("@", "cdk-")) or ":" in key or key == "acknowledged-issue-numbers"


@dataclass(frozen=True)
class BackendConfig:
    """A catalog entry with the user's overrides applied, placed in its stack's region."""

    spec: BackendSpec
    region: str
    # Empty: every zone of the region, as the stack finds them (stacks/server_stack.py).
    zones: tuple[str, ...]
    startup_timeout_seconds: int = 1800
    ready_minutes: int | None = None
    # An AMI id pinned by context or by runner.up's record; None: the stack resolves the parameter.
    ami_id: str | None = None
    # The model lane the app was synthesized in (catalog/lanes.py): every output says it.
    lane: str = DEFAULT_LANE
    # The store's copy of the model an endpoint reads instead of the hub (None: the hub).
    staged_weights: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class StackConfig:
    """One stack: its region, the regions it may fail over to (in order), and its backends.

    A satellite (`family` set) holds one backend of the stack `family` that a capacity refusal
    moved to another region on its own, so its siblings, their image and their compiled graphs
    stay where they serve (`satellite_name`)."""

    name: str
    region: str
    candidate_regions: tuple[str, ...]
    backends: tuple[BackendConfig, ...]

    # The account's zones of the region when known (`<region>.zones`), else empty.
    region_zones: tuple[str, ...] = ()
    # Images the app built for this stack in its region (`folder:tag`, recorded by runner.up once
    # the build pushed them): an endpoint that cannot exist before its image waits for its entry.
    built_images: tuple[str, ...] = ()
    lane: str = DEFAULT_LANE
    # The catalog stack a satellite belongs to ("" for the catalog stack itself).
    family: str = ""

    @property
    def kind(self) -> str:
        """The catalog stack this one is built as (itself, or the family of a satellite)."""
        return self.family or self.name

    @property
    def zones(self) -> tuple[str, ...]:
        """Zones the stack's network spans: every zone any of its servers may use (empty: every
        zone of the region, found by the stack)."""
        if any(not b.zones for b in self.backends):
            return self.region_zones
        return tuple(dict.fromkeys(z for b in self.backends for z in b.zones))


@dataclass(frozen=True)
class AppConfig:
    hf_token_secret_name: str
    stacks: tuple[StackConfig, ...]
    lane: str = DEFAULT_LANE
    notices: tuple[str, ...] = ()
    # When every server of this deploy goes to zero (None: no time-to-live), and the hours asked for.
    expires_at: datetime | None = None
    ttl_hours: float = DEFAULT_TTL_HOURS
    placement_records: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def expiry_text(self) -> str | None:
        return self.expires_at.strftime(EXPIRY_FORMAT) if self.expires_at else None

    @property
    def backends(self) -> tuple[BackendConfig, ...]:
        return tuple(b for s in self.stacks for b in s.backends)

    def stack(self, name: str) -> StackConfig:
        for stack in self.stacks:
            if stack.name == name:
                return stack
        raise CatalogError(f"unknown stack {name!r}; stacks: {', '.join(s.name for s in self.stacks)}")

    def family(self, name: str) -> list[StackConfig]:
        """The catalog stack `name` and its satellites."""
        return [s for s in self.stacks if s.kind == name]


def satellite_name(stack: str, backend: str) -> str:
    """The stack a backend moved out of `stack` is deployed as (a CloudFormation stack name)."""
    return f"{stack}-{backend}"


def _as_list(key: str, value: Any) -> list[str]:
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, list | tuple):
        items = [str(v).strip() for v in value]
    else:
        raise CatalogError(f"context {key}: expected a list or a comma-separated string, got {value!r}")
    return [i for i in items if i]


def _as_str(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CatalogError(f"context {key}: expected a non-empty string, got {value!r}")
    return value.strip()


def _as_int(key: str, value: Any, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise CatalogError(f"context {key}: expected a whole number, got {value!r}") from None
    if not low <= number <= high:
        raise CatalogError(f"context {key}: {number} is outside the allowed range {low}..{high}")
    return number


def _check_instance_type(key: str, spec: BackendSpec, instance_type: str) -> None:
    if spec.kind in SAGEMAKER_KINDS and not instance_type.startswith("ml."):
        raise CatalogError(f"context {key}: SageMaker instance types start with 'ml.', got {instance_type!r}")
    if spec.kind not in SAGEMAKER_KINDS and instance_type.startswith("ml."):
        raise CatalogError(f"context {key}: {instance_type!r} is a SageMaker type; EC2 backends take e.g. g6.xlarge")
    family = instance_family(instance_type)
    wanted = (spec.architecture, spec.accelerator)
    allowed = sorted(f for f, kind in INSTANCE_FAMILIES.items() if kind == wanted)
    if INSTANCE_FAMILIES.get(family) != wanted:
        raise CatalogError(
            f"context {key}: {instance_type!r} does not match backend {spec.name} "
            f"({spec.architecture}, {spec.accelerator}); allowed families: {', '.join(allowed)}"
        )


def _regions(key: str, value: Any) -> tuple[str, ...]:
    regions = _as_list(key, value)
    if not regions:
        raise CatalogError(f"context {key}: at least one region is needed")
    for region in regions:
        check_region(key, region)
    if len(set(regions)) != len(regions):
        raise CatalogError(f"context {key}: a region is listed twice in {', '.join(regions)}")
    return tuple(regions)


@dataclass(frozen=True)
class Overrides:
    """What a backend's context keys set beyond its catalog entry."""

    startup_timeout_seconds: int = 1800
    ami_id: str | None = None
    staged_weights: str | None = None


STAGED_WEIGHTS = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/weights/\S+/$")


def apply_overrides(spec: BackendSpec, ctx: Mapping[str, Any]) -> tuple[BackendSpec, Overrides]:
    """The catalog entry with this backend's context keys applied and checked."""
    changes: dict[str, Any] = {}
    startup_timeout = 1800
    ami_id = None
    staged_weights = None
    prefix = f"{spec.name}."
    for key in backend_keys(spec):
        full = prefix + key
        if full not in ctx:
            continue
        value = ctx[full]
        if key == "regions":
            changes["regions"] = _regions(full, value)
        elif key == "zones":
            changes["zones"] = tuple(_as_list(full, value))
            if not changes["zones"]:
                raise CatalogError(f"context {full}: at least one zone is needed")
        elif key == "instanceType":
            instance_type = _as_str(full, value)
            _check_instance_type(full, spec, instance_type)
            changes["instance_type"] = instance_type
        elif key == "model":
            changes["model_id"] = _as_str(full, value)
        elif key == "image":
            changes["image"] = _as_str(full, value)
        elif key == "flags":
            changes["serve_flags"] = tuple(shlex.split(value) if isinstance(value, str) else map(str, value))
        elif key == "startupTimeoutSeconds":
            startup_timeout = _as_int(full, value, 60, 3600)
        elif key == "readyMinutes":
            changes["ready_minutes"] = _as_int(full, value, 5, 24 * 60)
        elif key == "memoryMb":
            changes["memory_mb"] = _memory_mb(full, value)
        elif key == "maxConcurrency":
            changes["max_concurrency"] = _as_int(full, value, 1, SERVERLESS_MAX_CONCURRENCY)
        elif key == "minInstances":
            floor = 0 if serving(spec.kind).scales_to_zero else 1
            changes["min_instances"] = _as_int(full, value, floor, MAX_INSTANCES)
        elif key == "maxInstances":
            changes["max_instances"] = _as_int(full, value, 1, MAX_INSTANCES)
        elif key == "targetConcurrency":
            changes["target_concurrency"] = _as_int(full, value, 1, 1000)
        elif key in COPY_KEYS:
            changes[COPY_KEYS[key]] = _as_int(full, value, 0, MAX_COPIES)
        elif key == "routingStrategy":
            changes["routing_strategy"] = _routing_strategy(full, value)
        elif key == "prefixLength":
            changes["prefix_length"] = _as_int(full, value, *PREFIX_LENGTH_RANGE)
        elif key == "concurrencyThreshold":
            changes["concurrency_threshold"] = _as_int(full, value, *CONCURRENCY_THRESHOLD_RANGE)
        elif key == "stagedWeights":
            staged_weights = _as_str(full, value)
            if not STAGED_WEIGHTS.fullmatch(staged_weights):
                raise CatalogError(
                    f"context {full}: expected the store's copy of a model, s3://BUCKET/weights/OWNER/NAME/, "
                    f"got {staged_weights!r}"
                )
        elif key == "ami":
            ami_id = _as_str(full, value)
            if not AMI_ID.fullmatch(ami_id):
                raise CatalogError(f"context {full}: expected an AMI id like ami-0123456789abcdef0, got {ami_id!r}")
    spec = replace(spec, **changes)
    if spec.min_instances > spec.max_instances:
        raise CatalogError(
            f"context {prefix}maxInstances: {spec.max_instances} is below {prefix}minInstances ({spec.min_instances})"
        )
    if "copies" in backend_keys(spec):
        check_copies(spec, prefix)
    profile = IMAGE_PROFILES.get(spec.image or "")
    if profile:
        # A known image brings what running it implies; a model given by context still wins.
        spec = replace(spec, **{k: v for k, v in profile.items() if not (k == "model_id" and "model_id" in changes)})
    key = f"{spec.name}.regions" if "regions" in changes else f"{spec.name}.instanceType"
    for region in spec.regions:
        if spec.instance_type:
            check_offered(key, spec.instance_type, region)
    return spec, Overrides(startup_timeout_seconds=startup_timeout, ami_id=ami_id, staged_weights=staged_weights)


# The copy keys of an endpoint of inference components and the catalog field each sets.
COPY_KEYS = {"copies": "copies", "minCopies": "min_copies", "maxCopies": "max_copies"}


def _routing_strategy(key: str, value: Any) -> str:
    strategy = _as_str(key, value)
    if strategy not in ROUTING_STRATEGIES:
        also = f" ({KV_AWARE_NOTE})" if strategy == "KV_AWARE" else ""
        raise CatalogError(
            f"context {key}: a CloudFormation endpoint config routes by {', '.join(ROUTING_STRATEGIES)}, "
            f"not {strategy!r}{also}"
        )
    return strategy


def check_copies(spec: BackendSpec, prefix: str) -> None:
    """An endpoint of inference components, checked at synth: its copies within their bounds, every
    copy on the accelerators of one instance, the most copies within what the most instances hold,
    and prefix-aware routing with its settings (and those settings with it alone)."""
    copies = spec.copies if spec.copies is not None else spec.min_copies
    if spec.max_copies < 1:
        raise CatalogError(f"context {prefix}maxCopies: at least one copy is needed, got {spec.max_copies}")
    if not spec.min_copies <= copies <= spec.max_copies:
        raise CatalogError(
            f"context {prefix}copies: {copies} is outside {prefix}minCopies..{prefix}maxCopies "
            f"({spec.min_copies}..{spec.max_copies})"
        )
    instance_type = spec.instance_type or ""
    per_instance = accelerators(instance_type) or 0
    if spec.accelerators_per_copy > per_instance:
        raise CatalogError(
            f"context {prefix}instanceType: a copy takes {spec.accelerators_per_copy} accelerators; "
            f"{instance_type} has {per_instance}"
        )
    held = per_instance // spec.accelerators_per_copy * spec.max_instances
    if spec.max_copies > held:
        raise CatalogError(
            f"context {prefix}maxCopies: {spec.max_copies} copies of {spec.accelerators_per_copy} accelerator(s) "
            f"each do not fit {spec.max_instances} {instance_type} ({per_instance} per instance, {held} copies at "
            f"most): raise {prefix}maxInstances or take a type with more accelerators"
        )
    prefix_settings = (spec.prefix_length, spec.concurrency_threshold)
    if spec.routing_strategy == PREFIX_AWARE and None in prefix_settings:
        raise CatalogError(
            f"context {prefix}routingStrategy: {PREFIX_AWARE} needs {prefix}prefixLength "
            f"({PREFIX_LENGTH_RANGE[0]}..{PREFIX_LENGTH_RANGE[1]} bytes of the request body) and "
            f"{prefix}concurrencyThreshold ({CONCURRENCY_THRESHOLD_RANGE[0]}..{CONCURRENCY_THRESHOLD_RANGE[1]} "
            "in-flight requests per copy): AWS's PrefixAwareRoutingConfig"
        )
    if spec.routing_strategy != PREFIX_AWARE and prefix_settings != (None, None):
        raise CatalogError(
            f"context {prefix}prefixLength and {prefix}concurrencyThreshold: only with {prefix}routingStrategy="
            f"{PREFIX_AWARE} (AWS takes a PrefixAwareRoutingConfig with that strategy alone), not with "
            f"{spec.routing_strategy}"
        )


def _memory_mb(key: str, value: Any) -> int:
    number = _as_int(key, value, 1, 10**6)
    if number not in SERVERLESS_MEMORY_SIZES_MB:
        sizes = ", ".join(map(str, SERVERLESS_MEMORY_SIZES_MB))
        raise CatalogError(f"context {key}: serverless endpoints offer {sizes} MB, not {number}")
    return number


def common_regions(stack: str, specs: list[BackendSpec]) -> tuple[str, ...]:
    """Regions every backend of the stack lists, in the first backend's order."""
    first, *rest = specs
    common = tuple(r for r in first.regions if all(r in s.regions for s in rest))
    if not common:
        wanted = "; ".join(f"{s.name} in {', '.join(s.regions)}" for s in specs)
        raise CatalogError(
            f"stack {stack} is asked for in two regions at once ({wanted}): give its backends a region in "
            f"common with <backend>.regions, or deploy one of them at a time with -c backends=NAME"
        )
    return common


def _is_zone_of(zone: str, region: str) -> bool:
    return re.fullmatch(re.escape(region) + r"[a-z]", zone) is not None


def region_zones(ctx: Mapping[str, Any], region: str) -> tuple[str, ...]:
    """`<region>.zones`: the account's zones of the region, as runner.up read them."""
    key = REGION_ZONES_KEY.format(region=region)
    if key not in ctx:
        return ()
    zones = tuple(_as_list(key, ctx[key]))
    if not zones:
        raise CatalogError(f"context {key}: at least one zone is needed")
    for zone in zones:
        if not _is_zone_of(zone, region):
            raise CatalogError(f"context {key}: {zone!r} is not a zone of {region} (expected e.g. {region}a)")
    return zones


def _zones(spec: BackendSpec, region: str, known: tuple[str, ...]) -> tuple[str, ...]:
    """The zones a server may use: its own `<b>.zones`, else every zone of the region (empty)."""
    for zone in spec.zones:
        if not _is_zone_of(zone, region):
            raise CatalogError(
                f"context {spec.name}.zones: {zone!r} is not a zone of {region}, the region of its stack "
                f"{spec.stack} (expected e.g. {region}a)"
            )
        if known and zone not in known:
            raise CatalogError(
                f"context {spec.name}.zones: {zone!r} is not among this account's zones of {region} "
                f"({', '.join(known)})"
            )
    return spec.zones


def _hours(key: str, value: Any) -> float:
    try:
        hours = float(value)
    except (TypeError, ValueError):
        raise CatalogError(f"context {key}: expected a number of hours (0 turns it off), got {value!r}") from None
    if not math.isfinite(hours) or hours < 0 or hours > MAX_TTL_HOURS:
        raise CatalogError(f"context {key}: {value!r} is outside 0..{MAX_TTL_HOURS} hours (0 turns it off)")
    return hours


def parse_expiry(key: str, value: Any) -> datetime:
    try:
        at = datetime.strptime(str(value), EXPIRY_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise CatalogError(f"context {key}: expected a UTC time like 2026-12-01T21:00:00Z, got {value!r}") from None
    return at


def time_to_live(ctx: Mapping[str, Any], now: datetime) -> tuple[float, datetime | None]:
    """(hours asked for, expiry or None). `expiresAt` wins; else `ttlHours` from `now`, rounded up
    to the next whole minute (the Auto Scaling scheduled action's resolution)."""
    hours = _hours("ttlHours", ctx.get("ttlHours", DEFAULT_TTL_HOURS))
    if "expiresAt" in ctx:
        if hours == 0 and "ttlHours" in ctx:
            raise CatalogError("context expiresAt sets an expiry while ttlHours=0 turns it off: give one of them")
        at = parse_expiry("expiresAt", ctx["expiresAt"])
        if at <= now:
            raise CatalogError(f"context expiresAt: {ctx['expiresAt']} is in the past (now {now:{EXPIRY_FORMAT}})")
        return hours, at
    if hours == 0:
        return 0.0, None
    at = now + timedelta(hours=hours)
    return hours, at.replace(second=0, microsecond=0) + timedelta(minutes=1)


def read_placement_records(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """`placement.json` as written by `runner.up`: {stack: {"region", "amis", "context"}}."""
    path = path or placement_file()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except json.JSONDecodeError as error:
        raise CatalogError(f"{path.name}: not JSON ({error.msg} at line {error.lineno}); fix or delete it") from None
    stacks = data.get("stacks", {}) if isinstance(data, dict) else None
    if not isinstance(stacks, dict):
        raise CatalogError(f"{path.name}: expected {{'stacks': {{STACK: {{'region': REGION}}}}}}")
    return {name: entry for name, entry in stacks.items() if isinstance(entry, dict) and "region" in entry}


def read_placements(path: Path | None = None) -> dict[str, str]:
    """{stack: region} from `placement.json`. Missing file: no placements."""
    return {name: entry["region"] for name, entry in read_placement_records(path).items()}


_PLACEMENT_LOCK = threading.Lock()


def write_placement(stack: str, region: str | None, path: Path | None = None, **details: Any) -> None:
    """Record (or, with None, forget) where `stack` is deployed, with `details` (the AMI ids pinned
    there, the context it was deployed with). Stacks deploy in parallel: one writer at a time
    (a lock in this process, a file lock across processes), the file written whole, then renamed."""
    path = path or placement_file()
    with _PLACEMENT_LOCK, (path.parent / f".{path.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            data = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            data = {}
        stacks = data.setdefault("stacks", {}) if isinstance(data, dict) else {}
        if region is None:
            stacks.pop(stack, None)
        else:
            entry = stacks.get(stack) if isinstance(stacks.get(stack), dict) else {}
            if entry.get("region") != region:
                entry = {}  # another region: its AMI ids do not carry over
            stacks[stack] = entry | {"region": region} | {k: v for k, v in details.items() if v is not None}
        partial = path.with_suffix(f".json.{os.getpid()}.partial")
        partial.write_text(json.dumps({"stacks": stacks}, indent=2, sort_keys=True) + "\n")
        partial.replace(path)


def _place_stack(
    name: str, specs: list[BackendSpec], placements: Mapping[str, str], notices: list[str]
) -> tuple[str, tuple[str, ...]]:
    candidates = common_regions(name, specs)
    recorded = placements.get(name)
    if recorded is None:
        return candidates[0], candidates
    if recorded in candidates:
        return recorded, candidates
    notices.append(
        f"placement.json puts {name} in {recorded}, which is not among its regions now "
        f"({', '.join(candidates)}): using {candidates[0]}; destroy the stack in {recorded} first"
    )
    return candidates[0], candidates


def load_config(
    ctx: Mapping[str, Any],
    placements: Mapping[str, str] | None = None,
    *,
    records: Mapping[str, Mapping[str, Any]] | None = None,
    now: datetime | None = None,
) -> AppConfig:
    """Check every project key in `ctx` and build the app's config, or raise CatalogError.

    `placements` ({stack: region}) and `records` (placement.json's entries, for pinned AMI ids)
    default to the placement file; tests pass `{}` to see the catalog's defaults.
    """
    allowed = known_keys()
    for key in ctx:
        if is_framework_key(key) or key in allowed or is_region_zones_key(key):
            continue
        if key in RENAMED_KEYS:
            raise CatalogError(f"context key {key!r} is gone: use {RENAMED_KEYS[key]}")
        name, _, rest = key.partition(".")
        if rest == "zones" and re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", name):
            check_region(key, name)
        if rest == "zone":
            raise CatalogError(f"context key {key!r} is gone: use {name}.zones (the server may launch in any of them)")
        if rest and name not in backend_names(deployable_only=True):
            raise CatalogError(
                f"unknown backend {name!r} in context key {key!r}; "
                f"backends: {', '.join(backend_names(deployable_only=True))}"
            )
        raise CatalogError(f"unknown context key {key!r}; allowed keys: {', '.join(allowed)}")

    secret = _as_str("hfTokenSecretName", ctx.get("hfTokenSecretName", "inference/hf-token"))
    if not HF_SECRET_NAME.fullmatch(secret):
        raise CatalogError(f"context hfTokenSecretName: {secret!r} is not a valid Secrets Manager name")

    deployable = backend_names(deployable_only=True)
    default = [name for name in deployable if not get_backend(name).opt_in]
    selected = _as_list("backends", ctx.get("backends", default))
    for name in selected:
        if name not in deployable:
            raise CatalogError(f"context backends: unknown backend {name!r}; allowed: {', '.join(deployable)}")

    if records is None:
        records = read_placement_records() if placements is None else {}
    placements = {name: entry["region"] for name, entry in records.items()} if placements is None else placements
    ttl_hours, expires_at = time_to_live(ctx, now or datetime.now(UTC))
    lane: Lane = get_lane(_as_str("lane", ctx.get("lane", DEFAULT_LANE)))
    notices: list[str] = []
    stacks = []
    # Backends a capacity refusal moved out of their stack, each to a satellite of its own.
    moved = {
        entry["backend"]: (name, entry)
        for name, entry in records.items()
        if entry.get("of") and entry.get("backend") and name == satellite_name(entry["of"], entry["backend"])
    }
    for stack in stack_names():
        members = [in_lane(b, lane) for b in BACKENDS if b.stack == stack]
        resolved = {b.name: apply_overrides(b, ctx) for b in members}
        enabled = [resolved[b.name] for b in members if b.name in selected and b.name not in moved]
        # A stack with no enabled backend still exists (empty), so `cdk destroy --all` always sees it.
        placing = [spec for spec, _ in enabled] or [_first_compatible(stack, [s for s, _ in resolved.values()])]
        region, candidates = _place_stack(stack, placing, placements, notices)
        known = region_zones(ctx, region)
        record = records.get(stack, {})
        here = record.get("region") == region
        pinned = record.get("amis", {}) if here else {}
        built = tuple(str(i) for i in record.get("images", [])) if here else ()
        backends = tuple(
            BackendConfig(
                spec=spec,
                region=region,
                zones=_zones(spec, region, known),
                startup_timeout_seconds=extra.startup_timeout_seconds,
                ready_minutes=spec.ready_minutes,
                ami_id=extra.ami_id or pinned.get(spec.name),
                lane=lane.name,
                staged_weights=extra.staged_weights,
            )
            for spec, extra in enabled
        )
        stacks.append(
            StackConfig(
                name=stack,
                region=region,
                candidate_regions=candidates,
                backends=backends,
                region_zones=known,
                built_images=built,
                lane=lane.name,
            )
        )
        for name in [b.name for b in members if b.name in moved]:
            stacks.append(_satellite(ctx, stack, resolved[name], moved[name], selected, lane))
    notices += endpoint_quota_notices([b for s in stacks for b in s.backends])
    return AppConfig(
        hf_token_secret_name=secret,
        stacks=tuple(stacks),
        lane=lane.name,
        notices=tuple(notices),
        expires_at=expires_at,
        ttl_hours=ttl_hours,
        placement_records=dict(records),
    )


def _satellite(
    ctx: Mapping[str, Any],
    stack: str,
    resolved: tuple[BackendSpec, Overrides],
    placed: tuple[str, Mapping[str, Any]],
    selected: list[str],
    lane: Lane,
) -> StackConfig:
    """A backend moved out of `stack`, in the region its record gives; its failover goes on along its
    own regions from there. Not selected now: an empty satellite, so `cdk destroy --all` still sees it."""
    spec, extra = resolved
    name, entry = placed
    region = str(entry["region"])
    candidates = spec.regions[spec.regions.index(region) :] if region in spec.regions else (region,)
    known = region_zones(ctx, region)
    # `<backend>.zones` name zones of the region it moved out of: here every zone of its region.
    spec = spec if all(_is_zone_of(z, region) for z in spec.zones) else replace(spec, zones=())
    backends: tuple[BackendConfig, ...] = ()
    if spec.name in selected:
        backends = (
            BackendConfig(
                spec=spec,
                region=region,
                zones=_zones(spec, region, known),
                startup_timeout_seconds=extra.startup_timeout_seconds,
                ready_minutes=spec.ready_minutes,
                ami_id=extra.ami_id or (entry.get("amis") or {}).get(spec.name),
                lane=lane.name,
            ),
        )
    return StackConfig(
        name=name,
        region=region,
        candidate_regions=tuple(candidates),
        backends=backends,
        region_zones=known,
        built_images=tuple(str(i) for i in entry.get("images", [])),
        lane=lane.name,
        family=stack,
    )


def endpoint_quota_notices(backends: list[BackendConfig]) -> list[str]:
    """Endpoints that draw on one `<type> for endpoint usage` quota at once (real-time and async on
    ml.g6.xlarge): the survey's account had 1, and a refusal moves the whole stack."""
    by_type: dict[str, list[BackendConfig]] = {}
    for backend in backends:
        spec = backend.spec
        if serving(spec.kind).quota_usage == ENDPOINT_USAGE and spec.instance_type:
            by_type.setdefault(spec.instance_type, []).append(backend)
    notices = []
    for instance_type, sharing in by_type.items():
        if len(sharing) > 1:
            most = sum(max(1, b.spec.max_instances) for b in sharing)
            notices.append(
                f"{' and '.join(b.name for b in sharing)} draw on one quota, '{instance_type} for endpoint "
                f"usage': up to {most} instances at once (the survey's account had 1; Service Quotas shows yours). "
                "A refusal moves the whole SageMaker stack to its next region"
            )
    return notices


def _first_compatible(stack: str, specs: list[BackendSpec]) -> BackendSpec:
    """For an empty stack: all its catalog backends if they share a region, else the first one."""
    try:
        return replace(specs[0], regions=common_regions(stack, specs))
    except CatalogError:
        return specs[0]


def flag_pairs(flags: tuple[str, ...] | list[str], what: str = "flags") -> list[tuple[str, str | None]]:
    """vLLM command-line flags as (`--name`, value or None for a bare switch) pairs."""
    pairs: list[tuple[str, str | None]] = []
    i = 0
    while i < len(flags):
        flag = flags[i]
        if not flag.startswith("--") or len(flag) < 3:
            raise CatalogError(f"{what}: expected --name [value], got {flag!r} in {' '.join(flags)!r}")
        takes_value = i + 1 < len(flags) and not flags[i + 1].startswith("--")
        pairs.append((flag, flags[i + 1] if takes_value else None))
        i += 2 if takes_value else 1
    return pairs


# Where SageMaker puts a model's files from S3 in the container (SageMaker developer guide,
# "Deploy uncompressed models": ModelDataSource's S3 prefix lands under /opt/ml/model).
SAGEMAKER_MODEL_DIR = "/opt/ml/model"


def sagemaker_environment(flags: tuple[str, ...], model_id: str, *, staged: bool = False) -> dict[str, str]:
    """vLLM command-line flags -> the DLC's SM_VLLM_* variables (`--foo-bar v` -> SM_VLLM_FOO_BAR=v).
    With the weights staged from S3, the engine serves SageMaker's copy under the model's name."""
    env = (
        {"SM_VLLM_MODEL": SAGEMAKER_MODEL_DIR, "SM_VLLM_SERVED_MODEL_NAME": model_id}
        if staged
        else {"SM_VLLM_MODEL": model_id}
    )
    for flag, value in flag_pairs(flags, "sagemaker flags"):
        name = "SM_VLLM_" + flag[2:].replace("-", "_").upper()
        if name == "SM_VLLM_MODEL":
            raise CatalogError("sagemaker flags: set the model with sagemaker.model, not --model")
        env[name] = value if value is not None else "true"
    return env


def ttl_notice(config: AppConfig) -> str:
    """One line every deploy prints: when its servers go to zero, and how to change it."""
    if config.expires_at is None:
        return "time-to-live: off (ttlHours=0): servers run until destroyed; python -m runner.sweep lists what bills"
    return (
        f"time-to-live: every server of this deploy goes to zero at {config.expiry_text} "
        f"({config.ttl_hours:g} h; -c ttlHours=H to change, 0 to turn it off; a stack deployed without one gets it "
        "now); python -m runner.up brings stopped servers back, runner.up --extend H moves the expiry"
    )


def zone_source_notice(config: AppConfig, account: str | None) -> list[str]:
    """Where the zones of stacks without `<region>.zones` come from, said once."""
    stacks = [s.name for s in config.stacks if s.backends and not s.zones and s.backends[0].spec.ami_parameter]
    if not stacks:
        return []
    if account:
        return [
            f"zones of {', '.join(stacks)}: every zone the CDK's availability-zones lookup finds in account {account} "
            "(kept in cdk.context.json; runner.up passes the account's zones itself)"
        ]
    return [
        f"zones of {', '.join(stacks)}: no AWS account known (a synth without credentials), so two Fn::GetAZs "
        "placeholders; a deploy takes every zone of the deploying account"
    ]
