"""The in-region bench kit: `runner.bench`'s single-request benchmark, run on a server's own
instance against its loopback port, so the difference from the row measured through the SSM tunnel
is the path.

`python -m runner.bench --in-region` sends it there with SSM Run Command (`AWS-RunShellScript`):
the commands fetch this folder's zip (an S3 asset of the server's stack, the only object of the
bootstrap bucket the instance role may read), run it with the host's own `python3` (a zip with a
`__main__.py` runs as a program) and copy its result to the stack's evidence bucket with the AWS
CLI every server already has (its boot script installs it), because Run Command's inline output is
cut at about 24 KB. The runner reads the result back into its evidence.

Why a stdlib-only script and not the runner's own client (`runner/measure/openai_sync.py`): that
client needs aiohttp and its dependencies, and imports `runner.core` (httpx) and the catalog;
the DLAMIs' Python is the distribution's, which refuses `pip install` into it (PEP 668) and ships
without `venv`/`ensurepip`, and carrying wheels in the asset would tie the kit to
whatever the deploying machine has installed. Installing anything on a server would also change
the host being measured. This file needs Python 3.10+ and nothing else (the DLAMIs have 3.12).
What it must keep is the measuring, and that is held to the runner's by the tests
(`tests/runner/test_in_region.py`): the same request body, the same warm-up, the same record
fields (`RequestRecord.to_json()`), and, against the same scripted server, the same figures and
the same one-line faults as the runner's client (a body dropped mid-stream: the same prefix, then
http.client's words for it instead of aiohttp's).

What it measures is exactly what `bench_backend` measures: one untimed warm-up on the connection
the timed requests reuse, then `repeats` streamed requests one at a time; or, given load levels
(`--concurrency`, `--rate`), each level as the runner's load engine runs it, with a kept-alive
connection per request in flight, each opened by an untimed warm-up. Every response is read to
its end (past `[DONE]`): time to first token (the first chunk with content), end-to-end time to
`[DONE]`, output tokens from the server's usage (a client count only when there is none, marked),
a stale kept-alive connection resent once; one at a time, after an unreachable or timed-out first
request the rest are skipped. Meanwhile it reads the host's accelerator with the host's own tool
(nvidia-smi's query loop, else neuron-monitor's JSON reports). It exits 0 whenever it wrote its result (failed requests are records
with their error), 2 on a bad configuration.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import gzip
import http.client
import json
import os
import platform
import queue
import random
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

KIT_VERSION = 3
# Finish reasons of a normal end (runner/measure/records.py NORMAL_FINISH_REASONS).
NORMAL_FINISH_REASONS = frozenset(
    {"stop", "length", "tool_calls", "function_call", "end_turn", "max_tokens", "stop_sequence", "tool_use"}
)
# What a request sent on a kept-alive connection the server already closed fails with.
STALE_CONNECTION_ERRORS = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class Fault(Exception):
    """A backend fault, with its one line as the runner words it (runner/core/errors.py)."""

    down = False  # the next request to the same backend would fail the same way


class Unreachable(Fault):
    down = True


class TimedOut(Fault):
    """Not down: a slow moment on a busy server, so the later runs are still sent (as the runner does)."""


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")  # noqa: UP017 (3.10)


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else ""


def new_record(backend: str, run: int) -> dict:
    """A record with every field of the runner's RequestRecord, in its order."""
    return {
        "backend": backend,
        "run": run,
        "ok": False,
        "error": None,
        "started_at": now_iso(),
        "ttft_s": None,
        "e2e_s": None,
        "output_tokens": None,
        "prompt_tokens": None,
        "token_source": None,
        "finish_reason": None,
        "text": "",
        "chunks": 0,
        "server_timings": None,
        "new_connection": None,
        "stale_connection_retry": False,
        "chunk_times": [],
        "chunk_token_counts": None,
        "level": None,
        "scheduled_s": None,
        "sent_s": None,
        "cold_start": None,
        "phases": None,
        "target_input_tokens": None,
        "target_output_tokens": None,
        "forced_length": None,
        "session": None,
        "turn": None,
        "slo": None,
    }


