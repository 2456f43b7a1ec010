"""Stack updates that keep a parameter: the CDK CLI sends `UsePreviousValue` for a parameter the
stack had (BootstrapVersion, the AMI parameters), and moto answers HTTP 500 (KeyError) when the
stack was created with that parameter's default, not an explicit value. CloudFormation keeps the
previous value, the default here: moto resolves it again from the template."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def install(emulator: Any) -> Callable[[], None]:
    from moto.cloudformation.models import CloudFormationBackend

    original = CloudFormationBackend._resolve_update_parameters

    def resolve(backend, instance, incoming_params):
        known = [
            p for p in incoming_params if not p.get("UsePreviousValue") or p["ParameterKey"] in instance.parameters
        ]
        return original(backend, instance, known)

    CloudFormationBackend._resolve_update_parameters = resolve

    def undo() -> None:
        CloudFormationBackend._resolve_update_parameters = original

    return undo
