"""Prices a fleet is bought at, beside on-demand (runner/costing/purchase.py): each figure read
through a real boto3 client from a stand-in whose answers the test states (tests/runner/
fake_purchase.py for EC2 Spot and Savings Plans, fake_pricing.py for Bedrock's products), and
checked against a value the test computes from those answers; the same answers recorded and
replayed offline; a refused API one line with the on-demand figure still shown; the committed
snapshots each a recorded answer or why there is none; and runner.advise --purchase pricing its
months at the option where it applies, saying so where it does not."""

from __future__ import annotations

import io
import json
import math
import statistics
from datetime import UTC, datetime

import pytest
from rich.console import Console

from catalog.prices import BEDROCK, EC2, PRICE_SNAPSHOTS, SAGEMAKER, raised_throughput_usd_per_hour
from runner import advise, cost
from runner.core.errors import RunnerError
from runner.costing import purchase
from runner.costing.prices import PriceRequest
from runner.costing.purchase import (
    API_NAMES,
    BEDROCK_BATCH,
    BEDROCK_FLEX,
    BEDROCK_PRIORITY,
    BEDROCK_RESERVED,
    INTERRUPTION_NOT_MEASURED,
    NO_SAGEMAKER_SPOT,
    PROVISIONED_1_MONTH,
    PROVISIONED_6_MONTH,
    SAVINGS_PLAN_1YR,
    SAVINGS_PLAN_3YR,
    SNAPSHOT_FILES,
    SPOT,
    Snapshots,
    Sources,
    purchase_prices,
)
from runner.render.cost import CostFile, render_report
from tests.runner.fake_pricing import FakePricing
from tests.runner.fake_purchase import FakeEC2, FakeSavingsPlans, offering_rate
from tests.runner.test_advise import aws_bench, by_option, expected_g6, expected_serverless
from tests.runner.test_cost import EC2_ATTRIBUTES, bench_file

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
G6 = PriceRequest(EC2, "g6.xlarge", "us-east-1")
# Spot history as the stand-in answers it: zone a changed twice (its latest is the price now),
# zones b and c once; a g5g entry the filter must not take.
HISTORY = [
    {"AvailabilityZone": "us-east-1a", "InstanceType": "g6.xlarge", "SpotPrice": "0.3012", "Timestamp": "2026-12-05T08:00:00Z"},
    {"AvailabilityZone": "us-east-1a", "InstanceType": "g6.xlarge", "SpotPrice": "0.3321", "Timestamp": "2026-12-07T09:00:00Z"},
    {"AvailabilityZone": "us-east-1b", "InstanceType": "g6.xlarge", "SpotPrice": "0.4102", "Timestamp": "2026-12-06T10:00:00Z"},
    {"AvailabilityZone": "us-east-1c", "InstanceType": "g6.xlarge", "SpotPrice": "0.3550", "Timestamp": "2026-12-01T10:00:00Z"},
    {"AvailabilityZone": "us-east-1a", "InstanceType": "g5g.2xlarge", "SpotPrice": "0.2000", "Timestamp": "2026-12-07T09:00:00Z"},
]  # fmt: skip
SPOT_NOW = {"us-east-1a": 0.3321, "us-east-1b": 0.4102, "us-east-1c": 0.3550}
SCORES = [{"Region": "us-east-1", "Score": 7}]
RATES = [
    offering_rate("Compute", "BoxUsage:g6.xlarge", "0.5310", region="us-east-1", instance_type="g6.xlarge"),
    offering_rate("Compute", "BoxUsage:g6.xlarge", "0.3640", years=3, region="us-east-1", instance_type="g6.xlarge"),
    # Not a Linux shared-tenancy hour of g6.xlarge: Windows, a dedicated host, another payment option.
    offering_rate(
        "Compute",
        "BoxUsage:g6.xlarge",
        "0.9",
        operation="RunInstances:0002",
        region="us-east-1",
        instance_type="g6.xlarge",
    ),
    offering_rate("Compute", "DedicatedUsage:g6.xlarge", "0.7", region="us-east-1", instance_type="g6.xlarge"),
    offering_rate(
        "Compute", "BoxUsage:g6.xlarge", "0.5", payment="All Upfront", region="us-east-1", instance_type="g6.xlarge"
    ),
    offering_rate("SageMaker", "USE2-Host:ml.g6.xlarge", "0.8012", region="us-east-2", instance_type="ml.g6.xlarge"),
    offering_rate(
        "SageMaker", "USE2-Host:ml.g6.xlarge", "0.5890", years=3, region="us-east-2", instance_type="ml.g6.xlarge"
    ),
    offering_rate(
        "SageMaker", "USE2-AsyncInf:ml.g6.xlarge", "0.8113", region="us-east-2", instance_type="ml.g6.xlarge"
    ),
]
NOVA = {"model": "Nova Micro", "regionCode": "us-east-1"}
BEDROCK_ENTRIES = [
    # Standard on-demand, a cache read and a cross-region global price: none of them an option here.
    (BEDROCK, NOVA | {"feature": "On-demand Inference", "inferenceType": "Input tokens", "usagetype": "USE1-NovaMicro-input-tokens"}, "1K tokens", "0.000035"),
    (BEDROCK, NOVA | {"feature": "On-demand Inference", "inferenceType": "Output tokens", "usagetype": "USE1-NovaMicro-output-tokens"}, "1K tokens", "0.00014"),
    (BEDROCK, NOVA | {"feature": "On-demand Inference", "inferenceType": "Prompt cache read input tokens", "usagetype": "USE1-NovaMicro-cache-read-input-token-count-batch"}, "1K tokens", "0.00000875"),
    (BEDROCK, NOVA | {"feature": "On-demand Inference", "inferenceType": "Output tokens", "usagetype": "USE1-NovaMicro-output-tokens-cross-region-global-batch"}, "1K tokens", "0.00006"),
    # Batch by its usage type, flex by its service_tier attribute, priority by inferenceType's last word.
    (BEDROCK, NOVA | {"feature": "On-demand Inference", "inferenceType": "Input tokens", "usagetype": "USE1-NovaMicro-input-tokens-batch"}, "1K tokens", "0.0000175"),
    (BEDROCK, NOVA | {"feature": "On-demand Inference", "inferenceType": "Output tokens", "usagetype": "USE1-NovaMicro-output-tokens-batch"}, "1K tokens", "0.00007"),
    (BEDROCK, NOVA | {"feature": "On-demand Inference", "inferenceType": "Input tokens", "usagetype": "USE1-NovaMicro-input-tokens-flex", "service_tier": "Flex"}, "1K tokens", "0.0000180"),
    (BEDROCK, NOVA | {"feature": "On-demand Inference", "inferenceType": "Output tokens", "usagetype": "USE1-NovaMicro-output-tokens-flex", "service_tier": "Flex"}, "1K tokens", "0.0000720"),
    (BEDROCK, NOVA | {"feature": "On-demand Inference", "inferenceType": "Input tokens priority", "usagetype": "USE1-NovaMicro-input-tokens-priority"}, "1K tokens", "0.0000610"),
    (BEDROCK, NOVA | {"feature": "On-demand Inference", "inferenceType": "Output tokens priority", "usagetype": "USE1-NovaMicro-output-tokens-priority"}, "1K tokens", "0.000245"),
    (BEDROCK, NOVA | {"feature": "Provisioned Throughput", "usagetype": "USE1-NovaMicro-ProvisionedThroughput-1month"}, "Hrs", "21.18", "per model unit per hour, 1 month commitment"),
    (BEDROCK, NOVA | {"feature": "Provisioned Throughput", "usagetype": "USE1-NovaMicro-ProvisionedThroughput-6month"}, "Hrs", "13.52", "per model unit per hour, 6 month commitment"),
]  # fmt: skip
EC2_ON_DEMAND = [(EC2, {**EC2_ATTRIBUTES, "instanceType": "g6.xlarge", "regionCode": "us-east-1"}, "Hrs", "0.8048")]