def derive(record: dict) -> dict:
    """The derived figures, by RequestRecord's own formulas."""
    ok, tokens, e2e, ttft = record["ok"], record["output_tokens"], record["e2e_s"], record["ttft_s"]
    record["tokens_per_s"] = tokens / e2e if ok and tokens and e2e else None
    decode = None
    if ok and tokens and tokens >= 2 and ttft is not None and e2e:
        span = e2e - ttft
        decode = (tokens - 1) / span if span > 0 else None
    record["decode_tokens_per_s"] = decode
    timings = record["server_timings"] or {}
    overhead = None
    if ok and e2e is not None and "prompt_ms" in timings and "predicted_ms" in timings:
        overhead = e2e - (timings["prompt_ms"] + timings["predicted_ms"]) / 1000
    record["client_overhead_s"] = overhead
    return record


def request_body(model_id: str, prompt: str, max_tokens: int, temperature: float, usage_per_chunk: bool) -> dict:
    """ChatRequest.openai_body: the streamed chat-completions body, asking for usage."""
    stream_options = {"include_usage": True}
    if usage_per_chunk:
        stream_options["continuous_usage_stats"] = True
    return {
        "model": model_id,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": temperature,
        "stream": True,
        "stream_options": stream_options,
    }


class Stream:
    """runner/measure/sse.py's ChatStreamAccumulator: lines in as they arrive, `finish` checks."""

    def __init__(self, record: dict) -> None:
        self.record = record
        self.parts: list = []
        self.done_at = None
        self.content_chunks = 0
        self.has_output = False
        self.usage = None

    def feed_line(self, line: str, at: float) -> None:
        line = line.strip()
        if self.done_at is not None or not line.startswith("data:"):
            return
        payload = line[len("data:") :].strip()
        if payload == "[DONE]":
            self.done_at = at
            return
        try:
            chunk = json.loads(payload)
        except ValueError:
            raise Fault(f"malformed stream: chunk {self.record['chunks'] + 1} is not JSON: {payload[:80]!r}") from None
        if not isinstance(chunk, dict):
            raise Fault(f"malformed stream: chunk {self.record['chunks'] + 1} is not an object")
        self.record["chunks"] += 1
        self.feed_chunk(chunk, at)

    def feed_chunk(self, chunk: dict, at: float) -> None:
        record = self.record
        if "error" in chunk:
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise Fault(f"server error in stream: {str(message)[:200]}")
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content = delta.get("content") or ""
            if content or delta.get("tool_calls"):
                if record["ttft_s"] is None:
                    record["ttft_s"] = at
                self.content_chunks += 1
                self.has_output = True
                self.parts.append(content)
                record["chunk_times"].append(at)
                self.note_running_count(chunk.get("usage"))
            if choice.get("finish_reason"):
                record["finish_reason"] = choice["finish_reason"]
        usage = chunk.get("usage")
        if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
            self.usage = usage  # checked once the stream is read to its end (finish), as the runner does
        if isinstance(chunk.get("timings"), dict):
            record["server_timings"] = chunk["timings"]

    def note_running_count(self, usage) -> None:
        record = self.record
        counts = record["chunk_token_counts"]
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            if counts is None and len(record["chunk_times"]) == 1:
                record["chunk_token_counts"] = counts = []
            if counts is not None:
                counts.append(usage["completion_tokens"])
        elif counts is not None:
            record["chunk_token_counts"] = None

    def finish(self, at: float) -> dict:
        record = self.record
        record["e2e_s"] = self.done_at if self.done_at is not None else at
        record["text"] = "".join(self.parts)
        if record["chunks"] == 0:
            raise Fault("empty stream: no chunks before the connection closed")
        if record["finish_reason"] is None:
            raise Fault(f"stream cut: ended after {record['chunks']} chunks without a finish reason")
        if self.usage is not None:
            usage = self.usage
            output = usage_count(usage, "completion_tokens")
            prompt = usage_count(usage, "prompt_tokens") if usage.get("prompt_tokens") is not None else None
            record["output_tokens"], record["prompt_tokens"] = output, prompt
            record["token_source"] = "server"
        if record["output_tokens"] is None:
            record["output_tokens"] = self.content_chunks
            record["token_source"] = "client-chunks"
        if record["finish_reason"] not in NORMAL_FINISH_REASONS:
            raise Fault(f"finish reason {record['finish_reason']!r}: not a normal end of the answer")
        if not self.has_output:
            raise Fault(f"empty completion: no text and no tool call (finish reason {record['finish_reason']!r})")
        if record["token_source"] == "server" and record["output_tokens"] == 0:
            raise Fault("impossible usage from the server: 0 output tokens for an answer with output")
        record["ok"] = True
        return record


