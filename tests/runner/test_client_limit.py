"""The client proven not to be the limit: each level keeps its client's event-loop lag and CPU, a
level whose client saturated is marked not the server's figure (the table says why, the capacity
search stops at it, the headline leaves it out), and `--clients K` spreads a level over K client
processes whose records make one distribution.

The starvation is a hook on the client's own loop that burns the CPU 200 ms at a time with 20 ms
between: every wake of the loop's timer that falls in a burn is late by up to 200 ms, four times
the 50 ms limit, however loaded the machine (a loaded machine only makes it later)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner import bench
from runner.core.records import records_of
from runner.figures.levels import level_groups, level_summary
from runner.measure import workload_run
from runner.measure.bench_file import BenchFile
from runner.render.bench import workload_table
from runner.render.headline import headline_rows
from runner.timing.client_load import CPU_JUDGED_S, CPU_SHARE_LIMIT, LAG_LIMIT_S, LATE_SHARE, LATE_WAKES, ClientLoad
from tests.runner.known_server import known, known_server

BASE_TTFT = 0.05
RATE = 100.0
OUTPUT = 20
# One request's time at the server, alone: its first token, then the rest at the set rate.
ONE_REQUEST_S = BASE_TTFT + (OUTPUT - 1) / RATE
BURN_S, BETWEEN_S = 0.2, 0.02


def run(tmp_path: Path, server, *argv: str, endpoint: str | None = None) -> tuple[int, dict[str, Any]]:
    results = tmp_path / "results"
    code = bench.run(
        ["--endpoint", endpoint or server.endpoint, "--no-aws", "--local", "never", "--input-tokens", "50",
         "--output-tokens", str(OUTPUT), *argv, "--results-dir", str(results)]
    )  # fmt: skip
    (path,) = sorted(results.glob("*/bench-*.json"))[-1:]
    return code, json.loads(path.read_text())


def table_rows(evidence: dict[str, Any]) -> list[dict[str, str]]:
    """The workload table's rows, cell by column (as drawn, wide enough for no wrapping)."""
    table = workload_table(BenchFile.from_json(evidence))
    columns = [str(column.header).replace("\n", " ") for column in table.columns]
    cells = [list(column.cells) for column in table.columns]
    return [dict(zip(columns, [str(c[n]) for c in cells], strict=True)) for n in range(table.row_count)]


async def burn_the_loop() -> None:
    while True:
        until = time.perf_counter() + BURN_S
        while time.perf_counter() < until:
            pass
        await asyncio.sleep(BETWEEN_S)


@contextlib.contextmanager
def starved_from(monkeypatch: pytest.MonkeyPatch, in_flight: int) -> Iterator[None]:
    """Every level that keeps at least `in_flight` requests out runs with the hook on its loop."""
    real = workload_run.run_level_async

    async def starved(chat, explain, backend, level, *args: Any, **kwargs: Any):
        if level.in_flight < in_flight:
            return await real(chat, explain, backend, level, *args, **kwargs)
        burner = asyncio.get_running_loop().create_task(burn_the_loop())
        try:
            return await real(chat, explain, backend, level, *args, **kwargs)
        finally:
            burner.cancel()

    monkeypatch.setattr(workload_run, "run_level_async", starved)
    yield


def test_a_starved_client_marks_its_level_and_the_same_level_unstarved_is_the_servers(tmp_path, monkeypatch):
    level = ["--concurrency", "2", "--requests", "12"]
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500) as server:
        # As g6 (a catalog row, so the headline prices it at the offline prices).
        g6 = f"g6={server.url}/v1,model={known.MODEL}"
        code, fed = run(tmp_path / "fed", server, *level, endpoint=g6)
        with starved_from(monkeypatch, 1):
            code_starved, starved = run(tmp_path / "starved", server, *level, endpoint=g6)
    assert code == code_starved == 0
    (fed_level,) = BenchFile.from_json(fed).levels or []
    (starved_level,) = BenchFile.from_json(starved).levels or []
    (fed_load,) = fed_level.clients or []
    (starved_load,) = starved_level.clients or []
    # Read over the level: its loop woke, and it kept up.
    assert fed_load.lag_samples > 0 and fed_load.wall_s >= 6 * ONE_REQUEST_S
    assert fed_level.client_limit is None, fed_load
    # Starved: its loop ran late at p99 by more than the limit; the level is not the server's.
    assert starved_load.lag_p99_ms is not None and starved_load.lag_p99_ms > LAG_LIMIT_S * 1000
    assert starved_load.lag_late >= max(LATE_WAKES, LATE_SHARE * starved_load.lag_samples)
    assert starved_level.client_limit is not None
    # The table marks it, says why, and gives it no goodput of the server's.
    (row,) = table_rows(starved)
    assert row["load"] == "50 in, 2 at a time (client-limited)" and row["goodput"] == "not the server's"
    assert f"not the server's figure: {starved_level.client_limit}" in row["notes"]
    (row,) = table_rows(fed)
    assert row["load"] == "50 in, 2 at a time" and "not the server's" not in row["notes"]
    # The headline takes no figure from it, speed or price: the fed run's level gives both.
    (fed_row,) = headline_rows([(tmp_path / "fed.json", BenchFile.from_json(fed))])
    (starved_row,) = headline_rows([(tmp_path / "starved.json", BenchFile.from_json(starved))])
    assert fed_row.stream_tok_s.value is not None and fed_row.usd_per_million.value is not None
    assert starved_row.stream_tok_s.value is None and starved_row.ttft_s.value is None
    assert starved_row.usd_per_million.value is None
    assert starved_row.usd_per_million.why == "every level priced was client-limited: not the server's figure"


