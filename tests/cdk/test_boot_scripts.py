"""The servers' boot scripts, run for real: the user data exactly as rendered, under bash, on a
stand-in host (tests/host: systemd's unit rules, docker, the metadata service, the accelerator,
the block devices), with the AWS CLI replaced by a recorder that answers as the services would,
but for S3, which the real AWS CLI serves from moto on loopback (the app's store: the weights'
copy and the compiled graphs). The emulator tests run the same scripts against moto with the real
AWS CLI for every call; these cover every path one by one."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from catalog import Accelerator
from catalog.backends import ModelArgument, WeightsLoad
from catalog.boot import PHASES, store_bucket, weights_marker, weights_prefix
from inference_constructs.user_data import (
    NO_RESTART_EXIT,
    WAITING_EXIT,
    DeployValues,
    ServerBoot,
    boot_archive,
    container_args,
    missing_image_hint,
    render_user_data,
    server_unit,
    sha256,
)
from runner.cloud.readiness import record_graphs
from tests.host.aws_cli import CliServer
from tests.host.machine import BIN, Host, HostOptions

# The emulated-host tier: real scripts under bash on the stand-in host (tests/host), against moto.
pytestmark = pytest.mark.host

GROUP = "InferenceGpuStack-G5gGroup-ABC123"
ACCOUNT = "123456789012"
# Where the boot archive is, as the CDK's file asset puts it (the bootstrap bucket of the region).
ASSETS = f"cdk-hnb659fds-assets-{ACCOUNT}-us-east-1"
# The AWS CLI as the scripts call it: each call recorded; answers chosen by environment variables;
# S3 by the real CLI against moto. SSM's get-parameter answers the graphs record runner.up keeps
# (a file the test writes with the runner's own record_graphs).
AWS_RECORDER = r"""#!/bin/bash
echo "aws $*" >> "$HOST_STATE/aws.log"
value() { while [[ $# -gt 0 ]]; do [[ "$1" == "$want" ]] && { printf '%s\n' "$2"; return; }; shift; done; }
if [[ "$1 $2" == "s3api put-object" && -n "${AWS_PUT_HOLD:-}" ]]; then
  until [[ -e "$AWS_PUT_HOLD" ]]; do sleep 0.05; done  # an upload that takes its time (a slow link)
fi
if [[ "$1" == s3 || "$1" == s3api ]]; then
  AWS_ENDPOINT_URL="$S3_ENDPOINT_URL" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing exec "$REAL_AWS" "$@"
fi
case "$1 $2" in
  "ssm put-parameter") want=--value value "$@" >> "$HOST_STATE/reports.log" ;;
  "ssm get-parameter") [[ -f "$GRAPHS_RECORD" ]] || { echo "ParameterNotFound" >&2; exit 254; }; cat "$GRAPHS_RECORD" ;;
  "secretsmanager get-secret-value") echo hf_test ;;
  "sts assume-role") [[ -z "${AWS_ASSUME_REFUSED:-}" ]] || { echo "AccessDenied" >&2; exit 254; }
    printf 'ASIAREADER\treader-secret\treader-session\n' ;;
  "ecr get-login-password") echo password ;;
  "ecr describe-images")
    want=--image-ids; tag=$(value "$@"); [[ -f "$REGISTRY_DIR/pushed-${tag#imageTag=}" ]] || exit 254 ;;
  "autoscaling describe-auto-scaling-instances") echo "${AWS_GROUP:-None}" ;;
  "autoscaling set-desired-capacity") [[ -z "${AWS_SCALE_REFUSED:-}" ]] || { echo "AccessDenied" >&2; exit 254; } ;;
esac
exit 0
"""
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/inference-survey/vllm-sm75:v1"
# What the user data carries (DeployValues), not the boot archive.
DEPLOY_KEYS = {"image", "fallback_image", "region", "store_bucket", "account_id", "weights_reader_role"}


@dataclass
class Server:
    """A server as a test gives it: its boot archive's settings and its user data's deploy values."""

    boot: ServerBoot
    deploy: dict[str, str] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        if name in DEPLOY_KEYS:
            return self.deploy.get(name, "")
        return getattr(self.boot, name)


def boot_config(accelerator: Accelerator = Accelerator.NVIDIA, **changes: Any) -> Server:
    values: dict[str, Any] = {
        "backend": "g5g",
        "model_id": "google/gemma-4-E2B-it",
        "serve_args": ("--dtype", "float16"),
        "accelerator": accelerator,
        "host_port": 8000,
        "container_port": 8000,
        "health_path": "/health",
        "log_group": "/inference/g5g",
        "readiness_parameter": "/inference/g5g/ready",
        "missing_image_hint": "push it to this account's ECR, or deploy with -c g5g.image=URI",
        "ready_minutes": 30,
    }
    deploy = {"image": IMAGE, "region": "us-east-1", "account_id": ACCOUNT}
    for key, value in changes.items():
        (deploy if key in DEPLOY_KEYS else values)[key] = value
    return Server(ServerBoot(**values), deploy)


@pytest.fixture(scope="module")
def stand_in_server(tmp_path_factory) -> Iterator[CliServer]:
    """The server that runs the hosts' docker and systemctl stand-ins in forks, as the emulator's
    hosts have it (tests/host/aws_cli.py); the `aws` these hosts call is the recorder above."""
    server = CliServer(tmp_path_factory.mktemp("stand-ins"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def moto_url(moto_s3_url: str) -> str:
    """S3 on loopback for the app's store (tests/conftest.py), emptied where a test needs it."""
    return moto_s3_url


