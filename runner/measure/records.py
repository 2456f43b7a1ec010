"""What a timed request asks for (the measuring core's `ChatRequest` and `Conversation`,
runner/timing/chat.py, under the names the runner's modules import), the interface every
provider's client implements, and the runner's warm-up (what it records is
`runner.core.records.RequestRecord`)."""

from __future__ import annotations

from typing import Protocol

from runner.core.errors import describe
from runner.core.records import RequestRecord
from runner.timing import chat
from runner.timing.chat import (  # noqa: F401 (the runner's names for the core's)
    NORMAL_FINISH_REASONS,
    WARM_UP,
    ChatRequest,
    Conversation,
    Stopwatch,
    check_completion,
    check_context,
    check_finish_reason,
    usage_counts,
)


class TimedClient(Protocol):
    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        """Send one streamed request and fill `record`; raises on faults."""

    def close(self) -> None: ...


def warm_up(client: TimedClient, backend: str) -> RequestRecord:
    """One untimed generation before the timed ones, the same for every provider: it opens the
    connection (and TLS, and an SSM tunnel stream) and wakes the server. Never raises."""
    return chat.warm_up(client.chat, RequestRecord(backend=backend, run=0), describe)