LATE = "the client's event loop ran more than 50 ms late on"


@pytest.mark.parametrize(
    ("load", "why"),
    [
        (ClientLoad(1.0, 60.0, 80.0, 100, 5, 0.2, 1.0, 0.2), f"{LATE} 5 of its 100 wakes (5%; p99 60 ms; the limit is 5% of them)"),
        (ClientLoad(1.0, 300.0, 400.0, 20, 3, 0.1, 1.0, 0.1), f"{LATE} 3 of its 20 wakes (15%; p99 300 ms; the limit is 5% of them)"),
        (ClientLoad(1.0, 5.0, 9.0, 100, 0, 0.95, 1.0, 0.95, client=2), "client 2 used 95% of a core (limit 90%)"),
        # Late on too few wakes (a busy machine's stalls); below the CPU limit; a burst too short to judge.
        (ClientLoad(1.0, 80.0, 400.0, 100, 4, 0.89, 1.0, 0.89), None),
        (ClientLoad(1.0, 300.0, 400.0, 20, 2, 0.1, 1.0, 0.1), None),
        (ClientLoad(1.0, 5.0, 9.0, 20, 0, 0.2, 0.2, 1.0), None),
    ],
)  # fmt: skip
def test_a_client_saturates_past_either_limit_and_says_which(load, why):
    assert (LAG_LIMIT_S, LATE_SHARE, LATE_WAKES, CPU_SHARE_LIMIT, CPU_JUDGED_S) == (0.05, 0.05, 3, 0.9, 1.0)
    assert load.saturated == why


def test_the_capacity_search_stops_at_a_client_limited_level_and_answers_the_last_valid_one(
    tmp_path, monkeypatch, capsys
):
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500) as server, starved_from(monkeypatch, 4):
        code, evidence = run(tmp_path, server, "--goodput", "e2el:10000", "--find-capacity", "--requests", "8")
    assert code == 0
    (found,) = BenchFile.from_json(evidence).capacity or []
    # 1 and 2 met (a generous objective); 4 was starved: no figure of the server's, met or missed.
    assert [(t.value, t.met, t.client_limit is not None) for t in found.tried] == [
        (1, True, False),
        (2, True, False),
        (4, False, True),
    ]
    assert found.capacity == 2
    assert found.stopped.startswith("the client was the limit at 4, not the server")
    assert "4 (client-limited)" in capsys.readouterr().out


def test_two_client_processes_send_the_level_as_one_distribution_of_the_servers_speed(tmp_path):
    level = ["--concurrency", "4", "--requests", "8", "--goodput", "e2el:10000"]
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500) as server:
        code_one, one = run(tmp_path / "one", server, *level)
        code_two, two = run(tmp_path / "two", server, *level, "--clients", "2")
    assert code_one == code_two == 0
    records_one, records_two = records_of(one), records_of(two)
    assert len(records_two) == len(records_one) == 8
    # Each request once, each saying which client sent it: every other request from each.
    assert sorted(r.run for r in records_two) == list(range(1, 9))
    assert {r.run: r.client for r in records_two} == {run: 2 - run % 2 for run in range(1, 9)}
    assert all(r.ok and r.output_tokens == OUTPUT for r in records_two)
    # The merged distribution is the server's: no request faster than the server makes it, four
    # in flight at once in two waves, so the level lasts at least two requests' time and carries
    # at most four requests per request time.
    ((_, merged),) = level_groups(records_two).items()
    summary = level_summary(merged)
    assert all(r.ttft_s >= BASE_TTFT and r.e2e_s >= ONE_REQUEST_S for r in merged)
    assert ONE_REQUEST_S <= summary.e2e_s.median < 2 * ONE_REQUEST_S
    assert summary.duration_s >= 2 * ONE_REQUEST_S
    assert summary.request_throughput <= 4 / ONE_REQUEST_S
    # Each client's loop lag and CPU kept, one entry each.
    (readings,) = BenchFile.from_json(two).levels or []
    assert sorted(load.client for load in readings.clients or []) == [1, 2]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--clients", "0"], "--clients 0: at least 1 client process"),
        (["--clients", "-2"], "--clients -2: at least 1 client process"),
        (["--concurrency", "2,8", "--clients", "3"], "--clients 3: more client processes than the 2 requests"),
        (["--input-tokens", "100", "--clients", "2"], "--clients 2: spreads a load level over processes"),
        (["--workload", "agent", "--clients", "2"], "--workload agent takes --concurrency"),
    ],
)
def test_bad_clients_are_one_line_before_anything_is_sent(argv, line, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main_guard(lambda: bench.run([*argv, "--no-aws", "--local", "never"]))
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and line in err[0], err
