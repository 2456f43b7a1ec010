#!/bin/bash
# Shared by every script of an inference server: where its files are, one way to report its
# readiness, and one way to take it to zero instances when it cannot serve.
# INFERENCE_ROOT is empty on an instance; the emulator runs these scripts in a scratch root.
ROOT="${INFERENCE_ROOT:-}"
# The server's own settings (from the boot archive) and the deploy's values (from the user data).
# shellcheck source=/dev/null
source "$ROOT/etc/inference/server.env"
# shellcheck source=/dev/null
source "$ROOT/etc/inference/deploy.env"
STATE_DIR="$ROOT/run/inference"
# shellcheck disable=SC2034  # read by the scripts that source this one
FAILURE_FILE="$STATE_DIR/failure"
STATE_FILE="$STATE_DIR/state"
# Present once this boot's server has answered its first question: the launch deadline is for a
# server that never served, not for one keeping its graphs after it answered, nor for one restarted
# later (an image rebuilt, Run Command) that is starting again.
SERVED_FILE="$STATE_DIR/served"
# This boot's phases (`NAME EPOCH` lines) and the way each step went (one file per step).
PHASES_FILE="$STATE_DIR/phases"
PATHS_DIR="$STATE_DIR/paths"
# The user agent of every AWS call names the server as its caller (botocore's exec-env).
export AWS_EXECUTION_ENV="inference-server"
export AWS_DEFAULT_REGION="$AWS_REGION"
install -d -m 700 "$STATE_DIR"

imds() {
  local token
  token=$(curl -sS -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 60')
  curl -sS -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/meta-data/$1"
}

# phase NAME [EPOCH]: this boot reached NAME now (or at EPOCH); the last mark of a name counts.
# (bash's own clock: Ubuntu 26.04's `date` prints %3N as nine digits, uutils/coreutils#12001)
phase() { printf '%s %s\n' "$1" "${2:-$EPOCHREALTIME}" >> "$PHASES_FILE"; }
has_phase() { grep -q "^$1 " "$PHASES_FILE" 2>/dev/null; }
# A unit start keeps only the boot's own mark: what this start reaches is marked again.
restart_phases() { grep '^running ' "$PHASES_FILE" > "$PHASES_FILE.new" 2>/dev/null; mv -f "$PHASES_FILE.new" "$PHASES_FILE"; }
# note STEP TEXT: which way a step went (its fast path, or the fallback and why), for the record.
note() {
  install -d -m 700 "$PATHS_DIR"
  printf '%s\n' "${2:0:400}" > "$PATHS_DIR/$1"
  echo "inference: $1: $2" >&2
}

# report STATE [REASON] [KEY=VALUE ...]: {"state", "instance_id", "zone", "model", "at"[, "reason"]
# [, "phases": [[NAME, EPOCH], ...] in the order reached][, "paths": {STEP: TEXT}][, KEY: VALUE ...]}
# into the readiness parameter, and STATE into the local state file.
report() {
  local state="$1" reason="${2:-}" value
  shift $(( $# < 2 ? $# : 2 ))
  printf '%s\n' "$state" > "$STATE_FILE"
  [[ "$state" == ready ]] && : > "$SERVED_FILE"
  value=$(STATE="$state" REASON="$reason" ID="$(imds instance-id)" ZONE="$(imds placement/availability-zone)" \
    MODEL="$MODEL_ID" PHASES="$PHASES_FILE" PATHS="$PATHS_DIR" python3 - "$@" <<'PY'
import datetime, json, os, pathlib, sys
d = {"state": os.environ["STATE"], "instance_id": os.environ["ID"], "zone": os.environ["ZONE"],
     "model": os.environ["MODEL"], "at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
if os.environ["REASON"]:
    d["reason"] = os.environ["REASON"][:600]
marks = {}
for line in pathlib.Path(os.environ["PHASES"]).read_text().splitlines() if os.path.exists(os.environ["PHASES"]) else []:
    name, _, at = line.partition(" ")
    marks[name] = round(float(at), 3)
if marks:
    d["phases"] = sorted(([n, t] for n, t in marks.items()), key=lambda m: m[1])
paths = pathlib.Path(os.environ["PATHS"])
if paths.is_dir():
    d["paths"] = {p.name: p.read_text().strip() for p in sorted(paths.iterdir())}
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

# Where the weights, the Hugging Face cache and the compile cache live: the instance store when
# the boot chose it (inference-storage), else the root volume.
data_root() { cat "$STATE_DIR/data-root" 2>/dev/null || printf '%s/opt/inference' "$ROOT"; }
