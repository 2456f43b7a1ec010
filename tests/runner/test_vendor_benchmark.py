"""AWS's own benchmark beside ours (runner/measure/vendor_benchmark.py), through the emulator's
SageMaker AI benchmarking service (tests/aws_emulator/ai_benchmark.py), whose job measures the
endpoint's loopback server for real: a known-rate server behind a SageMaker endpoint, benchmarked
by the job and by the runner's own bench at the same workload, the two in one table with their
difference. Each figure is checked against the server's own settings (a first token no sooner than
its time to first token, the rest at its rate); the API's errors and a job that ends badly are one
line each, and a job the budget leaves running is stopped."""

from __future__ import annotations

import io
import json
import re

import boto3
import pytest
from botocore.exceptions import ClientError
from rich.console import Console

from catalog.backends import get_backend
from catalog.contract import BackendOutput
from runner import bench
from runner.core.errors import RunnerError
from runner.core.evidence import load, strict_json
from runner.measure.vendor_benchmark import (
    Pacing,
    Target,
    VendorBenchmark,
    VendorFigures,
    VendorWorkload,
    job_name,
    name_stamp,
    parse_option,
    read_results,
    run_job,
)
from runner.render.tables import renderer_for, typed
from tests.aws_emulator import ACCOUNT, emulated_aws
from tests.runner.known_server import known_server

REGION = "us-east-1"
ROLE = f"arn:aws:iam::{'1' * 12}:role/benchmark"
ENDPOINT = "inference-sagemaker"
BUCKET = "benchmark-results"
OUTPUT = f"s3://{BUCKET}/runs/"
TTFT, RATE, TOKENS = 0.05, 50.0, 10
# The server's own answer length: an answer not told to ignore its end stops here.
NATURAL = 3


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    with emulated_aws(tmp_path_factory.mktemp("emulator")) as emulator:
        sagemaker = aws("sagemaker")
        sagemaker.create_model(ModelName="m", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "x"})
        variant = {"VariantName": "AllTraffic", "ModelName": "m", "InstanceType": "ml.g6.xlarge",
                   "InitialInstanceCount": 1}  # fmt: skip
        sagemaker.create_endpoint_config(EndpointConfigName=ENDPOINT, ProductionVariants=[variant])
        sagemaker.create_endpoint(EndpointName=ENDPOINT, EndpointConfigName=ENDPOINT)
        aws("s3").create_bucket(Bucket=BUCKET)
        yield emulator


@pytest.fixture
def served(emulator):
    with known_server(ttft=TTFT, rate=RATE, tokens=TOKENS, natural=NATURAL, tokenize=False) as server:
        emulator.model_servers[ENDPOINT] = server.url
        yield server
    emulator.model_servers.clear()


def aws(service: str):
    return boto3.client(service, region_name=REGION)


def target(**changes) -> Target:
    return Target(**({"backend": "sagemaker", "endpoint": ENDPOINT, "component": None, "role_arn": ROLE,
                      "output_location": OUTPUT} | changes))  # fmt: skip


FAST = Pacing(poll_s=0.05, budget_s=60)


def quietly(*args) -> VendorBenchmark:
    """A job run to its end with nothing left to say (its config deleted)."""
    lines: list[str] = []
    try:
        return run_job(*args, lines.append)
    finally:
        assert lines == []


