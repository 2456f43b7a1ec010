"""The state file of open SSM port forwards, written by `runner.forward` and read by every command.

Each entry is one Session Manager plugin process (by PID) holding a loopback port open to one
server, with the SSM session it belongs to and the stack output it was opened for, so
`runner.bench` with no flags finds the forwarded servers even when it does not call AWS itself.
An entry whose process is gone is ignored, never trusted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from catalog.contract import BackendOutput
from runner.core.errors import RunnerError
from runner.core.files import PROJECT_ROOT, write_atomically
from runner.core.typed_json import JsonObject

FORWARDS_ENV = "INFERENCE_FORWARDS_FILE"
# argv[1] of every plugin this runner starts (the session response travels in this variable):
# a live PID whose command line lacks it is some other process that reused the number.
SESSION_RESPONSE_VARIABLE = "AWS_SSM_START_SESSION_RESPONSE"


def forwards_file() -> Path:
    return Path(os.environ.get(FORWARDS_ENV) or PROJECT_ROOT / "forwards.json")


@dataclass
class Forward:
    backend: str
    pid: int
    local_port: int
    remote_port: int
    instance_id: str
    region: str
    session_id: str
    started_at: str
    log: str
    # The backend's stack output, as the forward was opened for it.
    output: JsonObject

    @property
    def backend_output(self) -> BackendOutput:
        return BackendOutput.parse(self.backend, self.output, stack="forwards file")

    def to_json(self) -> JsonObject:
        return asdict(self)


def read_forwards(path: Path | None = None) -> list[Forward]:
    """Every entry of the state file, alive or not; a missing file is no forwards."""
    path = path or forwards_file()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, json.JSONDecodeError) as error:
        raise RunnerError(
            f"forwards file {path}: unreadable ({error}); delete it or run runner.forward --stop"
        ) from None
    entries = data.get("forwards") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise RunnerError(
            f"forwards file {path}: expected {{'forwards': [...]}}; delete it or run runner.forward --stop"
        )
    try:
        return [Forward(**entry) for entry in entries]
    except TypeError as error:
        raise RunnerError(f"forwards file {path}: malformed entry ({error})") from None


def write_forwards(forwards: list[Forward], path: Path | None = None) -> None:
    """Replace the state file atomically (no half-written file); no forwards removes it."""
    path = path or forwards_file()
    if not forwards:
        path.unlink(missing_ok=True)
        return
    write_atomically(path, json.dumps({"forwards": [f.to_json() for f in forwards]}, indent=2) + "\n")


def process_alive(pid: int) -> bool:
    """True for a running plugin this runner started (a reaped or zombie process is gone)."""
    try:
        finished, _ = os.waitpid(pid, os.WNOHANG)
        if finished == pid:
            return False
    except ChildProcessError:
        pass  # not our child: ask the system instead
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    line = command_line(pid)
    return line is not None and SESSION_RESPONSE_VARIABLE in line


def command_line(pid: int) -> str | None:
    """The process's command line: /proc on Linux, `ps` elsewhere (macOS has no /proc; `-ww`, or
    it cuts the line at the terminal's width, the marker with it); None when neither can tell
    (then the number is not taken for a plugin of ours)."""
    if sys.platform.startswith("linux"):
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return None
    try:
        listed = subprocess.run(
            ["ps", "-ww", "-p", str(pid), "-o", "command="], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return listed.stdout if listed.returncode == 0 and listed.stdout.strip() else None


def live_forwards(path: Path | None = None) -> list[Forward]:
    return [f for f in read_forwards(path) if process_alive(f.pid)]


def stop_process(pid: int, grace_s: float = 5.0) -> None:
    """SIGTERM to the plugin's process group, then SIGKILL if it is still there after `grace_s`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if not process_alive(pid):
                return
            time.sleep(0.05)
