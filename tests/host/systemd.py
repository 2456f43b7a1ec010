"""systemctl and the unit manager, as far as the servers' units use them.

`systemctl enable --now UNIT`, `start`, `stop`, `restart`, `is-active`, `daemon-reload`. Each
started unit gets a supervisor process of its own (a session, so stopping it stops all it ran)
that follows systemd's rules for the directives the units use:

- services: `Type=simple` (restarted per `Restart=on-failure` after `RestartSec`, except for an
  exit in `RestartPreventExitStatus` or `SuccessExitStatus`; refused after `StartLimitBurst`
  starts within `StartLimitIntervalSec`) and `Type=oneshot`; `ExecStartPre=-…` (failure
  ignored), `ExecStop`; `Wants=` units start with it; units that `BindsTo=` it stop with it;
  `OnFailure=` starts when it ends failed;
- timers: `OnBootSec` from the host's boot, then the service of the same name.

Delays are multiplied by INFERENCE_TIME_SCALE; the start-limit window is not: it counts starts,
and each start here costs real seconds of Python processes (a few milliseconds on a host), so a
scaled window could let old starts expire on a loaded machine and never reach the limit. State
lives in $HOST_STATE/units.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.host import processes

ROOT = Path(os.environ.get("INFERENCE_ROOT", "/"))
STATE = Path(os.environ.get("HOST_STATE", ROOT / "host"))
SCALE = float(os.environ.get("INFERENCE_TIME_SCALE", "1"))


@dataclass
class Unit:
    name: str
    sections: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def get(self, section: str, key: str, default: str = "") -> str:
        values = self.sections.get(section, {}).get(key)
        return values[-1] if values else default

    def all(self, section: str, key: str) -> list[str]:
        return [w for v in self.sections.get(section, {}).get(key, []) for w in v.split()]

    def commands(self, key: str) -> list[str]:
        return self.sections.get("Service", {}).get(key, [])


def unit_path(name: str) -> Path:
    return ROOT / "etc/systemd/system" / name


def parse(name: str) -> Unit:
    unit = Unit(name)
    section = ""
    for raw in unit_path(name).read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, _, value = line.partition("=")
        unit.sections.setdefault(section, {}).setdefault(key.strip(), []).append(value.strip())
    return unit


def seconds(value: str) -> float:
    """systemd time spans as the units write them: `15`, `1200`, `30min`, `1min`."""
    value = value.strip()
    for suffix, factor in (("min", 60), ("ms", 0.001), ("s", 1), ("h", 3600)):
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * factor
    return float(value or 0)


def state_file(name: str) -> Path:
    return STATE / "units" / f"{name}.json"


def read_state(name: str) -> dict:
    try:
        return json.loads(state_file(name).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {"state": "inactive"}


def write_state(name: str, **changes: object) -> None:
    state = read_state(name) | changes
    state_file(name).parent.mkdir(parents=True, exist_ok=True)
    partial = state_file(name).with_suffix(".partial")
    partial.write_text(json.dumps(state))
    partial.replace(state_file(name))


def supervisor_alive(state: dict) -> bool:
    """The unit's supervisor on record still runs (tests/host/processes.py: by pid and start time)."""
    found = processes.parse(state.get("supervisor") or "")
    return found is not None and processes.running(*found)


def executable(command: str) -> list[str]:
    """A unit's command line with its program found under the host's root, else on PATH."""
    words = command.split()
    program = words[0]
    under_root = ROOT / program.lstrip("/")
    words[0] = str(under_root) if under_root.exists() else Path(program).name
    return words


def journal(name: str):
    path = STATE / "journal" / f"{name}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("a")


def start(name: str) -> None:
    state = read_state(name)
    if supervisor_alive(state):
        return
    log = journal(name)
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.host.systemd", "supervise", name],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    supervisor = processes.record(process.pid)
    write_state(name, state="activating", supervisor=supervisor)
    with (STATE / "supervisors").open("a") as record:
        record.write(f"{supervisor}\n")


def stop(name: str, timeout_s: float = 30) -> None:
    state = read_state(name)
    found = processes.parse(state.get("supervisor") or "")
    if found is not None and processes.signal_process(*found, signal.SIGTERM):
        deadline = time.monotonic() + timeout_s
        while processes.running(*found) and time.monotonic() < deadline:
            time.sleep(0.02)
        if processes.running(*found):
            processes.signal_group(*found, signal.SIGKILL, marker=f"HOST_STATE={STATE}")
    if read_state(name).get("state") not in ("failed",):
        write_state(name, state="inactive")


def units_bound_to(name: str) -> list[str]:
    folder = ROOT / "etc/systemd/system"
    return [p.name for p in folder.glob("*.service") if name in parse(p.name).all("Unit", "BindsTo")]


