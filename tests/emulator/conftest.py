"""The moto emulator in server mode on loopback, one per test module, its state reset at start."""

from __future__ import annotations

import logging
import os

import pytest

from catalog.config import PLACEMENT_ENV
from tests.moto_emulator import Emulator


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    # One line per emulated request would bury a failure's message.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    scratch = tmp_path_factory.mktemp("emulator")
    emulator = Emulator().start()
    saved = dict(os.environ)
    os.environ.update(emulator.env() | {PLACEMENT_ENV: str(scratch / "placement.json")})
    os.environ.pop("AWS_CONFIG_FILE", None)
    try:
        yield emulator
    finally:
        os.environ.clear()
        os.environ.update(saved)
        emulator.stop()
