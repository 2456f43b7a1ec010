"""A stopped run keeps what it measured and leaves nothing running: real commands in their own
processes, stopped by real signals (Ctrl-C's SIGINT; SIGTERM, what a CI's cancel and `timeout`
send), at points the tests reach by events, never by a sleep.

- A level in progress keeps every request that finished, under the level marked stopped, as
  GuideLLM leaves the requests still out of its figures ("incomplete"); agent traffic keeps every
  task that finished. Against scripted servers, so exactly how many finished is known.
- On the real embedded llama.cpp server (its own session, so no signal of ours reaches it): the
  evidence holds the finished records and its process group is empty afterwards, stopped during
  timed requests, during a level, and while the model starts."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner.core.files import PROJECT_ROOT, cache_root
from tests.host.processes import child_running, group_members, running
from tests.runner.agent_model import AgentModel
from tests.runner.fake_openai import FakeOpenAI, Step, text

OCEAN = "The ocean is wide and deep"
SIGNALS = [pytest.param(signal.SIGINT, id="ctrl-c"), pytest.param(signal.SIGTERM, id="sigterm")]


def stop_when(
    argv: list[str], ready: Callable[[subprocess.Popen[bytes]], bool], signum: int, what: str, timeout_s: float = 120
) -> tuple[int, str, float]:
    """`python -m runner.<argv>` as a process, sent `signum` once `ready(process)` holds: its exit
    status, its output, and the seconds it took to end after the signal."""
    process = subprocess.Popen(
        [sys.executable, "-m", *argv], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + timeout_s
        while not ready(process) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert process.poll() is None and ready(process), f"never reached {what}"
        process.send_signal(signum)
        sent = time.monotonic()
        output, _ = process.communicate(timeout=60)
        return process.returncode, output.decode(), time.monotonic() - sent
    finally:
        process.kill()
        process.wait()


def evidence_in(folder: Path) -> dict[str, Any]:
    (path,) = folder.glob("*/bench-*.json")
    return json.loads(path.read_text())


class AnswersThenHangs(FakeOpenAI):
    """Answers every warm-up ("Hi") and the first `answered` timed requests, and holds every later
    one until the server stops: a level in progress with exactly `answered` requests finished."""

    def __init__(self, answered: int) -> None:
        super().__init__([text(OCEAN)])
        self.answered = answered
        self.timed = 0

    def respond(self, handler: Any, step: Step, body: dict[str, Any]) -> None:
        warm_up = body.get("messages") == [{"role": "user", "content": "Hi"}]
        with self._lock:
            self.timed += not warm_up
            hang = not warm_up and self.timed > self.answered
        super().respond(handler, Step(kind="hang") if hang else step, body)


@pytest.mark.parametrize("signum", SIGNALS)
@pytest.mark.parametrize(
    "workload",
    [[], ["--dataset", "{dataset}"], ["--clients", "2"]],
    ids=["sweep", "workload", "two-clients"],
)
def test_a_stopped_level_keeps_every_request_that_finished_marked_stopped(tmp_path, signum, workload):
    dataset = tmp_path / "prompts.jsonl"
    dataset.write_text('{"prompt": "Write about the sea."}\n')
    answered, streams = 3, 2
    with AnswersThenHangs(answered) as fake:
        argv = ["runner.bench", "--no-aws", "--local", "never", "--endpoint", f"fake={fake.url}", "--timeout", "120",
                "--concurrency", str(streams), "--requests", "8", "--results-dir", str(tmp_path / "results"),
                *[a.replace("{dataset}", str(dataset)) for a in workload]]  # fmt: skip
        # Each worker sends its next request once its last one ended: with two streams, the fifth
        # request goes out once the third has finished, and the fourth and fifth hang (with two
        # client processes, one stream each, alike: each hands back what finished when stopped).
        code, output, _ = stop_when(argv, lambda _: fake.timed >= answered + streams, signum, "the level's hang")
    assert code == 130, output[-3000:]
    evidence = evidence_in(tmp_path / "results")
    assert evidence["interrupted"] is True
    label = "2 at a time (stopped after 3 of 8)"
    # The three the server answered (which of the first runs they were depends on which arrived
    # first), in the level's order; the two still out are not records.
    runs = [r["run"] for r in evidence["records"]]
    assert len(runs) == 3 and runs == sorted(set(runs))
    if "--clients" in workload:
        # Each client sends every other run, its next once its last ended: what each finished is
        # the start of its own runs (1, 3, 5, ... and 2, 4, 6, ...), whichever answered first.
        for parity in (1, 0):
            own = [r for r in runs if r % 2 == parity]
            assert own == list(range(2 - parity, 2 * len(own) + 1, 2)), runs
    else:
        assert set(runs) <= {1, 2, 3, 4, 5}
    assert {(r["ok"], r["level"]["label"]) for r in evidence["records"]} == {(True, label)}
    assert {r["level"]["stopped_after"] for r in evidence["records"]} == {3}
    if "--dataset" in workload:
        (level,) = evidence["levels"]
        assert (level["label"], level["stopped_after"]) == (label, 3)
    assert "fake 2 at a time: stopped; the 3 finished kept" in output


@pytest.mark.parametrize("signum", SIGNALS)
def test_stopped_agent_traffic_keeps_every_task_that_finished_without_waiting_for_the_one_out(tmp_path, signum):
    class HangsAfter(AgentModel):
        """Every model call answered until `calls` were, then held: one session's warm-up task
        (two calls) and two timed tasks finish, the third task's first call hangs."""

        calls = 2 + 2 * 2

        def __init__(self) -> None:
            super().__init__()
            self.seen = 0

        def respond(self, handler: Any, step: Step, body: dict[str, Any]) -> None:
            with self._lock:
                self.seen += 1
                hang = self.seen > self.calls
            if hang:
                self.stop_event.wait(30)
                return
            super().respond(handler, step, body)

    with HangsAfter() as server:
        argv = ["runner.bench", "--no-aws", "--local", "never", "--endpoint", f"agent={server.url}/v1",
                "--workload", "agent", "--requests", "8", "--timeout", "120", "--results-dir", str(tmp_path)]  # fmt: skip
        code, output, took = stop_when(argv, lambda _: server.seen > server.calls, signum, "the third task")
    assert code == 130, output[-3000:]
    assert took < 15  # the hanging call (held 30 s) was not waited for
    tasks = evidence_in(tmp_path)["tasks"]
    assert [(t["task"], t["passed"], t["level"]["label"]) for t in tasks] == [
        (0, True, "1 session (stopped after 2 of 8)"),
        (1, True, "1 session (stopped after 2 of 8)"),
    ]