# How servers word a prompt their context cannot hold (the runner's runner/core/errors.py).
CONTEXT_WORDS = ("context length", "context window", "context size", "too long")


def usage_count(usage: dict, key: str) -> int:
    """A usage count as the runner takes it: a whole number of at least 0, else an impossible usage."""
    value = usage.get(key)
    whole = isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer()
    if not whole or value < 0:
        raise Fault(f"impossible usage from the server: {key} {value!r} (a token count is a whole number, at least 0)")
    return int(value)


def status_line(status: int, body: bytes, reason: str, content_type: str = "") -> Fault:
    line = http_line(status, body.decode("utf-8", "replace"), reason, content_type)
    lowered = line.lower()
    if status == 400 and any(words in lowered for words in CONTEXT_WORDS):
        return Fault(f"context overflow: {line}")
    return Fault(line)


def http_line(status: int, body: str, reason: str = "", content_type: str = "") -> str:
    """An HTTP answer in one line, as the runner words it: a JSON error body's message, else the
    start of a text body; a page (HTML) as its kind and size, not its markup."""
    kind = content_type.split(";")[0].strip().lower()
    text = body.strip()
    if kind in ("text/html", "application/xhtml+xml") or text[:1] == "<":
        return (
            f"HTTP {status}{' ' + reason if reason else ''} ({kind or 'markup'} body, {size_text(len(body.encode()))})"
        )
    message = json_message(text)
    return f"HTTP {status}: {' '.join((message or text).split())[:200] or reason}"


def json_message(text: str):
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    for value in (
        (error.get("message") if isinstance(error, dict) else error),
        data.get("message"),
        data.get("detail"),
    ):
        if isinstance(value, str) and value.strip():
            return value
    return None


def size_text(size: int) -> str:
    if size < 1000:
        return f"{size} B"
    return f"{size / 1000:.1f} kB" if size < 1_000_000 else f"{size / 1_000_000:.1f} MB"


def not_a_stream(status: int, head: bytes, size: int, content_type: str) -> Fault:
    """What came back for a streamed request when it was no event stream (the runner's BodyHead)."""
    kind = content_type.split(";")[0].strip() or "untyped"
    body = http_line(status, head.decode("utf-8", "replace"), "", content_type)
    said = body.partition(": ")[2] if ": " in body else ""
    return Fault(
        f"not an event stream: HTTP {status}, {kind} ({size_text(size)})" + (f": {said[:120]!r}" if said else "")
    )


