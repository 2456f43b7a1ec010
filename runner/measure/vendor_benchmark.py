"""AWS's own benchmark of a SageMaker endpoint beside ours (`bench --vendor-benchmark`, opt-in): the
same workload (prompt and output lengths, concurrency, requests) handed to SageMaker AI's
benchmarking service, its figures read back and set beside the runner's for the same endpoint,
the difference shown.

The API (botocore 1.44.8's sagemaker service model, the pinned one; SageMaker API reference,
CreateAIWorkloadConfig, CreateAIBenchmarkJob, DescribeAIBenchmarkJob, StopAIBenchmarkJob,
DeleteAIWorkloadConfig): a workload config holds the benchmark as an inline YAML or JSON document
(`AIWorkloadConfigs.WorkloadSpec.Inline`) that must declare `benchmark.type: aiperf` (CloudFormation
reference, AWS::SageMaker::AIWorkloadConfig WorkloadSpec); a benchmark job names the endpoint (and
its inference components), the config, an execution role and an S3 output location, and goes
InProgress, then Completed, Failed or Stopped. The document's parameters are not in the API
reference: `prompt_input_tokens_mean`/`_stddev` and `output_tokens_mean`/`_stddev` are the
developer guide's ("Set up a workload configuration for generative AI inference
recommendations"); `concurrency`, `request_count`, `streaming` and `tooling.api_standard` are
what AWS's public ml-container-creator sends (templates/do/benchmark). The results are NVIDIA
AIPerf's: under the output location, in a folder of the job's, an `output.tar.gz` holding
`profile_export_aiperf.json` (each metric `{unit, avg, p50, p90, p99, ...}`, latencies in ms), as
that tool downloads and reads them; only a real account confirms the folder's name. The location
is shared by every job and run, so the runner lists it (page by page) before the job and reads
only what is new or changed after it; more than one such result is one line, never a guess.

A fault is one line. A job that the budget or Ctrl-C leaves running is stopped (StopAIBenchmarkJob)
before the line, so nothing runs that the run did not say; the workload config is deleted once the
job is over (the job's record stays, as AWS keeps it).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from runner.core.errors import RunnerError, describe
from runner.core.records import RequestRecord
from runner.core.typed_json import FlatJson, JsonObject, where_set
from runner.core.waits import doubling_waits
from runner.figures.latency import Distribution
from runner.figures.levels import LevelSummary, level_groups, level_summary

if TYPE_CHECKING:
    from runner.core.backends import Backend

RESULTS_FILE = "profile_export_aiperf.json"
RESULTS_ARCHIVE = "output.tar.gz"
TERMINAL = ("Completed", "Failed", "Stopped")
# Seconds to a unit of AIPerf's profile (its latencies are in ms).
UNIT_SECONDS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "ns": 1e-9, "us": 1e-6}


@dataclass(frozen=True)
class VendorWorkload(FlatJson):
    """What the service is asked to send: the runner's own workload at one level."""

    input_tokens: int
    output_tokens: int
    concurrency: int
    requests: int
    # The tokenizer AIPerf counts and makes prompts with (a Hugging Face model id).
    tokenizer: str | None = None
    # Whether the runner forced its output length at the level (timing/chat.py: `ignore_eos` and
    # `min_tokens`); AIPerf's `output_tokens_mean` is only a maximum, so the job is told the same.
    forced: bool = False

    def spec(self, hf_secret: str | None = None) -> str:
        """The inline document (JSON, which the field takes as it takes YAML). A forced length goes
        as AIPerf's extra inputs, space-separated `name:value` pairs added to every request's body
        (AWS's sagemaker-python-sdk Workload writes `extra_inputs` so; AIPerf reads `true` and
        numbers as such). A gated tokenizer's Hugging Face token goes as a Secrets Manager
        secret's ARN under the top-level `secrets` (`hf_token`), as that SDK sends it; the job's
        role must be allowed secretsmanager:GetSecretValue on it."""
        parameters: JsonObject = {
            "prompt_input_tokens_mean": self.input_tokens,
            "prompt_input_tokens_stddev": 0,
            "output_tokens_mean": self.output_tokens,
            "output_tokens_stddev": 0,
            "concurrency": self.concurrency,
            "request_count": self.requests,
            "streaming": True,
        }
        if self.tokenizer:
            parameters["tokenizer"] = self.tokenizer
        if self.forced:
            parameters["extra_inputs"] = f"ignore_eos:true min_tokens:{self.output_tokens}"
        document: JsonObject = {
            "benchmark": {"type": "aiperf"},
            "parameters": parameters,
            "tooling": {"api_standard": "openai"},
        }
        if hf_secret:
            document["secrets"] = {"hf_token": hf_secret}
        return json.dumps(document)