# --- the real embedded server ----------------------------------------------------------------


def embedded_child(parent: int) -> tuple[int, int] | None:
    """The embedded server `parent` started (its pid and start time), or None yet."""
    return child_running(parent, "runner.servers.llama_cpp")


def assert_gone(child: tuple[int, int]) -> None:
    """Neither the server nor anything in its process group (its own session) is left."""
    pid, started = child
    assert not running(pid, started), f"the embedded server (pid {pid}) is still running"
    assert group_members(pid) == []


def released(parent: int) -> int:
    """Requests the embedded server of runner process `parent` has finished (its log's lines)."""
    log = cache_root() / "models" / f"local-server-{parent}.log"
    return log.read_text(errors="replace").count("stop processing") if log.is_file() else 0


@pytest.mark.llama
def test_sigterm_during_timed_requests_on_the_embedded_model_saves_them_and_stops_it(tmp_path):
    argv = ["runner.bench", "--no-aws", "--repeats", "200", "--max-tokens", "8", "--threads", "1",
            "--results-dir", str(tmp_path)]  # fmt: skip
    seen: dict[str, Any] = {}

    def two_records(process: subprocess.Popen[bytes]) -> bool:
        seen["child"] = seen.get("child") or embedded_child(process.pid)
        paths = list(tmp_path.glob("*/bench-*.json"))
        # The file is written whole after each record (write_atomically): it reads complete.
        return bool(paths) and len(json.loads(paths[0].read_text())["records"]) >= 2

    code, output, _ = stop_when(argv, two_records, signal.SIGTERM, "two timed requests")
    assert code == 130, output[-3000:]
    assert seen["child"], "the embedded server was never seen"
    assert_gone(seen["child"])
    evidence = evidence_in(tmp_path)
    assert evidence["interrupted"] is True and evidence["local_server"]["startup_s"] > 0
    runs = [(r["run"], r["ok"]) for r in evidence["records"]]
    assert len(runs) >= 2 and runs == [(n, True) for n in range(1, len(runs) + 1)]


@pytest.mark.llama
def test_sigterm_during_a_level_on_the_embedded_model_keeps_what_finished_and_stops_it(tmp_path):
    argv = ["runner.bench", "--no-aws", "--concurrency", "2", "--requests", "200", "--max-tokens", "8",
            "--threads", "1", "--results-dir", str(tmp_path)]  # fmt: skip
    seen: dict[str, Any] = {}

    def into_the_level(process: subprocess.Popen[bytes]) -> bool:
        seen["child"] = seen.get("child") or embedded_child(process.pid)
        seen["released"] = released(process.pid)
        return seen["released"] >= 2 + 3  # the level's two warm-ups, then three of its requests

    code, output, _ = stop_when(argv, into_the_level, signal.SIGTERM, "three requests of the level")
    assert code == 130, output[-3000:]
    assert_gone(seen["child"])
    records = evidence_in(tmp_path)["records"]
    # What the server had finished when the signal went, but the one its client may not have read
    # to its end yet; nothing of a complete level.
    assert len(records) >= seen["released"] - 2 - 1 and all(r["ok"] for r in records)
    assert {r["level"]["label"] for r in records} == {f"2 at a time (stopped after {len(records)} of 200)"}


@pytest.mark.llama
@pytest.mark.parametrize("signum", SIGNALS)
def test_a_signal_while_the_embedded_model_starts_leaves_no_server_running(tmp_path, signum):
    argv = ["runner.bench", "--no-aws", "--repeats", "1", "--threads", "1", "--results-dir", str(tmp_path)]
    seen: dict[str, Any] = {}

    def spawned(process: subprocess.Popen[bytes]) -> bool:
        seen["child"] = seen.get("child") or embedded_child(process.pid)
        return seen["child"] is not None

    code, output, _ = stop_when(argv, spawned, signum, "the embedded server's start")
    assert code == 130, output[-3000:]
    assert "started in" not in output  # stopped while it started, not after
    assert_gone(seen["child"])
