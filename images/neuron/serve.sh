#!/bin/bash
# OpenAI-compatible vLLM server on the Neuron device; arguments come from the boot script.
set -euo pipefail
exec python3 -m vllm.entrypoints.openai.api_server --host 0.0.0.0 --port "${VLLM_PORT:-8080}" --device neuron "$@"
