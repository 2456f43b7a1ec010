"""cdk-nag, cfn-lint and the real CLI: the checks a reviewer would run by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.cloud.cdk_cli import cdk, cli_command, cli_env
from tests.cdk.conftest import ROOT, cdk_json_context

# Notices and telemetry off: no test reaches the network.
CLI_ENV = cli_env()


def acknowledgments(app_stacks) -> dict[str, dict[str, str]]:
    """construct path -> {cdk-nag rule id: reason}, from every construct of every stack."""
    found: dict[str, dict[str, str]] = {}
    for stack in app_stacks.values():
        for node in stack.node.find_all():
            for entry in node.node.metadata:
                if entry.type == "aws:cdk:acknowledged-rules":
                    ours = {rule: why for rule, why in entry.data.items() if "AwsSolutions-" in rule}
                    if ours:
                        found.setdefault(node.node.path, {}).update(ours)
    return found


def test_nag_passes_and_every_acknowledgment_sits_on_its_construct(app_stacks):
    # The session synthesis ran AwsSolutionsChecks: an unacknowledged finding would have raised.
    acks = acknowledgments(app_stacks)
    assert acks, "expected acknowledged findings"
    stack_paths = {stack.node.path for stack in app_stacks.values()}
    assert not stack_paths & set(acks), "acknowledge on the construct, not on a whole stack"
    rules = sorted({rule.split("::", 1)[1].split("[", 1)[0] for found in acks.values() for rule in found})
    assert rules == [
        "AwsSolutions-AS1",
        "AwsSolutions-AS2",
        "AwsSolutions-AS3",
        "AwsSolutions-CB3",
        "AwsSolutions-CB4",
        "AwsSolutions-EC28",
        "AwsSolutions-IAM5",
        "AwsSolutions-S1",
        "AwsSolutions-SM1",
        "AwsSolutions-SM2",
        "AwsSolutions-VPC7",
    ]
    for path, found in acks.items():
        for rule, reason in found.items():
            assert len(reason) > 40, (path, rule, reason)


def test_nag_catches_an_unacknowledged_finding(tmp_path):
    """Prove the check can fail: an open SSH port must stop synthesis."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path), builtin_cloud_formation_validation=False)
    stack = cdk.Stack(app, "Leaky")
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        nat_gateways=0,
        subnet_configuration=[ec2.SubnetConfiguration(name="p", subnet_type=ec2.SubnetType.PUBLIC)],
    )
    group = ec2.SecurityGroup(stack, "Open", vpc=vpc)
    group.add_ingress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(22))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert "AwsSolutions-EC23" in json.dumps(report)


def cfn_lint(paths: list[str], region: str) -> subprocess.CompletedProcess[str]:
    """The cfn-lint CLI, as a user runs it on `cdk.out` (it knows CDK templates' conventions)."""
    cli = Path(sys.executable).with_name("cfn-lint")
    return subprocess.run(
        [str(cli), "--regions", region, "--format", "parseable", "--", *paths],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )


def cfn_lint_each_in_its_region(assembly) -> dict[str, tuple[list[str], subprocess.CompletedProcess[str]]]:
    """Every stack's template linted in its own region: one cfn-lint run per region, over the
    templates of the stacks there (a finding names its file)."""
    by_region: dict[str, list] = {}
    for stack in assembly.stacks:
        by_region.setdefault(stack.environment.region, []).append(stack)
    return {
        region: (
            [s.stack_name for s in stacks],
            cfn_lint([str(Path(assembly.directory) / s.template_file) for s in stacks], region),
        )
        for region, stacks in by_region.items()
    }


def test_cfn_lint_clean_for_each_stacks_own_region(assembly):
    # The four stacks of the catalog and the store stack of each region that has servers or an endpoint.
    assert len(assembly.stacks) == 6
    linted = cfn_lint_each_in_its_region(assembly)
    assert sorted(name for names, _ in linted.values() for name in names) == sorted(
        s.stack_name for s in assembly.stacks
    )
    for names, result in linted.values():
        assert (result.returncode, result.stdout) == (0, ""), names


def test_cfn_lint_would_flag_an_instance_type_the_region_lacks(assembly):
    """g5g is not offered in us-east-2: the lint is live, not a rubber stamp (the app's own check
    refuses that placement earlier, so lint the GPU template against the wrong region)."""
    stack = assembly.get_stack_by_name("InferenceGpuStack")
    result = cfn_lint([str(Path(assembly.directory) / stack.template_file)], "us-east-2")
    assert result.returncode != 0
    assert "E3628" in result.stdout and "g5g.2xlarge" in result.stdout


