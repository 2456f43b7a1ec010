"""`python -m runner.vllm_local` stopped by SIGTERM (a CI's cancel, `timeout`), not only Ctrl-C: the
real vLLM it serves (a process group of its own, so the signal to the runner never reaches it) is
stopped, nothing of its group is left, and the runner exits 130.

The tier's own server is that command (tests/vllm/background.py), so this test stops it, after
every other test of the tier (tests/conftest.py orders it last); where the tier's server is not
ours (`INFERENCE_VLLM_PORT`, or this file run alone), it starts one of its own.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from runner.core.files import PROJECT_ROOT
from tests.host.processes import child_running, group_members, running, stat_fields
from tests.vllm.background import READY, STATE_ENV


def nothing_left_of(server: tuple[int, int]) -> None:
    pid, started = server
    assert not running(pid, started)
    # Nothing of its group runs (one that ended and waits to be reaped by init is not running).
    assert [member for member in group_members(pid) if (stat_fields(member) or ["Z"])[0] != "Z"] == []


def stop_our_own() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "runner.vllm_local"], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.decode()) for line in process.stdout], daemon=True).start()
    try:
        deadline, seen, url = time.monotonic() + 900, [], None
        while url is None and time.monotonic() < deadline and process.poll() is None:
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                continue
            found = READY.search(seen[-1])
            url = found[1] if found else None
        assert url, "".join(seen)[-3000:]
        server = child_running(process.pid, "vllm.entrypoints.openai.api_server")
        assert server is not None
        assert httpx.get(url.removesuffix("/v1") + "/health", timeout=10).status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=90) == 130
    finally:
        process.kill()
        process.wait()
    nothing_left_of(server)


@pytest.mark.stops_the_tier_server
def test_sigterm_stops_the_served_vllm_and_its_whole_process_group(vllm_server):
    state = json.loads(Path(os.environ[STATE_ENV]).read_text()) if os.environ.get(STATE_ENV) else {}
    if "runner" not in state:
        stop_our_own()
        return
    pid, started = state["runner"]
    assert running(pid, started), "runner.vllm_local ended before the test stopped it"
    server = child_running(pid, "vllm.entrypoints.openai.api_server")
    assert server is not None
    assert httpx.get(f"http://127.0.0.1:{state['port']}/health", timeout=10).status_code == 200
    os.kill(pid, signal.SIGTERM)
    ended = Path(os.environ[STATE_ENV]).with_name("exit.json")
    deadline = time.monotonic() + 90
    while not ended.is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ended.is_file(), "runner.vllm_local still runs 90 s after SIGTERM"
    exit_ = json.loads(ended.read_text())
    assert exit_["code"] == 130, exit_["said"]
    nothing_left_of(server)
