"""`runner.bench` on workloads, against the known-rate server, whose costs the test sets, so every
figure is checked against a value computed here: prompts of the asked length on the server's own
tokenizer, output forced to its length, TTFT growing with the prompt at the set prefill rate, the
prefill rate read off a prompt-length sweep, goodput within objectives, the most load within them
under a set per-stream slowdown, queueing seen in the server's metrics, a shared prefix's cache
hits, conversations carrying their context, and what a server that ignores `ignore_eos` does."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from statistics import median
from typing import Any

import pytest

from runner import advise, bench
from runner.core.records import records_of
from runner.figures.levels import LevelSummary, level_groups, level_summary, prefill_fit
from runner.measure.bench_file import BenchFile
from tests.runner.known_server import TEMPLATE_TOKENS, Running, known, known_server
from tests.runner.test_capacity_found import summary

# The server's costs: a base time to first token, a prefill rate, a decode rate per stream.
BASE_TTFT = 0.02
PREFILL = 10_000.0
RATE = 200.0


def run(tmp_path: Path, server, *argv: str) -> tuple[int, dict[str, Any]]:
    results = tmp_path / "results"
    code = bench.run(
        ["--endpoint", server.endpoint, "--no-aws", "--local", "never", *argv, "--results-dir", str(results)]
    )
    (path,) = sorted(results.glob("*/bench-*.json"))[-1:]
    return code, json.loads(path.read_text())


def levels(evidence: dict[str, Any]) -> dict[str, dict[str, Any]]:
    slo = evidence["config"].get("slo")
    return {
        label: level_summary(records, slo).to_json()
        for (_, label), records in level_groups(records_of(evidence)).items()
    }


def test_prompts_reach_their_length_on_the_servers_tokenizer_and_ttft_follows_the_prefill_rate(tmp_path):
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500, prefill_rate=PREFILL) as server:
        code, evidence = run(tmp_path, server, "--input-tokens", "200,1000", "--output-tokens", "40", "--repeats", "3")
        truth = server.stats()
    assert code == 0
    records = evidence["records"]
    assert [(r["target_input_tokens"], r["prompt_tokens"]) for r in records] == [(200, 200)] * 3 + [(1000, 1000)] * 3
    # Output held at its length (the server honours ignore_eos), every record says it was forced.
    assert all(r["output_tokens"] == 40 and r["forced_length"] and r["target_output_tokens"] == 40 for r in records)
    by_level = levels(evidence)
    short, long = by_level["200 in, 1 at a time"], by_level["1000 in, 1 at a time"]
    expected = {label: BASE_TTFT + n / PREFILL for label, n in (("short", 200), ("long", 1000))}
    # The client is invisible: at 1,000 prompt tokens TTFT is within 2 % of the server's own clock.
    server_ttft_1000 = median(
        t for t, n in zip(truth["first_token_s"], truth["prompt_tokens"], strict=True) if n == 1000
    )
    assert long["ttft_s"]["median"] == pytest.approx(server_ttft_1000, rel=0.02)
    assert long["ttft_s"]["median"] == pytest.approx(expected["long"], rel=0.05)
    assert short["ttft_s"]["median"] == pytest.approx(expected["short"], rel=0.15)
    # The prefill rate as the issue defines it (input over TTFT at one stream), from the set costs.
    assert long["prefill_tok_s"] == pytest.approx(1000 / expected["long"], rel=0.05)
    assert long["tokens"]["input_miss"] is None and long["tokens"]["forced"] is True
    assert evidence["workload_backends"]["known"]["token_count"].startswith("the server's tokenizer")
    # The sweep's line separates the two: its slope is the set prefill rate, its intercept the base.
    fit = prefill_fit(records_of(evidence))["known"].to_json()
    assert fit["prefill_tok_s"] == pytest.approx(PREFILL, rel=0.1)
    assert fit["fixed_s"] == pytest.approx(BASE_TTFT, abs=0.004)


def test_goodput_is_the_share_within_every_objective_and_good_requests_per_second(tmp_path):
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500, prefill_rate=PREFILL) as server:
        # TTFT: 40 ms at 200 tokens, 120 ms at 1,000: an objective of 80 ms splits them.
        _, evidence = run(
            tmp_path, server, "--input-tokens", "200,1000", "--output-tokens", "20", "--repeats", "4",
            "--goodput", "ttft:80", "tpot:50",
        )  # fmt: skip
    by_level = levels(evidence)
    short, long = by_level["200 in, 1 at a time"], by_level["1000 in, 1 at a time"]
    assert short["goodput"]["share_met"] == 1.0 and long["goodput"]["share_met"] == 0.0
    assert long["goodput"]["missed_by"] == {"ttft": 4}
    assert short["goodput"]["goodput_rps"] == pytest.approx(4 / short["duration_s"])
    assert all(r["slo"]["met"] is (r["target_input_tokens"] == 200) for r in evidence["records"])


# The capacity search's server: each other decoding stream stretches a token's gap by half.
SLOWDOWN, TPOT_LIMIT = 0.5, 22.5


@pytest.fixture(scope="module")
def capacity_search(tmp_path_factory) -> tuple[int, Path]:
    """One capacity search on g6 (a known server) at 100 tokens in, 30 out, within tpot:22.5, which
    two tests read: the search's own steps, and advise sizing instances by what it found."""
    folder = tmp_path_factory.mktemp("capacity")
    with known_server(ttft=BASE_TTFT, rate=100.0, tokens=500, prefill_rate=PREFILL, slowdown=SLOWDOWN) as server:
        code = bench.run(
            ["--endpoint", f"g6={server.url}/v1,model={known.MODEL}", "--no-aws", "--local", "never",
             "--input-tokens", "100", "--output-tokens", "30", "--goodput", f"tpot:{TPOT_LIMIT}", "--find-capacity",
             "--results-dir", str(folder)]
        )  # fmt: skip
    (path,) = folder.glob("*/bench-*.json")
    return code, path


