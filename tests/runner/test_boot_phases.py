"""What runner.up makes of a boot's phases: the readiness record read (and what it does with a
record that is not the shape a boot writes), seconds from the instance's launch, the up table and
the survey's table beside the survey's launch to ready; and the store's copy an endpoint is
deployed with, read from S3 (moto on loopback) as runner.up reads it."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime

import boto3
import pytest
from rich.console import Console

from catalog.boot import store_bucket, weights_marker, weights_prefix
from runner.cloud.bring_up.one_stack import UpFile
from runner.cloud.bring_up.staged_weights import staged_copy
from runner.cloud.readiness import Readiness, phase_seconds
from runner.render.up import phase_line, render_report, slow_ways

RECORD = {
    "state": "ready",
    "instance_id": "i-1",
    "phases": [["running", 1000.0], ["image", 1191.5], ["weights", 1204.0], ["engine", 1250.0], ["answer", 1251.0]],
    "paths": {
        "storage": "instance store /dev/nvme1n1 at /opt/dlami/nvme (250 GB free): the image, the weights and the caches",
        "image": "from vllm/vllm-openai:v0.30.0: its mirror could not be pulled (manifest unknown); started build b:1",
        "weights": "streamed by the engine from s3://inference-survey-123456789012-us-east-1/weights/m/",
        "graphs": "compiling: no graphs stored for these inputs in the stores of us-east-1",
    },
    "answer": "Paris",
    "answer_correct": True,
}


def test_a_ready_record_carries_its_phases_in_order_and_the_way_each_step_went():
    readiness = Readiness.parse(json.dumps(RECORD))
    assert [name for name, _ in readiness.phases] == ["running", "image", "weights", "engine", "answer"]
    assert readiness.paths == RECORD["paths"]
    assert (readiness.answer, readiness.answer_correct, readiness.answer_error) == ("Paris", True, None)


@pytest.mark.parametrize(
    "phases", ["soon", [["running"]], [["running", "a while"]], [[1, 2.0]], {"running": 1.0}], ids=repr
)
def test_phases_of_another_shape_are_no_phases(phases):
    assert Readiness.parse(json.dumps({"state": "ready", "phases": phases})).phases == []


def test_seconds_are_counted_from_the_instances_launch_and_each_phase_takes_from_the_one_before():
    launched = datetime.fromtimestamp(955.0, UTC)
    seconds = phase_seconds(Readiness.parse(json.dumps(RECORD)).phases, launched)
    assert seconds["phases_s"] == {"running": 45.0, "image": 236.5, "weights": 249.0, "engine": 295.0, "answer": 296.0}
    assert seconds["phase_s"] == {"running": 45.0, "image": 191.5, "weights": 12.5, "engine": 46.0, "answer": 1.0}
    assert sum(seconds["phase_s"].values()) == seconds["phases_s"]["answer"]
    # Without a launch time, from the first phase.
    assert phase_seconds(Readiness.parse(json.dumps(RECORD)).phases, None)["phases_s"]["running"] == 0.0
    assert phase_seconds([], launched) == {}


def up_record(**changes) -> dict:
    seconds = phase_seconds(Readiness.parse(json.dumps(RECORD)).phases, datetime.fromtimestamp(955.0, UTC))
    record = {
        "backend": "g6",
        "outcome": "ready",
        "attempts": [{"region": "us-east-1"}],
        "region": "us-east-1",
        "launch_to_ready_min": 4.9,
        "survey_launch_to_ready_min": 13.9,
        "modelled_launch_to_ready_min": 5.2,
        "paths": RECORD["paths"],
        "answer": "Paris",
        "answer_correct": True,
    }
    return record | seconds | changes


def test_the_slow_ways_are_those_a_step_fell_back_to_and_the_fast_ones_are_not_listed():
    line = slow_ways(up_record())
    assert line.startswith("image: from vllm/vllm-openai:v0.30.0: its mirror could not be pulled")
    assert "graphs: compiling: no graphs stored" in line
    assert "storage" not in line and "weights" not in line  # the instance store, and streamed from the store
    fast = up_record(paths={"image": "the region's mirror x", "weights": "copied from s3://b/weights/m/ to the disk",
                            "graphs": "restored from s3://b/graphs/nvidia/k.tar.gz (1M)", "storage": "instance store"})  # fmt: skip
    assert slow_ways(fast) == "-"
    # A public image the app does not mirror (no store) names itself: not a fallback.
    assert slow_ways(up_record(paths={"image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/x:1"})) == "-"
    assert phase_line(up_record()) == "running 45 · image 191.5 · weights 12.5 · engine 46 · answer 1"
    assert phase_line({}) == "-"


def render(records: list[dict]) -> str:
    out = Console(file=io.StringIO(), width=400, color_system=None)
    render_report(UpFile(records=records, billing=[]), out)
    return out.file.getvalue()


def test_the_up_table_shows_the_phases_the_model_and_the_slow_ways_beside_the_surveys_minutes():
    text = render([up_record()])
    header = next(line for line in text.splitlines() if "survey min" in line)
    assert header.index("survey min") < header.index("model min") < header.index("phases s") < header.index("slow ways")
    row = next(line for line in text.splitlines() if line.startswith("│ g6"))
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells[7:10] == ["4.9", "13.9", "5.2"]
    assert cells[10] == "running 45 · image 191.5 · weights 12.5 · engine 46 · answer 1"
    assert cells[-1].startswith("image: from vllm/vllm-openai:v0.30.0")
    wrong = render([up_record(answer="Lyon", answer_correct=False)])
    assert "(first answer 'Lyon' is not the expected one)" in wrong


def test_the_surveys_report_puts_the_phases_beside_its_launch_to_ready(tmp_path):
    from runner.render.beside import launch_table

    table = launch_table([(tmp_path / "up.json", UpFile(command="up", records=[up_record()]))], {})
    out = Console(file=io.StringIO(), width=400, color_system=None)
    out.print(table)
    row = next(line for line in out.file.getvalue().splitlines() if line.startswith("│ g6"))
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells[:5] == ["g6", "ready", "4.9", "13.9", "running 45 · image 191.5 · weights 12.5 · engine 46 · answer 1"]


# --- the store's copy an endpoint is deployed with ----------------------------------------------

ACCOUNT = "123456789012"
MODEL = "xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4"


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{server.get_host_and_port()[1]}"
    finally:
        server.stop()


@pytest.fixture
def s3(moto_url):
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST"), timeout=30).read()
    return boto3.client("s3", region_name="us-east-2", endpoint_url=moto_url, aws_access_key_id="testing",
                        aws_secret_access_key="testing")  # fmt: skip


def test_no_store_no_copy_a_copy_of_another_model_a_store_elsewhere_and_a_complete_copy(s3):
    bucket = store_bucket(ACCOUNT, "us-east-2")
    missing = staged_copy(s3, ACCOUNT, "us-east-2", MODEL)
    assert (missing.uri, missing.copy_helps) == (None, True)
    assert missing.why == f"the region's store {bucket} does not exist yet"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-east-2"})
    s3.put_object(Bucket=bucket, Key=f"{weights_prefix(MODEL)}model.safetensors", Body=b"\0")
    half = staged_copy(s3, ACCOUNT, "us-east-2", MODEL)
    assert (half.uri, half.why, half.copy_helps) == (None, f"no complete copy of {MODEL} in {bucket} yet", True)
    file = {"m": {"size": 1, "sha256": "0" * 64}}
    s3.put_object(
        Bucket=bucket, Key=weights_marker(MODEL), Body=json.dumps({"version": 2, "model": "other", "files": file})
    )
    other = staged_copy(s3, ACCOUNT, "us-east-2", MODEL)
    assert (other.uri, other.copy_helps) == (None, False) and "is not one for" in other.why
    # A copy made before every file the engines read was copied (no version): made again.
    s3.put_object(Bucket=bucket, Key=weights_marker(MODEL), Body=json.dumps({"model": MODEL, "files": {"m": 1}}))
    older = staged_copy(s3, ACCOUNT, "us-east-2", MODEL)
    assert (older.uri, older.copy_helps) == (None, True) and "made by an older weights copy" in older.why
    s3.put_object(
        Bucket=bucket, Key=weights_marker(MODEL), Body=json.dumps({"version": 2, "model": MODEL, "files": file})
    )
    assert staged_copy(s3, ACCOUNT, "us-east-2", MODEL).uri == f"s3://{bucket}/{weights_prefix(MODEL)}"
    # The name held in another region: never read across regions, and no copy would help.
    elsewhere = staged_copy(s3, ACCOUNT, "us-west-2", MODEL.replace("xbill9", "x"))
    assert elsewhere.uri is None
    west = store_bucket(ACCOUNT, "us-west-2")
    europe = boto3.client("s3", region_name="eu-west-1", endpoint_url=s3.meta.endpoint_url,
                          aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
    europe.create_bucket(Bucket=west, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    far = staged_copy(s3, ACCOUNT, "us-west-2", MODEL)
    assert (far.uri, far.why, far.copy_helps) == (None, f"the store {west} is in eu-west-1, not us-west-2", False)


def test_a_server_whose_root_volume_throughput_was_raised_costs_that_much_more_an_hour():
    """runner.cost prices g5g's and inf2's 500 MB/s root volumes beside their instances (gp3's 125
    MB/s are included; $0.040 per MB/s-month above: catalog/prices.py)."""
    from dataclasses import asdict

    from catalog import get_backend
    from runner.core.backend_entries import BackendEntry
    from runner.costing.prices import price_all, price_request

    def request(name: str):
        spec = get_backend(name)
        entry = {"name": name, "kind": spec.kind.value, "region": "us-east-1", "catalog": asdict(spec)}
        return price_request(BackendEntry.from_json(entry, name))

    g5g, g6 = request("g5g"), request("g6")
    assert (g5g.item, g5g.volume_throughput_mbs, g6.volume_throughput_mbs) == ("g5g.2xlarge", 500, 0)
    prices, _ = price_all([g5g, g6], None)
    assert prices[g5g].usd_per_hour == pytest.approx(0.556 + 375 * 0.040 / 730, abs=1e-4)
    assert "root volume's 500 MB/s of gp3 throughput" in prices[g5g].note and not prices[g5g].verified
    assert prices[g6].usd_per_hour == 0.8048  # 125 MB/s: nothing more


def stubbed(service: str):
    """A real botocore client whose answers are queued (botocore.stub.Stubber checks each request and
    answer against the service's own model)."""
    from botocore.stub import Stubber

    client = boto3.client(service, region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    return client, Stubber(client)


@pytest.mark.parametrize("last_status", ["FAILED", "SUCCEEDED", "IN_PROGRESS"])
def test_starting_the_copy_again_says_why_the_last_one_failed_from_its_log(last_status):
    from runner.cloud.bring_up.staged_weights import start_copy

    project, failed_id = "inference-weights-copy", "inference-weights-copy:1111"
    codebuild, builds = stubbed("codebuild")
    logs, log_events = stubbed("logs")
    builds.add_response(
        "list_builds_for_project", {"ids": [failed_id]}, {"projectName": project, "sortOrder": "DESCENDING"}
    )
    group, stream = "/aws/codebuild/inference-weights-copy", "1111"
    last = {"id": failed_id, "buildStatus": last_status, "logs": {"groupName": group, "streamName": stream}}
    builds.add_response("batch_get_builds", {"builds": [last]}, {"ids": [failed_id]})
    refused = "error: the hub gives no revision main of example/gone: Repository Not Found"
    lines = ["[Container] Running command bash weights_copy.sh", refused, "error: not copied: example/gone"]
    if last_status == "FAILED":
        events = [{"timestamp": 1, "message": line, "ingestionTime": 1} for line in lines]
        log_events.add_response("get_log_events", {"events": events})
    if last_status != "IN_PROGRESS":
        builds.add_response("start_build", {"build": {"id": "inference-weights-copy:2222"}}, {"projectName": project})
    with builds, log_events:
        note = start_copy(codebuild, project, logs)
        # Every call queued was made, and no other (a running copy is not started twice).
        builds.assert_no_pending_responses()
    started = "started inference-weights-copy:2222 to make the copy"
    if last_status == "FAILED":
        assert note == f"{started} (the last copy, {failed_id}, failed: {refused} | error: not copied: example/gone)"
    elif last_status == "IN_PROGRESS":
        assert note == f"build {failed_id} is making the copy"
    else:
        assert note == started