@pytest.fixture
def s3(moto_url):
    """A boto3 S3 client on the test's empty moto."""
    import urllib.request

    import boto3

    urllib.request.urlopen(urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST"), timeout=30).read()
    return boto3.client(
        "s3",
        region_name="us-east-1",
        endpoint_url=moto_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def put_archive(s3, boot: ServerBoot, *, data: bytes | None = None) -> tuple[str, str]:
    """The boot archive where the CDK's asset puts it; (key, sha256 of the archive deployed)."""
    archive = boot_archive(boot)
    key = f"{sha256(archive)}.tar.gz"
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
        s3.create_bucket(Bucket=ASSETS)
    s3.put_object(Bucket=ASSETS, Key=key, Body=archive if data is None else data)
    return key, sha256(archive)


@pytest.fixture
def graphs_record(tmp_path) -> Path:
    """The parameter runner.up keeps the backend's trusted graphs in, as a file the recorder reads."""
    return tmp_path / "graphs-record.json"


class RecordFile:
    """SSM's get/put of the graphs record, on the file the recorder answers from: what the runner's
    record_graphs reads and writes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def get_parameter(self, Name: str) -> dict[str, Any]:
        return {"Parameter": {"Value": self.path.read_text() if self.path.exists() else "{}"}}

    def put_parameter(self, Name: str, Value: str, Type: str, Overwrite: bool) -> None:
        self.path.write_text(Value)


def runner_records_the_graphs(machine: Host, graphs_record: Path) -> str:
    """What runner.up does when the server says it kept graphs: record them for the next servers."""
    kept = eventually(lambda: next((r["graphs"] for r in reports(machine) if r.get("graphs")), None), 20,
                      machine.boot_log)  # fmt: skip
    key, _, digest = kept.partition(":")
    record_graphs(RecordFile(graphs_record), "/inference/g5g/graphs", key, digest)
    return key


@pytest.fixture
def host(tmp_path, stand_in_server, s3, moto_url, graphs_record):
    """Boots a server's user data (its archive in the asset bucket) on a stand-in host; yields a
    starter, shuts every host down."""
    recorder = tmp_path / "aws-bin"
    recorder.mkdir()
    (recorder / "aws").write_text(AWS_RECORDER)
    (recorder / "aws").chmod(0o755)
    registry = tmp_path / "registry"
    registry.mkdir()
    started: list[Host] = []
    # The recorder hands S3 to the real CLI against moto.
    store_env = {
        "AWS_GROUP": GROUP,
        "REGISTRY_DIR": str(registry),
        "S3_ENDPOINT_URL": moto_url,
        "REAL_AWS": str(BIN / "aws"),
        "GRAPHS_RECORD": str(graphs_record),
    }

    def start(
        server: Server, options: HostOptions | None = None, name: str = "host", *, archive: bytes | None = None, **aws
    ) -> Host:
        key, digest = put_archive(s3, server.boot, data=archive or None)
        if archive == b"":  # the object is not there at all
            s3.delete_object(Bucket=ASSETS, Key=key)
        deploy = DeployValues(
            region=server.deploy["region"],
            account_id=server.deploy["account_id"],
            image=server.deploy["image"],
            fallback_image=server.deploy.get("fallback_image", ""),
            store_bucket=server.deploy.get("store_bucket", ""),
            weights_reader_role=server.deploy.get("weights_reader_role", ""),
            boot_bucket=ASSETS,
            boot_key=key,
            boot_sha256=digest,
        )
        machine = Host(
            root=tmp_path / name,
            instance_id=f"i-0{len(started)}abc",
            zone="us-east-1c",
            env=store_env
            | stand_in_server.env()
            | aws
            | {"AWS_REGION": deploy.region, "AWS_DEFAULT_REGION": deploy.region},
            options=options or HostOptions(),
        )
        machine.env["PATH"] = f"{recorder}:{machine.environment()['PATH']}"
        started.append(machine)
        machine.boot(render_user_data(server.boot, deploy))
        return machine

    yield start
    for machine in started:
        machine.shutdown()


def reports(machine: Host) -> list[dict]:
    path = machine.state / "reports.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def aws_calls(machine: Host) -> list[str]:
    path = machine.state / "aws.log"
    return path.read_text().splitlines() if path.exists() else []


def eventually(check, timeout_s: float, why) -> object:
    """`check()`'s first true value within `timeout_s`; else an AssertionError saying `why()`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out; {why()}")


def wait_for(machine: Host, predicate, timeout_s: float = 20) -> list[dict]:
    def reached() -> list[dict] | None:
        states = reports(machine)
        return states if predicate(states) else None

    return eventually(reached, timeout_s, lambda: f"reports: {reports(machine)}\n{machine.boot_log()[-3000:]}")


def wait_for_call(machine: Host, predicate, timeout_s: float = 20) -> list[str]:
    """The state is reported before the scale-down call is made: wait for the call, not the report."""

    def made() -> list[str] | None:
        calls = aws_calls(machine)
        return calls if any(predicate(c) for c in calls) else None

    return eventually(made, timeout_s, lambda: f"aws calls: {aws_calls(machine)}\n{machine.boot_log()[-3000:]}")


def wait_for_unit(machine: Host, unit: str, timeout_s: float = 20, **fields: object) -> dict:
    """The unit's record once its supervisor has ended it with these fields (`last_exit` is
    written only then): what a fixed sleep before a check cannot promise on a loaded machine."""
    path = machine.state / "units" / f"{unit}.json"

    def ended() -> dict | None:
        with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
            record = json.loads(path.read_text())
            if "last_exit" in record and all(record.get(k) == v for k, v in fields.items()):
                return record
        return None

    return eventually(ended, timeout_s, lambda: f"{unit}: {path.read_text() if path.exists() else 'no record'}")


def fire_the_deadline(machine: Host) -> dict:
    """What the deadline timer does at its OnBootSec (tests/host/systemd.py), done now: the boot
    is where the test holds it, however long getting there took (the timer itself fires in the
    emulator's lifecycle tests)."""
    assert machine.unit_state("inference-deadline.timer") == "active"  # armed, not fired
    assert machine.run("systemctl start inference-deadline.service").returncode == 0
    return wait_for_unit(machine, "inference-deadline.service", state="inactive", last_exit=0)


# A launch deadline a test never reaches (a day): `fire_the_deadline` runs it where the test says.
FAR_DEADLINE_MIN = 1440


def last_state(name: str):
    return lambda states: bool(states) and states[-1]["state"] == name


def docker_runs(machine: Host) -> list[str]:
    return [c for c in machine.calls() if c.startswith("docker run")]


def test_a_boot_reports_booting_first_then_starting_then_ready_with_where_it_landed(host):
    machine = host(boot_config())
    states = wait_for(machine, last_state("ready"))
    assert [s["state"] for s in states] == ["booting", "starting", "ready"]
    ready = states[-1]
    assert (ready["instance_id"], ready["zone"], ready["model"]) == ("i-00abc", "us-east-1c", "google/gemma-4-E2B-it")
    # vLLM's own "Loading weights took" seconds, from the container's log.
    assert ready["weights_load_s"] == 3.21
    (run,) = docker_runs(machine)
    assert run.endswith("vllm-sm75:v1 google/gemma-4-E2B-it --dtype float16")
    assert "-p 127.0.0.1:8000:8000" in run and "--gpus all" in run
    # The image is in this account's ECR: the script logs in to that registry first.
    assert any("docker login --username AWS" in c for c in machine.calls())
    assert not [c for c in aws_calls(machine) if "set-desired-capacity" in c]


def test_an_image_that_takes_no_arguments_gets_none(host):
    """The survey's Neuron image runs with no arguments: not with one empty argument."""
    boot = boot_config(
        Accelerator.NEURON,
        image="docker.io/xbill9/gemma4-optb:slim",
        model_argument=ModelArgument.NONE,
        serve_args=(),
        data_volume="gemma4-data:/data",
        host_port=8080,
        container_port=8080,
    )
    assert container_args(boot) == []
    machine = host(boot)
    wait_for(machine, last_state("ready"))
    (run,) = docker_runs(machine)
    assert run.endswith("docker.io/xbill9/gemma4-optb:slim")
    args = json.loads((machine.state / "containers/inference-server/args.json").read_text())
    assert args == {"image": "docker.io/xbill9/gemma4-optb:slim", "args": []}
    assert "-v gemma4-data:/data" in run and "--device=/dev/neuron0" in run


def test_a_missing_image_the_app_does_not_build_fails_and_takes_the_server_to_zero(host):
    machine = host(
        boot_config(
            image="docker.io/example/none:v1", missing_image_hint=missing_image_hint("docker.io/example/none:v1", "g5g")
        ),
        HostOptions(missing_images=("docker.io/example/none:v1",)),
    )
    states = wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is True)
    failed = states[-1]
    assert failed["state"] == "failed"
    assert (
        failed["reason"]
        == "image not found: docker.io/example/none:v1; check the image name, or deploy with -c g5g.image=URI"
    )
    assert f"aws autoscaling set-desired-capacity --auto-scaling-group-name {GROUP} --desired-capacity 0" in aws_calls(
        machine
    )
    # Exit 78 is not restarted: the unit is left failed (its last word), after one pull.
    wait_for_unit(machine, "inference-server.service", state="failed", last_exit=NO_RESTART_EXIT)
    assert len([c for c in machine.calls() if c.startswith("docker pull")]) == 1
    assert f"RestartPreventExitStatus={NO_RESTART_EXIT}" in server_unit("g5g")


def test_a_missing_image_the_app_builds_waits_at_zero_and_starts_no_build(host):
    """The instance may start no build (its role cannot): it says it waits for its image and goes
    to zero; the stack's deploy or runner.up starts the build, which brings it back."""
    server = boot_config(image_built=True)
    machine = host(server, HostOptions(missing_images=(server.image,)))
    states = wait_for(machine, last_state("waiting-for-image"))
    assert states[-1]["reason"] == (
        f"image {server.image} is not built yet: the app's build makes it and brings this server back"
    )
    wait_for_call(machine, lambda c: "set-desired-capacity" in c and "--desired-capacity 0" in c)
    # A clean stop: not restarted, not failed, no failure report, and no build started by the instance.
    wait_for_unit(machine, "inference-server.service", state="inactive", last_exit=WAITING_EXIT)
    assert len(docker_runs(machine)) == 0
    assert [s["state"] for s in reports(machine)] == ["booting", "starting", "waiting-for-image"]
    assert not [c for c in aws_calls(machine) if "codebuild" in c]


def test_a_network_fault_on_pull_is_retried_not_reported_as_failed(host):
    machine = host(boot_config(), HostOptions(pull_error="dial tcp: lookup registry: i/o timeout"))
    eventually(
        lambda: len([c for c in machine.calls() if c.startswith("docker pull")]) >= 2, 10, lambda: machine.calls()
    )
    assert "failed" not in [s["state"] for s in reports(machine)]


def test_no_neuron_device_fails_fast_and_stops(host):
    boot = boot_config(Accelerator.NEURON, model_argument=ModelArgument.ENVIRONMENT, serve_args=())
    machine = host(boot, HostOptions(neuron_devices=0))
    failed = wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is True)[-1]
    assert failed["reason"].startswith("no Neuron device")
    assert not [c for c in machine.calls() if c.startswith("docker pull")]


