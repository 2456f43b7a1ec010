#!/bin/bash
# ExecStart of inference-server.service: check the host, read the token, pull the image, run it.
# A fault a restart cannot fix exits 78 (the unit does not restart it; inference-failed reports
# it and takes the server to zero). An image the app builds that is not built yet starts or
# finds its build, takes the server to zero and exits 79 (a clean stop): the build brings it back.
set -uo pipefail
# shellcheck source=/dev/null
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-common.sh"
NO_RESTART_EXIT=78
WAITING_EXIT=79

fail() {
  printf '%s\n' "$1" > "$FAILURE_FILE"
  echo "inference: failed: $1" >&2
  exit "$NO_RESTART_EXIT"
}

running_build() {
  local ids
  ids=$(aws codebuild list-builds-for-project --project-name "$IMAGE_BUILD_PROJECT" --sort-order DESCENDING \
    --query 'ids[:5]' --output text) || return 1
  [[ -n "$ids" && "$ids" != None ]] || return 1
  # shellcheck disable=SC2086,SC2016  # several ids, one word each; the backticks are JMESPath
  aws codebuild batch-get-builds --ids $ids --query 'builds[?buildStatus==`IN_PROGRESS`].id | [0]' \
    --output text | grep -v '^None$'
}

await_image() {
  local build outcome
  if ! build=$(running_build); then
    if ! build=$(aws codebuild start-build --project-name "$IMAGE_BUILD_PROJECT" --query build.id --output text 2>&1); then
      # A concurrent build limit of one refuses a second build: the running one is the answer.
      build=$(running_build) || fail "image not found: $IMAGE, and its build did not start: $build"
    fi
  fi
  report waiting-for-image "image $IMAGE is not built yet: build $build makes it and brings this server back" \
    "build_id=$build"
  outcome=$(stop_to_zero) || fail "image not found: $IMAGE (build $build is making it), and $outcome"
  echo "inference: waiting for build $build; $outcome" >&2
  exit "$WAITING_EXIT"
}

restore_graphs() {
  [[ -n "$GRAPH_REPOSITORY" ]] || return 0
  local tag container
  tag=$(graph_tag)
  if ! docker pull "$tag" >/dev/null 2>&1; then
    echo "inference: no compiled graphs kept for this model and shape yet ($tag)" >&2
    return 0
  fi
  mkdir -p "$(graph_cache)"
  container=$(docker create "$tag" /none) && docker cp "$container:/." "$(graph_cache)/" \
    && docker rm "$container" >/dev/null && echo "inference: restored compiled graphs from $tag" >&2
}

report starting
rm -f "$FAILURE_FILE"
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
for registry in $(printf '%s\n' "${IMAGE%%/*}" "${GRAPH_REPOSITORY%%/*}" | sort -u); do
  if [[ "$registry" == *.dkr.ecr.*.amazonaws.com ]]; then
    aws ecr get-login-password | docker login --username AWS --password-stdin "$registry" >/dev/null
  fi
done
if ! pull_log=$(docker pull "$IMAGE" 2>&1); then
  echo "$pull_log" >&2
  if grep -qiE 'not found|manifest unknown|does not exist|repository .* not found|pull access denied' <<<"$pull_log"; then
    [[ -n "$IMAGE_BUILD_PROJECT" ]] && await_image
    fail "image not found: $IMAGE${MISSING_IMAGE_HINT:+; $MISSING_IMAGE_HINT}"
  fi
  printf 'image pull failed: %s\n' "$(tail -n 1 <<<"$pull_log")" > "$FAILURE_FILE"
  exit 1  # a network fault: systemd retries
fi
restore_graphs
# One argument per line; an image that takes none gets none (not one empty argument).
mapfile -t serve_args < <(grep -v '^$' "$ROOT/etc/inference/serve-args")
volume_args=(-v "$ROOT/opt/inference/hf-cache:/root/.cache/huggingface")
if [[ "$DATA_VOLUME" == /* ]]; then
  volume_args+=(-v "$ROOT$DATA_VOLUME")  # a host folder (the Neuron graphs)
elif [[ -n "$DATA_VOLUME" ]]; then
  volume_args+=(-v "$DATA_VOLUME")  # a Docker named volume
fi
# shellcheck disable=SC2086  # ACCELERATOR_ARGS holds several words
docker run --rm --name inference-server --ipc=host $ACCELERATOR_ARGS \
  -p "127.0.0.1:${HOST_PORT}:${CONTAINER_PORT}" \
  "${volume_args[@]}" \
  --env-file "$env_file" --env-file "$ROOT/etc/inference/container.env" \
  --log-driver awslogs --log-opt awslogs-region="$AWS_REGION" --log-opt awslogs-group="$LOG_GROUP" \
  --log-opt awslogs-stream="$(imds instance-id)/server" \
  "$IMAGE" "${serve_args[@]}"
status=$?
if [[ $status -eq 137 ]] && journalctl -k --since "-10 min" 2>/dev/null | grep -qiE 'out of memory|oom-kill'; then
  printf 'out of memory: the kernel killed the server (exit 137); a larger instance or swap is needed\n' > "$FAILURE_FILE"
else
  printf 'container exited with status %s\n' "$status" > "$FAILURE_FILE"
fi
exit "$status"
