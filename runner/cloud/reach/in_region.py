"""The bench from inside the region (`runner.bench --in-region`): the same benchmark (one request
at a time, or the same load levels) run on each EC2 server's own instance against its loopback
port, through SSM Run Command, so the difference from the row measured through the SSM tunnel is
the path.

Per server: its readiness parameter names the instance (the group picks it at run time) and must
say `ready`; one `AWS-RunShellScript` command (`commands` and `executionTimeout`, as the document
declares them) fetches the stack's kit (`inference_constructs/bench_kit`, stdlib only: its
docstring says why), runs it with the host's `python3` and copies its result into the stack's
evidence bucket under `<evidence_prefix><run>/`, because Run Command's inline output is cut at
about 24 KB (24,000 characters of standard output, 8,000 of standard error). Every server's
command is sent before any is waited for (each runs on its own instance). The runner reads each
result back and deletes the run's objects (they now live in its evidence; a run that was
interrupted is expired by the bucket's lifecycle rule). Ctrl-C cancels the commands still running.

What it cannot do: SageMaker's endpoint has no shell, and Bedrock is a regional API with no host
of ours; a client "in the region" for those would be another instance or a Lambda there, which
the app does not deploy (`no_instance_reason`). The embedded model and an `--endpoint` server are
not instances of the app either.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import secrets
import shlex
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from catalog import BackendKind
from catalog.serving import serving
from runner.cloud.aws import boto_client
from runner.cloud.readiness import read_readiness
from runner.core.backends import Backend
from runner.core.errors import RunnerError, aws_error_code, describe
from runner.core.typed_json import FlatJson, JsonObject, read_fields

DOCUMENT = "AWS-RunShellScript"
# SendCommand's TimeoutSeconds: how long the command may wait for the instance's agent to take it.
DELIVERY_TIMEOUT_S = 120
# The document's executionTimeout bounds (seconds).
EXECUTION_TIMEOUT_MIN_S = 120
EXECUTION_TIMEOUT_MAX_S = 172800
# GetCommandInvocation's Status values that end a command (the others: Pending, InProgress,
# Delayed, Cancelling).
FINAL_STATES = frozenset({"Success", "Failed", "Cancelled", "TimedOut"})
RESULT_FILE = "result.json"
# A workload's request bodies (more than SendCommand's parameters carry), gzipped JSON put beside
# the result; the only object of the folder the instance's role may read.
REQUESTS_FILE = "requests.json.gz"
# What the commands print when that object cannot be read (an instance role from before workloads
# in the region has no s3:GetObject on it), and exit with.
NO_REQUESTS = "bench kit: the run's requests could not be read"
NO_REQUESTS_EXIT = 3
# The suffix of the bench table's second row of each server: measured on the server's own host.
ROW_SUFFIX = "@host"
REDEPLOY = "redeploy its stack (python -m runner.up)"
# Seconds the upload of a workload's bodies may take (a managed upload, in parts, with retries).
UPLOAD_TIMEOUT_S = 300
# Seconds between GetCommandInvocation polls (tests set it lower).
POLL_S = 2.0
# What the failure line keeps of a failed command's output.
TAIL_LINES = 3


def row_name(backend: str) -> str:
    return f"{backend}{ROW_SUFFIX}"


def no_instance_reason(backend: Backend) -> str | None:
    """None for a server of this app the kit can run on; else the one line that says why not."""
    name = backend.name
    where = backend.region or "its region"
    if "--endpoint" in backend.source:
        return f"{name}: not run in the region: {serving(BackendKind.OPENAI).not_in_region}"
    if backend.supports.not_in_region:
        return f"{name}: not run in the region: {backend.supports.not_in_region.format(where=where)}"
    if not backend.supports.in_region or backend.output is None:
        return f"{name}: not run in the region: no instance of this app's serves it"
    output = backend.output
    if not (output.evidence_bucket and output.evidence_prefix and output.bench_kit):
        return (
            f"{name}: not run in the region: its stack output names no bench kit or evidence bucket "
            f"(deployed by an earlier version of the app): {REDEPLOY}"
        )
    return None


def run_folder() -> str:
    """One run's folder under a server's prefix: UTC time and a random suffix."""
    return f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}/"


def execution_timeout_s(repeats: int, timeout_s: float) -> int:
    """The warm-up and every timed request at their timeout, plus fetching and copying."""
    need = 60 + (repeats + 1) * (timeout_s + 5)
    return int(min(EXECUTION_TIMEOUT_MAX_S, max(EXECUTION_TIMEOUT_MIN_S, need)))


def kit_commands(output: Any, run_prefix: str, config: JsonObject, requests: bool = False) -> list[str]:
    """The shell lines the instance runs (POSIX sh: the document runs them with `sh`). With
    `requests`, the run's request bodies are fetched from its folder first and handed to the kit."""
    encoded = base64.b64encode(json.dumps(config, separators=(",", ":")).encode()).decode()
    region = shlex.quote(output.region)
    folder = f"s3://{output.evidence_bucket}/{run_prefix}"
    destination = shlex.quote(f"{folder}{RESULT_FILE}")
    fetch_requests = [
        f'aws s3 cp --only-show-errors --region {region} {shlex.quote(folder + REQUESTS_FILE)} "$work/{REQUESTS_FILE}"'
        f" || {{ echo {shlex.quote(NO_REQUESTS)} >&2; exit {NO_REQUESTS_EXIT}; }}"
    ]
    return [
        "set -eu",
        # The AWS CLI as the boot script installed it (a snap on a bare image), and the Neuron
        # tools where aws-neuronx-tools installs them (neuron-monitor; the Neuron setup guides add
        # /opt/aws/neuron/bin to PATH after installing it).
        'export PATH="$PATH:/usr/local/bin:/snap/bin:/opt/aws/neuron/bin"',
        'work=$(mktemp -d "${TMPDIR:-/tmp}/inference-bench.XXXXXX")',
        "trap 'rm -rf \"$work\"' EXIT",
        f'aws s3 cp --only-show-errors --region {region} {shlex.quote(output.bench_kit)} "$work/kit.zip"',
        *(fetch_requests if requests else []),
        f'python3 "$work/kit.zip" --config {encoded}'
        + (f' --requests "$work/{REQUESTS_FILE}"' if requests else "")
        + f' --out "$work/{RESULT_FILE}"',
        f'aws s3 cp --only-show-errors --region {region} "$work/{RESULT_FILE}" {destination}',
        f"echo 'in-region result:' {destination}",
    ]


