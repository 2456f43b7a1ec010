"""Turns stack outputs, the catalog and `--endpoint` flags into the backends one run measures."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from catalog import BACKENDS, BackendKind, BackendSpec, CatalogError, backend_names, get_backend
from catalog.contract import BackendOutput
from catalog.lanes import model_label as label_for
from catalog.serving import ServingPath, serving
from runner.core.errors import RunnerError, Unreachable, as_fault, describe

# Not a timed chat: one transform job over a prompt set (`python -m runner.batch`).
BATCH_COMMAND = "python -m runner.batch"


@dataclass
class Backend:
    """One thing to measure: how to reach it, what it serves, where the facts came from."""

    name: str
    kind: BackendKind
    title: str
    model_id: str
    source: str
    base_url: str | None = None
    health_url: str | None = None
    region: str | None = None
    endpoint_name: str | None = None
    supports_tools: bool = True
    max_total_tokens: int | None = None
    spec: BackendSpec | None = None
    output: BackendOutput | None = None
    notes: list[str] = field(default_factory=list)
    # EC2 servers: the loopback port of their SSM port forward and the command that opens it.
    local_port: int | None = None
    forward_command: str | None = None
    # Why this backend cannot be called in this run (e.g. it needs AWS and AWS is not in use).
    blocked: str | None = None
    # The SageMaker options: the stack's bucket and prefixes (async inputs and outputs, batch
    # inputs and outputs), the SageMaker model a transform job runs, the instance type it runs on.
    bucket: str | None = None
    input_prefix: str | None = None
    output_prefix: str | None = None
    model_name: str | None = None
    instance_type: str | None = None
    # What the tables' model column shows: the model, its precision as served, its lane.
    model_label: str | None = None

    @property
    def supports(self) -> ServingPath:
        """What this way of serving supports, how it is billed, whether the agent runs on it
        (catalog/serving.py)."""
        return serving(self.kind)

    @property
    def speaks_openai(self) -> bool:
        return self.supports.openai

    @property
    def cold_starts(self) -> bool:
        """True when the first request after idle starts the compute (timed apart as a cold start)."""
        return self.supports.cold_starts

    @property
    def timed_chat(self) -> bool:
        """False for a transform job's model: measured by `python -m runner.batch`, not by chat."""
        return self.supports.chat

    @property
    def aws_api(self) -> bool:
        """True when the backend is reached through the AWS API (so never without AWS in use)."""
        return self.supports.aws_api

    def require_reachable(self) -> None:
        """Raise before any client is built for a backend this run must not call."""
        if self.blocked:
            raise RunnerError(f"backend {self.name}: {self.blocked}")

    def explain(self, error: BaseException) -> str:
        """The fault's one line; for an unreachable EC2 server, the port tried and how to open it."""
        line = describe(error)
        if self.forward_command and isinstance(as_fault(error), Unreachable):
            line += f" (local port {self.local_port}: open its SSM port forward with: {self.forward_command})"
        return line

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in dataclasses.asdict(self).items() if k not in ("spec", "output")}
        data["kind"] = self.kind.value
        data["catalog"] = _spec_json(self.spec) if self.spec else None
        data["stack_output"] = self.output.to_json() if self.output else None
        return data


def _spec_json(spec: BackendSpec) -> dict[str, Any]:
    data = dataclasses.asdict(spec)
    for key, value in data.items():
        if hasattr(value, "value"):
            data[key] = value.value
    return data


def from_output(output: BackendOutput, forwards: dict[str, int]) -> Backend:
    """A deployed backend: EC2 servers are reached through an SSM port forward on loopback."""
    try:
        spec: BackendSpec | None = get_backend(output.name)
    except CatalogError:
        spec = None  # a backend this runner's catalog does not know: use the output alone
    kind = BackendKind(output.kind)
    backend = Backend(
        name=output.name,
        kind=kind,
        title=spec.title if spec else output.name,
        model_id=output.model_id,
        source="stack output",
        region=output.region,
        endpoint_name=output.endpoint_name,
        # What the deployed server takes comes from its stack output where it says (an image chosen
        # by context, such as the survey's tool-less Neuron graph), else from the catalog.
        supports_tools=first_known(output.supports_tools, spec.supports_tools if spec else None, True),
        max_total_tokens=first_known(output.max_total_tokens, spec.max_total_tokens if spec else None),
        spec=spec,
        output=output,
        bucket=output.bucket,
        input_prefix=output.input_prefix,
        output_prefix=output.output_prefix,
        model_name=output.model_name,
        instance_type=output.instance_type or (spec.instance_type if spec else None),
        # The output's own lane and precision (a deploy of another lane serves other weights).
        model_label=label_for(output.model_id, output.lane, output.precision),
    )
    if serving(kind).port_forward:
        port = forwards.get(output.name) or (spec.forward_port if spec else None)
        if port is None:
            raise RunnerError(
                f"backend {output.name}: no local port for its SSM port forward; pass --forward NAME=PORT"
            )
        root = f"http://127.0.0.1:{port}"
        backend.base_url = f"{root}/v1"
        backend.health_url = f"{root}{output.health_path}"
        backend.local_port = port
        backend.forward_command = forward_command(output, port)
        backend.notes.append(backend.forward_command)
    if not serving(kind).chat:
        backend.notes.append(f"a transform job's model: measured by {BATCH_COMMAND}")
    return backend


