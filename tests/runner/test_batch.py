"""`python -m runner.batch` through the emulator: a transform job whose records a real HTTP server
answers (the scripted OpenAI server, so order and faults are exact), followed to its end, priced,
and never left running; a bad prompt file refused before anything is uploaded."""

from __future__ import annotations

import json

import boto3
import pytest

from catalog.backends import OPEN_MODEL
from runner import batch
from runner.cli.session import main_guard
from runner.cloud.jobs import batch_transform
from runner.core.batch_jobs import BatchJob, jobs_of
from runner.core.errors import RunnerError
from runner.core.evidence import load
from runner.measure.transform_job import BatchFile
from runner.render.batch import batch_table
from tests.aws_emulator import emulated_aws
from tests.runner.fake_openai import FakeOpenAI, Step, text

REGION = "us-east-1"
BUCKET = "inference-batch-bucket"
MODEL = "inference-batch-model"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    with emulated_aws(tmp_path_factory.mktemp("emulator")) as emulator:
        aws("sagemaker").create_model(
            ModelName=MODEL, ExecutionRoleArn=f"arn:aws:iam::{'1' * 12}:role/x", PrimaryContainer={"Image": "x"}
        )
        yield emulator


@pytest.fixture
def bucket(emulator):
    """An empty bucket per test, the emulator's transform knobs as they start."""
    s3 = aws("s3")
    s3.create_bucket(Bucket=BUCKET)
    emulator.transform_failure = None
    emulator.transform_delay_s = 0.05
    yield s3
    for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        s3.delete_object(Bucket=BUCKET, Key=item["Key"])
    s3.delete_bucket(Bucket=BUCKET)


def aws(service: str):
    return boto3.client(service, region_name=REGION)


def outputs_file(tmp_path):
    output = {
        "name": "sagemaker-batch", "kind": "sagemaker-batch", "region": REGION, "model_id": OPEN_MODEL,
        "port": 8080, "health_path": "/ping", "model_name": MODEL, "bucket": BUCKET,
        "input_prefix": "batch/inputs/", "output_prefix": "batch/outputs/", "instance_type": "ml.g6.xlarge",
        "lane": "open", "precision": "bf16", "contract": 2,
    }  # fmt: skip
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"InferenceSageMakerStack": {"BackendSagemakerBatch": json.dumps(output)}}))
    return path


def argv(tmp_path, *extra: str) -> list[str]:
    return ["--outputs-file", str(outputs_file(tmp_path)), "--results-dir", str(tmp_path / "r"), "--poll", "0.05",
            *extra]  # fmt: skip


def evidence_of(tmp_path) -> dict:
    (path,) = (tmp_path / "r").glob("*/batch-*.json")
    return load(path)


def keys(s3) -> list[str]:
    return [item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def test_a_six_prompt_job_completes_in_order_with_its_rates_and_price(emulator, bucket, tmp_path, capsys):
    answers = [f"Answer number {n}." for n in range(1, 7)]
    with FakeOpenAI([text(a) for a in answers]) as fake:
        emulator.transform_server = fake.url
        code = batch.run(argv(tmp_path, "--count", "6", "--max-tokens", "16"))
        sent = fake.requests
    assert code == 0
    evidence = evidence_of(tmp_path)
    (job,) = evidence["jobs"]
    assert (job["status"], job["records"], job["ok_records"], job["failure_reason"]) == ("Completed", 6, 6, None)
    assert [r["text"] for r in evidence["records"]] == answers  # line n answers prompt n
    assert [r["run"] for r in evidence["records"]] == [1, 2, 3, 4, 5, 6]
    assert job["output_tokens"] == 18 and job["prompt_tokens"] == 72  # the server's usage, 3 and 12 each
    assert job["billable_s"] > 0 and job["started_at"] < job["ended_at"]
    assert job["records_per_s"] == pytest.approx(6 / job["billable_s"])
    assert job["output_tok_s"] == pytest.approx(18 / job["billable_s"])
    assert job["usd_per_hour"] > 0
    assert job["price_usd"] == pytest.approx(job["usd_per_hour"] * job["billable_s"] / 3600)
    # Read back typed as the batch table, cost and advise read it: every field as written.
    (typed,) = jobs_of(evidence, "batch.json")
    assert {k: getattr(typed, k) for k in job} == job and typed.label == job["job_name"] and typed.instances == 1
    assert evidence["prices"][0]["item"].endswith("ml.g6.xlarge")
    # Whole-answer bodies, one per line, the generated prompts in order.
    assert [b["messages"][0]["content"] for b in sent] == [
        f"Write a short paragraph about {t}."
        for t in ("the ocean", "mountains", "forests", "deserts", "rivers", "glaciers")
    ]
    assert all(b["stream"] is False and b["max_tokens"] == 16 and "stream_options" not in b for b in sent)
    # The job as CreateTransformJob got it.
    described = aws("sagemaker").describe_transform_job(TransformJobName=job["job_name"])
    assert described["BatchStrategy"] == "SingleRecord" and described["MaxConcurrentTransforms"] == 4
    assert described["TransformInput"]["SplitType"] == "Line"
    assert described["TransformInput"]["ContentType"] == "application/json"
    assert described["TransformOutput"]["AssembleWith"] == "Line"
    assert described["TransformOutput"]["Accept"] == "application/json"
    assert described["TransformResources"] == {"InstanceType": "ml.g6.xlarge", "InstanceCount": 1}
    assert 1 <= described["MaxPayloadInMB"] <= 100
    run = job["input"].rsplit("/", 2)[-2]
    assert sorted(keys(bucket)) == [f"batch/inputs/{run}/prompts.jsonl", f"batch/outputs/{run}/prompts.jsonl.out"]
    tags = aws("sagemaker").list_tags(ResourceArn=described["TransformJobArn"])["Tags"]
    assert {"Key": "app", "Value": "inference-survey"} in tags
    captured = capsys.readouterr()
    assert "Completed" in captured.out and "6/6" in captured.out
    assert f"transform job {job['job_name']}: 6 records on 1 x ml.g6.xlarge" in captured.err


def test_a_file_that_is_not_json_lines_is_refused_with_its_line_and_nothing_uploaded(bucket, tmp_path, capsys):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "Write about the sea."}\n\n{"prompt": "unclosed\n')
    with pytest.raises(SystemExit) as raised:
        main_guard(lambda: batch.run(argv(tmp_path, "--prompts", str(prompts))))
    assert raised.value.code == 2
    out = " ".join(capsys.readouterr().err.split())
    assert f"--prompts {prompts} line 3: not JSON" in out
    assert keys(bucket) == [] and not (tmp_path / "r").exists()
    prompts.write_text('{"prompt": "fine"}\n{"text": "no prompt field"}\n')
    with pytest.raises(SystemExit):
        main_guard(lambda: batch.run(argv(tmp_path, "--prompts", str(prompts))))
    assert 'line 2: expected an object with a "prompt" string or a "messages" list' in capsys.readouterr().err
    assert keys(bucket) == []


def test_a_failed_job_shows_its_failure_reason_and_exits_1(emulator, bucket, tmp_path, capsys):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}\n')
    with FakeOpenAI([Step(kind="http_error", status=500, error_body='{"error": "CUDA out of memory"}')]) as fake:
        emulator.transform_server = fake.url
        code = batch.run(argv(tmp_path, "--prompts", str(prompts)))
        (sent,) = fake.requests
    assert code == 1
    assert sent["messages"] == [{"role": "user", "content": "Hi"}] and sent["max_tokens"] == 4
    evidence = evidence_of(tmp_path)
    (job,) = evidence["jobs"]
    assert job["status"] == "Failed" and job["ok_records"] == 0
    assert job["failure_reason"].startswith("ClientError: the model container answered HTTP 500 for record 1")
    columns = {c.header: list(c._cells) for c in batch_table(BatchFile.from_json(evidence)).columns}
    assert columns["status"] == ["Failed"] and "CUDA out of memory" in columns["notes"][0]
    assert "Failed" in capsys.readouterr().out
    assert emulator.stopped_transform_jobs == []  # a failed job has nothing left running