# The kit versions whose results this runner reads (inference_constructs/bench_kit KIT_VERSION): 2
# measured the config's prompt, one at a time or at load levels; 3 adds a workload's requests, and
# per level when its timed requests ran and the server's metrics; 4 measures with the runner's own
# measuring core, its records holding the fields it set (RequestRecord.from_json fills the rest).
KIT_VERSIONS = (2, 3, 4)


@dataclass(frozen=True)
class KitResult:
    """What the kit wrote, read back typed: its records and warm-ups (RequestRecord's shape, rebuilt
    as RequestRecords by runner/measure/host_rows.py), what it read of the host and the client, and
    per level (kit 3) the span of its timed requests and the server's metrics."""

    kit: int
    # What the kit said of the host and of itself, as it said it.
    host: JsonObject
    client: JsonObject
    records: list[JsonObject]
    warm_ups: list[JsonObject] = field(default_factory=list)
    accelerator: JsonObject | None = None
    level_spans: list[list[float]] = field(default_factory=list)
    server_metrics: list[JsonObject | None] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: object, where: str) -> KitResult:
        """The result, or one line saying why it is not one this runner reads."""
        if isinstance(data, dict) and data.get("kit") not in KIT_VERSIONS:
            raise RunnerError(
                f"{where} was written by bench kit {data.get('kit')!r}; this runner reads kits "
                f"{', '.join(map(str, KIT_VERSIONS))}: {REDEPLOY}"
            )
        values = read_fields(cls, data, where, apart=("warm_ups",))
        assert isinstance(data, dict)
        warm_ups = data.get("warm_ups") or ([data["warm_up"]] if isinstance(data.get("warm_up"), dict) else [])
        if not isinstance(warm_ups, list) or not all(isinstance(w, dict) for w in warm_ups):
            raise RunnerError(f"{where}: its warm-ups must be JSON objects")
        return cls(**values, warm_ups=warm_ups)


