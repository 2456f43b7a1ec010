"""`python -m runner.survey` end to end on the emulator: from an empty account through the
preflight (Service Quotas on its loopback fake with the real API's shapes, moto having none for
ec2: inf2 and trn1 left out at quotas of 0, so their stack is never deployed), `up` through the
app's real CDK deploy (the g5g image built by the emulated CodeBuild, the servers' real boot
scripts under bash: g5g, on a host without a GPU, fails at boot and is taken to zero), `forward` through the stand-in plugin, `check`, `ask`, both demos, `bench`
and its sweep, `quality` against the stand-in model behind the forwards, `cost` on the offline
table, the report, the teardown of what the survey created and a sweep that finds nothing of
ours; then Ctrl-C in the middle of the benchmark, with and without `--keep`, a second survey
that finds a stack standing and leaves it, and `--resume` of the kept one down to nothing.

Not emulated here: SageMaker real-time streaming (moto serves no InvokeEndpointWithResponseStream;
tests/runner/test_sagemaker_usage.py holds that client to AWS's event-stream framing) and Bedrock
base-model calls, so the surveys name EC2 backends only."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import boto3
import pytest

from catalog.contract import BACKEND_TAG_KEY
from runner import survey, sweep
from runner.cloud.reach import ssm_forward
from runner.measure.bench_file import BenchFile
from runner.render.bench import bench_summary
from tests.emulator.cdk_cycle import bootstrap
from tests.emulator.observe import leftovers
from tests.emulator.stand_in_model import StandInModel
from tests.host.machine import HostOptions
from tests.runner.fake_service_quotas import FakeServiceQuotas

pytestmark = pytest.mark.emulator
G = ("L-DB2E81BA", "Running On-Demand G and VT instances")
INF = ("L-1945791B", "Running On-Demand Inf instances")
TRN = ("L-2C3B7624", "Running On-Demand Trn instances")
# Quick settings for every step (the survey's defaults are its own runs: 20 demo runs, 100 items).
QUICK = [
    "--poll", "0.3", "--launch-timeout", "20", "--build-grace", "1", "--method", "direct", "--check-wait", "30",
    "--repeats", "2", "--concurrency", "1,2", "--lengths", "64,256", "--capacity-levels", "2", "--capacity-seconds", "30",
    "--demo1-runs", "2", "--demo2-runs", "1", "--quality-items", "4",
    "--offline-prices", "--delete-wait", "60",
]  # fmt: skip


def quota_table(g: float = 12.0) -> dict[tuple[str, str], list[tuple[str, str, float]]]:
    """G and VT 12 vCPUs (g6 4 + g5g 8) unless told; Inf and Trn 0 (inf2 and trn1 are left out)."""
    ec2 = [(G[0], G[1], g), (INF[0], INF[1], 0.0), (TRN[0], TRN[1], 0.0)]
    return {(region, "ec2"): ec2 for region in ("us-east-1", "us-east-2", "us-west-2")}


@pytest.fixture(scope="module")
def quotas():
    with FakeServiceQuotas(quota_table()) as fake:
        yield fake


@pytest.fixture(scope="module")
def model():
    with StandInModel() as server:
        yield server


@pytest.fixture
def account(emulator, quotas, model, monkeypatch):
    """An empty account, bootstrapped; every forward leads to the stand-in model."""
    emulator.reset()
    bootstrap(emulator.scratch)
    model.on_request = None
    quotas.quotas = quota_table()
    monkeypatch.setenv("AWS_ENDPOINT_URL_SERVICE_QUOTAS", quotas.url)
    monkeypatch.setenv("STAND_IN_UPSTREAMS", json.dumps({"*": model.url.removeprefix("http://")}))
    monkeypatch.delenv("STAND_IN_MODE", raising=False)
    yield emulator
    ssm_forward.close_forwards(aws=True)


def folders(results: Path) -> list[Path]:
    return sorted(results.glob("survey-*"))


def state(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "survey.json").read_text())


def steps(data: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    return [(s["step"], s["backend"], s["status"]) for s in data["steps"]]


def evidence(folder: Path, data: dict[str, Any], step: str, backend: str | None = None) -> dict[str, Any]:
    """The evidence of the step (of the first round; of a late round, `backend` its names)."""
    (path,) = [p for s in data["steps"] if s["step"] == step and s["backend"] == backend for p in s["evidence"]]
    return json.loads((folder / path).read_text())


def left_beyond_the_volume_gap(data: dict[str, Any]) -> list[dict[str, Any]]:
    """What the survey's closing sweep found left, less an emulator gap (see test_around_the_run):
    moto keeps the volumes of terminated instances attached to them (AWS deletes them with the
    instance: DeleteOnTermination), so each such volume, on an instance that is terminated, is
    set aside here; the survey itself reports them as left."""
    kept = []
    for item in data["left"]:
        if item["kind"] == "volume":
            ec2 = boto3.client("ec2", region_name=item["region"])
            (volume,) = ec2.describe_volumes(VolumeIds=[item["id"]])["Volumes"]
            (attachment,) = volume["Attachments"]
            (reservation,) = ec2.describe_instances(InstanceIds=[attachment["InstanceId"]])["Reservations"]
            if reservation["Instances"][0]["State"]["Name"] == "terminated":
                continue
        kept.append(item)
    return kept


def ctrl_c_in_bench(model: StandInModel, after: int = 2) -> None:
    """A real SIGINT to this process once the benchmark's `after`-th request arrives, as a
    terminal's Ctrl-C is: Python turns it into KeyboardInterrupt in the main thread."""
    assert threading.current_thread() is threading.main_thread()
    seen = []

    def on_request(body: dict[str, Any]) -> None:
        if body.get("max_tokens") == 100 and not body.get("tools"):
            seen.append(body)
            if len(seen) == after:
                os.kill(os.getpid(), signal.SIGINT)

    model.on_request = on_request