@pytest.mark.xdist_group("capacity-search")
def test_the_capacity_search_finds_the_most_concurrency_within_the_objective(capacity_search):
    """TPOT = 10 ms × (1 + 0.5 × (c − 1)), so 10, 15, 20, 25 ms at 1..4 streams; within 22.5 ms the
    capacity is 3."""
    slowdown = SLOWDOWN
    expected = max(c for c in range(1, 20) if 10 * (1 + slowdown * (c - 1)) <= TPOT_LIMIT)
    code, path = capacity_search
    evidence = json.loads(path.read_text())
    assert code == 0
    (search,) = evidence["capacity"]
    assert search["capacity"] == expected == 3
    assert [(t["value"], t["met"]) for t in search["tried"]] == [(1, True), (2, True), (4, False), (3, True)]
    for tried in search["tried"]:
        level = levels(evidence)[f"100 in, {tried['value']:g} at a time"]
        assert level["tpot_s"]["median"] * 1000 == pytest.approx(10 * (1 + slowdown * (tried["value"] - 1)), rel=0.05)


def test_no_level_within_the_objectives_is_one_line_with_what_was_tried(tmp_path):
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500, prefill_rate=PREFILL) as server:
        code, evidence = run(
            tmp_path, server, "--input-tokens", "1000", "--output-tokens", "10", "--goodput", "ttft:50",
            "--find-capacity", "--requests", "4",
        )  # fmt: skip
    (search,) = evidence["capacity"]
    assert search["capacity"] is None and [t["value"] for t in search["tried"]] == [1]
    assert "no level met the objectives for 90% of its requests" in search["stopped"]
    assert any("capacity at ttft:50: none" in line for line in evidence["notices"])
    assert code == 0  # it measured: the answer is that nothing fits


