"""The survey's preflight: before anything bills, what will run where, and what cannot and why.

Every check is a record with its source (what was asked, or which table was read):

- the account (STS GetCallerIdentity) and the Session Manager plugin (EC2 backends' forwards);
- per backend: its region and failover regions (catalog/config.py `load_config` with the user's
  context), whether its instance type is offered there (catalog/offerings.py), the account's quota
  for it (Service Quotas), summed per quota and region over the backends that draw on it, the
  images the app must build for it, its hourly list price (catalog/prices.py, offline) and the
  worst case of one time-to-live (`ttlHours` × $/h).

A backend that cannot run is left out with its reason; the others go on. Nothing is created.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from catalog.backends import (
    backend_names,
    get_backend,
    instance_family,
)
from catalog.boot import store_needs
from catalog.builds import WEIGHTS_COPY_COMPUTE, build_quota_name, built_image, image_build
from catalog.config import AppConfig, BackendConfig, load_config
from catalog.errors import NotOffered
from catalog.offerings import CHECKED_ON, regions_offering
from catalog.serving import HOURLY_NOTES, serving
from runner.core.backend_entries import BackendEntry, CatalogFacts
from runner.core.errors import RunnerError, aws_error_code
from runner.core.references import resolve
from runner.core.typed_json import JsonObject
from runner.costing.billing_now import hourly
from runner.costing.prices import price_request

# EC2's on-demand vCPU quotas, per instance-family letters. The quotas are vCPU-based, one per
# family group and Region, G and VT sharing one (EC2 User Guide, "On-Demand Instance quotas"; its
# Spot page lists the same groups). Codes and names as ListServiceQuotas answers them (service
# code ec2), checked 2026-12-01 against public tables of its output: "Running On-Demand G and VT
# instances | L-DB2E81BA", "Running On-Demand Inf instances | L-1945791B", "Running On-Demand Trn
# instances | L-2C3B7624" (a dump of every adjustable quota with its code, and several quota
# checkers mapping g/vt, inf and trn to these codes); not read from botocore, whose service model
# holds the API's shapes (ServiceCode, QuotaCode, QuotaName, Value), not the codes.
EC2_QUOTAS: dict[str, tuple[str, str]] = {
    "g": ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    "vt": ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    "inf": ("L-1945791B", "Running On-Demand Inf instances"),
    "trn": ("L-2C3B7624", "Running On-Demand Trn instances"),
}
EC2_QUOTA_SOURCE = "Service Quotas GetServiceQuota, else GetAWSDefaultServiceQuota (service code ec2)"
# vCPUs per instance, from the EC2 instance-type pages (accelerated computing: G6 g6.xlarge 4,
# G5g g5g.2xlarge 8, Inf2 inf2.xlarge 4, Trn1 trn1.2xlarge 8); what an on-demand quota counts.
VCPUS: dict[str, int] = {"g6.xlarge": 4, "g5g.2xlarge": 8, "inf2.xlarge": 4, "trn1.2xlarge": 8}
VCPU_SOURCE = "EC2 instance types, accelerated computing (vCPUs per instance)"
# SageMaker's instance quotas are one per type and use, found by name (no fixed code to pin):
# "<type> for endpoint usage" (real-time and async endpoints draw on it) and
# "<type> for transform job usage" (batch transform); counted in instances.
SAGEMAKER_QUOTA_SOURCE = (
    "Service Quotas ListServiceQuotas, else ListAWSDefaultServiceQuotas (service code sagemaker), by quota name"
)
# A quota never adjusted has no applied value: GetServiceQuota and ListServiceQuotas leave it out
# ("If the applied quota value is not available for a quota, the quota is not retrieved", Service
# Quotas API reference), and the AWS default is the account's quota.
DEFAULT_NOTE = "AWS default (never adjusted)"
CODEBUILD_QUOTA_SOURCE = (
    "Service Quotas ListServiceQuotas, else ListAWSDefaultServiceQuotas (service code codebuild), by quota name"
)
PLUGIN = "session-manager-plugin"
CODEBUILD_PRICE = "unknown: the offline price table (catalog/prices.py) has no CodeBuild figure"


@dataclass
class Check:
    """One thing the preflight looked at: what, its outcome, and where the answer came from."""

    what: str
    ok: bool | None  # None: could not be told (unknown), not a stop
    detail: str
    source: str


@dataclass
class Row:
    """One backend in the plan: where it would run, what it needs, and whether it can."""

    backend: str
    kind: str
    stack: str | None
    region: str | None
    failover: list[str]
    instance_type: str | None
    runs: bool = True
    reason: str = ""
    quota: str = ""
    images: list[str] = field(default_factory=list)
    usd_per_hour: float | None = None
    price_note: str = ""
    ttl_hours: float | None = None
    ttl_worst_usd: float | None = None
    checks: list[Check] = field(default_factory=list)

    def leave_out(self, reason: str) -> None:
        if self.runs:
            self.runs, self.reason = False, reason


@dataclass(frozen=True)
class Account:
    """The account the survey runs in and who calls (STS GetCallerIdentity)."""

    account: str | None
    arn: str | None
    source: str = "STS GetCallerIdentity"


@dataclass
class Preflight:
    """The survey's plan: the account, the Session Manager plugin, a row per backend, what to know
    before anything is made, and the time-to-live (a dry run's evidence, and the survey's state)."""

    account: Account
    plugin: Check
    rows: list[Row]
    notices: list[str]
    ttl_hours: float | None
    # The context the plan was made with: the user's, less the keys of backends left out.
    context: JsonObject = field(default_factory=dict)


def known_backends() -> list[str]:
    return backend_names(deployable_only=True)


def choose_backends(names: list[str]) -> list[str]:
    """The named backends (opt-in ones included), or the default ones; an unknown name is one line."""
    known = known_backends()
    for name in names:
        if name not in known:
            raise RunnerError(f"unknown backend {name!r}; known backends: {', '.join(known)}")
    if names:
        return list(dict.fromkeys(names))
    return [n for n in known if not get_backend(n).opt_in]


def account_check(sts: Any) -> Account:
    """GetCallerIdentity: the account and who is calling; a refusal is one line (exit 2)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = sts.get_caller_identity()
    except (BotoCoreError, ClientError) as error:
        raise RunnerError(f"credentials: STS GetCallerIdentity failed: {error}") from None
    return Account(answer.get("Account"), answer.get("Arn"))


