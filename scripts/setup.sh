#!/usr/bin/env bash
# Idempotent set-up: the Python environment (.venv) and the pinned CDK CLI (node_modules), each a
# link to an entry of the shared cache (scripts/cache.sh) keyed by its lock files and this script:
# built once per machine and recipe, reused by every clone, rebuilt only when a pin changed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cache.sh
PYTHON="${PYTHON:-python3}"

build_python() {
  echo "setup: creating the Python environment with $($PYTHON --version) (pinned packages)"
  "$PYTHON" -m venv "$1"
  "$1/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  "$1/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt -c constraints.txt
}

build_node() {
  echo "setup: installing the pinned aws-cdk CLI (npm ci)"
  cp package.json package-lock.json "$1/"
  npm ci --prefix "$1" --no-audit --no-fund --loglevel=error
}

cached_entry python "$(cache_hash requirements.txt requirements-dev.txt constraints.txt scripts/setup.sh)" build_python
link_entry .venv "$ENTRY"
evict python 2 "$ENTRY"

cached_entry node "$(cache_hash package.json package-lock.json scripts/setup.sh)" build_node
link_entry node_modules "$ENTRY/node_modules"
evict node 2 "$ENTRY"
