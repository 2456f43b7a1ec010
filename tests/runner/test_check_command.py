"""`runner.check`: exit status from what passed, and one wait for every backend at once."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from runner import check
from runner.core.evidence import load
from tests.runner.fake_openai import FakeOpenAI, Step, text, tool_call


def run_check(tmp_path: Path, *flags: str) -> tuple[int, dict]:
    code = check.run(["--no-aws", "--local", "never", "--results-dir", str(tmp_path), "--timeout", "5", *flags])
    (path,) = tmp_path.glob("*/check-*.json")
    return code, load(path)


def test_check_passes_a_plain_answer_and_a_tool_call(tmp_path):
    script = [text("Paris"), tool_call("add_numbers", {"a": 17, "b": 25}), text("The result is 42.")]
    with FakeOpenAI(script) as fake:
        code, evidence = run_check(tmp_path, "--endpoint", f"good={fake.url}")
    (record,) = evidence["records"]
    assert code == 0 and record["plain_ok"] is True and record["tool_ok"] is True
    assert record["tool_args_seen"] == [{"a": 17, "b": 25}]


def test_reaching_a_server_is_not_passing_exit_1(tmp_path):
    # The server answers every call, but with an empty plain answer and no tool call: nothing passed.
    with FakeOpenAI([text("", usage_tokens=1)]) as fake:
        code, evidence = run_check(tmp_path, "--endpoint", f"mute={fake.url}")
    (record,) = evidence["records"]
    assert record["reached"] is True and record["plain_ok"] is False and record["tool_ok"] is False
    assert code == 1


def test_a_tool_call_stopped_by_the_limits_is_not_a_pass(tmp_path):
    # Right arguments, again and again: the limits stop the loop and the check fails.
    script = [text("Paris"), tool_call("add_numbers", {"a": 17, "b": 25})]
    with FakeOpenAI(script) as fake:
        code, evidence = run_check(tmp_path, "--endpoint", f"loop={fake.url}")
    (record,) = evidence["records"]
    assert {"a": 17, "b": 25} in record["tool_args_seen"]
    assert "runaway tool loop" in record["tool"]["error"] and record["tool_ok"] is False
    assert code == 0  # the plain answer passed


def test_wait_covers_every_backend_at_once(tmp_path):
    # Each server turns healthy only once the OTHER one has been polled: waiting on one backend
    # after the other never sees the first healthy, so both must be waited on together.
    polled = {"a": threading.Event(), "b": threading.Event()}
    script = [text("Paris"), tool_call("add_numbers", {"a": 17, "b": 25}), text("42")]
    with FakeOpenAI(script) as a, FakeOpenAI(script) as b:

        def health_of(me: str, other: str):
            def health() -> int:
                polled[me].set()
                return 200 if polled[other].is_set() else 503

            return health

        a.health, b.health = health_of("a", "b"), health_of("b", "a")
        code, evidence = run_check(tmp_path, "--wait", "8", "--endpoint", f"a={a.url}", "--endpoint", f"b={b.url}")
    records = {r["backend"]: r for r in evidence["records"]}
    assert records["a"]["health"]["healthy"] is True and records["b"]["health"]["healthy"] is True
    assert max(r["health"]["waited_s"] for r in records.values()) < 6
    assert code == 0


def test_an_unhealthy_backend_reports_what_it_last_saw(tmp_path):
    with FakeOpenAI([Step(kind="text", text="Paris")]) as fake:
        fake.health = lambda: 503
        code, evidence = run_check(tmp_path, "--wait", "1", "--endpoint", f"loading={fake.url}")
    (record,) = evidence["records"]
    assert record["error"] == "not healthy: HTTP 503" and code == 1


def test_check_says_each_step_as_it_goes_with_its_time(tmp_path, capsys):
    """The wait for health, then per backend the plain answer and the tool call, each said as it
    starts and as it ends with how it went and how long it took (here, without a terminal, as lines)."""
    script = [text("Paris", delay_s=0.3), tool_call("add_numbers", {"a": 17, "b": 25}), text("The result is 42.")]
    with FakeOpenAI(script) as fake:
        code, _ = run_check(tmp_path, "--endpoint", f"good={fake.url}")
    assert code == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    wanted = [
        r"waiting for health: good …",
        r"waiting for health: good: 1 of 1 healthy \(\d+\.\d s\)",
        r"good: healthy after \d+\.\d s \(HTTP 200\)",
        r"good: the plain answer …",
        r"good: the plain answer: passed \((\d+\.\d) s\)",
        r"good: the tool call …",
        r"good: the tool call: passed \(\d+\.\d s\)",
    ]
    said = [line for line in lines if any(re.fullmatch(pattern, line) for pattern in wanted)]
    assert len(said) == len(wanted), lines
    for pattern, line in zip(wanted, said, strict=True):
        assert re.fullmatch(pattern, line), (pattern, line)
    # The plain answer's time is its own: at least the server's scripted 0.3 s.
    assert float(re.fullmatch(wanted[4], said[4]).group(1)) >= 0.3