def plugin_check(plugin: str = PLUGIN, needed: bool = True) -> Check:
    found = shutil.which(plugin)
    if found:
        return Check("Session Manager plugin", True, f"{plugin} at {found}", "PATH")
    detail = f"{plugin} is not on PATH: runner.forward cannot open the EC2 backends' forwards"
    return Check("Session Manager plugin", False if needed else None, detail, "PATH")


class Quotas:
    """The account's quotas, asked once per (service, code or name, region)."""

    def __init__(self, client_for: Callable[[str], Any]) -> None:
        self.client_for = client_for
        self.values: dict[tuple[str, str, str], tuple[float | None, str]] = {}
        self.listed: dict[tuple[str, str], dict[str, tuple[float, str]] | str] = {}

    def ec2(self, code: str, region: str) -> tuple[float | None, str]:
        """(value, detail): the applied quota, else its default when it was never adjusted, or None
        with why it could not be read."""
        key = ("ec2", code, region)
        if key not in self.values:
            from botocore.exceptions import BotoCoreError, ClientError

            client = self.client_for(region)
            try:
                quota = client.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]
                self.values[key] = (float(quota["Value"]), quota.get("QuotaName", code))
            except ClientError as error:
                if aws_error_code(error) != "NoSuchResourceException":
                    self.values[key] = (None, f"could not read ({aws_error_code(error)})")
                else:
                    # Never adjusted: GetServiceQuota has no applied value, the default is the quota.
                    try:
                        quota = client.get_aws_default_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]
                        self.values[key] = (float(quota["Value"]), DEFAULT_NOTE)
                    except ClientError as default_error:
                        self.values[key] = (None, f"could not read ({aws_error_code(default_error)})")
                    except BotoCoreError as default_error:
                        self.values[key] = (None, f"could not read ({default_error})")
            except BotoCoreError as error:
                self.values[key] = (None, f"could not read ({error})")
        return self.values[key]

    def by_name(self, service: str, name: str, region: str) -> tuple[float | None, str]:
        """(value, detail) of the quota called `name`: its applied value, else (never adjusted) its
        default, or None with why it could not be read."""
        applied = self.listing("list_service_quotas", service, region)
        if isinstance(applied, dict) and name in applied:
            return applied[name][0], f"applied value ({applied[name][1]})"
        defaults = self.listing("list_aws_default_service_quotas", service, region)
        if isinstance(defaults, dict) and name in defaults:
            return defaults[name][0], f"{DEFAULT_NOTE} ({defaults[name][1]})"
        reason = next((r for r in (applied, defaults) if isinstance(r, str)), "")
        return None, reason or "not listed for this account and region"

    def sagemaker(self, name: str, region: str) -> tuple[float | None, str]:
        return self.by_name("sagemaker", name, region)

    def listing(self, operation: str, service: str, region: str) -> dict[str, tuple[float, str]] | str:
        key = (f"{operation}:{service}", region)
        if key not in self.listed:
            self.listed[key] = self._list(operation, service, region)
        return self.listed[key]

    def _list(self, operation: str, service: str, region: str) -> dict[str, tuple[float, str]] | str:
        from botocore.exceptions import BotoCoreError, ClientError

        found: dict[str, tuple[float, str]] = {}
        try:
            for page in self.client_for(region).get_paginator(operation).paginate(ServiceCode=service):
                for quota in page.get("Quotas", []):
                    found[quota["QuotaName"]] = (float(quota["Value"]), quota.get("QuotaCode", ""))
        except ClientError as error:
            return f"could not list ({aws_error_code(error)})"
        except BotoCoreError as error:
            return f"could not list ({error})"
        return found


