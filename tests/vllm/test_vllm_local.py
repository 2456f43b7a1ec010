"""`python -m runner.vllm_local` stopped by SIGTERM (a CI's cancel, `timeout`), not only Ctrl-C: the
real vLLM it serves (a process group of its own, so the signal to the runner never reaches it) is
stopped, nothing of its group is left, and the runner exits 130."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
import time

import httpx

from runner.core.files import PROJECT_ROOT
from tests.host.processes import child_running, group_members, running, stat_fields

READY = re.compile(r"vLLM \S+ on (http://127\.0\.0\.1:\d+/v1) \(ready in \d+ s\); Ctrl-C stops it")


def test_sigterm_stops_the_served_vllm_and_its_whole_process_group(vllm_server):
    # After the run's own server is up: the checkpoint is converted, and two engines never load at once.
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
    pid, started = server
    assert not running(pid, started)
    # Nothing of its group runs (one that ended and waits to be reaped by init is not running).
    assert [member for member in group_members(pid) if (stat_fields(member) or ["Z"])[0] != "Z"] == []
