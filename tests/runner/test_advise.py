"""runner.advise: a workload priced for a month on every measured option, from evidence files
written here in the bench's and batch's own format. Each expected figure is computed in the test
from the records and the offline prices, by the rules the command states (not copied from it):
the winner flips from serverless to an always-on instance as requests/day grow, a latency bound
excludes options (cold starts count against scale-to-zero options when requests are sparse),
evidence not measured on AWS is refused unless asked for, and bad input is one line and exit 2."""

from __future__ import annotations

import json
import math

import pytest

from runner import advise
from tests.runner.test_cost import (
    BATCH_JOB,
    backend_entry,
    batch_evidence,
    closed_loop,
    cold_warm_up,
    one_at_a_time,
    request,
    write_evidence,
)

DAYS = 730 / 24
G6_HOURLY, ASYNC_HOURLY, BATCH_HOURLY = 0.8048, 1.1267, 1.1267
SERVERLESS_PER_S = 6 * 0.0000200  # 6144 MB at $0.0000200 per GB-second
CMU_MINUTE, CMU_MONTH = 0.0785, 1.95
SERVERLESS_WARM, CMI_WARM = [3.9, 4.1, 4.0], [1.0, 1.1, 0.9]
# The cold starts, each the bench's 4-token warm-up: (e2e, time to first token).
SERVERLESS_COLD_UP, CMI_COLD_UP = (8.3, 8.2), (29.0, 28.9)
TTFT = 0.1  # every warm request's time to first token (100 output tokens each)


def cold_for_workload(cold_up: tuple[float, float], warm: list[float], tokens: int = 100) -> float:
    """A cold request of the workload: the warm-up's time beyond a warm 4-token request (a warm
    request's first token plus 3 of its per-token times), plus a warm request of `tokens`."""
    per_token = [(e2e - TTFT) / 99 for e2e in warm]
    warm_four = sum(TTFT + 3 * t for t in per_token) / len(warm)
    warm_workload = sum(TTFT + (tokens - 1) * t for t in per_token) / len(warm)
    return cold_up[0] - warm_four + warm_workload


SERVERLESS_COLD = cold_for_workload(SERVERLESS_COLD_UP, SERVERLESS_WARM)
CMI_COLD = cold_for_workload(CMI_COLD_UP, CMI_WARM)


def aws_bench(tmp_path, name="bench.json", **extra):
    """g6 (one at a time, and 16 at a time at 1.6 s a request), a 6 GB serverless endpoint and a
    Custom Model Import model, each with its cold start (the warm-up) where it scales to zero;
    100 output tokens, 20 prompt tokens a request."""
    records = [
        *one_at_a_time("g6", [0.76, 0.76, 0.76]),
        *closed_loop("g6", 16, 1.6),
        *one_at_a_time("sagemaker-serverless", SERVERLESS_WARM),
        *one_at_a_time("bedrock-import", CMI_WARM),
    ]
    warm_up = [
        cold_warm_up("sagemaker-serverless", *SERVERLESS_COLD_UP),
        cold_warm_up("bedrock-import", *CMI_COLD_UP, phases={"not_ready_s": 28.0}),
    ]
    backends = [
        backend_entry("g6", auto_scaling_group="g", readiness_parameter="/r"),
        backend_entry("sagemaker-serverless", endpoint_name="s", memory_mb=6144, max_concurrency=200),
        backend_entry("bedrock-import", bucket="b", input_prefix="w/", import_role_arn="r", weights_job="j"),
    ]
    return write_evidence(tmp_path, backends, records, name=name, warm_up=warm_up, **extra)


def run_advise(tmp_path, evidence, *flags, code=0):
    out = tmp_path / "advice"
    argv = ["--evidence", *map(str, evidence), "--offline", "--results-dir", str(out)]
    argv += ["--input-tokens", "20", "--output-tokens", "100", *flags]
    assert advise.run(argv) == code
    (saved,) = sorted(out.glob("*/advise-*.json"))[-1:]
    return json.loads(saved.read_text())


def by_option(evidence):
    return {row["option"]: row for row in evidence["records"]}


def expected_g6(per_day: float) -> float:
    capacity = 16 * 100 / 1.6 * 3600 / 100  # output tok/s x 3600 / T requests an hour
    return math.ceil(per_day / 24 / capacity) * 730 * G6_HOURLY


def expected_serverless(per_day: float) -> float:
    rate = per_day / 24  # requests an hour, flat
    cold = math.exp(-rate * 300 / 3600)  # share that finds zero: a gap over 5 minutes
    monthly = per_day * DAYS
    seconds = monthly * (1 - cold) * (sum(SERVERLESS_WARM) / 3) + monthly * cold * SERVERLESS_COLD
    data = monthly * (20 + 100) * 4 / 1e9 * 0.016
    return seconds * SERVERLESS_PER_S + data


