#!/bin/bash
# inference-ready.service: wait for the health path on loopback (the engine started), ask one
# question with a known answer (the first answer), keep what the engine compiled in the region's
# store for the next server, and report ready with this boot's phases and what it kept (runner.up
# records its sha256 as the graphs this backend's next servers may load). A server that answers its health
# path but not the question reports failed, with what came back, and goes to zero instances.
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
# (Python reads docker's RFC 3339 time: Ubuntu 26.04's `date` mis-prints %3N, uutils/coreutils#12001.)
if [[ -n "$line" ]] && ! has_phase weights && at=$(python3 -c 'import datetime, re, sys
stamp = re.sub(r"(\.\d{6})\d+", r"\1", sys.argv[1]).replace("Z", "+00:00")
print(f"{datetime.datetime.fromisoformat(stamp).timestamp():.3f}")' "${line%% *}" 2>/dev/null); then
  phase weights "$at"
fi
# The first answer: the question until one comes back (a server may answer health before its
# first request is served), at most ten times.
body=$(MODEL="$MODEL_ID" QUESTION="$QUESTION" python3 -c 'import json, os
print(json.dumps({"model": os.environ["MODEL"], "messages": [{"role": "user", "content": os.environ["QUESTION"]}],
                  "max_tokens": 16, "temperature": 0}))')
answer=""
error=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
  if reply=$(curl -sS -m 120 -H 'content-type: application/json' -d "$body" -w '\n%{http_code}' \
    "http://127.0.0.1:${HOST_PORT}/v1/chat/completions" 2>&1); then
    code="${reply##*$'\n'}"
    reply="${reply%$'\n'*}"
    if [[ "$code" == 200 ]] && answer=$(python3 -c 'import json, sys
print(" ".join((json.load(sys.stdin)["choices"][0]["message"].get("content") or "").split())[:60])' <<<"$reply" 2>/dev/null) \
      && [[ -n "$answer" ]]; then
      break
    fi
    [[ "$code" == 200 ]] && error="an empty or unreadable answer: $(head -c 160 <<<"$reply" | tr -s '\n' ' ')" \
      || error="HTTP $code: $(head -c 160 <<<"$reply" | tr -s '\n' ' ')"
  else
    error=$(tail -n 1 <<<"$reply" | cut -c1-160)
  fi
  answer=""
  sleep "${INFERENCE_POLL_S:-10}"
done
if [[ -z "$answer" ]]; then
  stop_and_report "the engine answers $HEALTH_PATH but not a question in ten tries; last: $error"
  exit 1
fi
phase answer
# It served: the launch deadline, for a server that never answers, no longer applies, while what it
# compiled is kept below (gigabytes, over whatever link it has).
: > "$SERVED_FILE"
correct=false
[[ "${answer,,}" == *"$EXPECTED"* ]] && correct=true
digest=$(cat "$STATE_DIR/image-digest" 2>/dev/null || true)
fields=(${weights:+"weights_load_s=$weights"} ${digest:+"image_digest=$digest"} "answer=$answer" "answer_correct=$correct")
# What the engine compiled, kept in the store before the ready report that says so: runner.up
# records it from that report as the graphs this backend's next servers may load.
kept=$(keep_graphs) || kept=""
report ready "" "${fields[@]}" ${kept:+"graphs=$kept"}
echo "inference: $BACKEND ready on port $HOST_PORT"
