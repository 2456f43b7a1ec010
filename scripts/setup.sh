#!/usr/bin/env bash
# Idempotent set-up: Python virtual environment and the pinned CDK CLI.
# Re-installs only when a requirements, constraints or lock file changed since the last run.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
stamp_dir=.venv/.stamps

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
mkdir -p "$stamp_dir"

py_hash=$(cat requirements.txt requirements-dev.txt constraints.txt | sha256sum | cut -c1-16)
if [ ! -f "$stamp_dir/python-$py_hash" ]; then
  echo "setup: installing Python packages (pinned)"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt -c constraints.txt
  rm -f "$stamp_dir"/python-* && touch "$stamp_dir/python-$py_hash"
fi

npm_hash=$(sha256sum package-lock.json | cut -c1-16)
if [ ! -f "node_modules/.stamp-$npm_hash" ]; then
  echo "setup: installing the pinned aws-cdk CLI (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  touch "node_modules/.stamp-$npm_hash"
fi
