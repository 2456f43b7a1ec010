"""The image build (inference_constructs/image_build.sh) run for real under bash, with the real AWS
CLI against moto and the Docker stand-in (tests/host/docker.py), on the case the project's lack of
a build limit opens: two builds of one image side by side. The first to push holds the immutable
tag; the second says so and goes on, since its image is built from the same source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest

from runner.core.files import PROJECT_ROOT
from tests.host.machine import BIN as HOST_BIN

pytestmark = pytest.mark.host

SCRIPT = PROJECT_ROOT / "inference_constructs" / "image_build.sh"
REPOSITORY = "inference-survey/neuron"
IMAGE = f"123456789012.dkr.ecr.us-east-1.amazonaws.com/{REPOSITORY}:0123abcd"
# Another build's push of the same tag: one layer of its own (its digest differs from ours).
THEIRS = "sha256:" + "f" * 64


@pytest.fixture
def ecr(moto_s3_url):
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(f"{moto_s3_url}/moto-api/reset", method="POST"), timeout=30).read()
    client = boto3.client("ecr", region_name="us-east-1", endpoint_url=moto_s3_url, aws_access_key_id="testing",
                          aws_secret_access_key="testing")  # fmt: skip
    return client


def start_build(moto_url: str, tmp_path: Path, release: Path) -> subprocess.Popen[str]:
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "docker").symlink_to(HOST_BIN / "docker")
    source = tmp_path / "source"
    source.mkdir()
    (source / "Dockerfile").write_text("FROM scratch\n")
    env = {
        "PATH": os.pathsep.join([str(tools), str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
        "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(PROJECT_ROOT)])),
        "HOME": str(tmp_path),
        "HOST_PYTHON": sys.executable,
        "HOST_STATE": str(tmp_path / "state"),
        "AWS_ENDPOINT_URL": moto_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_REGION": "us-east-1",
        "IMAGE_URI": IMAGE,
        "IMAGE_FOLDER": "neuron",
        "EXPIRES_AT": "",
        "CODEBUILD_BUILD_ID": "inference-build-neuron:2",
        "BUILD_BEHAVIOUR": f"hold:{release}",
    }
    return subprocess.Popen(["bash", str(SCRIPT)], cwd=source, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip


def building(tmp_path: Path, process: subprocess.Popen[str]) -> None:
    """Returns once the build holds in `docker build` (the stand-in logs each call first)."""
    calls = tmp_path / "state" / "calls.log"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if calls.is_file() and any(line.split()[:2] == ["docker", "build"] for line in calls.read_text().splitlines()):
            return
        time.sleep(0.05)
    said = process.communicate()[0] if process.poll() is not None else ""
    raise AssertionError(f"the build never reached docker build: {said}")


def test_a_tag_another_build_pushed_meanwhile_is_kept_and_the_build_goes_on(moto_s3_url, ecr, tmp_path):
    ecr.create_repository(repositoryName=REPOSITORY, imageTagMutability="IMMUTABLE")
    release = tmp_path / "release"
    process = start_build(moto_s3_url, tmp_path, release)
    building(tmp_path, process)
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 2,
                           "digest": "sha256:" + "0" * 64},
                "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 2,
                            "digest": THEIRS}]}  # fmt: skip
    ecr.put_image(repositoryName=REPOSITORY, imageTag=IMAGE.rsplit(":", 1)[1], imageManifest=json.dumps(manifest))
    held = ecr.describe_images(repositoryName=REPOSITORY)["imageDetails"]
    release.touch()
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 0, out
    assert "cannot be overwritten because the repository is immutable" in out
    assert f"inference-build: {IMAGE} was pushed by another build of the same source meanwhile; that one is kept" in out
    assert ecr.describe_images(repositoryName=REPOSITORY)["imageDetails"] == held


def test_a_push_refused_for_another_reason_still_fails_the_build(moto_s3_url, ecr, tmp_path):
    """No repository (the store stack not deployed): the push is refused and nothing holds the tag."""
    release = tmp_path / "release"
    release.touch()
    process = start_build(moto_s3_url, tmp_path, release)
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 1, out
    assert "inference-build: docker push failed" in out
