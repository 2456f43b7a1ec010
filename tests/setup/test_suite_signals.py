"""The suite tests Ctrl-C with a real SIGINT to real commands, however the run itself was started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]

# The suite's conftest imported in a process that ignores SIGINT (an `&` job of a non-interactive
# shell, a benchmark harness), then a child started: what the child does with SIGINT.
STARTED_IGNORING = """
import signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
import tests.conftest
probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
print(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip())
"""


def test_a_run_started_with_sigint_ignored_still_hands_ctrl_c_to_its_children():
    run = subprocess.run(
        [sys.executable, "-c", STARTED_IGNORING], cwd=PROJECT, capture_output=True, text=True, timeout=60, check=False
    )
    assert (run.returncode, run.stdout.strip()) == (0, "True"), run.stderr[-2000:]
