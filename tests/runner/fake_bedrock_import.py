"""Bedrock Custom Model Import on loopback, in the real API's shapes, for what moto cannot do.

Gaps of moto 5.2.5 this fills, each in AWS's shapes as botocore's service models give them
(`bedrock` 2023-04-20, `bedrock-runtime` 2023-09-30):

- moto's `bedrock` has no import APIs at all (custom models, customization jobs, logging and tags
  only): `FakeBedrockImport` serves CreateModelImportJob (201), GetModelImportJob (InProgress for
  `polls_to_complete` reads, then Completed, or Failed with its failureMessage), GetImportedModel
  (by name or ARN, with customModelUnits), ListImportedModels, ListModelImportJobs (statusEquals),
  DeleteImportedModel and ListTagsForResource, errors with AWS's codes and statuses:
  ValidationException 400, ConflictException 400, ResourceNotFoundException 404;
- moto's `bedrock-runtime` InvokeModel returns `{}` and it has no InvokeModelWithResponseStream:
  the same server answers it, first with ModelNotReadyException (HTTP 429, as botocore's model
  types it) `not_ready` times after every wake-up (the model scaling from zero), then with an event
  stream of `chunk` events (AWS's binary framing from `fake_aws_stream`) whose bytes are OpenAI
  chat-completion chunks, the last one carrying `amazon-bedrock-invocationMetrics`;
- moto's CodeBuild records builds and reports SUCCEEDED on the first BatchGetBuilds, but runs
  nothing: `weights_copy` puts in the bucket, when a build starts, the files the real job copies
  from the Hugging Face hub (or makes the build FAILED with a phase context, as CodeBuild reports it).

S3 and CodeBuild themselves are moto's, in process (`moto.mock_aws`); both Bedrock services are
pointed here with `AWS_ENDPOINT_URL_BEDROCK` and `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`.

Not emulated: the import's own checks of the weights (file names, sizes, dtype), the role's trust
and S3 permissions, quotas, real scale-to-zero timings, the response chunks' exact fields (AWS's
page documents the OpenAIChatCompletion request, not the streamed chunk: these are OpenAI's).
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from tests.runner.fake_aws_stream import event
from tests.runner.loopback import LoopbackServer, QuietHandler

ACCOUNT = "123456789012"
# Qwen/Qwen2.5-1.5B-Instruct's config.json, as far as the import reads it.
QWEN_CONFIG = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "torch_dtype": "bfloat16"}
ANSWER = ["The ocean", " covers most", " of the Earth", " and holds", " most of its water."]


class AwsError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class FakeBedrockImport(LoopbackServer):
    """Both Bedrock services. Knobs: `polls_to_complete`, `fail_next` (a failureMessage for the next
    job), `not_ready` (ModelNotReadyException answers after each wake-up), `cmus`, `answer`; state:
    `models` by name, `jobs` by ARN, `tags` by ARN, `calls` (operation names), `invocations`."""

    def __init__(self, region: str = "us-east-1") -> None:
        self.region = region
        self.polls_to_complete = 1
        self.fail_next: str | None = None
        self.not_ready = 1
        self.cmus = 1
        self.answer = list(ANSWER)
        self.models: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.tags: dict[str, list[dict[str, str]]] = {}
        self.calls: list[str] = []
        self.invocations: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                self.reply("GET")

            def do_POST(self) -> None:
                self.reply("POST")

            def do_DELETE(self) -> None:
                self.reply("DELETE")

            def reply(self, method: str) -> None:
                raw = self.read_body()
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                try:
                    with server.lock:
                        status, reply = server.route(method, url.path, query, raw)
                except AwsError as error:
                    data = json.dumps({"message": error.message}).encode()
                    headers = {"x-amzn-errortype": error.code, "content-type": "application/json"}
                    self.send_body(error.status, data, headers)
                    return
                if isinstance(reply, bytes):
                    self.send_body(status, reply, {"content-type": "application/vnd.amazon.eventstream"})
                else:
                    self.send_body(status, json.dumps(reply).encode(), {"content-type": "application/json"})

        super().__init__(Handler)

    # What a test sets up, as AWS would hold it.
    def add_model(self, name: str, *, ours: bool, architecture: str = "Qwen2ForCausalLM") -> dict[str, Any]:
        arn = f"arn:aws:bedrock:{self.region}:{ACCOUNT}:imported-model/{uuid.uuid4().hex[:12]}"
        model = {
            "modelArn": arn,
            "modelName": name,
            "jobName": f"{name}-job",
            "jobArn": f"arn:aws:bedrock:{self.region}:{ACCOUNT}:model-import-job/{uuid.uuid4().hex[:12]}",
            "creationTime": time.time(),
            "modelArchitecture": architecture,
            "instructSupported": True,
            "customModelUnits": {"customModelUnitsPerModelCopy": self.cmus, "customModelUnitsVersion": "1.0"},
            "ready": False,
            "refusals": 0,
        }
        self.models[name] = model
        self.tags[arn] = [{"key": "app", "value": "inference-survey"}] if ours else [{"key": "team", "value": "other"}]
        return model

    def add_running_job(self, model_name: str, *, ours: bool) -> dict[str, Any]:
        job = self._new_job(f"{model_name}-running", model_name, "arn:aws:iam::123456789012:role/x", "s3://b/p/")
        self.tags[job["jobArn"]] = [{"key": "app", "value": "inference-survey"}] if ours else []
        job["polls"] = -(10**9)  # stays InProgress
        return job

    def scale_to_zero(self) -> None:
        """Every model is idle again: the next invocation meets ModelNotReadyException first."""
        for model in self.models.values():
            model["ready"], model["refusals"] = False, 0

    # The API.
    def route(self, method: str, path: str, query: dict[str, str], raw: bytes) -> tuple[int, Any]:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        body = json.loads(raw) if raw else {}
        if method == "POST" and parts == ["model-import-jobs"]:
            return 201, self.create_job(body)
        if method == "GET" and parts == ["model-import-jobs"]:
            return 200, self.list_jobs(query)
        if method == "GET" and len(parts) == 2 and parts[0] == "model-import-jobs":
            return 200, self.get_job(parts[1])
        if method == "GET" and parts == ["imported-models"]:
            self.calls.append("ListImportedModels")
            summaries = [self._summary(m) for m in self.models.values()]
            return 200, {"modelSummaries": summaries}
        if len(parts) == 2 and parts[0] == "imported-models":
            model = self._model(parts[1])
            if method == "GET":
                self.calls.append("GetImportedModel")
                return 200, {k: v for k, v in model.items() if k not in ("ready", "refusals")}
            if method == "DELETE":
                self.calls.append("DeleteImportedModel")
                del self.models[model["modelName"]]
                self.tags.pop(model["modelArn"], None)
                return 200, {}
        if method == "POST" and parts == ["listTagsForResource"]:
            self.calls.append("ListTagsForResource")
            arn = body.get("resourceARN", "")
            if arn not in self.tags:
                raise AwsError(404, "ResourceNotFoundException", f"The resource {arn} was not found.")
            return 200, {"tags": self.tags[arn]}
        if method == "POST" and len(parts) == 3 and parts[0] == "model" and parts[2] == "invoke-with-response-stream":
            return self.invoke(parts[1], body)
        raise AwsError(400, "ValidationException", f"no such operation: {method} {path}")

    def create_job(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("CreateModelImportJob")
        for field in ("jobName", "importedModelName", "roleArn", "modelDataSource"):
            if not body.get(field):
                raise AwsError(400, "ValidationException", f"1 validation error detected: {field} must not be null")
        uri = body["modelDataSource"].get("s3DataSource", {}).get("s3Uri", "")
        if not uri.startswith("s3://"):
            raise AwsError(400, "ValidationException", f"Invalid S3 URI: {uri}")
        name = body["importedModelName"]
        if name in self.models or any(
            j["importedModelName"] == name and j["status"] == "InProgress" for j in self.jobs.values()
        ):
            raise AwsError(400, "ConflictException", f"A model with the name {name} already exists.")
        job = self._new_job(body["jobName"], name, body["roleArn"], uri)
        job["modelTags"] = body.get("importedModelTags", [])
        self.tags[job["jobArn"]] = body.get("jobTags", [])
        if self.fail_next is not None:
            job["failure"], self.fail_next = self.fail_next, None
        return {"jobArn": job["jobArn"]}

    def _new_job(self, job_name: str, model_name: str, role: str, uri: str) -> dict[str, Any]:
        arn = f"arn:aws:bedrock:{self.region}:{ACCOUNT}:model-import-job/{uuid.uuid4().hex[:12]}"
        job = {
            "jobArn": arn,
            "jobName": job_name,
            "importedModelName": model_name,
            "roleArn": role,
            "modelDataSource": {"s3DataSource": {"s3Uri": uri}},
            "status": "InProgress",
            "creationTime": time.time(),
            "lastModifiedTime": time.time(),
            "polls": 0,
        }
        self.jobs[arn] = job
        return job

    def get_job(self, identifier: str) -> dict[str, Any]:
        self.calls.append("GetModelImportJob")
        job = next((j for j in self.jobs.values() if identifier in (j["jobArn"], j["jobName"])), None)
        if job is None:
            raise AwsError(404, "ResourceNotFoundException", f"The model import job {identifier} was not found.")
        job["polls"] += 1
        if job["status"] == "InProgress" and job["polls"] > self.polls_to_complete:
            job["endTime"] = job["lastModifiedTime"] = time.time()
            if job.get("failure"):
                job["status"], job["failureMessage"] = "Failed", job["failure"]
            else:
                model = self.add_model(job["importedModelName"], ours=False)
                model.update(jobName=job["jobName"], jobArn=job["jobArn"], modelDataSource=job["modelDataSource"])
                self.tags[model["modelArn"]] = job.get("modelTags", [])
                job["status"], job["importedModelArn"] = "Completed", model["modelArn"]
        fields = ("jobArn", "jobName", "importedModelName", "importedModelArn", "roleArn", "modelDataSource")
        fields += ("status", "failureMessage", "creationTime", "lastModifiedTime", "endTime")
        return {k: job[k] for k in fields if k in job}

    def list_jobs(self, query: dict[str, str]) -> dict[str, Any]:
        self.calls.append("ListModelImportJobs")
        wanted = query.get("statusEquals")
        summaries = [
            {k: j[k] for k in ("jobArn", "jobName", "status", "creationTime", "importedModelName") if k in j}
            for j in self.jobs.values()
            if wanted is None or j["status"] == wanted
        ]
        return {"modelImportJobSummaries": summaries}

    def invoke(self, model_id: str, body: dict[str, Any]) -> tuple[int, bytes]:
        self.calls.append("InvokeModelWithResponseStream")
        model = next((m for m in self.models.values() if model_id in (m["modelArn"], m["modelName"])), None)
        if model is None:
            raise AwsError(400, "ValidationException", "The provided model identifier is invalid.")
        self.invocations.append(body)
        if not model["ready"]:
            if model["refusals"] < self.not_ready:
                model["refusals"] += 1
                raise AwsError(429, "ModelNotReadyException", "Model is not ready for inference. Try again later.")
            model["ready"] = True
        pieces = self.answer[: max(1, int(body.get("max_tokens", len(self.answer))))]
        finish = "length" if len(pieces) < len(self.answer) else "stop"
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time())}
        chunks = [base | {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}]
        chunks += [base | {"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
        metrics = {
            "inputTokenCount": 12,
            "outputTokenCount": len(pieces),
            "invocationLatency": 40,
            "firstByteLatency": 9,
        }
        chunks.append(
            base
            | {
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                "amazon-bedrock-invocationMetrics": metrics,
            }
        )
        frames = [event("chunk", {"bytes": base64.b64encode(json.dumps(c).encode()).decode()}) for c in chunks]
        return 200, b"".join(frames)

    def _model(self, identifier: str) -> dict[str, Any]:
        model = next((m for m in self.models.values() if identifier in (m["modelArn"], m["modelName"])), None)
        if model is None:
            raise AwsError(404, "ResourceNotFoundException", f"The imported model {identifier} was not found.")
        return model

    def _summary(self, model: dict[str, Any]) -> dict[str, Any]:
        keys = ("modelArn", "modelName", "creationTime", "instructSupported", "modelArchitecture")
        return {k: model[k] for k in keys}

    def env(self) -> dict[str, str]:
        """Point both Bedrock services of every boto3 client here."""
        return {"AWS_ENDPOINT_URL_BEDROCK": self.url, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": self.url}


def weights_copy(monkeypatch: Any, bucket: str, prefix: str, files: dict[str, bytes], *, fail: str | None = None):
    """moto's CodeBuild, as the weights job behaves: StartBuild puts `files` under
    `s3://bucket/prefix`; with `fail`, nothing is copied and the build ends FAILED in its BUILD
    phase with `fail` as the phase context's message. Returns the list of started builds."""
    import boto3
    from moto.codebuild.models import CodeBuildBackend

    started: list[str] = []
    original_start = CodeBuildBackend.start_build
    original_get = CodeBuildBackend.batch_get_builds

    def start_build(backend, project_name, *args, **kwargs):
        build = original_start(backend, project_name, *args, **kwargs)
        started.append(build["id"])
        if fail is None:
            s3 = boto3.client("s3", region_name=backend.region_name)
            for name, data in files.items():
                s3.put_object(Bucket=bucket, Key=f"{prefix.strip('/')}/{name}", Body=data)
            s3.put_object(Bucket=bucket, Key=f"{prefix.strip('/')}.complete", Body=b"copied")  # the job's last step
        return build

    def batch_get_builds(backend, ids):
        builds = original_get(backend, ids)
        for build in builds if fail is not None else []:
            build["buildStatus"] = "FAILED"
            for phase in build["phases"]:
                if phase["phaseType"] == "BUILD":
                    phase["phaseStatus"] = "FAILED"
                    phase["contexts"] = [{"statusCode": "COMMAND_EXECUTION_ERROR", "message": fail}]
        return builds

    monkeypatch.setattr(CodeBuildBackend, "start_build", start_build)
    monkeypatch.setattr(CodeBuildBackend, "batch_get_builds", batch_get_builds)
    return started


def qwen_files(config: dict[str, Any] | None = None) -> dict[str, bytes]:
    """What the weights job copies, in miniature: config.json, the safetensors file, the tokenizer."""
    return {
        "config.json": json.dumps(config or QWEN_CONFIG).encode(),
        "model.safetensors": b"\0" * 64,
        "tokenizer.json": b"{}",
        "tokenizer_config.json": b"{}",
    }
