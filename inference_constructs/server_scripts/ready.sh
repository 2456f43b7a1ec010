#!/bin/bash
# inference-ready.service: wait for the health path on loopback (the engine started), ask one
# question with a known answer (the first answer), report ready with this boot's phases, then keep
# what the engine compiled in the region's store for the next server.
set -uo pipefail
# shellcheck source=/dev/null
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-common.sh"
# shellcheck source=/dev/null
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-store.sh"
QUESTION="What is the capital of France? Answer with one word."
EXPECTED=paris
until curl -fsS -o /dev/null "http://127.0.0.1:${HOST_PORT}${HEALTH_PATH}"; do sleep "${INFERENCE_POLL_S:-10}"; done
phase engine
# vLLM logs how long its weights took to load ("Loading weights took 520.97 seconds"): kept with
# the readiness. When the engine fetched them itself (the hub, or streamed), that line's time is
# when the weights were present.
line=$(docker logs --timestamps inference-server 2>&1 | grep 'Loading weights took' | tail -n 1 || true)
weights=$(sed -n 's/.*Loading weights took \([0-9.]*\) s.*/\1/p' <<<"$line")
if [[ -n "$line" ]] && ! has_phase weights && at=$(date -d "${line%% *}" +%s.%3N 2>/dev/null); then
  phase weights "$at"
fi
# The first answer: the question until one comes back (a server may answer health before its
# first request is served), at most ten times.
body=$(MODEL="$MODEL_ID" QUESTION="$QUESTION" python3 -c 'import json, os
print(json.dumps({"model": os.environ["MODEL"], "messages": [{"role": "user", "content": os.environ["QUESTION"]}],
                  "max_tokens": 16, "temperature": 0}))')
answer=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
  if reply=$(curl -fsS -m 120 -H 'content-type: application/json' -d "$body" "http://127.0.0.1:${HOST_PORT}/v1/chat/completions") \
    && answer=$(python3 -c 'import json, sys
print(" ".join((json.load(sys.stdin)["choices"][0]["message"].get("content") or "").split())[:60])' <<<"$reply") \
    && [[ -n "$answer" ]]; then
    break
  fi
  answer=""
  sleep "${INFERENCE_POLL_S:-10}"
done
fields=(${weights:+"weights_load_s=$weights"})
if [[ -n "$answer" ]]; then
  phase answer
  correct=false
  [[ "${answer,,}" == *"$EXPECTED"* ]] && correct=true
  fields+=("answer=$answer" "answer_correct=$correct")
else
  fields+=("answer_error=no answer to the first question in ten tries")
fi
report ready "" "${fields[@]}"
echo "inference: $BACKEND ready on port $HOST_PORT"
keep_graphs