def stand_ins(ec2, savings_plans, pricing):
    clients = {"ec2": ec2.client(), "savingsplans": savings_plans.client(), "pricing": pricing.client()}
    return lambda service, region: clients[service]


def by_option_of(figures):
    return {figure.option: figure for figure in figures}


def test_spot_is_the_median_of_each_zones_current_price_with_the_placement_score_for_the_count():
    with_volume = PriceRequest(EC2, "g6.xlarge", "us-east-1", volume_throughput_mbs=500)
    with FakeEC2(HISTORY, SCORES) as ec2, FakeSavingsPlans([]) as sp, FakePricing([]) as pricing:
        sources = Sources(clients=stand_ins(ec2, sp, pricing))
        found, notices = purchase_prices([G6], sources, {G6: 3}, now=NOW)
        spot = by_option_of(found[(EC2, "g6.xlarge", "us-east-1")])[SPOT]
        raised, _ = purchase_prices([with_volume], Sources(clients=stand_ins(ec2, sp, pricing)), now=NOW)
        asked = [r for r in ec2.requests if r["Action"] == "DescribeSpotPriceHistory"]
        placement = next(r for r in ec2.requests if r["Action"] == "GetSpotPlacementScores")
    assert notices == []
    assert spot.usd_per_hour == pytest.approx(statistics.median(SPOT_NOW.values()))  # 0.3550
    assert (spot.placement_score, spot.placement_count, spot.live) == (7, 3, True)
    assert "placement score 7/10 for 3 instances" in spot.detail and INTERRUPTION_NOT_MEASURED in spot.detail
    assert "us-east-1a $0.3321, us-east-1b $0.4102, us-east-1c $0.355" in spot.detail
    assert spot.source_api == "ec2:DescribeSpotPriceHistory + ec2:GetSpotPlacementScores"
    assert spot.sku == "g6.xlarge Linux/UNIX Spot, us-east-1" and not spot.absent
    # The request as the EC2 API reference spells it, paged (two entries a page) to the end.
    assert asked[0]["InstanceType.1"] == "g6.xlarge" and asked[0]["ProductDescription.1"] == "Linux/UNIX"
    assert asked[0]["StartTime"].startswith("2026-11-30T12:00:00") and asked[0]["EndTime"].startswith("2026-12-07")
    assert [r.get("NextToken") for r in asked[:2]] == [None, "2"]  # four g6 entries, two a page
    assert (placement["TargetCapacity"], placement["TargetCapacityUnitType"], placement["RegionName.1"]) == (
        "3",
        "units",
        "us-east-1",
    )
    # A root volume's raised gp3 throughput is paid beside the Spot hour, undiscounted.
    spot_raised = by_option_of(raised[(EC2, "g6.xlarge", "us-east-1")])[SPOT]
    assert spot_raised.usd_per_hour == pytest.approx(round(0.3550 + raised_throughput_usd_per_hour(500), 4))


