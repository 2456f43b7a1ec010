"""Timed streaming chat against Bedrock's ConverseStream API (one reused boto3 client).

An exception event in the stream (throttling, model error) is raised by botocore while the
stream is read, and is typed by `runner.core.errors`.
"""

from __future__ import annotations

from typing import Any

from runner.cloud.aws import boto_client
from runner.core.errors import StreamFault
from runner.core.records import RequestRecord
from runner.measure.records import ChatRequest, Stopwatch, check_completion, usage_counts


class BedrockStreamClient:
    def __init__(self, model_id: str, region: str, *, client: Any | None = None, timeout_s: float = 60.0) -> None:
        if client is None:
            client = boto_client("bedrock-runtime", region, timeout_s)
        self.client = client
        self.model_id = model_id

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        watch = Stopwatch()
        # Converse takes the system prompt apart from the turns, each turn's text as a content block.
        system = [{"text": text} for role, text in request.history if role == "system"]
        turns = [
            {"role": m["role"], "content": [{"text": m["content"]}]}
            for m in request.messages()
            if m["role"] != "system"
        ]
        extra = {"system": system} if system else {}
        response = self.client.converse_stream(
            modelId=self.model_id,
            messages=turns,
            inferenceConfig={"maxTokens": request.max_tokens, "temperature": request.temperature},
            **extra,
        )
        parts: list[str] = []
        has_output = False
        for event in response["stream"]:
            record.chunks += 1
            if "contentBlockDelta" in event:
                delta = event["contentBlockDelta"].get("delta", {})
                text = delta.get("text", "")
                if text or "toolUse" in delta:
                    at = watch.now()
                    record.ttft_s = at if record.ttft_s is None else record.ttft_s
                    record.chunk_times.append(at)
                has_output = has_output or bool(text) or "toolUse" in delta
                parts.append(text)
            elif "messageStop" in event:
                record.finish_reason = event["messageStop"].get("stopReason")
            elif "metadata" in event:
                usage = event["metadata"].get("usage", {})
                if "outputTokens" in usage:
                    record.output_tokens, record.prompt_tokens = usage_counts(usage, "outputTokens", "inputTokens")
                    record.token_source = "server"
        record.e2e_s = watch.now()
        record.text = "".join(parts)
        if record.finish_reason is None:
            raise StreamFault(f"stream cut: ended after {record.chunks} events without messageStop")
        if record.output_tokens is None:
            raise StreamFault("Bedrock stream carried no usage metadata")
        check_completion(record, has_output=has_output)
        record.ok = True
        return record

    def close(self) -> None:
        self.client.close()
