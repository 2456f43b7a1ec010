"""The vLLM tier's server, started once per test run in the background.

`tests/conftest.py` calls `start_if_selected` at configure time, in the controlling process (the
one process without xdist, the controller with it), before any worker starts: the server loads
(a minute or two) while the other tests run. It is `python -m runner.vllm_local`, the command a user
keeps one with, and the tier's last test stops it by SIGTERM (tests/vllm/test_vllm_local.py). It writes its port, or why it could not start, to the
file `INFERENCE_VLLM_STATE` names; the tier's fixture waits for that file. `INFERENCE_VLLM_PORT`
(a server already running) skips all of this.
"""

from __future__ import annotations

import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

STATE_ENV = "INFERENCE_VLLM_STATE"
PORT_ENV = "INFERENCE_VLLM_PORT"
SUPPORTED = platform.system() == "Linux" and platform.machine() == "x86_64"


def tier_selected(config) -> bool:
    """Whether this run will collect tests/vllm (by its paths and its -m expression)."""
    if any("tests/vllm" in str(p) for p in config.option.ignore or ()):
        return False
    if config.option.markexpr:
        # The tier's tests carry the `vllm` marker alone (tests/vllm/conftest.py): `-m emulator`
        # selects none of them, `-m "not host"` all. pytest's own parser of -m (pinned pytest).
        from _pytest.mark.expression import Expression

        if not Expression.compile(config.option.markexpr).evaluate(lambda name, **_: name == "vllm"):
            return False
    root = Path(config.rootpath)
    paths = [Path(a.split("::", 1)[0]) for a in config.args] or [root / "tests"]
    vllm = (root / "tests" / "vllm").resolve()
    return any(vllm == (root / p).resolve() or vllm.is_relative_to((root / p).resolve()) or (root / p).resolve().is_relative_to(vllm) for p in paths)  # fmt: skip


# The line `python -m runner.vllm_local` prints once its server answers.
READY = re.compile(r"vLLM \S+ on (http://127\.0\.0\.1:(\d+)/v1) \(ready in (\d+) s\); Ctrl-C stops it")


class BackgroundServer:
    """The tier's server, served by `python -m runner.vllm_local` as a user keeps one: the tier's
    last test stops it with SIGTERM and reads how it ended from `exit.json` beside the state (only
    this process, its parent, can reap it), so that claim costs no second start of the engine."""

    def __init__(self, state_path: Path) -> None:
        self.state_path = state_path
        self.exit_path = state_path.with_name("exit.json")
        self.process: subprocess.Popen[bytes] | None = None
        self.thread = threading.Thread(target=self._start, name="vllm-tier-server", daemon=True)
        self.lock = threading.Lock()
        self.stopper: threading.Thread | None = None
        self.stopping = False

    @staticmethod
    def _write(path: Path, state: dict[str, object]) -> None:
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(state))
        partial.replace(path)

    def _start(self) -> None:
        from runner.core.files import PROJECT_ROOT
        from tests.host.processes import start_time

        with self.lock:
            if self.stopping:
                return
            self.process = subprocess.Popen(
                [sys.executable, "-m", "runner.vllm_local"],
                cwd=PROJECT_ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env={**os.environ, "COLUMNS": "200"},
            )
        said: list[str] = []
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            said.append(raw.decode(errors="replace"))
            found = READY.search(said[-1])
            if found:
                pid = self.process.pid
                self._write(
                    self.state_path,
                    {"port": int(found[2]), "startup_s": float(found[3]), "runner": [pid, start_time(pid)]},
                )
                break
        else:
            code = self.process.wait()
            self._write(self.state_path, {"error": f"runner.vllm_local exited {code}: {''.join(said)[-3000:]}"})
            return
        for raw in self.process.stdout:  # drained, so the server never blocks on a full pipe
            said.append(raw.decode(errors="replace"))
        self._write(self.exit_path, {"code": self.process.wait(), "said": "".join(said)[-3000:]})

    def stop_soon(self) -> None:
        """Starts stopping the server in the background, once."""
        with self.lock:
            self.stopping = True
            if self.stopper is None:
                self.stopper = threading.Thread(target=self._stop, name="vllm-tier-stop", daemon=True)
                self.stopper.start()

    def stop(self) -> None:
        """Stops the server and waits until it has."""
        self.stop_soon()
        assert self.stopper is not None
        self.stopper.join()

    def _stop(self) -> None:
        # A server still loading (a run that ends early, Ctrl-C) is stopped too, as a user stops
        # runner.vllm_local; its own handling takes its engine's group down.
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.thread.join(timeout=10)


def start_if_selected(config) -> BackgroundServer | None:
    if os.environ.get(PORT_ENV) or os.environ.get(STATE_ENV) or not SUPPORTED or not tier_selected(config):
        return None
    state_path = Path(tempfile.mkdtemp(prefix="vllm-tier-")) / "state.json"
    os.environ[STATE_ENV] = str(state_path)  # inherited by the xdist workers started after this
    background = BackgroundServer(state_path)
    background.thread.start()
    return background
