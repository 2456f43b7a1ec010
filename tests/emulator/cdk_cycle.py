"""The app's real CDK CLI against the emulator: bootstrap, deploy, destroy.

The CLI (here and in runner.up) runs in a folder of the emulator's own (INFERENCE_CDK_DIR, set by
the emulator fixture) whose cdk.json runs the project's app, so the lookups a plain `cdk deploy`
makes (the account's zones, the AMI parameters; moto answers them) land in that folder's
cdk.context.json, never in the project's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from runner.cdk_cli import PROJECT_ROOT, cdk
from tests.aws_emulator import ACCOUNT, REGIONS

# moto has no ml.g6 types: the endpoint runs on a type it knows (a named emulator gap).
CONTEXT = {"sagemaker.instanceType": "ml.g4dn.xlarge"}


def context_args(context: dict[str, str] | None = None) -> list[str]:
    return [f"--context={k}={v}" for k, v in (CONTEXT | (context or {})).items()]


def cli_folder(scratch: Path) -> Path:
    """A project folder for the CLI: the project's cdk.json, its app given by absolute path."""
    folder = scratch / "cli"
    folder.mkdir(parents=True, exist_ok=True)
    settings = json.loads((PROJECT_ROOT / "cdk.json").read_text())
    settings["app"] = f"{sys.executable} {PROJECT_ROOT / 'app.py'}"
    (folder / "cdk.json").write_text(json.dumps(settings, indent=2))
    return folder


def bootstrap(scratch: Path) -> None:
    result = cdk(["bootstrap", *[f"aws://{ACCOUNT}/{r}" for r in REGIONS]], timeout_s=300)
    assert result.returncode == 0, result.tail


def deploy(scratch: Path, outputs_file: Path, context: dict[str, str] | None = None) -> str:
    result = cdk(
        ["deploy", "--all", "--require-approval", "never", "--method=direct", "--outputs-file", str(outputs_file),
         *context_args(context)],
        timeout_s=300,
    )  # fmt: skip
    assert result.returncode == 0, result.tail
    return result.output


def destroy(scratch: Path, context: dict[str, str] | None = None) -> str:
    """`cdk destroy --all`; moto fails a VPC stack's deletion once on dependencies, then drops it."""
    for _ in range(3):
        result = cdk(["destroy", "--all", "--force", *context_args(context)], timeout_s=300)
        if result.returncode == 0:
            return result.output
        assert "has dependencies and cannot be deleted" in result.output, result.tail
    raise AssertionError(result.tail)
