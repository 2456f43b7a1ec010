"""Load levels: percentile and throughput arithmetic against hand-computed cases, inter-token
latency per token rather than per chunk, open-loop arrival statistics, failed requests counted,
and real sweeps (a scripted server that batches tokens, the embedded llama.cpp server)."""

from __future__ import annotations

import gc
import json
import statistics
import threading
import time
import weakref
from pathlib import Path

import pytest

from runner import bench
from runner.core.errors import RunnerError
from runner.core.evidence import load
from runner.core.records import RequestRecord, records_of
from runner.core.stats import percentile
from runner.figures.latency import distribution, time_per_output_token, token_gaps
from runner.figures.levels import level_summary
from runner.measure import ChatRequest
from runner.measure.bench_file import BenchFile
from runner.measure.load import (
    CLOSED,
    OPEN,
    LoadLevel,
    plan_levels,
    poisson_offsets,
    read_prompts,
    run_level,
)
from runner.timing.load import one_at_a_time
from tests.runner.fake_openai import FakeOpenAI, Step, text

WORDS = " ".join(f"w{i}" for i in range(12))


def record(**fields) -> RequestRecord:
    """A hand-made record, read back as the evidence's records are."""
    return RequestRecord.from_json({"backend": "b", "run": 1} | fields, "a test record")


def typed(entries: list[dict]) -> list[RequestRecord]:
    """An evidence file's records (as written) read back typed."""
    return records_of({"records": entries})


def test_percentiles_by_hand():
    data = [1.0, 2.0, 3.0, 4.0]
    # numpy's linear method: rank (n-1)q, interpolated between neighbours.
    assert percentile(data, 50) == 2.5
    assert percentile(data, 90) == pytest.approx(3.7)
    assert percentile(data, 99) == pytest.approx(3.97)
    assert percentile([7.0], 99) == 7.0 and percentile([], 50) is None
    # Weighted: 1 token at 10 ms and 3 tokens at 2 ms: the median token waited 2 ms.
    assert percentile([0.010, 0.002], 50, [1, 3]) == 0.002
    assert percentile([0.010, 0.002], 90, [1, 3]) == 0.010
    assert distribution([0.010, 0.002], [1, 3]).to_json()["mean"] == pytest.approx((0.010 + 3 * 0.002) / 4)


def test_inter_token_latency_is_per_token_not_per_chunk():
    # Chunks at 0.1, 0.2 and 0.4 s; the running count says they brought 1, 1 and 4 tokens.
    gaps = token_gaps(record(ok=True, chunk_times=[0.1, 0.2, 0.4], chunk_token_counts=[1, 2, 6], output_tokens=6))
    assert gaps.values == pytest.approx([0.1, 0.05]) and gaps.weights == [1.0, 4.0]
    assert gaps.method == "server running count"
    # Per token the median gap is 50 ms (four of five tokens); per chunk it would be 150 ms.
    assert percentile(gaps.values, 50, gaps.weights) == pytest.approx(0.05)
    assert statistics.median([0.1, 0.2]) == pytest.approx(0.15)
    # Without a running count, the 6 tokens are spread evenly: 2 per chunk, so each gap halves.
    estimated = token_gaps(record(ok=True, chunk_times=[0.1, 0.2, 0.4], output_tokens=6))
    assert estimated.values == pytest.approx([0.05, 0.1]) and estimated.method == "tokens spread evenly over chunks"
    assert time_per_output_token(record(ok=True, output_tokens=6, ttft_s=0.1, e2e_s=0.6)) == pytest.approx(0.1)


def test_throughput_over_the_level_wall_time_by_hand():
    records = [
        record(ok=True, sent_s=0.0, e2e_s=1.0, ttft_s=0.1, output_tokens=10),
        record(ok=True, sent_s=0.0, e2e_s=2.0, ttft_s=0.3, output_tokens=10),
        record(ok=True, sent_s=1.0, e2e_s=1.0, ttft_s=0.2, output_tokens=10),
        record(ok=False, sent_s=1.5, e2e_s=None, error="unreachable"),
    ]
    summary = level_summary(records).to_json()
    # First send at 0 s, last end at 2 s: 3 completed requests and 30 tokens in 2 s.
    assert summary["duration_s"] == 2.0
    assert summary["request_throughput"] == 1.5 and summary["output_tok_s"] == 15.0
    assert (summary["completed"], summary["failed"], summary["first_error"]) == (3, 1, "unreachable")
    assert summary["ttft_s"]["median"] == pytest.approx(0.2) and summary["e2e_s"]["p90"] == pytest.approx(1.8)


