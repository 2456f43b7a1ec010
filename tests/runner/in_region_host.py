"""The instances' side of SSM Run Command for the in-region tests, and the `instances` fixture
(moto in server mode, the real AWS CLI, Run Command's commands run under `sh` here): the tests
that use it are the stand-in hosts' tier (`host`, tests/conftest.py). And the kit as the CDK ships
it (`kit_zip`, the `kit` fixture).

moto gap filled here (`RunCommandHost`): moto records SendCommand and reports every invocation
`Success` at once, running nothing. Here an `AWS-RunShellScript` command runs its `commands` under
`sh` on this machine (the instance's loopback is this loopback), its invocation is `InProgress`
until they end, then `Success` or `Failed` with their exit code and their output cut as
GetCommandInvocation cuts it (24,000 characters of standard output, 8,000 of standard error).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inference_constructs.in_region import assemble_kit
from runner.cloud.reach import in_region
from tests.host.aws_cli import CliServer
from tests.host.machine import BIN as HOST_BIN


def kit_zip(path: Path, main: str | None = None) -> Path:
    """The kit as the CDK ships it: the folder the construct assembles at synth, zipped with its
    files at the root as the CDK CLI zips an asset; `main`: another `__main__.py` (an older kit)."""
    folder = assemble_kit(path.with_suffix(""))
    if main is not None:
        (folder / "__main__.py").write_text(main)
    with zipfile.ZipFile(path, "w") as archive:
        for file in sorted(folder.rglob("*.py")):
            archive.write(file, file.relative_to(folder).as_posix())
    return path


@pytest.fixture(scope="module")
def kit(tmp_path_factory) -> Path:
    return kit_zip(tmp_path_factory.mktemp("kit") / "kit.zip")


# GetCommandInvocation's cuts of a command's output.
STDOUT_LIMIT, STDERR_LIMIT = 24000, 8000


class RunCommandHost:
    """The instances' side of Run Command (see the module docstring)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.runs: list[subprocess.CompletedProcess] = []
        self.done = threading.Event()

    def install(self, monkeypatch) -> None:
        from moto.ssm.models import SimpleSystemManagerBackend

        original = SimpleSystemManagerBackend.send_command
        host = self

        def send_command(backend, *args, **kwargs):
            command = original(backend, *args, **kwargs)
            if command.document_name == in_region.DOCUMENT:
                for invocation in command.invocations:
                    invocation.update(Status="InProgress", StatusDetails="InProgress", ResponseCode=-1)
                    threading.Thread(target=host.run, args=(command, invocation), daemon=True).start()
            return command

        monkeypatch.setattr(SimpleSystemManagerBackend, "send_command", send_command)

    def run(self, command: Any, invocation: dict[str, Any]) -> None:
        script = "\n".join(command.parameters["commands"])
        timeout = int(command.parameters["executionTimeout"][0])
        done = subprocess.run(
            ["sh", "-c", script], env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        self.runs.append(done)
        status = "Success" if done.returncode == 0 else "Failed"
        invocation.update(
            Status=status,
            StatusDetails=status,
            ResponseCode=done.returncode,
            StandardOutputContent=done.stdout[:STDOUT_LIMIT],
            StandardErrorContent=done.stderr[:STDERR_LIMIT],
        )


@pytest.fixture(scope="module")
def cli_server(tmp_path_factory) -> Iterator[CliServer]:
    """The emulated hosts' AWS CLI server (tests/host/aws_cli.py): the real CLI, imported once."""
    server = CliServer(tmp_path_factory.mktemp("aws-cli"))
    yield server
    server.stop()


@pytest.fixture
def instances(moto_url, cli_server, monkeypatch, tmp_path) -> Iterator[RunCommandHost]:
    urllib.request.urlopen(urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST"), timeout=30).read()
    for name, value in {
        "AWS_ENDPOINT_URL": moto_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(in_region, "POLL_S", 0.25)
    # The instance's tools: the AWS CLI (through the server, as on the emulated hosts; the real CLI
    # after them on PATH) and a python3 (the kit needs nothing else).
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "python3").symlink_to(sys.executable)
    (tools / "aws").symlink_to(HOST_BIN / "aws")
    scratch = tmp_path / "instance-tmp"
    scratch.mkdir()
    path = os.pathsep.join([str(tools), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    env = dict(os.environ, PATH=path, TMPDIR=str(scratch), **cli_server.env())
    host = RunCommandHost(env)
    host.install(monkeypatch)
    yield host
