"""runner.cost: the survey's own figures from its inputs, the Pricing API's answers read through a
real boto3 client, the offline fallback, bad input, and a row per billing model (serverless,
async, batch transform, Custom Model Import) on evidence files written here in the bench's and
batch's own format, each figure recomputed in the test from the inputs."""

from __future__ import annotations

import json
import math

import pytest

from catalog.prices import BEDROCK, EC2, HOURS_PER_MONTH, SAGEMAKER, offline_price
from runner import cost
from runner.core.errors import RunnerError
from runner.costing.arithmetic import bedrock_per_million_output, breakeven_tok_s, usd_per_million_output
from runner.costing.prices import PriceList, PriceRequest, PricingError, lookup, price_all
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
    assert round(usd_per_million_output(price, rate), 2) == published


def test_break_even_and_month_arithmetic():
    # g6 at $0.8048/h against Nova Micro's $0.14 per million output tokens: 1597 output tok/s.
    assert breakeven_tok_s(0.8048, 0.14) == pytest.approx(0.8048 / 3600 / 0.14e-6)
    assert round(breakeven_tok_s(0.8048, 0.14)) == 1597
    assert round(0.8048 * HOURS_PER_MONTH) == 588  # the survey's "$588/mo"
    nova = offline_price(BEDROCK, "Nova Micro", "us-east-1")
    # 17 prompt tokens per 94 output tokens add 17/94 x $0.035 to each million output tokens.
    assert bedrock_per_million_output(nova, 17 / 94) == pytest.approx(0.14 + 17 / 94 * 0.035)


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
            "e2e_s": 94 / (rate + delta),
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
            "e2e_s": 100 / 111.9,
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
    with pytest.raises(RunnerError, match=r"is counting evidence; runner.cost reads bench or batch evidence"):
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


# --- Evidence in the commands' own format: Backend.to_json() entries, RequestRecord.to_json() records.


def backend_entry(name: str, *, source: str = "stack output", region: str = "us-east-1", kind=None, **output):
    """One backend as bench writes it: from its catalog entry and a stack output (fields as given)."""
    from catalog import get_backend
    from catalog.contract import BackendOutput
    from runner.core.backends import Backend

    spec = get_backend(name)
    stack_output = BackendOutput(
        name=name,
        kind=spec.kind.value,
        region=region,
        model_id=spec.model_id,
        port=spec.port,
        health_path=spec.health_path,
        instance_type=spec.instance_type,
        **output,
    )
    return Backend(
        name=name,
        kind=kind or spec.kind,
        title=spec.title,
        model_id=spec.model_id,
        source=source,
        region=region,
        spec=spec,
        output=stack_output,
    ).to_json()


def request(backend: str, run: int, e2e: float, tokens: int, *, ttft: float = 0.1, prompt: int = 20, **fields):
    from runner.core.records import Level, RequestRecord

    record = RequestRecord(
        backend=backend, run=run, ok=True, e2e_s=e2e, ttft_s=ttft, output_tokens=tokens, prompt_tokens=prompt
    )
    for key, value in fields.items():
        setattr(record, key, Level.from_json(value, "a level") if key == "level" else value)
    return record.to_json()


def one_at_a_time(backend: str, times: list[float], tokens: int = 100, **fields) -> list[dict]:
    """A plain bench run: requests one after another (no send times), level '1 at a time'."""
    from runner.measure.load import LoadLevel

    level = LoadLevel("concurrency", 1, len(times)).to_json()
    return [request(backend, run, e2e, tokens, level=level, **fields) for run, e2e in enumerate(times, start=1)]


def closed_loop(backend: str, concurrency: int, e2e: float, *, waves: int = 2, tokens: int = 100, **level_extra):
    """A closed-loop level: `waves` waves of `concurrency` requests of `e2e` seconds each, back to back,
    so the level's wall time is waves x e2e and its output tok/s concurrency x tokens / e2e."""
    from runner.measure.load import LoadLevel

    level = LoadLevel("concurrency", concurrency, concurrency * waves).to_json() | level_extra
    return [
        request(
            backend, wave * concurrency + slot + 1, e2e, tokens, level=level, sent_s=wave * e2e, scheduled_s=wave * e2e
        )
        for wave in range(waves)
        for slot in range(concurrency)
    ]


