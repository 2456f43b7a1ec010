"""The SageMaker options measured through the emulator (tests/aws_emulator/sagemaker_runtime.py):
a serverless endpoint answered by the real embedded llama.cpp (its cold start timed and kept apart
from the warm medians; MaxConcurrency reached is one error line), and an asynchronous endpoint held
at zero instances (queue to result, leave zero and the work recorded; a failure object is a typed
fault). Endpoints are made with boto3 against the emulator, as the stack would make them."""

from __future__ import annotations

import json
import statistics
import threading
import time

import boto3
import pytest
from rich.text import Text

from catalog.backends import OPEN_MODEL, BackendKind
from runner import bench
from runner.core.backends import Backend
from runner.core.errors import as_fault, describe
from runner.core.evidence import load
from runner.core.records import RequestRecord
from runner.measure import ChatRequest
from runner.measure.bench_file import BenchFile
from runner.measure.health import wait_healthy
from runner.measure.sagemaker_async import AsyncInferenceFailed, SageMakerAsyncClient
from runner.render.bench import bench_summary, bench_table, cold_note, cold_summary
from tests.aws_emulator import emulated_aws
from tests.aws_emulator.sagemaker_runtime import hold_at_zero
from tests.runner.fake_openai import FakeOpenAI, Step, text

REGION = "us-east-1"
BUCKET = "inference-sagemaker-options"
SERVERLESS = "inference-serverless"
ASYNC = "inference-async"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    with emulated_aws(tmp_path_factory.mktemp("emulator")) as emulator:
        sagemaker = aws("sagemaker")
        sagemaker.create_model(
            ModelName="inference-model",
            ExecutionRoleArn=f"arn:aws:iam::{'1' * 12}:role/x",
            PrimaryContainer={"Image": "x"},
        )
        aws("s3").create_bucket(Bucket=BUCKET)
        yield emulator


def aws(service: str):
    return boto3.client(service, region_name=REGION)


def serverless_endpoint(name: str, max_concurrency: int) -> None:
    sagemaker = aws("sagemaker")
    variant = {"MemorySizeInMB": 6144, "MaxConcurrency": max_concurrency}
    sagemaker.create_endpoint_config(
        EndpointConfigName=name,
        ProductionVariants=[{"VariantName": "AllTraffic", "ModelName": "inference-model", "ServerlessConfig": variant}],
    )
    sagemaker.create_endpoint(EndpointName=name, EndpointConfigName=name)


def async_endpoint(name: str) -> None:
    sagemaker = aws("sagemaker")
    sagemaker.create_endpoint_config(
        EndpointConfigName=name,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": "inference-model",
                "InstanceType": "ml.g6.xlarge",
                "InitialInstanceCount": 1,
            }
        ],
        AsyncInferenceConfig={
            "OutputConfig": {
                "S3OutputPath": f"s3://{BUCKET}/async/outputs/",
                "S3FailurePath": f"s3://{BUCKET}/async/failures/",
            }
        },
    )
    sagemaker.create_endpoint(EndpointName=name, EndpointConfigName=name)


def output_json(name: str, kind: str, **fields) -> str:
    return json.dumps(
        {"name": name, "kind": kind, "region": REGION, "model_id": OPEN_MODEL, "port": 8080, "health_path": "/ping"}
        | {"lane": "open", "contract": 2}
        | fields
    )


def outputs_file(tmp_path, **outputs: str):
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"InferenceSageMakerStack": outputs}))
    return path


def run_bench(tmp_path, backends: str, *extra: str) -> dict:
    files = outputs_file(
        tmp_path,
        BackendSagemakerServerless=output_json(
            "sagemaker-serverless", "sagemaker-serverless", endpoint_name=SERVERLESS, precision="Q8_0 GGUF",
            memory_mb=6144, max_concurrency=4,
        ),
        BackendSagemakerAsync=output_json(
            "sagemaker-async", "sagemaker-async", endpoint_name=ASYNC, precision="bf16", bucket=BUCKET,
            input_prefix="async/inputs/", output_prefix="async/outputs/", min_instances=0, max_instances=1,
        ),
        BackendSagemakerBatch=output_json(
            "sagemaker-batch", "sagemaker-batch", model_name="inference-model", bucket=BUCKET,
            input_prefix="batch/inputs/", output_prefix="batch/outputs/", instance_type="ml.g6.xlarge",
        ),
    )  # fmt: skip
    results = tmp_path / "bench"
    code = bench.run(
        ["--aws", "--backends", backends, "--outputs-file", str(files), "--results-dir", str(results), *extra]
    )
    (path,) = results.glob("*/bench-*.json")
    evidence = load(path)
    evidence["exit_code"] = code
    return evidence