def test_the_job_measures_the_endpoint_for_real_and_its_figures_are_read_back(served, emulator):
    workload = VendorWorkload(input_tokens=20, output_tokens=TOKENS, concurrency=2, requests=6, forced=True)
    job = quietly(aws("sagemaker"), aws("s3"), target(), workload, job_name("sagemaker", "t1"), FAST)
    assert job.status == "Completed" and job.results.startswith(f"s3://{BUCKET}/runs/")
    figures = job.figures
    assert figures.requests == 6
    decode = (TOKENS - 1) / RATE
    # A first token no sooner than the server's, the rest at its rate (plus the relay's time).
    assert figures.ttft_s.median >= TTFT and figures.e2e_s.median >= TTFT + decode * 0.9
    assert figures.itl_s.mean == pytest.approx(1 / RATE, rel=0.5)
    # Two streams at a time of 10 tokens each at most every TTFT + decode: at most 2 x 10 / that a second.
    assert 0 < figures.output_tok_s <= 2 * TOKENS / (TTFT + decode * 0.9)
    # The config is gone once the job is over; the job's record stays, as AWS keeps it.
    assert aws("sagemaker").describe_ai_benchmark_job(AIBenchmarkJobName=job.job_name)["AIBenchmarkJobStatus"] == (
        "Completed"
    )
    with pytest.raises(ClientError) as gone:
        aws("sagemaker").describe_ai_workload_config(AIWorkloadConfigName=job.workload_config)
    assert gone.value.response["Error"]["Code"] == "ResourceNotFound"


def test_two_jobs_under_one_prefix_each_read_their_own_results(served, emulator):
    """Two levels' jobs (and what an older run left) under the same output location: each job's
    figures are its own, whatever order S3 lists the folders in."""
    sagemaker, s3 = aws("sagemaker"), aws("s3")
    location = target(output_location=f"s3://{BUCKET}/shared/")
    long = quietly(sagemaker, s3, location, VendorWorkload(20, TOKENS, 2, 2, forced=True), "two-long", FAST)
    short = quietly(sagemaker, s3, location, VendorWorkload(20, 2, 2, 2), "two-short", FAST)
    assert long.results != short.results
    # The emulator's folders sort newest first: the first results listed are the second job's.
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix="shared/")["Contents"]
    assert f"s3://{BUCKET}/{listed[0]['Key']}" == short.results
    # Each job's end-to-end time is its own output length's: 10 tokens against 2.
    assert long.figures.e2e_s.median >= TTFT + (TOKENS - 1) / RATE * 0.9
    assert short.figures.e2e_s.median < TTFT + (TOKENS - 1) / RATE * 0.5


def test_results_past_one_listing_page_are_found(served, emulator):
    """More than a listing's 1000 keys under the prefix: the job's results are still found."""
    from moto.s3.models import s3_backends

    store = s3_backends[ACCOUNT]["aws"]
    for n in range(1000):
        store.put_object(BUCKET, f"paged/a-{n:04d}", b"")
    location = target(output_location=f"s3://{BUCKET}/paged/")
    job = quietly(aws("sagemaker"), aws("s3"), location, VendorWorkload(20, 2, 1, 1), "paged", FAST)
    assert job.status == "Completed" and job.figures.requests == 1


def test_more_than_one_new_result_is_one_line_not_a_guess(emulator):
    s3 = aws("s3")
    for folder in ("x", "y"):
        s3.put_object(Bucket=BUCKET, Key=f"guess/{folder}/profile_export_aiperf.json", Body=b"{}")
    job = VendorBenchmark("sagemaker", ENDPOINT, "guess", "guess", VendorWorkload(1, 1, 1, 1), "Completed",
                          output_location=f"s3://{BUCKET}/guess/")  # fmt: skip
    with pytest.raises(RunnerError) as refused:
        read_results(s3, job, before={})
    assert str(refused.value) == (
        f"vendor benchmark job guess: 2 results new under s3://{BUCKET}/guess/ since the job was created "
        f"(s3://{BUCKET}/guess/x/profile_export_aiperf.json, s3://{BUCKET}/guess/y/profile_export_aiperf.json): "
        "not guessing which is its own"
    )


def test_the_workload_is_handed_over_in_the_documents_own_terms():
    spec = json.loads(VendorWorkload(100, 30, 4, 16, "org/model").spec())
    assert spec == {
        "benchmark": {"type": "aiperf"},
        "parameters": {"prompt_input_tokens_mean": 100, "prompt_input_tokens_stddev": 0, "output_tokens_mean": 30,
                       "output_tokens_stddev": 0, "concurrency": 4, "request_count": 16, "streaming": True,
                       "tokenizer": "org/model"},
        "tooling": {"api_standard": "openai"},
    }  # fmt: skip
    # Where the runner forced its output length, AIPerf is told to force it too (its extra inputs,
    # space-separated name:value pairs as AWS's SDK writes them).
    forced = json.loads(VendorWorkload(100, 30, 4, 16, "org/model", forced=True).spec())
    assert forced["parameters"] == spec["parameters"] | {"extra_inputs": "ignore_eos:true min_tokens:30"}


