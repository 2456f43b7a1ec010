"""Timed streaming chat against a SageMaker endpoint running the vLLM container.

InvokeEndpointWithResponseStream returns PayloadPart events whose bytes are the container's
SSE stream, split at arbitrary byte boundaries: `sse_lines` reassembles lines before parsing.
An error event from the service (ModelStreamError, InternalStreamFailure) is raised by botocore
while the stream is read, and is typed by `runner.core.errors`.
"""

from __future__ import annotations

import json
from typing import Any

from runner.cloud.aws import boto_client
from runner.measure.records import ChatRequest, RequestRecord, Stopwatch
from runner.measure.sse import ChatStreamAccumulator, sse_lines


def payload_parts(events: Any) -> Any:
    """The bytes of each PayloadPart event (the only event botocore yields; errors raise)."""
    for event in events:
        if "PayloadPart" in event:
            yield event["PayloadPart"]["Bytes"]


class SageMakerStreamClient:
    def __init__(
        self, endpoint_name: str, model_id: str, region: str, *, client: Any | None = None, timeout_s: float = 60.0
    ) -> None:
        if client is None:
            client = boto_client("sagemaker-runtime", region, timeout_s)
        self.client = client
        self.endpoint_name = endpoint_name
        self.model_id = model_id

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        body = request.openai_body(self.model_id)
        watch = Stopwatch()
        response = self.client.invoke_endpoint_with_response_stream(
            EndpointName=self.endpoint_name, ContentType="application/json", Body=json.dumps(body)
        )
        stream = ChatStreamAccumulator(record)
        for line in sse_lines(payload_parts(response["Body"])):
            stream.feed_line(line.decode("utf-8", errors="replace"), watch.now())
        return stream.finish(watch.now())

    def close(self) -> None:
        self.client.close()
