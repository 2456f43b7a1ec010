#!/bin/bash
# The app's store in the region (catalog/boot.py): a complete copy of the weights, and compiled
# graphs keyed by everything they were compiled for. Sourced by the serve and ready scripts. Every
# read names the account that must own the bucket, so another account's bucket of that name is
# never read; what is not there, not complete, or not what this server runs is not used, and the
# reason is what the caller notes.

# store_region: the store bucket's region into $region (status 1 and the reason in $why when it
# cannot be read). Globals, not output: a command substitution would lose $why.
store_region() {
  local answer
  region=""
  [[ -n "$STORE_BUCKET" ]] || { why="this server has no store"; return 1; }
  if ! answer=$(aws s3api get-bucket-location --bucket "$STORE_BUCKET" --expected-bucket-owner "$ACCOUNT_ID" \
    --query LocationConstraint --output text 2>&1); then
    if grep -q NoSuchBucket <<<"$answer"; then
      why="the region's store $STORE_BUCKET does not exist yet"
    else
      why="the region's store $STORE_BUCKET cannot be read ($(tail -n 1 <<<"$answer" | cut -c1-120))"
    fi
    return 1
  fi
  # S3 answers no constraint (None) for us-east-1, and EU for the oldest eu-west-1 buckets.
  case "$answer" in None | "") answer=us-east-1 ;; EU) answer=eu-west-1 ;; esac
  region="$answer"
}

# staged_manifest FILE: the weights copy's manifest for MODEL_ID into FILE when the store in this
# region holds a complete copy; else status 1 and the reason in $why.
staged_manifest() {
  store_region || return 1
  if [[ "$region" != "$AWS_REGION" ]]; then
    why="the store $STORE_BUCKET is in $region, not $AWS_REGION: reading weights across regions is slow and billed"
    return 1
  fi
  if ! aws s3api get-object --bucket "$STORE_BUCKET" --key "weights/$MODEL_ID.complete" \
    --expected-bucket-owner "$ACCOUNT_ID" "$1" >/dev/null 2>&1; then
    why="no complete copy of $MODEL_ID in $STORE_BUCKET yet"
    return 1
  fi
  if ! MODEL="$MODEL_ID" python3 - "$1" <<'PY'
import json, os, sys
manifest = json.load(open(sys.argv[1]))
assert manifest["model"] == os.environ["MODEL"] and manifest["files"]
PY
  then
    why="the copy's manifest in $STORE_BUCKET is not one for $MODEL_ID"
    return 1
  fi
}

# matches_manifest MANIFEST LISTING: LISTING holds `NAME SIZE` lines; status 0 when it is exactly
# the manifest's files at their sizes, else the difference in $why.
matches_manifest() {
  why=$(python3 - "$1" "$2" <<'PY'
import json, sys
want = {name: int(size) for name, size in json.load(open(sys.argv[1]))["files"].items()}
have = {}
for line in open(sys.argv[2]):
    name, _, size = line.rstrip("\n").rpartition(" ")
    if name:
        have[name] = int(float(size))
wrong = sorted(n for n in want if have.get(n) != want[n])
print(f"{len(wrong)} of its {len(want)} files missing or of another size ({', '.join(wrong[:3])})" if wrong else "")
PY
) && [[ -z "$why" ]]
}

# The compiled graphs: their key is every input they were compiled from.
graph_inputs() {
  KIND="$ACCELERATOR" IMAGE_ID="$1" MODEL="$MODEL_ID" INSTANCE_TYPE="$(imds instance-type)" python3 - \
    "$ROOT/etc/inference/serve-args" \
    "$ROOT/etc/inference/container.env" <<'PY'
import json, os, sys
print(json.dumps({"kind": os.environ["KIND"], "image_id": os.environ["IMAGE_ID"], "model": os.environ["MODEL"],
                  "instance_type": os.environ["INSTANCE_TYPE"], "serve_args": open(sys.argv[1]).read().split(),
                  "container_env": sorted(line for line in open(sys.argv[2]).read().splitlines() if line)},
                 sort_keys=True))
PY
}
graph_key() { sha256sum "$STATE_DIR/graph-inputs.json" | cut -c1-32; }
graph_object() { printf 'graphs/%s/%s' "$ACCELERATOR" "$(graph_key)"; }
compile_cache_dir() { printf '%s/compile-cache' "$(data_root)"; }
# What the compile cache holds, to tell after the start whether the engine added to it.
cache_fingerprint() { (cd "$(compile_cache_dir)" && find . -type f -printf '%P %s\n' | sort | sha256sum | cut -c1-64); }

