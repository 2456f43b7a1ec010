"""The clients the runner builds: HTTP clients on one TLS context, one boto3 client per service and
region while the AWS environment stays the same."""

from __future__ import annotations

import ssl

from strands import Agent

from runner.agent.models import StrictOpenAIModel
from runner.cloud.aws import boto_client
from runner.core.backends import local_backend
from runner.core.records import RequestRecord
from runner.core.tls import tls_context
from runner.measure.health import wait_healthy
from runner.measure.openai_sync import OpenAIStreamClient
from runner.measure.records import ChatRequest
from tests.runner.fake_openai import FakeOpenAI, text


def test_the_timed_client_the_health_wait_and_every_agent_call_build_no_tls_context(monkeypatch):
    tls_context()  # the process's one, built before the count starts
    built: list[object] = []
    real_new = ssl.SSLContext.__new__

    def counting_new(cls, *args, **kwargs):
        built.append(cls)
        return real_new(cls, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "__new__", counting_new)
    with FakeOpenAI([text("The sea is calm."), text("Answer: 3"), text("Answer: 4")]) as fake:
        backend = local_backend(f"{fake.url}/v1", "fake-model")
        assert wait_healthy(backend, 5, poll_s=0.05).healthy
        timed = OpenAIStreamClient(backend.base_url, "fake-model", timeout_s=10)
        record = timed.chat(
            ChatRequest(prompt="Write about the sea.", max_tokens=8), RequestRecord(backend="local", run=1)
        )
        assert record.ok, record.error
        model = StrictOpenAIModel(
            client_args={"base_url": backend.base_url, "api_key": "unused", "max_retries": 0}, model_id="fake-model"
        )
        agent = Agent(model=model, callback_handler=None)
        assert "Answer: 3" in str(agent("How many?"))
        assert "Answer: 4" in str(agent("And now?"))  # a second model call, a second AsyncOpenAI client
    assert built == []


def test_one_boto3_client_per_service_region_and_timeout_until_the_aws_environment_changes(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    ssm = boto_client("ssm", "us-east-1", 30)
    assert boto_client("ssm", "us-east-1", 30) is ssm
    assert boto_client("ssm", "us-east-2", 30) is not ssm
    assert boto_client("ssm", "us-east-1", 10) is not ssm
    assert boto_client("ec2", "us-east-1", 30) is not ssm

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:10")  # another emulator, another account
    moved = boto_client("ssm", "us-east-1", 30)
    assert moved is not ssm
    assert (ssm.meta.endpoint_url, moved.meta.endpoint_url) == ("http://127.0.0.1:9", "http://127.0.0.1:10")
