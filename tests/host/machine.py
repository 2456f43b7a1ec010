"""One emulated EC2 instance: a scratch root, the stand-ins first on PATH, and its user data run
under bash as cloud-init would run it, once, at boot. `shutdown()` is what terminating the
instance does: every unit stops (ExecStop) and every process the host started ends."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.host import processes

BIN = Path(__file__).with_name("bin")
PROJECT = Path(__file__).resolve().parents[2]
GUARD = PROJECT / "tests" / "loopback"
LOG_VARIABLE = "INFERENCE_LOOPBACK_LOG"  # tests/loopback/loopback_guard.py


@dataclass
class HostOptions:
    """What the instance has and how its container behaves (see docker.py)."""

    gpu: bool = True
    neuron_devices: int = 1
    container: str = "serve"
    pull_error: str = ""
    missing_images: tuple[str, ...] = ()
    # Seconds of emulated time per real second divided: systemd's 15 s RestartSec becomes 0.3 s.
    time_scale: float = 0.02
    # The ready script's poll interval, in real seconds.
    poll_s: float = 0.1
    # The instance's type (the metadata service's answer; compiled graphs are keyed by it), and the
    # instance store it has (GB, 0 for none; catalog/boot.py INSTANCE_DISKS), already mounted as a
    # DLAMI may do, or not.
    instance_type: str = "g5g.2xlarge"
    instance_store_gb: int = 0
    instance_store_mounted: bool = False


@dataclass
class Host:
    root: Path
    instance_id: str
    zone: str
    env: dict[str, str]
    options: HostOptions = field(default_factory=HostOptions)
    boot_process: subprocess.Popen | None = None
    boot_record: str = ""

    @property
    def state(self) -> Path:
        return self.root / "host"

    def environment(self) -> dict[str, str]:
        real_curl = shutil.which("curl") or "/usr/bin/curl"
        path = os.pathsep.join([str(BIN), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        values = {
            "PATH": path,
            "HOME": str(self.root / "root"),
            "INFERENCE_ROOT": str(self.root),
            "HOST_STATE": str(self.state),
            "HOST_PYTHON": sys.executable,
            # The suite's loopback guard in every Python process the host starts, logging where
            # the test session reads its log (tests/loopback/sitecustomize.py).
            "PYTHONPATH": os.pathsep.join([str(GUARD), str(PROJECT)]),
            LOG_VARIABLE: os.environ.get(LOG_VARIABLE, ""),
            "REAL_CURL": real_curl,
            "INSTANCE_ID": self.instance_id,
            "INSTANCE_ZONE": self.zone,
            "INSTANCE_TYPE": self.options.instance_type,
            "HOST_INSTANCE_STORE_GB": str(self.options.instance_store_gb),
            "HOST_INSTANCE_STORE_MOUNTED": "1" if self.options.instance_store_mounted else "",
            "INFERENCE_TIME_SCALE": str(self.options.time_scale),
            "INFERENCE_POLL_S": str(self.options.poll_s),
            # The user data's waits between tries of its archive's download (10 s, 20 s, ... on an instance).
            "INFERENCE_FETCH_BACKOFF_S": "0",
            "CONTAINER_BEHAVIOUR": self.options.container,
            "HOST_GPU": "1" if self.options.gpu else "",
            "PULL_ERROR": self.options.pull_error,
            "MISSING_IMAGES": ",".join(self.options.missing_images),
            "LANG": "C.UTF-8",
        }
        return values | self.env

    def boot(self, user_data: str) -> subprocess.Popen:
        """Run the user data in the background, as cloud-init does at first boot."""
        for folder in ("host", "root", "dev", "run", "etc"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        for index in range(self.options.neuron_devices):
            (self.root / "dev" / f"neuron{index}").write_text("")
        (self.state / "boot_time").write_text(str(time.time()))
        script = self.root / "host" / "user-data.sh"
        script.write_text(user_data)
        log = (self.state / "cloud-init-output.log").open("a")
        self.boot_process = subprocess.Popen(
            ["bash", str(script)],
            env=self.environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.boot_record = processes.record(self.boot_process.pid)
        return self.boot_process

    def run(self, commands: str, timeout_s: float = 60) -> subprocess.CompletedProcess:
        """Commands as the SSM agent runs them (Run Command's AWS-RunShellScript): bash, as root."""
        return subprocess.run(
            ["bash", "-c", commands],
            env=self.environment(),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def supervisors(self) -> list[tuple[int, int]]:
        """Every unit supervisor this host started (pid and start time: tests/host/processes.py)."""
        path = self.state / "supervisors"
        lines = path.read_text().splitlines() if path.exists() else []
        return [found for found in map(processes.parse, lines) if found is not None]

    def shutdown(self, timeout_s: float = 10) -> None:
        """What AWS does to a terminated instance: the units stop, then everything ends."""
        env = self.environment()
        for unit in ("inference-deadline.timer", "inference-server.service"):
            subprocess.run(
                [str(BIN / "systemctl"), "stop", unit], env=env, check=False, timeout=timeout_s, capture_output=True
            )
        boot = processes.parse(self.boot_record)
        groups = [*self.supervisors(), *([boot] if boot else [])]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for leader, started in groups:
                processes.signal_group(leader, started, sig, marker=f"HOST_STATE={self.state}")
            if sig == signal.SIGTERM:
                time.sleep(0.2)
        if self.boot_process:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.boot_process.wait(timeout=timeout_s)

    def unit_state(self, unit: str) -> str:
        try:
            return json.loads((self.state / "units" / f"{unit}.json").read_text())["state"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            return "inactive"

    def calls(self) -> list[str]:
        path = self.state / "calls.log"
        return path.read_text().splitlines() if path.exists() else []

    def container_port(self, host_port: int) -> int | None:
        """The loopback port the server published on `host_port` really listens on."""
        path = self.state / "ports" / str(host_port)
        return int(path.read_text()) if path.exists() else None

    def boot_log(self) -> str:
        path = self.state / "cloud-init-output.log"
        return path.read_text() if path.exists() else ""
