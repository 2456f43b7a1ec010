"""Picks the timed client for a backend's kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from catalog import BackendKind
from runner.core.errors import RunnerError
from runner.measure.records import TimedClient

if TYPE_CHECKING:
    from runner.core.backends import Backend


def timed_client_for(backend: Backend, timeout_s: float, *, connections: int = 1) -> TimedClient:
    """The client for `backend`; an AWS client is built only for a backend AWS may be used for."""
    backend.require_reachable()
    if backend.speaks_openai:
        if not backend.base_url:
            raise RunnerError(f"backend {backend.name}: no URL to reach it")
        from runner.measure.openai_sync import OpenAIStreamClient

        return OpenAIStreamClient(backend.base_url, backend.model_id, timeout_s=timeout_s, connections=connections)
    if backend.kind is BackendKind.BEDROCK:
        from runner.measure.bedrock import BedrockStreamClient

        return BedrockStreamClient(backend.model_id, backend.region or "us-east-1", timeout_s=timeout_s)
    if backend.kind is BackendKind.SAGEMAKER:
        from runner.measure.sagemaker import SageMakerStreamClient

        if not backend.endpoint_name:
            raise RunnerError(f"backend {backend.name}: no SageMaker endpoint name")
        return SageMakerStreamClient(
            backend.endpoint_name, backend.model_id, backend.region or "us-east-1", timeout_s=timeout_s
        )
    raise RunnerError(f"backend {backend.name}: no timed client for kind {backend.kind.value}")