def test_no_gpu_fails_fast_and_stops(host):
    machine = host(boot_config(), HostOptions(gpu=False))
    failed = wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is True)[-1]
    assert failed["reason"].startswith("no NVIDIA GPU")


def test_out_of_memory_restarts_until_the_start_limit_then_stops(host):
    machine = host(boot_config(ready_minutes=FAR_DEADLINE_MIN), HostOptions(container="oom"))
    failed = wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is True, timeout_s=90)[-1]
    assert failed["reason"].startswith("container exits repeatedly (5 starts in 1200 s); last: out of memory")
    # systemd restarted it four times before giving up at the fifth exit.
    assert len(docker_runs(machine)) == 5
    assert [s["state"] for s in reports(machine)].count("starting") == 5


def test_a_crash_loop_is_reported_with_the_last_exit_status(host):
    machine = host(boot_config(ready_minutes=FAR_DEADLINE_MIN), HostOptions(container="exit:1"))
    failed = wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is True, timeout_s=90)[-1]
    assert failed["reason"].endswith("last: container exited with status 1")


def test_a_server_not_ready_within_its_bound_is_stopped(host):
    machine = host(boot_config(ready_minutes=FAR_DEADLINE_MIN), HostOptions(container="never-healthy"))
    wait_for(machine, last_state("starting"))  # and it stays there: the container never answers
    fire_the_deadline(machine)
    failed = wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is True)[-1]
    assert failed["reason"] == f"not ready within {FAR_DEADLINE_MIN} min of launch (last state: starting)"
    assert f"--auto-scaling-group-name {GROUP} --desired-capacity 0" in " ".join(aws_calls(machine))
    assert machine.unit_state("inference-server.service") == "inactive"
    assert "ready" not in [s["state"] for s in reports(machine)]


def test_a_server_that_served_is_not_stopped_by_the_launch_deadline_when_restarted(host):
    # The image rebuilt under a running server restarts it (Run Command): it reports "starting"
    # again, and the launch deadline, when it comes, must leave it alone.
    machine = host(boot_config(ready_minutes=FAR_DEADLINE_MIN))
    wait_for(machine, last_state("ready"))
    # Held in the middle of such a restart: the unit stopped, its state "starting".
    assert machine.run("systemctl stop inference-server.service").returncode == 0
    (machine.root / "run/inference/state").write_text("starting\n")
    fire_the_deadline(machine)  # it has ended, with nothing stopped
    assert not [s for s in reports(machine) if s.get("stopped")]
    assert not [c for c in aws_calls(machine) if "set-desired-capacity" in c]


