"""The moto emulator in server mode on loopback, one per test module, its state reset at start,
with Bedrock's import APIs served by their loopback fake."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from catalog.config import PLACEMENT_ENV
from runner.cloud.cdk_cli import CLI_DIR_ENV
from tests.aws_emulator import emulated_aws
from tests.emulator.cdk_cycle import cli_folder
from tests.emulator.synth_server import SynthServer
from tests.runner.fake_bedrock_import import FakeBedrockImport

STAND_IN_PLUGIN = Path(__file__).with_name("stand_in_plugin.py")


@pytest.fixture(scope="session")
def synth_server(tmp_path_factory):
    """The app's synth for every CLI run of this test process (synth_server.py), started once."""
    server = SynthServer(tmp_path_factory.mktemp("synth"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def emulator(tmp_path_factory, synth_server):
    scratch = tmp_path_factory.mktemp("emulator")
    # Custom Model Import, which moto lacks (its ListImportedModels answers 500): the loopback fake.
    with FakeBedrockImport() as bedrock:
        env = (
            bedrock.env()
            | {
                PLACEMENT_ENV: str(scratch / "placement.json"),  # emptied by Emulator.reset
                CLI_DIR_ENV: str(cli_folder(scratch, synth_server.app_command())),
                # Every CLI synth here would run cdk-nag again on templates tests/cdk already nag, and
                # the CDK's built-in template validation (warnings only) that tests/cdk runs once.
                "INFERENCE_CDK_NAG": "off",
                "INFERENCE_CDK_VALIDATION": "off",
            }
            | synth_server.env()
        )
        with emulated_aws(scratch, env) as emulator:
            emulator.bedrock = bedrock
            yield emulator


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> str:
    """The Session Manager plugin's stand-in (stand_in_plugin.py), as an executable on a path."""
    path = tmp_path_factory.mktemp("plugin") / "session-manager-plugin"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STAND_IN_PLUGIN}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)