def run_app(
    tmp_path: Path, env_extra: dict[str, str] | None = None, **extra_context
) -> subprocess.CompletedProcess[str]:
    """Run app.py the way the CDK CLI does (context in CDK_CONTEXT_JSON)."""
    env = (
        CLI_ENV
        | {
            "CDK_CONTEXT_JSON": json.dumps(cdk_json_context() | extra_context),
            "CDK_OUTDIR": str(tmp_path),
        }
        | (env_extra or {})
    )
    return subprocess.run(
        [sys.executable, "app.py"], cwd=ROOT, env=env, check=False, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"backends": "g6,tpu"},
            "error: context backends: unknown backend 'tpu'; allowed: g6, g5g, inf2, trn1, sagemaker",
        ),
        ({"g6.zoen": "us-east-1b"}, "error: unknown context key 'g6.zoen'; allowed keys: backends,"),
        (
            {"trn1.regions": "us-east-1"},
            "error: context trn1.regions: trn1.2xlarge is not offered in us-east-1; regions that offer it: us-east-2, us-west-2",
        ),
        (
            {"inf2.regions": "us-west-2", "trn1.regions": "us-east-2"},
            "error: stack InferenceNeuronStack is asked for in two regions at once",
        ),
        (
            {"g5g.instanceType": "g6.xlarge"},
            "error: context g5g.instanceType: 'g6.xlarge' does not match backend g5g (arm64, nvidia)",
        ),
    ],
)
def test_app_stops_with_one_line_on_bad_input(tmp_path, context, message):
    returncode, stderr = run_app_here(tmp_path, **context)
    assert returncode == 2
    lines = [line for line in stderr.splitlines() if line.strip() and "!!" not in line]
    assert lines == [lines[0]] and lines[0].startswith(message), stderr
    assert "Traceback" not in stderr


def run_app_here(tmp_path: Path, **extra_context) -> tuple[int, str]:
    """app.py as `__main__` in this process, as the emulator's synth server runs it (the same
    environment as `run_app`; its exit status as the interpreter's): no second Python, aws_cdk
    and the jsii runtime already loaded. `tests/emulator/test_synth_server.py` holds that way of
    running to an app process of its own; the switches below run in one."""
    from tests.emulator.synth_server import run_app as run_in_this_process

    env = CLI_ENV | {"CDK_CONTEXT_JSON": json.dumps(cdk_json_context() | extra_context), "CDK_OUTDIR": str(tmp_path)}
    streams = [tmp_path / name for name in ("stdin", "stdout", "stderr")]
    fds = [os.open(path, os.O_RDWR | os.O_CREAT) for path in streams]
    request = {"argv": [str(ROOT / "app.py")], "env": env, "cwd": str(ROOT), "fds": [0, 1, 2]}
    returncode = run_in_this_process(request, fds)  # closes the fds
    return returncode, streams[2].read_text()


@pytest.mark.parametrize("name", ["INFERENCE_CDK_NAG", "INFERENCE_CDK_VALIDATION"])
def test_the_nag_and_validation_switches_take_on_or_off_only(tmp_path, name):
    result = run_app(tmp_path, {name: "no"})
    assert result.returncode == 2
    assert f"error: {name} must be on or off, not 'no'" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.cli
def test_cli_synth_with_validation(tmp_path):
    """One real synth through the pinned CLI, with the built-in CloudFormation validation on
    (cdk-nag off: the session's synthesis runs it on the same templates)."""
    out = tmp_path / "cdk.out"
    result = cdk(["synth", "--quiet", "--output", str(out)], env={"INFERENCE_CDK_NAG": "off"}, timeout_s=300)
    assert result.returncode == 0, result.output
    stacks = sorted(p.name.removesuffix(".template.json") for p in out.glob("*.template.json"))
    assert stacks == [
        "InferenceBedrockImportStack",
        "InferenceGpuStack",
        "InferenceNeuronStack",
        "InferenceSageMakerStack",
        "InferenceStore-us-east-1",
        "InferenceStore-us-east-2",
    ]
    assert "error" not in result.output.lower().replace("errors", "")


def test_every_cli_run_has_notices_and_telemetry_off():
    # The one builder of CLI command lines and environments, for the runner and for these tests.
    command, env = cli_command(["synth"]), cli_env()
    assert {"--no-notices", "--no-version-reporting"} <= set(command)
    assert env["CDK_DISABLE_CLI_TELEMETRY"] == "true"


def test_construct_package_does_not_shadow_the_constructs_library():
    import constructs

    assert "site-packages" in constructs.__file__
    assert not (ROOT / "constructs").exists()
