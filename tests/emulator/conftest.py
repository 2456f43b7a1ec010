"""The moto emulator in server mode on loopback, one per test module, its state reset at start,
with Bedrock's import APIs served by their loopback fake."""

from __future__ import annotations

import logging
import os

import pytest

from catalog.config import PLACEMENT_ENV
from runner.cloud.cdk_cli import CLI_DIR_ENV
from tests.aws_emulator import Emulator
from tests.emulator.cdk_cycle import cli_folder
from tests.runner.fake_bedrock_import import FakeBedrockImport


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    # One line per emulated request would bury a failure's message.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    scratch = tmp_path_factory.mktemp("emulator")
    emulator = Emulator(scratch).start()
    # Custom Model Import, which moto lacks (its ListImportedModels answers 500): the loopback fake.
    emulator.bedrock = FakeBedrockImport().__enter__()
    saved = dict(os.environ)
    os.environ.update(
        emulator.env()
        | emulator.bedrock.env()
        | {
            PLACEMENT_ENV: str(scratch / "placement.json"),  # emptied by Emulator.reset
            CLI_DIR_ENV: str(cli_folder(scratch)),
            # Every CLI synth here would run cdk-nag again on templates tests/cdk already nag.
            "INFERENCE_CDK_NAG": "off",
        }
    )
    os.environ.pop("AWS_CONFIG_FILE", None)
    try:
        yield emulator
    finally:
        os.environ.clear()
        os.environ.update(saved)
        emulator.bedrock.__exit__(None, None, None)
        emulator.stop()
