"""The vLLM tier's server, started once per test run in the background.

`tests/conftest.py` calls `start_if_selected` at configure time, in the controlling process (the
one process without xdist, the controller with it), before any worker starts: the server loads
(a minute or two) while the other tests run. It writes its port, or why it could not start, to the
file `INFERENCE_VLLM_STATE` names; the tier's fixture waits for that file. `INFERENCE_VLLM_PORT`
(a server already running) skips all of this.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import threading
from pathlib import Path

STATE_ENV = "INFERENCE_VLLM_STATE"
PORT_ENV = "INFERENCE_VLLM_PORT"
SUPPORTED = platform.system() == "Linux" and platform.machine() == "x86_64"


def tier_selected(config) -> bool:
    """Whether this run will collect tests/vllm (by its paths and its -m expression)."""
    if "not vllm" in (config.option.markexpr or "") or any("tests/vllm" in str(p) for p in config.option.ignore or ()):
        return False
    root = Path(config.rootpath)
    paths = [Path(a.split("::", 1)[0]) for a in config.args] or [root / "tests"]
    vllm = (root / "tests" / "vllm").resolve()
    return any(vllm == (root / p).resolve() or vllm.is_relative_to((root / p).resolve()) or (root / p).resolve().is_relative_to(vllm) for p in paths)  # fmt: skip


class BackgroundServer:
    def __init__(self, state_path: Path) -> None:
        self.state_path = state_path
        self.server = None
        self.thread = threading.Thread(target=self._start, name="vllm-tier-server", daemon=True)
        self.lock = threading.Lock()
        self.stopper: threading.Thread | None = None

    def _write(self, state: dict[str, object]) -> None:
        partial = self.state_path.with_suffix(".partial")
        partial.write_text(json.dumps(state))
        partial.replace(self.state_path)

    def _start(self) -> None:
        from runner.servers.vllm import VllmServer

        try:
            self.server = VllmServer()
            self.server.start()
            self._write({"port": self.server.port, "startup_s": self.server.startup_s})
        except Exception as error:
            self._write({"error": f"{type(error).__name__}: {error}"})

    def stop_soon(self) -> None:
        """Starts stopping the server in the background, once."""
        with self.lock:
            if self.stopper is None:
                self.stopper = threading.Thread(target=self._stop, name="vllm-tier-stop", daemon=True)
                self.stopper.start()

    def stop(self) -> None:
        """Stops the server and waits until it has."""
        self.stop_soon()
        assert self.stopper is not None
        self.stopper.join()

    def _stop(self) -> None:
        # A server still loading (a run that ends early, Ctrl-C) is stopped too, not left running:
        # its start then ends with an error, and no other start follows.
        while self.thread.is_alive():
            if self.server is not None and self.server.process is not None:
                self.server.stop()
            self.thread.join(timeout=0.2)
        if self.server is not None:
            self.server.stop()


def start_if_selected(config) -> BackgroundServer | None:
    if os.environ.get(PORT_ENV) or os.environ.get(STATE_ENV) or not SUPPORTED or not tier_selected(config):
        return None
    state_path = Path(tempfile.mkdtemp(prefix="vllm-tier-")) / "state.json"
    os.environ[STATE_ENV] = str(state_path)  # inherited by the xdist workers started after this
    background = BackgroundServer(state_path)
    background.thread.start()
    return background