def test_ctrl_c_while_following_stops_the_job(emulator, bucket, tmp_path, monkeypatch, capsys):
    emulator.transform_delay_s = 600.0  # InProgress until it is stopped: the poll's wait is interrupted first

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(batch_transform, "pause", interrupted)
    with FakeOpenAI([text("never asked")]) as fake:
        emulator.transform_server = fake.url
        with pytest.raises(KeyboardInterrupt):
            batch.run(argv(tmp_path, "--count", "2"))
    evidence = evidence_of(tmp_path)
    (job,) = evidence["jobs"]
    assert evidence["interrupted"] is True and job["status"] == "Stopping"
    assert emulator.stopped_transform_jobs == [job["job_name"]]  # StopTransformJob reached the emulator
    status = aws("sagemaker").describe_transform_job(TransformJobName=job["job_name"])["TransformJobStatus"]
    assert status in ("Stopping", "Stopped")
    err = " ".join(capsys.readouterr().err.split())
    assert f"interrupted: StopTransformJob sent for {job['job_name']}" in err
    emulator.stopped_transform_jobs.clear()


def test_help():
    with pytest.raises(SystemExit) as raised:
        batch.run(["--help"])
    assert raised.value.code == 0


def test_a_job_the_account_refuses_leaves_no_input_behind(emulator, bucket, tmp_path, monkeypatch, capsys):
    """CreateTransformJob refused (a transform-job instance quota of 0, as new accounts have for
    g6): one line, exit 1, and the uploaded prompts are removed again."""
    from botocore.exceptions import ClientError

    def refuse(*args, **kwargs):
        raise ClientError(
            {"Error": {"Code": "ResourceLimitExceeded", "Message": "The account-level service limit "
             "'ml.g6.xlarge for transform job usage' is 0 Instances"}}, "CreateTransformJob",
        )  # fmt: skip

    monkeypatch.setattr(batch_transform, "create", lambda sagemaker, plan: refuse())
    with FakeOpenAI([text("never asked")]) as fake:
        emulator.transform_server = fake.url
        assert batch.run(argv(tmp_path, "--count", "2")) == 1
        assert fake.requests == []
    (job,) = evidence_of(tmp_path)["jobs"]
    assert job["status"] == "NotStarted" and "ml.g6.xlarge for transform job usage" in job["failure_reason"]
    assert keys(bucket) == []


def test_a_job_from_before_job_name_reads_and_a_malformed_one_is_one_line():
    (old,) = jobs_of({"jobs": [{"backend": "sagemaker-batch", "name": "t-0"}]})
    assert (old.label, old.instances, old.records, old.billable_s) == ("t-0", 1, 0, None)
    assert jobs_of({"jobs": [{}]}) == [BatchJob()]
    with pytest.raises(RunnerError) as refused:
        jobs_of({"jobs": [{"backend": "sagemaker-batch", "billable_s": "ten"}]}, "batch.json")
    assert str(refused.value).startswith("batch.json: jobs[0] of sagemaker-batch: 'billable_s' is 'ten'")