def write_evidence(tmp_path, backends, records, *, command="bench", name=None, **extra):
    path = tmp_path / (name or f"{command}-{len(list(tmp_path.glob('*.json')))}.json")
    data = {"schema": 1, "command": command, "config": {}, "backends": backends, "records": records, "notices": []}
    path.write_text(json.dumps(data | extra))
    return path


def run_cost(tmp_path, *paths, extra=()):
    out = tmp_path / "cost-out"
    assert cost.run([*map(str, paths), "--offline", "--results-dir", str(out), *extra]) == 0
    (saved,) = out.glob("*/cost-*.json")
    return json.loads(saved.read_text())


def rows_of(evidence, backend):
    return {r.get("level"): r for r in evidence["records"] if r["backend"] == backend}


def cold_warm_up(backend: str, e2e: float, ttft: float, **fields):
    """The bench's cold start on a path that scales from zero: its warm-up, "Hi" for 4 tokens,
    timed and kept under `warm_up` with cold_start true."""
    return request(backend, 0, e2e, 4, ttft=ttft, prompt=9, cold_start=True, **fields)


def test_serverless_is_priced_by_compute_seconds_with_cold_starts_apart(tmp_path):
    warm = [3.9, 4.1, 4.0]
    records = one_at_a_time("sagemaker-serverless", warm)
    cold = cold_warm_up("sagemaker-serverless", 11.5, 11.3)
    backend = backend_entry("sagemaker-serverless", endpoint_name="sls", memory_mb=6144, max_concurrency=4)
    path = write_evidence(tmp_path, [backend], records, warm_up=[cold])
    rows = rows_of(run_cost(tmp_path, path), "sagemaker-serverless")
    level = rows["1 at a time"]
    per_second = 0.00002 * 6  # $0.0000200 per GB-second at 6 GB
    assert level["billing"] == "serverless-seconds" and level["billed_by"] == "ServerlessInf:Mem-6GB"
    assert level["price"]["usd_per_second"] == pytest.approx(per_second)
    data = 3 * (20 + 100) * 4 / 1e9 * 0.016  # 4 bytes per prompt and output token, $0.016 per GB
    assert level["usd_per_million_output"] == pytest.approx((sum(warm) * per_second + data) / 300 * 1e6)
    # The cold request never enters the level's figures: it is a row of its own, billed in full.
    assert level["figures"]["requests"] == 3
    assert rows["cold start"]["usd_per_event"] == pytest.approx(11.5 * per_second)
    assert level["provenance"] is None and level["price"]["verified"] is False


def test_async_is_priced_while_running_and_leaving_zero_apart(tmp_path):
    phases = {"queued_s": 1.0, "leave_zero_s": 380.0, "work_s": 4.0}
    records = [
        *closed_loop("sagemaker-async", 4, 2.0),
        request("sagemaker-async", 99, 400.0, 100, cold_start=True, phases=phases),
    ]
    backend = backend_entry(
        "sagemaker-async",
        region="us-east-2",
        endpoint_name="async",
        bucket="b",
        input_prefix="in/",
        output_prefix="out/",
        min_instances=0,
        max_instances=1,
    )
    rows = rows_of(run_cost(tmp_path, write_evidence(tmp_path, [backend], records)), "sagemaker-async")
    hourly = 1.1267
    level = rows["4 at a time"]
    assert level["billing"] == "instance-hours-while-running" and level["billed_by"] == "AsyncInf:ml.g6.xlarge"
    assert level["output_tok_s"] == pytest.approx(4 * 100 / 2.0)
    assert level["usd_per_million_output"] == pytest.approx(hourly / (200 * 3600) * 1e6)
    # us-east-2 is priced from the us-east-1 figure, and says so.
    assert "none for us-east-2" in level["price"]["note"]
    # One burst after idle: the measured time to leave zero plus 15 minutes before scale-in.
    assert rows["leaving zero"]["usd_per_event"] == pytest.approx((380.0 + 15 * 60) / 3600 * hourly)


