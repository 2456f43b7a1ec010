"""`runner.model_import` end to end against Bedrock's import APIs on loopback and moto's S3 and
CodeBuild in process: copy, architecture check, import job, status, a bench-style timed request
that meets the model scaling from zero, delete; and the refusals and failures, one line each."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from catalog.contract import APP_TAG, BACKEND_TAG_KEY, output_key
from runner import model_import
from runner.cli.session import main_guard
from runner.cloud.jobs.custom_model_import import PRICE_LINE
from runner.core.errors import TimedOut
from runner.core.records import RequestRecord
from runner.measure.bedrock_import import BedrockImportStreamClient
from runner.measure.records import ChatRequest
from tests.runner.fake_bedrock_import import ANSWER, FakeBedrockImport, qwen_files, weights_copy

REGION = "us-east-1"
BUCKET = "inference-survey-import-weights"
PREFIX = "weights/qwen2.5-1.5b-instruct/"
MODEL_NAME = "inference-survey-qwen2-5-1-5b-instruct"
WEIGHTS_JOB = "inference-survey-weights-copy"
ROLE = "arn:aws:iam::123456789012:role/inference-survey-import"
OCEAN = "Write a short paragraph about the ocean."


@dataclass
class World:
    fake: FakeBedrockImport
    s3: object
    outputs: Path
    results: Path

    def argv(self, action: str, *extra: str) -> list[str]:
        return [action, "--outputs-file", str(self.outputs), "--poll", "0", "--results-dir", str(self.results), *extra]

    def evidence(self) -> dict:
        (path,) = sorted(self.results.glob("*/model_import-*.json"))[-1:]
        return json.loads(path.read_text())


@pytest.fixture
def world(monkeypatch, tmp_path) -> Iterator[World]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    with FakeBedrockImport(REGION) as fake:
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        with mock_aws():
            s3 = boto3.client("s3", region_name=REGION)
            s3.create_bucket(Bucket=BUCKET)
            boto3.client("codebuild", region_name=REGION).create_project(
                name=WEIGHTS_JOB,
                source={"type": "NO_SOURCE", "buildspec": "version: 0.2", "location": "none"},
                artifacts={"type": "NO_ARTIFACTS"},
                environment={
                    "type": "LINUX_CONTAINER",
                    "image": "aws/codebuild/standard:7.0",
                    "computeType": "BUILD_GENERAL1_SMALL",
                },
                serviceRole="arn:aws:iam::123456789012:role/weights-copy",
            )
            output = {
                "name": "bedrock-import",
                "kind": "bedrock-import",
                "region": REGION,
                "model_id": "Qwen/Qwen2.5-1.5B-Instruct",
                "port": 0,
                "health_path": "",
                "bucket": BUCKET,
                "input_prefix": PREFIX,
                "model_name": MODEL_NAME,
                "import_role_arn": ROLE,
                "weights_job": WEIGHTS_JOB,
                "contract": 2,
            }
            outputs = tmp_path / "outputs.json"
            outputs.write_text(
                json.dumps({"InferenceBedrockImportStack": {output_key("bedrock-import"): json.dumps(output)}})
            )
            yield World(fake, s3, outputs, tmp_path / "results")


def exit_status(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as stopped:
        main_guard(lambda: model_import.run(argv))
    return stopped.value.code


class SkippedWaits:
    """`time` for the timed client: every sleep returns at once and moves this clock on by its
    length, so the backoff's waits count exactly and the calls' own time counts as it came."""

    def __init__(self) -> None:
        self.slept = 0.0

    def perf_counter(self) -> float:
        return time.perf_counter() + self.slept

    def sleep(self, seconds: float) -> None:
        self.slept += seconds


def skip_the_waits(monkeypatch) -> None:
    clock = SkippedWaits()
    monkeypatch.setattr("runner.measure.until_served.time", clock)
    monkeypatch.setattr("runner.timing.chat.time", clock)  # the Stopwatch's clock


def test_copy_import_status_timed_cold_start_then_delete(world, monkeypatch, capsys):
    builds = weights_copy(monkeypatch, BUCKET, PREFIX, qwen_files())
    world.fake.polls_to_complete = 2
    assert model_import.run(world.argv("import")) == 0
    out = capsys.readouterr().out
    assert len(builds) == 1 and world.fake.calls.count("CreateModelImportJob") == 1
    (job,) = world.fake.jobs.values()
    assert job["modelDataSource"] == {"s3DataSource": {"s3Uri": f"s3://{BUCKET}/{PREFIX}"}}
    assert job["importedModelName"] == MODEL_NAME and job["roleArn"] == ROLE
    tags = {(t["key"], t["value"]) for t in job["modelTags"]}
    assert tags == {APP_TAG, (BACKEND_TAG_KEY, "bedrock-import")}
    assert world.fake.tags[job["jobArn"]] == job["modelTags"]
    model = world.fake.models[MODEL_NAME]
    assert f"imported model: {model['modelArn']}" in out
    assert "custom model units: 1 per model copy" in out and f"price: {PRICE_LINE}" in out
    steps = [(r["step"], r.get("outcome") or r.get("status")) for r in world.evidence()["records"]]
    assert steps == [
        ("copy", "copied"),
        ("architecture", None),
        ("import", "started"),
        ("import", "Completed"),
        ("model", "imported"),
    ]
    assert world.evidence()["records"][-1]["custom_model_units"] == 1

    assert model_import.run(world.argv("status")) == 0
    out = capsys.readouterr().out
    assert f"weights: 4 files in s3://{BUCKET}/{PREFIX}" in out and model["modelArn"] in out

    # A bench-style timed request: the model scaled to zero answers ModelNotReadyException twice,
    # the wait is kept apart, and the times are those of the attempt that streamed.
    world.fake.not_ready = 2
    skip_the_waits(monkeypatch)
    client = BedrockImportStreamClient(MODEL_NAME, REGION)
    client.first_backoff_s, client.max_backoff_s = 50.0, 100.0
    cold = client.chat(ChatRequest(prompt=OCEAN, max_tokens=100), RequestRecord(backend="bedrock-import", run=1))
    assert cold.ok and cold.cold_start is True
    # Waits of 50 and 100 s (skipped), then an answer in well under that: kept apart from the wait.
    assert 150 <= cold.phases["not_ready_s"] < 160 and cold.e2e_s < 10
    assert 0 < cold.ttft_s <= cold.e2e_s
    assert cold.text == "".join(ANSWER) and cold.finish_reason == "stop"
    assert (cold.output_tokens, cold.prompt_tokens, cold.token_source) == (5, 12, "server")
    assert len(cold.chunk_times) == 5 and cold.chunks == 7
    assert world.fake.invocations[-1] == {
        "messages": [{"role": "user", "content": OCEAN}],
        "max_tokens": 100,
        "temperature": 0.0,
    }
    assert world.fake.calls.count("InvokeModelWithResponseStream") == 3
    lookups = world.fake.calls.count("GetImportedModel")
    warm = client.chat(ChatRequest(prompt=OCEAN, max_tokens=3), RequestRecord(backend="bedrock-import", run=2))
    assert warm.ok and warm.cold_start is False and warm.phases == {"not_ready_s": 0.0}
    assert (warm.output_tokens, warm.finish_reason) == (3, "length")
    assert world.fake.calls.count("GetImportedModel") == lookups  # the ARN was resolved once
    client.close()

    assert model_import.run(world.argv("delete")) == 0
    assert "deleted imported model" in capsys.readouterr().out
    assert world.fake.models == {}
    assert model_import.run(world.argv("delete")) == 0
    assert "nothing to delete" in capsys.readouterr().out


def test_a_second_import_finds_the_model_and_starts_nothing(world, monkeypatch, capsys):
    builds = weights_copy(monkeypatch, BUCKET, PREFIX, qwen_files())
    assert model_import.run(world.argv("import")) == 0
    assert model_import.run(world.argv("import")) == 0
    captured = capsys.readouterr()
    assert "already imported" in captured.err and "no import job started" in captured.err
    assert captured.out.count(f"imported model: {world.fake.models[MODEL_NAME]['modelArn']}") == 2
    assert len(builds) == 1 and world.fake.calls.count("CreateModelImportJob") == 1
    (record,) = world.evidence()["records"]
    assert record["outcome"] == "already imported" and record["model_name"] == MODEL_NAME


def test_weights_in_the_bucket_are_not_copied_again(world, monkeypatch, capsys):
    for name, data in qwen_files().items():
        world.s3.put_object(Bucket=BUCKET, Key=PREFIX + name, Body=data)
    world.s3.put_object(Bucket=BUCKET, Key=PREFIX.rstrip("/") + ".complete", Body=b"copied")
    builds = weights_copy(monkeypatch, BUCKET, PREFIX, qwen_files())
    assert model_import.run(world.argv("import")) == 0
    assert builds == [] and "copy skipped" in capsys.readouterr().err
    assert world.evidence()["records"][0] == {"step": "copy", "outcome": "skipped", "files": sorted(qwen_files())}


def test_weights_a_copy_left_without_its_completion_marker_are_copied_again(world, monkeypatch):
    """A copy that died half-way (files there, no marker) is not taken for a whole one."""
    for name, data in qwen_files().items():
        world.s3.put_object(Bucket=BUCKET, Key=PREFIX + name, Body=data)
    builds = weights_copy(monkeypatch, BUCKET, PREFIX, qwen_files())
    assert model_import.run(world.argv("import")) == 0
    assert len(builds) == 1 and world.evidence()["records"][0]["outcome"] == "copied"


def test_a_refused_architecture_is_one_line_exit_2_and_no_job(world, monkeypatch, capsys):
    weights_copy(monkeypatch, BUCKET, PREFIX, qwen_files({"architectures": ["Gemma3ForCausalLM"]}))
    assert exit_status(world.argv("import")) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1
    assert "Gemma3ForCausalLM is not one Custom Model Import accepts" in lines[0]
    assert "no import job was started" in lines[0]
    assert "CreateModelImportJob" not in world.fake.calls and world.fake.jobs == {}
    assert "Gemma3ForCausalLM" in world.evidence()["refused"]


def test_a_failed_import_job_gives_its_failure_message_and_exit_1(world, monkeypatch, capsys):
    weights_copy(monkeypatch, BUCKET, PREFIX, qwen_files())
    world.fake.fail_next = "The model's config.json could not be parsed: unsupported rope_scaling type."
    assert exit_status(world.argv("import")) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("failed:")]
    assert len(lines) == 1 and "unsupported rope_scaling type" in lines[0]
    assert world.fake.models == {}
    assert "unsupported rope_scaling type" in world.evidence()["failure"]


def test_a_failed_copy_gives_its_reason_and_exit_1(world, monkeypatch, capsys):
    weights_copy(
        monkeypatch, BUCKET, PREFIX, {}, fail="huggingface_hub: 401 Client Error for Qwen/Qwen2.5-1.5B-Instruct"
    )
    assert exit_status(world.argv("import")) == 1
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("failed:")]
    assert "FAILED" in line and "401 Client Error" in line
    assert "CreateModelImportJob" not in world.fake.calls


def test_bad_input_is_one_line_exit_2(world, tmp_path, capsys):
    assert exit_status(world.argv("import", "bedrock-imports")) == 2
    assert "unknown backend 'bedrock-imports'" in capsys.readouterr().err
    assert exit_status(world.argv("import", "g6")) == 2
    assert "not a Custom Model Import backend" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    argv = ["import", "--outputs-file", str(empty), "--results-dir", str(world.results)]
    assert exit_status(argv) == 2
    assert "backend bedrock-import has no stack output" in capsys.readouterr().err
    assert world.fake.calls == []


def test_a_model_never_ready_within_the_budget_is_a_timeout_marked_cold(world, monkeypatch):
    model = world.fake.add_model(MODEL_NAME, ours=True)
    world.fake.not_ready = 1000
    skip_the_waits(monkeypatch)
    client = BedrockImportStreamClient(MODEL_NAME, REGION, not_ready_budget_s=200.0)
    client.first_backoff_s, client.max_backoff_s = 50.0, 100.0
    record = RequestRecord(backend="bedrock-import", run=1)
    # Refused, 50 s, refused, 100 s, refused at 150 s: a 200 s wait would pass the budget.
    with pytest.raises(TimedOut, match=r"not ready after 15\d\.\d s \(3 x ModelNotReadyException; budget 200 s\)"):
        client.chat(ChatRequest(prompt=OCEAN), record)
    assert record.cold_start is True and 150 <= record.phases["not_ready_s"] < 160
    assert not record.ok and record.ttft_s is None
    assert client.model_arn == model["modelArn"]
    client.close()
