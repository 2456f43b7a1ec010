#!/bin/bash
# Shared by every script of an inference server: where its files are, one way to report its
# readiness, and one way to take it to zero instances when it cannot serve.
# INFERENCE_ROOT is empty on an instance; the emulator runs these scripts in a scratch root.
ROOT="${INFERENCE_ROOT:-}"
# shellcheck source=/dev/null
source "$ROOT/etc/inference/server.env"
STATE_DIR="$ROOT/run/inference"
# shellcheck disable=SC2034  # read by the scripts that source this one
FAILURE_FILE="$STATE_DIR/failure"
STATE_FILE="$STATE_DIR/state"
# Present once this boot's server has been ready: the launch deadline is for a server that never
# served, not for one restarted later (an image rebuilt, Run Command) that is starting again.
SERVED_FILE="$STATE_DIR/served"
# The user agent of every AWS call names the server as its caller (botocore's exec-env).
export AWS_EXECUTION_ENV="inference-server"
export AWS_DEFAULT_REGION="$AWS_REGION"
install -d -m 700 "$STATE_DIR"

imds() {
  local token
  token=$(curl -sS -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 60')
  curl -sS -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/meta-data/$1"
}

# report STATE [REASON] [KEY=VALUE ...]: {"state", "instance_id", "zone", "model", "at"[, "reason"]
# [, KEY: VALUE ...]} into the readiness parameter, and STATE into the local state file.
report() {
  local state="$1" reason="${2:-}" value
  shift $(( $# < 2 ? $# : 2 ))
  printf '%s\n' "$state" > "$STATE_FILE"
  [[ "$state" == ready ]] && : > "$SERVED_FILE"
  value=$(STATE="$state" REASON="$reason" ID="$(imds instance-id)" ZONE="$(imds placement/availability-zone)" \
    MODEL="$MODEL_ID" python3 - "$@" <<'PY'
import datetime, json, os, sys
d = {"state": os.environ["STATE"], "instance_id": os.environ["ID"], "zone": os.environ["ZONE"],
     "model": os.environ["MODEL"], "at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
if os.environ["REASON"]:
    d["reason"] = os.environ["REASON"][:600]
for item in sys.argv[1:]:
    key, _, text = item.partition("=")
    try:
        d[key] = float(text)
    except ValueError:
        d[key] = {"true": True, "false": False}.get(text, text)
print(json.dumps(d))
PY
)
  aws ssm put-parameter --name "$READY_PARAMETER" --type String --overwrite --value "$value" >/dev/null \
    || echo "inference: could not write the readiness parameter $READY_PARAMETER" >&2
}

# stop_to_zero: set this instance's Auto Scaling group to zero instances (the instance role may
# do so for its own backend's group only), so a server that does not serve stops billing.
stop_to_zero() {
  local group error
  group=$(aws autoscaling describe-auto-scaling-instances --instance-ids "$(imds instance-id)" \
    --query 'AutoScalingInstances[0].AutoScalingGroupName' --output text 2>&1) || {
    echo "could not find the instance's group: $group"
    return 1
  }
  if ! error=$(aws autoscaling set-desired-capacity --auto-scaling-group-name "$group" --desired-capacity 0 2>&1); then
    echo "could not take group $group to zero: $error"
    return 1
  fi
  echo "group $group taken to zero instances"
}

# stop_and_report REASON: report it failed, take the server to zero, then report the outcome.
stop_and_report() {
  local outcome
  report failed "$1"
  if outcome=$(stop_to_zero); then
    report failed "$1" stopped=true
  else
    report failed "$1; $outcome" stopped=false
  fi
  echo "inference: failed: $1 ($outcome)" >&2
}

# The compiled graphs a replaced instance can reuse are keyed by the image and the engine's settings.
graph_tag() {
  printf '%s:graphs-%s' "$GRAPH_REPOSITORY" \
    "$({ echo "$IMAGE"; cat "$ROOT/etc/inference/container.env"; } | sha256sum | cut -c1-16)"
}
graph_cache() { printf '%s%s' "$ROOT" "${DATA_VOLUME%%:*}"; }
