"""The Docker CLI, as far as the boot scripts and the image build use it.

- `pull IMAGE`: an image in this account's ECR exists when the emulated ECR lists its tag
  (DescribeImages against AWS_ENDPOINT_URL); a missing one fails with the daemon's own words
  ("manifest unknown"). Public images and AWS's DLCs pull, unless MISSING_IMAGES names them; PULL_ERROR forces
  a failure with its text (a network fault, say). Each pull is recorded in $HOST_STATE/pulls with
  the disk it landed on: the instance store when Docker's data was moved onto it (a bind mount of
  /var/lib/docker from the instance store's mount, in $HOST_STATE/mounts), else the root volume.
- `image inspect --format {{.Id}} IMAGE`: the image's id (or its RepoDigests), the same for an image and its mirror
  (`tag` keeps it, `push` stores it with the image, `pull` brings it back), as Docker's config
  digest is.
- `run … IMAGE ARGS`: in the foreground, like `docker run` without `-d`. CONTAINER_BEHAVIOUR
  decides what the container does: `serve` (a scripted OpenAI-compatible server, `tests.host.
  container`, on a free loopback port, mapped from the published host port in $HOST_STATE/ports),
  `never-healthy` (serves, /health answers 503), `exit:N`, `oom` (exit 137, the kernel's line in
  its log), `stream-fails` (exits 1 when told to stream its weights, as an image without the
  streamer would). Weights mounted at /weights are checked as an engine would (a config.json),
  and a checkpoint with no chat template serves no chat completion (tests/host/container.py);
  a compile cache mounted at the Neuron or the vLLM folder is compiled into unless it holds the
  graphs, and the log says which.
- `logs [--timestamps]`, `stop`, `rm -f`: by container name; each log line kept with its time.
  `login`: reads the password, succeeds.
- `build … --tag URI .`: BUILD_BEHAVIOUR `ok`, `fail:TEXT`, or `hold:PATH` (builds once PATH exists); `tag`;
  `push URI`: the image's tag into the emulated ECR (PutImage with a manifest, one layer named by
  the image's id), its id into REGISTRY_DIR (shared by every host and build of the emulator); another
  image under a tag the repository holds is refused as ECR refuses it under immutable tags.

Every call is appended to $HOST_STATE/calls.log.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from catalog.builds import dlc_registry
from tests.host import processes

STATE = Path(os.environ.get("HOST_STATE", "/tmp/host"))
REGISTRY = Path(os.environ.get("REGISTRY_DIR", STATE / "registry"))
ROOT = Path(os.environ.get("INFERENCE_ROOT", "/"))
IDS = STATE / "image-ids.json"


def log_call(argv: list[str]) -> None:
    STATE.mkdir(parents=True, exist_ok=True)
    with (STATE / "calls.log").open("a") as calls:
        calls.write("docker " + " ".join(argv) + "\n")


def is_ecr(image: str) -> bool:
    """An image of this account's ECR. AWS's DLC registries (catalog/builds.py) hold AWS's images,
    which the emulated account's ECR has no copy of: they pull as a public image does."""
    return ".dkr.ecr." in image.split("/", 1)[0] and not dlc_registry(image)


def split(image: str) -> tuple[str, str, str]:
    """URI -> (registry, repository, tag)."""
    registry, _, rest = image.partition("/")
    repository, _, tag = rest.rpartition(":")
    return registry, repository, tag


def ecr_client(image: str):
    import boto3

    region = image.split(".dkr.ecr.", 1)[1].split(".", 1)[0]
    return boto3.client("ecr", region_name=region, endpoint_url=os.environ["AWS_ENDPOINT_URL"])


def in_ecr(image: str) -> bool:
    _, repository, tag = split(image)
    if "AWS_ENDPOINT_URL" not in os.environ:
        return (REGISTRY / repository / f"{tag}.pushed").exists()
    from botocore.exceptions import ClientError

    try:
        ecr_client(image).describe_images(repositoryName=repository, imageIds=[{"imageTag": tag}])
    except ClientError:
        return False
    return True


