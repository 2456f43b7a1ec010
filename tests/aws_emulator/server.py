"""The moto server on loopback, in this process, with every gap module installed."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from catalog.backends import MODEL_REVISIONS
from tests.aws_emulator import (
    ai_benchmark,
    autoscaling,
    capacity,
    cloudformation,
    codebuild,
    imports,
    inference_components,
    instances,
    parameters,
    s3_policies,
    sagemaker,
    sagemaker_runtime,
    schedules,
    sessions,
)
from tests.aws_emulator.account import ACCOUNT, REGIONS
from tests.host.aws_cli import CliServer
from tests.host.hub import HubRepo, LoopbackHub

# The Hugging Face Hub the emulated builds download from (the real `hf` CLI, HF_ENDPOINT): each
# catalog model's serving files in miniature, and what else a repository holds, which no copy takes.
GEMMA_FILES = {
    "config.json": b'{"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4"}',
    "model.safetensors": b"\0" * 64,
    "tokenizer.json": b'{"version": "1.0"}',
    "tokenizer_config.json": b"{}",
    # Gemma 4 keeps its chat template in a file of its own (google/gemma-4-E2B-it: chat_template.jinja).
    "chat_template.jinja": b"{{ bos_token }}{% for message in messages %}{{ message['content'] }}{% endfor %}",
    "README.md": b"# Gemma 4",
}
HUB_REPOS = {
    "google/gemma-4-E2B-it": GEMMA_FILES,
    "xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4": GEMMA_FILES,
    "Qwen/Qwen2.5-1.5B-Instruct": {
        "config.json": b'{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}',
        "model.safetensors": b"\0" * 64,
        "tokenizer.json": b'{"version": "1.0"}',
        # Qwen2.5 keeps its chat template as a key of tokenizer_config.json.
        "tokenizer_config.json": b'{"chat_template": "{% for message in messages %}{{ message.content }}{% endfor %}"}',
        "merges.txt": b"#version: 0.2\n",
        "vocab.json": b"{}",
        "README.md": b"# Qwen2.5-1.5B-Instruct",
        "LICENSE": b"Apache License 2.0",
    },
}


class Emulator:
    """moto in server mode. Knobs for a test: `refuse_capacity(region)`, `refuse_builds(region)`,
    `refuse_endpoint_quota(region)`, `take_offline(id)`,
    `host_options[backend]` (what an instance of that backend has and does), `build_behaviour
    [folder]` (`ok` or `fail:TEXT`); `hosts` are the booted instances."""

    def __init__(self, scratch: Path) -> None:
        from moto.server import ThreadedMotoServer

        self.scratch = scratch
        # Port 0: the server binds a free port itself and keeps it (never released and reused by number).
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.port = 0
        self.url = ""
        self.refused: dict[str, list[dict[str, Any]]] = {}
        # Per region, the instance types refused there (none listed: every type).
        self.refused_types: dict[str, set[str]] = {}
        # Per region, launches EC2 refused for what they asked (user data past its limit).
        self.launch_failures: dict[str, list[dict[str, Any]]] = {}
        # Per region, a reason EC2 gives every launch there for what it asks (refuse_launches).
        self.launch_refusals: dict[str, str] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.offline: set[str] = set()
        self.endpoint_quota_refused: set[str] = set()
        # Seconds a deleted inference component stays Deleting, and a made or scaled one Creating or
        # Updating (inference_components.py).
        self.component_deleting_s = 0.0
        self.component_settle_s = 0.0
        self.readiness_writes: list[dict[str, str]] = []
        self.host_options: dict[str, Any] = {}
        self.build_behaviour: dict[str, str] = {}
        # EventBridge targets that failed (a refused StartBuild): what AWS counts as FailedInvocations.
        self.failed_invocations: list[tuple[str, str, str]] = []
        self.hosts: dict[str, Any] = {}
        # Terminated instances' hosts, shutting down a moment after (instances.py).
        self.shutting_down: list[threading.Thread] = []
        self.builds = codebuild.Builds(self)
        # The real AWS CLI that the hosts and builds call, imported once (tests/host/aws_cli.py),
        # started when the first of them needs it.
        self.cli = CliServer(scratch)
        # A model the catalog pins (catalog.backends.MODEL_REVISIONS) is served at that commit, as the
        # hub serves it; the others at a commit of their files.
        self.hub = LoopbackHub(
            {name: HubRepo(dict(files), commit=MODEL_REVISIONS.get(name, "")) for name, files in HUB_REPOS.items()}
        )
        self._undo: list[Any] = []

    def start(self) -> Emulator:
        self.server.start()
        self.hub.__enter__()
        self.port = self.server.get_host_and_port()[1]
        # localhost, not 127.0.0.1: the CDK CLI builds template URLs from it.
        self.url = f"http://localhost:{self.port}"
        for module in (
            parameters, capacity, sessions, codebuild, instances, autoscaling, schedules, sagemaker, inference_components,
            sagemaker_runtime, ai_benchmark, cloudformation, s3_policies, imports,
        ):  # fmt: skip
            self._undo.append(module.install(self))
        self.reset()
        return self

    def reset(self) -> None:
        """Forget everything (moto keeps its state per process, across emulator instances)."""
        import urllib.request

        instances.shut_down_all(self)
        self.builds.wait()
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/moto-api/reset", method="POST"), timeout=30).read()
        self.refused.clear()
        self.launch_failures.clear()
        self.launch_refusals.clear()
        self.refused_types.clear()
        self.sessions.clear()
        self.offline.clear()
        self.endpoint_quota_refused.clear()
        self.component_deleting_s = 0.0
        self.component_settle_s = 0.0
        self.readiness_writes.clear()
        self.host_options.clear()
        self.build_behaviour.clear()
        self.failed_invocations.clear()
        self.builds.clear()
        # runner.up's record of where it deployed belongs to the account that was just emptied.
        (self.scratch / "placement.json").unlink(missing_ok=True)
        parameters.seed_ami_parameters(ACCOUNT, REGIONS)

    def refuse_capacity(self, region: str, instance_type: str | None = None) -> None:
        self.refused.setdefault(region, [])
        if instance_type:
            self.refused_types.setdefault(region, set()).add(instance_type)

    def refuse_launches(self, region: str, reason: str) -> None:
        """Every launch in `region` refused for what it asks, in every zone alike, with EC2's
        `reason` (an instance profile or AMI the launch may not use; capacity.py)."""
        self.launch_refusals[region] = reason

    def refuse_builds(self, region: str) -> None:
        """CodeBuild in `region` refuses every build, as at a new account's quota of 0 (codebuild.py)."""
        self.builds.refused_regions.add(region)

    def refuse_endpoint_quota(self, region: str) -> None:
        """SageMaker endpoints in `region` fail as at a zero quota (sagemaker.py)."""
        self.endpoint_quota_refused.add(region)

    def take_offline(self, instance_id: str) -> None:
        self.offline.add(instance_id)

    def forget_volumes(self, volumes: set[tuple[str, str]]) -> None:
        """Drop (region, volume id) pairs from the emulator: what AWS deletes with a terminated
        instance, moto keeps attached to it and cannot detach."""
        from moto.ec2.models import ec2_backends

        for region, volume_id in volumes:
            ec2_backends[ACCOUNT][region].volumes.pop(volume_id, None)

    def stop(self) -> None:
        instances.shut_down_all(self)
        self.builds.wait()
        for undo in reversed(self._undo):
            undo()
        self.server.stop()
        self.cli.stop()
        self.hub.__exit__(None, None, None)
        instances.assert_no_host_left(self)

    def env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def host_env(self) -> dict[str, str]:
        """What an emulated instance or build runs with: the emulator, the CLI server, the Hub."""
        return self.env() | self.cli.env() | self.hub.env()

    # What AWS does on its own, on a test's word (moto never does it): see schedules.py and autoscaling.py.
    def fire_stack_deployed(self, region: str, stack: str, status: str = "CREATE_COMPLETE") -> list[str]:
        return schedules.fire_stack_deployed(self, region, stack, status)

    def fire_scheduled_actions(self, region: str) -> list[str]:
        return autoscaling.fire_scheduled_actions(ACCOUNT, region)

    def fire_schedules(self, region: str, stack: str) -> list[str]:
        return schedules.fire_schedules(self, region, stack)


@contextlib.contextmanager
def emulated_aws(scratch: Path, extra_env: dict[str, str] | None = None) -> Iterator[Emulator]:
    """An emulator started and this process's AWS environment pointed at it (with `extra_env`),
    both undone afterwards: what a module of emulator tests runs inside."""
    # One line per emulated request would bury a failure's message.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    emulator = Emulator(scratch).start()
    saved = dict(os.environ)
    os.environ.update(emulator.env() | (extra_env or {}))
    os.environ.pop("AWS_CONFIG_FILE", None)
    try:
        yield emulator
    finally:
        os.environ.clear()
        os.environ.update(saved)
        emulator.stop()
