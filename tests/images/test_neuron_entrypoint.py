"""The Neuron image's entrypoint, run as itself under bash: flags derived from the environment,
compiled artifacts kept per model and shape, and every bad value a one-line exit 78."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "images" / "neuron" / "serve.sh"


@pytest.fixture
def host(tmp_path):
    """A Neuron device file, a stand-in `vllm` that records its arguments, and a cache folder."""
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "neuron0").touch()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "vllm"
    stub.write_text(
        '#!/bin/bash\npython3 -c \'import json, os, sys; print(json.dumps({"argv": sys.argv[1:], '
        '"artifacts": os.environ.get("NEURON_COMPILED_ARTIFACTS")}))\' "$@"\n'
    )
    stub.chmod(0o755)
    # The hub download, as huggingface_hub's snapshot_download answers: the local snapshot folder.
    download = bin_dir / "fake-python"
    download.write_text(f'#!/bin/bash\necho "{tmp_path}/hub/models--${{3//\\//--}}/snapshots/0123abc"\n')
    download.chmod(0o755)
    return tmp_path


def serve(host: Path, **env: str) -> subprocess.CompletedProcess:
    base = {
        "PATH": f"{host / 'bin'}:{os.environ['PATH']}",
        "NEURON_DEVICES": str(host / "dev" / "neuron*"),
        "COMPILED_ARTIFACTS": str(host / "cache"),
        "MODEL": "Qwen/Qwen2.5-1.5B-Instruct",
        "PYTHON": str(host / "bin" / "fake-python"),
    }
    return subprocess.run(
        ["bash", str(SCRIPT)], env=base | env, capture_output=True, text=True, timeout=30, check=False
    )


def test_flags_come_from_the_environment(host):
    result = serve(host, MAX_MODEL_LEN="8192", MAX_NUM_SEQS="2")
    assert result.returncode == 0, result.stderr
    ran = json.loads(result.stdout)
    # Served from the local snapshot (tied embeddings), under the hub id clients ask for.
    snapshot = str(host / "hub" / "models--Qwen--Qwen2.5-1.5B-Instruct" / "snapshots" / "0123abc")
    assert ran["argv"] == [
        "serve", snapshot, "--served-model-name", "Qwen/Qwen2.5-1.5B-Instruct", "--host", "0.0.0.0", "--port", "8080",
        "--tensor-parallel-size", "2", "--max-model-len", "8192", "--max-num-seqs", "2",
        "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
    ]  # fmt: skip
    # Compiled graphs are kept per model and shape, on the mounted cache.
    assert ran["artifacts"] == str(host / "cache" / "Qwen_Qwen2.5-1.5B-Instruct-tp2-len8192-seqs2")
    assert Path(ran["artifacts"]).is_dir()


def test_a_local_checkpoint_is_served_as_it_is(host):
    folder = host / "checkpoint"
    folder.mkdir()
    ran = json.loads(serve(host, MODEL=str(folder)).stdout)
    assert ran["argv"][1:4] == [str(folder), "--served-model-name", str(folder)]


def test_a_failed_download_is_retried_by_the_unit_not_a_configuration_fault(host):
    failing = host / "bin" / "failing-python"
    failing.write_text("#!/bin/bash\necho 'HTTPSConnectionPool: Max retries exceeded' >&2\nexit 1\n")
    failing.chmod(0o755)
    result = serve(host, PYTHON=str(failing))
    assert result.returncode == 1 and result.stdout == ""
    assert "serve: could not download Qwen/Qwen2.5-1.5B-Instruct from the Hugging Face hub" in result.stderr


def test_an_empty_parser_serves_without_tools(host):
    ran = json.loads(serve(host, TOOL_CALL_PARSER="").stdout)
    assert "--enable-auto-tool-choice" not in ran["argv"] and "--tool-call-parser" not in ran["argv"]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MODEL": ""}, "MODEL is not set"),
        ({"NEURON_DEVICES": "/nonexistent/neuron*"}, "no Neuron device (/nonexistent/neuron*)"),
        ({"TENSOR_PARALLEL_SIZE": "two"}, "TENSOR_PARALLEL_SIZE must be a whole number of at least 1, got 'two'"),
        ({"TENSOR_PARALLEL_SIZE": "4"}, "TENSOR_PARALLEL_SIZE 4 exceeds the 2 NeuronCores of 1 device(s)"),
        ({"MAX_MODEL_LEN": "512"}, "MAX_MODEL_LEN must be a whole number of at least 2048, got '512'"),
        ({"MAX_NUM_SEQS": "0"}, "MAX_NUM_SEQS must be a whole number of at least 1, got '0'"),
        ({"PORT": "70000"}, "PORT must be at most 65535, got '70000'"),
        ({"TOOL_CALL_PARSER": "gemma4"}, "TOOL_CALL_PARSER 'gemma4' is not one this image serves"),
    ],
)
def test_bad_values_fail_fast_with_status_78(host, env, message):
    result = serve(host, **env)
    assert result.returncode == 78
    assert result.stdout == ""  # the engine never started
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("serve: ") and message in lines[0]


def test_the_hosts_copy_from_the_store_is_served_under_the_models_name_without_a_download(host):
    checkpoint = host / "weights"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text("{}")
    (host / "bin" / "fake-python").write_text("#!/bin/bash\necho downloaded >&2; exit 1\n")  # no download allowed
    result = serve(host, CHECKPOINT=str(checkpoint))
    assert result.returncode == 0, result.stderr
    argv = json.loads(result.stdout)["argv"]
    assert argv[:4] == ["serve", str(checkpoint), "--served-model-name", "Qwen/Qwen2.5-1.5B-Instruct"]
    # A folder that is not a checkpoint is a configuration fault, not a download.
    (checkpoint / "config.json").unlink()
    refused = serve(host, CHECKPOINT=str(checkpoint))
    assert refused.returncode == 78 and "holds no config.json" in refused.stderr
