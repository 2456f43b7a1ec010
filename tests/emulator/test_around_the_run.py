"""The commands around a measurement, against the moto emulator on loopback through the app's
real CDK deploy: `runner.forward` (the Session Manager plugin replaced by a stand-in that opens a
real local port to a scripted model server, so `runner.bench` measures through it), `runner.check`
reading readiness first, `runner.cost` when the Pricing API fails, and `runner.sweep` before and
after destroy, with a billing instance that is not ours."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import boto3
import pytest

from runner import bench, check, cost, forward, sweep
from runner.cloud.outputs import read_outputs_file
from runner.cloud.reach import ssm_forward
from runner.cloud.reach.forwards_file import process_alive, read_forwards
from runner.core.errors import RunnerError
from runner.core.ports import port_is_free
from tests.emulator.cdk_cycle import bootstrap, deploy, destroy
from tests.emulator.observe import SERVERS, wait_for_states
from tests.runner.fake_openai import FakeOpenAI, text

pytestmark = pytest.mark.emulator
EC2_SERVERS = ["g5g", "g6", "inf2", "trn1"]


@pytest.fixture(scope="module")
def deployed(emulator, tmp_path_factory):
    """Every stack deployed through the real CLI, every EC2 server booted and reporting ready
    (the stacks' image builds started by their CloudFormation event, delivered by hand)."""
    scratch = tmp_path_factory.mktemp("deployed")
    outputs = scratch / "outputs.json"
    emulator.reset()
    bootstrap(emulator.scratch)
    deploy(emulator.scratch, outputs)
    emulator.fire_stack_deployed("us-east-1", "InferenceGpuStack")
    emulator.fire_stack_deployed("us-east-2", "InferenceNeuronStack")
    wait_for_states(SERVERS)
    yield outputs
    ssm_forward.close_forwards(aws=True)


@pytest.fixture(scope="module")
def model_server():
    """What every forwarded port leads to: a keep-alive server that streams like vLLM."""
    with FakeOpenAI([text("The ocean is wide and deep.", usage_tokens=9, first_token_delay_s=0.01)]) as server:
        yield server


@pytest.fixture
def upstream(model_server, monkeypatch):
    monkeypatch.setenv("STAND_IN_UPSTREAMS", json.dumps({"*": model_server.url.removeprefix("http://")}))
    monkeypatch.delenv("STAND_IN_MODE", raising=False)
    yield
    ssm_forward.close_forwards(aws=True)


def readiness(region: str, backend: str) -> dict:
    value = boto3.client("ssm", region_name=region).get_parameter(Name=f"/inference/{backend}/ready")
    return json.loads(value["Parameter"]["Value"])


def connected(emulator) -> list[dict]:
    return [s for s in emulator.sessions.values() if s["Status"] == "Connected"]


def newest(results: Path, command: str) -> dict:
    (path,) = sorted(results.glob(f"*/{command}-*.json"))[-1:]
    return json.loads(path.read_text())


def test_forward_opens_one_port_per_ready_server_and_bench_measures_through_them(
    deployed, emulator, plugin, upstream, model_server, tmp_path
):
    assert forward.run(["--outputs-file", str(deployed), "--plugin", plugin]) == 0
    forwards = {f.backend: f for f in read_forwards()}
    assert sorted(forwards) == EC2_SERVERS
    regions = {b.name: b.region for b in read_outputs_file(deployed).backends}
    for name, entry in forwards.items():
        assert process_alive(entry.pid)
        assert entry.region == regions[name]
        # The session went to the instance the readiness parameter named, in the server's region.
        assert entry.instance_id == readiness(entry.region, name)["instance_id"]
    assert len({f.local_port for f in forwards.values()}) == 4
    sessions = connected(emulator)
    assert sorted(s["Target"] for s in sessions) == sorted(f.instance_id for f in forwards.values())
    assert {s["DocumentName"] for s in sessions} == {"AWS-StartPortForwardingSession"}

    # No flags: the stack outputs come from CloudFormation, the ports from the forwards file.
    served = len(model_server.requests)
    code = bench.run(["--repeats", "2", "--backends", ",".join(EC2_SERVERS), "--results-dir", str(tmp_path)])
    assert code == 0
    records = newest(tmp_path, "bench")["records"]
    assert {r["backend"] for r in records if r["ok"]} == set(EC2_SERVERS)
    assert all(r["output_tokens"] == 9 for r in records)
    assert len(model_server.requests) - served == 4 * 3  # a warm-up and two timed requests each

    # Without AWS at all, the forwarded servers are still found (their outputs are in the state file).
    code = bench.run(["--repeats", "1", "--no-aws", "--results-dir", str(tmp_path / "offline")])
    assert code == 0
    evidence = newest(tmp_path / "offline", "bench")
    assert sorted(r["backend"] for r in evidence["records"] if r["ok"]) == EC2_SERVERS
    assert evidence["stack_outputs"]["source"].endswith("forwards.json")

    # Re-running closes the old forwards (plugin and session) before opening new ones.
    old = read_forwards()
    assert forward.run(["--outputs-file", str(deployed), "--plugin", plugin, "--backends", "g6"]) == 0
    assert not any(process_alive(f.pid) for f in old)
    assert [f.backend for f in read_forwards()] == ["g6"]
    assert [s["Target"] for s in connected(emulator)] == [forwards["g6"].instance_id]

    # --stop closes them all: nothing left running, no state file, no open session.
    last = read_forwards()
    assert forward.run(["--stop"]) == 0
    assert read_forwards() == [] and not any(process_alive(f.pid) for f in last)
    assert connected(emulator) == []


def test_a_plugin_that_exits_at_once_leaves_nothing_running(deployed, emulator, plugin, upstream, monkeypatch, capsys):
    monkeypatch.setenv("STAND_IN_MODE", "exit")
    assert forward.run(["--outputs-file", str(deployed), "--plugin", plugin, "--backends", "g6,inf2"]) == 1
    out = capsys.readouterr().out
    assert out.count("exited with status 255") == 2 and "TargetNotConnected" in out
    assert read_forwards() == []
    assert connected(emulator) == []


def test_a_taken_local_port_is_one_line_and_the_others_still_open(deployed, plugin, upstream, capsys):
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        code = forward.run(
            ["--outputs-file", str(deployed), "--plugin", plugin, "--backends", "g6,trn1", "--forward", f"g6={port}"]
        )
    assert code == 0
    out = capsys.readouterr().out
    assert f"local port {port} is taken by another process" in out
    assert [f.backend for f in read_forwards()] == ["trn1"]


def held_catalog_port(monkeypatch, blocker: socket.socket, name: str) -> int:
    """`name`'s catalog port made the one `blocker` (another program) listens on: a port bound by
    the OS, not a fixed number another test could hold at the same time."""
    import dataclasses

    import catalog

    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    held = blocker.getsockname()[1]
    spec = catalog.get_backend(name)
    real = catalog.get_backend
    monkeypatch.setattr(
        catalog, "get_backend", lambda n: dataclasses.replace(spec, forward_port=held) if n == name else real(n)
    )
    return held


def answers_through(port: int) -> str:
    """The model's answer to a chat request sent to a forwarded local port."""
    import httpx

    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 9}
    reply = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=30)
    return reply.json()["choices"][0]["message"]["content"]


