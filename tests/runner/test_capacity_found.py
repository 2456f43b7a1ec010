"""A capacity search typed as its evidence holds it (runner/figures/capacity.py): a real search
(`find_capacity` over levels whose summaries are set here) writes exactly the entry the bench wrote
before it was typed (keys, values and their order), reads back through `from_json` and writes the
same again; a malformed entry is refused in one line that names its backend."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runner.core.errors import RunnerError
from runner.figures.capacity import CapacityFound, Tried, capacity_of
from runner.figures.latency import distribution
from runner.figures.levels import LevelSummary, token_figures
from runner.measure.bench_file import BenchFile
from runner.measure.capacity import Budget, Search, find_capacity
from runner.workloads.slo import Goodput


def summary(share_met: float, output_tok_s: float, requests: int = 8) -> LevelSummary:
    """A level's summary as `level_summary` returns it, with the figures the search records."""
    none = distribution([])
    good = Goodput(requests, round(share_met * requests), share_met, share_met * output_tok_s / 100, {}, None)
    return LevelSummary(
        requests=requests, completed=requests, failed=0, duration_s=None, request_throughput=output_tok_s / 100,
        output_tok_s=output_tok_s, ttft_s=none, itl_s=none, itl_method=[], tpot_s=none, e2e_s=none,
        max_send_lag_s=None, first_error=None, tokens=token_figures([]), prefill_tok_s=None, goodput=good,
    )  # fmt: skip


def concurrency_search() -> Search:
    """Meets up to 3 in flight: 1, 2 met, 4 missed, 3 met."""
    return find_capacity(
        lambda value: summary(1.0 if value <= 3 else 0.5, 100.0 * value), mode="concurrency", slo_share=0.9
    )


def rate_search() -> Search:
    """Meets up to 0.3 requests/s: from 1/s down to 0.25, then the gap narrowed."""
    return find_capacity(
        lambda rate: summary(1.0 if rate <= 0.3 else 0.0, rate * 100), mode="rate", slo_share=0.9, budget=Budget(20)
    )


def missed_search() -> Search:
    return find_capacity(lambda value: summary(0.0, 100.0), mode="concurrency", slo_share=0.9)


def tried(value: float, share_met: float) -> dict[str, float | bool]:
    """A tried level's entry as `summary` above makes it: 100 output tok/s per unit of the level,
    requests a second the output over 100 tokens a request, goodput the share met of them."""
    return {"value": value, "met": share_met >= 0.9, "share_met": share_met, "output_tok_s": 100.0 * value,
            "request_throughput": 100.0 * value / 100, "goodput_rps": share_met * value}  # fmt: skip


# The entries each search is kept as, written out: the search's mode, share and capacity, the
# tried level at the capacity, every level tried in order, how it stopped, then the backend,
# input length and label (the keys the bench wrote before the entry was typed, in that order).
WRITTEN = {
    "100 in, 3 at a time": {
        "mode": "concurrency", "slo_share": 0.9, "capacity": 3, "at_capacity": tried(3, 1.0),
        "tried": [tried(1.0, 1.0), tried(2.0, 1.0), tried(4.0, 0.5), tried(3, 1.0)],
        "stopped": "between 3 (met) and 4 (missed)",
    },
    "100 in, 0.28/s": {
        "mode": "rate", "slo_share": 0.9, "capacity": 0.296875, "at_capacity": tried(0.296875, 1.0),
        "tried": [tried(1.0, 0.0), tried(0.5, 0.0), tried(0.25, 1.0), tried(0.375, 0.0), tried(0.3125, 0.0),
                  tried(0.28125, 1.0), tried(0.296875, 1.0)],
        "stopped": "between 0.296875 (met) and 0.3125 (missed)",
    },
    None: {
        "mode": "concurrency", "slo_share": 0.9, "capacity": None, "at_capacity": None, "tried": [tried(1.0, 0.0)],
        "stopped": "no level met the objectives for 90% of its requests (the first, 1, did not)",
    },
}  # fmt: skip


