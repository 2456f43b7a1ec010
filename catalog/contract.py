"""The stack outputs contract: what a deployed backend tells the runner.

Each backend stack writes one CloudFormation output per backend, key `Backend<Name>` (for
example `BackendG6`), whose value is a JSON object with the fields of `BackendOutput`.
`cdk deploy --outputs-file` and `describe_stacks` both carry it unchanged. `CONTRACT_VERSION`
changes only when a field changes meaning or disappears: version 2 replaced the EC2
`instance_id` and `zone` (fixed at deploy) with `auto_scaling_group` and `zones`, because the
server may launch in any of its zones and its instance id is known only at run time (the
readiness parameter carries it).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any

from catalog.backends import BackendKind
from catalog.errors import CatalogError
from catalog.serving import serving

CONTRACT_VERSION = 2
OUTPUT_PREFIX = "Backend"
# Every resource the app makes carries this tag (stacks propagate it to instances and volumes);
# `runner.sweep` tells ours from everything else by it.
APP_TAG = ("app", "inference-survey")
# The Auto Scaling group of an EC2 server names its backend here.
BACKEND_TAG_KEY = "inference:backend"
# ...and, when the app builds its image, the image folder: the build brings back the groups tagged so.
IMAGE_TAG_KEY = "inference:image"


def output_key(backend: str) -> str:
    """'g6' -> 'BackendG6', 'sagemaker' -> 'BackendSagemaker' (CloudFormation keys are alphanumeric)."""
    return OUTPUT_PREFIX + "".join(part.capitalize() for part in backend.replace("_", "-").split("-"))


@dataclass(frozen=True)
class BackendOutput:
    """One deployed backend, as its stack reports it."""

    name: str
    kind: str
    region: str
    model_id: str
    port: int
    health_path: str
    auto_scaling_group: str | None = None
    endpoint_name: str | None = None
    zones: list[str] | None = None
    instance_type: str | None = None
    readiness_parameter: str | None = None
    log_group: str | None = None
    # What the server runs (optional, added within version 2): its image, the CodeBuild project
    # that builds it when the app builds it, and whether it takes tools and how many tokens.
    image: str | None = None
    image_build_project: str | None = None
    # True while the endpoint waits for the image the app builds (serverless: no endpoint until then).
    waiting_for_image: bool | None = None
    supports_tools: bool | None = None
    max_total_tokens: int | None = None
    # The deploy's time-to-live (optional, added within version 2): when the server goes to zero
    # (UTC, `YYYY-MM-DDThh:mm:ssZ`; absent: none), and the bound after which a server that is not
    # ready takes itself to zero. SageMaker: the endpoint config a runner recreates it from.
    expires_at: str | None = None
    ready_minutes: int | None = None
    endpoint_config_name: str | None = None
    # The lane and the weights' precision as served (optional, added within version 2).
    lane: str | None = None
    precision: str | None = None
    # The SageMaker options and Custom Model Import (optional, added within version 2): the
    # stack's bucket and the prefixes the runner writes inputs and reads outputs under; the
    # SageMaker model a transform job runs; serverless memory and concurrency; scaling bounds;
    # the async endpoint's result topics; the import role and the job that copies the weights.
    bucket: str | None = None
    input_prefix: str | None = None
    output_prefix: str | None = None
    model_name: str | None = None
    memory_mb: int | None = None
    max_concurrency: int | None = None
    min_instances: int | None = None
    max_instances: int | None = None
    success_topic: str | None = None
    error_topic: str | None = None
    import_role_arn: str | None = None
    weights_job: str | None = None
    # The in-region bench of an EC2 server (optional, added within version 2; `runner.bench
    # --in-region`): the stack's evidence bucket, the prefix this server may write under, and the
    # S3 URL of the kit it runs (`s3://BUCKET/KEY.zip`). Absent: deployed before the kit existed.
    evidence_bucket: str | None = None
    evidence_prefix: str | None = None
    bench_kit: str | None = None
    # The app's store in the server's region (optional, added within version 2; catalog/boot.py):
    # its bucket (the region's store stack holds it), the parameter where runner.up records the
    # compiled graphs the backend's servers may load, and, for an endpoint, the store's copy it reads
    # its weights from (absent: the hub). `weights_job` names the project that copies the weights
    # there. An `image_mirror` of an older stack is not read (the app mirrors no image now).
    store_bucket: str | None = None
    graphs_record: str | None = None
    staged_weights: str | None = None
    # An endpoint of inference components (optional, added within version 2): the component every
    # request names, the model it runs, its copies at deploy and their bounds, what a copy reserves
    # (whole accelerators, host memory: what runner.up recreates it with after the time-to-live),
    # and how the endpoint routes among the copies; the alarm that starts a copy at zero, whose
    # actions the time-to-live disables and runner.up enables again.
    inference_component_name: str | None = None
    copies: int | None = None
    min_copies: int | None = None
    max_copies: int | None = None
    accelerators_per_copy: int | None = None
    copy_memory_mb: int | None = None
    routing_strategy: str | None = None
    no_capacity_alarm: str | None = None
    contract: int = CONTRACT_VERSION

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def parse(cls, key: str, value: str | dict[str, Any], *, stack: str = "?") -> BackendOutput:
        """Read one output value, or raise CatalogError naming the stack and key."""
        where = f"stack {stack} output {key}"
        if isinstance(value, str):
            try:
                data = json.loads(value)
            except json.JSONDecodeError as exc:
                raise CatalogError(f"{where}: not JSON ({exc.msg} at char {exc.pos})") from None
        else:
            data = value
        if not isinstance(data, dict):
            raise CatalogError(f"{where}: expected a JSON object, got {type(data).__name__}")
        version = data.get("contract")
        if version != CONTRACT_VERSION:
            raise CatalogError(
                f"{where}: contract version {version!r}, this runner reads {CONTRACT_VERSION} "
                "(redeploy the stack with this version of the app)"
            )
        names = {f.name for f in fields(cls)}
        required = ("name", "kind", "region", "model_id", "port", "health_path")
        missing = [f for f in required if f not in data]
        if missing:
            raise CatalogError(f"{where}: missing {', '.join(missing)}")
        try:
            BackendKind(data["kind"])
        except ValueError:
            raise CatalogError(f"{where}: unknown kind {data['kind']!r}") from None
        if not isinstance(data["port"], int):
            raise CatalogError(f"{where}: port must be a number, got {data['port']!r}")
        kind = BackendKind(data["kind"])
        # What it cannot be reached without: its serving row's `outputs`.
        needs = serving(kind).outputs
        absent = [f for f in needs if not data.get(f)]
        if absent:
            raise CatalogError(f"{where}: kind {kind.value} needs {' and '.join(needs)}")
        return cls(**{k: v for k, v in data.items() if k in names})
