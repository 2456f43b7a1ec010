"""Renders the boot script that turns a DLAMI into a model server run by systemd.

Pure text, no CDK: the tests read exactly what an instance would run. Tokens (region, log group
names resolved at deploy) are passed in as strings and substituted by CloudFormation.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from catalog import Accelerator
from catalog.backends import ModelArgument

SERVER_UNIT = "inference-server.service"
READY_UNIT = "inference-ready.service"
FAILED_UNIT = "inference-failed.service"
CONTAINER_NAME = "inference-server"
# Exit status of the serve script for a fault a restart cannot fix (sysexits EX_CONFIG):
# systemd does not restart it, and the failure unit reports the reason the script wrote.
NO_RESTART_EXIT = 78
# systemd gives up (and reports "container exits repeatedly") after this many starts in the window.
START_LIMIT_BURST = 5
START_LIMIT_INTERVAL_S = 1200


@dataclass(frozen=True)
class ServerBoot:
    """Everything the boot script needs; values may be CloudFormation tokens rendered as strings."""

    backend: str
    image: str
    model_id: str
    serve_args: tuple[str, ...]
    accelerator: Accelerator
    host_port: int
    container_port: int
    health_path: str
    region: str
    hf_token_secret_name: str
    log_group: str
    readiness_parameter: str
    swap_gib: int = 0
    model_argument: ModelArgument = ModelArgument.POSITIONAL
    data_volume: str | None = None
    image_build_hint: str = ""
    container_env: tuple[tuple[str, str], ...] = ()


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


def _file(path: str, content: str, mode: str) -> str:
    marker = "INFERENCE_EOF"
    if marker in content:
        raise ValueError(f"file content for {path} contains the heredoc marker")
    return f"cat > {path} <<'{marker}'\n{content.rstrip()}\n{marker}\nchmod {mode} {path}\n"


def server_env(boot: ServerBoot) -> str:
    values = {
        "BACKEND": boot.backend,
        "IMAGE": boot.image,
        "MODEL_ID": boot.model_id,
        "HOST_PORT": str(boot.host_port),
        "CONTAINER_PORT": str(boot.container_port),
        "HEALTH_PATH": boot.health_path,
        "AWS_REGION": boot.region,
        "HF_TOKEN_SECRET": boot.hf_token_secret_name,
        "LOG_GROUP": boot.log_group,
        "READY_PARAMETER": boot.readiness_parameter,
        "ACCELERATOR_ARGS": " ".join(accelerator_docker_args(boot.accelerator)),
        "ACCELERATOR": boot.accelerator.value,
        "DATA_VOLUME": boot.data_volume or "",
        "IMAGE_BUILD_HINT": boot.image_build_hint,
    }
    return "\n".join(f"{k}={shlex.quote(v)}" for k, v in values.items())


COMMON_SCRIPT = r"""#!/bin/bash
# Shared by the server, readiness and failure units: one way to write the readiness parameter.
# INFERENCE_ROOT is empty on an instance; tests point it at a scratch folder.
ROOT="${INFERENCE_ROOT:-}"
source "$ROOT/etc/inference/server.env"
FAILURE_FILE="$ROOT/run/inference/failure"
imds() {
  local t
  t=$(curl -sS -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 60')
  curl -sS -H "X-aws-ec2-metadata-token: $t" "http://169.254.169.254/latest/meta-data/$1"
}
# report STATE [REASON] [WEIGHTS_S]: {"state", "instance_id", "zone", "model", "at"[, "reason"]
# [, "weights_load_s"]} in SSM.
report() {
  local value
  value=$(STATE="$1" REASON="${2:-}" WEIGHTS="${3:-}" ID="$(imds instance-id)" \
    ZONE="$(imds placement/availability-zone)" MODEL="$MODEL_ID" python3 -c 'import json, os, datetime
d = {"state": os.environ["STATE"], "instance_id": os.environ["ID"], "zone": os.environ["ZONE"],
     "model": os.environ["MODEL"], "at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
if os.environ["REASON"]:
    d["reason"] = os.environ["REASON"][:400]
if os.environ["WEIGHTS"]:
    d["weights_load_s"] = float(os.environ["WEIGHTS"])
print(json.dumps(d))')
  aws ssm put-parameter --region "$AWS_REGION" --name "$READY_PARAMETER" --type String --overwrite \
    --value "$value" >/dev/null || true
}
# fail REASON: record why, report it, and exit with the status systemd does not restart.
fail() {
  install -d -m 700 "$ROOT/run/inference"
  printf '%s\n' "$1" > "$FAILURE_FILE"
  report failed "$1"
  echo "inference: failed: $1" >&2
  exit 78
}
"""

SERVE_SCRIPT = r"""#!/bin/bash
# Started by inference-server.service: check the host, read the token, pull the image, run the server.
set -uo pipefail
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-common.sh"
report starting
install -d -m 700 "$ROOT/run/inference"
rm -f "$FAILURE_FILE"
if [[ "$ACCELERATOR" == neuron ]] && ! compgen -G "$ROOT/dev/neuron*" >/dev/null; then
  fail "no Neuron device: /dev/neuron* is missing (instance type without Inferentia/Trainium, or the driver did not load)"
fi
if [[ "$ACCELERATOR" == nvidia ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  fail "no NVIDIA GPU: nvidia-smi finds no device (wrong AMI or instance type)"
fi
env_file="$ROOT/run/inference/server-secrets.env"
: > "$env_file"
if token=$(aws secretsmanager get-secret-value --region "$AWS_REGION" --secret-id "$HF_TOKEN_SECRET" \
    --query SecretString --output text 2>/dev/null); then
  printf 'HF_TOKEN=%s\nHUGGING_FACE_HUB_TOKEN=%s\n' "$token" "$token" > "$env_file"
else
  echo "inference: secret $HF_TOKEN_SECRET not readable; gated models will fail to download" >&2
fi
if [[ "$IMAGE" == *.dkr.ecr.*.amazonaws.com/* ]]; then
  aws ecr get-login-password --region "$AWS_REGION" | docker login --username AWS --password-stdin "${IMAGE%%/*}"
fi
if ! pull_log=$(docker pull "$IMAGE" 2>&1); then
  echo "$pull_log" >&2
  if grep -qiE 'not found|manifest unknown|does not exist|repository .* not found|pull access denied' <<<"$pull_log"; then
    fail "image not found: $IMAGE${IMAGE_BUILD_HINT:+; $IMAGE_BUILD_HINT}"
  fi
  exit 1  # a network fault: systemd retries
fi
mapfile -t serve_args < "$ROOT/etc/inference/serve-args"
volume_args=(-v /opt/inference/hf-cache:/root/.cache/huggingface)
[[ -n "$DATA_VOLUME" ]] && volume_args+=(-v "$DATA_VOLUME")
# shellcheck disable=SC2086
docker run --rm --name inference-server --ipc=host $ACCELERATOR_ARGS \
  -p "127.0.0.1:${HOST_PORT}:${CONTAINER_PORT}" \
  "${volume_args[@]}" \
  --env-file "$env_file" --env-file "$ROOT/etc/inference/container.env" \
  --log-driver awslogs --log-opt awslogs-region="$AWS_REGION" --log-opt awslogs-group="$LOG_GROUP" \
  --log-opt awslogs-stream="$(imds instance-id)/server" \
  "$IMAGE" "${serve_args[@]}"
status=$?
if [[ $status -eq 137 ]] && journalctl -k --since "-10 min" 2>/dev/null | grep -qiE 'out of memory|oom-kill'; then
  printf 'out of memory: the kernel killed the server (exit 137); a larger instance or swap is needed\n' > "$FAILURE_FILE"
else
  printf 'container exited with status %s\n' "$status" > "$FAILURE_FILE"
fi
exit "$status"
"""

READY_SCRIPT = r"""#!/bin/bash
# Waits for the server's health path on loopback, then records readiness in SSM for the runner.
set -euo pipefail
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-common.sh"
until curl -fsS -o /dev/null "http://127.0.0.1:${HOST_PORT}${HEALTH_PATH}"; do sleep 10; done
# vLLM logs how long its weights took to load ("Loading weights took 520.97 seconds"): the slow
# part of a first start, kept with the readiness so runner.up can show it.
weights=$(docker logs inference-server 2>&1 | sed -n 's/.*Loading weights took \([0-9.]*\) s.*/\1/p' | tail -n 1 || true)
report ready "" "$weights"
echo "inference: $BACKEND ready on port $HOST_PORT"
"""

FAILED_SCRIPT = r"""#!/bin/bash
# inference-server.service gave up (a fault a restart cannot fix, or too many restarts): say why.
set -uo pipefail
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-common.sh"
last=$(cat "$FAILURE_FILE" 2>/dev/null || echo "no reason recorded")
if [[ "$last" == "image not found"* || "$last" == "no Neuron device"* || "$last" == "no NVIDIA GPU"* ]]; then
  report failed "$last"
else
  report failed "container exits repeatedly (%BURST% starts in %WINDOW% s); last: $last"
fi
"""


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
Description=Report that the inference server for backend {backend} failed

[Service]
Type=oneshot
ExecStart=/usr/local/bin/inference-failed
"""


def swap_commands(gib: int) -> str:
    if gib <= 0:
        return ""
    return f"""if ! swapon --show=NAME --noheadings | grep -qx /swapfile; then
  fallocate -l {gib}G /swapfile && chmod 600 /swapfile && mkswap /swapfile && swapon /swapfile
  grep -q '^/swapfile ' /etc/fstab || echo '/swapfile none swap sw 0 0' >> /etc/fstab
fi
"""


def failed_script() -> str:
    return FAILED_SCRIPT.replace("%BURST%", str(START_LIMIT_BURST)).replace("%WINDOW%", str(START_LIMIT_INTERVAL_S))


def render_boot_script(boot: ServerBoot) -> str:
    """The complete user data: swap, tools, config files, systemd units, start."""
    parts = [
        "#!/bin/bash",
        f"# Inference backend {boot.backend}: model server as a systemd unit; readiness in SSM.",
        "set -euxo pipefail",
        "exec > >(tee -a /var/log/inference-boot.log) 2>&1",
        swap_commands(boot.swap_gib).rstrip(),
        "command -v docker >/dev/null || (apt-get update -y && apt-get install -y docker.io)",
        "command -v aws >/dev/null || snap install aws-cli --classic",
        "install -d -m 755 /etc/inference /opt/inference/hf-cache",
        _file("/etc/inference/server.env", server_env(boot), "600"),
        _file("/etc/inference/serve-args", "\n".join(container_args(boot)), "644"),
        _file("/etc/inference/container.env", container_environment(boot), "644"),
        _file("/usr/local/lib/inference-common.sh", COMMON_SCRIPT, "644"),
        _file("/usr/local/bin/inference-serve", SERVE_SCRIPT, "755"),
        _file("/usr/local/bin/inference-ready", READY_SCRIPT, "755"),
        _file("/usr/local/bin/inference-failed", failed_script(), "755"),
        _file(f"/etc/systemd/system/{SERVER_UNIT}", server_unit(boot.backend), "644"),
        _file(f"/etc/systemd/system/{READY_UNIT}", ready_unit(boot.backend), "644"),
        _file(f"/etc/systemd/system/{FAILED_UNIT}", failed_unit(boot.backend), "644"),
        "systemctl daemon-reload",
        f"systemctl enable --now {SERVER_UNIT}",
    ]
    return "\n".join(p for p in parts if p) + "\n"