class Client:
    """One keep-alive connection, reused by the warm-up and every timed request."""

    def __init__(self, base_url: str, model_id: str, timeout_s: float) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"base_url must be http://HOST:PORT/...: {base_url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.path = parts.path.rstrip("/") + "/chat/completions"
        self.model_id = model_id
        self.timeout_s = timeout_s
        self.connection = None
        self.opened = 0

    def _connection(self):
        """(connection, new): the kept-alive one while it is open, else a new one."""
        if self.connection is not None and self.connection.sock is not None:
            return self.connection, False
        if self.connection is not None:
            self.connection.close()
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=5.0)
        try:
            self.connection.connect()
        except TimeoutError:
            raise TimedOut("timed out (ConnectTimeout)") from None
        except OSError as error:
            raise Unreachable(f"unreachable: {first_line(error) or 'connection refused'}") from None
        self.connection.sock.settimeout(self.timeout_s)
        self.connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.opened += 1
        return self.connection, True

    def _send(self, payload: bytes, record: dict):
        """POST and wait for the response head; a stale kept-alive connection is resent once."""
        for attempt in (1, 2):
            connection, new = self._connection()
            start = time.perf_counter()
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
                if attempt == 1 and not new:
                    record["stale_connection_retry"] = True
                    continue
                raise Unreachable(f"unreachable: {first_line(error) or 'connection closed'}") from None
            except TimeoutError:
                connection.close()
                raise TimedOut("timed out (ReadTimeout)") from None
            record["new_connection"] = new
            return start, response
        raise AssertionError("unreachable")

    def chat(self, body: dict, record: dict) -> dict:
        start, response = self._send(json.dumps(body).encode(), record)
        try:
            content_type = response.getheader("content-type", "")
            if response.status >= 400:
                raise status_line(response.status, response.read(), response.reason, content_type)
            stream = Stream(record)
            rest = b""
            head, size = b"", 0
            # read1: what has arrived, as soon as it has (a chunk of the chunked body at most); a
            # body cut before its last chunk raises IncompleteRead (readline would hide it).
            while True:
                part = response.read1(65536)
                if not part:
                    break
                at = time.perf_counter() - start
                size += len(part)
                head += part[: max(0, 2000 - len(head))]
                *lines, rest = (rest + part).split(b"\n")
                for line in lines:
                    stream.feed_line(line.decode("utf-8", "replace"), at)
                if at > self.timeout_s:
                    raise TimedOut(f"timed out: stream still open after {self.timeout_s:.0f} s")
            if response.length == 0:
                response.close()  # a body of known length read to its end (read1 leaves it open): reusable
            if rest:
                stream.feed_line(rest.decode("utf-8", "replace"), time.perf_counter() - start)
            if record["chunks"] == 0 and size and "event-stream" not in content_type:
                raise not_a_stream(response.status, head, size, content_type)
            return stream.finish(time.perf_counter() - start)
        except TimeoutError:
            self.connection.close()
            raise TimedOut("timed out (ReadTimeout)") from None
        except (http.client.HTTPException, ConnectionError) as error:
            self.connection.close()
            raise Fault(f"connection dropped mid-response: {first_line(error) or type(error).__name__}") from None
        finally:
            if not response.isclosed():
                # A response given up on (a fault mid-body) closes its connection, as the runner's
                # client closes it: never reused, and the server stops generating for it.
                self.connection.close()

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()


def one_request(client: Client, config: dict, run: int, request: dict, record: dict | None = None) -> dict:
    record = record if record is not None else new_record(config["backend"], run)
    body = request_body(
        config["model_id"],
        request["prompt"],
        request["max_tokens"],
        request.get("temperature", 0.0),
        request.get("usage_per_chunk", False),
    )
    return send_body(client, body, record)


def send_body(client: Client, body: dict, record: dict) -> dict:
    """One body sent and read to its end; a fault is the record's error, never an exception."""
    try:
        client.chat(body, record)
    except Fault as fault:
        record["ok"] = False
        record["error"] = str(fault)
        record["_down"] = fault.down
    except Exception as error:  # a bug here is a record too, never a lost run
        record["ok"] = False
        record["error"] = f"{type(error).__name__}: {first_line(error)}"
    return record


def run_unit(client: Client, config: dict, unit: dict, index: int, level: dict, scheduled, started: float) -> list:
    """One request of a workload's level as the runner built it (runner/measure/load.py
    run_level_async): its body as given, stamped with what the workload asked of it; a
    conversation's turns one after another, each sent after the history so far (every earlier
    prompt and answer), a record each, ending at the first turn that fails."""
    turns = unit.get("conversation", [unit])
    history: list = []
    records = []
    for turn, request in enumerate(turns):
        record = new_record(config["backend"], index + 1)
        record["level"], record["scheduled_s"] = level, scheduled if turn == 0 else None
        record["sent_s"] = time.perf_counter() - started
        record.update(request.get("stamp") or {})
        if "conversation" in unit:
            record["session"], record["turn"] = index, turn + 1
        body = dict(request["body"], messages=history + request["body"]["messages"])
        send_body(client, body, record)
        record.pop("_down", None)
        records.append(derive(record))
        if not record["ok"]:
            break
        history = [*body["messages"], {"role": "assistant", "content": record["text"]}]
    return records


def in_flight(level: dict) -> int:
    """Requests a level keeps in flight at once (runner/measure/load.py LoadLevel.in_flight)."""
    if level["mode"] == "concurrency":
        return int(level["value"])
    return int(level.get("max_concurrency") or level["requests"])


def poisson_offsets(rate: float, count: int, seed: int) -> list:
    """Send times of a Poisson process, the same draws as the runner's (runner/measure/load.py)."""
    rng = random.Random(seed)
    offsets, at = [], 0.0
    for _ in range(count):
        at += rng.expovariate(rate)
        offsets.append(at)
    return offsets