def id_file(image: str) -> Path:
    """Where a pushed image's id is kept beside its tag in the registry."""
    _, repository, tag = split(image)
    return REGISTRY / repository / f"{tag}.id"


def pull(image: str) -> int:
    if os.environ.get("PULL_ERROR"):
        print(os.environ["PULL_ERROR"], file=sys.stderr)
        return 1
    missing = [m for m in os.environ.get("MISSING_IMAGES", "").split(",") if m]
    exists = in_ecr(image) if is_ecr(image) and "AWS_ENDPOINT_URL" in os.environ else image not in missing
    if not exists:
        print(
            f"Error response from daemon: manifest for {image} not found: manifest unknown: Requested image not found",
            file=sys.stderr,
        )
        return 1
    stored = id_file(image) if is_ecr(image) else None
    remember_id(image, stored.read_text() if stored and stored.exists() else name_id(image))
    with (STATE / "pulls").open("a") as pulls:
        pulls.write(f"{image} {data_disk()}\n")
    print(f"Status: Downloaded newer image for {image}")
    return 0


def data_disk() -> str:
    """Where Docker's data is: the instance store once /var/lib/docker is bound from its mount."""
    mounts = (
        [line.split() for line in (STATE / "mounts").read_text().splitlines()] if (STATE / "mounts").exists() else []
    )
    store = next((target for device, target in mounts if device == "/dev/nvme1n1"), None)
    docker_root = str(ROOT / "var/lib/docker")
    bound = [source for source, target in mounts if target == docker_root]
    return "instance-store" if store and bound and bound[-1].startswith(store) else "root-volume"


def name_id(image: str) -> str:
    """An image's id from its name, for an image never tagged from another (Docker Hub's names)."""
    return "sha256:" + hashlib.sha256(image.removeprefix("docker.io/").encode()).hexdigest()


def ids() -> dict[str, str]:
    return json.loads(IDS.read_text()) if IDS.exists() else {}


def remember_id(image: str, image_id: str) -> None:
    known = ids() | {image: image_id}
    IDS.parent.mkdir(parents=True, exist_ok=True)
    IDS.write_text(json.dumps(known))


def inspect(argv: list[str]) -> int:
    """`--format {{.Id}}` (the image's id) or `--format '{{join .RepoDigests " "}}'` (the name it
    was pulled by, at that digest: Docker records the digest the registry gave)."""
    image = argv[-1]
    known = ids()
    if image not in known:
        print(f"Error: No such image: {image}", file=sys.stderr)
        return 1
    fmt = argv[argv.index("--format") + 1] if "--format" in argv else "{{.Id}}"
    if "RepoDigests" in fmt:
        print(f"{image.split('@', 1)[0].rsplit(':', 1)[0]}@{known[image]}")
    else:
        print(known[image])
    return 0


def tag(source: str, target: str) -> int:
    known = ids()
    if source not in known:
        print(f"Error response from daemon: No such image: {source}", file=sys.stderr)
        return 1
    remember_id(target, known[source])
    return 0


def container_dir(name: str) -> Path:
    return STATE / "containers" / name


