"""The timed clients a serving row names (catalog/serving.py `client`): an OpenAI-compatible
server's is the one streaming client; each AWS path has its own module (bedrock.py, sagemaker.py
for real-time, serverless and inference components, sagemaker_async.py, bedrock_import.py). A client's module is imported only when a backend that
takes it is measured (boto3's and aiohttp's imports stay off the paths that do not need them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from runner.core.backends import BATCH_COMMAND
from runner.core.errors import RunnerError
from runner.core.references import resolve
from runner.measure.records import TimedClient

if TYPE_CHECKING:
    from runner.core.backends import Backend

Factory = Callable[["Backend", float, str, int], TimedClient]


def timed_client_for(backend: Backend, timeout_s: float, *, connections: int = 1) -> TimedClient:
    """The client for `backend`; an AWS client is built only for a backend AWS may be used for."""
    backend.require_reachable()
    if not backend.timed_chat:
        raise RunnerError(f"backend {backend.name}: not a timed chat: measured by {BATCH_COMMAND}")
    if not backend.supports.client:
        raise RunnerError(f"backend {backend.name}: no timed client for kind {backend.kind.value}")
    factory: Factory = resolve(backend.supports.client)
    return factory(backend, timeout_s, backend.region or "us-east-1", connections)


def openai_client(backend: Backend, timeout_s: float, region: str, connections: int) -> TimedClient:
    if not backend.base_url:
        raise RunnerError(f"backend {backend.name}: no URL to reach it")
    from runner.measure.openai_sync import OpenAIStreamClient

    return OpenAIStreamClient(
        backend.base_url,
        backend.model_id,
        timeout_s=timeout_s,
        connections=connections,
        context_tokens=backend.max_total_tokens,
    )


def bedrock_client(backend: Backend, timeout_s: float, region: str, connections: int) -> TimedClient:
    from runner.measure.bedrock import BedrockStreamClient

    return BedrockStreamClient(backend.model_id, region, timeout_s=timeout_s)


def sagemaker_client(backend: Backend, timeout_s: float, region: str, connections: int) -> TimedClient:
    from runner.measure.sagemaker import SageMakerStreamClient

    return SageMakerStreamClient(_endpoint(backend), backend.model_id, region, timeout_s=timeout_s)


def component_client(backend: Backend, timeout_s: float, region: str, connections: int) -> TimedClient:
    from runner.measure.sagemaker import InferenceComponentStreamClient

    component = backend.output.inference_component_name if backend.output else None
    if not component:
        raise RunnerError(f"backend {backend.name}: no inference component in its stack output")
    return InferenceComponentStreamClient(_endpoint(backend), component, backend.model_id, region, timeout_s=timeout_s)


def serverless_client(backend: Backend, timeout_s: float, region: str, connections: int) -> TimedClient:
    from runner.measure.sagemaker import SageMakerServerlessClient

    limit = backend.output.max_concurrency if backend.output else None
    return SageMakerServerlessClient(
        _endpoint(backend), backend.model_id, region, max_concurrency=limit, timeout_s=timeout_s
    )


def async_client(backend: Backend, timeout_s: float, region: str, connections: int) -> TimedClient:
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


def import_client(backend: Backend, timeout_s: float, region: str, connections: int) -> TimedClient:
    from runner.measure.bedrock_import import BedrockImportStreamClient

    if not backend.model_name:
        raise RunnerError(
            f"backend {backend.name}: no imported model in its stack output (run python -m runner.model_import)"
        )
    return BedrockImportStreamClient(backend.model_name, region, timeout_s=timeout_s)


def _endpoint(backend: Backend) -> str:
    if not backend.endpoint_name:
        raise RunnerError(f"backend {backend.name}: no SageMaker endpoint name")
    return backend.endpoint_name