def test_the_whole_survey_from_an_empty_account_to_a_report_and_back_to_nothing(
    account, model, plugin, tmp_path, capsys
):
    emulator = account
    emulator.host_options["g5g"] = HostOptions(gpu=False)  # fails at boot: no NVIDIA GPU
    # g5g's image is built while g6 is measured (held until the first request, so the order is the
    # same on every run): g5g comes in the late round, and fails there.
    release = tmp_path / "g5g-image-built"
    emulator.build_behaviour["vllm-sm75"] = f"hold:{release}"
    # While the measuring steps run (the first request they send), what the groups hold.
    during: dict[str, int] = {}

    # A second build of g5g's image started while the first still builds it (every stack update
    # starts one): it leaves the image to the first, and builds and pushes nothing itself.
    second: list[Any] = []

    def groups_while_measuring(body: dict[str, Any]) -> None:
        if not during:
            autoscaling = boto3.client("autoscaling", region_name="us-east-1")
            for group in autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]:
                backend = next(t["Value"] for t in group["Tags"] if t["Key"] == BACKEND_TAG_KEY)
                during[backend] = len(group["Instances"])
            try:
                ((region, name),) = [
                    key
                    for key, project in emulator.builds.projects.items()
                    if project.variables().get("IMAGE_FOLDER") == "vllm-sm75"
                ]
                started = boto3.client("codebuild", region_name=region).start_build(projectName=name)["build"]
                second.append(emulator.builds.records[started["id"]])
                deadline = time.monotonic() + 120
                while second[0].status == "IN_PROGRESS" and time.monotonic() < deadline:
                    time.sleep(0.1)
            finally:
                release.touch()

    model.on_request = groups_while_measuring
    results = tmp_path / "results"
    code = survey.run(["g6", "g5g", "inf2", "trn1", "--plugin", plugin, *QUICK, "--results-dir", str(results)])
    out = capsys.readouterr()
    (folder,) = folders(results)
    data = state(folder)
    assert code == 1, json.dumps(data["steps"], indent=1)  # g5g failed at boot: its late up step failed
    (later,) = second
    assert later.status == "SUCCEEDED", later.lines
    assert any("is building" in line and "already; this build leaves it to that one" in line for line in later.lines)
    assert not any(line.startswith("#20 naming to") for line in later.lines)  # no docker build of its own

    # Preflight: inf2 and trn1 left out before anything billed, for quotas of 0; nothing of theirs deployed.
    rows = {r["backend"]: r for r in data["preflight"]["rows"]}
    assert not rows["inf2"]["runs"] and not rows["trn1"]["runs"]
    assert "quota Running On-Demand Inf instances (L-1945791B) in us-east-2 is 0 vCPUs" in rows["inf2"]["reason"]
    assert "quota Running On-Demand Trn instances (L-2C3B7624) in us-east-2 is 0 vCPUs" in rows["trn1"]["reason"]
    assert rows["g6"]["quota"] == "Running On-Demand G and VT instances (L-DB2E81BA): 4 of 12 vCPUs"
    assert rows["g5g"]["quota"] == "Running On-Demand G and VT instances (L-DB2E81BA): 12 of 12 vCPUs"
    assert data["plan"]["deploy"] == ["InferenceGpuStack"]
    assert data["pre_existing"] == {}

    # Every step in order, each with its own log; the one that failed says why; the rest ran.
    assert steps(data) == [
        ("preflight", None, "passed"),
        ("up", None, "passed"),
        ("forward", None, "passed"),
        ("check", None, "passed"),
        ("ask", "g6", "passed"),
        ("demo1-filter", None, "passed"),
        ("demo1-rows", None, "passed"),
        ("demo2", None, "passed"),
        ("bench", None, "passed"),
        ("bench-sweep", None, "passed"),
        ("bench-lengths", None, "passed"),
        ("bench-workload", None, "passed"),
        ("quality", None, "passed"),
        ("park", "g5g", "passed"),
        ("up", "g5g", "failed"),
        ("cost", None, "passed"),
        ("report", None, "passed"),
        ("forwards-closed", None, "passed"),
        ("teardown", None, "passed"),
        ("sweep", None, "passed"),
    ]
    assert data["ready"] == ["g6"]
    assert data["failed"] == {"g5g": data["failed"]["g5g"]} and "no NVIDIA GPU" in data["failed"]["g5g"]
    late_up = {(r["step"], r["backend"]): r for r in data["steps"]}[("up", "g5g")]
    assert "g5g: failed: no NVIDIA GPU" in late_up["line"]
    assert sorted(p.name for p in (folder / "logs").iterdir()) == [
        f"{i:02d}-{s}{'-' + b if b else ''}.log" for i, (s, b, _) in enumerate(steps(data), start=1)
    ]
    assert "The ocean is wide and deep." in (folder / "logs" / "05-ask-g6.log").read_text()
    # Nothing billed without serving: g5g was taken to zero while g6 served, and only g6 billed.
    assert during == {"g6": 1, "g5g": 0}
    assert [row["backend"] for row in evidence(folder, data, "up")["billing"]] == ["g6"]
    assert "g5g" not in data["measured"]

    # The measurements went through the forward to the stand-in model.
    bench = evidence(folder, data, "bench")
    assert [(r["backend"], r["ok"], r["output_tokens"]) for r in bench["records"]] == [("g6", True, 9)] * 2
    counting = evidence(folder, data, "demo1-filter")
    assert [(r["backend"], r["correct"], r["right_filter"]) for r in counting["records"]] == [("g6", True, True)] * 2
    (orchestrated,) = evidence(folder, data, "demo2")["records"]
    assert [(row["backend"], row["answer"]) for row in orchestrated["table"]] == [("g6", "Paris")]
    cost = evidence(folder, data, "cost")
    assert cost["config"]["pricing"].startswith("offline")

    # The report: the survey's tables with these figures beside the survey's, and why trn1 is missing.
    page = (folder / "report.html").read_text()
    markdown = (folder / "report.md").read_text()
    assert 'id="beside"' in page
    for needle in ("launch to ready", "13.9", "23.7", "demo 1", "20/20", "demo 2", "0.153", "131.5 / 132.5",
                   "$ per million output tokens", "no NVIDIA GPU"):  # fmt: skip
        assert needle in markdown, needle
    assert "survey: every step" in markdown and "left out before anything billed: inf2" in markdown
    # The prompt-length sweep drawn, and the chat preset's capacity in the headline (or why none).
    assert 'id="plot-prefill"' in page and 'id="plot-goodput"' in page
    assert "good req/s at SLO" in markdown and "$ per M at SLO" in markdown
    # Each of the survey's tables has this run's own figure beside the survey's, row by row.
    beside = markdown[markdown.index("## Beside the survey") :]
    launched = {r["backend"]: r for r in evidence(folder, data, "up")["records"]}["g6"]["launch_to_ready_min"]
    tok_s = bench_summary(BenchFile.from_json(bench))["g6"].median_tok_s
    demo2 = orchestrated["table"][0]["seconds"]
    rows_of = [line.split("│")[1:-1] for line in beside.splitlines() if line.startswith("│ g6 ")]
    cells = [[c.strip() for c in row] for row in rows_of]
    assert ["g6", "ready", f"{launched:.1f}", "13.9"] in [row[:4] for row in cells]
    # ... and where this boot spent them, phase by phase (runner/render/up.py).
    assert any(row[:4] == ["g6", "ready", f"{launched:.1f}", "13.9"] and row[4].startswith("running ") for row in cells)
    assert ["g6", "filter", "2/2", "2/2", "20/20"] in cells and ["g6", "rows", "2/2", "-", "20/20"] in cells
    assert ["g6", "Paris", f"{demo2:.3f}", "0.153"] in cells
    assert ["g6", "2/2", f"{tok_s:.1f}", "131.5 / 132.5"] in cells

    # Teardown: what the survey created, and nothing else; then nothing of ours anywhere.
    removed = {(a["region"], a["kind"], a["id"]): a["outcome"] for a in data["teardown"]}
    assert removed[("us-east-1", "stack", "InferenceGpuStack")] == "deleted"
    assert left_beyond_the_volume_gap(data) == []
    assert leftovers() == {}
    assert [s for s in emulator.sessions.values() if s["Status"] == "Connected"] == []
    assert "removing what this survey created: InferenceGpuStack" in out.err
    assert data["elapsed_s"] > 0 and data["finished_at"]