def test_a_catalog_port_another_program_holds_is_left_to_it_and_the_plugin_picks_one(
    deployed, emulator, plugin, upstream, monkeypatch
):
    with socket.socket() as blocker:
        held = held_catalog_port(monkeypatch, blocker, "g6")
        (outcome,) = ssm_forward.forward_all(
            ssm_forward.ForwardOptions(backends=["g6"], outputs_file=deployed, plugin=plugin)
        )
        assert outcome.state == "open" and outcome.forward is not None
        port = outcome.forward.local_port
        assert port != held and outcome.detail.endswith(f"(port {held} was taken, using {port})")
        # No localPortNumber went to the session: the port is the one the plugin said it opened.
        (session,) = connected(emulator)
        assert "localPortNumber" not in session["Parameters"]
        assert answers_through(port) == "The ocean is wide and deep."
    ssm_forward.close_forwards(aws=True)


def test_a_catalog_port_taken_after_the_check_is_retried_on_a_port_the_plugin_picks(
    deployed, emulator, plugin, upstream, monkeypatch
):
    """The port was free when checked and taken when the plugin bound it: that plugin exits, its
    session is ended, and a second one listens on a port of its own (a busy port alone, which may
    be another program's, never counts as the forward being open)."""
    checked = []

    def free_when_checked(port: int) -> bool:
        checked.append(port)
        return len(checked) == 1 or port_is_free(port)

    with socket.socket() as blocker:
        held = held_catalog_port(monkeypatch, blocker, "g6")
        monkeypatch.setattr(ssm_forward, "port_is_free", free_when_checked)
        (outcome,) = ssm_forward.forward_all(
            ssm_forward.ForwardOptions(backends=["g6"], outputs_file=deployed, plugin=plugin)
        )
        assert outcome.state == "open" and outcome.forward is not None
        port = outcome.forward.local_port
        assert checked[0] == held and port != held
        assert outcome.detail.endswith(f"(port {held} was taken, using {port})")
        assert [s["Parameters"].get("localPortNumber") for s in connected(emulator)] == [None]
        assert answers_through(port) == "The ocean is wide and deep."
    ssm_forward.close_forwards(aws=True)


