"""Timed single requests, one client per provider, all producing the same `RequestRecord`.

The client keeps itself out of the figures: one warmed, reused connection per backend;
timestamps taken as chunks arrive; token counts from the server's usage (a client-side
count is only a marked fallback); a stream that ends without a finish reason is an error.
"""

from runner.timing.base import ChatRequest, RequestRecord, TimedClient
from runner.timing.factory import timed_client_for

__all__ = ["ChatRequest", "RequestRecord", "TimedClient", "timed_client_for"]
