"""Every opt-in option in the open lane, from an empty account to a recommendation and back to
nothing, through the app's real CDK deploys: `runner.up` (the serverless image built by the
emulated CodeBuild, recorded, and the stack deployed again to make its endpoint), `runner.check`,
`runner.bench` on serverless, asynchronous (at zero first) and the imported model (its cold start
retried), `runner.batch`, `runner.model_import` (the weights copied by the stack's own CodeBuild
job, under bash, with the real AWS CLI), `runner.cost`, `runner.advise`, and `runner.sweep
--delete`, which empties the buckets, deletes the imported model and the stacks, and then finds
nothing of ours.

The answers come from a scripted OpenAI-compatible server behind the emulator's SageMaker runtime
(tests/aws_emulator/sagemaker_runtime.py) and from the loopback Custom Model Import fake; the
serverless path against the real embedded llama.cpp is in tests/runner/test_sagemaker_options.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from runner import advise, batch, bench, check, cost, model_import, sweep
from runner.core.errors import RunnerError
from runner.up import UpOptions, up
from tests.aws_emulator.sagemaker_runtime import hold_at_zero
from tests.emulator.cdk_cycle import bootstrap
from tests.runner.fake_openai import FakeOpenAI, text

pytestmark = pytest.mark.emulator
OPTIONS = ["sagemaker-serverless", "sagemaker-async", "sagemaker-batch", "bedrock-import"]
# moto's endpoint configs know no ml.g6 type (a named emulator gap): the instances are g4dn here.
CONTEXT = {
    "lane": "open",
    "backends": ",".join(OPTIONS),
    "sagemaker-async.instanceType": "ml.g4dn.xlarge",
    "sagemaker-batch.instanceType": "ml.g4dn.xlarge",
}
STACKS = ["InferenceSageMakerStack", "InferenceBedrockImportStack"]


def newest(results: Path, command: str) -> tuple[Path, dict]:
    (path,) = sorted(results.glob(f"*/{command}-*.json"))[-1:]
    return path, json.loads(path.read_text())


def test_every_option_from_an_empty_account_to_a_recommendation_and_back_to_nothing(emulator, tmp_path):
    emulator.reset()
    bootstrap(emulator.scratch)
    results = tmp_path / "results"
    options = UpOptions(
        stacks=STACKS, context=CONTEXT, poll_s=0.2, build_grace_s=1.0, method="direct", results_dir=results
    )
    evidence = up(options)
    records = {r["backend"]: r for r in evidence.data["records"]}
    assert {name: r["outcome"] for name, r in records.items()} == dict.fromkeys(OPTIONS, "ready"), json.dumps(
        evidence.data["notices"]
    )
    # Images before endpoints: the serverless image was built, recorded, and the endpoint made after.
    assert records["sagemaker-serverless"]["build_status"] == "SUCCEEDED"
    placement = json.loads((emulator.scratch / "placement.json").read_text())["stacks"]["InferenceSageMakerStack"]
    (image,) = placement["images"]
    assert image.startswith("llama-serverless:")
    sagemaker = boto3.client("sagemaker", region_name="us-east-2")
    endpoints = sorted(e["EndpointName"] for e in sagemaker.list_endpoints()["Endpoints"])
    assert endpoints == ["inference-sagemaker-async", "inference-sagemaker-serverless"]
    billing = {row["backend"]: row for row in evidence.data["billing"]}
    assert billing["sagemaker-serverless"]["usd_per_hour"] == 0.0  # per second of compute, only while answering
    # Created with one instance until it scales in (g4dn here: the offline table prices g6 only).
    assert billing["sagemaker-async"]["what"].startswith("endpoint inference-sagemaker-async (ml.g4dn.xlarge")

    reply = text("The capital is Paris, a city on the Seine.", usage_tokens=11)
    with FakeOpenAI([reply]) as server:
        for endpoint in endpoints:
            emulator.model_servers[endpoint] = server.url
        emulator.transform_server = server.url

        # The import: the weights copied inside "AWS" by the stack's CodeBuild job, then imported.
        assert model_import.run(["import", "--poll", "0.2", "--results-dir", str(results)]) == 0
        s3 = boto3.client("s3", region_name="us-east-1")
        weights = s3.list_objects_v2(Bucket=_output("bedrock-import")["bucket"])["Contents"]
        # The real `hf` CLI against the emulator's loopback Hub: the repository as it is (its README
        # and LICENSE go along, as AWS's own import samples upload a whole snapshot), no other
        # weight format (tests/cdk/test_weights_copy.py).
        copied = {Path(o["Key"]).name for o in weights if not o["Key"].endswith(".complete")}
        assert copied == {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "merges.txt",
                          "vocab.json", "README.md", "LICENSE"}  # fmt: skip
        assert len([o for o in weights if o["Key"].endswith(".complete")]) == 1
        assert len(emulator.bedrock.models) == 1
        emulator.bedrock.answer = ["The capital is Paris,", " a city on the Seine."]

        names = ",".join(["sagemaker-serverless", "sagemaker-async", "bedrock-import"])
        assert check.run(["--backends", f"{names},sagemaker-batch", "--results-dir", str(results)]) == 0
        _, checked = newest(results, "check")
        assert {r["backend"]: r["plain_says_paris"] for r in checked["records"] if "plain" in r} == dict.fromkeys(
            names.split(","), True
        )

        # Both found at zero by the bench: the async endpoint scaled in, the imported model asleep.
        hold_at_zero(emulator, "inference-sagemaker-async", 0.3)
        for model in emulator.bedrock.models.values():  # scaled back to zero since the check
            model.update(ready=False, refusals=0)
        assert bench.run(["--repeats", "2", "--backends", names, "--results-dir", str(results)]) == 0
        bench_file, measured = newest(results, "bench")
        assert measured["emulated"]  # measured against the emulator: labelled, never taken for AWS
        ok = {r["backend"] for r in measured["records"] if r["ok"]}
        assert ok == set(names.split(","))
        cold = [r for r in measured["records"] + measured.get("warm_up", []) if r.get("cold_start")]
        assert {r["backend"] for r in cold} >= {"sagemaker-async", "bedrock-import"}
        leave_zero = [r["phases"]["leave_zero_s"] for r in cold if r["backend"] == "sagemaker-async"]
        assert leave_zero and leave_zero[0] >= 0.3

        assert batch.run(["--count", "4", "--poll", "0.2", "--results-dir", str(results)]) == 0
        batch_file, batched = newest(results, "batch")
        (job,) = batched["jobs"]
        assert (job["status"], job["records"], job["ok_records"]) == ("Completed", 4, 4)

    assert cost.run([str(bench_file), str(batch_file), "--offline", "--results-dir", str(results)]) == 0
    _, priced = newest(results, "cost")
    billed = {r["backend"]: r.get("billing") for r in priced["records"]}
    assert billed["sagemaker-serverless"] == "serverless-seconds"
    assert billed["sagemaker-batch"] == "job-instance-hours"
    assert billed["bedrock-import"] == "model-unit-minutes"
    workload = ["--requests-per-day", "500", "--evidence", str(bench_file), str(batch_file), "--offline"]
    # Figures from the emulator are not AWS's: refused unless asked for, then labelled.
    with pytest.raises(RunnerError, match="no option measured on AWS to advise on"):
        advise.run([*workload, "--results-dir", str(results)])
    assert advise.run([*workload, "--allow-unmeasured-sources", "--results-dir", str(results)]) == 0

    # Back to nothing: buckets emptied, the imported model and the stacks deleted, and nothing left.
    assert sweep.run(["--delete", "--results-dir", str(tmp_path / "delete")]) in (0, 1)
    _, deleted = newest(tmp_path / "delete", "sweep")
    actions = deleted["deleted"]
    emptied = [i for i, a in enumerate(actions) if a["kind"] == "bucket" and a["outcome"].startswith("emptied")]
    weights = [a for a in actions if a["kind"] == "bucket" and a["outcome"].startswith("emptied (")]
    # Every bucket of ours emptied before any stack is deleted (CloudFormation deletes only empty
    # ones), the weights among them; the stacks then deleted, the imported model after them.
    assert emptied and max(emptied) < min(i for i, a in enumerate(actions) if a["kind"] == "stack"), actions
    assert any(int(a["outcome"].split("(")[1].split()[0]) >= 4 for a in weights), weights
    assert sorted(a["id"] for a in actions if a["kind"] == "stack" and a["outcome"] == "deleted") == [
        "InferenceBedrockImportStack",
        "InferenceSageMakerStack",
    ], actions
    assert emulator.bedrock.models == {}
    assert sweep.run(["--results-dir", str(tmp_path / "after")]) in (0, 1)
    _, after = newest(tmp_path / "after", "sweep")
    assert [f for f in after["records"] if f["ours"] and f["kind"] != "volume" and not f["kept"]] == []
    # The region's store stack is kept for the next deploy, with what it retains: the serverless
    # image and the store the copy filled.
    assert {(f["kind"], f["id"]) for f in after["records"] if f["kept"]} == {
        ("stack", "InferenceStore-us-east-2"),
        ("bucket", "inference-survey-123456789012-us-east-2"),
        ("image-repository", "inference-survey/llama-serverless"),
    }


def _output(backend: str) -> dict:
    """The backend's stack output, read from CloudFormation as the runner reads it."""
    from runner.cloud.outputs import read_stack_outputs

    reading = read_stack_outputs("us-east-1")
    (output,) = [o for o in reading.backends if o.name == backend]
    return output.to_json()
