"""The emulator's synth server (synth_server.py): a synth through it makes the cloud assembly an
app process of its own makes, through the real CLI; bad input, a bad context and a crash end as
they end in a process of its own (exit status, one line or a traceback); a relative output folder
is the caller's; nothing of one call reaches the next; with no server the app runs itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.cloud.cdk_cli import CLI_DIR_ENV, cdk
from runner.core.files import PROJECT_ROOT
from tests.emulator.cdk_cycle import cli_folder
from tests.emulator.synth_server import CLIENT, SOCKET_ENV

pytestmark = pytest.mark.emulator
APP = PROJECT_ROOT / "app.py"


def call(env: dict[str, str], cwd: Path, context: dict | None = None) -> subprocess.CompletedProcess[str]:
    """The app as the CLI starts it: cdk.json's command, the context in CDK_CONTEXT_JSON."""
    full = dict(os.environ) | env
    if context is not None:
        full["CDK_CONTEXT_JSON"] = json.dumps(context)
    return subprocess.run(
        [sys.executable, "-I", "-S", str(CLIENT), str(APP)],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assembly(folder: Path) -> dict[str, str]:
    """What a deploy reads: every template, every asset manifest, the assembly's manifest."""
    names = [*folder.glob("*.template.json"), *folder.glob("*.assets.json"), folder / "manifest.json"]
    return {path.name: path.read_text() for path in sorted(names)}


def test_a_synth_through_the_cli_makes_the_assembly_an_app_process_makes(synth_server, tmp_path, monkeypatch):
    made = {}
    # No time-to-live (ttlHours=0): nothing in the templates depends on the minute they were made.
    for mode, app in (("server", synth_server.app_command()), ("process", f"{sys.executable} {APP}")):
        folder = cli_folder(tmp_path / mode, app)
        monkeypatch.setenv(CLI_DIR_ENV, str(folder))
        env = synth_server.env() | {"INFERENCE_CDK_NAG": "off", "INFERENCE_CDK_VALIDATION": "off"}
        result = cdk(["synth", "--quiet", "-c", "ttlHours=0"], env=env)
        assert result.returncode == 0, result.output
        made[mode] = assembly(folder / "cdk.out")
    assert (
        len(made["server"]) == 13
    )  # six stacks (four and two regions' store stacks): templates, asset manifests; the manifest
    assert made["server"] == made["process"]


@pytest.mark.parametrize("served", [True, False], ids=["server", "process"])
def test_bad_input_a_bad_context_and_a_crash_end_as_in_a_process_of_its_own(synth_server, tmp_path, served):
    env = synth_server.env() if served else {SOCKET_ENV: str(tmp_path / "nobody-listens")}
    env |= {"CDK_OUTDIR": str(tmp_path / "out"), "INFERENCE_CDK_NAG": "off", "INFERENCE_CDK_VALIDATION": "off"}
    unknown = call(env, tmp_path, {"backends": "g6,tpu"})
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines()[-1].startswith("error: context backends: unknown backend 'tpu'")
    switch = call(env | {"INFERENCE_CDK_NAG": "no"}, tmp_path, {})
    assert (switch.returncode, switch.stderr.strip().splitlines()[-1]) == (
        2,
        "error: INFERENCE_CDK_NAG must be on or off, not 'no'",
    )
    # Context that is not JSON: App itself fails, with a traceback, as an uncaught error does.
    broken = call(env | {"CDK_CONTEXT_JSON": "{not json"}, tmp_path)
    assert broken.returncode == 1 and "Traceback" in broken.stderr, broken.stderr[-2000:]
    # The calls before changed nothing for this one: its own context, its own output folder.
    good = call(env | {"CDK_OUTDIR": "relative-out"}, tmp_path, {"backends": "g6"})
    assert good.returncode == 0, good.stderr[-2000:]
    assert "time-to-live" in good.stderr
    template = json.loads((tmp_path / "relative-out" / "InferenceGpuStack.template.json").read_text())
    assert sorted(k for k in template["Outputs"] if k.startswith("Backend")) == ["BackendG6"]
    assert not (PROJECT_ROOT / "relative-out").exists()
