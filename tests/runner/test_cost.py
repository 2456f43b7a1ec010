"""runner.cost: the survey's own figures from its inputs, the Pricing API's answers read through a
real boto3 client, the offline fallback, and bad input."""

from __future__ import annotations

import json

import pytest

from catalog.prices import BEDROCK, EC2, HOURS_PER_MONTH, SAGEMAKER, offline_price
from runner import cost
from runner.cloud import pricing
from runner.cloud.pricing import PriceList, PriceRequest, PricingError, price_all
from runner.core.errors import RunnerError
from tests.runner.fake_pricing import FakePricing

SURVEY = {  # backend: (instance type, $/hour, measured tok/s, its published $ per million)
    "g6": ("g6.xlarge", 0.8048, 131.5, 1.70),
    "inf2": ("inf2.xlarge", 0.7582, 36.4, 5.79),
    "trn1": ("trn1.2xlarge", 1.3438, 37.1, 10.06),
    "g5g": ("g5g.2xlarge", 0.556, 37.2, 4.15),
}
EC2_ATTRIBUTES = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
    "productFamily": "Compute Instance",
}


@pytest.mark.parametrize("backend", sorted(SURVEY))
def test_the_surveys_cost_per_million_from_its_inputs(backend):
    _, price, rate, published = SURVEY[backend]
    assert round(pricing.usd_per_million_output(price, rate), 2) == published


def test_break_even_and_month_arithmetic():
    # g6 at $0.8048/h against Nova Micro's $0.14 per million output tokens: 1597 output tok/s.
    assert pricing.breakeven_tok_s(0.8048, 0.14) == pytest.approx(0.8048 / 3600 / 0.14e-6)
    assert round(pricing.breakeven_tok_s(0.8048, 0.14)) == 1597
    assert round(0.8048 * HOURS_PER_MONTH) == 588  # the survey's "$588/mo"
    nova = offline_price(BEDROCK, "Nova Micro", "us-east-1")
    # 17 prompt tokens per 94 output tokens add 17/94 x $0.035 to each million output tokens.
    assert pricing.bedrock_per_million_output(nova, 17 / 94) == pytest.approx(0.14 + 17 / 94 * 0.035)


def bench_file(tmp_path, rates: dict[str, float], command: str = "bench"):
    backends = [
        {"name": name, "kind": "ec2-vllm", "region": "us-east-1", "catalog": {"instance_type": SURVEY[name][0]}}
        for name in rates
    ] + [{"name": "bedrock", "kind": "bedrock", "region": "us-east-1", "model_id": "us.amazon.nova-micro-v1:0"}]
    records = [
        {
            "backend": name,
            "run": run,
            "ok": True,
            "tokens_per_s": rate + delta,
            "output_tokens": 94,
            "prompt_tokens": 17,
            "e2e_s": 1.0,
        }
        for name, rate in rates.items()
        for run, delta in enumerate((-1.0, 0.0, 1.0), start=1)
    ] + [
        {
            "backend": "bedrock",
            "run": 1,
            "ok": True,
            "tokens_per_s": 111.9,
            "output_tokens": 100,
            "prompt_tokens": 25,
            "e2e_s": 0.9,
        }
    ]
    path = tmp_path / f"{command}.json"
    path.write_text(
        json.dumps({"schema": 1, "command": command, "config": {}, "backends": backends, "records": records})
    )
    return path


def test_cost_reproduces_the_surveys_table_offline_with_prices_and_sources_in_evidence(tmp_path):
    path = bench_file(tmp_path, {name: figures[2] for name, figures in SURVEY.items()})
    assert cost.run([str(path), "--offline", "--results-dir", str(tmp_path)]) == 0
    (saved,) = tmp_path.glob("*/cost-*.json")
    evidence = json.loads(saved.read_text())
    rows = {r["backend"]: r for r in evidence["records"]}
    for name, (_, price, rate, published) in SURVEY.items():
        assert rows[name]["output_tok_s"] == rate  # the median of the three runs
        assert round(rows[name]["usd_per_million_output"], 2) == published
        assert rows[name]["usd_per_month_24x7"] == pytest.approx(price * 730)
        assert rows[name]["price"]["source"].endswith("(repository xbill9/aws-inference-strands)")
    assert rows["bedrock"]["usd_per_million_output"] == pytest.approx(0.14 + 0.25 * 0.035)
    assert {p["item"] for p in evidence["prices"]} >= {"g6.xlarge", "Nova Micro"}
    assert evidence["notices"] == ["prices from the offline table (--offline)"]