def test_savings_plans_take_the_rate_of_the_usage_each_item_is_billed_by():
    items = [
        G6,
        PriceRequest(SAGEMAKER, "ml.g6.xlarge", "us-east-2"),
        PriceRequest(SAGEMAKER, "AsyncInf:ml.g6.xlarge", "us-east-2"),
        PriceRequest(SAGEMAKER, "ServerlessInf:Mem-6GB", "us-east-2"),
    ]
    with FakeEC2(HISTORY, SCORES) as ec2, FakeSavingsPlans(RATES, page_size=2) as sp, FakePricing([]) as pricing:
        found, _ = purchase_prices(items, Sources(clients=stand_ins(ec2, sp, pricing)), now=NOW)
        compute_request = sp.requests[0]
        sagemaker_request = next(r for r in sp.requests if r["savingsPlanTypes"] == ["SageMaker"])
    g6 = by_option_of(found[(EC2, "g6.xlarge", "us-east-1")])
    assert (g6[SAVINGS_PLAN_1YR].usd_per_hour, g6[SAVINGS_PLAN_3YR].usd_per_hour) == (0.5310, 0.3640)
    assert g6[SAVINGS_PLAN_1YR].label == "1-yr Compute Savings Plan, No Upfront"
    assert g6[SAVINGS_PLAN_1YR].sku.startswith("offering 00000000-0000-4000-8000-0001")
    assert compute_request == {
        "savingsPlanPaymentOptions": ["No Upfront"],
        "maxResults": 1000,
        "savingsPlanTypes": ["Compute"],
        "products": ["EC2"],
        "serviceCodes": ["AmazonEC2"],
        "filters": [{"name": "region", "values": ["us-east-1"]}, {"name": "instanceType", "values": ["g6.xlarge"]}],
    }
    assert sagemaker_request["serviceCodes"] == ["AmazonSageMaker"] and sagemaker_request["products"] == ["SageMaker"]
    real_time = by_option_of(found[(SAGEMAKER, "ml.g6.xlarge", "us-east-2")])
    assert (real_time[SAVINGS_PLAN_1YR].usd_per_hour, real_time[SAVINGS_PLAN_3YR].usd_per_hour) == (0.8012, 0.5890)
    assert real_time[SPOT].absent == NO_SAGEMAKER_SPOT
    asynchronous = by_option_of(found[(SAGEMAKER, "AsyncInf:ml.g6.xlarge", "us-east-2")])
    assert asynchronous[SAVINGS_PLAN_1YR].usd_per_hour == 0.8113
    assert asynchronous[SAVINGS_PLAN_3YR].usd_per_hour is None
    assert asynchronous[SAVINGS_PLAN_3YR].absent == (
        "savingsplans:DescribeSavingsPlansOfferingRates: no No Upfront rate for AsyncInf:ml.g6.xlarge in us-east-2"
    )
    serverless = by_option_of(found[(SAGEMAKER, "ServerlessInf:Mem-6GB", "us-east-2")])
    assert serverless[SAVINGS_PLAN_1YR].absent.startswith("not looked up: Serverless Inference is billed per second")


