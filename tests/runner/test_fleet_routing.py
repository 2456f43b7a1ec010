"""A fleet of copies behind SageMaker's routing (tests/aws_emulator/routing.py), measured by the
runner for real: two known-rate servers with a prefix cache, whose time to first token is set by
the prompt tokens they compute, behind each routing strategy AWS offers. Prefix-aware routing
sends a shared prefix to one copy, so each prefix is computed once; least outstanding requests
computes it again on each copy it reaches; with nothing shared the two tie. The figures the
runner reports are checked against what the servers say they computed."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean

import pytest

from runner import bench
from tests.aws_emulator.routing import Fleet, RoutingConfig, RoutingRefused, routed_fleet
from tests.runner.known_server import known, known_server

PREFILL_TOK_S = 4000.0
BASE_TTFT_S = 0.01
INPUT_TOKENS = 1000
PREFIXES = 3
REQUESTS = 12


@pytest.mark.parametrize(
    ("config", "refused"),
    [
        (RoutingConfig("ROUND_ROBIN"), "Member must satisfy enum value set: [LEAST_OUTSTANDING_REQUESTS, RANDOM"),
        (RoutingConfig("RANDOM", prefix_length=2048), "only when RoutingStrategy is PREFIX_AWARE"),
        (RoutingConfig("PREFIX_AWARE", concurrency_threshold=4), "prefixLength is required"),
        (RoutingConfig("PREFIX_AWARE", prefix_length=2048), "concurrencyThreshold is required"),
        (RoutingConfig("PREFIX_AWARE", 1023, 4), "Value '1023' at 'prefixAwareRoutingConfig.prefixLength'"),
        (RoutingConfig("PREFIX_AWARE", 65537, 4), "less than or equal to 65536"),
        (RoutingConfig("PREFIX_AWARE", 2048, 0), "greater than or equal to 1"),
        (RoutingConfig("PREFIX_AWARE", 2048, 1025), "less than or equal to 1024"),
    ],
)
def test_a_routing_configuration_aws_refuses_is_refused_with_its_words(config, refused):
    with pytest.raises(RoutingRefused, match=None) as caught:
        config.check()
    assert refused in str(caught.value)


def test_the_edges_of_each_range_are_taken():
    for config in (RoutingConfig("PREFIX_AWARE", 1024, 1), RoutingConfig("PREFIX_AWARE", 65536, 1024)):
        config.check()


def test_prefix_aware_keeps_a_prefix_on_its_copy_until_the_threshold_then_takes_the_least_loaded():
    fleet = Fleet(["a", "b", "c"], RoutingConfig("PREFIX_AWARE", 1024, 2))
    first = fleet.choose("the same system prompt")
    first.in_flight += 1
    assert fleet.choose("the same system prompt") is first  # 1 in flight: under the threshold of 2
    first.in_flight += 1
    others = [c for c in fleet.all if c is not first]
    others[0].in_flight = 1
    assert fleet.choose("the same system prompt") is others[1]  # at the threshold: the least loaded


def test_least_outstanding_takes_the_copy_with_fewest_in_flight_and_copies_can_be_set():
    fleet = Fleet(["a", "b", "c"], RoutingConfig(), copies=2)
    fleet.all[0].in_flight = 3
    assert fleet.choose().url == "b"  # "c" is not serving: two copies
    fleet.set_copies(3)
    fleet.all[1].in_flight = 1
    assert fleet.choose().url == "c"
    with pytest.raises(RoutingRefused, match="copy count 4: this fleet has 3"):
        fleet.set_copies(4)


def routed_bench(
    tmp_path: Path, strategy: RoutingConfig, prefix_tokens: int, prefill: float = PREFILL_TOK_S
) -> tuple[list[float], list[dict]]:
    """One backend: two fresh known-rate servers behind `strategy`, `REQUESTS` timed requests one at
    a time; its records' TTFTs and what each server computed of each request."""
    settings = {"ttft": BASE_TTFT_S, "prefill_rate": prefill, "rate": 1000.0, "prefix_cache": True}
    with (
        known_server(**settings) as one,
        known_server(**settings) as two,
        routed_fleet([one.url, two.url], strategy, seed=7) as fleet,
    ):
        argv = ["--no-aws", "--local", "never", "--results-dir", str(tmp_path), "--endpoint",
                fleet.endpoint("fleet", known.MODEL), "--input-tokens", str(INPUT_TOKENS), "--output-tokens", "2",
                "--repeats", str(REQUESTS), "--timeout", "10"]  # fmt: skip
        if prefix_tokens:
            argv += ["--prefix-tokens", str(prefix_tokens), "--prefixes", str(PREFIXES)]
        assert bench.run(argv) == 0
        served = one.stats(), two.stats()
    (path,) = tmp_path.glob("*/bench-*.json")
    records = [r for r in json.loads(path.read_text())["records"] if r.get("ttft_s") is not None]
    # The timed requests as the servers computed them (the warm-ups' short prompts left out).
    computed = [
        {"prompt": p, "cached": c, "first_token_s": t}
        for stats in served
        for p, c, t in zip(stats["prompt_tokens"], stats["cached_tokens"], stats["first_token_s"], strict=True)
        if p >= INPUT_TOKENS / 2
    ]
    assert len(records) == len(computed) == REQUESTS
    return [r["ttft_s"] for r in records], computed