# The most connections a level opens with an untimed warm-up (runner/measure/workload_run.py
# openai_level: the runner warms at most 64; the rest open on their first timed request).
MOST_WARM_UPS = 64


def run_level(config: dict, level: dict, warm_ups: list, opened: list, units: list | None = None) -> tuple:
    """One load level as the runner's engine runs it (runner/measure/load.py run_level_async):
    closed loop, as many workers as requests in flight, each taking the next request; open loop,
    sends at the seeded Poisson offsets, at most `max_concurrency` in flight (a late send is
    measured, not hidden). Each request in flight has a kept-alive connection of its own, opened
    by an untimed warm-up before the level's first timed request, as the runner opens them. With
    `units` (a workload's requests as the runner built them) request i is unit i modulo their
    number; without, every request is the config's prompt. Returns (records, the server's
    metrics meanwhile or None, and when its timed requests began and ended)."""
    timeout_s = float(config.get("timeout_s", 60.0))
    warm_config = config.get("warm_up") or {"prompt": "Hi", "max_tokens": 4}
    width = in_flight(level)
    sampler = ServerMetrics(config["metrics"]).start() if config.get("metrics") else None
    clients = [Client(config["base_url"], config["model_id"], timeout_s) for _ in range(width)]

    def warm_up(client: Client) -> None:
        warm = one_request(client, config, 0, warm_config)
        warm.pop("_down", None)
        warm["level"] = level
        warm_ups.append(derive(warm))

    # All at once, as the runner's client warms its connections (asyncio.gather).
    warming = [threading.Thread(target=warm_up, args=(c,), daemon=True) for c in clients[:MOST_WARM_UPS]]
    for thread in warming:
        thread.start()
    for thread in warming:
        thread.join()
    idle: queue.Queue = queue.Queue()
    for client in clients:
        idle.put(client)
    count = int(level["requests"])
    records: list = [[] for _ in range(count)]
    started = time.perf_counter()

    def one(index: int, scheduled) -> None:
        client = idle.get()
        try:
            if units is not None:
                records[index] = run_unit(client, config, units[index % len(units)], index, level, scheduled, started)
                return
            record = new_record(config["backend"], index + 1)
            record["level"], record["scheduled_s"] = level, scheduled
            record["sent_s"] = time.perf_counter() - started
            one_request(client, config, index + 1, config, record)
            record.pop("_down", None)
            records[index] = [derive(record)]
        finally:
            idle.put(client)

    threads = []
    if level["mode"] == "concurrency":
        pending = iter(range(count))
        lock = threading.Lock()

        def worker() -> None:
            while True:
                with lock:
                    index = next(pending, None)
                if index is None:
                    return
                one(index, None)

        threads = [threading.Thread(target=worker, daemon=True) for _ in range(width)]
        for thread in threads:
            thread.start()
    else:
        slots = threading.Semaphore(width)

        def capped(index: int, offset: float) -> None:
            with slots:
                one(index, offset)

        for index, offset in enumerate(poisson_offsets(float(level["value"]), count, int(config.get("seed", 0)))):
            delay = started + offset - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            thread = threading.Thread(target=capped, args=(index, offset), daemon=True)
            thread.start()
            threads.append(thread)
    for thread in threads:
        thread.join()
    for client in clients:
        client.close()
    ended = time.perf_counter()
    opened.append(sum(client.opened for client in clients))
    metrics = sampler.stop() if sampler else None
    return [record for unit in records for record in unit], metrics, (started, ended)