def test_open_loop_arrivals_are_poisson_and_seeded():
    offsets = poisson_offsets(20.0, 4000, seed=7)
    gaps = [b - a for a, b in zip([0.0, *offsets[:-1]], offsets, strict=True)]
    mean = statistics.fmean(gaps)
    assert mean == pytest.approx(1 / 20, rel=0.05)
    # Exponential gaps: standard deviation equal to the mean.
    assert statistics.stdev(gaps) / mean == pytest.approx(1.0, abs=0.06)
    # Independent gaps: no correlation between one gap and the next.
    assert abs(statistics.correlation(gaps[:-1], gaps[1:])) < 0.05
    assert poisson_offsets(20.0, 50, seed=7) == offsets[:50]
    assert poisson_offsets(20.0, 50, seed=8) != offsets[:50]


class SlowChat:
    """Each call takes 50 ms; counts how many are in flight at once; every third one fails."""

    def __init__(self, fail_every: int = 0) -> None:
        self.in_flight = 0
        self.most = 0
        self.calls = 0
        self.lock = threading.Lock()
        self.fail_every = fail_every

    def __call__(self, request: ChatRequest, record: RequestRecord) -> None:
        with self.lock:
            self.calls += 1
            call = self.calls
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            time.sleep(0.05)
            if self.fail_every and call % self.fail_every == 0:
                raise ConnectionError("scripted failure")
            record.ok, record.e2e_s, record.output_tokens = True, 0.05, 5
        finally:
            with self.lock:
                self.in_flight -= 1


def test_closed_loop_holds_its_level_and_failed_requests_are_kept():
    chat = SlowChat(fail_every=3)
    records = run_level(chat, str, "b", LoadLevel(CLOSED, 4, 12), [ChatRequest("p")], seed=0)
    assert chat.most == 4
    assert len(records) == 12 and [r.run for r in records] == list(range(1, 13))
    assert sum(1 for r in records if not r.ok) == 4
    assert all(r.error == "scripted failure" for r in records if not r.ok)
    assert all(r.level.label == "4 at a time" for r in records)


class Node:
    """A container the collector tracks, that a weak reference can watch."""

    def __init__(self) -> None:
        self.other: Node | None = None


def tracked_now(thing: object) -> bool:
    return any(found is thing for found in gc.get_objects())


def one_request_after_another(chat) -> None:
    one_at_a_time(chat, str, ChatRequest("p"), 2, lambda run: RequestRecord(backend="b", run=run), down=bool)


def a_closed_loop_level(chat) -> None:
    run_level(chat, str, "b", LoadLevel(CLOSED, 1, 2), [ChatRequest("p")], seed=0)


@pytest.mark.parametrize("send", [one_request_after_another, a_closed_loop_level])
def test_requests_are_timed_with_the_heap_they_found_out_of_the_collectors_reach(send):
    """A full collection walks every tracked object while holding the interpreter (0.1 s over a
    runner's heap), a pause the requests under way would carry: the heap alive when the timed
    requests start is frozen, and what they make is still collected."""
    made_before = Node()
    assert tracked_now(made_before)
    seen: list[tuple[bool, bool]] = []

    def chat(request: ChatRequest, record: RequestRecord) -> None:
        cycle = Node()
        cycle.other = Node()
        cycle.other.other = cycle
        watched = weakref.ref(cycle)
        del cycle
        gc.collect()
        seen.append((tracked_now(made_before), watched() is None))
        record.ok = True

    send(chat)
    assert seen == [(False, True), (False, True)]


