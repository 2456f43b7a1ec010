"""The weights copy (inference_constructs/weights_copy.sh), run for real: bash, the real `hf` CLI
against a loopback Hub (HF_ENDPOINT), the real AWS CLI against moto in server mode. Every file an
engine reads reaches S3 (configs, tokenizer, chat template, the safetensors weights); weight
formats no engine of the app reads do not."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from tests.host.aws_cli import CliServer
from tests.host.hub import HubRepo, LoopbackHub
from tests.host.machine import BIN as HOST_BIN

# The emulated-host tier: real scripts under bash on the stand-in host (tests/host), against moto.
pytestmark = pytest.mark.host

SCRIPT = Path(__file__).resolve().parents[2] / "inference_constructs" / "weights_copy.sh"
BIN = Path(sys.executable).parent
MODEL = "Qwen/Qwen2.5-1.5B-Instruct"
SERVING = {
    "config.json": b'{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}',
    # A chat template of its own file, as Gemma 4 keeps it: vLLM serves no chat without one.
    "chat_template.jinja": b"{% for message in messages %}{{ message.content }}{% endfor %}",
    "generation_config.json": b"{}",
    "model.safetensors": b"\0" * 4096,
    "tokenizer.json": b'{"version": "1.0"}',
    "tokenizer_config.json": b"{}",
    "merges.txt": b"#version: 0.2\n",
    "vocab.json": b"{}",
}
# What a real repository also holds: files that go along, and weight formats no engine of the app reads.
DOCUMENTS = {"README.md": b"# Qwen", "LICENSE": b"Apache-2.0"}
OTHER_WEIGHTS = {"original/model.gguf": b"GGUF", "pytorch_model.bin": b"pt", "model.onnx": b"onnx"}
OTHERS = DOCUMENTS | OTHER_WEIGHTS
BUCKET = "inference-weights"
URI = f"s3://{BUCKET}/imports/qwen/"


@pytest.fixture(scope="module")
def moto_url(moto_s3_url: str) -> str:
    """S3 on loopback for the app's store (tests/conftest.py), emptied where a test needs it."""
    return moto_s3_url


@pytest.fixture(scope="module")
def aws_cli(tmp_path_factory) -> Iterator[dict[str, str]]:
    """The real AWS CLI as the emulator's builds call it: `aws` first on PATH is the shim that hands
    each call to the AWS CLI server (tests/host/aws_cli.py; the real CLI itself without one)."""
    shim = tmp_path_factory.mktemp("aws-shim")
    (shim / "aws").symlink_to(HOST_BIN / "aws")
    server = CliServer(tmp_path_factory.mktemp("aws-cli"))
    yield {
        "PATH": os.pathsep.join([str(shim), str(BIN), "/usr/bin", "/bin"]),
        "HOST_PYTHON": sys.executable,
    } | server.env()
    server.stop()


def run_copy(
    moto_url: str, hub: LoopbackHub, cli: dict[str, str], tmp_path: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    aws = {"AWS_ENDPOINT_URL": moto_url, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip
    environment = (
        {
            "HOME": str(tmp_path),
            "TMPDIR": str(tmp_path),
            "HF_HOME": str(tmp_path / "hf-home"),
            "AWS_REGION": "us-east-1",
            "MODEL_ID": MODEL,
            "WEIGHTS_URI": URI,
            "HF_HUB_VERSION": "2.4.0",
            "HF_TOKEN_SECRET": "inference/hf-token",
        }
        | aws
        | cli
        | hub.env()
        | env
    )
    return subprocess.run(
        ["bash", str(SCRIPT)], env=environment, capture_output=True, text=True, timeout=120, check=False
    )


def objects(moto_url: str) -> dict[str, bytes]:
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=moto_url, aws_access_key_id="testing",
                      aws_secret_access_key="testing")  # fmt: skip
    listed = s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    return {o["Key"]: s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listed}


@pytest.fixture
def bucket(moto_url: str) -> str:
    s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=moto_url, aws_access_key_id="testing",
                      aws_secret_access_key="testing")  # fmt: skip
    s3.create_bucket(Bucket=BUCKET)
    yield BUCKET
    for key in [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]:
        s3.delete_object(Bucket=BUCKET, Key=key)
    s3.delete_bucket(Bucket=BUCKET)


