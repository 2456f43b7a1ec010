"""The suite's xdist groups hold: tests of one group run on one worker, in one process.

The emulator modules and the vLLM tier depend on it (moto's state and the tier's one server are per
process). pytest 9.2 with pytest-xdist 3.8.0 ignores every group without a word (pytest-xdist#1386),
which is why pytest is pinned at 9.1.1: this fails if a new pin brings that back.
"""

from __future__ import annotations

import os
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


TIER_LATER = """
import os
from pathlib import Path

import pytest

STATE = Path(os.environ["INFERENCE_VLLM_STATE"])

@pytest.mark.parametrize("n", range(4))
@pytest.mark.xdist_group("vllm")
def test_tier(n):
    assert STATE.is_file(), "handed out before its server wrote its state"

@pytest.mark.parametrize("n", range(12))
def test_free(n):
    pass
"""

# The background server lives in the controller: it writes its state there, once two of the other
# tests have been reported. The queue holds other work until well after that (a worker is handed
# a unit only once it has finished its last), so only the scheduler decides when the tier runs.
SERVER_IN_THE_CONTROLLER = """
import os
from pathlib import Path

from tests.vllm.scheduling import pytest_xdist_make_scheduler  # noqa

STATE = Path(os.environ["INFERENCE_VLLM_STATE"])
reported = []


def pytest_configure(config):
    reported.append(hasattr(config, "workerinput"))  # first: whether this process is a worker


def pytest_runtest_logreport(report):
    if reported[0] or report.when != "call":
        return
    reported.append(report.nodeid)
    if len(reported) == 3:
        STATE.write_text('{"port": 1}')
"""


def test_the_vllm_tier_is_handed_out_once_its_server_is_up(tmp_path: Path):
    """Without tests/vllm/scheduling.py, loadgroup hands the tier's group (the largest unit) out
    first, and its tests would run before the state file exists."""
    (tmp_path / "conftest.py").write_text(SERVER_IN_THE_CONTROLLER)
    (tmp_path / "test_tier.py").write_text(TIER_LATER)
    env = dict(os.environ, INFERENCE_VLLM_STATE=str(tmp_path / "state.json"), PYTHONPATH=str(PROJECT))
    run = two_workers(tmp_path, env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "16 passed" in run.stdout


TIER_STOPS = """
import os
from pathlib import Path

import pytest

MARKS = Path(os.environ["MARKS"])

@pytest.mark.parametrize("n", range(3))
@pytest.mark.xdist_group("vllm")
def test_tier(n):
    (MARKS / f"tier-{n}").write_text("")

@pytest.mark.parametrize("n", range(12))
def test_free(n):
    pass
"""

RECORDING_CONFTEST = """
import os
from pathlib import Path

from tests.vllm.scheduling import pytest_xdist_make_scheduler  # noqa

MARKS = Path(os.environ["MARKS"])


class StopRecorder:
    def stop_soon(self):
        with (MARKS / "stopped").open("a") as record:
            record.write(",".join(sorted(p.name for p in MARKS.glob("tier-*"))) + "\\n")


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the controller, where the background server lives
        config.vllm_background = StopRecorder()
"""


def test_the_vllm_tiers_server_is_stopped_once_its_last_test_has_finished(tmp_path: Path):
    """The scheduler asks the background server to stop once, when every test of the tier has
    finished (not at the run's end: this conftest's controller stops nothing itself)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "conftest.py").write_text(RECORDING_CONFTEST)
    (tmp_path / "test_tier.py").write_text(TIER_STOPS)
    env = dict(os.environ, MARKS=str(marks), PYTHONPATH=str(PROJECT))
    env.pop("INFERENCE_VLLM_STATE", None)
    run = two_workers(tmp_path, env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (marks / "stopped").read_text().splitlines() == ["tier-0,tier-1,tier-2"]
