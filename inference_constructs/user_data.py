"""Renders the boot script that turns a DLAMI into a model server run by systemd.

Pure text, no CDK: the tests (and the emulator's instances) run exactly what an instance would
run. The scripts themselves are real shell files in `server_scripts/` (linted by shellcheck);
this module writes them into the user data with the server's settings. Tokens (region, log
group and parameter names resolved at deploy) are passed in as strings and substituted by
CloudFormation.

EC2 takes at most 16 KB of user data, counted before base64 (EC2 User Guide, "Run commands when
you launch an EC2 instance with user data input"), and a launch over it is refused, which the
runner would read as a capacity refusal. The scripts and units, which hold no token, travel as
one gzip-compressed tar archive (base64, unpacked by `tar` on the instance); only the settings,
which CloudFormation fills in, stay as text. `USER_DATA_LIMIT` is the bound the tests hold every
launch template's user data to.

The server's life, as readiness states: `launching` (the stack) → `booting` (first thing the
instance does, so a replaced instance never shows its predecessor's state) → `starting` (each
unit start) → `ready`, or `failed` with a reason and the server taken to zero instances, or
`waiting-for-image` while the app's build makes its image (also at zero). Every record carries
the phases this boot reached (catalog/boot.py PHASES, each with its time) and which way each
step went: the instance store or the root volume, the region's mirror or the image's registry,
the store's copy of the weights or the hub, the stored graphs or a compile.
"""

from __future__ import annotations

import base64
import gzip
import io
import shlex
import tarfile
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
# EC2's limit on user data, in bytes before base64 (EC2 User Guide, user data input).
USER_DATA_LIMIT = 16 * 1024
# The scripts the others source (installed without the executable bit).
LIBRARIES = ("common.sh", "store.sh")
# Where each script lands on the instance.
INSTALLED = {
    "common.sh": "/usr/local/lib/inference-common.sh",
    "store.sh": "/usr/local/lib/inference-store.sh",
    "storage.sh": "/usr/local/bin/inference-storage",
    "serve.sh": "/usr/local/bin/inference-serve",
    "ready.sh": "/usr/local/bin/inference-ready",
    "failed.sh": "/usr/local/bin/inference-failed",
    "deadline.sh": "/usr/local/bin/inference-deadline",
}


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
    # What the reason says when the image is missing and no build of the app's makes it.
    missing_image_hint: str = ""
    container_env: tuple[tuple[str, str], ...] = ()
    # The CodeBuild project that builds the image when the app builds it (the server starts it
    # when it finds the image missing).
    image_build_project: str = ""
    # Minutes from boot after which a server that is not ready takes itself to zero.
    ready_minutes: int = DEFAULT_READY_MINUTES
    # The public image when `image` is its mirror in the region's ECR (pulled when the mirror cannot
    # be), and the CodeBuild project that makes the mirror.
    fallback_image: str = ""
    mirror_project: str = ""
    # The app's store in this region (catalog/boot.py), the account that must own it, the other
    # regions whose stores may hold compiled graphs, and the project that copies the weights there.
    store_bucket: str = ""
    account_id: str = ""
    store_regions: tuple[str, ...] = ()
    copy_project: str = ""
    weights_load: WeightsLoad = WeightsLoad.SYNC
    # The engine's compile cache in the container ("" for none), kept in the store.
    compile_cache: str = ""
    # GB the instance store must have free to take Docker's data and the weights (0: any).
    needs_disk_gb: int = 0


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
    """A heredoc writing `content` under the root (empty on an instance) with `mode`."""
    marker = "INFERENCE_EOF"
    if marker in content:
        raise ValueError(f"file content for {path} contains the heredoc marker")
    body = content.rstrip()
    if not body:
        return f': > "$ROOT{path}"\nchmod {mode} "$ROOT{path}"\n'
    return f'cat > "$ROOT{path}" <<\'{marker}\'\n{body}\n{marker}\nchmod {mode} "$ROOT{path}"\n'


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
        "IMAGE_BUILD_PROJECT": boot.image_build_project,
        "MISSING_IMAGE_HINT": boot.missing_image_hint,
        "READY_MINUTES": str(boot.ready_minutes),
        "MODEL_ARGUMENT": boot.model_argument.value,
        "FALLBACK_IMAGE": boot.fallback_image,
        "MIRROR_PROJECT": boot.mirror_project,
        "STORE_BUCKET": boot.store_bucket,
        "ACCOUNT_ID": boot.account_id,
        "STORE_REGIONS": " ".join(boot.store_regions),
        "COPY_PROJECT": boot.copy_project,
        "WEIGHTS_MODE": weights_mode(boot).value,
        "COMPILE_CACHE": boot.compile_cache,
        "NEEDS_DISK_GB": str(boot.needs_disk_gb),
    }
    return "\n".join(f"{k}={shlex.quote(v)}" for k, v in values.items())


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