def ec2_quota_for(instance_type: str) -> tuple[str, str] | None:
    return EC2_QUOTAS.get(_letters(instance_family(instance_type)))


def _letters(family: str) -> str:
    """'g6' -> 'g', 'g5g' -> 'g', 'inf2' -> 'inf', 'trn1n' -> 'trn': the letters before the first digit."""
    out = ""
    for char in family:
        if char.isdigit():
            break
        out += char
    return out


def sagemaker_quota_name(backend: BackendConfig) -> tuple[str, int] | None:
    """(quota name, instances needed) for a SageMaker backend on an instance; None for serverless."""
    spec = backend.spec
    path = serving(spec.kind)
    if not spec.instance_type or not path.quota_usage:
        return None
    return f"{spec.instance_type} for {path.quota_usage}", max(1, spec.max_instances) if path.scales_out else 1


def price_of(backend: BackendConfig) -> tuple[float | None, str]:
    """The offline hourly price of what the backend bills by the hour (prices' one request per
    kind), and what the price means under its billing model."""
    spec = backend.spec
    entry = BackendEntry(
        spec.name, spec.kind.value, region=backend.region, catalog=CatalogFacts(instance_type=spec.instance_type)
    )
    request = price_request(entry)
    billing = serving(spec.kind).billing
    if spec.instance_type and request is not None and billing in HOURLY_NOTES:
        price, note = hourly(request.service, request.item, backend.region)
        return price, f"{note}; {HOURLY_NOTES[billing]}" if HOURLY_NOTES[billing] else note
    return None, f"not billed by the hour ({spec.billing.value})"


def run_preflight(
    config: AppConfig,
    chosen: list[str],
    account: Account,
    quotas: Quotas,
    plugin: Check,
    refused: Mapping[str, tuple[str, str]] | None = None,
) -> Preflight:
    rows: list[Row] = []
    for name, (region, reason) in (refused or {}).items():
        spec = get_backend(name)
        row = Row(spec.name, spec.kind.value, spec.stack, region, [], spec.instance_type)
        row.checks.append(Check("offered", False, reason, "catalog/config.py load_config (catalog/offerings.py)"))
        row.leave_out(reason)
        rows.append(row)
    # What each quota has handed out so far, per (quota, region): later backends see the sum.
    drawn: dict[tuple[str, str], tuple[float, list[str]]] = {}
    # Builds already counted per (quota, region): backends sharing one image draw one build.
    built: dict[tuple[str, str], set[str]] = {}
    stacks = {b.name: s for s in config.stacks for b in s.backends}
    copied = {region: models for region, (models, _) in store_needs(config.stacks).items() if models}
    for backend in (b for b in config.backends if b.name in chosen):
        spec, stack = backend.spec, stacks[backend.name]
        row = Row(
            backend=spec.name,
            kind=spec.kind.value,
            stack=spec.stack,
            region=backend.region,
            failover=[r for r in stack.candidate_regions if r != backend.region],
            instance_type=spec.instance_type,
        )
        row.checks.append(
            Check(
                "region",
                True,
                f"{backend.region} (stack {stack.name}; failover: {', '.join(row.failover) or 'none'})",
                "catalog/config.py load_config with the -c context",
            )
        )
        _offered(row, backend, stack.candidate_regions)
        _quota(row, backend, quotas, drawn)
        if serving(spec.kind).port_forward and plugin.ok is False:
            row.checks.append(Check("forward", None, "no Session Manager plugin: the server runs, unreachable", "PATH"))
        folder = built_image(spec)
        if folder:
            build = image_build(folder)
            arch = spec.architecture.value if spec.architecture else "x86_64"
            row.images.append(folder)
            row.checks.append(
                Check(
                    f"image {folder}",
                    None,
                    f"built by the {stack.name} stack's CodeBuild project in {backend.region} on {arch} "
                    f"{build.compute} compute (images/{folder}, at most {build.timeout_hours} h); "
                    f"build cost {CODEBUILD_PRICE}",
                    "catalog/builds.py IMAGE_BUILDS",
                )
            )
            _build_quota(row, backend, folder, quotas, built)
        if backend.spec.model_id in copied.get(backend.region, ()):
            _copy_quota(row, backend, quotas)
        row.usd_per_hour, row.price_note = price_of(backend)
        row.checks.append(
            Check("price", None, f"{row.usd_per_hour} $/h: {row.price_note}", "catalog/prices.py offline table")
        )
        if config.expires_at is not None:
            row.ttl_hours = config.ttl_hours
            if row.usd_per_hour is not None:
                instances = max(1, spec.max_instances) if serving(spec.kind).scales_out else 1
                row.ttl_worst_usd = round(config.ttl_hours * row.usd_per_hour * instances, 4)
        rows.append(row)
    rows.sort(key=lambda r: chosen.index(r.backend) if r.backend in chosen else len(chosen))
    return Preflight(account, plugin, rows, list(config.notices), config.ttl_hours if config.expires_at else None)


