#!/bin/bash
# The image build, run by CodeBuild in the image's source folder: build the image unless its tag
# is already in the repository, push it, then bring back the servers that run it: a group the app
# holds at zero for this image (its readiness says waiting-for-image) goes to one instance. A
# group at zero for any other reason (it failed, or the time-to-live took it there) stays there:
# every stack update starts this build, and an update restarts nothing held at zero on purpose.
# Past the stack's expiry no server comes back: its readiness says so, and runner.up brings it
# back. A failed build writes its last log lines into the readiness of the servers waiting for
# it; they stay at zero. The build runs nothing on a server: a new image is a new tag (the
# source's hash), a new launch template, and CloudFormation's rolling update replaces the server.
#
# The repository is the region's store stack's (stacks/store_stack.py: immutable tags, so a tag
# pushed once is never pushed over). The build makes no repository and changes none.
#
# Environment: IMAGE_URI (repository:tag), IMAGE_FOLDER (the `inference:image` tag of the groups
# that run it), EXPIRES_AT (the stack's time-to-live, UTC, empty for none), and
# CodeBuild's own AWS_REGION and CODEBUILD_BUILD_ID.
set -uo pipefail
export AWS_EXECUTION_ENV="inference-build"
export AWS_DEFAULT_REGION="${AWS_REGION:?}"
# BuildKit, which the Dockerfiles' `COPY --chmod` needs (the default builder of Docker 23 and later).
export DOCKER_BUILDKIT=1
# Memory one nvcc (or compiler) job may take: vLLM's CUDA kernels need several GiB each.
GIB_PER_JOB="${GIB_PER_JOB:-4}"
LOG="${INFERENCE_BUILD_LOG:-$(mktemp)}"
repository="${IMAGE_URI#*/}"
repository="${repository%:*}"
tag="${IMAGE_URI##*:}"
: > "$LOG"

# Parallel jobs the build machine's memory allows: the smaller of the host's memory and the
# container's cgroup limit, less 2 GiB, over GIB_PER_JOB; at least 1, at most one per CPU.
build_jobs() {
  local bytes limit file gib jobs cpus
  bytes=$(awk '/MemTotal/ {printf "%.0f", $2 * 1024}' /proc/meminfo)
  for file in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do
    limit=$(cat "$file" 2>/dev/null) || continue
    [[ "$limit" =~ ^[0-9]+$ ]] && (( limit < bytes )) && bytes=$limit
  done
  gib=$(( bytes / 1024 / 1024 / 1024 ))
  cpus=$(nproc)
  jobs=$(( (gib - 2) / GIB_PER_JOB ))
  (( jobs < 1 )) && jobs=1
  (( jobs > cpus )) && jobs=$cpus
  echo "$jobs"
}

# One line per group that runs this image: NAME DESIRED BACKEND INSTANCE_IDS (comma-separated).
image_groups() {
  # shellcheck disable=SC2016  # the backticks are JMESPath
  aws autoscaling describe-auto-scaling-groups --filters "Name=tag:inference:image,Values=$IMAGE_FOLDER" \
    --query 'AutoScalingGroups[].[AutoScalingGroupName, DesiredCapacity, Tags[?Key==`inference:backend`].Value | [0], join(`,`, Instances[].InstanceId)]' \
    --output text
}

# The readiness state a backend's server last reported ("" when it cannot be read).
readiness_state() {
  aws ssm get-parameter --name "/inference/$1/ready" --query Parameter.Value --output text 2>/dev/null \
    | python3 -c 'import json, sys; print(json.load(sys.stdin).get("state", ""))' 2>/dev/null || true
}

# True once the stack's time-to-live has passed.
expired() {
  [[ -n "${EXPIRES_AT:-}" ]] && (( $(date -u +%s) >= $(date -u -d "$EXPIRES_AT" +%s) ))
}

