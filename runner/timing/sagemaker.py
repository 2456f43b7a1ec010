"""Timed streaming chat against a SageMaker endpoint running the vLLM container.

InvokeEndpointWithResponseStream returns PayloadPart events whose bytes are the container's
SSE stream, split at arbitrary byte boundaries: reassemble lines before parsing.
"""

from __future__ import annotations

import json
from typing import Any

from runner.aws import boto_client
from runner.errors import BackendFault
from runner.timing.base import ChatRequest, RequestRecord, Stopwatch
from runner.timing.sse import ChatStreamAccumulator


class SageMakerStreamClient:
    def __init__(
        self, endpoint_name: str, model_id: str, region: str, *, client: Any | None = None, timeout_s: float = 60.0
    ) -> None:
        if client is None:
            client = boto_client("sagemaker-runtime", region, timeout_s)
        self.client = client
        self.endpoint_name = endpoint_name
        self.model_id = model_id

    def warm(self) -> None:
        self.client.invoke_endpoint(
            EndpointName=self.endpoint_name,
            ContentType="application/json",
            Body=json.dumps({"model": self.model_id, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}),
        )

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        body = request.openai_body(self.model_id)
        watch = Stopwatch()
        response = self.client.invoke_endpoint_with_response_stream(
            EndpointName=self.endpoint_name, ContentType="application/json", Body=json.dumps(body)
        )
        stream = ChatStreamAccumulator(record)
        buffer = b""
        for event in response["Body"]:
            if "PayloadPart" not in event:
                error = next(iter(event.values()), {})
                raise BackendFault(f"SageMaker stream error: {str(error.get('Message', error))[:200]}")
            buffer += event["PayloadPart"]["Bytes"]
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                stream.feed_line(line.decode("utf-8", errors="replace"), watch.now())
        if buffer.strip():
            stream.feed_line(buffer.decode("utf-8", errors="replace"), watch.now())
        return stream.finish(watch.now())

    def close(self) -> None:
        self.client.close()
