"""The forwards state file: every command finds runner.forward's servers through it, trusts only
live plugin processes, and survives a damaged file."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from runner.cli.options import CommonOptions
from runner.cli.session import discover
from runner.cloud.reach.forwards_file import (
    SESSION_RESPONSE_VARIABLE,
    Forward,
    forwards_file,
    live_forwards,
    process_alive,
    write_forwards,
)

G6_OUTPUT = {
    "name": "g6",
    "kind": "ec2-vllm",
    "region": "us-east-1",
    "model_id": "m",
    "port": 8000,
    "health_path": "/health",
    "auto_scaling_group": "InferenceGpuStack-G6Group",
    "readiness_parameter": "/inference/g6/ready",
    "instance_type": "g6.xlarge",
    "contract": 2,
}


@pytest.fixture
def plugin_like():
    """A process whose command line carries the plugin's marker, as every plugin the runner starts does."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", SESSION_RESPONSE_VARIABLE], start_new_session=True
    )
    deadline = time.monotonic() + 10
    while not process_alive(child.pid) and time.monotonic() < deadline:
        time.sleep(0.01)  # until the interpreter has replaced the forked copy of this one
    yield child
    child.kill()
    child.wait()


def forward_entry(pid: int, port: int = 18001) -> Forward:
    return Forward("g6", pid, port, 8000, "i-0123", "us-east-1", "s-1", "2026-11-30T00:00:00Z", "log", G6_OUTPUT)


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_only_live_plugin_processes_count(plugin_like, platform, monkeypatch):
    """By /proc on Linux, by POSIX `ps` where there is none (macOS): the same answer."""
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setenv("COLUMNS", "40")  # ps cuts its lines to the terminal's width unless told not to
    finished = subprocess.Popen([sys.executable, "-c", "pass", SESSION_RESPONSE_VARIABLE])
    finished.wait()
    # This test's own process is alive but is not a plugin (a reused PID must not count).
    write_forwards([forward_entry(plugin_like.pid), forward_entry(finished.pid), forward_entry(os.getpid())])
    try:
        assert [f.pid for f in live_forwards()] == [plugin_like.pid]
        assert process_alive(plugin_like.pid) and not process_alive(finished.pid)
    finally:
        write_forwards([])
    assert not forwards_file().exists()


def test_without_aws_the_forwarded_servers_are_found_on_their_ports(plugin_like):
    write_forwards([forward_entry(plugin_like.pid, port=18001)])
    try:
        found = discover(CommonOptions(aws=False, local="never"))
    finally:
        write_forwards([])
    (g6,) = found.backends
    assert g6.base_url == "http://127.0.0.1:18001/v1" and g6.source == "stack output"
    assert any(note.startswith(f"forwarded by runner.forward (pid {plugin_like.pid}") for note in g6.notes)
    # --forward still wins over the state file.
    write_forwards([forward_entry(plugin_like.pid, port=18001)])
    try:
        found = discover(CommonOptions(aws=False, local="never", forwards={"g6": 18555}))
    finally:
        write_forwards([])
    assert found.backends[0].base_url == "http://127.0.0.1:18555/v1"


def test_a_damaged_state_file_is_a_notice_not_a_stop():
    forwards_file().write_text("{not json")
    try:
        found = discover(CommonOptions(aws=False, local="never"))
    finally:
        forwards_file().unlink()
    assert found.backends == []
    assert any("forwards file" in n and "runner.forward --stop" in n for n in found.notices)