def expected_model_import(per_day: float) -> float:
    rate = per_day / 24
    capacity = 100.0 * 3600 / 100  # the median single-request rate, 100 tok/s
    copies = max(1, math.ceil(rate / capacity))
    active = 24 * copies * 60 * (1 - math.exp(-rate * 300 / 3600))
    activations = 24 * rate * math.exp(-rate * 300 / 3600)
    windows = (active + activations * 2.5) / 5
    return windows * 5 * 1 * CMU_MINUTE * DAYS + 1 * CMU_MONTH


def test_the_winner_flips_from_serverless_to_an_always_on_instance_as_requests_grow(tmp_path):
    path = aws_bench(tmp_path)
    quiet = run_advise(tmp_path / "quiet", [path], "--requests-per-day", "100")
    assert [r["option"] for r in quiet["records"]] == ["sagemaker-serverless", "g6", "bedrock-import"]
    busy = run_advise(tmp_path / "busy", [path], "--requests-per-day", "200000")
    assert [r["option"] for r in busy["records"]] == ["g6", "sagemaker-serverless", "bedrock-import"]
    for evidence, per_day in ((quiet, 100), (busy, 200_000)):
        rows = by_option(evidence)
        assert rows["g6"]["monthly_usd"] == pytest.approx(expected_g6(per_day))
        assert rows["sagemaker-serverless"]["monthly_usd"] == pytest.approx(expected_serverless(per_day))
        assert rows["bedrock-import"]["monthly_usd"] == pytest.approx(expected_model_import(per_day))
        assert all(r["meets"] is True for r in evidence["records"])  # no bound given
    # Each option's arithmetic is one line a reader can follow, and the "why" names the winner.
    assert by_option(busy)["g6"]["arithmetic"] == (
        "peak 8,333 req/h ÷ 36,000 per instance at 16 at a time → 1 instance × 730 h × $0.8048 = $587.50"
    )
    assert by_option(quiet)["sagemaker-serverless"]["arithmetic"].startswith("serverless 6144 MB: ")
    assert "active 5-min windows/day × 1 CMU × $0.0785 × 5 min" in by_option(quiet)["bedrock-import"]["arithmetic"]
    assert busy["why"][0].startswith("cheapest within the bound: g6, $587.50/month")
    assert busy["why"][1].startswith("g6 beats sagemaker-serverless by $")


def test_a_level_stopped_midway_sizes_no_instance(tmp_path):
    """A level stopped before its end (Ctrl-C, SIGTERM) keeps the requests that finished, but their
    figures are not the level's: the instance is sized from the level that ran to its end."""
    stopped = closed_loop("g6", 16, 1.6, label="16 at a time (stopped after 32 of 64)", stopped_after=32)
    path = write_evidence(tmp_path, [backend_entry("g6")], [*one_at_a_time("g6", [0.76, 0.76, 0.76]), *stopped])
    (row,) = run_advise(tmp_path, [path], "--requests-per-day", "100000", "--allow-unmeasured-sources")["records"]
    capacity = 100 / 0.76 * 3600 / 100  # one at a time: output tok/s x 3600 / T requests an hour
    assert row["arithmetic"].startswith(f"peak 4,167 req/h ÷ {capacity:,.0f} per instance at 1 at a time → 1 instance")


def test_a_latency_bound_excludes_options_and_sparse_requests_count_cold_starts(tmp_path):
    path = aws_bench(tmp_path)
    # 100 a day: 71 % of requests find serverless and the imported model at zero, so their p95
    # is a cold start (about 12 s and 30 s for 100 tokens), over a 5 s bound; g6 is always on.
    quiet = by_option(run_advise(tmp_path / "quiet", [path], "--requests-per-day", "100", "--latency-bound", "5"))
    share = math.exp(-100 / 24 * 300 / 3600)
    assert quiet["sagemaker-serverless"]["cold_share"] == pytest.approx(share) and share > 0.05
    assert quiet["sagemaker-serverless"]["meets"] is False
    assert quiet["sagemaker-serverless"]["p95_s"] == pytest.approx(SERVERLESS_COLD)
    assert "find zero: the p95 is a cold start" in quiet["sagemaker-serverless"]["why"]
    assert quiet["bedrock-import"]["meets"] is False and quiet["g6"]["meets"] is True
    # 200,000 a day: nothing waits long enough to find zero; the warm p95 (4.09 s) is within 5 s.
    busy = by_option(run_advise(tmp_path / "busy", [path], "--requests-per-day", "200000", "--latency-bound", "5"))
    assert busy["sagemaker-serverless"]["meets"] is True
    assert busy["sagemaker-serverless"]["p95_s"] == pytest.approx(4.09)
    # A 1.2 s bound: g6 at 16 at a time takes 1.6 s, and one at a time it serves 4,737 req/h, so
    # the peak needs 2 instances where it deploys 1; serverless's 4.09 s is over: the import wins.
    tight = run_advise(tmp_path / "tight", [path], "--requests-per-day", "200000", "--latency-bound", "1.2")
    rows = by_option(tight)
    assert tight["records"][0]["option"] == "bedrock-import"
    assert rows["g6"]["meets"] is False and rows["g6"]["why"] == "needs 2 instances at peak; it deploys at most 1"
    assert rows["sagemaker-serverless"]["meets"] is False
    assert rows["sagemaker-serverless"]["why"].startswith("p95 end-to-end 4.09 s > bound 1.2 s")