def misses(computed: list[dict], shared: int) -> int:
    """Requests whose shared prefix was not in that copy's cache (with nothing shared: every one)."""
    return sum(1 for c in computed if c["cached"] < (shared or c["prompt"]) / 2)


def check_against_the_servers(measured: list[float], computed: list[dict]) -> None:
    """The runner's TTFT is what the servers took, give or take the loopback and the router."""
    assert abs(mean(measured) - mean(c["first_token_s"] for c in computed)) < 0.03


@pytest.mark.parametrize("shared", [0.9, 0.5])
def test_prefix_aware_routing_beats_least_outstanding_when_prompts_share_a_prefix(tmp_path, shared):
    prefix = round(INPUT_TOKENS * shared)
    aware_ttft, aware = routed_bench(tmp_path / "aware", RoutingConfig("PREFIX_AWARE", 1024, 8), prefix)
    least_ttft, least = routed_bench(tmp_path / "least", RoutingConfig("LEAST_OUTSTANDING_REQUESTS"), prefix)
    # Each prefix is computed once, on its copy; least outstanding computes a prefix again on
    # every copy it sends it to.
    assert misses(aware, prefix) == PREFIXES
    assert misses(least, prefix) > misses(aware, prefix)
    check_against_the_servers(aware_ttft, aware)
    check_against_the_servers(least_ttft, least)
    # What a miss costs (the prefix computed at the server's rate), spread over the requests.
    saved = (misses(least, prefix) - misses(aware, prefix)) * prefix / PREFILL_TOK_S / REQUESTS
    assert mean(least_ttft) - mean(aware_ttft) > saved / 2


def test_with_nothing_shared_the_two_strategies_tie(tmp_path):
    # Nothing to save, so no need of a slow prefill to see it: a whole prompt takes 0.125 s.
    prefill = 2 * PREFILL_TOK_S
    aware_ttft, aware = routed_bench(tmp_path / "aware", RoutingConfig("PREFIX_AWARE", 1024, 8), 0, prefill)
    least_ttft, least = routed_bench(tmp_path / "least", RoutingConfig("LEAST_OUTSTANDING_REQUESTS"), 0, prefill)
    assert misses(aware, 0) == misses(least, 0) == REQUESTS  # every prompt computed whole
    # Each request's TTFT is the server's base plus its whole prompt at the prefill rate.
    expected = BASE_TTFT_S + INPUT_TOKENS / prefill
    for measured, computed in ((aware_ttft, aware), (least_ttft, least)):
        check_against_the_servers(measured, computed)
        assert abs(mean(measured) - expected) < 0.03
    assert abs(mean(aware_ttft) - mean(least_ttft)) < 0.03
