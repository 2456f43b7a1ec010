"""The servers' boot scripts, run for real: the user data exactly as rendered, under bash, on a
stand-in host (tests/host: systemd's unit rules, docker, the metadata service, the accelerator),
with the AWS CLI replaced by a recorder that answers as the services would. The emulator tests
run the same scripts against moto with the real AWS CLI; these cover every path one by one."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from catalog import Accelerator
from catalog.backends import ModelArgument
from inference_constructs.user_data import (
    NO_RESTART_EXIT,
    WAITING_EXIT,
    ServerBoot,
    container_args,
    missing_image_hint,
    render_boot_script,
    server_unit,
)
from tests.host.aws_cli import CliServer
from tests.host.machine import Host, HostOptions

GROUP = "InferenceGpuStack-G5gGroup-ABC123"
# The AWS CLI as the scripts call it: each call recorded; answers chosen by environment variables.
AWS_RECORDER = r"""#!/bin/bash
echo "aws $*" >> "$HOST_STATE/aws.log"
value() { while [[ $# -gt 0 ]]; do [[ "$1" == "$want" ]] && { printf '%s\n' "$2"; return; }; shift; done; }
case "$1 $2" in
  "ssm put-parameter") want=--value value "$@" >> "$HOST_STATE/reports.log" ;;
  "secretsmanager get-secret-value") echo hf_test ;;
  "ecr get-login-password") echo password ;;
  "ecr describe-images")
    want=--image-ids; tag=$(value "$@"); [[ -f "$REGISTRY_DIR/pushed-${tag#imageTag=}" ]] || exit 254 ;;
  "autoscaling describe-auto-scaling-instances") echo "${AWS_GROUP:-None}" ;;
  "autoscaling set-desired-capacity") [[ -z "${AWS_SCALE_REFUSED:-}" ]] || { echo "AccessDenied" >&2; exit 254; } ;;
  "codebuild list-builds-for-project") echo "${AWS_BUILD_IDS:-None}" ;;
  "codebuild batch-get-builds") echo "${AWS_RUNNING_BUILD:-None}" ;;
  "codebuild start-build") echo "inference-build-vllm-sm75:0001" ;;