def swap_commands(gib: int) -> str:
    if gib <= 0:
        return ""
    # One command per line, so that a failing one stops the boot (set -e) instead of passing.
    return f"""if ! swapon --show=NAME --noheadings | grep -qx "$ROOT/swapfile"; then
  fallocate -l {gib}G "$ROOT/swapfile"
  chmod 600 "$ROOT/swapfile"
  mkswap "$ROOT/swapfile"
  swapon "$ROOT/swapfile"
  grep -q '^/swapfile ' "$ROOT/etc/fstab" 2>/dev/null || echo '/swapfile none swap sw 0 0' >> "$ROOT/etc/fstab"
fi
"""


def installed_files(boot: ServerBoot) -> dict[str, tuple[str, int]]:
    """{path: (content, mode)} of every file the boot installs that holds no deploy-time token:
    the server's scripts and its systemd units."""
    timer, deadline_service = deadline_units(boot.backend, boot.ready_minutes)
    units = {
        SERVER_UNIT: server_unit(boot.backend),
        READY_UNIT: ready_unit(boot.backend),
        FAILED_UNIT: failed_unit(boot.backend),
        DEADLINE_TIMER: timer,
        DEADLINE_UNIT: deadline_service,
    }
    files = {INSTALLED[name]: (script(name), 0o644 if name in LIBRARIES else 0o755) for name in INSTALLED}
    return files | {f"/etc/systemd/system/{unit}": (text, 0o644) for unit, text in units.items()}


def archive(files: dict[str, tuple[str, int]]) -> str:
    """The files as a gzip-compressed tar archive in base64, the same bytes for the same files
    (no times, owners or names of this machine), so a template changes only when a file does."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, (content, mode) in sorted(files.items()):
            body = content.encode()
            entry = tarfile.TarInfo(path.lstrip("/"))
            entry.size, entry.mode, entry.mtime, entry.uname, entry.gname = len(body), mode, 0, "root", "root"
            tar.addfile(entry, io.BytesIO(body))
    return base64.encodebytes(gzip.compress(data.getvalue(), compresslevel=9, mtime=0)).decode()


def unpack_archive(encoded: str) -> dict[str, tuple[str, int]]:
    """`archive` read back: {path: (content, mode)}."""
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(base64.b64decode(encoded))), mode="r") as tar:
        return {
            f"/{m.name}": (tar.extractfile(m).read().decode(), m.mode)
            for m in tar.getmembers()
            if m.isfile()  # type: ignore[union-attr]
        }


def _archive_step(files: dict[str, tuple[str, int]]) -> str:
    marker = "INFERENCE_ARCHIVE"
    return (
        "# The scripts and units (no deploy-time values in them), compressed to keep the user data small.\n"
        f"base64 -d <<'{marker}' | tar -xz --no-same-owner -m -C \"$ROOT/\"\n{archive(files)}{marker}"
    )


def render_boot_script(boot: ServerBoot) -> str:
    """The complete user data: files, readiness `booting`, the deadline, swap, tools, the server."""
    parts = [
        "#!/bin/bash",
        f"# Inference backend {boot.backend}: model server as a systemd unit; readiness in SSM.",
        "set -euxo pipefail",
        '# Empty on an instance; the emulator runs this script in a scratch root.\nROOT="${INFERENCE_ROOT:-}"',
        "# The first phase of this boot: the instance runs its boot script.",
        'install -d -m 700 "$ROOT/run/inference" && echo "running $(date +%s.%3N)" > "$ROOT/run/inference/phases"',
        'install -d -m 755 "$ROOT/var/log" "$ROOT/etc/inference" "$ROOT/opt/inference/hf-cache" '
        '"$ROOT/usr/local/lib" "$ROOT/usr/local/bin" "$ROOT/etc/systemd/system"',
        'exec > >(tee -a "$ROOT/var/log/inference-boot.log") 2>&1',
        _file("/etc/inference/server.env", server_env(boot), "600"),
        _file("/etc/inference/serve-args", "\n".join(container_args(boot)), "644"),
        _file("/etc/inference/container.env", container_environment(boot), "644"),
        _archive_step(installed_files(boot)),
        "command -v aws >/dev/null || snap install aws-cli --classic",
        'source "$ROOT/usr/local/lib/inference-common.sh"',
        "# From here on a failed step stops the server and says where.",
        "trap 'stop_and_report \"boot script failed at line $LINENO; see /var/log/inference-boot.log\"' ERR",
        "report booting",
        "systemctl daemon-reload",
        f"systemctl enable --now {DEADLINE_TIMER}",
        swap_commands(boot.swap_gib).rstrip(),
        "command -v docker >/dev/null || (apt-get update -y && apt-get install -y docker.io)",
        "# Docker's data and the server's weights and caches: the instance store where there is one.",
        '"$ROOT/usr/local/bin/inference-storage"',
        f"systemctl enable --now {SERVER_UNIT}",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def missing_image_hint(image_uri: str, backend: str) -> str:
    """For an image the app does not build: where it has to come from."""
    if ".dkr.ecr." in image_uri.split("/", 1)[0]:
        return f"push it to this account's ECR, or deploy with -c {backend}.image=URI"
    return f"check the image name, or deploy with -c {backend}.image=URI"