def test_bedrock_batch_tiers_and_provisioned_throughput_from_the_models_products():
    with FakeEC2([]) as ec2, FakeSavingsPlans([]) as sp, FakePricing(BEDROCK_ENTRIES) as pricing:
        found, _ = purchase_prices(
            [PriceRequest(BEDROCK, "Nova Micro", "us-east-1")], Sources(clients=stand_ins(ec2, sp, pricing)), now=NOW
        )
        asked = pricing.requests[0]
    figures = by_option_of(found[(BEDROCK, "Nova Micro", "us-east-1")])
    # Per 1,000 tokens in the price list, per million here.
    expected = {
        BEDROCK_BATCH: (0.0000175 * 1000, 0.00007 * 1000),
        BEDROCK_FLEX: (0.0000180 * 1000, 0.0000720 * 1000),
        BEDROCK_PRIORITY: (0.0000610 * 1000, 0.000245 * 1000),
    }
    for option, (per_input, per_output) in expected.items():
        assert (figures[option].usd_per_million_input, figures[option].usd_per_million_output) == pytest.approx(
            (per_input, per_output)
        ), option
        assert figures[option].source_api == "pricing:GetProducts" and figures[option].sku.startswith("SKU ")
    assert (figures[PROVISIONED_1_MONTH].usd_per_hour, figures[PROVISIONED_6_MONTH].usd_per_hour) == (21.18, 13.52)
    assert figures[BEDROCK_RESERVED].absent.startswith("the reserved tier is priced per 1,000 tokens a minute")
    assert asked["ServiceCode"] == "AmazonBedrock"
    assert {f["Field"]: f["Value"] for f in asked["Filters"]} == {"model": "Nova Micro", "regionCode": "us-east-1"}


def test_answers_recorded_replay_offline_through_the_same_reading_and_a_missing_one_is_absent(tmp_path):
    items = [G6, PriceRequest(BEDROCK, "Nova Micro", "us-east-1")]
    with FakeEC2(HISTORY, SCORES) as ec2, FakeSavingsPlans(RATES) as sp, FakePricing(BEDROCK_ENTRIES) as pricing:
        recording = Sources(clients=stand_ins(ec2, sp, pricing), recording=Snapshots(tmp_path))
        live, _ = purchase_prices(items, recording, now=NOW)
        written = recording.recording.save()
    assert sorted(p.name for p in written) == sorted(SNAPSHOT_FILES.values())
    replayed, notices = purchase_prices(items, Sources(snapshots=Snapshots(tmp_path)), now=NOW)
    assert notices == []
    for key, figures in live.items():
        again = by_option_of(replayed[key])
        for figure in figures:
            assert (again[figure.option].usd_per_hour, again[figure.option].usd_per_million_output) == (
                figure.usd_per_hour,
                figure.usd_per_million_output,
            )
            if not figure.absent:  # dated by the recording, not live
                assert (again[figure.option].live, again[figure.option].as_of) == (False, figure.as_of)
    # Each entry is the request that produced it, without the times that change with every call.
    history = json.loads((tmp_path / SNAPSHOT_FILES["describe_spot_price_history"]).read_text())
    assert history["source_api"] == "ec2:DescribeSpotPriceHistory"
    assert history["entries"][0]["request"] == {
        "InstanceTypes": ["g6.xlarge"],
        "ProductDescriptions": ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
    }
    # An entry recorded without an answer says why; a request with no entry is absent.
    for entry in history["entries"]:
        entry |= {"response": None, "recorded_at": None, "absent": "not recorded: stated by the test"}
    (tmp_path / SNAPSHOT_FILES["describe_spot_price_history"]).write_text(json.dumps(history))
    again, _ = purchase_prices(
        [G6, PriceRequest(EC2, "g6.2xlarge", "us-east-1")], Sources(snapshots=Snapshots(tmp_path))
    )
    assert by_option_of(again[(EC2, "g6.xlarge", "us-east-1")])[SPOT].absent == (
        "ec2:DescribeSpotPriceHistory snapshot: not recorded: stated by the test"
    )
    assert by_option_of(again[(EC2, "g6.2xlarge", "us-east-1")])[SPOT].absent == (
        "ec2:DescribeSpotPriceHistory: no recorded snapshot of this request in ec2-describe-spot-price-history.json"
    )