def test_a_refused_scale_down_is_said_in_the_readiness(host):
    machine = host(boot_config(), HostOptions(gpu=False), AWS_SCALE_REFUSED="1")
    failed = wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is False)[-1]
    assert "could not take group" in failed["reason"] and "AccessDenied" in failed["reason"]


def test_a_failing_boot_step_stops_the_server_and_says_where(host):
    # The swap file cannot be made: the boot script's own ERR trap stops the server.
    boot = boot_config(Accelerator.NEURON, model_argument=ModelArgument.ENVIRONMENT, serve_args=(), swap_gib=16)
    machine = host(boot, HostOptions(), SWAP_FAILS="1")
    failed = wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is True)[-1]
    assert failed["reason"].startswith("boot script failed at line ")


# --- the app's store, the image's public copy and the instance store -----------------------------

STORE = store_bucket(ACCOUNT, "us-east-1")
# Gemma 4 keeps its chat template in a file of its own: a copy without it serves no chat.
MODEL_FILES = {
    "config.json": b'{"model_type": "gemma4"}',
    "model.safetensors": b"\0" * 2048,
    "tokenizer.json": b"{}",
    "chat_template.jinja": b"{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}",
}
DLC = "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-ec2"
PUBLIC_DLC = "public.ecr.aws/deep-learning-containers/vllm:0.30.0-gpu-py312-cu130-ubuntu24.04-ec2"
READER = f"arn:aws:iam::{ACCOUNT}:role/G6RoleWeightsReader"


def store_config(accelerator: Accelerator = Accelerator.NVIDIA, **changes) -> Server:
    """A server with the app's store in its region (and, unless told, no compile cache)."""
    values = {
        "store_bucket": STORE,
        "has_store": True,
        "store_regions": ("us-east-1", "us-east-2"),
        "graphs_parameter": "/inference/g5g/graphs",
    }
    return boot_config(accelerator, **(values | changes))


def make_store(s3, region: str = "us-east-1") -> str:
    bucket = store_bucket(ACCOUNT, region)
    extra = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    s3.create_bucket(Bucket=bucket, **extra)
    return bucket


def stage_weights(s3, model: str, files: dict[str, bytes] = MODEL_FILES, *, marker: bool = True, bucket=STORE) -> None:
    """The store's copy of a model as the weights copy leaves it (tests/cdk/test_weights_copy.py
    holds the copy to this shape): the files, then the manifest beside them, last."""
    for name, data in files.items():
        s3.put_object(Bucket=bucket, Key=f"{weights_prefix(model)}{name}", Body=data)
    if marker:
        manifest = {"version": 2, "model": model, "revision": "0" * 40, "files": {
            name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()} for name, data in sorted(files.items())
        }}  # fmt: skip
        s3.put_object(Bucket=bucket, Key=weights_marker(model), Body=json.dumps(manifest).encode())


def ready_record(machine: Host) -> dict:
    return wait_for(machine, last_state("ready"))[-1]


def container_log(machine: Host) -> str:
    return (machine.state / "containers/inference-server/log").read_text()


def run_args(machine: Host) -> list[str]:
    return json.loads((machine.state / "containers/inference-server/args.json").read_text())["args"]


def pulls(machine: Host) -> list[str]:
    return (machine.state / "pulls").read_text().splitlines()


def test_the_phases_come_out_in_the_order_reached_each_with_its_time(host):
    machine = host(boot_config())
    ready = ready_record(machine)
    names = [name for name, _ in ready["phases"]]
    times = [at for _, at in ready["phases"]]
    assert names == list(PHASES)
    assert times == sorted(times) and times[-1] - times[0] < 120
    # The first answer was the question's right answer, and what came back is kept.
    assert (ready["answer"], ready["answer_correct"]) == ("Paris", True)
    # Each step says which way it went: here the slow way of each, and why.
    assert ready["paths"] == {
        "storage": "root volume: this instance type has no instance store",
        "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/inference-survey/vllm-sm75:v1",
        "weights": "from the hub: this server has no store",
    }
    # Every report of the boot carries the phases reached so far: "starting" knew only its first.
    starting = next(r for r in reports(machine) if r["state"] == "starting")
    assert [name for name, _ in starting["phases"]] == ["running"]


def pushed(tmp_path: Path, image: str) -> None:
    """The image is in the recorder's ECR (the host fixture's registry), as a finished mirror leaves it."""
    repository, tag = image.split("/", 1)[1].rsplit(":", 1)
    (tmp_path / "registry" / repository).mkdir(parents=True, exist_ok=True)
    (tmp_path / "registry" / repository / f"{tag}.pushed").write_text("")


def test_docker_data_goes_to_the_instance_store_and_the_image_comes_from_the_regions_ecr(host, tmp_path):
    pushed(tmp_path, DLC)
    boot = store_config(image=DLC, fallback_image=PUBLIC_DLC, needs_disk_gb=43)
    machine = host(boot, HostOptions(instance_type="g6.xlarge", instance_store_gb=250))
    ready = ready_record(machine)
    assert pulls(machine) == [f"{DLC} instance-store"]
    assert ready["paths"]["image"] == DLC
    assert (
        ready["paths"]["storage"].startswith("instance store /dev/nvme1n1 at ")
        and "(250 GB free)" in ready["paths"]["storage"]
    )
    # Formatted and mounted by the boot; both of the engine's stores bound from it while stopped.
    calls = machine.calls()
    assert "mkfs.ext4 -q -F -E nodiscard /dev/nvme1n1" in calls
    stop, start = (
        calls.index("systemctl stop docker.service containerd.service"),
        calls.index("systemctl start containerd.service docker.service"),
    )
    binds = [i for i, c in enumerate(calls) if c.startswith("mount --bind")]
    assert len(binds) == 2 and stop < min(binds) and max(binds) < start
    assert not [c for c in aws_calls(machine) if "codebuild" in c]


def test_an_image_the_regions_ecr_cannot_give_comes_from_its_public_copy(host):
    boot = store_config(image=DLC, fallback_image=PUBLIC_DLC)
    machine = host(boot, HostOptions(missing_images=(DLC,)))
    ready = ready_record(machine)
    assert [p.split()[0] for p in pulls(machine)] == [PUBLIC_DLC]
    refusal = f"Error response from daemon: manifest for {DLC} not found: manifest unknown: Requested image not found"
    assert ready["paths"]["image"] == f"from {PUBLIC_DLC}: {DLC} could not be pulled ({refusal[:120]})"
    (run,) = docker_runs(machine)
    assert run.split()[-len(boot.serve_args) - 2] == PUBLIC_DLC


