#!/bin/bash
# inference-failed.service (OnFailure of the server unit): a fault a restart cannot fix, or too
# many restarts. Take the server to zero instances and say why.
set -uo pipefail
# shellcheck source=/dev/null
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-common.sh"
last=$(cat "$FAILURE_FILE" 2>/dev/null || echo "no reason recorded")
if [[ "$last" == "image not found"* || "$last" == "no Neuron device"* || "$last" == "no NVIDIA GPU"* ]]; then
  stop_and_report "$last"
else
  stop_and_report "container exits repeatedly (%BURST% starts in %WINDOW% s); last: $last"
fi
