"""Picks the timed client for a backend's kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from catalog import BackendKind
from runner.core.backends import BATCH_COMMAND
from runner.core.errors import RunnerError
from runner.measure.records import TimedClient

if TYPE_CHECKING:
    from runner.core.backends import Backend


def timed_client_for(backend: Backend, timeout_s: float, *, connections: int = 1) -> TimedClient:
    """The client for `backend`; an AWS client is built only for a backend AWS may be used for."""
    backend.require_reachable()
    region = backend.region or "us-east-1"
    if backend.speaks_openai:
        if not backend.base_url:
            raise RunnerError(f"backend {backend.name}: no URL to reach it")
        from runner.measure.openai_sync import OpenAIStreamClient

        return OpenAIStreamClient(backend.base_url, backend.model_id, timeout_s=timeout_s, connections=connections)
    if backend.kind is BackendKind.BEDROCK:
        from runner.measure.bedrock import BedrockStreamClient

        return BedrockStreamClient(backend.model_id, region, timeout_s=timeout_s)
    if backend.kind is BackendKind.SAGEMAKER:
        from runner.measure.sagemaker import SageMakerStreamClient

        return SageMakerStreamClient(_endpoint(backend), backend.model_id, region, timeout_s=timeout_s)
    if backend.kind is BackendKind.SAGEMAKER_SERVERLESS:
        from runner.measure.sagemaker import SageMakerServerlessClient

        limit = backend.output.max_concurrency if backend.output else None
        return SageMakerServerlessClient(
            _endpoint(backend), backend.model_id, region, max_concurrency=limit, timeout_s=timeout_s
        )
    if backend.kind is BackendKind.SAGEMAKER_ASYNC:
        from runner.measure.sagemaker_async import SageMakerAsyncClient

        if not (backend.bucket and backend.input_prefix):
            raise RunnerError(f"backend {backend.name}: no bucket and input prefix for its asynchronous requests")
        return SageMakerAsyncClient(
            _endpoint(backend),
            backend.model_id,
            region,
            bucket=backend.bucket,
            input_prefix=backend.input_prefix,
            timeout_s=timeout_s,
        )
    if backend.kind is BackendKind.BEDROCK_IMPORT:
        from runner.measure.bedrock_import import BedrockImportStreamClient

        if not backend.model_name:
            raise RunnerError(
                f"backend {backend.name}: no imported model in its stack output (run python -m runner.model_import)"
            )
        return BedrockImportStreamClient(backend.model_name, region, timeout_s=timeout_s)
    if backend.kind is BackendKind.SAGEMAKER_BATCH:
        raise RunnerError(f"backend {backend.name}: not a timed chat: measured by {BATCH_COMMAND}")
    raise RunnerError(f"backend {backend.name}: no timed client for kind {backend.kind.value}")


def _endpoint(backend: Backend) -> str:
    if not backend.endpoint_name:
        raise RunnerError(f"backend {backend.name}: no SageMaker endpoint name")
    return backend.endpoint_name
