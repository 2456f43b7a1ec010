"""Runs the project's pinned CDK CLI (node_modules, from package-lock.json) for runner commands."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from runner.core.errors import RunnerError
from runner.core.files import PROJECT_ROOT

CLI = PROJECT_ROOT / "node_modules" / ".bin" / "cdk"
# Where the CLI runs (its cdk.json, and the cdk.context.json its lookups write): the project, or
# a folder of its own (the emulator tests keep the account's lookups out of the project).
CLI_DIR_ENV = "INFERENCE_CDK_DIR"


def cli_dir() -> Path:
    return Path(os.environ.get(CLI_DIR_ENV) or PROJECT_ROOT)


@dataclass
class CliResult:
    returncode: int
    output: str

    @property
    def tail(self) -> str:
        lines = [line for line in self.output.strip().splitlines() if line.strip()]
        return " | ".join(lines[-6:])[:600]


# Off for every run of the CLI, the test suite's included: no notices or telemetry traffic.
QUIET_FLAGS = ("--no-notices", "--no-version-reporting", "--ci")
QUIET_ENV = {"CDK_DISABLE_CLI_TELEMETRY": "true", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}


def cli_command(args: list[str]) -> list[str]:
    return [str(CLI), *args, *QUIET_FLAGS]


def cli_env(env: dict[str, str] | None = None) -> dict[str, str]:
    return dict(os.environ) | QUIET_ENV | (env or {})


def cdk(args: list[str], *, env: dict[str, str] | None = None, timeout_s: float = 3600) -> CliResult:
    """`cdk ARGS` with telemetry and notices off; stdout and stderr together, for the evidence."""
    if not CLI.exists() or shutil.which("node") is None:
        raise RunnerError("the pinned CDK CLI is not installed: run `make setup` (needs Node 20+ and npm)")
    full_env = cli_env(env)
    command = cli_command(args)
    try:
        completed = subprocess.run(
            command,
            cwd=cli_dir(),
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RunnerError(f"cdk {' '.join(args[:2])} did not finish in {timeout_s:.0f} s") from None
    return CliResult(completed.returncode, completed.stdout + completed.stderr)