def test_async_pays_while_up_and_for_leaving_zero(tmp_path):
    records = [
        *closed_loop("sagemaker-async", 4, 2.0),
        request("sagemaker-async", 99, 400.0, 100, cold_start=True, phases={"leave_zero_s": 380.0, "work_s": 2.0}),
    ]
    backend = backend_entry(
        "sagemaker-async",
        endpoint_name="a",
        bucket="b",
        input_prefix="i/",
        output_prefix="o/",
        min_instances=0,
        max_instances=1,
    )
    path = write_evidence(tmp_path, [backend], records)
    (row,) = run_advise(tmp_path, [path], "--requests-per-day", "100", "--latency-bound", "60", code=1)["records"]
    rate = 100 / 24
    up = 24 * (1 - math.exp(-rate * 900 / 3600))  # zero after 15 minutes without a request
    wakeups = 24 * rate * math.exp(-rate * 900 / 3600)
    assert row["monthly_usd"] == pytest.approx((up + wakeups * 380.0 / 3600) * DAYS * ASYNC_HOURLY)
    # A third of the requests find it at zero: the p95 is leaving zero (400 s), over a minute.
    assert row["meets"] is False and row["p95_s"] == pytest.approx(400.0)


def test_batch_runs_one_job_a_day_and_misses_any_interactive_bound(tmp_path):
    path = batch_evidence(tmp_path, [BATCH_JOB])
    (row,) = run_advise(tmp_path / "free", [path], "--requests-per-day", "1000")["records"]
    run_s = 1000 * 100 / BATCH_JOB["output_tok_s"]  # the day's tokens at the job's rate over its billable time
    assert row["billing"] == "job-instance-hours" and row["meets"] is True
    assert row["monthly_usd"] == pytest.approx(run_s / 3600 * 1 * BATCH_HOURLY * DAYS)
    (row,) = run_advise(tmp_path / "bound", [path], "--requests-per-day", "1000", "--latency-bound", "60", code=1)[
        "records"
    ]
    assert row["meets"] is False and "waits for the day's job" in row["why"]


def test_evidence_not_from_aws_is_refused_unless_asked_for(tmp_path, capsys, run_main):
    emulated = aws_bench(tmp_path, name="emulated.json", emulated=True)
    with pytest.raises(SystemExit) as stopped:
        run_main(["--requests-per-day", "100", "--evidence", str(emulated), "--offline"], tmp_path)
    assert stopped.value.code == 2
    line = one_line(capsys)
    assert "no option measured on AWS to advise on: g6" in line and "emulated AWS" in line
    assert "--allow-unmeasured-sources ranks it, labelled" in line
    labelled = run_advise(tmp_path, [emulated], "--requests-per-day", "100", "--allow-unmeasured-sources")
    assert {r["provenance"] for r in labelled["records"]} == {"emulated AWS"}
    assert "NOT AWS: emulated AWS" in capsys.readouterr().out
    # Mixed: the AWS options are ranked, the --endpoint and embedded ones are not.
    from catalog import BackendKind

    mixed = write_evidence(
        tmp_path,
        [
            backend_entry("g6", auto_scaling_group="g", readiness_parameter="/r"),
            backend_entry("g5g", source="--endpoint", kind=BackendKind.OPENAI),
            backend_entry("local", source="embedded"),
        ],
        [*one_at_a_time("g6", [0.76]), *one_at_a_time("g5g", [2.7]), *one_at_a_time("local", [1.5])],
    )
    evidence = run_advise(tmp_path / "mixed", [mixed], "--requests-per-day", "100")
    assert [r["option"] for r in evidence["records"]] == ["g6"]
    assert evidence["refused"] == [f"g5g ({mixed}): measured on --endpoint server, not known to be AWS, not AWS"]
    assert any(n.startswith("local (") and "not billed by AWS" in n for n in evidence["notices"])


