"""The boot of a model server: a small user data stub, and the scripts it runs, as a CDK asset.

Pure text and bytes, no CDK: the tests (and the emulator's instances) run exactly what an instance
would run. The scripts are real shell files in `server_scripts/` (linted by ShellCheck).

EC2 takes at most 16 KB of user data, counted before base64 (EC2 User Guide, "Work with instance
user data"), and refuses a launch over it. So the user data carries only what CloudFormation fills
in at deploy (the region, the account, the image, the store, where the scripts are and their
sha256): `render_user_data` keeps it small by construction, however the scripts grow
(`USER_DATA_GOAL`, checked on every synthesized template by `template_limits.py` with every token
at its longest). Everything known at synth (the scripts, the systemd units and the server's own
settings) is one gzip-compressed tar archive per server (`boot_archive`, the same bytes for the
same server), uploaded by the CDK as a file asset; the stub fetches it with the instance's role
(that one object), checks its sha256, unpacks it and runs `inference-boot`. A step of the stub
that fails, or one that hangs past its bound, reports the server failed and takes it to zero
instances; from `inference-boot` on, the error trap and the launch deadline do.

The server's life, as readiness states: `launching` (the stack) → `booting` (first thing the
boot does, so a replaced instance never shows its predecessor's state) → `starting` (each unit
start) → `ready`, or `failed` with a reason and the server taken to zero instances, or
`waiting-for-image` while the image the app builds is not there yet (also at zero; the stack's
deploy or `runner.up` starts its build, never the instance). Every record carries the phases this
boot reached (catalog/boot.py PHASES, each with its time) and which way each step went: the
instance store or the root volume, the image from the region's ECR or its public copy, the
store's copy of the weights or the hub, the stored graphs or a compile.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shlex
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from catalog import Accelerator
from catalog.backends import ModelArgument, WeightsLoad

SCRIPTS = Path(__file__).with_name("server_scripts")
SERVER_UNIT = "inference-server.service"
READY_UNIT = "inference-ready.service"
FAILED_UNIT = "inference-failed.service"
DEADLINE_UNIT = "inference-deadline.service"
DEADLINE_TIMER = "inference-deadline.timer"
CONTAINER_NAME = "inference-server"
# Exit status of the serve script for a fault a restart cannot fix (sysexits EX_CONFIG): systemd
# does not restart it, and the failure unit reports the reason and takes the server to zero.
NO_RESTART_EXIT = 78
# Exit status after the serve script took the server to zero to wait for its image: a clean stop.
WAITING_EXIT = 79
# systemd gives up (and reports "container exits repeatedly") after this many starts in the window.
START_LIMIT_BURST = 5
START_LIMIT_INTERVAL_S = 1200
DEFAULT_READY_MINUTES = 60
# EC2's limit on user data, in bytes before base64 (EC2 User Guide, "Work with instance user data").
USER_DATA_LIMIT = 16 * 1024
# What this app's user data may take at most, every token at its longest: a quarter of the limit,
# so that the user data stays small by construction (only deploy-time values travel in it).
USER_DATA_GOAL = 4 * 1024
# Seconds the stub gives each step before it counts as failed: the AWS CLI's install where the AMI
# has none, and the archive's download.
CLI_INSTALL_S = 600
FETCH_S = 120
# Tries of the archive's download, 10 s, 20 s, ... apart (INFERENCE_FETCH_BACKOFF_S in the emulator).
FETCH_TRIES = 5
# The scripts the others source (installed without the executable bit).
LIBRARIES = ("common.sh", "store.sh")
# Where each script lands on the instance.
INSTALLED = {
    "common.sh": "/usr/local/lib/inference-common.sh",
    "store.sh": "/usr/local/lib/inference-store.sh",
    "boot.sh": "/usr/local/bin/inference-boot",
    "storage.sh": "/usr/local/bin/inference-storage",
    "serve.sh": "/usr/local/bin/inference-serve",
    "ready.sh": "/usr/local/bin/inference-ready",
    "failed.sh": "/usr/local/bin/inference-failed",
    "deadline.sh": "/usr/local/bin/inference-deadline",
}
SETTINGS_FILE = "/etc/inference/server.env"
DEPLOY_FILE = "/etc/inference/deploy.env"
ARCHIVE_FILE = "/run/inference/boot.tar.gz"


@dataclass(frozen=True)
class ServerBoot:
    """What a server's boot needs that is known at synth: literal values only (no CloudFormation
    token), all of it in the boot archive."""

    backend: str
    model_id: str
    serve_args: tuple[str, ...]
    accelerator: Accelerator
    host_port: int
    container_port: int
    health_path: str
    log_group: str
    readiness_parameter: str
    # The Hugging Face token's secret, for a gated model only ("": the model is not gated, and the
    # server's role cannot read the secret).
    hf_token_secret_name: str = ""
    swap_gib: int = 0
    model_argument: ModelArgument = ModelArgument.POSITIONAL
    data_volume: str | None = None
    # What the reason says when the image is missing and the app does not build it.
    missing_image_hint: str = ""
    container_env: tuple[tuple[str, str], ...] = ()
    # True when the app builds the image: a missing one is waited for at zero instances (its build
    # is started by the stack's deploy or by runner.up, never by the instance).
    image_built: bool = False
    # Minutes from boot after which a server that is not ready takes itself to zero.
    ready_minutes: int = DEFAULT_READY_MINUTES
    # The app's store: whether the server reads it, the other regions whose stores may hold this
    # backend's compiled graphs, and the parameter where runner.up records the graphs it trusts.
    has_store: bool = False
    store_regions: tuple[str, ...] = ()
    graphs_parameter: str = ""
    weights_load: WeightsLoad = WeightsLoad.SYNC
    # The engine's compile cache in the container ("" for none), kept in the store.
    compile_cache: str = ""
    # GB the instance store must have free to take Docker's data and the weights (0: any).
    needs_disk_gb: int = 0


@dataclass(frozen=True)
class DeployValues:
    """What the user data carries: values CloudFormation fills in at deploy (tokens rendered as
    strings), and where the boot archive is."""

    region: str
    account_id: str
    image: str
    boot_bucket: str
    boot_key: str
    boot_sha256: str
    # The same image in a public registry, pulled when `image` cannot be ("" for none).
    fallback_image: str = ""
    store_bucket: str = ""
    # The role whose short-lived credentials let the engine stream the weights from the store
    # (the container cannot reach the instance's own: IMDSv2's hop limit is 1).
    weights_reader_role: str = ""


def container_args(boot: ServerBoot) -> list[str]:
    """The container's arguments: `MODEL FLAGS...` for the vLLM images (`vllm serve` is their
    entrypoint), nothing but the flags for an image that carries its own model and command."""
    if boot.model_argument in (ModelArgument.NONE, ModelArgument.ENVIRONMENT):
        return list(boot.serve_args)
    return [boot.model_id, *boot.serve_args]


def container_environment(boot: ServerBoot) -> str:
    """`KEY=VALUE` lines for docker's --env-file: the engine settings, and MODEL when the image
    takes its model from the environment."""
    values = list(boot.container_env)
    if boot.model_argument is ModelArgument.ENVIRONMENT:
        values.insert(0, ("MODEL", boot.model_id))
    for key, value in values:
        if "\n" in value or "=" in key:
            raise ValueError(f"container environment {key!r}: one line of KEY=VALUE each")
    return "\n".join(f"{key}={value}" for key, value in values)


def accelerator_docker_args(accelerator: Accelerator) -> list[str]:
    if accelerator is Accelerator.NVIDIA:
        return ["--gpus", "all"]
    if accelerator is Accelerator.NEURON:
        return ["--device=/dev/neuron0"]
    return []


def env_lines(values: dict[str, str]) -> str:
    return "\n".join(f"{k}={shlex.quote(v)}" for k, v in values.items())


def server_env(boot: ServerBoot) -> str:
    """The server's own settings (the archive's `server.env`), sourced by every script."""
    return env_lines(
        {
            "BACKEND": boot.backend,
            "MODEL_ID": boot.model_id,
            "HOST_PORT": str(boot.host_port),
            "CONTAINER_PORT": str(boot.container_port),
            "HEALTH_PATH": boot.health_path,
            "HF_TOKEN_SECRET": boot.hf_token_secret_name,
            "LOG_GROUP": boot.log_group,
            "READY_PARAMETER": boot.readiness_parameter,
            "ACCELERATOR_ARGS": " ".join(accelerator_docker_args(boot.accelerator)),
            "ACCELERATOR": boot.accelerator.value,
            "DATA_VOLUME": boot.data_volume or "",
            "IMAGE_BUILT": "1" if boot.image_built else "",
            "MISSING_IMAGE_HINT": boot.missing_image_hint,
            "READY_MINUTES": str(boot.ready_minutes),
            "MODEL_ARGUMENT": boot.model_argument.value,
            "STORE_REGIONS": " ".join(boot.store_regions),
            "GRAPHS_PARAMETER": boot.graphs_parameter,
            "WEIGHTS_MODE": weights_mode(boot).value,
            "COMPILE_CACHE": boot.compile_cache,
            "NEEDS_DISK_GB": str(boot.needs_disk_gb),
            "SWAP_GIB": str(boot.swap_gib),
        }
    )


def deploy_env(deploy: DeployValues) -> str:
    """The deploy-time values (the user data's `deploy.env`)."""
    return env_lines(
        {
            "AWS_REGION": deploy.region,
            "ACCOUNT_ID": deploy.account_id,
            "IMAGE": deploy.image,
            "FALLBACK_IMAGE": deploy.fallback_image,
            "STORE_BUCKET": deploy.store_bucket,
            "WEIGHTS_READER_ROLE": deploy.weights_reader_role,
            "BOOT_BUCKET": deploy.boot_bucket,
            "BOOT_KEY": deploy.boot_key,
            "BOOT_SHA256": deploy.boot_sha256,
        }
    )


def weights_mode(boot: ServerBoot) -> WeightsLoad:
    """An image that carries its model fetches nothing; a store-less server takes the hub anyway."""
    return WeightsLoad.NONE if boot.model_argument is ModelArgument.NONE else boot.weights_load


def script(name: str) -> str:
    """One of the server's scripts as installed (placeholders filled)."""
    text = (SCRIPTS / name).read_text()
    return text.replace("%BURST%", str(START_LIMIT_BURST)).replace("%WINDOW%", str(START_LIMIT_INTERVAL_S))


def server_unit(backend: str) -> str:
    return f"""[Unit]
Description=Inference server for backend {backend}
Requires=docker.service
After=docker.service network-online.target
Wants=network-online.target {READY_UNIT}
OnFailure={FAILED_UNIT}
StartLimitIntervalSec={START_LIMIT_INTERVAL_S}
StartLimitBurst={START_LIMIT_BURST}

[Service]
Type=simple
ExecStartPre=-/usr/bin/docker rm -f {CONTAINER_NAME}
ExecStart=/usr/local/bin/inference-serve
ExecStop=/usr/bin/docker stop -t 30 {CONTAINER_NAME}
Restart=on-failure
RestartSec=15
RestartPreventExitStatus={NO_RESTART_EXIT}
SuccessExitStatus={WAITING_EXIT}
TimeoutStartSec=0

[Install]
WantedBy=multi-user.target
"""


def ready_unit(backend: str) -> str:
    return f"""[Unit]
Description=Report readiness of backend {backend}
BindsTo={SERVER_UNIT}
After={SERVER_UNIT}

[Service]
Type=oneshot
ExecStart=/usr/local/bin/inference-ready
TimeoutStartSec=0
"""


def failed_unit(backend: str) -> str:
    return f"""[Unit]
Description=Report that the inference server for backend {backend} failed, and stop it

[Service]
Type=oneshot
ExecStart=/usr/local/bin/inference-failed
"""


def deadline_units(backend: str, minutes: int) -> tuple[str, str]:
    timer = f"""[Unit]
Description=Stop backend {backend} if it is not ready {minutes} min after boot

[Timer]
OnBootSec={minutes}min
AccuracySec=1min

[Install]
WantedBy=timers.target
"""
    service = f"""[Unit]
Description=Stop backend {backend} if it is not ready by its deadline

[Service]
Type=oneshot
ExecStart=/usr/local/bin/inference-deadline
"""
    return timer, service


def installed_files(boot: ServerBoot) -> dict[str, tuple[str, int]]:
    """{path: (content, mode)} of every file the archive installs: the server's settings, its
    container's arguments and environment, its scripts and its systemd units."""
    timer, deadline_service = deadline_units(boot.backend, boot.ready_minutes)
    units = {
        SERVER_UNIT: server_unit(boot.backend),
        READY_UNIT: ready_unit(boot.backend),
        FAILED_UNIT: failed_unit(boot.backend),
        DEADLINE_TIMER: timer,
        DEADLINE_UNIT: deadline_service,
    }
    files = {INSTALLED[name]: (script(name), 0o644 if name in LIBRARIES else 0o755) for name in INSTALLED}
    settings = {
        SETTINGS_FILE: (lines(server_env(boot)), 0o600),
        "/etc/inference/serve-args": (lines("\n".join(container_args(boot))), 0o644),
        "/etc/inference/container.env": (lines(container_environment(boot)), 0o644),
    }
    return settings | files | {f"/etc/systemd/system/{unit}": (text, 0o644) for unit, text in units.items()}


def lines(text: str) -> str:
    """A file of lines, ending in a newline; an empty file for none."""
    return f"{text}\n" if text else ""


def archive(files: dict[str, tuple[str, int]]) -> bytes:
    """The files as a gzip-compressed tar archive, the same bytes for the same files (no times,
    owners or names of this machine), so an asset changes only when a file does."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, (content, mode) in sorted(files.items()):
            body = content.encode()
            entry = tarfile.TarInfo(path.lstrip("/"))
            entry.size, entry.mode, entry.mtime, entry.uname, entry.gname = len(body), mode, 0, "root", "root"
            tar.addfile(entry, io.BytesIO(body))
    return gzip.compress(data.getvalue(), compresslevel=9, mtime=0)


def unpack_archive(data: bytes) -> dict[str, tuple[str, int]]:
    """`archive` read back: {path: (content, mode)}."""
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data)), mode="r") as tar:
        return {
            f"/{m.name}": (tar.extractfile(m).read().decode(), m.mode)  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }


def boot_archive(boot: ServerBoot) -> bytes:
    return archive(installed_files(boot))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def archive_file(data: bytes) -> Path:
    """The archive as a file the CDK can upload (named by its sha256, written once, atomically:
    synths in parallel processes may write the same one)."""
    folder = Path(tempfile.gettempdir()) / "inference-boot"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sha256(data)}.tar.gz"
    if not path.exists() or path.read_bytes() != data:
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_bytes(data)
        os.replace(partial, path)
    return path


def render_user_data(boot: ServerBoot, deploy: DeployValues) -> str:
    """The user data: the deploy-time values, then fetch, check, unpack and run the archive. Until
    the archive runs, a failed step reports failed and takes the server to zero instances (the
    AWS CLI is the AMI's; every step that waits on the network has a bound)."""
    marker = "INFERENCE_EOF"
    values = deploy_env(deploy)
    if marker in values:
        raise ValueError("a deploy value contains the heredoc marker")
    readiness = shlex.quote(boot.readiness_parameter)
    return rf"""#!/bin/bash
# Inference backend {boot.backend}: its boot scripts are a CDK asset, fetched, checked and run here.
set -euo pipefail
umask 077
# Empty on an instance; the emulator runs this script in a scratch root.
ROOT="${{INFERENCE_ROOT:-}}"
install -d -m 700 "$ROOT/run/inference"
echo "running $EPOCHREALTIME" > "$ROOT/run/inference/phases"
# The app's own folders (the system's, which exist, keep their modes).
install -d -m 755 "$ROOT/etc/inference" "$ROOT/opt/inference/hf-cache"
mkdir -p "$ROOT/var/log" "$ROOT/usr/local/lib" "$ROOT/usr/local/bin" "$ROOT/etc/systemd/system"
exec > >(tee -a "$ROOT/var/log/inference-boot.log") 2>&1
cat > "$ROOT{DEPLOY_FILE}" <<'{marker}'
{values}
{marker}
# shellcheck source=/dev/null
source "$ROOT{DEPLOY_FILE}"
export AWS_DEFAULT_REGION="$AWS_REGION" AWS_EXECUTION_ENV=inference-server
# give_up REASON: the readiness says failed, and the server's group goes to zero instances.
give_up() {{
  local token id group reason stopped=false
  echo "inference: failed: $1" >&2
  token=$(curl -sS -m 5 -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 60') || true
  id=$(curl -sS -m 5 -H "X-aws-ec2-metadata-token: $token" http://169.254.169.254/latest/meta-data/instance-id) || true
  group=$(timeout 60 aws autoscaling describe-auto-scaling-instances --instance-ids "$id" \
    --query 'AutoScalingInstances[0].AutoScalingGroupName' --output text) \
    && timeout 60 aws autoscaling set-desired-capacity --auto-scaling-group-name "$group" --desired-capacity 0 \
    && stopped=true
  reason=$(printf '%s' "$1" | tr -d '"\\')
  timeout 60 aws ssm put-parameter --name {readiness} --type String --overwrite \
    --value "{{\"state\": \"failed\", \"reason\": \"$reason\", \"instance_id\": \"$id\", \"stopped\": $stopped}}" \
    >/dev/null || true
  exit 1
}}
trap 'give_up "boot stopped at line $LINENO before its scripts ran; see /var/log/inference-boot.log"' ERR
# Where the AMI has no AWS CLI: snap's own, once snapd has seeded (too early, it refuses the install).
command -v aws >/dev/null || {{ timeout {CLI_INSTALL_S} snap wait system seed.loaded \
  && timeout {CLI_INSTALL_S} snap install aws-cli --classic; }}
# A few tries: the role's policy and the network may still be settling this early in the boot.
for try in {{1..{FETCH_TRIES}}}; do
  timeout {FETCH_S} aws s3api get-object --bucket "$BOOT_BUCKET" --key "$BOOT_KEY" --expected-bucket-owner "$ACCOUNT_ID" \
    "$ROOT{ARCHIVE_FILE}" >/dev/null && break
  (( try < {FETCH_TRIES} )) || give_up "the boot scripts at s3://$BOOT_BUCKET/$BOOT_KEY could not be fetched"
  sleep $(( try * ${{INFERENCE_FETCH_BACKOFF_S:-10}} ))
done
sha256sum "$ROOT{ARCHIVE_FILE}" | grep -q "^$BOOT_SHA256 " \
  || give_up "the boot scripts at s3://$BOOT_BUCKET/$BOOT_KEY are not the ones deployed (sha256 differs)"
tar -xzf "$ROOT{ARCHIVE_FILE}" --no-same-owner -m -C "$ROOT/"
trap - ERR
umask 022
exec "$ROOT/usr/local/bin/inference-boot"
"""


def missing_image_hint(image_uri: str, backend: str, *, dlc: bool = False) -> str:
    """For an image the app does not build: where it has to come from."""
    if dlc:
        return (
            f"AWS publishes no such Deep Learning Container tag here; check it, or deploy with -c {backend}.image=URI"
        )
    if ".dkr.ecr." in image_uri.split("/", 1)[0]:
        return f"push it to this account's ECR, or deploy with -c {backend}.image=URI"
    return f"check the image name, or deploy with -c {backend}.image=URI"
