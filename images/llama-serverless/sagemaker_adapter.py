"""SageMaker's container contract in front of llama.cpp's server, standard library only.

SageMaker starts the container as `docker run IMAGE serve` and talks to port 8080: GET /ping
(200 only when the model can answer) and POST /invocations (SageMaker developer guide, "Use your
own inference code with hosting services"). llama-server speaks OpenAI's chat API instead, so this
adapter maps GET /ping to llama-server's GET /health (200 {"status": "ok"} once loaded, 503 while
loading) and POST /invocations to POST /v1/chat/completions, passing the body through unchanged
and the answer back as it arrives: SSE when the request asks `"stream": true`, JSON otherwise.

`serve` also starts llama-server on 127.0.0.1:8081 as a child and exits non-zero when it dies, so
SageMaker replaces the container instead of routing requests to an adapter with nothing behind
it. `proxy` runs the adapter alone (the tests run it in front of another server).
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

CHAT_PATH = "/v1/chat/completions"
HEALTH_PATH = "/health"
# SageMaker expects /ping to answer fast; an upstream that takes longer counts as not ready.
PING_TIMEOUT_S = 2.0
# Longer than any invocation SageMaker allows (60 s on serverless endpoints: developer guide,
# "Invoke a serverless endpoint"), so SageMaker's own limit is the one that applies.
INVOKE_TIMEOUT_S = 300.0
READ_SIZE = 64 * 1024
# In the image (Dockerfile): llama.cpp's server binary where its CPU image puts it, Qwen's file.
DEFAULT_LLAMA_SERVER = "/app/llama-server"
DEFAULT_MODEL = "/models/qwen2.5-1.5b-instruct-q8_0.gguf"
DEFAULT_ALIAS = "Qwen/Qwen2.5-1.5B-Instruct"


def log(message: str) -> None:
    """One line on stderr (CloudWatch on SageMaker), flushed at once."""
    print(f"sagemaker-adapter: {message}", file=sys.stderr, flush=True)


def container_cpus() -> int:
    """CPUs this container may use: the affinity mask, capped by the cgroup v2 quota if any."""
    affinity = getattr(os, "sched_getaffinity", None)  # Linux; elsewhere every CPU
    cpus = len(affinity(0)) if affinity else os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass
    return max(1, cpus)


def json_error(status: int, message: str, kind: str) -> bytes:
    """An error body in the shape llama-server and OpenAI use."""
    return json.dumps({"error": {"code": status, "message": message, "type": kind}}).encode()


def upstream_error(status: int, raw: bytes) -> tuple[bytes, str]:
    """The upstream's JSON error as it is, or its text wrapped as one; and its message, for the log."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        return raw, str(parsed["error"].get("message", ""))
    message = raw.decode("utf-8", errors="replace").strip()[:500] or HTTPStatus(status).phrase
    return json_error(status, message, "upstream_error"), message


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked replies for streams
    server: AdapterServer

    def do_GET(self) -> None:
        if self.path != "/ping":
            self.reply(404, json_error(404, f"no route {self.path}", "not_found"))
            return
        ready, reason = self.server.upstream_ready()
        if ready:
            self.reply(200, b'{"status":"ok"}')
        else:
            self.reply(503, json_error(503, reason, "unavailable_error"))

    def do_POST(self) -> None:
        if self.path != "/invocations":
            self.reply(404, json_error(404, f"no route {self.path}", "not_found"))
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        started = time.monotonic()
        connection = self.server.connect(INVOKE_TIMEOUT_S)
        try:
            try:
                headers = {"Content-Type": self.headers.get("Content-Type") or "application/json"}
                connection.request("POST", CHAT_PATH, body=body, headers=headers)
                upstream = connection.getresponse()
            except TimeoutError:
                message = f"llama-server sent no answer in {INVOKE_TIMEOUT_S:.0f} s"
                log(f"/invocations: 504: {message}")
                self.reply(504, json_error(504, message, "upstream_timeout"))
                return
            except OSError as error:
                message = f"llama-server unreachable at {self.server.upstream}: {error}"
                log(f"/invocations: 502: {message}")
                self.reply(502, json_error(502, message, "upstream_unreachable"))
                return
            if upstream.status >= 400:
                payload, message = upstream_error(upstream.status, upstream.read())
                log(f"/invocations: llama-server answered {upstream.status}: {message[:300]}")
                self.reply(upstream.status, payload)
                return
            self.relay(upstream)
            log(f"/invocations: {upstream.status} in {time.monotonic() - started:.2f} s")
        except OSError as error:  # the caller went away, or llama-server stalled or died mid-answer
            log(f"/invocations: answer cut short: {error!r}")
            self.close_connection = True
        finally:
            connection.close()  # llama-server stops generating for a request whose connection is gone

    def relay(self, upstream: http.client.HTTPResponse) -> None:
        """Each piece as it arrives: with the upstream's length when it sent one, chunked otherwise."""
        self.send_response(upstream.status)
        self.send_header("Content-Type", upstream.getheader("Content-Type", "application/json"))
        length = upstream.getheader("Content-Length")
        if length is not None:
            self.send_header("Content-Length", length)
        else:
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("X-Accel-Buffering", "no")
        self.end_headers()
        while data := upstream.read1(READ_SIZE):
            self.wfile.write(data if length is not None else b"%X\r\n%s\r\n" % (len(data), data))
        if length is None:
            self.wfile.write(b"0\r\n\r\n")

    def reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: SageMaker pings every few seconds; the handlers log what matters."""


class AdapterServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], upstream: str) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise ValueError(f"upstream must be http://HOST:PORT, not {upstream!r}")
        self.upstream = upstream
        self.upstream_host, self.upstream_port = parts.hostname, parts.port
        super().__init__(address, Handler)

    def connect(self, timeout_s: float) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=timeout_s)

    def upstream_ready(self) -> tuple[bool, str]:
        """Whether llama-server's /health says ok now, and why not."""
        connection = self.connect(PING_TIMEOUT_S)
        try:
            connection.request("GET", HEALTH_PATH)
            response = connection.getresponse()
            raw = response.read()
        except OSError as error:
            return False, f"llama-server unreachable at {self.upstream}: {error}"
        finally:
            connection.close()
        try:
            status = json.loads(raw).get("status")
        except (ValueError, AttributeError):
            status = None
        if response.status == 200 and status == "ok":
            return True, "ok"
        return False, f"llama-server /health answered {response.status}: {raw[:200].decode('utf-8', 'replace')}"