# restore_graphs IMAGE_ID: the stored graphs for exactly these inputs, from this region's store or
# another region's of the account, into the compile cache before the engine starts.
restore_graphs() {
  local object bucket found="" work regions
  [[ -n "$COMPILE_CACHE" ]] || return 0
  graph_inputs "$1" > "$STATE_DIR/graph-inputs.json" || { note graphs "compiling: the graphs' key could not be made"; return 0; }
  object=$(graph_object)
  mkdir -p "$(compile_cache_dir)"
  work=$(mktemp -d)
  # shellcheck disable=SC2086  # STORE_REGIONS holds several words
  regions=$(printf '%s\n' "$AWS_REGION" $STORE_REGIONS | awk '!seen[$0]++' | tr '\n' ' ')
  for region in $regions; do
    bucket="${STORE_BUCKET%-"$AWS_REGION"}-$region"
    aws s3api get-object --region "$region" --bucket "$bucket" --key "$object.json" \
      --expected-bucket-owner "$ACCOUNT_ID" "$work/manifest.json" >/dev/null 2>&1 || continue
    found="s3://$bucket/$object"
    if ! python3 - "$work/manifest.json" "$STATE_DIR/graph-inputs.json" <<'PY'
import json, sys
sys.exit(json.load(open(sys.argv[1])).get("inputs") != json.load(open(sys.argv[2])))
PY
    then
      note graphs "compiling: the graphs stored at $found were compiled for other inputs (another image, model, type or settings); not loaded"
      break
    fi
    if ! aws s3api get-object --region "$region" --bucket "$bucket" --key "$object.tar.gz" \
      --expected-bucket-owner "$ACCOUNT_ID" "$work/graphs.tar.gz" >/dev/null 2>&1 \
      || [[ "$(sha256sum "$work/graphs.tar.gz" | cut -c1-64)" != "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["sha256"])' "$work/manifest.json")" ]]; then
      note graphs "compiling: the graphs at $found are missing or not what their manifest says (half written?); not loaded"
      break
    fi
    find "$(compile_cache_dir)" -mindepth 1 -delete
    if tar -xzf "$work/graphs.tar.gz" -C "$(compile_cache_dir)"; then
      note graphs "restored from $found.tar.gz ($(du -sh "$work/graphs.tar.gz" | cut -f1)) before the engine started"
    else
      find "$(compile_cache_dir)" -mindepth 1 -delete
      note graphs "compiling: the graphs at $found would not unpack; not loaded"
    fi
    break
  done
  [[ -n "$found" ]] || note graphs "compiling: no graphs stored for these inputs in the stores of ${regions% }"
  rm -rf "$work"
  cache_fingerprint > "$STATE_DIR/graph-fingerprint"
}

# keep_graphs: once the server answers, the compile cache into this region's store when the engine
# added to it (a first compile, or one for other inputs): the archive first, its manifest last.
keep_graphs() {
  local object work sha
  why=""
  [[ -n "$COMPILE_CACHE" && -s "$STATE_DIR/graph-inputs.json" ]] || return 0
  [[ -n "$(ls -A "$(compile_cache_dir)" 2>/dev/null)" ]] || return 0
  [[ "$(cache_fingerprint)" != "$(cat "$STATE_DIR/graph-fingerprint" 2>/dev/null)" ]] || return 0
  if ! store_region || [[ "$region" != "$AWS_REGION" ]]; then
    echo "inference: compiled graphs not kept: ${why:-the store $STORE_BUCKET is in $region}" >&2
    return 0
  fi
  object=$(graph_object)
  work=$(mktemp -d)
  tar -czf "$work/graphs.tar.gz" -C "$(compile_cache_dir)" .
  sha=$(sha256sum "$work/graphs.tar.gz" | cut -c1-64)
  SHA="$sha" ID="$(imds instance-id)" python3 - "$STATE_DIR/graph-inputs.json" > "$work/manifest.json" <<'PY'
import json, os, sys
print(json.dumps({"inputs": json.load(open(sys.argv[1])), "sha256": os.environ["SHA"], "by": os.environ["ID"]}))
PY
  if aws s3api put-object --bucket "$STORE_BUCKET" --key "$object.tar.gz" --body "$work/graphs.tar.gz" \
      --expected-bucket-owner "$ACCOUNT_ID" >/dev/null \
    && aws s3api put-object --bucket "$STORE_BUCKET" --key "$object.json" --body "$work/manifest.json" \
      --expected-bucket-owner "$ACCOUNT_ID" >/dev/null; then
    cache_fingerprint > "$STATE_DIR/graph-fingerprint"
    echo "inference: kept the compiled graphs as s3://$STORE_BUCKET/$object.tar.gz" >&2
  else
    echo "inference: could not keep the compiled graphs in $STORE_BUCKET" >&2
  fi
  rm -rf "$work"
}
