"""SageMaker AI's benchmarking service, which moto 5.2 does not have: CreateAIWorkloadConfig,
DescribeAIWorkloadConfig, DeleteAIWorkloadConfig, CreateAIBenchmarkJob, DescribeAIBenchmarkJob,
StopAIBenchmarkJob and DeleteAIBenchmarkJob, with the shapes of botocore 1.44.8's service model
(which serializes every answer) and the errors the API reference lists for each: ResourceInUse for
a name already taken (and for deleting a config an active job uses), ResourceNotFound for a config,
job or endpoint that is not there.

- A config's inline document must declare `benchmark.type` matching `^(aiperf)$` (CloudFormation
  reference, AWS::SageMaker::AIWorkloadConfig WorkloadSpec); else ValidationException, in the
  emulator's words. Its `parameters` are read as the developer guide and AWS's ml-container-creator
  write them (prompt_input_tokens_mean, output_tokens_mean, concurrency, request_count), and
  `extra_inputs` as AIPerf reads them: space-separated `name:value` pairs (or a JSON object) added
  to every request's body, `true`/`false` and numbers as such. `output_tokens_mean` is the
  request's max_tokens only: the server stops where it will unless `ignore_eos` says otherwise.
  The document's top-level `secrets.hf_token` (a Secrets Manager ARN, as AWS's SDK sends it) is
  read from moto's Secrets Manager when the job starts; one that is not there fails the job.
- A job runs for real, simply: InProgress, then `request_count` streamed chat completions at
  `concurrency` in flight sent to the endpoint's loopback server (`emulator.model_servers[component
  or endpoint]`, as the runtime serves it), each timed from send to first content and to the end,
  summarized as NVIDIA AIPerf summarizes them (`profile_export_aiperf.json`: per metric unit, avg,
  p50, p90, p99 with linear interpolation; latencies in ms; throughputs over the first send to the
  last end) and written, in an `output.tar.gz`, to moto's S3 under the job's output location in a
  folder of its own. AWS's folder name only a real account shows; the emulator's is its own
  guess, `bmk-` and a number that falls with each job, so the newest job's folder is listed first
  and a reader that takes the first results under a shared location reads another job's. Then
  Completed. An endpoint not InService, a server that fails a request, or an output bucket that is
  not there: Failed with a FailureReason in the emulator's words. StopAIBenchmarkJob: Stopping, then
  Stopped once the requests in flight end.
- Not replayed: the role (never assumed here), the tokenizer (prompts are words, the output length
  is the server's), MLflow, a VPC, CloudWatch logs, the dataset channels.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import tarfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

ACTIVE = ("InProgress", "Stopping")
# The first job's folder number; each later job's is one less, so it is listed before.
FOLDERS = 999_999


@dataclass
class WorkloadConfig:
    name: str
    arn: str
    inline: str
    parameters: dict[str, Any]
    created: datetime
    secrets: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {
            "AIWorkloadConfigName": self.name,
            "AIWorkloadConfigArn": self.arn,
            "AIWorkloadConfigs": {"WorkloadSpec": {"Inline": self.inline}},
            "CreationTime": self.created,
        }


@dataclass
class BenchmarkJob:
    name: str
    arn: str
    target: dict[str, Any]
    output: str
    config: str
    role: str
    created: datetime
    status: str = "InProgress"
    failure: str = ""
    started: datetime | None = None
    ended: datetime | None = None
    stopping: threading.Event = field(default_factory=threading.Event)
    # Where under the output location its results go (the emulator's guess: see the module).
    folder: str = ""

    def describe(self) -> dict[str, Any]:
        described = {
            "AIBenchmarkJobName": self.name,
            "AIBenchmarkJobArn": self.arn,
            "AIBenchmarkJobStatus": self.status,
            "BenchmarkTarget": self.target,
            "OutputConfig": {"S3OutputLocation": self.output},
            "AIWorkloadConfigIdentifier": self.config,
            "RoleArn": self.role,
            "CreationTime": self.created,
        }
        if self.failure:
            described["FailureReason"] = self.failure
        if self.started:
            described["StartTime"] = self.started
        if self.ended:
            described["EndTime"] = self.ended
        return described


def state(backend: Any) -> tuple[dict[str, WorkloadConfig], dict[str, BenchmarkJob]]:
    """The configs and jobs of one account and region (on moto's backend: a reset forgets them)."""
    return backend.__dict__.setdefault("ai_workload_configs", {}), backend.__dict__.setdefault("ai_benchmark_jobs", {})


def document_of(inline: str) -> dict[str, Any]:
    """The document; one that is not one, or not AIPerf's, is refused."""
    import yaml
    from moto.sagemaker.exceptions import ValidationError

    try:
        document = yaml.safe_load(inline)
    except yaml.YAMLError:
        raise ValidationError(message="WorkloadSpec.Inline is not a valid YAML or JSON document.") from None
    benchmark = document.get("benchmark") if isinstance(document, dict) else None
    if not isinstance(benchmark, dict) or benchmark.get("type") != "aiperf":
        raise ValidationError(message="WorkloadSpec.Inline must declare a benchmark whose type matches ^(aiperf)$.")
    return document


def section(document: dict[str, Any], name: str) -> dict[str, Any]:
    value = document.get(name) or {}
    return value if isinstance(value, dict) else {}


def interpolated(values: list[float], share: float) -> float:
    """A percentile by linear interpolation between the closest ranks (numpy's default, AIPerf's)."""
    ordered = sorted(values)
    place = share * (len(ordered) - 1)
    low, high = math.floor(place), math.ceil(place)
    return ordered[low] + (ordered[high] - ordered[low]) * (place - low)


def metric(values: list[float], unit: str) -> dict[str, Any]:
    return {
        "unit": unit,
        "avg": sum(values) / len(values),
        "p50": interpolated(values, 0.5),
        "p90": interpolated(values, 0.9),
        "p99": interpolated(values, 0.99),
        "min": min(values),
        "max": max(values),
        "count": len(values),
    }


@dataclass
class Timed:
    sent: float
    first: float | None
    end: float
    tokens: int


def coerced(value: str) -> Any:
    """A `name:value` pair's value as AIPerf takes it: true/false, none/null, a number, or text."""
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    if value.lower() in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def extra_inputs(given: Any) -> dict[str, Any]:
    """The document's extra inputs as fields of each request's body."""
    if isinstance(given, dict):
        return given
    if not isinstance(given, str) or not given.strip():
        return {}
    if given.strip().startswith("{"):
        return json.loads(given)
    pairs = (pair.partition(":") for pair in given.split())
    return {name: coerced(value) for name, _, value in pairs}


def one_request(base: str, parameters: dict[str, Any]) -> Timed:
    """One streamed chat completion, timed as AIPerf times it: send, first content, end."""
    import httpx

    from runner.core.tls import tls_context

    words = int(parameters.get("prompt_input_tokens_mean") or 100)
    body = {
        "model": parameters.get("model") or "model",
        "messages": [{"role": "user", "content": " ".join(["word"] * words)}],
        "max_tokens": int(parameters.get("output_tokens_mean") or 100),
        "stream": True,
    } | extra_inputs(parameters.get("extra_inputs"))
    root = base.rstrip("/").removesuffix("/v1")
    sent = time.perf_counter()
    first, tokens = None, 0
    with httpx.stream("POST", f"{root}/v1/chat/completions", json=body, timeout=300, verify=tls_context()) as answer:
        if answer.status_code != 200:
            raise RuntimeError(f"the endpoint answered HTTP {answer.status_code}")
        for line in answer.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choices = json.loads(line[6:]).get("choices") or []
            if choices and (choices[0].get("delta") or {}).get("content"):
                tokens += 1
                first = first if first is not None else time.perf_counter()
    return Timed(sent, first, time.perf_counter(), tokens)


def profile(timed: list[Timed]) -> dict[str, Any]:
    """The requests summarized in AIPerf's names and units."""
    duration = max(t.end for t in timed) - min(t.sent for t in timed)
    latencies = [(t.end - t.sent) * 1000 for t in timed]
    ttfts = [(t.first - t.sent) * 1000 for t in timed if t.first is not None]
    itls = [(t.end - t.first) * 1000 / (t.tokens - 1) for t in timed if t.first is not None and t.tokens > 1]
    tokens = sum(t.tokens for t in timed)
    summary = {
        "request_throughput": {"unit": "requests/sec", "avg": len(timed) / duration},
        "request_latency": metric(latencies, "ms"),
        "request_count": {"unit": "requests", "avg": float(len(timed))},
        "output_token_throughput": {"unit": "tokens/sec", "avg": tokens / duration},
        "total_output_tokens": {"unit": "tokens", "avg": float(tokens)},
        "benchmark_duration": {"unit": "sec", "avg": duration},
    }
    if ttfts:
        summary["time_to_first_token"] = metric(ttfts, "ms")
    if itls:
        summary["inter_token_latency"] = metric(itls, "ms")
    return summary


def archive(summary: dict[str, Any]) -> bytes:
    data = json.dumps(summary).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("output/profile_export_aiperf.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def unreadable_secret(job: BenchmarkJob, secrets: dict[str, Any]) -> str | None:
    """The first of the document's secrets that Secrets Manager does not hold, named."""
    from moto.secretsmanager.models import secretsmanager_backends

    region, account = job.arn.split(":")[3:5]
    store = secretsmanager_backends[account][region]
    for key, secret in secrets.items():
        try:
            store.get_secret_value(secret_id=str(secret), version_id=None, version_stage=None)
        except Exception:
            return f"{secret} ({key})"
    return None


def run(emulator: Any, backend: Any, job: BenchmarkJob, config: WorkloadConfig, s3: Any, now: Callable) -> None:
    """The job: its requests sent for real, its summary written, its end set."""
    parameters = config.parameters

    def finish(status: str, reason: str = "") -> None:
        job.status, job.failure, job.ended = status, reason, now()

    endpoint_name = job.target["Endpoint"]["Identifier"].rsplit("/", 1)[-1]
    endpoint = backend.endpoints.get(endpoint_name)
    job.started = now()
    if endpoint is None or endpoint.endpoint_status != "InService":
        finish("Failed", f"ClientError: endpoint {endpoint_name} is not InService")
        return
    missing = unreadable_secret(job, config.secrets)
    if missing:
        finish("Failed", f"ClientError: cannot read the secret {missing}")
        return
    components = job.target["Endpoint"].get("InferenceComponents") or []
    served = components[0]["Identifier"].rsplit("/", 1)[-1] if components else endpoint_name
    base = emulator.model_servers.get(served) or emulator.model_servers.get(endpoint_name)
    if not base:
        finish("Failed", f"ClientError: no model server for {served} (set emulator.model_servers)")
        return
    count, concurrency = int(parameters.get("request_count") or 10), int(parameters.get("concurrency") or 1)
    timed: list[Timed] = []
    sent = iter(range(count))
    lock = threading.Lock()

    def worker() -> None:
        while not job.stopping.is_set():
            with lock:
                if next(sent, None) is None:
                    return
            timed.append(one_request(base, parameters))

    try:
        with ThreadPoolExecutor(concurrency) as pool:
            for future in [pool.submit(worker) for _ in range(concurrency)]:
                future.result()
    except Exception as error:
        finish("Failed", f"ClientError: a benchmark request failed: {error}")
        return
    if job.stopping.is_set():
        finish("Stopped")
        return
    bucket, _, prefix = job.output.removeprefix("s3://").partition("/")
    key = f"{prefix.rstrip('/')}/{job.folder}/output.tar.gz".lstrip("/")
    try:
        s3.put_object(bucket, key, archive(profile(timed)))
    except Exception as error:
        finish("Failed", f"ClientError: cannot write the results to {job.output}: {error}")
        return
    finish("Completed")


def install(emulator: Any) -> Callable[[], None]:
    from moto.core.responses import ActionResult
    from moto.core.utils import utcnow
    from moto.s3.models import s3_backends
    from moto.sagemaker.exceptions import ResourceInUseException, ResourceNotFound
    from moto.sagemaker.models import sagemaker_backends
    from moto.sagemaker.responses import SageMakerResponse

    def here(response) -> Any:
        return sagemaker_backends[response.current_account][response.region]

    def arn(response, kind: str, name: str) -> str:
        return f"arn:aws:sagemaker:{response.region}:{response.current_account}:{kind}/{name}"

    def create_ai_workload_config(response):
        configs, _ = state(here(response))
        name = response._get_param("AIWorkloadConfigName")
        if name in configs:
            raise ResourceInUseException(message=f"AI workload config {name} already exists.")
        inline = ((response._get_param("AIWorkloadConfigs") or {}).get("WorkloadSpec") or {}).get("Inline") or ""
        document = document_of(inline)
        config = WorkloadConfig(
            name,
            arn(response, "ai-workload-config", name),
            inline,
            section(document, "parameters"),
            utcnow(),
            section(document, "secrets"),
        )
        configs[name] = config
        return ActionResult({"AIWorkloadConfigArn": config.arn})

    def config_named(response, name: str) -> WorkloadConfig:
        configs, _ = state(here(response))
        config = configs.get(name.rsplit("/", 1)[-1])
        if config is None:
            raise ResourceNotFound(message=f"AI workload config {name} does not exist.")
        return config

    def describe_ai_workload_config(response):
        return ActionResult(config_named(response, response._get_param("AIWorkloadConfigName")).describe())

    def delete_ai_workload_config(response):
        configs, jobs = state(here(response))
        config = config_named(response, response._get_param("AIWorkloadConfigName"))
        if any(j.config.rsplit("/", 1)[-1] == config.name and j.status in ACTIVE for j in jobs.values()):
            raise ResourceInUseException(
                message=f"AI workload config {config.name} is used by an active benchmark job."
            )
        del configs[config.name]
        return ActionResult({"AIWorkloadConfigArn": config.arn})

    def create_ai_benchmark_job(response):
        backend = here(response)
        _, jobs = state(backend)
        name = response._get_param("AIBenchmarkJobName")
        if name in jobs:
            raise ResourceInUseException(message=f"AI benchmark job {name} already exists.")
        config = config_named(response, response._get_param("AIWorkloadConfigIdentifier"))
        target = response._get_param("BenchmarkTarget") or {}
        endpoint = ((target.get("Endpoint") or {}).get("Identifier") or "").rsplit("/", 1)[-1]
        if endpoint not in backend.endpoints:
            raise ResourceNotFound(message=f"Endpoint {endpoint} does not exist.")
        job = BenchmarkJob(
            name,
            arn(response, "ai-benchmark-job", name),
            target,
            (response._get_param("OutputConfig") or {}).get("S3OutputLocation", ""),
            response._get_param("AIWorkloadConfigIdentifier"),
            response._get_param("RoleArn"),
            utcnow(),
            folder=f"bmk-{FOLDERS - next(emulator.benchmark_folders):06d}",
        )
        jobs[name] = job
        s3 = s3_backends[response.current_account]["aws"]
        threading.Thread(
            target=run, args=(emulator, backend, job, config, s3, utcnow), daemon=True, name=f"bench-{name}"
        ).start()
        return ActionResult({"AIBenchmarkJobArn": job.arn})

    def job_named(response) -> BenchmarkJob:
        _, jobs = state(here(response))
        name = response._get_param("AIBenchmarkJobName")
        job = jobs.get(name)
        if job is None:
            raise ResourceNotFound(message=f"AI benchmark job {name} does not exist.")
        return job

    def describe_ai_benchmark_job(response):
        return ActionResult(job_named(response).describe())

    def stop_ai_benchmark_job(response):
        job = job_named(response)
        if job.status == "InProgress":
            job.status = "Stopping"
            job.stopping.set()
        emulator.stopped_benchmark_jobs.append(job.name)
        return ActionResult({"AIBenchmarkJobArn": job.arn})

    def delete_ai_benchmark_job(response):
        job = job_named(response)
        del state(here(response))[1][job.name]
        return ActionResult({"AIBenchmarkJobArn": job.arn})

    emulator.stopped_benchmark_jobs = []
    emulator.benchmark_folders = itertools.count()
    added = {
        "create_ai_workload_config": create_ai_workload_config,
        "describe_ai_workload_config": describe_ai_workload_config,
        "delete_ai_workload_config": delete_ai_workload_config,
        "create_ai_benchmark_job": create_ai_benchmark_job,
        "describe_ai_benchmark_job": describe_ai_benchmark_job,
        "stop_ai_benchmark_job": stop_ai_benchmark_job,
        "delete_ai_benchmark_job": delete_ai_benchmark_job,
    }
    for name, method in added.items():
        setattr(SageMakerResponse, name, method)

    def undo() -> None:
        for name in added:
            delattr(SageMakerResponse, name)

    return undo
