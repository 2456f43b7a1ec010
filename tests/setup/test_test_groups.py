"""The suite's xdist groups hold: tests of one group run on one worker, in one process.

The emulator modules and the vLLM tier depend on it (moto's state and the tier's one server are per
process). pytest 9.2 with pytest-xdist 3.8.0 ignores every group without a word (pytest-xdist#1386),
which is why pytest is pinned at 9.1.1: this fails if a new pin brings that back.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]

GROUPED = """
import os
import pytest

@pytest.mark.parametrize("n", range(6))
@pytest.mark.xdist_group("one")
def test_grouped(n, tmp_path_factory):
    (WORKERS / f"{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])

@pytest.mark.parametrize("n", range(6))
def test_free(n):
    pass
"""


def two_workers(folder: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """pytest on `folder`'s tests, two workers, `--dist loadgroup` as `make test` runs it."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-o",
            "addopts=",
        ],
        check=False,
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_group_runs_on_one_worker(tmp_path: Path):
    workers = tmp_path / "workers"
    workers.mkdir()
    (tmp_path / "test_grouped.py").write_text(f"from pathlib import Path\nWORKERS = Path({str(workers)!r})\n{GROUPED}")
    run = two_workers(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    ran_on = {path.read_text() for path in workers.iterdir()}
    assert len(list(workers.iterdir())) == 6
    assert len(ran_on) == 1, f"group 'one' ran on {sorted(ran_on)}"