def test_a_level_queued_at_the_server_is_told_by_its_own_metrics(tmp_path):
    with known_server(ttft=BASE_TTFT, rate=100.0, tokens=500, max_running=2) as server:
        _, evidence = run(
            tmp_path, server, "--input-tokens", "50", "--output-tokens", "40", "--concurrency", "1,4"
        )  # fmt: skip
    meta = {m["label"]: m["server_metrics"] for m in evidence["levels"]}
    assert meta["50 in, 1 at a time"]["queueing"] is False and meta["50 in, 1 at a time"]["waiting_max"] == 0
    assert meta["50 in, 4 at a time"]["queueing"] is True and meta["50 in, 4 at a time"]["waiting_max"] >= 1
    assert meta["50 in, 4 at a time"]["running_max"] == 2
    from rich.console import Console

    from runner.render.bench import workload_table

    console = Console(record=True, width=400)
    console.print(workload_table(BenchFile.from_json(evidence)))
    assert "queueing at the server" in console.export_text()


def test_a_shared_prefix_is_cached_by_the_server_and_its_hits_are_read_from_its_metrics(tmp_path):
    """Eight requests of 600 tokens share a 400-token prefix: after the first, each request's prefix
    is served from the cache, so (7 × 400 + the words the first request shares with none) of the
    prompt tokens hit."""
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500, prefill_rate=PREFILL, prefix_cache=True) as server:
        _, evidence = run(
            tmp_path, server, "--input-tokens", "600", "--output-tokens", "5", "--prefix-tokens", "400",
            "--repeats", "8",
        )  # fmt: skip
        truth = server.stats()
    timed = [(p, c) for p, c in zip(truth["prompt_tokens"], truth["cached_tokens"], strict=True) if p == 600]
    assert len(timed) == 8 and timed[0][1] < 400 and all(c >= 390 for _, c in timed[1:])
    # The server's own counters, sampled through its /metrics during the level, say the same: its
    # hits over the level's own warm-up and its eight requests (the last nine the server saw).
    (level,) = evidence["levels"]
    assert level["server_metrics"]["prefix_cache_hits_delta"] == sum(truth["cached_tokens"][-9:])
    assert sum(truth["cached_tokens"][-8:]) == sum(c for _, c in timed)
    ttfts = [r["ttft_s"] for r in evidence["records"]]
    # The first computes its whole prompt; the others about 200 tokens less each time: faster.
    assert median(ttfts[1:]) < ttfts[0] - 0.5 * 390 / PREFILL


def test_conversations_carry_their_context_from_turn_to_turn(tmp_path):
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500, prefill_rate=PREFILL) as server:
        _, evidence = run(
            tmp_path, server, "--input-tokens", "100", "--output-tokens", "10", "--turns", "3", "--repeats", "2"
        )  # fmt: skip
    records = evidence["records"]
    assert [(r["session"], r["turn"]) for r in records] == [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3)]
    for session in (0, 1):
        turns = [r for r in records if r["session"] == session]
        # Each turn's prompt: the turn before's prompt, its answer (10 words, the template's share),
        # and a new user message of 100 tokens (its own template share and the BOS counted once).
        for before, after in itertools.pairwise(turns):
            assert after["prompt_tokens"] == before["prompt_tokens"] + 10 + TEMPLATE_TOKENS + 100 - 1


def test_the_table_shows_each_turns_prompt_as_the_context_grows(tmp_path):
    """`--turns`: the input cell gives the prompt the server counted at each turn (the context so
    far), not the first turn's alone."""
    from runner.render.bench import workload_table

    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500, prefill_rate=PREFILL) as server:
        _, evidence = run(
            tmp_path, server, "--input-tokens", "100", "--output-tokens", "10", "--turns", "3", "--repeats", "2"
        )  # fmt: skip
    # Each turn adds the answer (10), its template share, and a new 100-token message (its BOS once).
    grows = 10 + TEMPLATE_TOKENS + 100 - 1
    table = workload_table(BenchFile.from_json(evidence))
    (cell,) = next(c for c in table.columns if c.header == "in tok").cells
    assert cell == f"100 → turns 100, {100 + grows}, {100 + 2 * grows}", cell