def test_servers_not_ready_or_not_on_ssm_are_skipped_with_the_reason(deployed, emulator, plugin, upstream, capsys):
    ssm = boto3.client("ssm", region_name="us-east-2")
    inf2 = readiness("us-east-2", "inf2")
    trn1 = readiness("us-east-2", "trn1")
    g6 = readiness("us-east-1", "g6")
    east1 = boto3.client("ssm", region_name="us-east-1")
    try:
        # A record written by an instance the group no longer runs (a rolling update's old one).
        east1.put_parameter(
            Name="/inference/g6/ready", Type="String", Overwrite=True, Value=json.dumps(g6 | {"instance_id": "i-0old"})
        )
        assert forward.run(["--outputs-file", str(deployed), "--plugin", plugin, "--backends", "g6"]) == 1
        assert (
            f"readiness is stale: written by i-0old, the group now runs {g6['instance_id']}" in capsys.readouterr().out
        )
        east1.put_parameter(Name="/inference/g6/ready", Type="String", Overwrite=True, Value=json.dumps(g6))
        ssm.put_parameter(
            Name="/inference/inf2/ready",
            Type="String",
            Overwrite=True,
            Value=json.dumps(inf2 | {"state": "failed", "reason": "no Neuron device"}),
        )
        emulator.take_offline(trn1["instance_id"])
        code = forward.run(["--outputs-file", str(deployed), "--plugin", plugin, "--backends", "inf2,trn1"])
        out = capsys.readouterr().out
        assert code == 1
        assert "server is failed: no Neuron device" in out
        assert f"{trn1['instance_id']} is not on SSM yet (ConnectionLost)" in out

        # check reads the readiness parameter first: the reason, not an unreachable port.
        results = Path(os.environ["INFERENCE_FORWARDS_FILE"]).parent / "check"
        check.run(["--outputs-file", str(deployed), "--backends", "inf2", "--results-dir", str(results)])
        (record,) = newest(results, "check")["records"]
        assert record["health"]["detail"] == "failed: no Neuron device"
    finally:
        ssm.put_parameter(Name="/inference/inf2/ready", Type="String", Overwrite=True, Value=json.dumps(inf2))
        emulator.offline.clear()


def test_ctrl_c_while_opening_closes_what_opened_and_writes_nothing(deployed, emulator, plugin, upstream, monkeypatch):
    opened = []
    real_open = ssm_forward.open_forward

    def open_then_interrupt(server, *args):
        if opened:
            raise KeyboardInterrupt
        outcome = real_open(server, *args)
        opened.append(outcome.forward)
        return outcome

    monkeypatch.setattr(ssm_forward, "open_forward", open_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        forward.run(["--outputs-file", str(deployed), "--plugin", plugin, "--backends", "g6,inf2"])
    assert len(opened) == 1 and not process_alive(opened[0].pid)
    assert read_forwards() == [] and connected(emulator) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--plugin", "no-such-session-manager-plugin"],
            "Session Manager plugin (no-such-session-manager-plugin) is not on PATH: install",
        ),
        (["--region", "us-east-9"], "region 'us-east-9' does not exist"),
        (["--forward", "g6=http"], "--forward 'g6=http': expected NAME=PORT"),
        (["--backends", "g7"], "--backends: g7 not deployed"),
        (["--no-aws"], "--no-aws was given"),
    ],
)
def test_forward_bad_input_is_one_line(deployed, plugin, argv, message):
    args = argv if "--plugin" in argv else [*argv, "--plugin", plugin]
    with pytest.raises(RunnerError, match=re.escape(message)) as caught:
        forward.run(["--outputs-file", str(deployed), *args])
    assert "\n" not in str(caught.value)
    assert read_forwards() == []