def test_a_store_the_dlami_mounted_is_used_as_it_is_and_one_too_small_leaves_docker_on_the_root_volume(host):
    mounted = host(
        store_config(needs_disk_gb=40), HostOptions(instance_store_gb=250, instance_store_mounted=True), name="a"
    )
    assert ready_record(mounted)["paths"]["storage"].startswith(
        f"instance store /dev/nvme1n1 at {mounted.root}/opt/dlami/nvme"
    )
    assert not [c for c in mounted.calls() if c.startswith("mkfs")]
    small = host(store_config(needs_disk_gb=43), HostOptions(instance_store_gb=30), name="b")
    ready = ready_record(small)
    assert ready["paths"]["storage"] == (
        "root volume: the instance store /dev/nvme1n1 has 30 GB free; the image and the weights need 43 GB"
    )
    assert [p.split()[1] for p in pulls(small)] == ["root-volume"]
    assert not [c for c in small.calls() if c.startswith("mount --bind")]


def test_a_failed_mount_leaves_everything_on_the_root_volume_and_the_server_comes_up(host):
    machine = host(store_config(), HostOptions(instance_store_gb=250), MOUNT_FAILS="1")
    ready = ready_record(machine)
    assert (
        ready["paths"]["storage"] == "root volume: the instance store /dev/nvme1n1 could not be formatted and mounted"
    )
    assert [p.split()[1] for p in pulls(machine)] == ["root-volume"]


def test_the_stores_copy_is_copied_to_the_disk_and_served_under_the_models_name(host, s3):
    make_store(s3)
    stage_weights(s3, "google/gemma-4-E2B-it")
    machine = host(store_config())
    ready = ready_record(machine)
    assert ready["paths"]["weights"] == f"copied from s3://{STORE}/weights/google/gemma-4-E2B-it/ to the disk"
    args = run_args(machine)
    assert args[0] == "/weights" and args[-2:] == ["--served-model-name", "google/gemma-4-E2B-it"]
    copied = machine.root / "opt/inference/weights/google/gemma-4-E2B-it"
    assert {p.name: p.read_bytes() for p in copied.iterdir()} == MODEL_FILES
    assert f"{copied}:/weights:ro" in json.loads(
        (machine.state / "containers/inference-server/volumes.json").read_text()
    )
    # The weights were present before the engine started: a mark of the host's own.
    names = [name for name, _ in ready["phases"]]
    assert names.index("weights") < names.index("engine")
    assert not [c for c in aws_calls(machine) if "start-build" in c]


def test_a_neuron_server_gets_the_copy_as_its_checkpoint(host, s3):
    make_store(s3)
    stage_weights(s3, "Qwen/Qwen2.5-1.5B-Instruct")
    boot = store_config(Accelerator.NEURON, model_argument=ModelArgument.ENVIRONMENT, serve_args=(),
                        model_id="Qwen/Qwen2.5-1.5B-Instruct", host_port=8080, container_port=8080)  # fmt: skip
    machine = host(boot)
    ready_record(machine)
    (run,) = docker_runs(machine)
    assert "--env CHECKPOINT=/weights" in run and run_args(machine) == []


def test_a_streaming_engine_reads_the_copy_from_s3_and_a_failed_stream_copies_it_at_the_next_start(host, s3):
    make_store(s3)
    stage_weights(s3, "google/gemma-4-E2B-it")
    boot = store_config(weights_load=WeightsLoad.STREAM, weights_reader_role=READER, ready_minutes=FAR_DEADLINE_MIN)
    streaming = host(boot, name="streams")
    ready = ready_record(streaming)
    assert ready["paths"]["weights"] == f"streamed by the engine from s3://{STORE}/weights/google/gemma-4-E2B-it/"
    args = run_args(streaming)
    assert args[0] == f"s3://{STORE}/weights/google/gemma-4-E2B-it/"
    assert args[-4:] == ["--load-format", "runai_streamer", "--served-model-name", "google/gemma-4-E2B-it"]
    (run,) = docker_runs(streaming)
    assert "--env AWS_REGION=us-east-1" in run
    # The engine reads with the weights reader's hour of credentials (the container cannot reach
    # the instance's own), given it in the env file only root reads.
    assert [c for c in aws_calls(streaming) if c.startswith("aws sts assume-role")] == [
        f"aws sts assume-role --role-arn {READER} --role-session-name g5g-weights --duration-seconds 3600 --query "
        "Credentials.[AccessKeyId, SecretAccessKey, SessionToken] --output text"
    ]
    secrets = streaming.root / "run/inference/server-secrets.env"
    assert secrets.read_text() == (
        "AWS_ACCESS_KEY_ID=ASIAREADER\nAWS_SECRET_ACCESS_KEY=reader-secret\nAWS_SESSION_TOKEN=reader-session\n"
    )
    assert secrets.stat().st_mode & 0o077 == 0
    # The engine fetched them: the weights were present when its log said they were loaded.
    names = [name for name, _ in ready["phases"]]
    assert names == list(PHASES)

    failing = host(boot, HostOptions(container="stream-fails"), name="fails")
    ready = ready_record(failing)
    first, second = docker_runs(failing)
    assert "runai_streamer" in first and "runai_streamer" not in second and "-v " in second
    assert ready["paths"]["weights"] == (
        f"copied from s3://{STORE}/weights/google/gemma-4-E2B-it/ to the disk (streaming from "
        f"s3://{STORE}/weights/google/gemma-4-E2B-it/ failed at the last start (exit 1))"
    )