def test_every_committed_snapshot_entry_is_a_recorded_answer_or_says_why():
    for operation, name in SNAPSHOT_FILES.items():
        data = json.loads((PRICE_SNAPSHOTS / name).read_text())
        assert data["source_api"] == API_NAMES[operation] and data["documentation"].startswith("https://docs.aws.")
        assert data["entries"], name
        for entry in data["entries"]:
            assert entry["region"] and entry["request"], name
            if entry["response"] is None:
                assert entry["absent"] and not entry["recorded_at"], entry
            else:
                datetime.fromisoformat(entry["recorded_at"])  # dated
                assert not entry.get("absent"), entry


def test_a_refused_api_is_one_line_and_the_on_demand_figure_still_shows(tmp_path, monkeypatch):
    """With an account that may not call DescribeSpotPriceHistory or the savingsplans API: one
    line each (each API asked once, not once per item), Spot and the plans absent (no snapshot
    here), the Pricing API's on-demand figure in the row as before, exit 0."""
    monkeypatch.setattr(purchase, "PRICE_SNAPSHOTS", tmp_path / "no-snapshots")
    path = bench_file(tmp_path, {"g6": 131.5, "g5g": 37.2})
    entries = [
        *EC2_ON_DEMAND,
        (EC2, {**EC2_ATTRIBUTES, "instanceType": "g5g.2xlarge", "regionCode": "us-east-1"}, "Hrs", "0.556"),
        *BEDROCK_ENTRIES,
    ]
    with FakeEC2(HISTORY, SCORES) as ec2, FakeSavingsPlans(RATES) as sp, FakePricing(entries, page_size=50) as pricing:
        ec2.deny = {"DescribeSpotPriceHistory"}
        sp.deny = True
        monkeypatch.setattr(
            cost, "boto_client", lambda service, region, timeout: stand_ins(ec2, sp, pricing)(service, region)
        )
        assert cost.run([str(path), "--aws", "--results-dir", str(tmp_path / "out")]) == 0
        spot_asked = [r for r in ec2.requests if r["Action"] == "DescribeSpotPriceHistory"]
    (saved,) = (tmp_path / "out").glob("*/cost-*.json")
    evidence = json.loads(saved.read_text())
    refused = [line for line in evidence["notices"] if "purchase options from the recorded snapshots" in line]
    assert refused == [
        "ec2:DescribeSpotPriceHistory: UnauthorizedOperation: You are not authorized to perform this operation. User "
        "is not authorized to perform: ec2:DescribeSpotPriceHistory; purchase options from the recorded snapshots",
        "savingsplans:DescribeSavingsPlansOfferingRates: AccessDeniedException: User is not authorized to perform: "
        "savingsplans:DescribeSavingsPlansOfferingRates; purchase options from the recorded snapshots",
    ]
    assert len(spot_asked) == 1
    g6 = next(r for r in evidence["records"] if r["backend"] == "g6")
    assert (g6["usd_per_hour"], g6["price"]["live"]) == (0.8048, True)
    figures = {(f["item"], f["option"]): f for f in evidence["purchase"]}
    assert figures[("g6.xlarge", SPOT)]["absent"].startswith("ec2:DescribeSpotPriceHistory: no recorded snapshot")
    # Bedrock's price list still answered: its tiers are there, live.
    assert figures[("Nova Micro", BEDROCK_BATCH)]["usd_per_million_output"] == pytest.approx(0.07)
    assert figures[("Nova Micro", BEDROCK_BATCH)]["live"] is True