def test_serverless_bench_times_the_cold_start_apart_from_the_warm_requests(emulator, local_server, tmp_path):
    serverless_endpoint(SERVERLESS, max_concurrency=4)
    emulator.model_servers[SERVERLESS] = local_server.base_url
    emulator.cold_start_s[SERVERLESS] = 0.5
    evidence = run_bench(tmp_path, "sagemaker-serverless,sagemaker-batch", "--repeats", "2", "--max-tokens", "4")
    assert evidence["exit_code"] == 0
    # The warm-up is the cold start: timed, kept, marked.
    (cold,) = evidence["warm_up"]
    assert cold["backend"] == "sagemaker-serverless" and cold["ok"] and cold["cold_start"] is True
    assert cold["e2e_s"] >= 0.5
    records = [r for r in evidence["records"] if r["backend"] == "sagemaker-serverless"]
    assert len(records) == 2 and all(r["ok"] and not r["cold_start"] for r in records)
    # Whole answers: tokens from the server's usage, no time to first token.
    assert all(r["ttft_s"] is None and r["token_source"] == "server" and 0 < r["output_tokens"] <= 4 for r in records)
    summary = bench_summary(BenchFile.from_json(evidence))
    row = summary["sagemaker-serverless"]
    assert (row.ok, row.runs) == (2, 2)
    # The transform job is its row's command's to measure (catalog/serving.py measured_by), and said.
    assert summary["sagemaker-batch"].measured_by == "batch" and row.measured_by == ""
    # Never mixed into the warm median: that is the timed requests' own, the cold start is apart.
    assert row.median_s == statistics.median(r["e2e_s"] for r in records)
    assert row.cold.median_s == cold["e2e_s"] and row.cold.count == 1
    columns = {c.header: list(c._cells) for c in bench_table(BenchFile.from_json(evidence)).columns}
    at = columns["backend"].index("sagemaker-serverless")
    # The cell is rich markup: the lane's brackets escaped, shown as written.
    assert Text.from_markup(columns["model"][at]).plain == f"{OPEN_MODEL} (Q8_0 GGUF) [open]"
    assert float(columns["cold start s"][at]) == pytest.approx(cold["e2e_s"], abs=0.001)
    assert "1 cold start, timed apart" in columns["notes"][at]
    assert "no time to first token" in columns["notes"][at]
    # The transform job's model is skipped in one line, not an error.
    assert not [r for r in evidence["records"] if r["backend"] == "sagemaker-batch"]
    assert (
        "sagemaker-batch: measured by python -m runner.batch (a transform job, not a timed chat)"
        in (evidence["notices"])
    )
    assert "measured by python -m runner.batch" in columns["notes"][columns["backend"].index("sagemaker-batch")]


def test_serverless_max_concurrency_reached_is_one_error_line_of_that_request(emulator, tmp_path):
    name = "inference-serverless-one"
    serverless_endpoint(name, max_concurrency=1)
    # The warm-up is quick; then the first timed answer is held until the second request has found
    # the one slot taken (whenever the load lets it arrive).
    refused = threading.Event()
    set_once(refused, lambda: bool(emulator.throttled))
    with FakeOpenAI([text("Hi"), text("Waves roll.", hold_until=refused)]) as fake:
        emulator.model_servers[name] = fake.url
        files = outputs_file(
            tmp_path,
            BackendSagemakerServerless=output_json(
                "sagemaker-serverless", "sagemaker-serverless", endpoint_name=name, max_concurrency=1
            ),
        )
        results = tmp_path / "bench"
        code = bench.run(
            ["--aws", "--backends", "sagemaker-serverless", "--outputs-file", str(files), "--results-dir",
             str(results), "--concurrency", "2", "--requests", "2"]
        )  # fmt: skip
    assert code == 0
    (path,) = results.glob("*/bench-*.json")
    records = load(path)["records"]
    assert sorted(r["ok"] for r in records) == [False, True]
    (failed,) = [r for r in records if not r["ok"]]
    assert failed["error"].startswith("throttled: ThrottlingException: ")
    assert "MaxConcurrency of 1 reached" in failed["error"] and "\n" not in failed["error"]
    # Refused once at the emulator: one attempt, no retry hiding the refusal.
    assert emulator.throttled == [name]


def set_once(event: threading.Event, happened, timeout_s: float = 30) -> None:
    """`event` set once `happened()` is true (or after `timeout_s`, so a held answer never hangs)."""

    def watch() -> None:
        deadline = time.monotonic() + timeout_s
        while not happened() and time.monotonic() < deadline:
            time.sleep(0.01)
        event.set()

    threading.Thread(target=watch, daemon=True).start()


def answer_once_the_runner_has_seen_an_instance(monkeypatch) -> threading.Event:
    """Set when the runner's DescribeEndpoint first reports an instance (the count passed on as it
    came): a model answer held until then comes after the instance was seen, whatever the load."""
    seen = threading.Event()
    instance_count = SageMakerAsyncClient.instance_count

    def watched(client: SageMakerAsyncClient) -> int | None:
        count = instance_count(client)
        if count:
            seen.set()
        return count

    monkeypatch.setattr(SageMakerAsyncClient, "instance_count", watched)
    return seen