def test_ctrl_c_in_the_middle_of_the_benchmark_without_a_terminal_tears_down_what_it_made(
    account, model, plugin, tmp_path, capsys
):
    ctrl_c_in_bench(model)
    results = tmp_path / "results"
    code = survey.run(["g6", "--plugin", plugin, *QUICK, "--results-dir", str(results)])
    err = capsys.readouterr().err
    (folder,) = folders(results)
    data = state(folder)
    assert code == 130
    assert [s for s, _, _ in steps(data)][-4:] == ["bench", "forwards-closed", "teardown", "sweep"]
    assert {s: status for s, _, status in steps(data)}["bench"] == "interrupted"
    # What was measured before Ctrl-C is kept; the steps after the benchmark never ran.
    bench = evidence(folder, data, "bench")
    assert bench["interrupted"] is True
    assert not any(s in ("bench-sweep", "quality", "cost", "report") for s, _, _ in steps(data))
    assert data["interrupted"] is True and data["interrupted_at"] == "bench"
    # It said what was billing, and with no terminal to ask, took down what it created.
    assert "interrupted (bench); running now: billing now" in err and "g6 0.8048" in err
    assert "no terminal to ask: tearing down what this survey created" in err
    assert left_beyond_the_volume_gap(data) == [] and leftovers() == {}
    # Its teardown passed, so a resume deploys nothing again: it only sweeps once more.
    assert survey.run(["--resume", str(folder)]) == 0
    assert [s for s, _, _ in steps(state(folder))] == [s for s, _, _ in steps(data)] + ["sweep"]
    assert leftovers() == {}