esac
exit 0
"""


def boot_config(accelerator: Accelerator = Accelerator.NVIDIA, **changes) -> ServerBoot:
    values = {
        "backend": "g5g",
        "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/inference-survey/vllm-sm75:v1",
        "model_id": "google/gemma-4-E2B-it",
        "serve_args": ("--dtype", "float16"),
        "accelerator": accelerator,
        "host_port": 8000,
        "container_port": 8000,
        "health_path": "/health",
        "region": "us-east-1",
        "hf_token_secret_name": "inference/hf-token",
        "log_group": "/inference/g5g",
        "readiness_parameter": "/inference/g5g/ready",
        "missing_image_hint": "push it to this account's ECR, or deploy with -c g5g.image=URI",
        "ready_minutes": 30,
    }
    return ServerBoot(**(values | changes))


@pytest.fixture(scope="module")
def stand_in_server(tmp_path_factory) -> Iterator[CliServer]:
    """The server that runs the hosts' docker and systemctl stand-ins in forks, as the emulator's
    hosts have it (tests/host/aws_cli.py); the `aws` these hosts call is the recorder above."""
    server = CliServer(tmp_path_factory.mktemp("stand-ins"))
    yield server
    server.stop()


@pytest.fixture
def host(tmp_path, stand_in_server):
    """Boots a rendered boot script on a stand-in host; yields a starter, shuts every host down."""
    recorder = tmp_path / "aws-bin"
    recorder.mkdir()
    (recorder / "aws").write_text(AWS_RECORDER)
    (recorder / "aws").chmod(0o755)
    registry = tmp_path / "registry"
    registry.mkdir()
    started: list[Host] = []

    def start(boot: ServerBoot, options: HostOptions | None = None, name: str = "host", **aws: str) -> Host:
        machine = Host(
            root=tmp_path / name,
            instance_id=f"i-0{len(started)}abc",
            zone="us-east-1c",
            env={"AWS_GROUP": GROUP, "REGISTRY_DIR": str(registry)} | stand_in_server.env() | aws,
            options=options or HostOptions(),
        )
        machine.env["PATH"] = f"{recorder}:{machine.environment()['PATH']}"
        started.append(machine)
        machine.boot(render_boot_script(boot))
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


def test_a_missing_image_the_app_builds_starts_its_build_and_waits_at_zero(host):
    boot = boot_config(image_build_project="inference-build-vllm-sm75")
    machine = host(boot, HostOptions(missing_images=(boot.image,)))
    states = wait_for(machine, last_state("waiting-for-image"))
    waiting = states[-1]
    assert waiting["build_id"] == "inference-build-vllm-sm75:0001"
    assert "build inference-build-vllm-sm75:0001 makes it" in waiting["reason"]
    calls = wait_for_call(machine, lambda c: "set-desired-capacity" in c and "--desired-capacity 0" in c)
    assert "aws codebuild start-build --project-name inference-build-vllm-sm75 --query build.id --output text" in calls
    # A clean stop: not restarted, not failed, no failure report.
    wait_for_unit(machine, "inference-server.service", state="inactive", last_exit=WAITING_EXIT)
    assert len(docker_runs(machine)) == 0
    assert [s["state"] for s in reports(machine)] == ["booting", "starting", "waiting-for-image"]


def test_a_build_already_running_is_waited_for_not_started_again(host):
    boot = boot_config(image_build_project="inference-build-vllm-sm75")
    machine = host(
        boot,
        HostOptions(missing_images=(boot.image,)),
        AWS_BUILD_IDS="inference-build-vllm-sm75:0042",
        AWS_RUNNING_BUILD="inference-build-vllm-sm75:0042",
    )
    waiting = wait_for(machine, last_state("waiting-for-image"))[-1]
    assert waiting["build_id"] == "inference-build-vllm-sm75:0042"
    assert not [c for c in aws_calls(machine) if "start-build" in c]


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


def test_compiled_graphs_are_kept_and_a_replaced_instance_restores_them(host):
    repository = "123456789012.dkr.ecr.us-east-2.amazonaws.com/inference-survey/neuron-graphs"
    boot = boot_config(
        Accelerator.NEURON,
        model_argument=ModelArgument.ENVIRONMENT,
        serve_args=(),
        container_env=(("TENSOR_PARALLEL_SIZE", "2"),),
        data_volume="/opt/inference/neuron-cache:/var/cache/neuron",
        graph_repository=repository,
        host_port=8080,
        container_port=8080,
    )
    first = host(boot, name="first")
    wait_for(first, last_state("ready"))
    assert "compiled the model" in (first.state / "containers/inference-server/log").read_text()
    (push,) = eventually(
        lambda: [c for c in first.calls() if c.startswith(f"docker push {repository}:graphs-")], 10, first.calls
    )
    assert [c for c in first.calls() if c.startswith("docker push")] == [push]
    tag = push.split()[-1].rsplit(":", 1)[1]
    # The push is logged as it starts: its layers are in the registry once docker says it is done.
    registry = Path(first.env["REGISTRY_DIR"])
    pushed = registry / repository.split("/", 1)[1] / f"{tag}.pushed"
    eventually(pushed.exists, 20, lambda: first.boot_log()[-2000:])
    # The recorder's ECR now knows the tag, as DescribeImages would.
    (registry / f"pushed-{tag}").write_text("")

    second = host(boot, name="second")
    wait_for(second, last_state("ready"))
    restored = Path(second.root) / "opt/inference/neuron-cache/compiled/model.neff"
    assert restored.read_text() == "compiled graph"
    assert "loaded the compiled model" in (second.state / "containers/inference-server/log").read_text()
    # The restore came before the engine started, and the second instance pushed nothing.
    calls = second.calls()
    assert calls.index(next(c for c in calls if c.startswith("docker cp"))) < calls.index(docker_runs(second)[0])
    assert not [c for c in calls if c.startswith("docker push")]


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


def test_boot_script_is_valid_bash():
    import subprocess

    result = subprocess.run(
        ["bash", "-n"], input=render_boot_script(boot_config()), capture_output=True, text=True, timeout=10, check=False
    )
    assert result.returncode == 0, result.stderr


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
