"""Timed streaming chat against Bedrock's ConverseStream API (one reused boto3 client)."""

from __future__ import annotations

from typing import Any

from runner.aws import boto_client
from runner.errors import BackendFault
from runner.timing.base import ChatRequest, RequestRecord, Stopwatch


class BedrockStreamClient:
    def __init__(self, model_id: str, region: str, *, client: Any | None = None, timeout_s: float = 60.0) -> None:
        if client is None:
            client = boto_client("bedrock-runtime", region, timeout_s)
        self.client = client
        self.model_id = model_id

    def warm(self) -> None:
        """A one-token request opens the TLS connection outside the timed runs."""
        self.client.converse(
            modelId=self.model_id,
            messages=[{"role": "user", "content": [{"text": "Hi"}]}],
            inferenceConfig={"maxTokens": 1},
        )

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        watch = Stopwatch()
        response = self.client.converse_stream(
            modelId=self.model_id,
            messages=[{"role": "user", "content": [{"text": request.prompt}]}],
            inferenceConfig={"maxTokens": request.max_tokens, "temperature": request.temperature},
        )
        parts: list[str] = []
        for event in response["stream"]:
            record.chunks += 1
            if "contentBlockDelta" in event:
                text = event["contentBlockDelta"].get("delta", {}).get("text", "")
                if text and record.ttft_s is None:
                    record.ttft_s = watch.now()
                parts.append(text)
            elif "messageStop" in event:
                record.finish_reason = event["messageStop"].get("stopReason")
            elif "metadata" in event:
                usage = event["metadata"].get("usage", {})
                if "outputTokens" in usage:
                    record.output_tokens = int(usage["outputTokens"])
                    record.prompt_tokens = usage.get("inputTokens")
                    record.token_source = "server"
            else:
                for key in event:
                    if key.endswith("Exception"):
                        raise BackendFault(f"Bedrock stream error {key}: {event[key].get('message', '')[:200]}")
        record.e2e_s = watch.now()
        record.text = "".join(parts)
        if record.finish_reason is None:
            raise BackendFault(f"stream cut: ended after {record.chunks} events without messageStop")
        if record.output_tokens is None:
            raise BackendFault("Bedrock stream carried no usage metadata")
        record.ok = True
        return record

    def close(self) -> None:
        self.client.close()