def run(argv: list[str]) -> int:
    name, published, index, volumes = "", "", 0, []
    while index < len(argv):
        word = argv[index]
        if word in ("--name", "-p", "-v", "--env", "-e", "--env-file", "--log-driver", "--log-opt", "--gpus"):
            if word == "--name":
                name = argv[index + 1]
            elif word == "-p":
                published = argv[index + 1]
            elif word == "-v":
                volumes.append(argv[index + 1])
            index += 2
            continue
        if word.startswith("-"):
            index += 1
            continue
        break
    image, args = argv[index], argv[index + 1 :]
    folder = container_dir(name or "anonymous")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "args.json").write_text(json.dumps({"image": image, "args": args}))
    (folder / "volumes.json").write_text(json.dumps(volumes))
    behaviour = os.environ.get("CONTAINER_BEHAVIOUR", "serve")
    log = Log(folder / "log")
    if behaviour.startswith("exit:"):
        log.write(f"container exits with status {behaviour[5:]}")
        return int(behaviour[5:])
    if behaviour == "oom":
        with (STATE / "kernel.log").open("a") as kernel:
            kernel.write("Out of memory: Killed process 4242 (python3) total-vm:16777216kB\n")
        return 137
    streamed = "runai_streamer" in args
    if streamed and behaviour == "stream-fails":
        log.write("ERROR [runai_streamer_loader.py] No module named 'runai_model_streamer'")
        return 1
    template = True
    for volume in volumes:
        source, _, target = volume.partition(":")
        if target.removesuffix(":ro") == WEIGHTS:
            if not (Path(source) / "config.json").exists():
                log.write(f"ERROR: {WEIGHTS} holds no config.json: not a model")
                return 1
            template = has_chat_template(Path(source))
        if source.startswith("/") and target in COMPILE_CACHES:
            compile_graphs(Path(source), target, log)
    port_file = folder / "port"
    port_file.unlink(missing_ok=True)
    health = "503" if behaviour == "never-healthy" else "200"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.host.container", "--port-file", str(port_file), "--health", health]
        + ([] if template else ["--no-chat-template"]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    threading.Thread(target=log.follow, args=(process.stdout,), daemon=True).start()
    (folder / "pid").write_text(processes.record(process.pid))
    deadline = time.monotonic() + 30
    while not port_file.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if published and port_file.exists():
        host_port = published.rsplit(":", 2)[-2]
        ports = STATE / "ports"
        ports.mkdir(parents=True, exist_ok=True)
        (ports / host_port).write_text(port_file.read_text())

    def stop_container(*_: object) -> None:
        process.terminate()

    signal.signal(signal.SIGTERM, stop_container)
    code = process.wait()
    return 143 if code < 0 else code


def has_chat_template(checkpoint: Path) -> bool:
    """Where transformers finds a model's chat template: its own file, or a key of the tokenizer's config."""
    if (checkpoint / "chat_template.jinja").exists():
        return True
    try:
        return "chat_template" in json.loads((checkpoint / "tokenizer_config.json").read_text())
    except (OSError, ValueError):
        return False


NEURON_CACHE = "/var/cache/neuron"
VLLM_CACHE = "/root/.cache/vllm"
COMPILE_CACHES = (NEURON_CACHE, VLLM_CACHE)
WEIGHTS = "/weights"


class Log:
    """A container's log: each line with the time it was written (what `docker logs -t` shows)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()

    def write(self, line: str) -> None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        with self.lock, self.path.open("a") as log:
            log.write(f"{stamp} {line.rstrip()}\n")

    def follow(self, stream) -> None:
        for line in stream:
            self.write(line)


def compile_graphs(cache: Path, target: str, log: Log) -> None:
    """The engine compiles its graphs into the cache folder unless they are there."""
    graph = cache / ("compiled/model.neff" if target == NEURON_CACHE else "torch_compile_cache/0d1f/rank_0_0/model")
    if graph.exists() and graph.read_text() == "compiled graph":
        log.write(f"INFO: loaded the compiled model from {target}")
        return
    graph.parent.mkdir(parents=True, exist_ok=True)
    graph.write_text("compiled graph")
    log.write(f"INFO: compiled the model into {target}")


def stop(name: str) -> int:
    pid_file = container_dir(name) / "pid"
    if pid_file.exists():
        found = processes.parse(pid_file.read_text())
        if found is not None:
            processes.signal_process(*found, signal.SIGTERM)
        pid_file.unlink(missing_ok=True)
    return 0


def logs(argv: list[str]) -> int:
    log = container_dir(argv[-1]) / "log"
    stamped = "--timestamps" in argv or "-t" in argv
    for line in log.read_text().splitlines() if log.exists() else []:
        sys.stdout.write((line if stamped else line.split(" ", 1)[-1]) + "\n")
    return 0


def build(argv: list[str]) -> int:
    tag = argv[argv.index("--tag") + 1]
    behaviour = os.environ.get("BUILD_BEHAVIOUR", "ok")
    print("#1 [internal] load build definition from Dockerfile")
    if behaviour.startswith("hold:"):
        # A build that takes its time (vLLM for sm_75: about an hour): it ends when the test says.
        release = Path(behaviour[5:])
        deadline = time.monotonic() + 300
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    print(f"#2 building {tag} with {' '.join(a for a in argv if a.startswith('MAX_JOBS'))}".rstrip())
    if behaviour.startswith("fail:"):
        print("#14 [build 6/6] RUN pip wheel --no-build-isolation --no-deps --wheel-dir /wheels .")
        print(f"#14 {behaviour[5:]}")
        print("ERROR: failed to solve: process did not complete successfully: exit code: 1")
        return 1
    local = STATE / "images"
    local.mkdir(parents=True, exist_ok=True)
    (local / hashlib.sha256(tag.encode()).hexdigest()).write_text(tag)
    remember_id(tag, name_id(tag))
    print(f"#20 naming to {tag} done")
    return 0


def push(image: str) -> int:
    _, repository, tag = split(image)
    image_id = ids().get(image) or name_id(image)
    # One layer named by the image's id: two builds of one tag are two images (their digests differ,
    # as two docker builds' do), the same image pushed again is the same.
    layer = "sha256:" + hashlib.sha256(image_id.encode()).hexdigest()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "size": 2,
            "digest": "sha256:" + "0" * 64,
        },
        "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 2, "digest": layer}],
    }
    if "AWS_ENDPOINT_URL" in os.environ:
        from botocore.exceptions import ClientError

        client = ecr_client(image)
        try:
            client.put_image(repositoryName=repository, imageTag=tag, imageManifest=json.dumps(manifest))
        except ClientError as error:
            if error.response["Error"]["Code"] != "ImageAlreadyExistsException":
                raise
            # moto answers both cases so; ECR tells them apart (PutImage: ImageAlreadyExistsException
            # for the same image, ImageTagAlreadyExistsException for another image under an
            # immutable tag), and docker reports the second as a refused push.
            (held,) = client.describe_images(repositoryName=repository, imageIds=[{"imageTag": tag}])["imageDetails"]
            ours = "sha256:" + hashlib.sha256(layer.encode()).hexdigest()
            if held["imageDigest"] != ours:
                print(
                    f"tag invalid: The image tag '{tag}' already exists in the '{repository}' repository and "
                    "cannot be overwritten because the repository is immutable.",
                    file=sys.stderr,
                )
                return 1
            # The same image pushed again: the registry has every layer already, as docker reports.
            print(f"{tag}: Layer already exists")
    target = id_file(image)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(image_id)
    (target.parent / f"{tag}.pushed").write_text("")
    print(f"{tag}: digest: sha256:{hashlib.sha256(image.encode()).hexdigest()} size: 529")
    return 0


def main() -> int:
    argv = sys.argv[1:]
    log_call(argv)
    if not argv:
        return 1
    verb, rest = argv[0], argv[1:]
    if verb == "pull":
        return pull(rest[0])
    if verb == "run":
        return run(rest)
    if verb == "stop":
        return stop(rest[-1])
    if verb == "rm":
        for name in (a for a in rest if not a.startswith("-")):
            stop(name)
        return 0
    if verb == "logs":
        return logs(rest)
    if (verb == "image" and rest[:1] == ["inspect"]) or verb == "inspect":
        return inspect(rest)
    if verb == "tag":
        return tag(rest[0], rest[1])
    if verb == "login":
        sys.stdin.read()
        print("Login Succeeded")
        return 0
    if verb == "build":
        return build(rest)
    if verb == "push":
        return push(rest[0])
    print(f"docker stand-in: {verb} is not emulated", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