@dataclass(frozen=True)
class VendorFigures(FlatJson):
    """AIPerf's summary as the runner keeps it: seconds, requests and tokens a second."""

    requests: int | None
    request_throughput: float | None
    output_tok_s: float | None
    ttft_s: Distribution
    itl_s: Distribution
    e2e_s: Distribution

    @classmethod
    def from_profile(cls, profile: JsonObject, where: str) -> VendorFigures:
        """The figures of a `profile_export_aiperf.json`; a metric it lacks is None, one in a unit
        not known here is refused in one line, and so is a profile with neither a request count
        nor a first token at its top level (another AIPerf's layout, read as a row of blanks)."""
        if not {"request_count", "time_to_first_token"} & profile.keys():
            raise RunnerError(
                f"{where}: AIPerf's profile holds none of the figures the runner reads (no request_count or "
                "time_to_first_token at its top level)"
            )

        def metric(name: str, stat: str) -> float | None:
            entry = profile.get(name)
            if not isinstance(entry, dict) or not isinstance(entry.get(stat), int | float):
                return None
            unit = str(entry.get("unit") or "")
            value = float(entry[stat])
            if name in ("request_throughput", "output_token_throughput", "request_count"):
                return value
            if unit not in UNIT_SECONDS:
                raise RunnerError(f"{where}: {name} in {unit!r}, not a unit of time this runner reads")
            return value * UNIT_SECONDS[unit]

        def spread(name: str) -> Distribution:
            return Distribution(*(metric(name, stat) for stat in ("avg", "p50", "p90", "p99")))

        count = metric("request_count", "avg")
        return cls(
            requests=None if count is None else int(count),
            request_throughput=metric("request_throughput", "avg"),
            output_tok_s=metric("output_token_throughput", "avg"),
            ttft_s=spread("time_to_first_token"),
            itl_s=spread("inter_token_latency"),
            e2e_s=spread("request_latency"),
        )


@dataclass(frozen=True)
class Difference(FlatJson):
    """One figure, ours and AWS's for the same endpoint and workload, and how far apart."""

    figure: str
    runner: float | None
    vendor: float | None
    # vendor - runner, and that over the runner's (None where either is missing).
    difference: float | None
    relative: float | None


@dataclass
class VendorBenchmark(FlatJson):
    """One benchmark job on one backend's endpoint: what it was asked, how it ended, where its
    results are, AWS's figures, and ours beside them. Each only where it was set."""

    backend: str
    endpoint: str
    job_name: str
    workload_config: str
    workload: VendorWorkload
    status: str
    component: str | None = where_set()
    output_location: str | None = where_set()
    failure_reason: str | None = where_set()
    results: str | None = where_set()
    figures: VendorFigures | None = where_set()
    beside: list[Difference] | None = where_set()
    started_at: str | None = where_set()
    ended_at: str | None = where_set()


@dataclass(frozen=True)
class Target:
    """The endpoint (and its inference component) a job benchmarks, and where its results go."""

    backend: str
    endpoint: str
    component: str | None
    role_arn: str
    output_location: str
    # A Secrets Manager secret holding a Hugging Face token, for a gated tokenizer.
    hf_secret: str | None = None


@dataclass
class Pacing:
    """How the job is watched: a look after `first_poll_s`, each wait twice the last up to
    `poll_s`, for at most `budget_s` (a job takes minutes; its first looks cost nothing)."""

    first_poll_s: float = 1.0
    poll_s: float = 30.0
    budget_s: float = 3600.0
    sleep: Callable[[float], None] = field(default=time.sleep)
    clock: Callable[[], float] = field(default=time.monotonic)