# The server's loopback port, never through a proxy the host's environment names (as Client).
LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServerMetrics:
    """The server's own Prometheus `/metrics` on the host's loopback while a level runs: every half
    second, and once before its first request and once after its last (runner/measure/
    server_metrics.py MetricsSampler). Only the lines of the figures the runner reads are kept
    (`names`), as text: the runner parses them with its own parser."""

    def __init__(self, settings: dict) -> None:
        self.url, self.names = settings["url"], tuple(settings["names"])
        self.every_s = float(settings.get("every_s", 0.5))
        self.samples: list = []
        self.problem = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.started = time.perf_counter()

    def start(self) -> ServerMetrics:
        self.scrape()
        self.thread.start()
        return self

    def loop(self) -> None:
        while not self.done.wait(self.every_s):
            self.scrape()
        self.scrape()

    def scrape(self) -> None:
        try:
            with LOOPBACK.open(self.url, timeout=2.0) as response:
                text = response.read().decode("utf-8", "replace")
        except Exception as error:  # a metrics hiccup never disturbs the level
            self.problem = self.problem or f"metrics at {self.url}: {type(error).__name__}: {first_line(error)}"
            return
        kept = [line for line in text.splitlines() if line.startswith(self.names)]
        self.samples.append([round(time.perf_counter() - self.started, 3), "\n".join(kept)])

    def stop(self) -> dict:
        self.done.set()
        self.thread.join(timeout=5)
        return {"url": self.url, "samples": self.samples, "problem": self.problem}


def bench(config: dict, requests: list | None = None) -> dict:
    """The warm-up, then the timed requests (one at a time, or each load level in turn); the result
    the runner reads back. `requests`: per level, the workload's requests as the runner built them."""
    usage0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    load_before = os.getloadavg()
    sampler = AcceleratorSampler().start()
    try:
        result = measure(config, usage0, wall0, load_before, requests, sampler.started)
    finally:
        accelerator = sampler.stop()
    result["accelerator"] = accelerator
    return result


def measure(config: dict, usage0, wall0, load_before, requests=None, clock: float = 0.0) -> dict:
    if config.get("levels"):
        warm_ups: list = []
        opened: list = []
        records: list = []
        # Per level: when its timed requests ran on the accelerator sampler's clock (s, after its
        # warm-ups), and the server's metrics.
        spans, metrics = [], []
        for index, level in enumerate(config["levels"]):
            level_records, level_metrics, (began, ended) = run_level(
                config, level, warm_ups, opened, requests[index] if requests is not None else None
            )
            records += level_records
            spans.append([round(began - clock, 3), round(ended - clock, 3)])
            metrics.append(level_metrics)
        result = result_of(
            config, load_before, usage0, wall0, sum(opened), warm_ups[0] if warm_ups else None, records, warm_ups
        )
        result["level_spans"] = spans
        if config.get("metrics"):
            result["server_metrics"] = metrics
        return result
    client = Client(config["base_url"], config["model_id"], float(config.get("timeout_s", 60.0)))
    # LoadLevel("concurrency", 1, repeats).to_json(), as the runner passes it.
    level = config.get("level") or {
        "mode": "concurrency",
        "value": 1,
        "requests": config["repeats"],
        "max_concurrency": None,
        "input_tokens": None,
        "label": "1 at a time",
    }
    # The runner's WARM_UP (runner/measure/records.py), as it passes it.
    warm_config = config.get("warm_up") or {"prompt": "Hi", "max_tokens": 4}
    records = []
    try:
        warm = one_request(client, config, 0, warm_config)
        skip = None
        for run in range(1, int(config["repeats"]) + 1):
            if skip:
                record = new_record(config["backend"], run)
                record["error"] = f"skipped after run 1: {skip}"
            else:
                record = one_request(client, config, run, config)
                if run == 1 and record.pop("_down", False):
                    skip = record["error"]
            record["level"] = level
            records.append(derive(record))
    finally:
        client.close()
    warm.pop("_down", None)
    for record in records:
        record.pop("_down", None)
    return result_of(config, load_before, usage0, wall0, client.opened, derive(warm), records, None)


def result_of(config, load_before, usage0, wall0, opened, warm, records, warm_ups) -> dict:
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    result = {
        "kit": KIT_VERSION,
        "config": config,
        "host": host_facts(load_before),
        "client": {
            "cpu_s": round((usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime), 4),
            "wall_s": round(time.perf_counter() - wall0, 4),
            "connections_opened": opened,
        },
        "warm_up": warm,
        "records": records,
    }
    if warm_ups is not None:
        result["warm_ups"] = warm_ups
    return result