def test_keep_leaves_it_armed_a_later_survey_leaves_a_standing_stack_and_resume_takes_it_down(
    account, model, plugin, tmp_path, capsys, quotas
):
    results = tmp_path / "results"
    ctrl_c_in_bench(model)
    # G and VT 4 vCPUs: g5g is left out, and g6 alone in its stack goes where g6's own region order
    # puts it (us-east-2), not where g6 with g5g would have gone (us-east-1): the plan, the check for
    # a standing stack and the teardown all look there.
    quotas.quotas = quota_table(g=4.0)
    assert survey.run(["g6", "g5g", "--keep", "--plugin", plugin, *QUICK, "--results-dir", str(results)]) == 130
    (kept,) = folders(results)
    data = state(kept)
    rows = {r["backend"]: r for r in data["preflight"]["rows"]}
    assert "4 already for g6; g5g needs 8" in rows["g5g"]["reason"] and rows["g6"]["region"] == "us-east-2"
    assert data["plan"]["candidates"]["InferenceGpuStack"][0] == "us-east-2"
    teardown = {s["step"]: s for s in data["steps"]}["teardown"]
    assert teardown["status"] == "kept" and "the time-to-live takes it to zero at" in teardown["line"]
    # Everything left running, its time-to-live armed (the stack's expiry, which its schedules act
    # on: tests/emulator/test_lifecycle.py fires them), and runner.sweep lists it (exit 1: billing).
    (stack,) = [f for f in data["left"] if f["kind"] == "stack"]
    assert (stack["id"], stack["detail"]) == ("InferenceGpuStack", f"time-to-live {data['expires_at']}")
    assert {f["kind"] for f in data["left"] if f["billing"]} == {"instance", "volume"}
    # g6 alone: the stack goes to the first region of g6's own order (the survey's, stage/up.sh).
    assert stack["region"] == "us-east-2"
    groups = boto3.client("autoscaling", region_name="us-east-2").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert [g["DesiredCapacity"] for g in groups] == [1]
    assert sweep.run(["--results-dir", str(tmp_path / "sweep")]) == 1
    assert f"time-to-live {data['expires_at']}" in capsys.readouterr().out

    # A second survey finds the GPU stack standing: it measures it as it is and leaves it.
    model.on_request = None
    quotas.quotas = quota_table()
    second = tmp_path / "second"
    code = survey.run(
        ["g6", "--down", "--plugin", plugin, *QUICK, "--quality-items", "0", "--results-dir", str(second)]
    )
    (folder,) = folders(second)
    later = state(folder)
    assert code == 0, json.dumps(later["steps"], indent=1)
    assert later["pre_existing"] == {"InferenceGpuStack": "us-east-2"}
    assert {s: status for s, _, status in steps(later)}["up"] == "skipped"
    assert {r["backend"] for r in evidence(folder, later, "bench")["records"] if r["ok"]} == {"g6"}
    assert later["created"]["stacks"] == {} and later["teardown"] == []
    assert [f["id"] for f in later["left"] if f["kind"] == "stack"] == ["InferenceGpuStack"]
    assert "InferenceGpuStack already stands in us-east-2" in capsys.readouterr().err

    # --resume of the kept survey (as if its machine went away): the forwards are opened again,
    # the benchmark and the steps after it run, and --down takes what it created back to nothing.
    assert survey.run(["--resume", str(kept), "--down"]) == 0
    data = state(kept)
    names = [s for s, _, _ in steps(data)]
    assert names.count("forward") == 2 and names.count("bench") == 2 and names.count("up") == 1
    assert names[-3:] == ["forwards-closed", "teardown", "sweep"] and "report" in names
    assert (kept / "report.html").exists()
    assert left_beyond_the_volume_gap(data) == [] and leftovers() == {}