def name_stamp(when: datetime | None = None) -> str:
    """The date and second (UTC) in a job's name: names are unique per account and Region, and
    job records stay, so the time of day alone would meet yesterday's job of the same second."""
    return (when or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")


def job_name(backend: str, stamp: str) -> str:
    """A name the API takes (`[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`): the backend's and a stamp (with
    the level); past 63 characters the backend's part is cut, never the stamp."""

    def cleaned(text: str) -> str:
        return re.sub(r"[^a-zA-Z0-9]+", "-", text).strip("-")

    tail = cleaned(stamp)[:62]
    head = cleaned(f"inference-{backend}")[: 62 - len(tail)].rstrip("-")
    return f"{head}-{tail}" if head else tail


def parse_option(text: str, hf_secret: str | None = None) -> tuple[str, str, str | None]:
    """`--vendor-benchmark ROLE_ARN,s3://BUCKET/PREFIX/` (the role the service runs as and where
    it writes) and `--vendor-benchmark-hf-secret ARN` (a Secrets Manager secret, optional); bad
    input is one line."""
    role, _, output = text.partition(",")
    if not re.fullmatch(r"arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-/]+", role.strip()):
        raise RunnerError(
            f"--vendor-benchmark {text!r}: expected ROLE_ARN,s3://BUCKET/PREFIX/ (an IAM role's ARN first)"
        )
    if not re.fullmatch(r"s3://[^/]+/?.*", output.strip()):
        raise RunnerError(f"--vendor-benchmark {text!r}: expected ROLE_ARN,s3://BUCKET/PREFIX/ (an S3 URI second)")
    if hf_secret is not None and not re.fullmatch(
        r"arn:aws[a-z\-]*:secretsmanager:[a-z0-9\-]+:\d{12}:secret:[a-zA-Z0-9/_+=.@\-]+", hf_secret
    ):
        raise RunnerError(
            f"--vendor-benchmark-hf-secret {hf_secret!r}: expected a Secrets Manager secret's ARN "
            "(arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME), the secret holding the Hugging Face token"
        )
    return role.strip(), output.strip(), hf_secret


def run_job(
    sagemaker: Any,
    s3: Any,
    target: Target,
    workload: VendorWorkload,
    name: str,
    pacing: Pacing,
    say: Callable[[str], None],
) -> VendorBenchmark:
    """Create the config and the job, watch it to its end, read its figures; the job stopped and
    the config deleted on the way out whatever happened (a config that cannot go yet is a line
    through `say`)."""
    job = VendorBenchmark(target.backend, target.endpoint, name, name, workload, "NotStarted", target.component)
    try:
        before = listing(s3, target.output_location)
    except Exception as error:
        raise RunnerError(
            f"vendor benchmark of {target.backend}: listing {target.output_location}: {describe(error)}"
        ) from None
    try:
        sagemaker.create_ai_workload_config(
            AIWorkloadConfigName=name,
            AIWorkloadConfigs={"WorkloadSpec": {"Inline": workload.spec(target.hf_secret)}},
        )
    except Exception as error:
        raise RunnerError(f"vendor benchmark of {target.backend}: CreateAIWorkloadConfig: {describe(error)}") from None
    try:
        endpoint: JsonObject = {"Identifier": target.endpoint}
        if target.component:
            endpoint["InferenceComponents"] = [{"Identifier": target.component}]
        try:
            sagemaker.create_ai_benchmark_job(
                AIBenchmarkJobName=name,
                BenchmarkTarget={"Endpoint": endpoint},
                OutputConfig={"S3OutputLocation": target.output_location},
                AIWorkloadConfigIdentifier=name,
                RoleArn=target.role_arn,
            )
        except Exception as error:
            raise RunnerError(
                f"vendor benchmark of {target.backend}: CreateAIBenchmarkJob: {describe(error)}"
            ) from None
        job = watch(sagemaker, job, pacing)
        if job.status == "Completed":
            job = read_results(s3, job, before)
        return job
    finally:
        left = delete_config(sagemaker, name)
        if left:
            say(left)


def delete_config(sagemaker: Any, name: str) -> str | None:
    """The job's workload config deleted; where it cannot be (a stopped job is Stopping for a
    while, and its config is in use until it ends), the line that says it is left and how to
    delete it later. A config bills nothing, so it does not hold the run up."""
    try:
        sagemaker.delete_ai_workload_config(AIWorkloadConfigName=name)
        return None
    except Exception as error:
        code = getattr(error, "response", {}).get("Error", {}).get("Code")
        if code == "ResourceNotFound":
            return None
        why = (
            f"ResourceInUse, the job still {job_status(sagemaker, name)}"
            if code == "ResourceInUse"
            else describe(error)
        )
        region = getattr(getattr(sagemaker, "meta", None), "region_name", None)
        command = f"aws sagemaker delete-ai-workload-config --ai-workload-config-name {name}" + (
            f" --region {region}" if region else ""
        )
        return (
            f"vendor benchmark job {name}: its workload config {name} is left (DeleteAIWorkloadConfig: {why}); "
            f"delete it once the job has stopped: {command}"
        )


def job_status(sagemaker: Any, name: str) -> str:
    """The job's status as AWS has it now ("not over" where it cannot be read)."""
    try:
        return str(sagemaker.describe_ai_benchmark_job(AIBenchmarkJobName=name)["AIBenchmarkJobStatus"])
    except Exception:
        return "not over"


def watch(sagemaker: Any, job: VendorBenchmark, pacing: Pacing) -> VendorBenchmark:
    """The job looked at until it ends; past the budget, or on Ctrl-C, stopped and said."""
    started = pacing.clock()
    waits = doubling_waits(pacing.first_poll_s, pacing.poll_s)
    try:
        while True:
            described = sagemaker.describe_ai_benchmark_job(AIBenchmarkJobName=job.job_name)
            status = described["AIBenchmarkJobStatus"]
            job = replace(
                job,
                status=status,
                output_location=described.get("OutputConfig", {}).get("S3OutputLocation"),
                failure_reason=described.get("FailureReason") or None,
                started_at=_iso(described.get("StartTime")),
                ended_at=_iso(described.get("EndTime")),
            )
            if status in TERMINAL:
                return job
            if pacing.clock() - started > pacing.budget_s:
                stop(sagemaker, job.job_name)
                raise RunnerError(
                    f"vendor benchmark job {job.job_name}: still {status} after {pacing.budget_s:g} s: stopped "
                    "(StopAIBenchmarkJob)"
                )
            pacing.sleep(next(waits))
    except KeyboardInterrupt:
        stop(sagemaker, job.job_name)
        raise


def stop(sagemaker: Any, name: str) -> None:
    """Stop a job; one already over refuses, and nothing is left running then."""
    with contextlib.suppress(Exception):
        sagemaker.stop_ai_benchmark_job(AIBenchmarkJobName=name)


def _iso(value: object) -> str | None:
    return value.isoformat() if hasattr(value, "isoformat") else None  # type: ignore[union-attr]


def split_s3(uri: str) -> tuple[str, str]:
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    return bucket, prefix


def listing(s3: Any, location: str) -> dict[str, object]:
    """Every key under an S3 location with its LastModified, page by page (a page holds 1000)."""
    bucket, prefix = split_s3(location)
    return {
        item["Key"]: item.get("LastModified")
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for item in page.get("Contents") or []
    }


def read_results(s3: Any, job: VendorBenchmark, before: dict[str, object]) -> VendorBenchmark:
    """AIPerf's summary under the job's output location, among the keys new or changed since
    `before` (the listing taken before the job): the file itself, or inside the archive."""
    assert job.output_location is not None
    bucket, _ = split_s3(job.output_location)
    where = f"vendor benchmark job {job.job_name}"
    try:
        keys = [k for k, modified in listing(s3, job.output_location).items() if before.get(k, ...) != modified]
        plain = [k for k in keys if k.endswith(RESULTS_FILE)]
        found = plain or [k for k in keys if k.endswith(RESULTS_ARCHIVE)]
        if not found:
            raise RunnerError(
                f"{where}: no {RESULTS_FILE} or {RESULTS_ARCHIVE} new under {job.output_location} since the job "
                "was created"
            )
        if len(found) > 1:
            named = ", ".join(f"s3://{bucket}/{k}" for k in found[:3]) + (", ..." if len(found) > 3 else "")
            raise RunnerError(
                f"{where}: {len(found)} results new under {job.output_location} since the job was created "
                f"({named}): not guessing which is its own"
            )
        (key,) = found
        text = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        if not plain:
            text = from_archive(text, f"{where}: s3://{bucket}/{key}")
    except RunnerError:
        raise
    except Exception as error:
        raise RunnerError(f"{where}: reading its results: {describe(error)}") from None
    try:
        profile = json.loads(text)
    except ValueError:
        raise RunnerError(f"{where}: s3://{bucket}/{key} is not JSON") from None
    if not isinstance(profile, dict):
        raise RunnerError(f"{where}: s3://{bucket}/{key} is not a JSON object")
    return replace(job, results=f"s3://{bucket}/{key}", figures=VendorFigures.from_profile(profile, where))


def from_archive(data: bytes, where: str) -> bytes:
    """The summary's bytes from the archive, read in memory (nothing unpacked to disk)."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            member = next((m for m in archive.getmembers() if m.isfile() and m.name.endswith(RESULTS_FILE)), None)
            if member is None:
                raise RunnerError(f"{where}: no {RESULTS_FILE} in it")
            extracted = archive.extractfile(member)
            assert extracted is not None
            return extracted.read()
    except tarfile.TarError as error:
        raise RunnerError(f"{where}: not a gzip'd tar ({error})") from None


def _difference(figure: str, runner: float | None, vendor: float | None) -> Difference:
    if runner is None or vendor is None:
        return Difference(figure, runner, vendor, None, None)
    return Difference(figure, runner, vendor, vendor - runner, (vendor - runner) / runner if runner else None)


def beside(ours: LevelSummary, theirs: VendorFigures) -> list[Difference]:
    """Ours and AWS's figures for the same endpoint and workload, figure by figure."""
    pairs = [
        ("requests/s", ours.request_throughput, theirs.request_throughput),
        ("output tok/s", ours.output_tok_s, theirs.output_tok_s),
        ("TTFT median s", ours.ttft_s.median, theirs.ttft_s.median),
        ("TTFT p99 s", ours.ttft_s.p99, theirs.ttft_s.p99),
        ("ITL mean s", ours.itl_s.mean, theirs.itl_s.mean),
        ("end-to-end median s", ours.e2e_s.median, theirs.e2e_s.median),
        ("end-to-end p99 s", ours.e2e_s.p99, theirs.e2e_s.p99),
    ]
    return [_difference(*pair) for pair in pairs]


def benchmark_levels(
    backend: Backend,
    records: list[RequestRecord],
    output_tokens: int | None,
    option: tuple[str, str, str | None],
    stamp: str,
    notes: list[str],
    pacing: Pacing | None = None,
) -> list[VendorBenchmark]:
    """`bench --vendor-benchmark`: one job per closed-loop level the bench ran on this backend's
    SageMaker endpoint, at the level's lengths, concurrency and requests, each beside the level's
    own figures; what was not benchmarked, a job that could not run and a config left behind are
    lines added to `notes` as they come (kept through Ctrl-C; the bench's figures stand either way)."""
    from runner.cloud.aws import boto_client

    output = backend.output
    endpoint = output.endpoint_name if output else None
    if not endpoint:
        notes.append(f"--vendor-benchmark: {backend.name} is not a SageMaker endpoint; AWS's benchmark targets one")
        return []
    region = backend.region or (output.region if output else None) or ""
    sagemaker, s3 = boto_client("sagemaker", region, 60), boto_client("s3", region, 60)
    component = getattr(output, "inference_component_name", None)
    target = Target(backend.name, endpoint, component, *option)
    jobs = []
    for (_, label), group in level_groups([r for r in records if r.backend == backend.name]).items():
        level = group[0].level
        if level is None or level.mode != "concurrency" or level.stopped_after is not None:
            notes.append(f"--vendor-benchmark: {backend.name} {label}: AWS's job takes a concurrency, not this level")
            continue
        done = [r for r in group if r.ok]
        prompts = [r.prompt_tokens for r in done if r.prompt_tokens]
        outputs = [r.output_tokens for r in done if r.output_tokens]
        workload = VendorWorkload(
            input_tokens=level.input_tokens or (round(sum(prompts) / len(prompts)) if prompts else 1),
            output_tokens=output_tokens or (round(sum(outputs) / len(outputs)) if outputs else 1),
            concurrency=int(level.value),
            requests=level.requests or len(group),
            tokenizer=backend.model_id,
            forced=any(r.forced_length for r in group),
        )
        left: list[str] = []
        try:
            name = job_name(backend.name, f"{stamp}-{label}")
            job = run_job(sagemaker, s3, target, workload, name, pacing or Pacing(), left.append)
        except RunnerError as error:
            notes.append(str(error))
            continue
        finally:
            notes.extend(left)
        if job.figures is not None:
            job = replace(job, beside=beside(level_summary(group), job.figures))
        elif job.status != "Completed":
            notes.append(
                f"vendor benchmark job {job.job_name}: {job.status}: {job.failure_reason or 'no reason given'}"
            )
        jobs.append(job)
    return jobs