def test_async_request_from_zero_records_queue_to_result_leave_zero_and_work(emulator, tmp_path, monkeypatch):
    async_endpoint(ASYNC)
    seen = answer_once_the_runner_has_seen_an_instance(monkeypatch)
    with FakeOpenAI([text("The ocean is deep and wide.", hold_until=seen)]) as fake:
        emulator.model_servers[ASYNC] = fake.url
        hold_at_zero(emulator, ASYNC, 0.5)
        backend = Backend(
            name="sagemaker-async", kind=BackendKind.SAGEMAKER_ASYNC, title="", model_id=OPEN_MODEL, source="test",
            region=REGION, endpoint_name=ASYNC,
        )  # fmt: skip
        health = wait_healthy(backend, 5, poll_s=0.1)
        assert health.healthy and health.detail == "InService at zero instances; the first request starts one"
        evidence = run_bench(tmp_path, "sagemaker-async", "--repeats", "2")
        sent = fake.requests
    assert evidence["exit_code"] == 0
    (cold,) = evidence["warm_up"]
    assert cold["ok"] and cold["cold_start"] is True and cold["ttft_s"] is None
    phases = cold["phases"]
    assert phases["leave_zero_s"] >= 0.5 and phases["queued_s"] == phases["leave_zero_s"]
    assert cold["e2e_s"] == pytest.approx(phases["leave_zero_s"] + phases["work_s"])
    # The instance was seen before the result (the answer waited for that): the work is its own,
    # non-empty part (how long it took on a loaded machine is not the claim).
    assert phases["work_s"] > 0 and cold["e2e_s"] > phases["leave_zero_s"]
    # The timed requests found an instance: warm, all their time is the work.
    records = evidence["records"]
    assert len(records) == 2 and all(r["ok"] and r["cold_start"] is False for r in records)
    assert all(r["phases"]["work_s"] == r["e2e_s"] and "leave_zero_s" not in r["phases"] for r in records)
    assert (records[0]["output_tokens"], records[0]["text"]) == (3, "The ocean is deep and wide.")
    # The body went as a whole-answer request, through S3.
    assert all(body["stream"] is False and "stream_options" not in body for body in sent)
    row = bench_summary(BenchFile.from_json(evidence))["sagemaker-async"]
    assert row.median_s == statistics.median(r["e2e_s"] for r in records)
    assert row.cold.median_s == cold["e2e_s"] >= 0.5
    assert row.cold.median_leave_zero_s >= 0.5 and row.cold.median_work_tok_s > 0
    s3 = aws("s3")
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="async/inputs/")["KeyCount"] == 0  # inputs deleted
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="async/outputs/")["KeyCount"] == 3
    columns = {c.header: list(c._cells) for c in bench_table(BenchFile.from_json(evidence)).columns}
    assert "leave zero" in columns["notes"][0] and "tok/s of the work" in columns["notes"][0]


def test_an_async_result_found_before_any_instance_was_reported_is_all_leave_zero(emulator, tmp_path):
    """CurrentInstanceCount still 0 when the result is already written: the request is still a
    cold start with its leave-zero figure (the whole queue to result, an upper bound), and no work
    rate is claimed for a split finer than the polling. Such a request once lost its phases."""
    name = "inference-async-lagging"
    async_endpoint(name)
    with FakeOpenAI([text("The ocean is deep and wide.")]) as fake:
        emulator.model_servers[name] = fake.url
        hold_at_zero(emulator, name, 0.3, count_reported=False)
        client = SageMakerAsyncClient(
            endpoint_name=name, model_id=OPEN_MODEL, region=REGION, bucket=BUCKET, input_prefix="async/inputs/",
            timeout_s=30, poll_s=0.05,
        )  # fmt: skip
        try:
            record = client.chat(ChatRequest("Tell me about the ocean.", max_tokens=20), RequestRecord(name, 1))
        finally:
            client.close()
    assert record.ok and record.cold_start is True and record.output_tokens == 3
    assert record.phases["leave_zero_s"] == record.phases["queued_s"] == record.e2e_s >= 0.3
    assert record.phases["work_s"] == 0.0
    row = cold_summary([record])
    assert (row.median_leave_zero_s, row.median_work_s, row.median_work_tok_s) == (record.e2e_s, 0.0, None)
    assert cold_note(row) == f"1 cold start, timed apart; leave zero {record.e2e_s:.1f} s; work 0.00 s"


def test_async_failure_object_is_a_typed_fault(emulator):
    name = "inference-async-failing"
    async_endpoint(name)
    with FakeOpenAI([Step(kind="http_error", status=500, error_body='{"error": "CUDA out of memory"}')]) as fake:
        emulator.model_servers[name] = fake.url
        client = SageMakerAsyncClient(
            name, OPEN_MODEL, REGION, bucket=BUCKET, input_prefix="async/inputs/", poll_s=0.02, max_poll_s=0.05
        )
        record = RequestRecord("sagemaker-async", 1)
        with pytest.raises(AsyncInferenceFailed) as raised:
            client.chat(ChatRequest("Hi", max_tokens=4), record)
        client.close()
    assert not record.ok and record.cold_start is False
    assert isinstance(as_fault(raised.value), AsyncInferenceFailed)
    line = describe(raised.value)
    assert line.startswith("async inference failed: Received server error (500) from model")
    assert "CUDA out of memory" in line and "\n" not in line