def test_live_prices_are_read_from_the_pricing_api_through_a_real_client():
    entries = [
        (EC2, {**EC2_ATTRIBUTES, "instanceType": "g6.xlarge", "regionCode": "us-east-2"}, "Hrs", "0.8048000000"),
        # A Windows product must not be picked by the Linux filters.
        (
            EC2,
            {**EC2_ATTRIBUTES, "operatingSystem": "Windows", "instanceType": "g6.xlarge", "regionCode": "us-east-2"},
            "Hrs",
            "0.9888",
        ),
        (
            SAGEMAKER,
            {
                "instanceName": "ml.g6.xlarge",
                "regionCode": "us-east-2",
                "productFamily": "ML Instance",
                "component": "Hosting",
            },
            "Hrs",
            "1.1267",
        ),
        (
            BEDROCK,
            {
                "model": "Nova Micro",
                "regionCode": "us-east-1",
                "feature": "On-demand Inference",
                "inferenceType": "Input tokens",
            },
            "1K tokens",
            "0.000035",
        ),
        (
            BEDROCK,
            {
                "model": "Nova Micro",
                "regionCode": "us-east-1",
                "feature": "On-demand Inference",
                "inferenceType": "Output tokens",
            },
            "1K tokens",
            "0.00014",
        ),
        (
            BEDROCK,
            {
                "model": "Nova Micro",
                "regionCode": "us-east-1",
                "feature": "On-demand Inference",
                "inferenceType": "Output tokens",
                "service_tier": "priority",
            },
            "1K tokens",
            "0.00025",
        ),
    ]
    with FakePricing(entries) as fake:
        prices = PriceList(fake.client())
        g6 = prices.ec2_instance("g6.xlarge", "us-east-2")
        assert (g6.usd_per_hour, g6.live, g6.region) == (0.8048, True, "us-east-2")
        assert prices.sagemaker_hosting("ml.g6.xlarge", "us-east-2").usd_per_hour == 1.1267
        nova = prices.bedrock_tokens("Nova Micro", "us-east-1")
        assert (nova.usd_per_million_input, nova.usd_per_million_output) == pytest.approx((0.035, 0.14))
        # Pages followed: the two Bedrock standard-tier products and the priority one came one per page.
        assert [r.get("NextToken") for r in fake.requests if r["ServiceCode"] == BEDROCK] == [None, "1", "2"]
        with pytest.raises(PricingError, match=r"no hourly on-demand price for p5\.48xlarge in us-east-2"):
            prices.ec2_instance("p5.48xlarge", "us-east-2")


def test_a_pricing_api_error_falls_back_to_the_dated_table_once(tmp_path):
    with FakePricing([]) as fake:
        fake.deny = True
        requests = [PriceRequest(EC2, "g6.xlarge", "us-east-1"), PriceRequest(EC2, "inf2.xlarge", "us-east-2")]
        prices, notices = price_all(requests, PriceList(fake.client()))
        # The API failed as a whole: asked once, not once per item.
        assert len(fake.requests) == 1
    assert notices == [
        "Pricing API AmazonEC2: AccessDeniedException: User is not authorized to perform: pricing:GetProducts; "
        "using the offline table"
    ]
    assert prices[requests[0]].usd_per_hour == 0.8048 and not prices[requests[0]].live
    assert "none for us-east-2" in prices[requests[1]].note


def test_evidence_from_another_command_or_no_file_is_one_line_and_writes_nothing(tmp_path):
    counting = bench_file(tmp_path, {"g6": 131.5}, command="counting")
    with pytest.raises(RunnerError, match=r"is counting evidence; runner.cost reads bench evidence"):
        cost.run([str(counting), "--offline", "--results-dir", str(tmp_path / "out")])
    with pytest.raises(RunnerError, match=r"missing.json does not exist"):
        cost.run([str(tmp_path / "missing.json"), "--offline", "--results-dir", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_a_known_backend_given_by_endpoint_is_priced_as_that_backend(tmp_path):
    """The survey's manual-forward flow: `bench --endpoint g6=URL` measures g6 (the bench table
    says g6), so `cost` prices the g6 instance, not 'not billed by AWS'."""
    from runner import bench
    from tests.runner.fake_openai import FakeOpenAI, text

    with FakeOpenAI([text("The ocean is wide and deep.", usage_tokens=9)]) as server:
        argv = ["--endpoint", f"g6={server.url}", "--backends", "g6", "--repeats", "1", "--no-aws", "--local", "never"]
        assert bench.run([*argv, "--results-dir", str(tmp_path / "bench")]) == 0
    (measured,) = (tmp_path / "bench").glob("*/bench-*.json")
    assert cost.run([str(measured), "--offline", "--results-dir", str(tmp_path / "cost")]) == 0
    (saved,) = (tmp_path / "cost").glob("*/cost-*.json")
    (row,) = [r for r in json.loads(saved.read_text())["records"] if r["backend"] == "g6"]
    assert row.get("note") != "not billed by AWS"
    assert (row["billed_by"], row["usd_per_hour"], row["region"]) == ("g6.xlarge", 0.8048, "us-east-2")
    assert row["usd_per_million_output"] > 0