def test_the_survey_measures_what_is_ready_while_an_image_still_builds_and_the_late_one_after(
    account, model, plugin, tmp_path
):
    """g5g's image takes hours to build: the survey does not wait for it. g6 is measured while the
    build runs; then g6 is parked at zero (nothing measured bills while g5g's image builds), g5g is
    watched to ready once its build ends and measured with the same steps, and everything goes."""
    emulator = account
    release = tmp_path / "g5g-image-built"
    emulator.build_behaviour["vllm-sm75"] = f"hold:{release}"
    groups: list[dict[str, int]] = []
    building: list[bool] = []

    def on_request(body: dict[str, Any]) -> None:
        if body.get("max_tokens") != 100 or body.get("tools"):
            return
        autoscaling = boto3.client("autoscaling", region_name="us-east-1")
        groups.append(
            {
                next(t["Value"] for t in g["Tags"] if t["Key"] == BACKEND_TAG_KEY): len(g["Instances"])
                for g in autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]
            }
        )
        building.append(any(b.status == "IN_PROGRESS" for b in emulator.builds.records.values()))
        release.touch()  # the first benchmark request has been seen: the build may end now

    model.on_request = on_request
    results = tmp_path / "results"
    code = survey.run(["g6", "g5g", "--plugin", plugin, *QUICK, "--quality-items", "0", "--results-dir", str(results)])
    (folder,) = folders(results)
    data = state(folder)
    assert code == 0, json.dumps(data["steps"], indent=1)
    up = evidence(folder, data, "up")
    assert {r["backend"]: r["outcome"] for r in up["records"]} == {"g6": "ready", "g5g": "building"}
    # g6's first benchmark request came while g5g's build ran, and g5g had no instance then.
    assert building[0] is True and groups[0] == {"g6": 1, "g5g": 0}
    names = [(s, b) for s, b, _ in steps(data)]
    late = names[names.index(("park", "g5g")) :]
    assert late[:4] == [("park", "g5g"), ("up", "g5g"), ("forward", "g5g"), ("check", "g5g")]
    assert ("bench", "g5g") in late and ("bench-sweep", "g5g") in late
    assert names[-5:] == [
        ("cost", None),
        ("report", None),
        ("forwards-closed", None),
        ("teardown", None),
        ("sweep", None),
    ]
    assert all(status == "passed" for s, b, status in steps(data) if s not in ("quality",)), steps(data)
    # While g5g was measured, g6 was parked at zero: only the late server billed.
    late_groups = groups[len([g for g in groups if g.get("g6")]) :]
    assert late_groups and all(g == {"g6": 0, "g5g": 1} for g in late_groups), groups
    assert data["ready"] == ["g6", "g5g"] and data["measured"] == ["g6", "g5g"] and data["building"] == []
    benches = [
        json.loads((folder / p).read_text()) for s in data["steps"] if s["step"] == "bench" for p in s["evidence"]
    ]
    assert [sorted({r["backend"] for r in b["records"] if r["ok"]}) for b in benches] == [["g6"], ["g5g"]]
    # The report holds both rounds' figures; everything the survey made is gone but the kept image.
    markdown = (folder / "report.md").read_text()
    assert "| g6 " in markdown or "g6" in markdown.split("## Headline", 1)[1].split("##", 1)[0]
    assert "g5g" in markdown.split("## Headline", 1)[1].split("##", 1)[0]
    assert left_beyond_the_volume_gap(data) == [] and leftovers() == {}
    # ... and the region's store stack with the store the servers filled (kept, like the image).
    assert sorted((k["region"], k["id"]) for k in data["kept"]) == [
        ("us-east-1", "InferenceStore-us-east-1"),
        ("us-east-1", "inference-survey-123456789012-us-east-1"),
        ("us-east-1", "inference-survey/vllm-sm75"),
    ]
