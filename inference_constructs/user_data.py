"""Renders the boot script that turns a DLAMI into a model server run by systemd.

Pure text, no CDK: the tests read exactly what an instance would run. Tokens (region, log group
names resolved at deploy) are passed in as strings and substituted by CloudFormation.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from catalog import Accelerator

SERVER_UNIT = "inference-server.service"
READY_UNIT = "inference-ready.service"
CONTAINER_NAME = "inference-server"


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


def container_args(boot: ServerBoot) -> list[str]:
    """The server's own arguments: `--model M` plus the catalog's flags (vLLM's CLI)."""
    return ["--model", boot.model_id, *boot.serve_args]


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
    }
    return "\n".join(f"{k}={shlex.quote(v)}" for k, v in values.items())


SERVE_SCRIPT = r"""#!/bin/bash
# Started by inference-server.service: read the token, pull the image, run the server in the foreground.
set -euo pipefail
source /etc/inference/server.env
report() {
  aws ssm put-parameter --region "$AWS_REGION" --name "$READY_PARAMETER" --type String --overwrite \
    --value "{\"state\":\"$1\",\"instance_id\":\"$(instance_id)\",\"at\":\"$(date -u +%FT%TZ)\"}" >/dev/null || true
}
instance_id() {
  local t
  t=$(curl -sS -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 60')
  curl -sS -H "X-aws-ec2-metadata-token: $t" http://169.254.169.254/latest/meta-data/instance-id
}
report starting
install -d -m 700 /run/inference
env_file=/run/inference/server-secrets.env
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
docker pull "$IMAGE"
mapfile -t serve_args < /etc/inference/serve-args
# shellcheck disable=SC2086
exec docker run --rm --name inference-server --ipc=host $ACCELERATOR_ARGS \
  -p "127.0.0.1:${HOST_PORT}:${CONTAINER_PORT}" \
  -v /opt/inference/hf-cache:/root/.cache/huggingface \
  --env-file "$env_file" \
  --log-driver awslogs --log-opt awslogs-region="$AWS_REGION" --log-opt awslogs-group="$LOG_GROUP" \
  --log-opt awslogs-stream="$(instance_id)/server" \
  "$IMAGE" "${serve_args[@]}"
"""

READY_SCRIPT = r"""#!/bin/bash
# Waits for the server's health path on loopback, then records readiness in SSM for the runner.
set -euo pipefail
source /etc/inference/server.env
until curl -fsS -o /dev/null "http://127.0.0.1:${HOST_PORT}${HEALTH_PATH}"; do sleep 10; done
t=$(curl -sS -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 60')
id=$(curl -sS -H "X-aws-ec2-metadata-token: $t" http://169.254.169.254/latest/meta-data/instance-id)
aws ssm put-parameter --region "$AWS_REGION" --name "$READY_PARAMETER" --type String --overwrite \
  --value "{\"state\":\"ready\",\"instance_id\":\"$id\",\"model\":\"$MODEL_ID\",\"at\":\"$(date -u +%FT%TZ)\"}"
echo "inference: $BACKEND ready on port $HOST_PORT"
"""


def server_unit(backend: str) -> str:
    return f"""[Unit]
Description=Inference server for backend {backend}
Requires=docker.service
After=docker.service network-online.target
Wants=network-online.target {READY_UNIT}

[Service]
Type=simple
ExecStartPre=-/usr/bin/docker rm -f {CONTAINER_NAME}
ExecStart=/usr/local/bin/inference-serve
ExecStop=/usr/bin/docker stop -t 30 {CONTAINER_NAME}
Restart=on-failure
RestartSec=15
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


def swap_commands(gib: int) -> str:
    if gib <= 0:
        return ""
    return f"""if ! swapon --show=NAME --noheadings | grep -qx /swapfile; then
  fallocate -l {gib}G /swapfile && chmod 600 /swapfile && mkswap /swapfile && swapon /swapfile
  grep -q '^/swapfile ' /etc/fstab || echo '/swapfile none swap sw 0 0' >> /etc/fstab
fi
"""


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
        _file("/usr/local/bin/inference-serve", SERVE_SCRIPT, "755"),
        _file("/usr/local/bin/inference-ready", READY_SCRIPT, "755"),
        _file(f"/etc/systemd/system/{SERVER_UNIT}", server_unit(boot.backend), "644"),
        _file(f"/etc/systemd/system/{READY_UNIT}", ready_unit(boot.backend), "644"),
        "systemctl daemon-reload",
        f"systemctl enable --now {SERVER_UNIT}",
    ]
    return "\n".join(p for p in parts if p) + "\n"