def _offered(row: Row, backend: BackendConfig, candidates: tuple[str, ...]) -> None:
    instance_type = backend.spec.instance_type
    if not instance_type:
        row.checks.append(Check("offered", None, "no instance type to check", "catalog/offerings.py"))
        return
    regions = regions_offering(instance_type)
    source = f"catalog/offerings.py (price lists of {CHECKED_ON}, with the survey's corrections)"
    if regions is None:
        row.checks.append(Check("offered", None, f"{instance_type}: not in the offerings table", source))
        return
    failover = [r for r in candidates if r != backend.region]
    elsewhere = [r for r in failover if r in regions]
    if backend.region not in regions:
        detail = f"{instance_type} is not offered in {backend.region}"
        if elsewhere:
            detail += f" (offered in failover {', '.join(elsewhere)})"
        row.checks.append(Check("offered", False, detail, source))
        row.leave_out(detail)
        return
    not_in = [r for r in failover if r not in regions]
    note = f"; not in failover {', '.join(not_in)}" if not_in else ""
    row.checks.append(Check("offered", True, f"{instance_type} offered in {backend.region}{note}", source))


def _quota(
    row: Row, backend: BackendConfig, quotas: Quotas, drawn: dict[tuple[str, str], tuple[float, list[str]]]
) -> None:
    """The instance quota the backend's serving row names (`quota`)."""
    reference = serving(backend.spec.kind).quota
    if not reference:
        row.checks.append(Check("quota", None, f"no instance quota checked for {backend.spec.kind.value}", "-"))
        return
    resolve(reference)(row, backend, quotas, drawn)


def ec2_vcpus(
    row: Row, backend: BackendConfig, quotas: Quotas, drawn: dict[tuple[str, str], tuple[float, list[str]]]
) -> None:
    """An EC2 server: its family's running On-Demand vCPU quota against the vCPUs it needs."""
    spec, region = backend.spec, backend.region
    pinned = ec2_quota_for(spec.instance_type) if spec.instance_type else None
    need = VCPUS.get(spec.instance_type or "")
    if pinned is None or need is None:
        row.checks.append(Check("quota", None, f"no pinned quota for {spec.instance_type}", EC2_QUOTA_SOURCE))
        return
    code, name = pinned
    value, detail = quotas.ec2(code, region)
    _against(row, f"{name} ({code})", region, value, detail, need, "vCPUs", EC2_QUOTA_SOURCE, drawn)


def sagemaker_instances(
    row: Row, backend: BackendConfig, quotas: Quotas, drawn: dict[tuple[str, str], tuple[float, list[str]]]
) -> None:
    """A SageMaker path on instances: "<type> for <usage>" against the instances it may hold."""
    named = sagemaker_quota_name(backend)
    if named is None:
        row.checks.append(Check("quota", None, f"no instance type for {backend.spec.kind.value}", "-"))
        return
    name, need = named
    value, detail = quotas.sagemaker(name, backend.region)
    _against(row, name, backend.region, value, detail, need, "instances", SAGEMAKER_QUOTA_SOURCE, drawn)


def default_said(detail: str) -> str:
    """ " (AWS default (never adjusted))" where a quota's value is the AWS default, else ""."""
    return f" ({DEFAULT_NOTE})" if detail.startswith(DEFAULT_NOTE) else ""


