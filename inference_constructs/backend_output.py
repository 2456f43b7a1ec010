"""Each backend's stack output (the contract the runner reads, catalog/contract.py): the fields every
backend has, filled from its config, and the one CloudFormation output that carries it."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack

from catalog.config import BackendConfig
from catalog.contract import BackendOutput, output_key


def backend_output(backend: BackendConfig, stack: Stack, **fields: Any) -> BackendOutput:
    """The backend's output: its name, kind, region, model, port, health path, lane and precision,
    and the kind's own `fields`."""
    spec = backend.spec
    common: dict[str, Any] = {
        "name": spec.name,
        "kind": spec.kind.value,
        "region": stack.region,
        "model_id": spec.model_id,
        "port": spec.port,
        "health_path": spec.health_path,
        "lane": backend.lane,
        "precision": spec.precision or None,
    }
    return BackendOutput(**(common | fields))


def publish_output(stack: Stack, backend: BackendConfig, output: BackendOutput) -> CfnOutput:
    """`Backend<Name>`: the output as JSON (tokens resolved by CloudFormation at deploy)."""
    return CfnOutput(
        stack,
        output_key(backend.name),
        value=stack.to_json_string(output.to_json()),
        description=f"{backend.spec.title}: backend contract v{output.contract} (JSON)",
    )
