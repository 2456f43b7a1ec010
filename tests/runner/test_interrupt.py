"""Ctrl-C in the middle of a sweep: exit 130, and every level that finished is in the evidence.

The real command in its own process, interrupted by a real SIGINT while its second level waits on
a server that stopped answering; the first level's four requests must all be there."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from runner.core.files import PROJECT_ROOT
from tests.runner.fake_openai import FakeOpenAI, Step, text


def test_ctrl_c_during_a_sweep_exits_130_and_keeps_every_finished_level(tmp_path):
    # The first level's warm-up and its four timed requests are answered; from then on the server
    # hangs (the second level's warm-ups), so the interrupt lands inside the second level.
    script = [text("The ocean is wide and deep")] * 5 + [Step(kind="hang")]
    with FakeOpenAI(script) as fake:
        command = [
            sys.executable, "-m", "runner.bench", "--no-aws", "--local", "never", "--endpoint", f"fake={fake.url}",
            "--concurrency", "1,4", "--requests", "4", "--timeout", "120", "--results-dir", str(tmp_path),
        ]  # fmt: skip
        process = subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while len(fake.requests) < 6 and time.monotonic() < deadline:  # into the second level
                time.sleep(0.05)
            assert len(fake.requests) >= 6, "the sweep never reached its second level"
            process.send_signal(signal.SIGINT)
            output, _ = process.communicate(timeout=60)
        finally:
            process.kill()
    assert process.returncode == 130, output.decode()[-2000:]
    (path,) = tmp_path.glob("*/bench-*.json")
    evidence = json.loads(path.read_text())
    assert evidence["interrupted"] is True
    first = [r for r in evidence["records"] if r["level"]["label"] == "1 at a time"]
    assert [(r["run"], r["ok"]) for r in first] == [(1, True), (2, True), (3, True), (4, True)]
    assert b"interrupted" in output