def test_a_server_that_ignores_ignore_eos_is_caught_and_the_real_count_used(tmp_path):
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500, natural=12, deaf=True) as server:
        _, evidence = run(tmp_path, server, "--input-tokens", "50", "--output-tokens", "40", "--repeats", "3")
    (level,) = levels(evidence).values()
    assert level["tokens"]["force_ignored"] == 3 and level["tokens"]["output_counted"] == 12
    assert level["tokens"]["output_miss"] == pytest.approx(12 / 40 - 1)
    # Per-token figures use the tokens the server sent, not the ones asked for.
    assert level["tpot_s"]["median"] * 1000 == pytest.approx(1000 / RATE, rel=0.1)


def test_a_dataset_and_a_sharegpt_file_are_read_and_a_bad_line_is_one_line(tmp_path, capsys):
    lines = tmp_path / "prompts.jsonl"
    lines.write_text(
        json.dumps({"prompt": "one two three", "max_tokens": 7}) + "\n"
        + json.dumps({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "four five"}]}) + "\n"
    )  # fmt: skip
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500) as server:
        _, evidence = run(tmp_path, server, "--dataset", str(lines), "--output-tokens", "5", "--repeats", "2")
    prompts = [r["prompt_tokens"] for r in evidence["records"]]
    # 3 words + template + BOS; then a system and a user message: 2 + 2 words, two templates, BOS.
    assert prompts == [3 + TEMPLATE_TOKENS + 1, 4 + 2 * TEMPLATE_TOKENS + 1]
    assert evidence["config"]["workload"]["source"] == f"{lines} (jsonl, 2 prompts)"

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "fine"}\nnot json\n')
    with pytest.raises(SystemExit) as exit_:
        bench.main_guard(lambda: bench.run(["--dataset", str(bad), "--no-aws", "--local", "never"]))
    assert exit_.value.code == 2
    assert f"--dataset {bad} line 2: not JSON" in capsys.readouterr().err
    share = tmp_path / "share.json"
    share.write_text(json.dumps([{"id": "x", "turns": []}]))
    with pytest.raises(SystemExit):
        bench.main_guard(lambda: bench.run(["--dataset", str(share), "--no-aws", "--local", "never"]))
    assert 'entry 0: no "conversations" list' in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--goodput", "ttfb:100"], "unknown objective 'ttfb'; known: ttft"),
        (["--goodput", "ttft:fast"], "'fast' is not a number of milliseconds"),
        (["--input-tokens", "100", "--find-capacity"], "--find-capacity searches for the most load within objectives"),
        (["--workload", "chatty"], "--workload 'chatty': unknown; known: chat, rag, summarize, code, llmperf, agent"),
        (["--input-tokens", "100", "--prefix-tokens", "100"], "--prefix-tokens 100 leaves nothing of its own"),
        (["--input-tokens", "0"], "every value must be above 0"),
        (["--input-tokens", "100", "--turns", "2", "--prefix-tokens", "10"], "--turns builds conversations of"),
        (["--input-tokens", "100", "--prefix-tokens", "-5"], "--prefix-tokens -5: cannot be negative"),
        (["--input-tokens", "100", "--slo-share", "0.5"], "--slo-share is the share within the objectives"),
        (
            ["--workload", "chat", "--find-capacity", "--capacity-levels", "0"],
            "--capacity-levels and --capacity-seconds",
        ),
    ],
)
def test_bad_workload_input_is_one_line_before_anything_is_sent(argv, line, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main_guard(lambda: bench.run([*argv, "--no-aws", "--local", "never"]))
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and line in err[0], err


@pytest.mark.xdist_group("capacity-search")
def test_advise_sizes_instances_by_the_capacity_measured_within_the_objectives(capacity_search, tmp_path):
    """g6 measured on the workload with a capacity search; g5g only on the survey's prompt. advise
    sizes g6 by its good requests an hour at that capacity, and labels g5g an extrapolation."""
    tpot_limit = TPOT_LIMIT
    with known_server(ttft=BASE_TTFT, rate=100.0, tokens=500, prefill_rate=PREFILL, slowdown=SLOWDOWN) as server:
        bench.run(["--endpoint", f"g5g={server.url}/v1,model={known.MODEL}", "--no-aws", "--local", "never",
                   "--repeats", "3", "--results-dir", str(tmp_path / "prompt")])  # fmt: skip
    _, workload = capacity_search
    measured = json.loads(workload.read_text())
    prompt_only = next((tmp_path / "prompt").glob("*/bench-*.json"))
    (search,) = measured["capacity"]
    per_instance = search["at_capacity"]["goodput_rps"] * 3600  # good requests an hour at capacity 3

    def advised(per_day: float) -> dict[str, Any]:
        out = tmp_path / f"advice-{per_day:.0f}"
        advise.run(["--evidence", str(workload), str(prompt_only),
                    "--offline", "--allow-unmeasured-sources", "--requests-per-day", f"{per_day:.0f}",
                    "--input-tokens", "100", "--output-tokens", "30", "--goodput", f"tpot:{tpot_limit}",
                    "--results-dir", str(out)])  # fmt: skip
        return json.loads(next(out.glob("*/advise-*.json")).read_text())

    # One g6 carries a peak hour of 90 % of its measured capacity, and not one of 110 %.
    advice = advised(0.9 * per_instance * 24)
    rows = {r["option"]: r for r in advice["records"]}
    assert rows["g6"]["measured_capacity"] is True and "extrapolated" not in rows["g6"]
    assert rows["g6"]["meets"] is True and rows["g6"]["level"] == f"capacity 3 at a time within tpot:{tpot_limit:g}"
    assert f"÷ {per_instance:,.0f} per instance at capacity 3" in rows["g6"]["arithmetic"]
    assert rows["g6"]["monthly_usd"] == pytest.approx(730 * 0.8048, rel=1e-6)
    over = {r["option"]: r for r in advised(1.1 * per_instance * 24)["records"]}["g6"]
    assert over["meets"] is False and over["why"] == "needs 2 instances at peak; it deploys at most 1"
    # g5g: no capacity within the objectives, so it is labelled, with why and from what.
    assert rows["g5g"]["measured_capacity"] is False
    assert rows["g5g"]["extrapolated"].startswith(f"EXTRAPOLATED: no capacity measured within tpot:{tpot_limit:g}")
    assert "measured on the survey's prompt, not on a workload" in rows["g5g"]["extrapolated"]
    assert any("their rows are EXTRAPOLATED" in line for line in advice["notices"])


def test_no_level_is_served_from_an_earlier_levels_prompts(tmp_path):
    """Every request of a run has text of its own: a sweep's second level (and the capacity
    search's later ones) finds nothing of the first level's prompts in the server's prefix cache."""
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500, prefill_rate=PREFILL, prefix_cache=True) as server:
        _, evidence = run(
            tmp_path, server, "--input-tokens", "300,300", "--output-tokens", "4", "--concurrency", "1,2",
            "--requests", "4",
        )  # fmt: skip
        truth = server.stats()
    timed = [c for p, c in zip(truth["prompt_tokens"], truth["cached_tokens"], strict=True) if p == 300]
    # Sixteen requests (two lengths, two levels, four each) and nothing served from the cache but the
    # few words every prompt's opening shares.
    assert len(timed) == 16 and max(timed) <= 10, timed
    # The evidence's timed requests are those sixteen, each answered.
    timed_records = [r for r in evidence["records"] if r["target_input_tokens"] == 300]
    assert len(timed_records) == 16 and all(r["ok"] for r in timed_records)


