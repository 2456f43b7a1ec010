#!/usr/bin/env bash
# Idempotent set-up of the torch-check tier: its own environment (.venv-torch-check) with PyPI's
# CUDA build of torch 2.12.1, pinned, a link to an entry of the shared cache (scripts/cache.sh)
# keyed by requirements-torch-check.txt, constraints-torch-check.txt and this script (about 4.7 GB,
# once per machine; only the most recent entry is kept). The g5g image's check of torch's compiled
# architectures runs under it with no GPU, as on CodeBuild's ARM builders (tests/images). The wheel
# exists for Linux x86_64 and aarch64: elsewhere this says so and the tier's tests skip.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -s)" != "Linux" ]; then
  echo "setup: the torch-check tier needs Linux (this is $(uname -s)); its tests will skip"
  exit 0
fi
source scripts/cache.sh
PYTHON="${PYTHON:-python3}"

build_torch_check() {
  local started
  started=$(date +%s)
  echo "setup: installing torch 2.12.1 (CUDA build) for the g5g image's check (pinned; about 4.7 GB, once per machine)"
  "$PYTHON" -m venv "$1"
  "$1/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r requirements-torch-check.txt -c constraints-torch-check.txt
  echo "setup: torch-check tier ready in $(( $(date +%s) - started )) s"
}

cached_entry torch-check "$(cache_hash requirements-torch-check.txt constraints-torch-check.txt scripts/setup_torch_check.sh)" build_torch_check
link_entry .venv-torch-check "$ENTRY"
evict torch-check 1 "$ENTRY"
