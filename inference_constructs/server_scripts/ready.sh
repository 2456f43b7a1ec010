#!/bin/bash
# inference-ready.service: wait for the health path on loopback, report ready, then keep the
# compiled graphs (Neuron) where a replaced instance finds them.
set -euo pipefail
# shellcheck source=/dev/null
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-common.sh"
until curl -fsS -o /dev/null "http://127.0.0.1:${HOST_PORT}${HEALTH_PATH}"; do sleep "${INFERENCE_POLL_S:-10}"; done
# vLLM logs how long its weights took to load ("Loading weights took 520.97 seconds"): the slow
# part of a first start, kept with the readiness so runner.up can show it.
weights=$(docker logs inference-server 2>&1 | sed -n 's/.*Loading weights took \([0-9.]*\) s.*/\1/p' | tail -n 1 || true)
report ready "" ${weights:+"weights_load_s=$weights"}
echo "inference: $BACKEND ready on port $HOST_PORT"
if [[ -n "$GRAPH_REPOSITORY" ]] && [[ -n "$(ls -A "$(graph_cache)" 2>/dev/null)" ]]; then
  tag=$(graph_tag)
  if ! aws ecr describe-images --repository-name "${GRAPH_REPOSITORY#*/}" --image-ids "imageTag=${tag##*:}" >/dev/null 2>&1; then
    tar -C "$(graph_cache)" -c . | docker import - "$tag" >/dev/null && docker push "$tag" >/dev/null \
      && echo "inference: kept the compiled graphs as $tag"
  fi
fi