# nvidia-smi's query loop (its man page: `--query-gpu`, `--format=csv,noheader,nounits`,
# `--loop-ms`; `--help-query-gpu`: utilization.gpu is the percent of the last sample period a
# kernel ran, memory.used in MiB), one line per GPU every 500 ms.
NVIDIA_QUERY = [
    "nvidia-smi",
    "--query-gpu=index,utilization.gpu,memory.used",
    "--format=csv,noheader,nounits",
    "--loop-ms=500",
]
# neuron-monitor's settings (the Neuron Monitor User Guide): every runtime on the host, its
# NeuronCores' utilization and its device memory, a report a second on standard output.
NEURON_MONITOR_CONFIG = {
    "period": "1s",
    "neuron_runtimes": [{"tag_filter": ".*", "metrics": [{"type": "neuroncore_counters"}, {"type": "memory_used"}]}],
    "system_metrics": [],
}


def nvidia_sample(line: str):
    """One GPU's reading of nvidia-smi's CSV loop: (utilization %, memory used MiB), or None."""
    parts = [part.strip() for part in line.split(",")]
    try:
        return float(parts[1]), float(parts[2])
    except (IndexError, ValueError):
        return None


def neuron_sample(line: str):
    """One neuron-monitor report: (mean utilization % of the NeuronCores in use, device memory MiB)."""
    try:
        report = json.loads(line)
    except ValueError:
        return None
    cores, device_bytes = [], 0
    for runtime in report.get("neuron_runtime_data") or []:
        counters = (runtime.get("report") or {}).get("neuroncore_counters") or {}
        for core in (counters.get("neuroncores_in_use") or {}).values():
            if isinstance(core.get("neuroncore_utilization"), (int, float)):
                cores.append(float(core["neuroncore_utilization"]))
        used = ((runtime.get("report") or {}).get("memory_used") or {}).get("neuron_runtime_used_bytes") or {}
        device_bytes += used.get("neuron_device") or 0
    if not cores:
        return None
    return sum(cores) / len(cores), device_bytes / 2**20


def answers(command: list) -> bool:
    """The command runs and exits 0 (nvidia-smi on a host without a driver exits 9)."""
    try:
        return subprocess.run(command, capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class AcceleratorSampler:
    """The accelerator's own figures while the kit measures (the host's nvidia-smi, else its
    neuron-monitor), so a level can be told GPU-bound or not; a host with neither says so."""

    def __init__(self) -> None:
        self.tool = None
        self.problem = None
        self.samples: list = []
        self.process = None
        self.thread = None
        self.settings = None
        self.started = time.perf_counter()

    def start(self) -> AcceleratorSampler:
        if shutil.which("nvidia-smi") and answers(["nvidia-smi", "-L"]):
            self.tool, command, parse = "nvidia-smi", NVIDIA_QUERY, nvidia_sample
        elif shutil.which("neuron-monitor"):
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as settings:
                json.dump(NEURON_MONITOR_CONFIG, settings)
            self.settings = settings.name
            self.tool, command, parse = "neuron-monitor", ["neuron-monitor", "-c", settings.name], neuron_sample
        else:
            self.problem = "no nvidia-smi or neuron-monitor on the host"
            return self
        if shutil.which("stdbuf"):
            # Each reading as the tool prints it, not held in its pipe's buffer: it is timed on arrival.
            command = ["stdbuf", "-oL", *command]
        try:
            self.process = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True
            )
        except OSError as error:
            self.problem = f"{self.tool}: {first_line(error)}"
            return self
        self.thread = threading.Thread(target=self.read, args=(parse,), daemon=True)
        self.thread.start()
        return self

    def read(self, parse) -> None:
        for line in self.process.stdout:
            sample = parse(line)
            if sample is not None:
                self.samples.append((round(time.perf_counter() - self.started, 3), *sample))

    def stop(self) -> dict:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.thread.join(timeout=5)
            if not self.samples:
                self.problem = f"{self.tool} gave no reading (exit {self.process.returncode})"
        if self.settings:
            os.unlink(self.settings)
        busy = [sample[1] for sample in self.samples]
        return {
            "tool": self.tool,
            "problem": self.problem,
            "samples": [list(sample) for sample in self.samples],
            "utilization_pct_mean": round(sum(busy) / len(busy), 2) if busy else None,
            "utilization_pct_max": max(busy) if busy else None,
            "memory_used_mib_max": max(sample[2] for sample in self.samples) if self.samples else None,
        }