def test_forward_refuses_another_apps_outputs_and_no_credentials(deployed, plugin, tmp_path, monkeypatch):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"WebStack": {"ApiUrl": "https://example.invalid/", "BucketName": "b"}}))
    with pytest.raises(RunnerError, match=r"holds no backend of this app \(no Backend\* outputs\)"):
        forward.run(["--outputs-file", str(other), "--plugin", plugin])
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    with pytest.raises(RunnerError, match="no AWS credentials are configured"):
        forward.run(["--outputs-file", str(deployed), "--plugin", plugin])


def test_cost_falls_back_to_the_dated_table_when_the_pricing_api_fails(deployed, tmp_path, capsys):
    bench_file = tmp_path / "bench.json"
    bench_file.write_text(json.dumps(bench_evidence(read_outputs_file(deployed))))
    # The emulator has no Pricing API: the call fails and every price comes from the offline table.
    assert cost.run([str(bench_file), "--results-dir", str(tmp_path)]) == 0
    evidence = newest(tmp_path, "cost")
    assert evidence["config"]["pricing"] == "api"
    # The first query fails (EC2's or SageMaker's, in the order the outputs file lists the stacks),
    # it is said once, and the API is not asked again in this run.
    (api_fault,) = [n for n in evidence["notices"] if n.startswith("Pricing API ")]
    assert api_fault.startswith(("Pricing API AmazonEC2: ", "Pricing API AmazonSageMaker: "))
    assert api_fault.endswith("using the offline table")
    rows = {r["backend"]: r for r in evidence["records"]}
    assert rows["g6"]["price"]["live"] is False and rows["g6"]["usd_per_hour"] == 0.8048
    assert rows["g6"]["region"] == "us-east-1" and rows["g6"]["price"]["as_of"].startswith("2026-10-05")
    # inf2 runs in us-east-2: priced from the us-east-1 figure, and the row says so.
    assert "none for us-east-2" in rows["inf2"]["price"]["note"]
    assert api_fault.removesuffix("; using the offline table")[:60] in capsys.readouterr().err.replace("\n", " ")


def bench_evidence(outputs) -> dict:
    """A bench evidence file for the deployed backends at the survey's measured rates."""
    from runner.core.backends import from_output

    rates = {"g6": 131.5, "g5g": 37.2, "inf2": 36.4, "trn1": 37.1, "sagemaker": 106.3}
    backends = [from_output(o, {}).to_json() for o in outputs.backends]
    records = [
        {
            "backend": name,
            "run": 1,
            "ok": True,
            "tokens_per_s": rate,
            "output_tokens": 94,
            "prompt_tokens": 17,
            "e2e_s": 94 / rate,
        }
        for name, rate in rates.items()
    ]
    return {"schema": 1, "command": "bench", "config": {}, "backends": backends, "records": records, "notices": []}


def test_images_build_starts_the_stacks_project_and_follows_it(deployed, tmp_path, capsys):
    from runner import images

    assert (
        images.run(["build", "g5g", "--outputs-file", str(deployed), "--poll", "0.1", "--results-dir", str(tmp_path)])
        == 0
    )
    (record,) = newest(tmp_path, "images")["records"]
    outputs = {b.name: b for b in read_outputs_file(deployed).backends}
    assert record["project"] == outputs["g5g"].image_build_project and record["region"] == "us-east-1"
    assert record["status"] == "SUCCEEDED" and record["duration_s"] is not None
    assert record["image"].endswith(outputs["g5g"].image.rsplit(":", 1)[1])
    assert "started " in capsys.readouterr().err
    with pytest.raises(RunnerError, match="backend g6 runs an image this app does not build"):
        images.run(["build", "g6", "--outputs-file", str(deployed)])
    with pytest.raises(RunnerError, match=r"backend g7 is not deployed \(deployed: g5g, g6, inf2, sagemaker, trn1\)"):
        images.run(["build", "g7", "--outputs-file", str(deployed)])


