"""The app's real CDK CLI against the emulator: bootstrap, deploy, destroy."""

from __future__ import annotations

from pathlib import Path

from runner.cdk_cli import cdk
from tests.moto_emulator import ACCOUNT, REGIONS

# moto has no ml.g6 types: the endpoint runs on a type it knows (a named emulator gap).
CONTEXT = {"sagemaker.instanceType": "ml.g4dn.xlarge"}


def context_args() -> list[str]:
    return [f"--context={k}={v}" for k, v in CONTEXT.items()]


def bootstrap() -> None:
    result = cdk(["bootstrap", *[f"aws://{ACCOUNT}/{r}" for r in REGIONS]], timeout_s=300)
    assert result.returncode == 0, result.tail


def deploy(outputs_file: Path) -> None:
    result = cdk(
        [
            "deploy",
            "--all",
            "--require-approval",
            "never",
            "--method=direct",
            "--outputs-file",
            str(outputs_file),
            *context_args(),
        ],
        timeout_s=300,
    )
    assert result.returncode == 0, result.tail


def destroy() -> str:
    """`cdk destroy --all`; moto fails a VPC stack's deletion once on dependencies, then drops it."""
    for _ in range(3):
        result = cdk(["destroy", "--all", "--force", *context_args()], timeout_s=300)
        if result.returncode == 0:
            return result.output
        assert "has dependencies and cannot be deleted" in result.output, result.tail
    raise AssertionError(result.tail)