def test_a_stream_without_credentials_copies_the_weights_to_the_disk(host, s3):
    make_store(s3)
    stage_weights(s3, "google/gemma-4-E2B-it")
    boot = store_config(weights_load=WeightsLoad.STREAM, weights_reader_role=READER)
    machine = host(boot, AWS_ASSUME_REFUSED="1")
    ready = ready_record(machine)
    assert ready["paths"]["weights"] == (
        f"copied from s3://{STORE}/weights/google/gemma-4-E2B-it/ to the disk (no credentials to stream it: AccessDenied)"
    )
    assert run_args(machine)[0] == "/weights"
    assert "AWS_ACCESS_KEY_ID" not in (machine.root / "run/inference/server-secrets.env").read_text()


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("no store", f"the region's store {STORE} does not exist yet"),
        ("no copy", f"no complete copy of google/gemma-4-E2B-it in {STORE} yet"),
        ("half done", f"no complete copy of google/gemma-4-E2B-it in {STORE} yet"),
        ("changed", f"the copy in {STORE} does not match its manifest (changed or half done): 1 of its 4 files missing, extra or of another size (model.safetensors)"),
        ("other bytes", f"the copy in {STORE} does not match its manifest (changed or half done): 1 of its 4 files not of their sha256 (model.safetensors)"),
        ("another region", f"the store {STORE} is in us-west-2, not us-east-1: reading weights across regions is slow and billed"),
        ("another model", f"the copy's manifest is not one for google/gemma-4-E2B-it (in {STORE})"),
        ("an older copy", f"the copy was made by an older weights copy (manifest version 1); the next deploy's copy makes it again (in {STORE})"),
    ],
)  # fmt: skip
def test_a_missing_half_done_changed_or_far_copy_is_not_loaded_and_the_hub_serves(host, s3, fault, reason):
    model = "google/gemma-4-E2B-it"
    if fault == "another region":
        s3.create_bucket(Bucket=STORE, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
        stage_weights(s3, model)
    elif fault != "no store":
        make_store(s3)
    if fault == "half done":
        stage_weights(s3, model, marker=False)
    elif fault in ("changed", "other bytes"):
        stage_weights(s3, model)
        body = b"\0" * 100 if fault == "changed" else b"\1" * 2048
        s3.put_object(Bucket=STORE, Key=f"{weights_prefix(model)}model.safetensors", Body=body)
    elif fault in ("another model", "an older copy"):
        stage_weights(s3, model)
        manifest = (
            {"version": 2, "model": "other/model", "files": {"x": {"size": 1, "sha256": "0" * 64}}}
            if fault == "another model"
            else {"model": model, "files": {name: len(data) for name, data in MODEL_FILES.items()}}
        )
        s3.put_object(Bucket=STORE, Key=weights_marker(model), Body=json.dumps(manifest).encode())
    machine = host(store_config())
    ready = ready_record(machine)
    assert ready["paths"]["weights"] == f"from the hub: {reason}"
    # Nothing of the store reaches the engine: the hub's name, as the image downloads it.
    assert run_args(machine)[0] == model and "--served-model-name" not in run_args(machine)
    assert not (machine.root / "opt/inference/weights" / model).exists()


def test_a_copy_without_a_chat_template_reports_failed_with_the_engines_answer(host, s3):
    """vLLM refuses chat completions for a model without a template (the copy that left out
    Gemma 4's chat_template.jinja): the server reports failed with what came back, and stops."""
    make_store(s3)
    files = {name: data for name, data in MODEL_FILES.items() if name != "chat_template.jinja"}
    stage_weights(s3, "google/gemma-4-E2B-it", files)
    machine = host(store_config())
    failed = wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is True)[-1]
    assert failed["state"] == "failed"
    assert (
        failed["reason"].startswith("the engine answers /health but not a question in ten tries; last: HTTP 400: ")
        and "you must provide a chat template" in failed["reason"]
    )
    assert "ready" not in [s["state"] for s in reports(machine)]


def graph_objects(s3, bucket: str = STORE) -> dict[str, bytes]:
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="graphs/").get("Contents", [])
    return {o["Key"]: s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in listed}


def journal(machine: Host, unit: str = "inference-ready.service") -> str:
    """What a unit wrote (the stand-in systemd's journal of it)."""
    path = machine.state / "journal" / f"{unit}.log"
    return path.read_text() if path.exists() else ""


def neuron_boot(**changes) -> Server:
    values = {
        "model_argument": ModelArgument.ENVIRONMENT,
        "serve_args": (),
        "model_id": "Qwen/Qwen2.5-1.5B-Instruct",
        "container_env": (("TENSOR_PARALLEL_SIZE", "2"),),
        "compile_cache": "/var/cache/neuron",
        "host_port": 8080,
        "container_port": 8080,
    }
    return store_config(Accelerator.NEURON, **(values | changes))


def test_compiled_graphs_are_kept_in_the_store_and_the_next_server_restores_them_before_the_engine_starts(
    host, s3, graphs_record
):
    make_store(s3)
    stage_weights(s3, "Qwen/Qwen2.5-1.5B-Instruct")
    first = host(neuron_boot(), HostOptions(instance_type="trn1.2xlarge"), name="first")
    ready = ready_record(first)
    assert ready["paths"]["graphs"] == "compiling: runner.up has recorded no graphs of g5g for these inputs"
    assert "compiled the model into /var/cache/neuron" in container_log(first)
    stored = eventually(lambda: graph_objects(s3) if len(graph_objects(s3)) == 2 else None, 20, first.boot_log)
    (archive,) = [k for k in stored if k.endswith(".tar.gz")]
    manifest = json.loads(stored[archive.removesuffix(".tar.gz") + ".json"])
    # Under this backend's own prefix, keyed by everything the graphs were compiled for (the image
    # as referenced, not a local id, which differs between registries; where the weights were), and
    # stored under the archive's own sha256.
    assert archive.startswith("graphs/g5g/") and archive.endswith(
        f"/{hashlib.sha256(stored[archive]).hexdigest()}.tar.gz"
    )
    assert manifest["inputs"] == {
        "kind": "neuron",
        "image": IMAGE.split("/", 1)[1],
        "model": "Qwen/Qwen2.5-1.5B-Instruct",
        "checkpoint": "/weights",
        "instance_type": "trn1.2xlarge",
        "serve_args": [],
        "container_env": ["MODEL=Qwen/Qwen2.5-1.5B-Instruct", "TENSOR_PARALLEL_SIZE=2"],
    }
    assert manifest["sha256"] == hashlib.sha256(stored[archive]).hexdigest()
    # The server says what it kept; runner.up records it as what the next servers may load.
    key = runner_records_the_graphs(first, graphs_record)
    assert archive == f"graphs/g5g/{key}/{manifest['sha256']}.tar.gz"
    assert json.loads(graphs_record.read_text()) == {"graphs": {key: manifest["sha256"]}}

    second = host(neuron_boot(), HostOptions(instance_type="trn1.2xlarge"), name="second")
    ready = ready_record(second)
    assert ready["paths"]["graphs"].startswith(f"restored from s3://{STORE}/{archive} (")
    assert "loaded the compiled model" in container_log(second)
    # Restored before the engine started; nothing new to keep.
    calls = aws_calls(second)
    assert any(archive in c for c in calls) and not [c for c in calls if "put-object" in c]

    # Another instance type is another key: compiled, not loaded.
    other = host(neuron_boot(), HostOptions(instance_type="inf2.xlarge"), name="other")
    assert (
        ready_record(other)["paths"]["graphs"] == "compiling: runner.up has recorded no graphs of g5g for these inputs"
    )
    assert "compiled the model into" in container_log(other)


