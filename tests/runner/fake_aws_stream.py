"""A loopback server that answers AWS streaming APIs in AWS's own binary event-stream framing.

Real boto3 clients (`endpoint_url` on loopback, explicit dummy credentials) parse what it sends
with botocore's own parser, so exception events raise `EventStreamError` exactly as they do from
Bedrock's ConverseStream and SageMaker's InvokeEndpointWithResponseStream: they are never
dictionaries in the stream. Framing: prelude (total length, headers length, CRC32), string
headers, payload, message CRC32.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

from tests.runner.loopback import LoopbackServer, QuietHandler, boto3_client


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return struct.pack("!B", len(raw_name)) + raw_name + b"\x07" + struct.pack("!H", len(raw_value)) + raw_value


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    encoded = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack("!II", total, len(encoded))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack("!I", zlib.crc32(message))


def event(event_type: str, body: dict[str, Any]) -> bytes:
    """A Bedrock-style event whose members are the JSON payload."""
    headers = {":message-type": "event", ":event-type": event_type, ":content-type": "application/json"}
    return frame(headers, json.dumps(body).encode())


def payload_part(data: bytes) -> bytes:
    """A SageMaker PayloadPart: its Bytes member is the raw event payload."""
    headers = {":message-type": "event", ":event-type": "PayloadPart", ":content-type": "application/octet-stream"}
    return frame(headers, data)


def exception(exception_type: str, body: dict[str, Any]) -> bytes:
    headers = {":message-type": "exception", ":exception-type": exception_type, ":content-type": "application/json"}
    return frame(headers, json.dumps(body).encode())


@dataclass
class Reply:
    """One scripted answer: an event stream, or an HTTP error in the service's JSON shape."""

    messages: list[bytes] = field(default_factory=list)
    status: int = 200
    error_type: str = ""
    error_message: str = ""


class FakeAwsStream(LoopbackServer):
    """Each POST takes the next reply (the last one repeats) and is kept in `requests`."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                server.requests.append((self.path, json.loads(self.read_body() or b"{}")))
                reply = server.replies.pop(0) if len(server.replies) > 1 else server.replies[0]
                if reply.status != 200:
                    data = json.dumps({"message": reply.error_message}).encode()
                    headers = {"x-amzn-errortype": reply.error_type, "content-type": "application/json"}
                    self.send_body(reply.status, data, headers)
                else:
                    self.send_body(
                        200, b"".join(reply.messages), {"content-type": "application/vnd.amazon.eventstream"}
                    )

        super().__init__(Handler)

    def client(self, service: str) -> Any:
        """A real boto3 client aimed at this server."""
        return boto3_client(service, self.url)