@dataclass(frozen=True)
class KitRunEntry(FlatJson):
    """One server's in-region run as a bench evidence file keeps it (`in_region`): where and how
    it ran, how the command ended, where its result was (and that it was deleted once read), and
    what the kit said of the host, itself and the accelerator."""

    backend: str
    row: str
    region: str | None = None
    instance_id: str | None = None
    instance_type: str | None = None
    document: str | None = None
    command_id: str | None = None
    status: str | None = None
    status_details: str | None = None
    response_code: int | None = None
    evidence: str | None = None
    evidence_deleted_after_read: bool = False
    kit: str | None = None
    problem: str | None = None
    host: JsonObject | None = None
    client: JsonObject | None = None
    kit_version: int | None = None
    accelerator: JsonObject | None = None


@dataclass
class Run:
    """One server's in-region run: where it goes, the command, how it ended."""

    backend: Backend
    instance_id: str
    run_prefix: str
    config: JsonObject
    command_id: str | None = None
    # The command's invocation as SSM GetCommandInvocation answered.
    invocation: JsonObject = field(default_factory=dict)
    problem: str | None = None
    result: KitResult | None = None
    # True once the run's objects were deleted from the bucket (their content is in the evidence).
    deleted: bool = False
    # The workload's request bodies the kit fetches (None: the config's own prompt), and whether
    # they were put in the bucket (then the run's folder is emptied however the run ends).
    requests: bytes | None = None
    uploaded: bool = False

    @property
    def output(self) -> Any:
        return self.backend.output

    @property
    def result_key(self) -> str:
        return f"{self.run_prefix}{RESULT_FILE}"

    def entry(self) -> KitRunEntry:
        """The run as the evidence keeps it."""
        invocation, result = self.invocation, self.result
        return KitRunEntry(
            backend=self.backend.name,
            row=row_name(self.backend.name),
            region=self.output.region,
            instance_id=self.instance_id,
            instance_type=self.output.instance_type,
            document=DOCUMENT,
            command_id=self.command_id,
            status=invocation.get("Status"),
            status_details=invocation.get("StatusDetails"),
            response_code=invocation.get("ResponseCode"),
            evidence=f"s3://{self.output.evidence_bucket}/{self.result_key}",
            evidence_deleted_after_read=self.deleted,
            kit=self.output.bench_kit,
            problem=self.problem,
            host=result.host if result else None,
            client=result.client if result else None,
            kit_version=result.kit if result else None,
            accelerator=result.accelerator if result else None,
        )


def prepare(backend: Backend, config: JsonObject, ssm: Any) -> Run | str:
    """The run for a ready server, or the one line saying why it is not run."""
    output = backend.output
    readiness = read_readiness(ssm, output.readiness_parameter)
    if readiness.state != "ready" or not readiness.instance_id:
        return f"{backend.name}: not run in the region: its server is {readiness.line}"
    prefix = f"{output.evidence_prefix}{run_folder()}"
    # The server's own port on the instance's loopback (the tunnel's far end), the model it serves.
    config = config | {
        "backend": backend.name,
        "base_url": f"http://127.0.0.1:{output.port}/v1",
        "model_id": backend.model_id,
    }
    if config.get("levels"):
        # The bodies the tunnel row's sweep sends (runner/measure/benchmark.py chat_requests).
        config["usage_per_chunk"] = backend.supports.usage_per_chunk
    return Run(backend=backend, instance_id=readiness.instance_id, run_prefix=prefix, config=config)