def test_a_server_that_answered_is_not_stopped_by_the_deadline_while_it_keeps_its_graphs(host, s3, tmp_path):
    """The launch deadline is for a server that never answered: one that answered and is still
    uploading what it compiled (gigabytes over a slow link) is left alone, and reports ready after."""
    make_store(s3)
    stage_weights(s3, "Qwen/Qwen2.5-1.5B-Instruct")
    release = tmp_path / "upload-may-finish"
    machine = host(
        neuron_boot(ready_minutes=FAR_DEADLINE_MIN),
        HostOptions(instance_type="trn1.2xlarge"),
        AWS_PUT_HOLD=str(release),
    )
    # Answered, and held in the graphs' upload: the state is still "starting".
    phases = machine.root / "run/inference/phases"
    eventually(lambda: phases.is_file() and "answer" in phases.read_text().split(), 120, machine.boot_log)
    assert reports(machine)[-1]["state"] == "starting"
    fire_the_deadline(machine)
    release.touch()
    ready = ready_record(machine)
    assert ready["state"] == "ready" and "graphs" in ready
    assert not [s for s in reports(machine) if s.get("stopped")]
    assert not [c for c in aws_calls(machine) if "set-desired-capacity" in c]


def test_graphs_from_the_hubs_cache_are_neither_kept_nor_restored(host, s3):
    """A Neuron engine reads its weights back from where they were when it compiled: the hub's
    cache of one instance is not there on the next, so such graphs would compile again anyway."""
    make_store(s3)
    machine = host(neuron_boot())
    ready = ready_record(machine)
    assert ready["paths"]["graphs"] == (
        "compiling: the weights come from the hub's cache, which the next server would not have; graphs not kept"
    )
    time.sleep(1)
    assert graph_objects(s3) == {} and not [r for r in reports(machine) if r.get("graphs")]


def test_graphs_kept_in_another_regions_store_are_restored_here(host, s3, graphs_record):
    make_store(s3)
    stage_weights(s3, "Qwen/Qwen2.5-1.5B-Instruct")
    first = host(neuron_boot(), name="first")
    ready_record(first)
    eventually(lambda: len(graph_objects(s3)) == 2, 20, first.boot_log)
    runner_records_the_graphs(first, graphs_record)
    there = make_store(s3, "us-east-2")
    stage_weights(s3, "Qwen/Qwen2.5-1.5B-Instruct", bucket=there)
    second = host(neuron_boot(region="us-east-2", store_bucket=there), name="second")
    ready = ready_record(second)
    assert ready["paths"]["graphs"].startswith(f"restored from s3://{STORE}/graphs/g5g/")
    assert "loaded the compiled model" in container_log(second)


@pytest.mark.parametrize("fault", ["other inputs", "another archive", "not recorded"])
def test_graphs_not_the_ones_runner_up_recorded_are_never_loaded_nor_replaced(host, s3, graphs_record, fault):
    """A server keeps graphs only where none are (If-None-Match, each archive under its own sha256),
    and one loads only an archive of the sha256 runner.up recorded for these inputs: another server
    of the backend cannot make the next one run what it put there."""
    make_store(s3)
    stage_weights(s3, "Qwen/Qwen2.5-1.5B-Instruct")
    first = host(neuron_boot(), name="first")
    ready_record(first)
    stored = eventually(lambda: graph_objects(s3) if len(graph_objects(s3)) == 2 else None, 20, first.boot_log)
    (manifest_key,) = [k for k in stored if k.endswith(".json")]
    object_ = manifest_key.removesuffix(".json")
    if fault != "not recorded":
        runner_records_the_graphs(first, graphs_record)
    if fault == "other inputs":
        manifest = json.loads(stored[manifest_key])
        manifest["inputs"]["image"] = "inference-survey/neuron:another"  # a cache written by another image
        s3.put_object(Bucket=STORE, Key=manifest_key, Body=json.dumps(manifest).encode())
        why = f"compiling: the graphs stored at s3://{STORE}/{object_} were compiled for other inputs (another image, model, type or settings); not loaded"
    elif fault == "another archive":
        s3.put_object(Bucket=STORE, Key=f"{object_}.tar.gz", Body=b"an archive runner.up never saw")
        why = f"compiling: the graphs at s3://{STORE}/{object_} are missing or not the ones runner.up recorded (sha256 differs); not loaded"
    else:
        why = "compiling: runner.up has recorded no graphs of g5g for these inputs"
    before = graph_objects(s3)
    second = host(neuron_boot(), name="second")
    ready = ready_record(second)
    assert ready["paths"]["graphs"] == why
    assert "compiled the model into" in container_log(second)
    # What it compiled is not put over what is there (kept before its ready report).
    assert graph_objects(s3) == before


def test_vllms_compile_cache_is_kept_and_restored_like_the_neuron_graphs(host, s3, graphs_record):
    make_store(s3)
    stage_weights(s3, "google/gemma-4-E2B-it")
    boot = store_config(compile_cache="/root/.cache/vllm")
    first = host(boot, name="first")
    ready_record(first)
    assert "compiled the model into /root/.cache/vllm" in container_log(first)
    eventually(lambda: len(graph_objects(s3)) == 2, 20, first.boot_log)
    assert all(k.startswith("graphs/g5g/") for k in graph_objects(s3))
    runner_records_the_graphs(first, graphs_record)
    second = host(boot, name="second")
    assert ready_record(second)["paths"]["graphs"].startswith(f"restored from s3://{STORE}/graphs/g5g/")
    assert "loaded the compiled model from /root/.cache/vllm" in container_log(second)