def test_custom_model_import_rounds_active_time_up_to_five_minute_windows(tmp_path):
    records = closed_loop("bedrock-import", 2, 50.0, waves=8)  # 400 s of activity: two 5-minute windows
    backend = backend_entry(
        "bedrock-import",
        bucket="b",
        input_prefix="w/",
        import_role_arn="arn:aws:iam::1:role/i",
        weights_job="j",
    )
    evidence = run_cost(tmp_path, write_evidence(tmp_path, [backend], records))
    rows = rows_of(evidence, "bedrock-import")
    level = rows["2 at a time"]
    assert level["billing"] == "model-unit-minutes"
    windows = math.ceil(8 * 50.0 / 300)
    assert windows == 2
    assert level["usd_per_million_output"] == pytest.approx(windows * 5 * 1 * 0.0785 / (16 * 100) * 1e6)
    assert "1 CMU assumed" in level["basis"]
    assert rows["storage"]["fixed_usd_per_month"] == pytest.approx(1.95)
    # What GetImportedModel says (customModelUnits) wins over the assumption.
    backend["customModelUnits"] = {"customModelUnitsPerModelCopy": 2, "customModelUnitsVersion": "1.0"}
    rows = rows_of(run_cost(tmp_path / "two", write_evidence(tmp_path, [backend], records)), "bedrock-import")
    assert rows["2 at a time"]["usd_per_million_output"] == pytest.approx(2 * 5 * 2 * 0.0785 / 1600 * 1e6)
    assert rows["storage"]["fixed_usd_per_month"] == pytest.approx(2 * 1.95)


def batch_evidence(tmp_path, jobs, name="batch.json"):
    backend = backend_entry(
        "sagemaker-batch",
        model_name="m",
        bucket="b",
        input_prefix="in/",
        output_prefix="out/",
    )
    return write_evidence(tmp_path, [backend], [], command="batch", name=name, jobs=jobs)


# A transform job as runner.batch records it: its rates are over its billable time (start-up included).
BATCH_JOB = {
    "backend": "sagemaker-batch",
    "job_name": "t-1",
    "status": "Completed",
    "records": 480,
    "ok_records": 480,
    "billable_s": 612.0,
    "instance_type": "ml.g6.xlarge",
    "instance_count": 1,
    "output_tokens": 48_000,
    "prompt_tokens": 9_600,
    "records_per_s": 480 / 612.0,
    "output_tok_s": 48_000 / 612.0,
    "usd_per_hour": 1.1267,
    "price_usd": 1.1267 * 612.0 / 3600,
}


def test_batch_evidence_is_priced_per_job_by_its_instances_for_its_billable_time(tmp_path):
    jobs = [BATCH_JOB, BATCH_JOB | {"job_name": "t-2", "instance_count": 2, "billable_s": 400.0}]
    evidence = run_cost(tmp_path, batch_evidence(tmp_path, jobs))
    rows = rows_of(evidence, "sagemaker-batch")
    for job in jobs:
        row = rows[f"job {job['job_name']}"]
        usd = job["billable_s"] / 3600 * job["instance_count"] * 1.1267
        assert row["billing"] == "job-instance-hours" and row["billed_by"] == "Tsform:ml.g6.xlarge"
        assert row["usd_per_job"] == pytest.approx(usd)
        assert row["usd_per_million_output"] == pytest.approx(usd / job["output_tokens"] * 1e6)
        assert row["output_tok_s"] == job["output_tok_s"]