def test_the_real_hf_cli_copies_every_file_an_engine_reads_and_no_other_weight_format(
    moto_url, bucket, tmp_path, aws_cli
):
    assert shutil.which("hf", path=str(BIN)), "the hf CLI (huggingface_hub) is not installed"
    with LoopbackHub({MODEL: HubRepo(SERVING | OTHERS)}) as hub:
        result = run_copy(moto_url, hub, aws_cli, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    copied = objects(moto_url)
    assert copied == {f"imports/qwen/{name}": data for name, data in (SERVING | DOCUMENTS).items()} | {
        "imports/qwen.complete": f"{MODEL}\n".encode()
    }
    # No token in Secrets Manager: the copy says so and goes on as an anonymous user.
    assert "downloading as an anonymous user" in result.stdout
    assert not any(token for _, _, token in hub.requests)


def test_a_gated_model_copies_with_the_token_from_secrets_manager_and_fails_without(
    moto_url, bucket, tmp_path, aws_cli
):
    with LoopbackHub({MODEL: HubRepo(SERVING, gated=True)}) as hub:
        refused = run_copy(moto_url, hub, aws_cli, tmp_path / "anonymous")
        assert refused.returncode != 0
        # The CLI's own line for the Hub's GatedRepo answer (huggingface_hub cli/_errors.py).
        assert "requires approval" in refused.stdout + refused.stderr
        assert objects(moto_url) == {}
        secrets = boto3.client("secretsmanager", region_name="us-east-1", endpoint_url=moto_url,
                               aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
        secrets.create_secret(Name="inference/hf-token-gated", SecretString="hf_test_token")
        allowed = run_copy(moto_url, hub, aws_cli, tmp_path / "token", HF_TOKEN_SECRET="inference/hf-token-gated")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert set(objects(moto_url)) == {f"imports/qwen/{name}" for name in SERVING} | {"imports/qwen.complete"}
    assert all(token for method, path, token in hub.requests[-len(SERVING) :] if "/resolve/" in path)


def test_a_repository_without_safetensors_weights_is_refused_before_anything_is_uploaded(
    moto_url, bucket, tmp_path, aws_cli
):
    only_bin = {k: v for k, v in (SERVING | OTHERS).items() if not k.endswith(".safetensors")}
    with LoopbackHub({MODEL: HubRepo(only_bin)}) as hub:
        result = run_copy(moto_url, hub, aws_cli, tmp_path)
    assert result.returncode == 1
    assert f"error: {MODEL} has no safetensors weights" in result.stdout
    assert objects(moto_url) == {}


# --- the app's store in the region: once per region, a manifest last, into the store stack's bucket ---

ACCOUNT = "123456789012"


def store_env(models: str, region: str = "us-east-1") -> dict[str, str]:
    from catalog.boot import store_bucket

    return {
        "MODEL_IDS": models,
        "STORE_BUCKET": store_bucket(ACCOUNT, region),
        "ACCOUNT_ID": ACCOUNT,
        "AWS_REGION": region,
        "MODEL_ID": "",
        "WEIGHTS_URI": "",
        "CODEBUILD_BUILD_ID": "inference-weights-copy:0d6c",
    }


def client(moto_url: str, service: str, region: str = "us-east-1"):
    return boto3.client(service, region_name=region, endpoint_url=moto_url, aws_access_key_id="testing",
                        aws_secret_access_key="testing")  # fmt: skip


@pytest.fixture
def empty_moto(moto_url):
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST"), timeout=30).read()
    return moto_url


def make_store(moto_url: str, region: str) -> str:
    """The bucket as the region's store stack makes it (stacks/store_stack.py)."""
    from catalog.boot import store_bucket

    bucket = store_bucket(ACCOUNT, region)
    extra = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    client(moto_url, "s3", region).create_bucket(Bucket=bucket, **extra)
    return bucket


def test_each_model_is_copied_once_with_its_manifest_of_sha256s_last(empty_moto, tmp_path, aws_cli):
    from catalog.boot import WEIGHTS_MANIFEST_VERSION, weights_marker, weights_prefix
    from tests.cdk.test_boot_scripts import stage_weights

    other = "google/gemma-4-E2B-it"
    bucket = make_store(empty_moto, "us-east-2")
    repos = {MODEL: HubRepo(SERVING | OTHERS), other: HubRepo(SERVING)}
    with LoopbackHub(repos) as hub:
        first = run_copy(empty_moto, hub, aws_cli, tmp_path / "a", **store_env(f"{MODEL} {other}", "us-east-2"))
        assert first.returncode == 0, first.stdout + first.stderr
        downloads = len([r for r in hub.requests if "/resolve/" in r[1] and r[0] == "GET"])
        again = run_copy(empty_moto, hub, aws_cli, tmp_path / "b", **store_env(f"{MODEL} {other}", "us-east-2"))
        assert again.returncode == 0, again.stdout + again.stderr
        # Once per region: the second run downloads nothing.
        assert len([r for r in hub.requests if "/resolve/" in r[1] and r[0] == "GET"]) == downloads
    assert f"{MODEL} is already in s3://{bucket}/weights/{MODEL}/: not copied again" in again.stdout
    s3 = client(empty_moto, "s3", "us-east-2")
    listed = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert listed == {f"{weights_prefix(MODEL)}{name}" for name in SERVING | DOCUMENTS} | {
        f"{weights_prefix(other)}{name}" for name in SERVING
    } | {weights_marker(MODEL), weights_marker(other)}
    # The manifest: its version, the hub's commit it copied, each file's size and sha256: the shape
    # the servers check against (tests/cdk/test_boot_scripts.py stages it so).
    manifest = json.loads(s3.get_object(Bucket=bucket, Key=weights_marker(other))["Body"].read())
    assert (manifest["version"], manifest["revision"]) == (WEIGHTS_MANIFEST_VERSION, repos[other].commit)
    staged = client(empty_moto, "s3")
    staged.create_bucket(Bucket="shape")
    stage_weights(staged, other, SERVING, bucket="shape")
    expected = json.loads(staged.get_object(Bucket="shape", Key=weights_marker(other))["Body"].read())
    assert manifest == expected | {"revision": repos[other].commit}


def test_a_model_the_hub_refuses_stops_neither_the_others_nor_goes_unsaid(empty_moto, tmp_path, aws_cli):
    from catalog.boot import weights_marker

    missing = "example/not-on-the-hub"
    bucket = make_store(empty_moto, "us-east-2")
    with LoopbackHub({MODEL: HubRepo(SERVING)}) as hub:
        result = run_copy(empty_moto, hub, aws_cli, tmp_path, **store_env(f"{missing} {MODEL}", "us-east-2"))
    # The build fails, naming what it did not copy and why; the model after it is copied all the same.
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"error: the hub gives no revision main of {missing}" in result.stdout
    assert result.stdout.strip().splitlines()[-1].startswith(f"error: not copied: {missing} (")
    listed = {o["Key"] for o in client(empty_moto, "s3", "us-east-2").list_objects_v2(Bucket=bucket)["Contents"]}
    assert weights_marker(MODEL) in listed and weights_marker(missing) not in listed


def test_a_copy_made_by_an_older_weights_copy_is_made_again(empty_moto, tmp_path, aws_cli):
    from catalog.boot import weights_marker

    bucket = make_store(empty_moto, "us-east-1")
    s3 = client(empty_moto, "s3")
    # The manifest of the copy before every file an engine reads was copied: names and sizes only.
    s3.put_object(Bucket=bucket, Key=weights_marker(MODEL), Body=json.dumps({"model": MODEL, "files": {"x": 1}}))
    with LoopbackHub({MODEL: HubRepo(SERVING)}) as hub:
        result = run_copy(empty_moto, hub, aws_cli, tmp_path, **store_env(MODEL))
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(s3.get_object(Bucket=bucket, Key=weights_marker(MODEL))["Body"].read())["version"] == 2
    assert "chat_template.jinja" in {o["Key"].rsplit("/", 1)[1] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}


def test_a_pinned_revision_is_copied_and_one_the_hub_does_not_have_is_refused(empty_moto, tmp_path, aws_cli):
    from catalog.boot import weights_marker

    bucket = make_store(empty_moto, "us-east-1")
    repo = HubRepo(SERVING)
    with LoopbackHub({MODEL: repo}) as hub:
        wrong = run_copy(empty_moto, hub, aws_cli, tmp_path / "a", **store_env(f"{MODEL}@{'f' * 40}"))
        assert wrong.returncode == 1
        assert (
            f"error: the hub gives no revision {'f' * 40} of {MODEL}: " in wrong.stdout and "not found" in wrong.stdout
        )
        assert not client(empty_moto, "s3").list_objects_v2(Bucket=bucket).get("Contents")
        right = run_copy(empty_moto, hub, aws_cli, tmp_path / "b", **store_env(f"{MODEL}@{repo.commit}"))
    assert right.returncode == 0, right.stdout + right.stderr
    manifest = json.loads(client(empty_moto, "s3").get_object(Bucket=bucket, Key=weights_marker(MODEL))["Body"].read())
    assert manifest["revision"] == repo.commit


def test_without_the_store_stacks_bucket_the_copy_says_so_and_copies_nothing(empty_moto, tmp_path, aws_cli):
    from catalog.boot import store_bucket

    with LoopbackHub({MODEL: HubRepo(SERVING)}) as hub:
        result = run_copy(empty_moto, hub, aws_cli, tmp_path, **store_env(MODEL))
    assert result.returncode == 1
    assert (
        f"error: the store {store_bucket(ACCOUNT, 'us-east-1')} cannot be read (deploy the region's store stack first)"
        in result.stdout
    )
    assert not [r for r in hub.requests if "/resolve/" in r[1]]


def test_a_store_name_held_in_another_region_is_refused_and_nothing_is_copied(empty_moto, tmp_path, aws_cli):
    from catalog.boot import store_bucket

    bucket = store_bucket(ACCOUNT, "us-east-1")
    client(empty_moto, "s3", "us-west-2").create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    with LoopbackHub({MODEL: HubRepo(SERVING)}) as hub:
        result = run_copy(empty_moto, hub, aws_cli, tmp_path, **store_env(MODEL))
    assert result.returncode == 1
    assert (
        f"error: the store {bucket} is in us-west-2, not us-east-1: the servers here would not read it" in result.stdout
    )
    assert not [r for r in hub.requests if "/resolve/" in r[1]]


def test_a_copy_that_finished_first_while_this_one_downloaded_is_kept_not_replaced(empty_moto, tmp_path, aws_cli):
    """Copies run side by side (every deploy of the region's stacks starts one; the project has no
    build limit): one that finds a complete copy made while it downloaded leaves it as it is, since
    a server may be reading it, and uploads nothing of its own."""
    from catalog.boot import WEIGHTS_MANIFEST_VERSION, weights_marker, weights_prefix

    bucket = make_store(empty_moto, "us-east-1")
    theirs = {"version": WEIGHTS_MANIFEST_VERSION, "model": MODEL, "revision": "other-build", "files": {}}
    # `hf` as the copy calls it, then the other build's publishing as it lands in the meantime.
    wrapper = tmp_path / "bin"
    wrapper.mkdir(parents=True)
    (wrapper / "hf").write_text(
        "#!/bin/bash\n"
        f'"{BIN / "hf"}" "$@"; status=$?\n'
        'if [[ $status == 0 && "$1" == download ]]; then\n'
        '  printf other > "$TMPDIR/other.bin"; printf "%s" "$THEIRS" > "$TMPDIR/theirs.json"\n'
        '  aws s3 cp "$TMPDIR/other.bin" "s3://$STORE_BUCKET/weights/$2/model.safetensors" --only-show-errors\n'
        '  aws s3 cp "$TMPDIR/theirs.json" "s3://$STORE_BUCKET/weights/$2.complete" --only-show-errors\n'
        "fi\n"
        "exit $status\n"
    )
    (wrapper / "hf").chmod(0o755)
    path = os.pathsep.join([aws_cli["PATH"].split(os.pathsep)[0], str(wrapper), *aws_cli["PATH"].split(os.pathsep)[1:]])
    with LoopbackHub({MODEL: HubRepo(SERVING)}) as hub:
        result = run_copy(
            empty_moto, hub, aws_cli, tmp_path / "run", **store_env(MODEL), PATH=path, THEIRS=json.dumps(theirs)
        )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        f"{MODEL}: another copy finished first in s3://{bucket}/weights/{MODEL}/: kept, not replaced" in result.stdout
    )
    s3 = client(empty_moto, "s3")
    listed = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert listed == {f"{weights_prefix(MODEL)}model.safetensors", weights_marker(MODEL)}
    assert json.loads(s3.get_object(Bucket=bucket, Key=weights_marker(MODEL))["Body"].read()) == theirs