def _build_quota(
    row: Row, backend: BackendConfig, folder: str, quotas: Quotas, built: dict[tuple[str, str], set[str]]
) -> None:
    """CodeBuild's concurrent-build quota for the compute this image needs: at 0 the build cannot
    start (StartBuild: "Cannot have more than 0 builds in queue"), so the backend is left out."""
    spec, region = backend.spec, backend.region
    name = build_quota_name(spec.architecture, image_build(folder).compute)
    value, detail = quotas.by_name("codebuild", name, region)
    if value is None:
        row.checks.append(Check("build quota", None, f"{name} in {region}: {detail}", CODEBUILD_QUOTA_SOURCE))
        return
    users = built.setdefault((name, region), set())
    need = len(users | {folder})
    default = default_said(detail)
    if need > value:
        why = f"CodeBuild quota {name} in {region} is {value:g}{default}: images/{folder} cannot be built there"
        row.checks.append(Check("build quota", False, why, CODEBUILD_QUOTA_SOURCE))
        row.leave_out(why)
        return
    users.add(folder)
    row.checks.append(
        Check(
            "build quota",
            True,
            f"{name} in {region}: {value:g}{default}; {need:g} build(s) drawn",
            CODEBUILD_QUOTA_SOURCE,
        )
    )


def _copy_quota(row: Row, backend: BackendConfig, quotas: Quotas) -> None:
    """The weights copy's concurrent-build quota (stacks/store_stack.py, Linux Medium): at 0 no copy
    starts, and the backend still runs, reading its model from the hub at every boot (slower, and
    the hub's own limits apply)."""
    name = build_quota_name(None, WEIGHTS_COPY_COMPUTE)
    value, detail = quotas.by_name("codebuild", name, backend.region)
    if value is None:
        row.checks.append(Check("copy quota", None, f"{name} in {backend.region}: {detail}", CODEBUILD_QUOTA_SOURCE))
    elif value < 1:
        default = default_said(detail)
        why = (
            f"CodeBuild quota {name} in {backend.region} is {value:g}{default}: the weights copy cannot run, "
            f"so {backend.spec.model_id} is read from the hub at every boot"
        )
        row.checks.append(Check("copy quota", False, why, CODEBUILD_QUOTA_SOURCE))
    else:
        row.checks.append(Check("copy quota", True, f"{name} in {backend.region}: {value:g}", CODEBUILD_QUOTA_SOURCE))


def _against(
    row: Row,
    quota: str,
    region: str,
    value: float | None,
    detail: str,
    need: int,
    unit: str,
    source: str,
    drawn: dict[tuple[str, str], tuple[float, list[str]]],
) -> None:
    if value is None:
        row.quota = f"{quota}: {detail}"
        row.checks.append(Check("quota", None, f"{quota} in {region}: {detail}; needs {need} {unit}", source))
        return
    used, users = drawn.get((quota, region), (0.0, []))
    shown = f"{value:g}"
    if not row.runs:
        row.quota = f"{quota}: {shown} {unit}"
        row.checks.append(Check("quota", None, f"{quota} in {region}: {shown} {unit} (not counted: left out)", source))
        return
    if used + need > value:
        before = f", {used:g} already for {', '.join(users)}" if users else ""
        why = f"quota {quota} in {region} is {shown} {unit}{before}; {row.backend} needs {need}"
        row.quota = f"{quota}: {shown} {unit}"
        row.checks.append(Check("quota", False, why, source))
        row.leave_out(why)
        return
    drawn[(quota, region)] = (used + need, [*users, row.backend])
    row.quota = f"{quota}: {used + need:g} of {shown} {unit}"
    default = default_said(detail)
    row.checks.append(
        Check(
            "quota",
            True,
            f"{quota} in {region}: {shown} {unit}{default}; {used + need:g} drawn with {row.backend}",
            source,
        )
    )


def load_plan(
    context: Mapping[str, Any], chosen: list[str], placements: Mapping[str, str] | None
) -> tuple[AppConfig, dict[str, tuple[str, str]]]:
    """The app's config for these backends (the user's context, `backends` set to the chosen ones),
    and the backends left out because the context puts them where their type is not offered
    ({backend: (region, reason)}): the config is built again without them, so the others go on.
    Any other fault in the context stays one line (exit 2)."""
    refused: dict[str, tuple[str, str]] = {}
    ctx = dict(context)
    while True:
        keep = [name for name in chosen if name not in refused]
        try:
            return load_config({**ctx, "backends": ",".join(keep)}, placements), refused
        except NotOffered as error:
            if error.backend not in keep:
                raise
            name = error.backend
            refused[name] = (error.region, str(error).removeprefix("context "))
            ctx = {k: v for k, v in ctx.items() if not k.startswith(f"{name}.")}
