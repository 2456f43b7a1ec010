"""The servers' boot scripts, run for real under bash with stand-ins for docker, aws and the
metadata service, so "readiness that can say no" is tested as behaviour, not as text."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from catalog import Accelerator
from catalog.backends import ModelArgument
from inference_constructs.user_data import (
    COMMON_SCRIPT,
    NO_RESTART_EXIT,
    READY_SCRIPT,
    SERVE_SCRIPT,
    ServerBoot,
    failed_script,
    render_boot_script,
    server_env,
    server_unit,
)

# Stand-ins: each records its arguments; behaviour is chosen by environment variables.
STUBS = {
    "aws": """#!/bin/bash
echo "aws $*" >> "$CALLS"
if [[ "$1 $2" == "ssm put-parameter" ]]; then
  while [[ $# -gt 0 ]]; do [[ "$1" == --value ]] && printf '%s\\n' "$2" >> "$REPORTS"; shift; done
fi
if [[ "$1" == secretsmanager ]]; then echo hf_test; fi
""",
    "curl": """#!/bin/bash
case "$*" in
  *api/token*) echo token ;;
  *instance-id*) echo i-0abc ;;
  *availability-zone*) echo us-east-2c ;;
  *) [[ -n "${HEALTHY:-}" ]] ;;
esac
""",
    "docker": """#!/bin/bash
echo "docker $*" >> "$CALLS"
case "$1" in
  pull) if [[ -n "${PULL_FAILS:-}" ]]; then echo "$PULL_FAILS" >&2; exit 1; fi ;;
  run) exit "${RUN_STATUS:-0}" ;;
  logs) printf '%s\n' "${DOCKER_LOGS:-}" ;;
esac
""",
    "nvidia-smi": """#!/bin/bash
[[ -n "${GPU:-}" ]] && echo "GPU 0: NVIDIA L4"
[[ -n "${GPU:-}" ]]
""",
    "journalctl": """#!/bin/bash
echo "${KERNEL_LOG:-}"
""",
}


def boot(accelerator: Accelerator = Accelerator.NVIDIA, **changes) -> ServerBoot:
    values = {
        "backend": "g5g",
        "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm-sm75:v1",
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
        "image_build_hint": "build it with the README's g5g image steps",
    }
    return ServerBoot(**(values | changes))


@pytest.fixture
def host(tmp_path):
    """A scratch root with the files the boot script writes, and stand-ins first on PATH."""

    def make(server: ServerBoot) -> dict[str, str]:
        root = tmp_path / "root"
        for folder in ("etc/inference", "usr/local/lib", "run/inference", "dev", "bin"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        (root / "etc/inference/server.env").write_text(server_env(server) + "\n")
        args = "\n".join([server.model_id, *server.serve_args])
        (root / "etc/inference/serve-args").write_text(args + "\n")
        (root / "usr/local/lib/inference-common.sh").write_text(COMMON_SCRIPT)
        for name, body in STUBS.items():
            path = root / "bin" / name
            path.write_text(body)
            path.chmod(0o755)
        return {
            "PATH": f"{root / 'bin'}:{os.environ['PATH']}",
            "INFERENCE_ROOT": str(root),
            "CALLS": str(tmp_path / "calls.log"),
            "REPORTS": str(tmp_path / "reports.log"),
            "HOME": str(tmp_path),
        }

    return make


def run_script(script: str, env: dict[str, str], **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script], env=env | extra, capture_output=True, text=True, timeout=30, check=False
    )


def reports(env: dict[str, str]) -> list[dict]:
    path = Path(env["REPORTS"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_missing_image_is_reported_with_what_builds_it_and_not_restarted(host):
    env = host(boot())
    result = run_script(SERVE_SCRIPT, env, GPU="1", PULL_FAILS="manifest unknown: manifest unknown")
    assert result.returncode == NO_RESTART_EXIT
    states = reports(env)
    assert [s["state"] for s in states] == ["starting", "failed"]
    failed = states[-1]
    assert failed["reason"].startswith("image not found: 123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm-sm75:v1")
    assert failed["reason"].endswith("build it with the README's g5g image steps")
    assert (failed["instance_id"], failed["zone"]) == ("i-0abc", "us-east-2c")
    # systemd's unit does not restart this exit status.
    assert f"RestartPreventExitStatus={NO_RESTART_EXIT}" in server_unit("g5g")


def test_a_network_fault_on_pull_is_retried_not_reported_as_failed(host):
    env = host(boot())
    result = run_script(SERVE_SCRIPT, env, GPU="1", PULL_FAILS="dial tcp: i/o timeout")
    assert result.returncode == 1
    assert [s["state"] for s in reports(env)] == ["starting"]


def test_no_neuron_device_fails_fast(host):
    env = host(boot(Accelerator.NEURON, model_argument=ModelArgument.NONE, serve_args=()))
    result = run_script(SERVE_SCRIPT, env)
    assert result.returncode == NO_RESTART_EXIT
    assert reports(env)[-1]["reason"].startswith("no Neuron device")
    assert "docker pull" not in Path(env["CALLS"]).read_text()


def test_neuron_image_runs_with_no_arguments_and_its_data_volume(host):
    server = boot(
        Accelerator.NEURON,
        model_argument=ModelArgument.NONE,
        serve_args=(),
        data_volume="gemma4-data:/data",
        host_port=8080,
        container_port=8080,
        image="docker.io/xbill9/gemma4-optb:slim",
    )
    env = host(server)
    (Path(env["INFERENCE_ROOT"]) / "dev/neuron0").write_text("")
    (Path(env["INFERENCE_ROOT"]) / "etc/inference/serve-args").write_text("")
    result = run_script(SERVE_SCRIPT, env)
    assert result.returncode == 0, result.stderr
    (run,) = [line for line in Path(env["CALLS"]).read_text().splitlines() if line.startswith("docker run")]
    assert run.endswith("docker.io/xbill9/gemma4-optb:slim")  # nothing after the image
    assert "-v gemma4-data:/data" in run and "--device=/dev/neuron0" in run
    assert "-p 127.0.0.1:8080:8080" in run


def test_vllm_gets_the_model_as_its_positional_argument(host):
    env = host(boot())
    result = run_script(SERVE_SCRIPT, env, GPU="1")
    assert result.returncode == 0, result.stderr
    (run,) = [line for line in Path(env["CALLS"]).read_text().splitlines() if line.startswith("docker run")]
    assert run.endswith("vllm-sm75:v1 google/gemma-4-E2B-it --dtype float16")
    assert "docker login" not in run


def test_out_of_memory_is_named_when_the_unit_gives_up(host):
    env = host(boot())
    result = run_script(SERVE_SCRIPT, env, GPU="1", RUN_STATUS="137", KERNEL_LOG="Out of memory: Killed process 42")
    assert result.returncode == 137  # systemd restarts it, up to its start limit
    failed = run_script(failed_script(), env)
    assert failed.returncode == 0
    reason = reports(env)[-1]["reason"]
    assert reason.startswith("container exits repeatedly (5 starts in 1200 s); last: out of memory")


def test_a_crash_loop_is_reported_with_the_last_exit_status(host):
    env = host(boot())
    run_script(SERVE_SCRIPT, env, GPU="1", RUN_STATUS="1")
    run_script(failed_script(), env)
    assert reports(env)[-1]["reason"].endswith("last: container exited with status 1")


def test_ready_reports_ready_with_instance_and_zone(host):
    env = host(boot())
    result = run_script(READY_SCRIPT, env, HEALTHY="1")
    assert result.returncode == 0, result.stderr
    ready = reports(env)[-1]
    assert (ready["state"], ready["instance_id"], ready["zone"], ready["model"]) == (
        "ready",
        "i-0abc",
        "us-east-2c",
        "google/gemma-4-E2B-it",
    )


def test_ready_keeps_the_servers_own_weight_loading_time(host):
    env = host(boot())
    log = "\n".join(
        [
            "(EngineCore pid=2128) INFO 10-05 02:55:22 [default_loader.py:430] Loading weights took 520.97 seconds",
            "(APIServer pid=1651) INFO 10-05 02:58:21 [parser_manager.py:37] auto tool choice has been enabled",
        ]
    )
    result = run_script(READY_SCRIPT, env, HEALTHY="1", DOCKER_LOGS=log)
    assert result.returncode == 0, result.stderr
    assert reports(env)[-1]["weights_load_s"] == 520.97
    assert "docker logs inference-server" in Path(env["CALLS"]).read_text()
    # A server whose log says nothing of it (the survey's Neuron graph) reports ready without it.
    result = run_script(READY_SCRIPT, env, HEALTHY="1", DOCKER_LOGS="serving on :8080")
    assert result.returncode == 0 and "weights_load_s" not in reports(env)[-1]


def test_boot_script_is_valid_bash():
    result = subprocess.run(
        ["bash", "-n"], input=render_boot_script(boot()), capture_output=True, text=True, timeout=10, check=False
    )
    assert result.returncode == 0, result.stderr