def test_a_server_without_a_tokenizer_has_its_lengths_calibrated_from_its_usage(tmp_path):
    """No /tokenize (as SageMaker's /invocations or Bedrock): two probes of the usage it reports fit
    tokens a word, and the prompts still reach their length within 5 % on its own count."""
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500, prefill_rate=PREFILL, tokenize=False) as server:
        code, evidence = run(tmp_path, server, "--input-tokens", "120,900", "--output-tokens", "8", "--repeats", "2")
    assert code == 0
    assert evidence["workload_backends"]["known"]["token_count"].startswith("calibrated from the path's usage")
    for record in evidence["records"]:
        assert abs(record["prompt_tokens"] / record["target_input_tokens"] - 1) <= 0.05, record
    groups = level_groups(records_of(evidence)).values()
    assert all(level_summary(r).to_json()["tokens"]["input_miss"] is None for r in groups)


def test_a_length_the_models_context_cannot_hold_is_one_line_and_the_rest_are_measured(tmp_path, capsys):
    """inf2's catalog context is 4,096 tokens: 4,000 in and 200 out cannot be sent; 100 in can."""
    with known_server(ttft=BASE_TTFT, rate=RATE, tokens=500, prefill_rate=PREFILL) as server:
        code, evidence = run(
            tmp_path, Running(server.url, None, name="inf2"), "--input-tokens", "100,4000", "--output-tokens", "200",
            "--repeats", "2",
        )  # fmt: skip
    assert code == 0
    assert {r["target_input_tokens"] for r in evidence["records"]} == {100}
    (line,) = evidence["workload_backends"]["inf2"]["not_sent"]
    assert (
        line
        == "4000 input tokens: up to 4000 in + 200 out is more than its context of 4096 tokens; not sent (shorter lengths, or a backend whose context holds them)"
    )
    assert line in capsys.readouterr().err


