"""A threaded HTTP server on 127.0.0.1 for the test fakes: start, URL, stop."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LoopbackServer:
    """Serves `handler` on a free loopback port while used as a context manager."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stopping(self) -> None:
        """Called before shutdown: release handlers that are still waiting."""

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping()
        self.httpd.shutdown()
        self.httpd.server_close()


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive, no access log, and one way to send a body with its length."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("content-length", 0)))

    def send_body(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def boto3_client(service: str, url: str):
    """A real boto3 client aimed at a loopback fake: explicit dummy credentials, one attempt."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        service,
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=5, connect_timeout=2),
    )
