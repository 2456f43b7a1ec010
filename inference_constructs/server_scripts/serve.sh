#!/bin/bash
# ExecStart of inference-server.service: check the host, read the token (a gated model only), bring
# the image, the weights and the compiled graphs, run the engine. Each comes the fast way when the
# region has it (the image in the region's ECR, the store's copy of the weights, graphs runner.up
# recorded as this backend's) and from its source when not: which way each went, and why, is noted
# for the readiness record. The instance starts no build: the stack's deploy starts the weights
# copy and the image build, and runner.up starts an image build a server waits for. A fault a
# restart cannot fix exits 78 (the unit does not restart it; inference-failed reports it and takes
# the server to zero). An image the app builds that is not built yet takes the server to zero and
# exits 79 (a clean stop): its build brings it back.
set -uo pipefail
# shellcheck source=/dev/null
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-common.sh"
# shellcheck source=/dev/null
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-store.sh"
NO_RESTART_EXIT=78
WAITING_EXIT=79
# Set when streaming the weights failed before this boot's server first served: copy them instead.
NO_STREAM_FILE="$STATE_DIR/no-stream"

fail() {
  printf '%s\n' "$1" > "$FAILURE_FILE"
  echo "inference: failed: $1" >&2
  exit "$NO_RESTART_EXIT"
}

await_image() {
  local outcome
  report waiting-for-image "image $IMAGE is not built yet: the app's build makes it and brings this server back"
  outcome=$(stop_to_zero) || fail "image not found: $IMAGE (the app's build makes it), and $outcome"
  echo "inference: waiting for the image; $outcome" >&2
  exit "$WAITING_EXIT"
}

missing() { grep -qiE 'not found|manifest unknown|does not exist|repository .* not found|pull access denied|name unknown' <<<"$1"; }

# The image: from the region's ECR, else (when it cannot be pulled there) its public copy, when it
# has one. Sets $served.
bring_image() {
  local log status first_why=""
  served="$IMAGE"
  log=$(docker pull "$served" 2>&1)
  status=$?
  if (( status != 0 )) && [[ -n "$FALLBACK_IMAGE" ]]; then
    first_why=$(tail -n 1 <<<"$log" | cut -c1-120)
    echo "inference: $IMAGE could not be pulled: $first_why" >&2
    served="$FALLBACK_IMAGE"
    log=$(docker pull "$served" 2>&1)
    status=$?
  fi
  if (( status != 0 )); then
    echo "$log" >&2
    if missing "$log"; then
      [[ -n "$IMAGE_BUILT" ]] && await_image
      fail "image not found: $served${MISSING_IMAGE_HINT:+; $MISSING_IMAGE_HINT}"
    fi
    printf 'image pull failed: %s\n' "$(tail -n 1 <<<"$log")" > "$FAILURE_FILE"
    exit 1  # a network fault: systemd retries
  fi
  if [[ -n "$first_why" ]]; then
    note image "from $served: $IMAGE could not be pulled ($first_why)"
  else
    note image "$served"
  fi
  # What was pulled, by digest: a tag may move between two boots (the readiness keeps it).
  docker image inspect --format '{{join .RepoDigests " "}}' "$served" 2>/dev/null | tr ' ' '\n' \
    | grep -m1 -F "${served%%[:@]*}@" | sed 's/.*@//' > "$STATE_DIR/image-digest" || true
}