def test_open_loop_cap_delays_sends_and_says_so():
    chat = SlowChat()
    records = run_level(chat, str, "b", LoadLevel(OPEN, 200.0, 20, max_concurrency=2), [ChatRequest("p")], seed=3)
    assert chat.most <= 2 and len(records) == 20
    summary = level_summary(records).to_json()
    # 200/s arrivals into two slots of 50 ms: the later sends go out well after their schedule.
    assert summary["max_send_lag_s"] > 0.2


def test_level_plan_and_bad_input():
    levels = plan_levels("1,4,16,64", "2.5", None, None)
    assert [(lv.mode, lv.value, lv.requests) for lv in levels] == [
        (CLOSED, 1, 4),
        (CLOSED, 4, 16),
        (CLOSED, 16, 64),
        (CLOSED, 64, 256),
        (OPEN, 2.5, 25),
    ]
    for args, message in [
        (("0,4", None, None, None), "every value must be above 0"),
        (("a", None, None, None), "expected comma-separated whole numbers"),
        ((None, "1", 0, None), "--requests must be at least 1"),
        (("4", None, None, 2), "--max-concurrency caps an open-loop level"),
    ]:
        with pytest.raises(RunnerError, match=message):
            plan_levels(*args)


def test_prompt_file_with_its_own_output_lengths(tmp_path):
    good = tmp_path / "prompts.jsonl"
    good.write_text('{"prompt": "one", "max_tokens": 7}\n\n{"prompt": "two"}\n')
    assert [(p.text, p.max_tokens) for p in read_prompts(good, 100)] == [("one", 7), ("two", 100)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "one"}\n{"prompt": 3}\n')
    with pytest.raises(RunnerError, match=r"bad.jsonl line 2: expected"):
        read_prompts(bad, 100)


def run_sweep(tmp_path: Path, *extra: str) -> tuple[int, dict]:
    code = bench.run(["--no-aws", "--local", "never", "--results-dir", str(tmp_path), *extra])
    (path,) = tmp_path.glob("*/bench-*.json")
    return code, load(path)


def test_sweep_against_a_server_that_batches_tokens(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "a", "max_tokens": 11}\n{"prompt": "b", "max_tokens": 22}\n')
    step = Step(kind="text", text=WORDS, words_per_chunk=3, gap_s=0.02, usage_tokens=12)
    with FakeOpenAI([step]) as server:
        code, evidence = run_sweep(
            tmp_path,
            "--concurrency",
            "1,4",
            "--requests",
            "8",
            "--prompts",
            str(prompts),
            "--endpoint",
            f"fake={server.url}",
        )
        sent = server.requests
    assert code == 0
    records = evidence["records"]
    assert sorted({r["level"]["label"] for r in records}) == ["1 at a time", "4 at a time"]
    assert len(records) == 16 and all(r["ok"] for r in records)
    # The prompts' own output lengths, in turn (after the warm-up's 4 tokens).
    assert [b["max_tokens"] for b in sent[1:5]] == [11, 22, 11, 22]
    # Chunks of three tokens, the count read from the server (per-token gaps are a third of the
    # chunk gaps), and the first prompt's own limit of 11 honoured: the last chunk brings two.
    record = records[0]
    assert record["chunk_token_counts"] == [3, 6, 9, 11] and len(record["chunk_times"]) == 4
    assert (record["finish_reason"], record["output_tokens"]) == ("length", 11)
    one = [r for r in records if r["level"]["value"] == 1]
    summary = level_summary(typed(one)).to_json()
    assert summary["itl_method"] == ["server running count"]
    # The level's figures come from its records' own arrival times (the arithmetic itself is
    # checked on fixed times above): every token gap of every request, weighted by its tokens.
    pooled = [token_gaps(r) for r in typed(one)]
    values = [v for gaps in pooled for v in gaps.values]
    assert summary["itl_s"]["median"] == percentile(values, 50, [w for gaps in pooled for w in gaps.weights])
    assert summary["tpot_s"]["median"] == percentile([time_per_output_token(r) for r in typed(one)], 50)
    # Four in flight at once: their connections were opened by the level's four warm-ups, so no
    # timed request opened one.
    four = [r for r in records if r["level"]["value"] == 4]
    assert [r["new_connection"] for r in four] == [False] * 8


