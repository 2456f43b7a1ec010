"""Turns CDK context (cdk.json defaults plus `cdk deploy -c key=value`) into typed, checked config.

Every project key is flat (`g6.zone`, `sagemaker.instanceType`) so one `-c` overrides one value.
Anything wrong stops synth with one line that names the key and the allowed values.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from catalog.backends import (
    INSTANCE_FAMILIES,
    BackendKind,
    BackendSpec,
    backend_names,
    get_backend,
    instance_family,
)
from catalog.errors import CatalogError

GLOBAL_KEYS = ("region", "zones", "backends", "hfTokenSecretName")
EC2_KEYS = ("zone", "instanceType", "model", "image", "flags")
SAGEMAKER_KEYS = ("instanceType", "model", "image", "flags", "startupTimeoutSeconds")
DEFAULT_REGION = "us-east-1"
HF_SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")


def backend_keys(spec: BackendSpec) -> tuple[str, ...]:
    if spec.kind is BackendKind.SAGEMAKER:
        return SAGEMAKER_KEYS
    return EC2_KEYS


def known_keys() -> list[str]:
    keys = list(GLOBAL_KEYS)
    for name in backend_names(deployable_only=True):
        keys += [f"{name}.{k}" for k in backend_keys(get_backend(name))]
    return keys


def is_framework_key(key: str) -> bool:
    """Keys the CDK itself owns: feature flags (`@aws-cdk/...`), `aws:cdk:*`, lookups (`a:b=c`)."""
    return key.startswith(("@", "cdk-")) or ":" in key or key == "acknowledged-issue-numbers"


@dataclass(frozen=True)
class BackendConfig:
    """A catalog entry with the user's overrides applied, plus deploy-only settings."""

    spec: BackendSpec
    startup_timeout_seconds: int = 1800

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class AppConfig:
    region: str
    zones: tuple[str, ...]
    hf_token_secret_name: str
    backends: tuple[BackendConfig, ...]

    def for_stack(self, stack: str) -> list[BackendConfig]:
        return [b for b in self.backends if b.spec.stack == stack]


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


def _check_zone(key: str, zone: str, region: str, zones: tuple[str, ...]) -> None:
    if zone not in zones:
        raise CatalogError(
            f"context {key}: zone {zone!r} is not one of the app's zones in {region}: {', '.join(zones)}"
        )


def _check_instance_type(key: str, spec: BackendSpec, instance_type: str) -> None:
    if spec.kind is BackendKind.SAGEMAKER and not instance_type.startswith("ml."):
        raise CatalogError(f"context {key}: SageMaker instance types start with 'ml.', got {instance_type!r}")
    if spec.kind is not BackendKind.SAGEMAKER and instance_type.startswith("ml."):
        raise CatalogError(f"context {key}: {instance_type!r} is a SageMaker type; EC2 backends take e.g. g6.xlarge")
    family = instance_family(instance_type)
    wanted = (spec.architecture, spec.accelerator)
    allowed = sorted(f for f, kind in INSTANCE_FAMILIES.items() if kind == wanted)
    if INSTANCE_FAMILIES.get(family) != wanted:
        raise CatalogError(
            f"context {key}: {instance_type!r} does not match backend {spec.name} "
            f"({spec.architecture}, {spec.accelerator}); allowed families: {', '.join(allowed)}"
        )


def _apply_overrides(spec: BackendSpec, ctx: Mapping[str, Any], region: str, zones: tuple[str, ...]) -> BackendConfig:
    changes: dict[str, Any] = {}
    startup_timeout = 1800
    prefix = f"{spec.name}."
    for key in backend_keys(spec):
        full = prefix + key
        if full not in ctx:
            continue
        value = ctx[full]
        if key == "zone":
            zone = _as_str(full, value)
            _check_zone(full, zone, region, zones)
            changes["zone"] = zone
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
    spec = replace(spec, **changes)
    if spec.zone is not None and "zone" not in changes and spec.zone not in zones:
        # The catalog's default zone lies outside a region the user chose: take the first zone.
        spec = replace(spec, zone=zones[0])
    return BackendConfig(spec=spec, startup_timeout_seconds=startup_timeout)


def load_config(ctx: Mapping[str, Any]) -> AppConfig:
    """Check every project key in `ctx` and build the app's config, or raise CatalogError."""
    allowed = known_keys()
    for key in ctx:
        if is_framework_key(key) or key in allowed:
            continue
        name = key.split(".", 1)[0]
        if "." in key and name not in backend_names(deployable_only=True):
            raise CatalogError(
                f"unknown backend {name!r} in context key {key!r}; "
                f"backends: {', '.join(backend_names(deployable_only=True))}"
            )
        raise CatalogError(f"unknown context key {key!r}; allowed keys: {', '.join(allowed)}")

    region = _as_str("region", ctx.get("region", DEFAULT_REGION))
    if not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", region):
        raise CatalogError(f"context region: {region!r} is not an AWS region name such as us-east-2")
    zones = tuple(_as_list("zones", ctx.get("zones", [f"{region}a", f"{region}b", f"{region}c"])))
    if not zones:
        raise CatalogError("context zones: at least one availability zone is needed")
    for zone in zones:
        if not re.fullmatch(re.escape(region) + r"[a-z]", zone):
            raise CatalogError(f"context zones: {zone!r} is not a zone of region {region} (expected e.g. {region}a)")

    secret = _as_str("hfTokenSecretName", ctx.get("hfTokenSecretName", "inference/hf-token"))
    if not HF_SECRET_NAME.fullmatch(secret):
        raise CatalogError(f"context hfTokenSecretName: {secret!r} is not a valid Secrets Manager name")

    deployable = backend_names(deployable_only=True)
    selected = _as_list("backends", ctx.get("backends", deployable))
    for name in selected:
        if name not in deployable:
            raise CatalogError(f"context backends: unknown backend {name!r}; allowed: {', '.join(deployable)}")

    configs = tuple(_apply_overrides(get_backend(name), ctx, region, zones) for name in deployable if name in selected)
    return AppConfig(region=region, zones=zones, hf_token_secret_name=secret, backends=configs)


def sagemaker_environment(flags: tuple[str, ...], model_id: str) -> dict[str, str]:
    """vLLM command-line flags -> the DLC's SM_VLLM_* variables (`--foo-bar v` -> SM_VLLM_FOO_BAR=v)."""
    env = {"SM_VLLM_MODEL": model_id}
    i = 0
    while i < len(flags):
        flag = flags[i]
        if not flag.startswith("--") or len(flag) < 3:
            raise CatalogError(f"sagemaker flags: expected --name [value], got {flag!r} in {' '.join(flags)!r}")
        name = "SM_VLLM_" + flag[2:].replace("-", "_").upper()
        if name == "SM_VLLM_MODEL":
            raise CatalogError("sagemaker flags: set the model with sagemaker.model, not --model")
        if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
            env[name] = flags[i + 1]
            i += 2
        else:
            env[name] = "true"
            i += 1
    return env