# The weights: the store's complete copy when there is one in this region (streamed, or copied to
# the disk first and checked file by file against the copy's sha256), else the hub, from inside
# the engine. Sets $model_arg and $checkpoint (where the engine reads the weights: the compiled
# graphs are keyed by it) and adds to the run's arguments.
# shellcheck disable=SC2034  # checkpoint: read by store.sh's graph_inputs
bring_weights() {
  local manifest listing folder
  model_arg="$MODEL_ID"
  checkpoint="hub:$MODEL_ID"
  [[ "$WEIGHTS_MODE" != none ]] || { checkpoint=image; note weights "carried by the image"; return 0; }
  manifest="$STATE_DIR/weights-manifest.json"
  if ! staged_manifest "$manifest"; then
    note weights "from the hub: $why"
    return 0
  fi
  listing="$STATE_DIR/weights-listing"
  if [[ "$WEIGHTS_MODE" == stream && "$MODEL_ARGUMENT" == positional && ! -e "$NO_STREAM_FILE" ]]; then
    # shellcheck disable=SC2016  # the backticks are JMESPath
    aws s3api list-objects-v2 --bucket "$STORE_BUCKET" --prefix "weights/$MODEL_ID/" --expected-bucket-owner "$ACCOUNT_ID" \
      --query 'Contents[].[Key, Size]' --output text 2>/dev/null | sed "s|^weights/$MODEL_ID/||; s|\t| |" > "$listing"
    if ! matches_manifest "$manifest" "$listing"; then
      note weights "from the hub: the copy in $STORE_BUCKET does not match its manifest: $why"
      return 0
    fi
    # The container cannot reach the instance's credentials (IMDSv2's hop limit is 1): the engine
    # reads with an hour's credentials of a role that may read this model's weights and nothing else.
    if reader_credentials >> "$env_file"; then
      model_arg="s3://$STORE_BUCKET/weights/$MODEL_ID/"
      checkpoint="$model_arg"
      # No SDK in the container waits on the metadata service it cannot reach.
      run_args+=(--env "AWS_REGION=$AWS_REGION" --env "AWS_DEFAULT_REGION=$AWS_REGION" --env AWS_EC2_METADATA_DISABLED=true)
      engine_args=(--load-format runai_streamer --served-model-name "$MODEL_ID")
      note weights "streamed by the engine from $model_arg"
      return 0
    fi
    why_stream="no credentials to stream it: $why"
  fi
  folder="$(data_root)/weights/$MODEL_ID"
  mkdir -p "$folder"
  if ! aws s3 sync "s3://$STORE_BUCKET/weights/$MODEL_ID/" "$folder/" --delete --only-show-errors >&2; then
    rm -rf "$folder"
    note weights "from the hub: copying from $STORE_BUCKET failed"
    return 0
  fi
  if ! matches_checksums "$manifest" "$folder"; then
    rm -rf "$folder"
    note weights "from the hub: the copy in $STORE_BUCKET does not match its manifest (changed or half done): $why"
    return 0
  fi
  phase weights
  run_args+=(-v "$folder:/weights:ro")
  checkpoint=/weights
  if [[ "$MODEL_ARGUMENT" == environment ]]; then
    run_args+=(--env CHECKPOINT=/weights)
  else
    model_arg=/weights
    engine_args=(--served-model-name "$MODEL_ID")
  fi
  note weights "copied from s3://$STORE_BUCKET/weights/$MODEL_ID/ to the disk${why_stream:+ ($why_stream)}"
}

# reader_credentials: AWS_* lines for the container's env file, from the weights reader role
# (status 1 and the reason in $why when they cannot be had).
reader_credentials() {
  local answer
  [[ -n "$WEIGHTS_READER_ROLE" ]] || { why="this server has no weights reader role"; return 1; }
  if ! answer=$(aws sts assume-role --role-arn "$WEIGHTS_READER_ROLE" --role-session-name "$BACKEND-weights" \
    --duration-seconds 3600 --query 'Credentials.[AccessKeyId, SecretAccessKey, SessionToken]' --output text 2>&1); then
    why=$(tail -n 1 <<<"$answer" | cut -c1-160)
    return 1
  fi
  read -r key secret session <<<"$answer"
  printf 'AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\nAWS_SESSION_TOKEN=%s\n' "$key" "$secret" "$session"
}