@pytest.mark.usefixtures("local_server")
def test_embedded_model_swept_at_one_and_four(tmp_path, local_server):
    code, evidence = run_sweep(
        tmp_path,
        "--concurrency",
        "1,4",
        "--requests",
        "4",
        "--max-tokens",
        "16",
        "--endpoint",
        f"embedded={local_server.base_url}",
    )
    assert code == 0
    groups = {}
    for record in evidence["records"]:
        groups.setdefault(record["level"]["label"], []).append(record)
    assert sorted(groups) == ["1 at a time", "4 at a time"]
    for records in groups.values():
        summary = level_summary(typed(records)).to_json()
        assert summary["completed"] == 4 and summary["output_tok_s"] > 0
        assert summary["ttft_s"]["p99"] >= summary["ttft_s"]["median"] > 0
    saved = json.loads(Path(next(tmp_path.glob("*/bench-*.json"))).read_text())
    assert saved["config"]["levels"][1]["label"] == "4 at a time"


def test_sweep_faults_are_counted_per_request(tmp_path, dead_url):
    with (
        FakeOpenAI([Step(kind="http_error", status=500)]) as failing,
        FakeOpenAI([Step(kind="cut", text=WORDS)]) as cut,
    ):
        code, evidence = run_sweep(
            tmp_path, "--concurrency", "2", "--requests", "4", "--timeout", "5",
            "--endpoint", f"dead={dead_url}", "--endpoint", f"failing={failing.url}", "--endpoint", f"cut={cut.url}",
        )  # fmt: skip
    assert code == 1  # nothing measured
    errors = {}
    for record in evidence["records"]:
        assert not record["ok"]
        errors.setdefault(record["backend"], set()).add(record["error"].split(":")[0])
    assert errors == {"dead": {"unreachable"}, "failing": {"HTTP 500"}, "cut": {"stream cut"}}
    assert all(len([r for r in evidence["records"] if r["backend"] == name]) == 4 for name in errors)


def test_roofline_share_from_the_catalog_bandwidth_and_bytes_per_token(tmp_path):
    from catalog import get_backend
    from runner.core.backend_entries import entries_of
    from runner.figures.levels import roofline
    from runner.render.bench import bench_table

    step = Step(kind="text", text=WORDS, gap_s=0.01, usage_tokens=12)
    with FakeOpenAI([step]) as server:
        code, evidence = run_sweep(tmp_path, "--repeats", "3", "--endpoint", f"g6={server.url}")
    assert code == 0
    spec = get_backend("g6")
    ceiling = spec.memory_bandwidth_gbs / spec.decode_read_gb  # 300 GB/s over 3.06 GB: 98 tok/s
    figures = roofline(typed(evidence["records"]), entries_of(evidence))["g6"].to_json()
    assert figures["ceiling_tok_s"] == pytest.approx(ceiling) and round(ceiling) == 98
    decode = statistics.median(r["decode_tokens_per_s"] for r in evidence["records"])
    assert figures["share"] == pytest.approx(decode / ceiling)
    columns = [c.header for c in bench_table(BenchFile.from_json(evidence)).columns]
    assert {"survey tok/s", "decode ceiling tok/s", "share"} <= set(columns)


def test_backends_returning_the_same_text_are_named(tmp_path):
    from runner.render.bench import bench_table, same_text

    with (
        FakeOpenAI([text("The sea is calm tonight.")]) as first,
        FakeOpenAI([text("The  sea is calm tonight.")]) as second,
        FakeOpenAI([text("Waves.")]) as other,
    ):
        code, evidence = run_sweep(
            tmp_path,
            "--repeats",
            "2",
            "--endpoint",
            f"a={first.url}",
            "--endpoint",
            f"b={second.url}",
            "--endpoint",
            f"c={other.url}",
        )
    assert code == 0
    # Word for word: whitespace differences do not make a text different.
    bench = BenchFile.from_json(evidence)
    assert same_text(bench) == {"a": ["b"], "b": ["a"], "c": []}
    notes = next(row for row in bench_table(bench).columns if row.header == "notes")
    assert any("same text as b" in cell for cell in notes._cells)
