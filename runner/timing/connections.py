"""What every OpenAI-compatible client (the runner's aiohttp one, the in-region kit's http.client
one) shares about connections: which requests went out on a new one, and when a request goes once
more.

A kept-alive connection the server closed since (llama.cpp closes after every streamed response
while it still advertises keep-alive) fails before any byte of a response: that request never
reached the server, so it is sent once more on a new connection, with a new stopwatch, and its
record says so. Only once, and only when a connection was reused at all.
"""

from __future__ import annotations

import threading
from typing import Any

ATTEMPTS = (1, 2)


class ConnectionLog:
    """Every connection used so far, held (not their ids) so a new one is never mistaken for an old
    one; under concurrent load the pool hands out any of them."""

    def __init__(self) -> None:
        self._seen: list[Any] = []
        self._lock = threading.Lock()

    def note(self, connection: Any, record: Any) -> None:
        """Mark `record` as sent on a new connection or a reused one (`None`: not knowable)."""
        if connection is None:
            return
        with self._lock:
            record.new_connection = not any(seen is connection for seen in self._seen)
            if record.new_connection:
                self._seen.append(connection)

    def note_known(self, new: bool | None, record: Any) -> None:
        """Mark `record` with what the HTTP library said of its connection (aiohttp's trace
        signals), for clients whose connection objects are gone once a short response is read."""
        record.new_connection = new
        if new:
            with self._lock:
                self._seen.append(object())

    def resend(self, attempt: int, record: Any, *, reused: bool | None = None) -> bool:
        """After a stale-connection failure on `attempt`: True (and the record marked) when the
        request goes once more, False when the failure stands. `reused`: whether the failed
        attempt went out on a kept-alive connection, where the library says (else: whether any
        connection was opened before)."""
        with self._lock:
            reused_any = bool(self._seen)
        if attempt == ATTEMPTS[-1] or not (reused if reused is not None else reused_any):
            return False
        record.stale_connection_retry = True
        return True
