"""The g5g image's check of its torch (images/vllm-sm75/torch_arch.py), run as its build runs it:
under torch 2.12 (the release the image installs), CUDA build, on a machine with no GPU, as
CodeBuild's ARM builders are (the torch-check tier, `make setup-torch-check`). torch 2.12's own
`torch.cuda.get_arch_list()` answers [] there, which is why the check reads the compiled list."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE = ROOT / "images" / "vllm-sm75"
CHECK = IMAGE / "torch_arch.py"
TORCH_212 = ROOT / ".venv-torch-check" / "bin" / "python"
# The vLLM tier's torch: 2.13's CPU build, which has no CUDA architecture at all.
TORCH_CPU = ROOT / ".venv-vllm" / "bin" / "python"
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def python_212() -> Path:
    if not TORCH_212.exists():
        reason = "the torch-check tier is not set up (make setup-torch-check)"
        if IN_CI:
            pytest.fail(f"CI: {reason}; the g5g image's check cannot be skipped in CI")
        pytest.skip(reason)
    return TORCH_212


def run(python: Path, *args: str, gpu: bool = False) -> subprocess.CompletedProcess[str]:
    # No GPU, whatever the machine has: CodeBuild's builders have none.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")} | {"CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([str(python), *args], env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.torch
def test_torch_2_12s_own_arch_list_is_empty_without_a_gpu_so_the_old_check_would_stop_every_build():
    python = python_212()
    probe = "import torch; print(torch.__version__, torch.cuda.is_available(), torch.cuda.get_arch_list())"
    result = run(python, "-c", probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:2] == ["2.12.1+cu130", "False"] and result.stdout.strip().endswith("[]")


@pytest.mark.torch
def test_the_check_passes_on_torch_2_12_with_sm_75_and_no_gpu():
    result = run(python_212(), str(CHECK))
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"torch 2\.12\.1\+cu130 compiled for sm_75( sm_\d+)+\n", result.stdout)


@pytest.mark.torch
def test_the_check_stops_a_torch_compiled_without_sm_75():
    """PyTorch's own aarch64 wheels start at sm_80: the real torch 2.12 with that list stops the build."""
    code = (
        "import runpy, sys, torch\n"
        "torch._C._cuda_getArchFlags = lambda: 'sm_80 sm_90 sm_100 sm_110 sm_120'\n"
        f"sys.argv = [{str(CHECK)!r}]\n"
        f"runpy.run_path({str(CHECK)!r}, run_name='__main__')\n"
    )
    result = run(python_212(), "-c", code)
    assert result.returncode == 1
    assert "has no sm_75 kernels: compiled for sm_80 sm_90 sm_100 sm_110 sm_120" in result.stderr


@pytest.mark.torch
@pytest.mark.skipif(not TORCH_CPU.exists(), reason="the vLLM tier's environment is not set up (make setup-vllm)")
def test_the_check_stops_a_cpu_build_of_torch():
    result = run(TORCH_CPU, str(CHECK), "installing vLLM replaced torch")
    assert result.returncode == 1
    assert "has no sm_75 kernels (installing vLLM replaced torch): compiled for no CUDA architecture" in result.stderr


def test_the_image_runs_the_check_after_torch_after_vllm_and_in_the_runtime_image():
    text = (IMAGE / "Dockerfile").read_text()
    runs = [m.start() for m in re.finditer(r"python /usr/local/bin/torch_arch\.py", text)]
    assert len(runs) == 3
    # The first right after torch is installed, before vLLM's source is even fetched.
    assert runs[0] < text.index("git fetch") < runs[1] < text.index("FROM ${CUDA_RUNTIME}") < runs[2]
    assert not re.search(r"^RUN .*get_arch_list|&& .*get_arch_list", text, re.MULTILINE)