def first_known(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def forward_command(output: BackendOutput, local_port: int, instance_id: str | None = None) -> str:
    """The exact command that opens this backend's SSM port forward (the instance id comes from
    its readiness parameter: the Auto Scaling group picks the instance at run time)."""
    target = instance_id or (
        f"$(aws ssm get-parameter --region {output.region} --name {output.readiness_parameter} "
        "--query Parameter.Value --output text | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"instance_id\"])')"
    )
    return (
        f"aws ssm start-session --region {output.region} --target {target} "
        f"--document-name AWS-StartPortForwardingSession "
        f'--parameters \'{{"portNumber":["{output.port}"],"localPortNumber":["{local_port}"]}}\''
    )


def bedrock_backend(region: str | None = None) -> Backend:
    spec = get_backend("bedrock")
    return Backend(
        name=spec.name,
        kind=spec.kind,
        title=spec.title,
        model_id=spec.model_id,
        source="catalog",
        region=region or spec.regions[0],
        spec=spec,
    )


def local_backend(base_url: str, model_id: str, context_tokens: int | None = None) -> Backend:
    """The embedded server, with the context it was started with (else the catalog's)."""
    spec = get_backend("local")
    root = base_url.rsplit("/v1", 1)[0]
    return Backend(
        name=spec.name,
        kind=spec.kind,
        title=spec.title,
        model_id=model_id,
        source="embedded",
        base_url=base_url,
        health_url=f"{root}/health",
        max_total_tokens=context_tokens or spec.max_total_tokens,
        spec=spec,
        notes=[spec.notes],
    )


@dataclass(frozen=True)
class EndpointFlag:
    name: str
    url: str
    model_id: str | None


def parse_endpoint(text: str) -> EndpointFlag:
    """`NAME=URL[,model=ID]` -> EndpointFlag; the URL is the OpenAI base (ending in /v1 or not),
    with a host and, if it names one, a port from 1 to 65535."""
    name, sep, rest = text.partition("=")
    if not sep or not name or not rest:
        raise RunnerError(f"--endpoint {text!r}: expected NAME=URL[,model=ID]")
    url, *options = rest.split(",")
    model_id = None
    for option in options:
        key, sep, value = (part.strip() for part in option.partition("="))
        if key != "model" or not sep:
            raise RunnerError(f"--endpoint {text!r}: unknown option {option!r}; only model=ID is allowed")
        if not value:
            raise RunnerError(f"--endpoint {text!r}: model= names no model; give model=ID, or leave it out")
        model_id = value
    if not url.startswith(("http://", "https://")):
        raise RunnerError(f"--endpoint {text!r}: URL must start with http:// or https://")
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 (urllib checks the port when it is read)
    except ValueError:
        port = parts.netloc.rpartition(":")[2]
        raise RunnerError(f"--endpoint {text!r}: port {port!r} is not a number from 1 to 65535") from None
    if not parts.hostname or parts.port == 0:
        raise RunnerError(f"--endpoint {text!r}: expected http(s)://HOST[:PORT][/PATH], the port from 1 to 65535")
    return EndpointFlag(name=name, url=url.rstrip("/"), model_id=model_id)


def endpoint_backend(flag: EndpointFlag, existing: Backend | None) -> Backend:
    """A user-given OpenAI-compatible server; it replaces the URL of a known backend of that name."""
    base_url = flag.url if flag.url.endswith("/v1") else f"{flag.url}/v1"
    root = base_url.rsplit("/v1", 1)[0]
    if existing is not None and existing.speaks_openai:
        return dataclasses.replace(
            existing,
            base_url=base_url,
            health_url=f"{root}{existing.output.health_path if existing.output else '/health'}",
            model_id=flag.model_id or existing.model_id,
            source=f"{existing.source}, --endpoint",
            local_port=None,
            forward_command=None,
        )
    known = {b.name: b for b in BACKENDS}
    spec = known.get(flag.name)
    return Backend(
        name=flag.name,
        kind=BackendKind.OPENAI,
        title=spec.title if spec else f"OpenAI-compatible server at {root}",
        model_id=flag.model_id or (spec.model_id if spec else "default"),
        source="--endpoint",
        base_url=base_url,
        health_url=f"{root}/health",
        supports_tools=spec.supports_tools if spec else True,
        max_total_tokens=spec.max_total_tokens if spec else None,
        spec=spec,
    )


def select(backends: list[Backend], wanted: list[str] | None, extra_names: set[str]) -> list[Backend]:
    """Keep `wanted` in the given order; an unknown name is an error, a known absent one a notice."""
    if not wanted:
        return backends
    known = set(backend_names()) | extra_names
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise RunnerError(f"unknown backend {unknown[0]!r}; known backends: {', '.join(sorted(known))}")
    by_name = {b.name: b for b in backends}
    return [by_name[name] for name in wanted if name in by_name]