def test_a_rate_search_whose_first_rate_misses_goes_down_to_one_that_meets():
    """A server that meets the objectives up to 0.3 requests/s: from 1/s the search halves to 0.5
    (missed), 0.25 (met), then narrows the gap to within 10 % of the met rate."""
    from runner.measure.capacity import Budget, find_capacity

    def level(rate: float) -> LevelSummary:
        return summary(share_met=1.0 if rate <= 0.3 else 0.0, output_tok_s=rate * 100, requests=8)

    search = find_capacity(level, mode="rate", slo_share=0.9, start=1.0, budget=Budget(levels=20))
    tried = [t.value for t in search.tried]
    assert tried[:3] == [1.0, 0.5, 0.25] and 0.25 <= search.capacity <= 0.3
    assert search.capacity >= 0.3 * 0.9 and search.stopped.startswith("between")


def test_drawn_lengths_never_fall_below_the_shared_prefix_and_a_dataset_message_must_be_an_object(tmp_path):
    from runner.core.errors import RunnerError
    from runner.workloads import Workload
    from runner.workloads.dataset import read_dataset

    lengths = Workload(input_tokens=(600,), input_deviation=300, prefix_tokens=400).lengths(600, 200, seed=1)
    assert min(lengths) == 401 and max(lengths) > 600
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": ["just a string"]}\n')
    with pytest.raises(RunnerError, match="line 1: each message needs a role"):
        read_dataset(bad, 100)


def test_a_sharegpt_replys_length_sets_its_requests_output(tmp_path):
    """As vLLM's ShareGPT loader does: the first reply's length is the output asked for (here in
    4/3 tokens a word, the backend's tokenizer not being known when the file is read)."""
    share = tmp_path / "share.json"
    share.write_text(json.dumps([
        {"id": "a", "conversations": [{"from": "human", "value": "Name three rivers."},
                                      {"from": "gpt", "value": "The Nile, the Amazon and the Yangtze."}]},
        {"id": "b", "conversations": [{"from": "human", "value": "Say hi."}]},
    ]))  # fmt: skip
    plan = bench.workload_plan(bench.build_parser().parse_args(["--dataset", str(share)]))
    assert [(t.prompt, t.max_tokens) for t in plan.workload.fixed] == [
        ("Name three rivers.", round(7 * 4 / 3)),
        ("Say hi.", 100),
    ]
    assert "output lengths from each reply" in plan.workload.source
