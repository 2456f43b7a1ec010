"""Timed single requests, one client per provider, all producing the same `RequestRecord`.

The client keeps itself out of the figures: one reused connection per backend, warmed by the
same untimed "Hi" generation for every provider; timestamps taken as chunks arrive; token
counts from the server's usage (a client-side count is only a marked fallback). A stream that
ends without a finish reason, with an abnormal one, or with no output at all is an error.
"""

from runner.timing.base import ChatRequest, RequestRecord, TimedClient, warm_up
from runner.timing.factory import timed_client_for

__all__ = ["ChatRequest", "RequestRecord", "TimedClient", "timed_client_for", "warm_up"]
