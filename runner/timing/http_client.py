"""The standard library's client for OpenAI-compatible servers: one kept-alive http.client
connection, reused by the warm-up and every timed request on it. The in-region kit sends with it
from a server's own host, where only the standard library is there (the runner's own client,
runner/measure/openai_async.py, is aiohttp's).

Per request it keeps the runner's client's rules: the response is read to its end (past
`[DONE]`), each part timed as it arrives (`read1`: what has come, as soon as it has; a body cut
before its last chunk raises IncompleteRead, which `readline` would hide); a request on a
kept-alive connection the server had closed is sent once more and marked; a response given up on
closes its connection (never reused, and the server stops generating for it). Only the words of
a transport fault are http.client's own, after the runner's prefix.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from typing import Any

from .chat import BodyRequest, ChatRequest, Stopwatch
from .connections import ATTEMPTS, ConnectionLog
from .faults import StreamFault, TimedOut, Unreachable, first_line, status_fault
from .stream import StreamedBody

# What a request sent on a kept-alive connection the server already closed fails with.
STALE_CONNECTION_ERRORS = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
CONNECT_TIMEOUT_S = 5.0


class HttpStreamClient:
    """One keep-alive connection to `base_url` (http://HOST:PORT/...)."""

    def __init__(self, base_url: str, model_id: str, timeout_s: float = 60.0) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"base_url must be http://HOST:PORT/...: {base_url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.path = parts.path.rstrip("/") + "/chat/completions"
        self.model_id = model_id
        self.timeout_s = timeout_s
        self.connection: http.client.HTTPConnection | None = None
        self.log = ConnectionLog()
        self.opened = 0

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """(connection, new): the kept-alive one while it is open, else a new one."""
        if self.connection is not None and self.connection.sock is not None:
            return self.connection, False
        if self.connection is not None:
            self.connection.close()
        self.connection = connection = http.client.HTTPConnection(self.host, self.port, timeout=CONNECT_TIMEOUT_S)
        try:
            connection.connect()
        except TimeoutError:
            raise TimedOut("timed out (ConnectTimeout)") from None
        except OSError as error:
            raise Unreachable(f"unreachable: {first_line(error) or 'connection refused'}") from None
        connection.sock.settimeout(self.timeout_s)
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.opened += 1
        return connection, True

    def _send(self, payload: bytes, record: Any) -> tuple[Stopwatch, http.client.HTTPResponse]:
        """POST and wait for the response head; a stale kept-alive connection is resent once."""
        for attempt in ATTEMPTS:
            connection, new = self._connection()
            watch = Stopwatch()
            try:
                connection.request(
                    "POST",
                    self.path,
                    body=payload,
                    headers={"Content-Type": "application/json", "Authorization": "Bearer unused"},
                )
                response = connection.getresponse()
            except STALE_CONNECTION_ERRORS as error:
                connection.close()
                if self.log.resend(attempt, record, reused=not new):
                    continue
                raise Unreachable(f"unreachable: {first_line(error) or 'connection closed'}") from None
            except TimeoutError:
                connection.close()
                raise TimedOut("timed out (ReadTimeout)") from None
            self.log.note_known(new, record)
            return watch, response
        raise AssertionError("unreachable")

    def chat(self, request: ChatRequest | BodyRequest, record: Any) -> Any:
        body = StreamedBody(record, self.timeout_s)
        watch, response = self._send(json.dumps(request.openai_body(self.model_id)).encode(), record)
        assert self.connection is not None
        try:
            content_type = response.getheader("content-type", "")
            if response.status >= 400:
                text = response.read().decode("utf-8", "replace")
                raise status_fault(response.status, text, response.reason, content_type)
            while part := response.read1(65536):
                body.feed(part, watch.now())
            if response.length == 0:
                response.close()  # a body of known length read to its end (read1 leaves it open): reusable
            return body.end(watch.now(), response.status, content_type)
        except TimeoutError:
            self.connection.close()
            raise TimedOut("timed out (ReadTimeout)") from None
        except (http.client.HTTPException, ConnectionError) as error:
            self.connection.close()
            raise StreamFault(f"connection dropped mid-response: {first_line(error) or type(error).__name__}") from None
        finally:
            if not response.isclosed():
                self.connection.close()

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