def upload_requests(run: Run, s3: Any) -> None:
    """The workload's bodies into the run's folder, where the instance's role may read them
    (gzipped: a level of long prompts is tens of megabytes of JSON; boto3's managed upload goes in
    parts and retries them)."""
    s3.upload_fileobj(
        io.BytesIO(gzip.compress(run.requests or b"")),
        run.output.evidence_bucket,
        f"{run.run_prefix}{REQUESTS_FILE}",
        ExtraArgs={"ContentType": "application/gzip"},
    )
    run.uploaded = True


def send(run: Run, ssm: Any, execution_timeout: int) -> None:
    commands = kit_commands(run.output, run.run_prefix, run.config, requests=run.requests is not None)
    response = ssm.send_command(
        InstanceIds=[run.instance_id],
        DocumentName=DOCUMENT,
        Comment=f"inference-survey: bench {run.backend.name} on its own host"[:100],
        TimeoutSeconds=DELIVERY_TIMEOUT_S,
        Parameters={"commands": commands, "executionTimeout": [str(execution_timeout)]},
    )
    run.command_id = response["Command"]["CommandId"]


def poll(run: Run, ssm: Any) -> bool:
    """True once the command has ended (its invocation kept); a just-sent command may not be
    visible yet (InvocationDoesNotExist), which is not an end."""
    from botocore.exceptions import ClientError

    try:
        invocation = ssm.get_command_invocation(CommandId=run.command_id, InstanceId=run.instance_id)
    except ClientError as error:
        if aws_error_code(error) == "InvocationDoesNotExist":
            return False
        raise
    invocation.pop("ResponseMetadata", None)
    run.invocation = invocation
    return invocation.get("Status") in FINAL_STATES


def failure_line(run: Run) -> str:
    """A command that did not succeed: its status, exit code and the last lines of its output."""
    invocation = run.invocation
    status = invocation.get("StatusDetails") or invocation.get("Status") or "unknown"
    code = invocation.get("ResponseCode")
    text = "\n".join(
        part for part in (invocation.get("StandardOutputContent"), invocation.get("StandardErrorContent")) if part
    )
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    tail = " | ".join(lines[-TAIL_LINES:])
    exit_part = f" (exit {code})" if code is not None and code != -1 else ""
    line = f"{run.backend.name}: the in-region command {status}{exit_part} on {run.instance_id}" + (
        f": {tail}" if tail else ": no output"
    )
    # A stack deployed before workloads in the region: its role cannot read the requests (403), or
    # its kit does not take them (argparse's words).
    if NO_REQUESTS in text:
        line += f"; the instance role may predate workloads in the region: {REDEPLOY}"
    elif "unrecognized arguments" in text:
        line += f"; the stack's bench kit is older than this runner: {REDEPLOY}"
    return line


def read_back(run: Run, s3: Any) -> None:
    """The kit's result into `run.result`, then the run's objects deleted (now in the evidence)."""
    bucket = run.output.evidence_bucket
    body = s3.get_object(Bucket=bucket, Key=run.result_key)["Body"].read()
    try:
        result = json.loads(body)
    except json.JSONDecodeError as error:
        run.problem = f"{run.backend.name}: the kit's result s3://{bucket}/{run.result_key} is not JSON ({error.msg})"
        return
    try:
        run.result = KitResult.from_json(result, f"the kit's result s3://{bucket}/{run.result_key}")
    except RunnerError as error:
        run.problem = f"{run.backend.name}: {error}"
        return
    discard(run, s3)


def discard(run: Run, s3: Any) -> None:
    """The run's objects deleted: read back into the evidence, or of a run that failed."""
    bucket = run.output.evidence_bucket
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=run.run_prefix).get("Contents", [])
    if listed:
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": o["Key"]} for o in listed], "Quiet": True})
    run.deleted = True