def test_what_the_api_refuses_is_refused_with_its_error_shape(emulator):
    sagemaker = aws("sagemaker")
    with pytest.raises(ClientError) as not_aiperf:
        sagemaker.create_ai_workload_config(
            AIWorkloadConfigName="c1", AIWorkloadConfigs={"WorkloadSpec": {"Inline": '{"benchmark": {"type": "x"}}'}}
        )
    assert not_aiperf.value.response["Error"]["Code"] == "ValidationException"
    spec = {"WorkloadSpec": {"Inline": VendorWorkload(10, 5, 1, 1).spec()}}
    sagemaker.create_ai_workload_config(AIWorkloadConfigName="c2", AIWorkloadConfigs=spec)
    with pytest.raises(ClientError) as taken:
        sagemaker.create_ai_workload_config(AIWorkloadConfigName="c2", AIWorkloadConfigs=spec)
    assert taken.value.response["Error"]["Code"] == "ResourceInUse"
    with pytest.raises(ClientError) as no_endpoint:
        sagemaker.create_ai_benchmark_job(
            AIBenchmarkJobName="j", BenchmarkTarget={"Endpoint": {"Identifier": "nowhere"}},
            OutputConfig={"S3OutputLocation": OUTPUT}, AIWorkloadConfigIdentifier="c2", RoleArn=ROLE,
        )  # fmt: skip
    assert no_endpoint.value.response["Error"]["Code"] == "ResourceNotFound"
    sagemaker.delete_ai_workload_config(AIWorkloadConfigName="c2")


def test_a_refused_config_is_one_line(emulator):
    sagemaker = aws("sagemaker")
    spec = {"WorkloadSpec": {"Inline": VendorWorkload(10, 5, 1, 1).spec()}}
    sagemaker.create_ai_workload_config(AIWorkloadConfigName="taken", AIWorkloadConfigs=spec)
    with pytest.raises(RunnerError) as refused:
        quietly(sagemaker, aws("s3"), target(), VendorWorkload(10, 5, 1, 1), "taken", FAST)
    line = str(refused.value)
    assert line.startswith("vendor benchmark of sagemaker: CreateAIWorkloadConfig: ") and "\n" not in line
    assert "ResourceInUse" in line or "already exists" in line
    sagemaker.delete_ai_workload_config(AIWorkloadConfigName="taken")


def test_a_job_that_fails_keeps_its_reason_and_no_figures(emulator):
    emulator.model_servers.clear()  # nothing serves the endpoint
    job = quietly(aws("sagemaker"), aws("s3"), target(), VendorWorkload(10, 5, 1, 2), "fails", FAST)
    assert job.status == "Failed" and job.figures is None
    assert job.failure_reason == f"ClientError: no model server for {ENDPOINT} (set emulator.model_servers)"


def test_a_job_past_its_budget_is_stopped_and_said_in_one_line(emulator):
    lines: list[str] = []
    with known_server(ttft=0.5, rate=5.0, tokens=50, tokenize=False) as server:
        emulator.model_servers[ENDPOINT] = server.url
        pacing = Pacing(poll_s=0.05, budget_s=0.2)
        with pytest.raises(RunnerError) as over:
            run_job(aws("sagemaker"), aws("s3"), target(), VendorWorkload(10, 50, 1, 20), "slow", pacing, lines.append)
    emulator.model_servers.clear()
    assert str(over.value).startswith("vendor benchmark job slow: still InProgress after 0.2 s: stopped")
    assert "slow" in emulator.stopped_benchmark_jobs
    # The job is Stopping while its requests in flight end, so its config cannot go yet: said, with
    # the command that deletes it later, not left without a word.
    assert lines == [
        "vendor benchmark job slow: its workload config slow is left (DeleteAIWorkloadConfig: ResourceInUse, "
        "the job still Stopping); delete it once the job has stopped: aws sagemaker delete-ai-workload-config "
        f"--ai-workload-config-name slow --region {REGION}"
    ]
    # It is still there, as said.
    assert aws("sagemaker").describe_ai_workload_config(AIWorkloadConfigName="slow")["AIWorkloadConfigName"] == "slow"


