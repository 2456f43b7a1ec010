"""The app's real CDK CLI against the emulator: bootstrap, deploy, destroy.

The CLI (here and in runner.up) runs in a folder of the emulator's own (INFERENCE_CDK_DIR, set by
the emulator fixture) whose cdk.json runs the project's app, so the lookups a plain `cdk deploy`
makes (the account's zones, the AMI parameters; moto answers them) land in that folder's
cdk.context.json, never in the project's.
"""

from __future__ import annotations

import json
from pathlib import Path

from runner.cloud.cdk_cli import cdk
from runner.core.files import PROJECT_ROOT
from runner.up import UpOptions
from tests.aws_emulator import ACCOUNT, REGIONS

BOOTSTRAP_TEMPLATE = PROJECT_ROOT / "node_modules" / "aws-cdk" / "lib" / "api" / "bootstrap" / "bootstrap-template.yaml"
# moto has no ml.g6 types: the endpoint runs on a type it knows (a named emulator gap).
CONTEXT = {"sagemaker.instanceType": "ml.g4dn.xlarge"}


def context_args(context: dict[str, str] | None = None) -> list[str]:
    return [f"--context={k}={v}" for k, v in (CONTEXT | (context or {})).items()]


def cli_folder(scratch: Path, app: str | None = None) -> Path:
    """A project folder for the CLI; given `app` (the command that runs the project's app.py),
    its cdk.json is written: the project's, with that app."""
    folder = scratch / "cli"
    if app is not None:
        folder.mkdir(parents=True, exist_ok=True)
        settings = json.loads((PROJECT_ROOT / "cdk.json").read_text())
        settings["app"] = app
        (folder / "cdk.json").write_text(json.dumps(settings, indent=2))
    return folder


def bootstrap(scratch: Path, *, through_cli: bool = False) -> None:
    """Bootstrap every region. `through_cli`: `cdk bootstrap` itself (the README flow does, ~12 s);
    else the pinned CLI's own bootstrap template (the file it deploys) as the stack it deploys,
    created through CloudFormation directly, which is the same stack without the CLI's polling."""
    if through_cli:
        result = cdk(["bootstrap", *[f"aws://{ACCOUNT}/{r}" for r in REGIONS]], timeout_s=300)
        assert result.returncode == 0, result.tail
        return
    import boto3

    template = BOOTSTRAP_TEMPLATE.read_text()
    for region in REGIONS:
        cloudformation = boto3.client("cloudformation", region_name=region)
        cloudformation.create_stack(
            StackName="CDKToolkit",
            TemplateBody=template,
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
            Parameters=[{"ParameterKey": "TrustedAccounts", "ParameterValue": ""}],
        )
        status = cloudformation.describe_stacks(StackName="CDKToolkit")["Stacks"][0]["StackStatus"]
        assert status == "CREATE_COMPLETE", status


def deploy(scratch: Path, outputs_file: Path, context: dict[str, str] | None = None) -> str:
    result = cdk(
        ["deploy", "--all", "--require-approval", "never", "--method=direct", "--outputs-file", str(outputs_file),
         *context_args(context)],
        timeout_s=300,
    )  # fmt: skip
    assert result.returncode == 0, result.tail
    return result.output


def destroy(scratch: Path, context: dict[str, str] | None = None) -> str:
    """`cdk destroy --all`, once: it must succeed the first time, as on AWS."""
    result = cdk(["destroy", "--all", "--force", *context_args(context)], timeout_s=300)
    assert result.returncode == 0, result.tail
    return result.output


def up_options(tmp_path: Path, **changes) -> UpOptions:
    """runner.up's options as the emulator flows run it: every stack, short waits, results under `tmp_path`."""
    values = {
        "stacks": [],
        "context": dict(CONTEXT),
        "launch_timeout_s": 20,
        "poll_s": 0.3,
        "build_grace_s": 1.0,
        "method": "direct",
        "results_dir": tmp_path / "results",
    }
    return UpOptions(**(values | changes))