@pytest.mark.parametrize(
    ("search", "label"),
    [(concurrency_search, "100 in, 3 at a time"), (rate_search, "100 in, 0.28/s"), (missed_search, None)],
)
def test_a_search_writes_the_entry_as_before_and_reads_back_the_same(search, label):
    found = search().found("g6", 100, label)
    before = WRITTEN[label] | {"backend": "g6", "input_tokens": 100, "label": label}
    assert json.dumps(found.to_json()) == json.dumps(before)  # the same keys, values and order
    read = CapacityFound.from_json(json.loads(json.dumps(before)))
    assert read == found and json.dumps(read.to_json()) == json.dumps(before)


def test_the_fields_the_readers_use_are_attributes():
    found = concurrency_search().found("g6", None, "3 at a time")
    assert found.capacity == 3 and found.unit == "at a time" and found.stopped == "between 3 (met) and 4 (missed)"
    assert [(t.value, t.met) for t in found.tried] == [(1, True), (2, True), (4, False), (3, True)]
    assert found.at_capacity == Tried(
        value=3, met=True, share_met=1.0, output_tok_s=300.0, request_throughput=3.0, goodput_rps=3.0
    )
    assert missed_search().found("g6", None, None).at_capacity is None


def entry(**changes: Any) -> dict[str, Any]:
    found = concurrency_search().found("g6", 100, "100 in, 3 at a time").to_json()
    return {k: v for k, v in (found | changes).items() if v is not ...}


def tried_changed(**changes: Any) -> dict[str, Any]:
    data = entry()
    data["tried"][1] |= changes
    return data


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (entry(stopped=...), "a capacity search of g6: no 'stopped'"),
        (entry(capacity="3"), "a capacity search of g6: 'capacity' is '3', not float | None"),
        (entry(input_tokens=1.5), "a capacity search of g6: 'input_tokens' is 1.5"),
        (entry(tried={"value": 1}), "a capacity search of g6: 'tried' is {'value': 1}, not a list of levels"),
        (entry(tried=...), "a capacity search of g6: 'tried' is None, not a list of levels"),
        (tried_changed(met="yes"), "a capacity search of g6, its level 2: 'met' is 'yes', not <class 'bool'>"),
        (entry(tried=[{"value": 1, "met": True}]), "a capacity search of g6, its level 1: no 'share_met'"),
        (entry(backend=...), "a capacity search: no 'backend'"),
        (["g6", 3], "a capacity search: expected a JSON object, got list"),
    ],
)
def test_a_malformed_entry_is_refused_in_one_line_naming_its_backend(data, says):
    with pytest.raises(RunnerError) as refused:
        capacity_of({"capacity": [entry(backend="inf2"), data]}, "results/bench.json")
    line = str(refused.value)
    assert "\n" not in line and line.startswith("results/bench.json: ") and says in line, line


def test_evidence_without_a_search_has_none():
    assert capacity_of({"command": "bench"}) == [] and capacity_of({"capacity": None}) == []


def test_the_readers_refuse_a_malformed_entry_in_one_line():
    """The bench's capacity table and the advice's measured capacity read the entries typed."""
    from runner.costing.advice import Workload, measured_capacity
    from runner.render.bench import capacity_table

    workload = Workload(1000, (1.0,), "flat", 100, 50, name="chat", slo=(("tpot", 16.0),))
    config = {
        "workload": {"name": "chat", "input_tokens": [100], "output_tokens": 50},
        "slo": {"limits_ms": {"tpot": 16}, "text": "tpot:16"},
        "slo_share": 0.9,
    }
    evidence = {"config": config, "capacity": [entry(tried=[{"value": 1}])]}
    with pytest.raises(RunnerError, match=r"^a capacity search of g6, its level 1: no 'met'$"):
        capacity_table(BenchFile.from_json(evidence))
    with pytest.raises(RunnerError, match=r"^results/bench.json: a capacity search of g6, its level 1: no 'met'$"):
        measured_capacity("results/bench.json", evidence, "g6", workload)
    evidence["capacity"] = [entry()]
    point, why = measured_capacity("results/bench.json", evidence, "g6", workload)
    assert why == "" and point is not None and point.capacity_per_h == 3.0 * 3600
    assert point.level == "capacity 3 at a time within tpot:16"