def test_a_jobs_name_holds_the_date_and_keeps_its_level_whatever_the_backends_length():
    """Names are unique per account and Region and job records stay: the same second on another
    day is another name, and a long backend name is cut, never the stamp or the level."""
    from datetime import UTC, datetime

    today = name_stamp(datetime(2026, 12, 7, 17, 46, 47, tzinfo=UTC))
    tomorrow = name_stamp(datetime(2026, 12, 8, 17, 46, 47, tzinfo=UTC))
    assert (
        job_name("sagemaker", f"{today}-20 in, 2 at a time") == "inference-sagemaker-20261207-174647-20-in-2-at-a-time"
    )
    assert job_name("sagemaker", f"{tomorrow}-20 in, 2 at a time") != job_name(
        "sagemaker", f"{today}-20 in, 2 at a time"
    )
    long = job_name("a" * 60, f"{today}-2048 in, 64 at a time")
    assert len(long) == 63 and long.endswith("-20261207-174647-2048-in-64-at-a-time")


SECRET = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:hf-token"


def test_a_gated_tokenizers_token_goes_as_the_documents_secret_and_the_job_reads_it(served, emulator):
    """`--vendor-benchmark-hf-secret ARN`: the Secrets Manager secret AIPerf downloads a gated
    tokenizer with, under the document's `secrets` as AWS's SDK sends it; a secret the job cannot
    read fails the job with its reason."""
    workload = VendorWorkload(20, 2, 1, 1, "org/gated")
    assert json.loads(workload.spec(SECRET))["secrets"] == {"hf_token": SECRET}
    assert "secrets" not in json.loads(workload.spec())
    missing = quietly(aws("sagemaker"), aws("s3"), target(hf_secret=SECRET), workload, "no-secret", FAST)
    assert (missing.status, missing.figures) == ("Failed", None)
    assert missing.failure_reason == f"ClientError: cannot read the secret {SECRET} (hf_token)"
    secret = aws("secretsmanager").create_secret(Name="hf-token", SecretString="hf_x")["ARN"]
    read = quietly(aws("sagemaker"), aws("s3"), target(hf_secret=secret), workload, "with-secret", FAST)
    assert read.status == "Completed" and read.figures.requests == 1


@pytest.mark.parametrize(
    ("secret", "says"),
    [
        ("hf_abc", "--vendor-benchmark-hf-secret 'hf_abc': expected a Secrets Manager secret's ARN"),
        (SECRET, None),
    ],
)
def test_the_secret_option_is_an_arn_and_goes_with_the_benchmark(secret, says):
    if says:
        with pytest.raises(RunnerError) as bad:
            parse_option(f"{ROLE},{OUTPUT}", secret)
        assert str(bad.value).startswith(says)
    else:
        assert parse_option(f"{ROLE},{OUTPUT}", secret) == (ROLE, OUTPUT, secret)


def test_the_secret_without_the_benchmark_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main_guard(lambda: bench.run(["--no-aws", "--vendor-benchmark-hf-secret", SECRET]))
    assert exit_.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--vendor-benchmark-hf-secret goes with --vendor-benchmark" in line


@pytest.mark.parametrize(
    ("text", "says"),
    [("s3://b/p", "an IAM role's ARN first"), (f"{ROLE},b/p", "an S3 URI second")],
)
def test_a_bad_option_is_one_line(text, says):
    with pytest.raises(RunnerError) as bad:
        parse_option(text)
    assert says in str(bad.value)
    assert parse_option(f"{ROLE},{OUTPUT}") == (ROLE, OUTPUT, None)