def test_figures_not_from_aws_are_labelled(tmp_path):
    from catalog import BackendKind

    records = one_at_a_time("g6", [0.76, 0.76]) + one_at_a_time("local", [1.5]) + one_at_a_time("sagemaker", [0.9])
    backends = [
        backend_entry("g6", source="--endpoint", kind=BackendKind.OPENAI),
        backend_entry("local", source="embedded"),
        backend_entry("sagemaker", endpoint_name="e") | {"emulated": "moto 5.2.5"},
    ]
    evidence = run_cost(tmp_path, write_evidence(tmp_path, backends, records))
    labels = {r["backend"]: r["provenance"] for r in evidence["records"]}
    assert labels == {
        "g6": "--endpoint server, not known to be AWS",
        "local": "embedded model on this machine",
        "sagemaker": "emulated AWS (moto 5.2.5)",
    }
    # The g6 row is still priced as g6 (the survey's manual forward), only labelled.
    (g6,) = [r for r in evidence["records"] if r["backend"] == "g6"]
    assert g6["usd_per_million_output"] == pytest.approx(0.8048 / (100 / 0.76 * 3600) * 1e6)


def sweep(backend, seconds_by_concurrency, **level_extra):
    return [r for c, e2e in seconds_by_concurrency.items() for r in closed_loop(backend, c, e2e, **level_extra)]


def test_second_instance_needs_a_real_account_when_the_sweep_is_emulated(tmp_path):
    # tok/s: 1 -> 100, 2 -> 181.8, 4 -> 200, 8 -> 200: one instance stops growing at 4 at a time.
    records = sweep("sagemaker", {1: 1.0, 2: 1.1, 4: 2.0, 8: 4.0})
    backend = backend_entry("sagemaker", endpoint_name="e", max_instances=2)
    path = write_evidence(tmp_path, [backend], records, emulated=True)
    (scaling,) = run_cost(tmp_path, path)["scaling"]
    assert scaling["capacity_level"] == "4 at a time" and scaling["capacity_tok_s"] == pytest.approx(200)
    assert scaling["one_instance_usd_per_million"] == pytest.approx(1.1267 / (200 * 3600) * 1e6)
    assert scaling["verdict"].startswith("needs a real account: scaling under load is not emulated")


def test_second_instance_from_a_real_sweep_that_grew_past_one_instance(tmp_path):
    # On AWS with max_instances 2: flat from 4 to 8, then 16 at a time reaches 421 tok/s (two instances).
    records = sweep("sagemaker", {1: 1.0, 2: 1.1, 4: 2.0, 8: 4.0, 16: 3.8})
    backend = backend_entry("sagemaker", endpoint_name="e", max_instances=2)
    (scaling,) = run_cost(tmp_path, write_evidence(tmp_path, [backend], records))["scaling"]
    two = 2 * 1.1267 / (16 * 100 / 3.8 * 3600) * 1e6
    assert scaling["scaled_level"] == "16 at a time" and scaling["instances"] == 2
    assert scaling["scaled_usd_per_million"] == pytest.approx(two)
    assert two < scaling["one_instance_usd_per_million"] and scaling["pays_for_itself"]
    assert scaling["verdict"].startswith("a second instance pays for itself at 16 at a time")
    # With one instance allowed the same figures only say what a real account would show.
    backend = backend_entry("sagemaker", endpoint_name="e", max_instances=1)
    (scaling,) = run_cost(tmp_path / "one", write_evidence(tmp_path, [backend], records))["scaling"]
    assert "max_instances 1" in scaling["verdict"] and scaling["verdict"].startswith("needs a real account")


def test_a_latency_bound_ends_one_instances_capacity_earlier(tmp_path):
    records = sweep("sagemaker", {1: 1.0, 2: 1.1, 4: 2.0, 8: 4.0})
    backend = backend_entry("sagemaker", endpoint_name="e", max_instances=2)
    path = write_evidence(tmp_path, [backend], records, emulated=True)
    (scaling,) = run_cost(tmp_path, path, extra=["--latency-bound", "1.5"])["scaling"]
    # 4 at a time takes 2.0 s at p95: over 1.5 s, so 2 at a time is one instance's capacity.
    assert scaling["capacity_level"] == "2 at a time"