def test_the_cost_table_shows_each_option_beside_on_demand_with_its_source_and_date(tmp_path, monkeypatch):
    """Offline, from snapshots recorded here: the g6 row's Spot and plan rates with the $ per
    million output tokens each makes at the row's measured rate, Spot's placement score; below,
    each with what it prices, its API and date, and SageMaker's Spot absent with why."""
    with FakeEC2(HISTORY, SCORES) as ec2, FakeSavingsPlans(RATES) as sp, FakePricing(BEDROCK_ENTRIES) as pricing:
        recording = Sources(clients=stand_ins(ec2, sp, pricing), recording=Snapshots(tmp_path / "snapshots"))
        purchase_prices([G6, PriceRequest(BEDROCK, "Nova Micro", "us-east-1")], recording)
        recording.recording.save()
    monkeypatch.setattr(purchase, "PRICE_SNAPSHOTS", tmp_path / "snapshots")
    path = bench_file(tmp_path, {"g6": 131.5})
    assert cost.run([str(path), "--offline", "--results-dir", str(tmp_path / "out")]) == 0
    (saved,) = (tmp_path / "out").glob("*/cost-*.json")
    out = io.StringIO()
    render_report(CostFile.from_json(json.loads(saved.read_text())), Console(file=out, width=400, color_system=None))
    text = out.getvalue()
    on_demand_per_million = 0.8048 / (131.5 * 3600) * 1e6
    spot = statistics.median(SPOT_NOW.values())
    assert f"Spot $0.3550/h = ${on_demand_per_million * spot / 0.8048:.2f}/M (placement 7/10)" in text
    assert f"SP 1y $0.5310/h = ${on_demand_per_million * 0.5310 / 0.8048:.2f}/M" in text
    assert "batch $0.0175/M in, $0.07/M out" in text
    assert "g6 (g6.xlarge, us-east-1) Spot median $0.3550/h: g6.xlarge Linux/UNIX Spot, us-east-1; " in text
    assert "ec2:DescribeSpotPriceHistory + ec2:GetSpotPlacementScores, snapshot 20" in text
    assert "bedrock (Nova Micro, us-east-1) reserved tier: absent: the reserved tier is priced" in text


def spot_snapshot(tmp_path, monkeypatch):
    """Snapshots of g6.xlarge's Spot history, placement score and plan rates in us-east-1 (the
    region the advise bench ran in), recorded here from the stand-ins."""
    with FakeEC2(HISTORY, SCORES) as ec2, FakeSavingsPlans(RATES) as sp, FakePricing(BEDROCK_ENTRIES) as pricing:
        recording = Sources(clients=stand_ins(ec2, sp, pricing), recording=Snapshots(tmp_path / "snapshots"))
        purchase_prices([G6, PriceRequest(BEDROCK, "Nova Micro", "us-east-1")], recording)
        recording.recording.save()
    monkeypatch.setattr(purchase, "PRICE_SNAPSHOTS", tmp_path / "snapshots")


@pytest.mark.parametrize(("option", "hourly"), [(SPOT, 0.3550), (SAVINGS_PLAN_1YR, 0.5310), (SAVINGS_PLAN_3YR, 0.3640)])
def test_advise_prices_the_month_at_the_option_where_it_applies_and_says_so_where_it_does_not(
    tmp_path, monkeypatch, option, hourly
):
    spot_snapshot(tmp_path, monkeypatch)
    bench = aws_bench(tmp_path)
    out = tmp_path / "advice"
    argv = ["--evidence", str(bench), "--offline", "--results-dir", str(out), "--input-tokens", "20"]
    assert advise.run([*argv, "--output-tokens", "100", "--requests-per-day", "200000", "--purchase", option]) == 0
    (saved,) = out.glob("*/advise-*.json")
    evidence = json.loads(saved.read_text())
    rows = by_option(evidence)
    assert rows["g6"]["monthly_usd"] == pytest.approx(expected_g6(200_000) / 0.8048 * hourly)
    assert rows["g6"]["arithmetic"].startswith(
        ("Spot median: ", "1-yr Compute Savings Plan", "3-yr Compute Savings Plan")
    )
    assert rows["g6"]["price"]["usd_per_hour"] == hourly
    # Serverless has no Spot and no plan read here: on-demand, and the row says why.
    assert rows["sagemaker-serverless"]["monthly_usd"] == pytest.approx(expected_serverless(200_000))
    assert rows["sagemaker-serverless"]["arithmetic"].startswith("on-demand (")
    assert evidence["config"]["purchase"] == option


