"""What was read of a server while a level ran, read back typed (runner/core/readings.py): the
summary the sampler writes reads into its figures, a figure the server lacks is None, the table's
server cell says them, and a malformed entry is refused in one line that names it and its file."""

from __future__ import annotations

import json

import pytest

from runner.core.errors import RunnerError
from runner.core.readings import readings_of
from runner.core.records import Level
from runner.measure.server_metrics import summarize
from runner.render.bench import server_cell

# Four scrapes of a vLLM server: running 1-3, waiting in two of four (queueing), KV 20-50 %,
# prefix-cache queries 100 -> 500 and hits 0 -> 100 over the level.
SAMPLES = [
    (0.0, {"running": 1, "waiting": 0, "kv_cache_usage": 0.2, "prefix_cache_queries": 100, "prefix_cache_hits": 0}),
    (0.5, {"running": 3, "waiting": 2, "kv_cache_usage": 0.5, "prefix_cache_queries": 300, "prefix_cache_hits": 50}),
    (1.0, {"running": 2, "waiting": 1, "kv_cache_usage": 0.4, "prefix_cache_queries": 400, "prefix_cache_hits": 80}),
    (1.5, {"running": 2, "waiting": 0, "kv_cache_usage": 0.3, "prefix_cache_queries": 500, "prefix_cache_hits": 100}),
]


def entry(metrics: dict) -> dict:
    level = {"mode": "concurrency", "value": 4, "requests": 8, "max_concurrency": None, "label": "4 at a time"}
    return {"backend": "g6", "label": "4 at a time", "level": level, "server_metrics": metrics}


def test_the_samplers_summary_reads_back_typed_and_the_server_cell_says_it():
    summary = summarize(SAMPLES, "http://127.0.0.1:8000/metrics")
    summary["series"] = SAMPLES
    readings = readings_of(json.loads(json.dumps({"levels": [entry(summary)]})))
    read = readings["g6", "4 at a time"]
    metrics = read.server_metrics
    assert read.level == Level("concurrency", 4, 8, label="4 at a time")
    assert (metrics.samples, metrics.running_max, metrics.waiting_max, metrics.kv_cache_usage_max) == (4, 3, 2, 0.5)
    assert metrics.running_mean == 2 and metrics.queueing is True
    assert (metrics.prefix_cache_queries_delta, metrics.prefix_cache_hits_delta) == (400, 100)
    assert metrics.prefix_cache_hit_rate == 100 / 400 and metrics.problem is None
    assert server_cell(metrics) == "run 3, wait 2, KV 50%, prefix hits 25%"


def test_a_figure_the_server_lacks_is_none_and_a_level_without_readings_reads():
    # llama.cpp: no KV-cache gauge; one sample, so no counter's change.
    summary = summarize([(0.0, {"running": 1, "waiting": 0})], "http://127.0.0.1:8080/metrics")
    metrics = readings_of({"levels": [entry(summary)]})["g6", "4 at a time"].server_metrics
    assert metrics.kv_cache_usage_max is None and metrics.prefix_cache_hit_rate is None
    assert server_cell(metrics) == "run 1, wait 0"
    bare = readings_of({"levels": [{"backend": "g6", "label": "1 at a time"}]})["g6", "1 at a time"]
    assert bare.server_metrics is None and bare.accelerator is None and server_cell(None) == "-"


@pytest.mark.parametrize(
    ("bad", "line"),
    [
        ({"samples": "4"}, "bench.json: levels[0] of g6, its server metrics: 'samples' is '4'"),
        ({"samples": 1, "queueing": "yes"}, "bench.json: levels[0] of g6, its server metrics: 'queueing' is 'yes'"),
    ],
)
def test_a_malformed_reading_is_one_line_naming_it(bad, line):
    with pytest.raises(RunnerError) as raised:
        readings_of({"levels": [entry(bad)]}, "bench.json")
    assert str(raised.value).startswith(line), str(raised.value)
