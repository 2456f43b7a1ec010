#!/usr/bin/env bash
# The peer benchmark client for benchmarks/client_overhead.py (not needed by the tests): GuideLLM
# 0.8.1 in its own environment, .venv-peer (it brings torch and transformers: several GB).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv-peer/bin/guidellm ]; then
  echo "setup: installing GuideLLM 0.8.1 into .venv-peer"
  "${PYTHON:-python3}" -m venv .venv-peer
  .venv-peer/bin/python -m pip install --quiet --disable-pip-version-check guidellm==0.8.1
fi