def test_an_aiperf_profile_in_another_unit_is_refused_in_one_line():
    with pytest.raises(RunnerError) as refused:
        VendorFigures.from_profile({"time_to_first_token": {"unit": "fortnights", "avg": 1}}, "job j")
    assert str(refused.value) == "job j: time_to_first_token in 'fortnights', not a unit of time this runner reads"


def test_a_profile_without_the_figures_the_runner_reads_is_one_line_not_a_row_of_blanks():
    # An older AIPerf's layout (figures under "records"), not the flat tags the runner reads.
    older = {"records": {"ttft": {"unit": "ms", "avg": 40.0}, "request_latency": {"unit": "ms", "avg": 90.0}}}
    with pytest.raises(RunnerError) as refused:
        VendorFigures.from_profile(older, "job j")
    assert str(refused.value) == (
        "job j: AIPerf's profile holds none of the figures the runner reads (no request_count or "
        "time_to_first_token at its top level)"
    )


def sagemaker_outputs(tmp_path) -> str:
    spec = get_backend("sagemaker")
    output = BackendOutput(
        name="sagemaker", kind=spec.kind.value, region=REGION, model_id=spec.model_id, port=spec.port,
        health_path=spec.health_path, endpoint_name=ENDPOINT, instance_type="ml.g6.xlarge",
    )  # fmt: skip
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"InferenceSageMakerStack": {"BackendSagemaker": json.dumps(output.to_json())}}))
    return str(path)


def test_bench_sets_the_vendors_figures_beside_its_own_for_the_same_endpoint_and_workload(served, tmp_path):
    results = tmp_path / "bench"
    code = bench.run(
        ["--aws", "--backends", "sagemaker", "--outputs-file", sagemaker_outputs(tmp_path), "--results-dir",
         str(results), "--input-tokens", "20", "--output-tokens", str(TOKENS), "--concurrency", "2", "--requests", "6",
         "--vendor-benchmark", f"{ROLE},{OUTPUT}"]
    )  # fmt: skip
    assert code == 0
    (path,) = results.glob("*/bench-*.json")
    file = typed(load(path), path)
    (job,) = file.vendor_benchmark
    assert re.fullmatch(r"inference-sagemaker-\d{8}-\d{6}-20-in-2-at-a-time", job.job_name)
    assert (job.status, job.endpoint, job.workload.concurrency, job.workload.requests) == ("Completed", ENDPOINT, 2, 6)
    assert (job.workload.input_tokens, job.workload.output_tokens) == (20, TOKENS)
    rows = {row.figure: row for row in job.beside}
    # The runner forced its output length, so AWS's job forced the same: both ends of the server's
    # whole 10 tokens, not the 3 it stops at unforced.
    assert job.workload.forced
    forced_e2e = TTFT + (TOKENS - 1) / RATE * 0.9
    assert rows["end-to-end median s"].runner >= forced_e2e and rows["end-to-end median s"].vendor >= forced_e2e
    # Two real measurements of one server: both no sooner than its first token, the difference theirs.
    for figure in ("TTFT median s", "end-to-end median s"):
        row = rows[figure]
        assert row.runner >= TTFT and row.vendor >= TTFT
        assert row.difference == pytest.approx(row.vendor - row.runner)
        assert row.relative == pytest.approx((row.vendor - row.runner) / row.runner)
    # Read back typed, written again as it was, and drawn in the bench's report.
    assert strict_json(file.to_json()) + "\n" == path.read_text()
    drawn = Console(file=io.StringIO(), width=200, color_system=None)
    renderer_for("bench")(file, drawn, None)
    text = " ".join(drawn.file.getvalue().split())
    assert "AWS's benchmark" in text and job.job_name in text and "AWS - runner" in text


def test_the_option_wants_a_workloads_levels_and_says_so_before_anything_is_sent(capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main_guard(lambda: bench.run(["--no-aws", "--vendor-benchmark", f"{ROLE},{OUTPUT}"]))
    assert exit_.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--vendor-benchmark hands AWS's benchmark a workload's closed-loop levels" in line