class Supervisor:
    """Runs one unit the way systemd would, until it ends or is stopped."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.unit = parse(name)
        self.child: subprocess.Popen | None = None
        self.stopping = False
        signal.signal(signal.SIGTERM, self._on_stop)

    def _on_stop(self, *_: object) -> None:
        self.stopping = True
        for command in self.unit.commands("ExecStop"):
            subprocess.run(executable(command.lstrip("-")), check=False, timeout=60)
        if self.child and self.child.poll() is None:
            self.child.terminate()

    def sleep(self, span_s: float) -> None:
        deadline = time.monotonic() + span_s * SCALE
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(0.01)

    def run(self) -> int:
        if self.name.endswith(".timer"):
            return self.run_timer()
        if self.unit.get("Service", "Type", "simple") == "oneshot":
            return self.run_oneshot()
        return self.run_simple()

    def run_timer(self) -> int:
        boot = float((STATE / "boot_time").read_text())
        due = boot + seconds(self.unit.get("Timer", "OnBootSec")) * SCALE
        write_state(self.name, state="active")
        while not self.stopping and time.time() < due:
            time.sleep(0.05)
        if not self.stopping:
            start(self.name.replace(".timer", ".service"))
        write_state(self.name, state="inactive")
        return 0

    def run_oneshot(self) -> int:
        write_state(self.name, state="activating")
        code = self.exec_start()
        return self.finish(code)

    def exec_start(self) -> int:
        for command in self.unit.commands("ExecStartPre"):
            ignore = command.startswith("-")
            result = subprocess.run(executable(command.lstrip("-")), check=False)
            if result.returncode and not ignore:
                return result.returncode
        (command,) = self.unit.commands("ExecStart")
        if self.stopping:  # stopped before it got this far
            return 0
        self.child = subprocess.Popen(executable(command))
        if self.stopping:
            self.child.terminate()
        for wanted in self.unit.all("Unit", "Wants"):
            if unit_path(wanted).exists():
                start(wanted)
        code = self.child.wait()
        return code

    def finish(self, code: int) -> int:
        success = {0, *map(int, self.unit.all("Service", "SuccessExitStatus"))}
        for bound in units_bound_to(self.name):
            stop(bound)
        if self.stopping or code in success:
            write_state(self.name, state="inactive", last_exit=code)
            return 0
        write_state(self.name, state="failed", last_exit=code)
        for unit in self.unit.all("Unit", "OnFailure"):
            start(unit)
        return code

    def run_simple(self) -> int:
        window = seconds(self.unit.get("Unit", "StartLimitIntervalSec", "10"))  # unscaled: see above
        burst = int(self.unit.get("Unit", "StartLimitBurst", "5"))
        no_restart = {int(c) for c in self.unit.all("Service", "RestartPreventExitStatus")}
        success = {0, *map(int, self.unit.all("Service", "SuccessExitStatus"))}
        starts: list[float] = []
        while True:
            now = time.monotonic()
            starts = [t for t in starts if now - t < window] + [now]
            if len(starts) > burst:
                write_state(self.name, state="failed", reason="start-limit-hit")
                for unit in self.unit.all("Unit", "OnFailure"):
                    start(unit)
                return 1
            write_state(self.name, state="active", starts=len(starts))
            code = self.exec_start()
            for bound in units_bound_to(self.name):
                stop(bound)
            if self.stopping or code in success:
                write_state(self.name, state="inactive", last_exit=code)
                return 0
            if code in no_restart or self.unit.get("Service", "Restart", "no") != "on-failure":
                write_state(self.name, state="failed", last_exit=code)
                for unit in self.unit.all("Unit", "OnFailure"):
                    start(unit)
                return code
            write_state(self.name, state="activating", last_exit=code)
            self.sleep(seconds(self.unit.get("Service", "RestartSec", "0.1")))
            if self.stopping:
                write_state(self.name, state="inactive")
                return 0


# The host's own daemons, which the boot stops and starts around moving their data (no unit file
# of the app's: they are the image's). Their state is recorded, nothing runs.
HOST_DAEMONS = ("docker.service", "containerd.service")


def systemctl(argv: list[str]) -> int:
    words = [a for a in argv if not a.startswith("--")]
    flags = {a for a in argv if a.startswith("--")}
    with (STATE / "calls.log").open("a") as calls:
        calls.write("systemctl " + " ".join(argv) + "\n")
    if not words:
        return 0
    verb, names = words[0], words[1:]
    daemons = [n for n in names if n in HOST_DAEMONS]
    if daemons and verb in ("start", "stop", "restart"):
        for name in daemons:
            write_state(name, state="inactive" if verb == "stop" else "active")
        names = [n for n in names if n not in HOST_DAEMONS]
        if not names:
            return 0
    if verb == "daemon-reload":
        return 0
    if verb == "enable":
        if "--now" in flags:
            for name in names:
                start(name)
        return 0
    if verb == "start":
        for name in names:
            start(name)
        return 0
    if verb == "stop":
        for name in names:
            stop(name)
        return 0
    if verb == "restart":
        for name in names:
            stop(name)
            write_state(name, state="inactive")
            start(name)
        return 0
    if verb == "is-active":
        state = read_state(names[0]).get("state", "inactive")
        print(state)
        return 0 if state == "active" else 3
    print(f"systemctl stand-in: {verb} is not emulated", file=sys.stderr)
    return 1


def main() -> int:
    if sys.argv[1:2] == ["supervise"]:
        return Supervisor(sys.argv[2]).run()
    return systemctl(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