restart_phases
rm -f "$FAILURE_FILE" "$PATHS_DIR/image" "$PATHS_DIR/weights" "$PATHS_DIR/graphs"
report starting
if [[ "$ACCELERATOR" == neuron ]] && ! compgen -G "$ROOT/dev/neuron*" >/dev/null; then
  fail "no Neuron device: /dev/neuron* is missing (instance type without Inferentia/Trainium, or the driver did not load)"
fi
if [[ "$ACCELERATOR" == nvidia ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  fail "no NVIDIA GPU: nvidia-smi finds no device (wrong AMI or instance type)"
fi
env_file="$STATE_DIR/server-secrets.env"
(umask 077 && : > "$env_file")
# The token only for a gated model (the role of a server of an open model cannot read the secret).
if [[ -n "$HF_TOKEN_SECRET" ]]; then
  if token=$(aws secretsmanager get-secret-value --secret-id "$HF_TOKEN_SECRET" --query SecretString --output text 2>/dev/null); then
    printf 'HF_TOKEN=%s\nHUGGING_FACE_HUB_TOKEN=%s\n' "$token" "$token" > "$env_file"
  else
    echo "inference: secret $HF_TOKEN_SECRET not readable; the gated model $MODEL_ID will fail to download" >&2
  fi
fi
registry="${IMAGE%%/*}"
if [[ "$registry" == *.dkr.ecr.*.amazonaws.com ]]; then
  aws ecr get-login-password | docker login --username AWS --password-stdin "$registry" >/dev/null
fi
bring_image
phase image
data=$(data_root)
mkdir -p "$data/hf-cache"
run_args=(-v "$data/hf-cache:/root/.cache/huggingface")
engine_args=()
why_stream=""
[[ -e "$NO_STREAM_FILE" ]] && why_stream=$(cat "$NO_STREAM_FILE")
bring_weights
if [[ -n "$COMPILE_CACHE" ]]; then
  restore_graphs
  run_args+=(-v "$(compile_cache_dir):$COMPILE_CACHE")
fi
if [[ "$DATA_VOLUME" == /* ]]; then
  run_args+=(-v "$ROOT$DATA_VOLUME")  # a host folder
elif [[ -n "$DATA_VOLUME" ]]; then
  run_args+=(-v "$DATA_VOLUME")  # a Docker named volume
fi
# One argument per line; an image that takes none gets none (not one empty argument). The model,
# when given as the first argument, becomes where the weights come from.
mapfile -t serve_args < <(grep -v '^$' "$ROOT/etc/inference/serve-args")
if [[ "$MODEL_ARGUMENT" == positional && ${#serve_args[@]} -gt 0 ]]; then
  serve_args=("$model_arg" "${serve_args[@]:1}" "${engine_args[@]}")
fi
# shellcheck disable=SC2086  # ACCELERATOR_ARGS holds several words
docker run --rm --name inference-server --ipc=host $ACCELERATOR_ARGS \
  -p "127.0.0.1:${HOST_PORT}:${CONTAINER_PORT}" \
  "${run_args[@]}" \
  --env-file "$env_file" --env-file "$ROOT/etc/inference/container.env" \
  --log-driver awslogs --log-opt awslogs-region="$AWS_REGION" --log-opt awslogs-group="$LOG_GROUP" \
  --log-opt awslogs-stream="$(imds instance-id)/server" \
  "$served" "${serve_args[@]}"
status=$?
if [[ $status -eq 137 ]] && journalctl -k --since "-10 min" 2>/dev/null | grep -qiE 'out of memory|oom-kill'; then
  printf 'out of memory: the kernel killed the server (exit 137); a larger instance or swap is needed\n' > "$FAILURE_FILE"
else
  printf 'container exited with status %s\n' "$status" > "$FAILURE_FILE"
fi
if [[ "$model_arg" == s3://* && $status -ne 0 && ! -e "$SERVED_FILE" ]]; then
  printf 'streaming from %s failed at the last start (exit %s)\n' "$model_arg" "$status" > "$NO_STREAM_FILE"
  echo "inference: streaming the weights failed before the server served: the next start copies them first" >&2
fi
exit "$status"