def host_facts(load_before) -> dict:
    """What the client shared the server's host with: its CPUs and their load."""
    model = None
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith(("model name", "cpu model")):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "vcpus": os.cpu_count(),
        "cpu_model": model,
        "machine": platform.machine(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


REQUIRED = ("backend", "base_url", "model_id", "repeats")
# Without a workload's requests, every timed request is the config's own prompt.
REQUIRED_WITHOUT_REQUESTS = ("prompt", "max_tokens")


def bad_config(line: str):
    print(f"bench kit: {line}", file=sys.stderr)
    raise SystemExit(2)


def read_config(encoded: str) -> dict:
    try:
        config = json.loads(base64.b64decode(encoded, validate=True).decode())
    except ValueError as error:
        bad_config(f"--config is not base64 JSON: {error}")
    if not isinstance(config, dict):
        bad_config("--config must be a JSON object")
    missing = [key for key in REQUIRED if key not in config]
    if missing:
        bad_config(f"--config lacks {', '.join(missing)}")
    if not isinstance(config["repeats"], int) or config["repeats"] < 1:
        bad_config("repeats must be a whole number of at least 1")
    if config.get("metrics") is not None and not (
        isinstance(config["metrics"], dict)
        and str(config["metrics"].get("url", "")).startswith("http://")
        and isinstance(config["metrics"].get("names"), list)
    ):
        bad_config("metrics must be {url: http://..., names: [...]}")
    for level in config.get("levels") or []:
        if not (
            isinstance(level, dict)
            and level.get("mode") in ("concurrency", "rate")
            and isinstance(level.get("value"), (int, float))
            and level["value"] > 0
            and isinstance(level.get("requests"), int)
            and level["requests"] >= 1
        ):
            bad_config(
                f"a level must be a LoadLevel's JSON (mode concurrency or rate, value and requests above 0): {level!r}"
            )
    return config


def read_requests(path: str, config: dict) -> list:
    """A workload's requests, as the runner built them: per level of the config, a list of units,
    each a request (`body`: the chat-completions body; `stamp`: what the workload asked of it) or
    a `conversation` of such requests, each turn's body holding its own user message only."""
    try:
        with open(path, "rb") as file:
            raw = file.read()
        data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    except (OSError, ValueError, EOFError) as error:
        bad_config(f"--requests {path}: not a JSON file ({first_line(error)})")
    levels = data.get("levels") if isinstance(data, dict) else None
    if not isinstance(levels, list) or len(levels) != len(config.get("levels") or []):
        bad_config(f"--requests {path}: needs one list of requests per level of the config")

    def request_ok(request) -> bool:
        body = request.get("body") if isinstance(request, dict) else None
        return isinstance(body, dict) and isinstance(body.get("messages"), list) and body.get("stream") is True

    for units in levels:
        if not isinstance(units, list) or not units:
            bad_config(f"--requests {path}: every level needs at least one request")
        for unit in units:
            turns = unit.get("conversation") if isinstance(unit, dict) and "conversation" in unit else [unit]
            if not isinstance(turns, list) or not turns or not all(request_ok(t) for t in turns):
                bad_config(
                    f"--requests {path}: a request is {{body: a streamed chat body with messages, stamp}} "
                    f"or {{conversation: [such requests]}}: {json.dumps(unit)[:120]}"
                )
    return levels


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench-kit", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="the benchmark's settings, base64-encoded JSON")
    parser.add_argument("--requests", help="a workload's requests per level (JSON), as the runner built them")
    parser.add_argument("--out", required=True, help="where to write the result (JSON)")
    args = parser.parse_args(argv)
    config = read_config(args.config)
    requests = read_requests(args.requests, config) if args.requests else None
    if requests is None:
        missing = [key for key in REQUIRED_WITHOUT_REQUESTS if key not in config]
        if missing:
            bad_config(f"--config lacks {', '.join(missing)} (or give --requests)")
    result = bench(config, requests)
    with open(args.out, "w") as out:
        json.dump(result, out, indent=1)
    ok = sum(1 for r in result["records"] if r["ok"])
    first_error = next((r["error"] for r in result["records"] if r["error"]), None)
    print(
        f"bench kit: {config['backend']}: {ok}/{len(result['records'])} ok on {result['host']['vcpus']} vCPUs"
        + (f"; first error: {first_error}" if first_error else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