def test_a_recorded_pid_that_now_names_another_process_is_left_alone(host):
    """The stand-ins' supervisors and containers are signalled by pid and start time: a number on
    record whose process is gone may name another test's process by then (the suite wraps pid_max
    several times a run), and a crash loop's `docker rm -f` or a host's shutdown must not stop it."""
    import signal
    import subprocess

    from tests.host import processes

    machine = host(boot_config(), HostOptions(gpu=False))  # stops at boot: its unit is on record
    wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is True)
    # Another process, a group leader as supervisors and servers are, under a number on record.
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        started = processes.start_time(other.pid)
        assert started is not None
        stale = f"{other.pid} {started - 1}"  # the number, with the start time of its earlier process
        with (machine.state / "supervisors").open("a") as record:
            record.write(stale + "\n")
        unit = machine.state / "units" / "inference-server.service.json"
        unit.write_text(json.dumps(json.loads(unit.read_text()) | {"supervisor": stale}))
        (machine.state / "containers" / "inference-server").mkdir(parents=True, exist_ok=True)
        (machine.state / "containers" / "inference-server" / "pid").write_text(stale)
        for command in ("docker rm -f inference-server", "systemctl stop inference-server.service"):
            assert machine.run(command).returncode == 0
            assert other.poll() is None, command
        machine.shutdown()
        assert other.poll() is None  # untouched by all three
        assert processes.running(other.pid, started)
        # And by its own record it is signalled (the check is live, not a refusal of every pid).
        assert processes.signal_process(other.pid, started, signal.SIGTERM)
        assert other.wait(timeout=10) == -signal.SIGTERM
    finally:
        other.kill()
        other.wait()


def test_a_group_whose_leader_has_gone_is_signalled_only_in_the_hosts_own_members(host):
    """A recorded leader gone, its number may be another group's by now (that group's leader gone
    too, its members left): a host's shutdown stops only members that carry the host's marker."""
    import subprocess

    from tests.host import processes

    machine = host(boot_config(), HostOptions(gpu=False))
    wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is True)
    own_env = machine.environment()
    groups = []
    for env in (None, own_env):  # another test's group, then one of this host's
        leader = subprocess.Popen(
            ["bash", "-c", "sleep 60 & echo $!"], stdout=subprocess.PIPE, text=True, start_new_session=True, env=env
        )
        member = int(leader.stdout.readline())
        leader.wait()  # the leader gone and reaped: only its member holds the group's number
        groups.append((leader.pid, member, processes.start_time(member)))
    try:
        for leader, _, _ in groups:
            with (machine.state / "supervisors").open("a") as record:
                record.write(f"{leader} 1\n")  # the number, with some earlier process's start time
        machine.shutdown()
        (_, foreign, foreign_start), (_, own, own_start) = groups
        assert processes.running(foreign, foreign_start)  # not this host's: left running
        # This host's: stopped with it.
        eventually(lambda: not processes.running(own, own_start), 10, lambda: f"{own} still runs")
    finally:
        for _, member, _ in groups:
            with contextlib.suppress(ProcessLookupError):
                os.kill(member, 9)


def test_the_user_data_and_every_script_of_the_archive_are_valid_bash():
    import subprocess

    from inference_constructs.user_data import unpack_archive

    server = store_config()
    deploy = DeployValues(region="us-east-1", account_id=ACCOUNT, image=IMAGE, boot_bucket=ASSETS, boot_key="k",
                          boot_sha256="0" * 64)  # fmt: skip
    scripts = {"user data": render_user_data(server.boot, deploy)} | {
        path: text for path, (text, _) in unpack_archive(boot_archive(server.boot)).items() if text.startswith("#!")
    }
    for name, text in scripts.items():
        result = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=10, check=False)
        assert result.returncode == 0, f"{name}: {result.stderr}"


def test_a_boot_archive_that_is_not_the_one_deployed_is_never_run(host):
    """The user data checks the archive's sha256 before it unpacks it: a changed object in the
    asset bucket runs nothing, and the server reports why and goes to zero."""
    machine = host(boot_config(), archive=b"#!/bin/bash\necho not the deployed scripts\n")
    failed = wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is True)[-1]
    assert failed["state"] == "failed"
    assert failed["reason"].startswith(f"the boot scripts at s3://{ASSETS}/") and failed["reason"].endswith(
        " are not the ones deployed (sha256 differs)"
    )
    assert not (machine.root / "usr/local/bin/inference-boot").exists() and not docker_runs(machine)
    assert [s["state"] for s in reports(machine)] == ["failed"]


def test_a_boot_archive_that_cannot_be_fetched_reports_failed_and_stops(host):
    machine = host(boot_config(), archive=b"")
    failed = wait_for(machine, lambda s: bool(s) and s[-1].get("stopped") is True)[-1]
    assert failed["state"] == "failed"
    assert failed["reason"] == f"the boot scripts at s3://{ASSETS}/{boot_key(machine)} could not be fetched"
    # Tried five times: the role's policy and the network may still be settling this early.
    assert len([c for c in aws_calls(machine) if c.startswith(f"aws s3api get-object --bucket {ASSETS} ")]) == 5
    assert f"aws autoscaling set-desired-capacity --auto-scaling-group-name {GROUP} --desired-capacity 0" in aws_calls(
        machine
    )


def boot_key(machine: Host) -> str:
    return (machine.root / "etc/inference/deploy.env").read_text().split("BOOT_KEY=", 1)[1].split()[0]


def test_the_boot_log_is_the_root_users_alone_and_traces_no_command(host):
    """The boot traced every command (`set -x`, IMDS tokens among them) into a log anyone could read."""
    machine = host(boot_config())
    ready_record(machine)
    log = machine.root / "var/log/inference-boot.log"
    assert log.stat().st_mode & 0o077 == 0
    assert "X-aws-ec2-metadata-token" not in log.read_text() and "\n+ " not in log.read_text()
    assert (machine.root / "etc/inference/server.env").stat().st_mode & 0o077 == 0


def test_the_server_scripts_pass_shellcheck():
    """The instance's scripts, the image build's, the stand-in host's and the set-up scripts, linted
    by ShellCheck."""
    import subprocess
    import sys

    from inference_constructs.image_build import BUILD_SCRIPT
    from inference_constructs.user_data import SCRIPTS
    from stacks.import_stack import COPY_SCRIPT
    from tests.host.machine import BIN

    setup = Path(__file__).parents[2] / "scripts"
    scripts = sorted(
        str(p) for p in [*SCRIPTS.glob("*.sh"), BUILD_SCRIPT, COPY_SCRIPT, *BIN.iterdir(), *setup.glob("*.sh")]
    )
    shellcheck = Path(sys.executable).with_name("shellcheck")
    result = subprocess.run(
        [str(shellcheck), "-s", "bash", "-x", *scripts],
        cwd=setup.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout
