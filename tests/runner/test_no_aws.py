"""`--no-aws` (and no credentials) never calls AWS, even for backends read from an outputs file.

A socket guard refuses and records every connection and name lookup off loopback, and the
instance metadata service is NOT disabled here: a botocore client used without credentials
would reach for 169.254.169.254. Building any boto3 client is recorded too.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from pathlib import Path

import boto3
import pytest

from runner import bench, check, counting, orchestrator
from runner.cloud.aws import forget_clients
from runner.core.evidence import load
from tests.runner.fake_openai import FakeOpenAI, text, tool_call

OUTPUTS = {
    "InferenceSageMakerStack": {
        "BackendSagemaker": json.dumps(
            {
                "contract": 2,
                "name": "sagemaker",
                "kind": "sagemaker",
                "region": "us-east-2",
                "model_id": "gemma",
                "port": 8080,
                "health_path": "/ping",
                "endpoint_name": "inference-sagemaker",
                "instance_type": "ml.g6.xlarge",
            }
        )
    },
    "InferenceGpuStack": {
        "BackendG6": json.dumps(
            {
                "contract": 2,
                "name": "g6",
                "kind": "ec2-vllm",
                "region": "us-east-1",
                "model_id": "fake-model",
                "port": 8000,
                "health_path": "/health",
                "auto_scaling_group": "inference-g6",
                "zones": ["us-east-1a"],
                "readiness_parameter": "/inference/g6/ready",
            }
        )
    },
}


def _loopback(host: object) -> bool:
    try:
        return ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        return host == "localhost"


@pytest.fixture
def off_loopback(monkeypatch) -> list[str]:
    """Every attempt to leave loopback (connect, name lookup) and every boto3 client built."""
    attempts: list[str] = []
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED", raising=False)
    forget_clients()  # a client an earlier test built would not be built again here
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
            attempts.append(f"connect {address[0]}:{address[1]}")
            raise ConnectionRefusedError(f"test guard: no traffic off loopback ({address[0]})")
        return real_connect(sock, address)

    def getaddrinfo(host, *args, **kwargs):
        if host is not None and not _loopback(host):
            attempts.append(f"lookup {host}")
            raise socket.gaierror(f"test guard: no name lookups off loopback ({host})")
        return real_getaddrinfo(host, *args, **kwargs)

    def client(*args, **kwargs):
        attempts.append(f"boto3 client {args[1] if len(args) > 1 else kwargs.get('service_name')}")
        raise AssertionError("an AWS client was built while AWS is not in use")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(boto3.session.Session, "client", client)
    return attempts


def common(tmp_path: Path, fake_url: str, *flags: str) -> list[str]:
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(OUTPUTS))
    port = fake_url.rsplit(":", 1)[1]
    return ["--outputs-file", str(outputs), "--forward", f"g6={port}", "--results-dir", str(tmp_path), *flags]


def evidence_of(tmp_path: Path, command: str) -> dict:
    (path,) = tmp_path.glob(f"*/{command}-*.json")
    return load(path)


@pytest.mark.parametrize("flags", [("--no-aws",), ()], ids=["--no-aws", "no-credentials"])
def test_bench_lists_the_sagemaker_row_and_never_calls_aws(tmp_path, off_loopback, flags):
    with FakeOpenAI([text("The ocean is wide")]) as fake:
        code = bench.run([*common(tmp_path, fake.url, *flags), "--repeats", "2"])
    assert off_loopback == []
    assert code == 0
    evidence = evidence_of(tmp_path, "bench")
    by_backend = {}
    for record in evidence["records"]:
        by_backend.setdefault(record["backend"], []).append(record)
    assert [r["ok"] for r in by_backend["g6"]] == [True, True]
    why = "with --no-aws" if flags else "without AWS credentials"
    assert all(r["error"].startswith(f"backend sagemaker: not reachable {why}") for r in by_backend["sagemaker"]), (
        by_backend["sagemaker"]
    )
    assert {b["name"] for b in evidence["backends"]} == {"g6", "sagemaker"}


def test_check_and_counting_never_call_aws(tmp_path, off_loopback):
    script = [text("Paris"), tool_call("add_numbers", {"a": 17, "b": 25}), text("42")]
    with FakeOpenAI(script) as fake:
        assert check.run(common(tmp_path, fake.url, "--no-aws")) == 0
    check_records = {r["backend"]: r for r in evidence_of(tmp_path, "check")["records"]}
    assert check_records["g6"]["plain_ok"] is True
    assert check_records["sagemaker"]["error"].startswith("not healthy: not reachable with --no-aws")
    with FakeOpenAI([tool_call("count_ids", {"op": ">=", "value": 10}), text("Answer: 8")]) as fake:
        counting.run([*common(tmp_path, fake.url, "--no-aws"), "--runs", "1"])
    counting_records = {r["backend"]: r for r in evidence_of(tmp_path, "counting")["records"]}
    assert counting_records["sagemaker"]["error"].startswith("backend sagemaker: not reachable with --no-aws")
    assert off_loopback == []


def test_orchestrator_never_calls_aws(tmp_path, off_loopback):
    script = [tool_call("ask_g6", {}), tool_call("ask_sagemaker", {}), tool_call("scoreboard", {}), text("g6 wins.")]
    with FakeOpenAI(script) as agent, FakeOpenAI([text("Paris")]) as g6:
        flags = [*common(tmp_path, g6.url, "--no-aws"), "--endpoint", f"agent={agent.url}", "--agent", "agent"]
        code = orchestrator.run(flags)
    assert code == 0
    (record,) = evidence_of(tmp_path, "orchestrator")["records"]
    sagemaker_ask = next(a for a in record["asks"] if a["backend"] == "sagemaker")
    assert sagemaker_ask["error"].startswith("backend sagemaker: not reachable with --no-aws")
    assert off_loopback == []