def test_the_pricing_api_prices_every_billing_model_through_a_real_client():
    entries = [
        (
            SAGEMAKER,
            {"regionCode": "us-east-1", "productFamily": "ML Serverless", "usagetype": "USE1-ServerlessInf:Mem-6GB"},
            "Second",
            "0.0001200000",
        ),
        (
            SAGEMAKER,
            {"regionCode": "us-east-1", "productFamily": "ML Serverless", "usagetype": "USE1-ServerlessInf:Mem-3GB"},
            "Second",
            "0.0000600000",
        ),
        # Test values that differ from one another, so picking the wrong usage type shows.
        (
            SAGEMAKER,
            {"instanceName": "ml.g6.xlarge", "regionCode": "us-east-2", "usagetype": "USE2-AsyncInf:ml.g6.xlarge"},
            "Hrs",
            "1.2000",
        ),
        (
            SAGEMAKER,
            {"instanceName": "ml.g6.xlarge", "regionCode": "us-east-2", "usagetype": "USE2-Tsform:ml.g6.xlarge"},
            "Hrs",
            "1.3000",
        ),
        (
            SAGEMAKER,
            {
                "instanceName": "ml.g6.xlarge",
                "regionCode": "us-east-2",
                "usagetype": "USE2-Host:ml.g6.xlarge",
                "productFamily": "ML Instance",
                "component": "Hosting",
            },
            "Hrs",
            "1.1267",
        ),
        (
            BEDROCK,
            {"regionCode": "us-east-1", "feature": "Custom Model Import", "usagetype": "USE1-CustomModelImport-Min"},
            "Custom Model Unit per Min",
            "0.0785",
        ),
        (
            BEDROCK,
            {
                "regionCode": "us-east-1",
                "feature": "Custom Model Import",
                "usagetype": "USE1-CustomModelImport-Storage",
            },
            "Custom Model Unit per Month",
            "1.95",
        ),
    ]
    with FakePricing(entries) as fake:
        prices = PriceList(fake.client())
        serverless = lookup(PriceRequest(SAGEMAKER, "ServerlessInf:Mem-6GB", "us-east-1"), prices)
        assert (serverless.usd_per_second, serverless.live) == (0.00012, True)
        assert serverless.usd_per_gb_processed == 0.016  # from the offline table, said in the note
        assert lookup(PriceRequest(SAGEMAKER, "AsyncInf:ml.g6.xlarge", "us-east-2"), prices).usd_per_hour == 1.2
        assert lookup(PriceRequest(SAGEMAKER, "Tsform:ml.g6.xlarge", "us-east-2"), prices).usd_per_hour == 1.3
        assert lookup(PriceRequest(SAGEMAKER, "ml.g6.xlarge", "us-east-2"), prices).usd_per_hour == 1.1267
        imported = lookup(PriceRequest(BEDROCK, "Custom Model Import", "us-east-1"), prices)
        assert (imported.usd_per_unit_minute, imported.usd_per_unit_month) == (0.0785, 1.95)
        with pytest.raises(PricingError, match=r"no per-second price for ServerlessInf:Mem-2GB in us-east-1"):
            prices.sagemaker_serverless(2048, "us-east-1")
        with pytest.raises(PricingError, match=r"expected one per CMU-minute and one per CMU-month price"):
            prices.bedrock_model_import("us-west-2")


def test_every_new_offline_price_is_dated_and_sourced():
    for item, field in (
        ("ServerlessInf:Mem-1GB", "usd_per_second"),
        ("ServerlessInf:Mem-6GB", "usd_per_second"),
        ("AsyncInf:ml.g6.xlarge", "usd_per_hour"),
        ("Tsform:ml.g6.xlarge", "usd_per_hour"),
    ):
        price = offline_price(SAGEMAKER, item, "us-east-1")
        assert price.as_of and "UNVERIFIED" in price.source and getattr(price, field)
    assert offline_price(SAGEMAKER, "ServerlessInf:Mem-6GB", "us-east-1").usd_per_second == pytest.approx(6 * 0.00002)
    imported = offline_price(BEDROCK, "Custom Model Import", "us-east-1")
    assert (imported.usd_per_unit_minute, imported.usd_per_unit_month, imported.verified) == (0.0785, 1.95, False)