def test_sweep_finds_ours_before_destroy_and_nothing_of_ours_after_delete(
    deployed, emulator, plugin, upstream, tmp_path
):
    assert forward.run(["--outputs-file", str(deployed), "--plugin", plugin, "--backends", "g6"]) == 0
    foreign = boto3.client("ec2", region_name="us-west-1")
    image = foreign.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    root_volumes: set[tuple[str, str]] = set()
    stranger_volumes: set[tuple[str, str]] = set()
    (stranger,) = foreign.run_instances(ImageId=image, InstanceType="g6.xlarge", MinCount=1, MaxCount=1)["Instances"]
    try:
        assert sweep.run(["--results-dir", str(tmp_path / "before")]) == 1
        found = newest(tmp_path / "before", "sweep")["records"]
        ours = {(f["region"], f["kind"]) for f in found if f["ours"]}
        assert {
            ("us-east-1", "stack"),
            ("us-east-2", "stack"),
            ("us-east-1", "instance"),
            ("us-east-2", "instance"),
        } <= ours
        assert {("us-east-1", "auto-scaling-group"), ("us-east-2", "endpoint"), ("us-east-1", "session")} <= ours
        assert {("us-east-1", "volume")} <= ours
        (other,) = [f for f in found if not f["ours"] and f["kind"] == "instance"]
        assert other["id"] == stranger["InstanceId"] and other["region"] == "us-west-1" and other["billing"]

        destroy(emulator.scratch)
        assert sweep.run(["--results-dir", str(tmp_path / "after")]) == 1
        after = newest(tmp_path / "after", "sweep")["records"]
        assert not [f for f in after if f["ours"] and f["kind"] in ("stack", "endpoint", "endpoint-config", "model")]

        # --delete removes what is ours (here: the open forward, its session, and whatever moto's
        # VPC deletion order left behind), never the stranger, and keeps what the store stacks
        # retained: the built images and the store of each region the servers filled.
        emulator.builds.wait()
        assert sweep.run(["--delete", "--wait", "20", "--results-dir", str(tmp_path / "delete")]) == 1
        final = newest(tmp_path / "delete", "sweep")
        assert {(f["kind"], f["id"]) for f in final["records"] if f["ours"]} == {
            ("image-repository", "inference-survey/vllm-sm75"),
            ("image-repository", "inference-survey/neuron"),
            ("bucket", "inference-survey-123456789012-us-east-1"),
            ("bucket", "inference-survey-123456789012-us-east-2"),
        }
        assert all(f["kept"] for f in final["records"] if f["ours"])
        assert sweep.run(["--delete", "--purge-images", "--results-dir", str(tmp_path / "purge")]) == 1
        assert [f for f in newest(tmp_path / "purge", "sweep")["records"] if f["ours"]] == []
        assert stranger["InstanceId"] not in {a["id"] for a in final["deleted"]}
        assert read_forwards() == [] and connected(emulator) == []
        # Emulator gap: moto keeps the volumes of the instances destroy terminated (AWS deletes them:
        # DeleteOnTermination) and does not copy the launch template's tags onto them, so once
        # detached nothing proves them ours: reported as billing, and never deleted.
        root_volumes = {(f["region"], f["id"]) for f in found if f["kind"] == "volume" and f["ours"]}
        billing = {(f["region"], f["id"]) for f in final["records"] if f["billing"] and not f["kept"]}
        stranger_volumes = {
            ("us-west-1", v["VolumeId"])
            for v in foreign.describe_volumes(
                Filters=[{"Name": "attachment.instance-id", "Values": [stranger["InstanceId"]]}]
            )["Volumes"]
        }
        assert stranger_volumes
        assert billing - root_volumes == {("us-west-1", stranger["InstanceId"])} | stranger_volumes
    finally:
        foreign.terminate_instances(InstanceIds=[stranger["InstanceId"]])
        # moto cannot detach a volume from a terminated instance (HTTP 500): drop them in the emulator.
        emulator.forget_volumes(root_volumes | stranger_volumes)
    assert sweep.run(["--results-dir", str(tmp_path / "clean")]) == 0