# write_readiness BACKEND STATE REASON: what the build says of a server it does not start.
write_readiness() {
  local value
  value=$(STATE="$2" REASON="$3" BUILD="${CODEBUILD_BUILD_ID:-}" python3 -c '
import datetime, json, os
print(json.dumps({"state": os.environ["STATE"], "reason": os.environ["REASON"][:600], "build_id": os.environ["BUILD"],
                  "stopped": True, "at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}))')
  aws ssm put-parameter --name "/inference/$1/ready" --type String --overwrite --value "$value" >/dev/null \
    || echo "inference-build: could not write the readiness of $1" >&2
}

report_failure() {
  local what="$1" lines group desired backend _ids value
  lines=$(grep -v '^\s*$' "$LOG" | tail -n 6 | tr '\n' ' ' | tr -s ' ' | cut -c1-400)
  echo "inference-build: $what failed: $lines" >&2
  while read -r group desired backend _ids; do
    [[ -n "$group" && "$desired" == 0 ]] || continue  # a server that runs the old image keeps its state
    [[ "$(readiness_state "$backend")" == waiting-for-image ]] || continue  # held at zero for another reason
    write_readiness "$backend" failed "image build ${CODEBUILD_BUILD_ID:-?} failed ($what): $lines"
  done < <(image_groups)
  exit 1
}

bring_back() {
  local group desired backend _ids state
  while read -r group desired backend _ids; do
    [[ -n "$group" && "$desired" == 0 ]] || continue  # a server that runs keeps its image
    state=$(readiness_state "$backend")
    if [[ "$state" != waiting-for-image ]]; then
      echo "inference-build: $backend ($group) stays at zero: held there on purpose (${state:-no readiness})"
    elif expired; then
      write_readiness "$backend" stopped "its image was built after the time-to-live ($EXPIRES_AT): left at zero; python -m runner.up brings it back"
      echo "inference-build: $backend ($group) stays at zero: the time-to-live ($EXPIRES_AT) has passed"
    else
      aws autoscaling set-desired-capacity --auto-scaling-group-name "$group" --desired-capacity 1 \
        && echo "inference-build: $backend ($group) brought back to one instance"
    fi
  done < <(image_groups)
}

# The earlier build of this project that still builds this same image, if one does: every stack
# update starts a build, and two of one image would pay twice for one tag. The earlier one brings the
# servers back when it ends. (Nothing said, and this build goes on, where the builds cannot be read.)
earlier_build() {
  local ids
  [[ -n "${CODEBUILD_BUILD_ID:-}" ]] || return 1
  ids=$(aws codebuild list-builds-for-project --project-name "${CODEBUILD_BUILD_ID%%:*}" --sort-order DESCENDING \
    --query 'ids[:20]' --output text 2>/dev/null) || return 1
  [[ -n "$ids" && "$ids" != None ]] || return 1
  # shellcheck disable=SC2086  # one build id a word
  aws codebuild batch-get-builds --ids $ids --output json 2>/dev/null \
    | SELF="$CODEBUILD_BUILD_ID" URI="$IMAGE_URI" python3 -c '
import json, os, sys
builds = json.load(sys.stdin).get("builds", [])
def image(build):
    return next((v["value"] for v in build.get("environment", {}).get("environmentVariables", [])
                 if v["name"] == "IMAGE_URI"), "")
me = next((b for b in builds if b["id"] == os.environ["SELF"]), None)
earlier = [b for b in builds if me is not None and b["id"] != me["id"] and b["buildStatus"] == "IN_PROGRESS"
           and image(b) == os.environ["URI"] and b.get("buildNumber", 0) < me.get("buildNumber", 0)]
if not earlier:
    sys.exit(1)
print(min(earlier, key=lambda b: b["buildNumber"])["id"])'
}

if other=$(earlier_build); then
  echo "inference-build: $other is building $IMAGE_URI already; this build leaves it to that one"
  exit 0
fi

aws ecr get-login-password | docker login --username AWS --password-stdin "${IMAGE_URI%%/*}" >>"$LOG" 2>&1 \
  || report_failure "registry login"
if aws ecr describe-images --repository-name "$repository" --image-ids "imageTag=$tag" >/dev/null 2>&1; then
  echo "inference-build: $IMAGE_URI is already in the repository; not rebuilt"
else
  build_args=()
  if grep -q '^ARG MAX_JOBS' Dockerfile; then
    jobs=$(build_jobs)
    echo "inference-build: $jobs parallel jobs ($(nproc) CPUs, $GIB_PER_JOB GiB per job)"
    build_args+=(--build-arg "MAX_JOBS=$jobs")
  fi
  docker build "${build_args[@]}" --tag "$IMAGE_URI" . 2>&1 | tee -a "$LOG"
  (( PIPESTATUS[0] == 0 )) || report_failure "docker build"
  docker push "$IMAGE_URI" 2>&1 | tee -a "$LOG"
  if (( PIPESTATUS[0] != 0 )); then
    # Builds of one image may run side by side (every stack update starts one; the project has no
    # build limit): one that pushed this tag first holds it, and an immutable tag is never pushed
    # over. Its image is built from the same source (the tag is the source's hash).
    if aws ecr describe-images --repository-name "$repository" --image-ids "imageTag=$tag" >/dev/null 2>&1; then
      echo "inference-build: $IMAGE_URI was pushed by another build of the same source meanwhile; that one is kept"
    else
      report_failure "docker push"
    fi
  fi
fi
bring_back