def start_adapter(args: argparse.Namespace) -> AdapterServer:
    """Bind, write the port actually bound (port 0: the OS's choice) to --port-file, serve in a thread."""
    server = AdapterServer((args.host, args.port), args.upstream)
    port = server.server_address[1]
    if args.port_file:
        staged = Path(f"{args.port_file}.tmp")
        staged.write_text(str(port))
        staged.replace(args.port_file)  # whole or absent: a reader never sees half a number
    threading.Thread(target=server.serve_forever, name="adapter", daemon=True).start()
    log(f"listening on {args.host}:{port}, upstream {args.upstream}")
    return server


def llama_command(args: argparse.Namespace) -> list[str]:
    """llama-server on loopback only, on the upstream's port; --jinja so tool calls are parsed."""
    return [
        args.llama_server,
        "--model", args.model,
        "--alias", args.alias,
        "--host", "127.0.0.1",
        "--port", str(urlsplit(args.upstream).port),
        "--threads", str(args.threads or container_cpus()),
        "--ctx-size", str(args.ctx_size),
        "--parallel", "1",  # one sequence with the whole context (SageMaker: one model copy per container)
        "--jinja",
    ]  # fmt: skip


def serve(args: argparse.Namespace) -> int:
    """The adapter first (so /ping answers 503 while the model loads), then llama-server; until it exits."""
    start_adapter(args)
    command = llama_command(args)
    stopping = threading.Event()
    child: subprocess.Popen[bytes] | None = None

    def stop(signum: int, _frame: object) -> None:
        stopping.set()
        if child is not None:
            child.send_signal(signum)  # SageMaker's stop reaches llama-server too

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        child = subprocess.Popen(command)
    except OSError as error:
        log(f"could not start llama-server ({command[0]}): {error}")
        return 127
    if stopping.is_set():  # stopped while it was starting
        child.terminate()
    log(f"started llama-server (pid {child.pid}): {' '.join(command)}")
    code = child.wait()
    if stopping.is_set():
        log(f"stopped; llama-server exited with {code}")
        return 0
    log(f"llama-server exited with {code}; exiting so that SageMaker replaces this container")
    return code if code > 0 else 1


def proxy(args: argparse.Namespace) -> int:
    """The adapter alone, until SIGTERM or SIGINT. The signals are blocked before anything starts
    (the server's thread inherits the mask) and taken with sigwait: a handler that set an Event
    could run while this thread held that Event's lock inside `wait`, and never return."""
    stop = {signal.SIGTERM, signal.SIGINT}
    for signum in stop:  # pending while blocked, even where the caller ignored it
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)
    start_adapter(args)
    signal.sigwait(stop)
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=("serve", "proxy"), default="serve")
    parser.add_argument("--host", default=env("ADAPTER_HOST", "0.0.0.0"))
    # SAGEMAKER_BIND_TO_PORT: the port SageMaker names when it is not 8080 (inference pipelines).
    parser.add_argument("--port", type=int, default=int(env("SAGEMAKER_BIND_TO_PORT", "8080")))
    parser.add_argument("--port-file", default=env("ADAPTER_PORT_FILE"), help="write the bound port here")
    parser.add_argument("--upstream", default=env("LLAMA_UPSTREAM", "http://127.0.0.1:8081"))
    parser.add_argument("--llama-server", default=env("LLAMA_SERVER", DEFAULT_LLAMA_SERVER))
    parser.add_argument("--model", default=env("MODEL_PATH", DEFAULT_MODEL))
    parser.add_argument("--alias", default=env("MODEL_ALIAS", DEFAULT_ALIAS))
    parser.add_argument("--threads", type=int, default=int(env("LLAMA_THREADS", "0")), help="0: the container's CPUs")
    parser.add_argument("--ctx-size", type=int, default=int(env("LLAMA_CTX_SIZE", "4096")))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return serve(args) if args.command == "serve" else proxy(args)


if __name__ == "__main__":
    sys.exit(main())