def run_in_region(
    backends: list[Backend],
    config: JsonObject,
    *,
    repeats: int,
    timeout_s: float,
    poll_s: float | None = None,
    on_line=None,
    requests: dict[str, bytes] | None = None,
) -> list[Run | str]:
    """Every server's run, sent together, waited for together; for each a finished Run (its
    `problem` set when it did not produce records) or the one line saying why it was not run.
    `requests`: per backend, a workload's request bodies (JSON) for its kit to send."""
    say = on_line or (lambda line: None)
    execution_timeout = execution_timeout_s(repeats, timeout_s)
    outcomes: list[Run | str] = []
    clients: dict[str, Any] = {}

    def ssm_for(region: str) -> Any:
        if region not in clients:
            clients[region] = boto_client("ssm", region, 15)
        return clients[region]

    for backend in backends:
        prepared: Run | str | None = None
        try:
            prepared = prepare(backend, config, ssm_for(backend.output.region))
            if isinstance(prepared, Run):
                if requests and backend.name in requests:
                    prepared.requests = requests[backend.name]
                    upload_requests(prepared, boto_client("s3", backend.output.region, UPLOAD_TIMEOUT_S))
                send(prepared, ssm_for(backend.output.region), execution_timeout)
                say(f"{backend.name}: in-region bench sent to {prepared.instance_id} ({prepared.command_id})")
        except Exception as error:  # one server's refusal never stops the others
            if isinstance(prepared, Run):
                empty_folder(prepared)
            prepared = f"{backend.name}: not run in the region: {describe(error)}"
        outcomes.append(prepared)
    runs = [o for o in outcomes if isinstance(o, Run)]
    pending = list(runs)
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S + execution_timeout + 60
    try:
        while pending:
            for run in list(pending):
                try:
                    ended = poll(run, ssm_for(run.output.region))
                except Exception as error:
                    run.problem = f"{run.backend.name}: could not follow its in-region command: {describe(error)}"
                    cancel(run, ssm_for(run.output.region))  # no kit left loading a server unwatched
                    ended = True
                if ended:
                    pending.remove(run)
            if pending and time.monotonic() > deadline:
                for run in pending:
                    run.problem = (
                        f"{run.backend.name}: the in-region command {run.command_id} had not ended "
                        f"{DELIVERY_TIMEOUT_S + execution_timeout + 60} s after it was sent"
                    )
                    cancel(run, ssm_for(run.output.region))
                break
            if pending:
                time.sleep(POLL_S if poll_s is None else poll_s)
    except KeyboardInterrupt:
        for run in pending:
            cancel(run, ssm_for(run.output.region))
        for run in runs:
            empty_folder(run)
        raise
    for run in runs:
        try:
            if run.problem or run.invocation.get("Status") != "Success":
                run.problem = run.problem or failure_line(run)
                continue
            try:
                read_back(run, boto_client("s3", run.output.region, 30))
            except Exception as error:
                run.problem = (
                    f"{run.backend.name}: the in-region command succeeded but its result "
                    f"s3://{run.output.evidence_bucket}/{run.result_key} could not be read: {describe(error)}"
                )
        finally:
            # Whatever happened, nothing of the run stays in the bucket (cdk destroy deletes only
            # an empty one; the lifecycle rule is the fallback).
            empty_folder(run)
    return outcomes


def empty_folder(run: Run) -> None:
    """The run's objects deleted, best effort, unless they already are (or none was ever put)."""
    if run.deleted or not (run.uploaded or run.command_id):
        return
    with contextlib.suppress(Exception):
        discard(run, boto_client("s3", run.output.region, 30))


def cancel(run: Run, ssm: Any) -> None:
    """Ctrl-C: the command stops on the instance too (best effort)."""
    with contextlib.suppress(Exception):
        ssm.cancel_command(CommandId=run.command_id, InstanceIds=[run.instance_id])
