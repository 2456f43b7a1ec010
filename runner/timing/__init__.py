"""The measuring core: how a streamed chat request is sent, read, timed and judged, and how a load
level offers requests, in the standard library alone, so that the same files run in the runner
and on a server's own host in the in-region kit (inference_constructs/bench_kit: the CDK
construct copies this folder into the kit's asset beside its `__main__.py`).

- `faults`: a backend's faults, typed, and an HTTP answer in one line (`runner.core.errors`
  takes them as the runner's own).
- `chat`: what a timed request asks for (a chat request, a conversation, a body built
  elsewhere), what counts as a complete answer, the warm-up.
- `stream`: the event stream read as its bytes arrive (framing, accumulation, end checks),
  whatever HTTP library delivers them.
- `connections`: which requests went out on a new connection, and the one resend of a request
  on a kept-alive connection the server had closed.
- `http_client`: the standard library's client (http.client), the kit's transport; the
  runner's own is aiohttp's (runner/measure/openai_async.py), over the same `stream`.
- `load`: the load engine (one at a time, closed loop, open loop), for coroutine and blocking
  clients alike.
- `metrics`: a server's own `/metrics`, read while a level runs.

Imports only the standard library and, within the package, relatively (in the kit the package
is top-level): nothing else of the runner (import-linter holds both, see pyproject.toml). A record
here is the caller's own (the runner's `RequestRecord`, the kit's), filled by attribute. Python
3.10 and later, as the hosts' own Python may be (ruff checks this folder for 3.10).
"""