@pytest.fixture
def run_main(monkeypatch):
    """`python -m runner.advise ARGV` as the shell runs it: main_guard, its exit status and stderr."""

    def main(argv, tmp_path):
        monkeypatch.setattr("sys.argv", ["runner.advise", *argv, "--results-dir", str(tmp_path / "never")])
        advise.main()

    return main


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert err.startswith("error: ")
    return err


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--requests-per-day", "0"], "--requests-per-day '0': must be above 0"),
        (["--requests-per-day", "-5"], "--requests-per-day '-5': must be above 0"),
        (["--requests-per-day", "many"], "--requests-per-day 'many': expected a number above 0"),
        ([], "--requests-per-day N is required"),
        (["--requests-per-day", "10", "--shape", "weekly"], "--shape 'weekly': unknown shape; known shapes: flat,"),
        (["--requests-per-day", "10", "--hourly", ",".join(["0"] * 24)], "weights must be 0 or more and sum to more"),
        (["--requests-per-day", "10", "--hourly", ",".join(["1"] * 23)], "expected 24 weights, one per hour, got 23"),
        (["--requests-per-day", "10", "--hourly", "a,b"], "expected 24 comma-separated numbers"),
        (["--requests-per-day", "10", "--shape", "flat", "--hourly", "1"], "--shape and --hourly are two ways"),
        (["--requests-per-day", "10", "--output-tokens", "1.5"], "--output-tokens '1.5': expected a whole number"),
        (["--requests-per-day", "10", "--latency-bound", "0"], "--latency-bound '0': must be above 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, run_main, flags, says):
    evidence = aws_bench(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        run_main([*flags, "--evidence", str(evidence), "--offline"], tmp_path)
    assert stopped.value.code == 2
    assert says in one_line(capsys)
    assert not (tmp_path / "never").exists()


def test_evidence_of_another_command_or_none_at_all_is_one_line_and_exit_2(tmp_path, capsys, run_main):
    counting = write_evidence(tmp_path, [], [], command="counting", name="counting.json")
    with pytest.raises(SystemExit) as stopped:
        run_main(["--requests-per-day", "10", "--evidence", str(counting), "--offline"], tmp_path)
    assert stopped.value.code == 2
    assert "is counting evidence; runner.advise reads bench or batch evidence" in one_line(capsys)
    with pytest.raises(SystemExit) as stopped:
        run_main(["--requests-per-day", "10", "--offline"], tmp_path / "empty")
    assert stopped.value.code == 2
    assert "no bench or batch evidence under" in one_line(capsys)


def test_the_newest_bench_and_batch_evidence_are_the_default(tmp_path):
    results = tmp_path / "results"
    (results / "2026-11-30").mkdir(parents=True)
    (results / "2026-12-01").mkdir()
    aws_bench(results / "2026-11-30", name="bench-235959-000.json")
    newest = aws_bench(results / "2026-12-01", name="bench-080000-000.json")
    batch = batch_evidence(results / "2026-11-30", [BATCH_JOB], name="batch-120000-000.json")
    assert advise.run(["--requests-per-day", "100", "--offline", "--results-dir", str(results)]) == 0
    (saved,) = results.glob("*/advise-*.json")
    assert json.loads(saved.read_text())["config"]["evidence"] == [str(newest), str(batch)]


def test_the_shapes_and_hourly_weights_spread_the_day(tmp_path):
    from runner.costing.advice import SHAPES, cold_share

    path = aws_bench(tmp_path)
    evidence = run_advise(tmp_path / "b", [path], "--requests-per-day", "800", "--shape", "business-hours")
    hours = evidence["config"]["workload"]["per_hour"]
    assert hours == [100.0 if 9 <= h < 17 else 0.0 for h in range(24)] and SHAPES["business-hours"][9] == 1.0
    rows = by_option(evidence)
    assert rows["sagemaker-serverless"]["cold_share"] == pytest.approx(cold_share(hours, 300))
    assert rows["sagemaker-serverless"]["cold_share"] == pytest.approx(math.exp(-100 * 300 / 3600))
    weights = ",".join("3" if h == 12 else "0" for h in range(24))
    evidence = run_advise(tmp_path / "h", [path], "--requests-per-day", "50000", "--hourly", weights)
    assert max(evidence["config"]["workload"]["per_hour"]) == 50000.0
    # All 50,000 in one hour: g6 at 36,000 an hour needs two instances, and deploys one.
    assert by_option(evidence)["g6"]["meets"] is False


def test_help_works(capsys):
    with pytest.raises(SystemExit) as stopped:
        advise.run(["--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert "--requests-per-day" in out and "--allow-unmeasured-sources" in out and "business-hours" in out
