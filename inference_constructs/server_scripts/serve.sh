#!/bin/bash
# ExecStart of inference-server.service: check the host, read the token, bring the image, the
# weights and the compiled graphs, run the engine. Each comes from the region when the region has
# it (the mirror, the store's copy, the stored graphs) and from its source when not: which way each
# went, and why, is noted for the readiness record, and the missing mirror or copy is started for
# the next server. A fault a restart cannot fix exits 78 (the unit does not restart it;
# inference-failed reports it and takes the server to zero). An image the app builds that is not
# built yet starts or finds its build, takes the server to zero and exits 79 (a clean stop): the
# build brings it back.
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
  local build outcome
  if ! build=$(running_build "$IMAGE_BUILD_PROJECT"); then
    if ! build=$(aws codebuild start-build --project-name "$IMAGE_BUILD_PROJECT" --query build.id --output text 2>&1); then
      # A concurrent build limit of one refuses a second build: the running one is the answer.
      build=$(running_build "$IMAGE_BUILD_PROJECT") || fail "image not found: $IMAGE, and its build did not start: $build"
    fi
  fi
  report waiting-for-image "image $IMAGE is not built yet: build $build makes it and brings this server back" \
    "build_id=$build"
  outcome=$(stop_to_zero) || fail "image not found: $IMAGE (build $build is making it), and $outcome"
  echo "inference: waiting for build $build; $outcome" >&2
  exit "$WAITING_EXIT"
}

missing() { grep -qiE 'not found|manifest unknown|does not exist|repository .* not found|pull access denied|name unknown' <<<"$1"; }

# The image: the region's mirror first when the image is mirrored, else (or when the mirror cannot
# be pulled) the image itself. Sets $served.
bring_image() {
  local log mirror_why
  served="${FALLBACK_IMAGE:-$IMAGE}"
  if [[ -n "$FALLBACK_IMAGE" ]]; then
    if log=$(docker pull "$IMAGE" 2>&1); then
      served="$IMAGE"
      note image "the region's mirror $IMAGE"
      return 0
    fi
    mirror_why=$(tail -n 1 <<<"$log" | cut -c1-120)
    echo "inference: the mirror $IMAGE could not be pulled: $mirror_why" >&2
  fi
  if ! log=$(docker pull "$served" 2>&1); then
    echo "$log" >&2
    if missing "$log"; then
      [[ -n "$IMAGE_BUILD_PROJECT" ]] && await_image
      fail "image not found: $served${MISSING_IMAGE_HINT:+; $MISSING_IMAGE_HINT}"
    fi
    printf 'image pull failed: %s\n' "$(tail -n 1 <<<"$log")" > "$FAILURE_FILE"
    exit 1  # a network fault: systemd retries
  fi
  if [[ -n "$FALLBACK_IMAGE" ]]; then
    note image "from $served: its mirror could not be pulled ($mirror_why); $(start_helper "$MIRROR_PROJECT" "the mirror")"
  else
    note image "$served"
  fi
}

# The weights: the store's complete copy when there is one in this region (streamed, or copied to
# the disk first), else the hub, from inside the engine. Sets $model_arg and adds to the run's
# arguments.
bring_weights() {
  local manifest listing folder
  model_arg="$MODEL_ID"
  [[ "$WEIGHTS_MODE" != none ]] || { note weights "carried by the image"; return 0; }
  manifest="$STATE_DIR/weights-manifest.json"
  if ! staged_manifest "$manifest"; then
    [[ "$why" == *"does not exist yet"* || "$why" == "no complete copy"* ]] && why="$why; $(start_helper "$COPY_PROJECT" "the copy")"
    note weights "from the hub: $why"
    return 0
  fi
  listing="$STATE_DIR/weights-listing"
  if [[ "$WEIGHTS_MODE" == stream && "$MODEL_ARGUMENT" == positional && ! -e "$NO_STREAM_FILE" ]]; then
    # shellcheck disable=SC2016  # the backticks are JMESPath
    aws s3api list-objects-v2 --bucket "$STORE_BUCKET" --prefix "weights/$MODEL_ID/" --expected-bucket-owner "$ACCOUNT_ID" \
      --query 'Contents[].[Key, Size]' --output text 2>/dev/null | sed "s|^weights/$MODEL_ID/||; s|\t| |" > "$listing"
    if matches_manifest "$manifest" "$listing"; then
      model_arg="s3://$STORE_BUCKET/weights/$MODEL_ID/"
      run_args+=(--env "AWS_REGION=$AWS_REGION")
      engine_args=(--load-format runai_streamer --served-model-name "$MODEL_ID")
      note weights "streamed by the engine from $model_arg"
      return 0
    fi
    note weights "from the hub: the copy in $STORE_BUCKET does not match its manifest: $why"
    return 0
  fi
  folder="$(data_root)/weights/$MODEL_ID"
  mkdir -p "$folder"
  if ! aws s3 sync "s3://$STORE_BUCKET/weights/$MODEL_ID/" "$folder/" --delete --only-show-errors >&2; then
    rm -rf "$folder"
    note weights "from the hub: copying from $STORE_BUCKET failed"
    return 0
  fi
  (cd "$folder" && find . -type f -printf '%P %s\n') > "$listing"
  if ! matches_manifest "$manifest" "$listing"; then
    rm -rf "$folder"
    note weights "from the hub: the copy in $STORE_BUCKET does not match its manifest (changed or half done): $why"
    return 0
  fi
  phase weights
  run_args+=(-v "$folder:/weights:ro")
  if [[ "$MODEL_ARGUMENT" == environment ]]; then
    run_args+=(--env CHECKPOINT=/weights)
  else
    model_arg=/weights
    engine_args=(--served-model-name "$MODEL_ID")
  fi
  note weights "copied from s3://$STORE_BUCKET/weights/$MODEL_ID/ to the disk${why_stream:+ ($why_stream)}"
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
: > "$env_file"
if token=$(aws secretsmanager get-secret-value --secret-id "$HF_TOKEN_SECRET" --query SecretString --output text 2>/dev/null); then
  printf 'HF_TOKEN=%s\nHUGGING_FACE_HUB_TOKEN=%s\n' "$token" "$token" > "$env_file"
else
  echo "inference: secret $HF_TOKEN_SECRET not readable; gated models will fail to download" >&2
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
  restore_graphs "$(docker image inspect --format '{{.Id}}' "$served")"
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