def test_advise_at_bedrocks_flex_tier_leaves_a_bounded_latency_unknown_and_provisioned_unsized(tmp_path, monkeypatch):
    spot_snapshot(tmp_path, monkeypatch)
    path = bench_file(tmp_path, {"g6": 131.5})
    out = tmp_path / "advice"
    argv = ["--evidence", str(path), "--offline", "--input-tokens", "25", "--output-tokens", "100"]
    argv += ["--requests-per-day", "1000", "--latency-bound", "30"]
    assert advise.run([*argv, "--results-dir", str(out / "flex"), "--purchase", "bedrock-flex"]) in (0, 1)
    (flex,) = (out / "flex").glob("*/advise-*.json")
    rows = by_option(json.loads(flex.read_text()))
    per_request = (25 * 0.0000180 * 1000 + 100 * 0.0000720 * 1000) / 1e6
    assert rows["bedrock"]["monthly_usd"] == pytest.approx(1000 * 730 / 24 * per_request)
    assert rows["bedrock"]["meets"] is None
    assert rows["bedrock"]["why"] == "latency at the flex tier not measured (measured on the standard tier)"
    assert rows["g6"]["arithmetic"].startswith("on-demand (bedrock-flex does not apply to g6")
    assert advise.run([*argv, "--results-dir", str(out / "pt"), "--purchase", PROVISIONED_1_MONTH]) in (0, 1)
    (provisioned,) = (out / "pt").glob("*/advise-*.json")
    row = by_option(json.loads(provisioned.read_text()))["bedrock"]
    assert (row["monthly_usd"], row["meets"]) == (None, None)
    assert row["arithmetic"] == (
        f"Provisioned Throughput, 1-month commitment $21.18 per model unit-hour × 730 h = ${21.18 * 730:,.2f} a month "
        "per model unit; the units this workload needs are unknown"
    )
    assert math.isclose(row["price"]["usd_per_hour"], 21.18)


def test_record_price_snapshots_keeps_the_live_answers_and_needs_an_account(tmp_path, monkeypatch):
    monkeypatch.setattr(purchase, "PRICE_SNAPSHOTS", tmp_path / "snapshots")
    path = bench_file(tmp_path, {"g6": 131.5})
    with pytest.raises(RunnerError, match=r"^--record-price-snapshots records live answers: it needs AWS credentials"):
        cost.run([str(path), "--offline", "--record-price-snapshots", "--results-dir", str(tmp_path / "out")])
    assert not (tmp_path / "snapshots").exists() and not (tmp_path / "out").exists()
    entries = [*EC2_ON_DEMAND, *BEDROCK_ENTRIES]
    with FakeEC2(HISTORY, SCORES) as ec2, FakeSavingsPlans(RATES) as sp, FakePricing(entries) as pricing:
        monkeypatch.setattr(
            cost, "boto_client", lambda service, region, timeout: stand_ins(ec2, sp, pricing)(service, region)
        )
        assert cost.run([str(path), "--aws", "--record-price-snapshots", "--results-dir", str(tmp_path / "out")]) == 0
    spot = json.loads((tmp_path / "snapshots" / SNAPSHOT_FILES["describe_spot_price_history"]).read_text())
    assert [e["region"] for e in spot["entries"]] == ["us-east-1", "us-east-1"]  # g6.xlarge's two pages
    assert all(e["recorded_at"].startswith("2") and e["response"]["SpotPriceHistory"] for e in spot["entries"])
    replayed, _ = purchase_prices([G6], Sources(snapshots=Snapshots(tmp_path / "snapshots")))
    assert by_option_of(replayed[(EC2, "g6.xlarge", "us-east-1")])[SPOT].usd_per_hour == 0.3550
