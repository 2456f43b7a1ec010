# The app's store in the region (catalog/boot.py): a complete copy of the weights, checked against
# the copy's manifest (a version, the hub revision, each file's size and sha256), and this
# backend's compiled graphs, keyed by everything they were compiled from. Sourced by the serve and
# ready scripts. Every read names the account that must own the bucket, so another account's
# bucket of that name is never read. Graphs are read and written under this backend's own prefix
# only, each archive under its own sha256 (`graphs/<backend>/<key>/<sha256>.tar.gz`, its manifest
# beside it), never over one already there (If-None-Match), and loaded only when its sha256 is one
# runner.up recorded for this backend and these inputs (GRAPHS_PARAMETER, which no server can
# write): what is not there, not complete, or not what this server runs is not used, and the
# reason is what the caller notes.

# The manifest version this server reads: a copy made by an older weights copy is made again.
WEIGHTS_MANIFEST_VERSION=2

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
  if ! why=$(MODEL="$MODEL_ID" VERSION="$WEIGHTS_MANIFEST_VERSION" python3 - "$1" 2>&1 <<'PY'
import json, os, sys
try:
    manifest = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit("the copy's manifest is not JSON")
if manifest.get("version") != int(os.environ["VERSION"]):
    sys.exit(f"the copy was made by an older weights copy (manifest version {manifest.get('version', 1)}); "
             "the next deploy's copy makes it again")
files = manifest.get("files")
if manifest.get("model") != os.environ["MODEL"] or not isinstance(files, dict) or not files or not all(
    isinstance(f, dict) and isinstance(f.get("size"), int) and len(str(f.get("sha256", ""))) == 64
    for f in files.values()
):
    sys.exit(f"the copy's manifest is not one for {os.environ['MODEL']}")
PY
  ); then
    [[ -n "$why" ]] || why="the manifest of the copy cannot be read"
    why="$why (in $STORE_BUCKET)"
    return 1
  fi
}

# matches_manifest MANIFEST LISTING: LISTING holds `NAME SIZE` lines; status 0 when it is exactly
# the manifest's files at their sizes, else the difference in $why.
matches_manifest() {
  why=$(python3 - "$1" "$2" <<'PY'
import json, sys
want = {name: int(f["size"]) for name, f in json.load(open(sys.argv[1]))["files"].items()}
have = {}
for line in open(sys.argv[2]):
    name, _, size = line.rstrip("\n").rpartition(" ")
    if name:
        have[name] = int(float(size))
wrong = sorted(n for n in want.keys() | have.keys() if have.get(n) != want.get(n))
print(f"{len(wrong)} of its {len(want)} files missing, extra or of another size ({', '.join(wrong[:3])})" if wrong else "")
PY
) && [[ -z "$why" ]]
}

# matches_checksums MANIFEST FOLDER: status 0 when FOLDER holds exactly the manifest's files, each
# of its sha256 (hashed on every core at once), else the difference in $why.
matches_checksums() {
  (cd "$2" && find . -type f -printf '%P %s\n') > "$STATE_DIR/weights-listing"
  matches_manifest "$1" "$STATE_DIR/weights-listing" || return 1
  why=$(cd "$2" && find . -type f -printf '%P\0' | xargs -0 -r -n 1 -P "$(nproc)" sha256sum | python3 -c '
import json, sys
want = {name: f["sha256"] for name, f in json.load(open(sys.argv[1]))["files"].items()}
wrong = sorted(name for digest, _, name in (line.rstrip("\n").partition("  ") for line in sys.stdin)
               if want.get(name) != digest)
print(f"{len(wrong)} of its {len(want)} files not of their sha256 ({chr(44).join(wrong[:3])})" if wrong else "")
' "$1") && [[ -z "$why" ]]
}

# The compiled graphs: their key is every input they were compiled from, the checkpoint's path
# among them (a Neuron engine reads its weights from where they were when it compiled), and the
# image as referenced without its registry (the same image pulled from any region's ECR).
graph_inputs() {
  # shellcheck disable=SC2154  # checkpoint: where serve.sh's bring_weights put the weights
  KIND="$ACCELERATOR" IMAGE_REF="${IMAGE#*/}" MODEL="$MODEL_ID" CHECKPOINT="$checkpoint" \
    INSTANCE_TYPE="$(imds instance-type)" python3 - "$ROOT/etc/inference/serve-args" \
    "$ROOT/etc/inference/container.env" <<'PY'
import json, os, sys
print(json.dumps({"kind": os.environ["KIND"], "image": os.environ["IMAGE_REF"], "model": os.environ["MODEL"],
                  "checkpoint": os.environ["CHECKPOINT"], "instance_type": os.environ["INSTANCE_TYPE"],
                  "serve_args": open(sys.argv[1]).read().split(),
                  "container_env": sorted(line for line in open(sys.argv[2]).read().splitlines() if line)},
                 sort_keys=True))
PY
}
graph_key() { sha256sum "$STATE_DIR/graph-inputs.json" | cut -c1-32; }
# graph_object SHA256: where the archive of that content for these inputs is (without its suffix).
graph_object() { printf 'graphs/%s/%s/%s' "$BACKEND" "$(graph_key)" "$1"; }
compile_cache_dir() { printf '%s/compile-cache' "$(data_root)"; }
# What the compile cache holds, to tell after the start whether the engine added to it.
cache_fingerprint() { (cd "$(compile_cache_dir)" && find . -type f -printf '%P %s\n' | sort | sha256sum | cut -c1-64); }

# trusted_sha KEY: the sha256 runner.up recorded for this backend's graphs of KEY (status 1: none).
trusted_sha() {
  aws ssm get-parameter --name "$GRAPHS_PARAMETER" --query Parameter.Value --output text 2>/dev/null \
    | KEY="$1" python3 -c 'import json, os, sys
digest = str(json.load(sys.stdin).get("graphs", {}).get(os.environ["KEY"], ""))
print(digest) if len(digest) == 64 else sys.exit(1)' 2>/dev/null
}

# restore_graphs: this backend's stored graphs for exactly these inputs, from this region's store
# or another region's of the account, into the compile cache before the engine starts: only an
# archive of the sha256 runner.up recorded for them, and only for weights at a path the next server
# has too (not the hub's cache).
restore_graphs() {
  local object bucket found="" work regions trusted
  mkdir -p "$(compile_cache_dir)"
  if [[ "$checkpoint" == hub:* ]]; then
    rm -f "$STATE_DIR/graph-inputs.json"  # nothing to keep: the next server would not read it
    note graphs "compiling: the weights come from the hub's cache, which the next server would not have; graphs not kept"
    return 0
  fi
  graph_inputs > "$STATE_DIR/graph-inputs.json" || { note graphs "compiling: the graphs' key could not be made"; return 0; }
  cache_fingerprint > "$STATE_DIR/graph-fingerprint"
  if ! trusted=$(trusted_sha "$(graph_key)"); then
    note graphs "compiling: runner.up has recorded no graphs of $BACKEND for these inputs"
    return 0
  fi
  object=$(graph_object "$trusted")
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
      || [[ "$(sha256sum "$work/graphs.tar.gz" | cut -c1-64)" != "$trusted" ]]; then
      note graphs "compiling: the graphs at $found are missing or not the ones runner.up recorded (sha256 differs); not loaded"
      break
    fi
    find "$(compile_cache_dir)" -mindepth 1 -delete
    if tar -xzf "$work/graphs.tar.gz" --no-same-owner -C "$(compile_cache_dir)"; then
      note graphs "restored from $found.tar.gz ($(du -sh "$work/graphs.tar.gz" | cut -f1)) before the engine started"
    else
      find "$(compile_cache_dir)" -mindepth 1 -delete
      note graphs "compiling: the graphs at $found would not unpack; not loaded"
    fi
    break
  done
  [[ -n "$found" ]] || note graphs "compiling: no graphs of $BACKEND stored for these inputs in the stores of ${regions% }"
  rm -rf "$work"
  cache_fingerprint > "$STATE_DIR/graph-fingerprint"
}

# keep_graphs: once the server answers, the compile cache into this region's store when the engine
# added to it (a first compile, or one for other inputs), under the archive's own sha256: the
# archive first, its manifest last, neither over one already there (the same sha256 there already
# is the same archive). Prints KEY:SHA256 of what is kept, for the readiness record.
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
  work=$(mktemp -d)
  # The same bytes for the same files (names sorted, no times or owners): the same compile, the same sha256.
  tar -c --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$(compile_cache_dir)" . \
    | gzip -n > "$work/graphs.tar.gz"
  sha=$(sha256sum "$work/graphs.tar.gz" | cut -c1-64)
  object=$(graph_object "$sha")
  SHA="$sha" ID="$(imds instance-id)" python3 - "$STATE_DIR/graph-inputs.json" > "$work/manifest.json" <<'PY'
import json, os, sys
print(json.dumps({"inputs": json.load(open(sys.argv[1])), "sha256": os.environ["SHA"], "by": os.environ["ID"]}))
PY
  if put_once "$object.tar.gz" "$work/graphs.tar.gz" && put_once "$object.json" "$work/manifest.json"; then
    cache_fingerprint > "$STATE_DIR/graph-fingerprint"
    echo "inference: kept the compiled graphs as s3://$STORE_BUCKET/$object.tar.gz" >&2
    printf '%s:%s' "$(graph_key)" "$sha"
  else
    echo "inference: could not keep the compiled graphs in $STORE_BUCKET: $why" >&2
  fi
  rm -rf "$work"
}

# put_once KEY FILE: FILE at KEY unless an object is there already (S3 answers 412: kept by an
# earlier boot, the same content under its own sha256); else status 1 and why in $why.
put_once() {
  local answer
  answer=$(aws s3api put-object --bucket "$STORE_BUCKET" --key "$1" --body "$2" --if-none-match '*' \
    --expected-bucket-owner "$ACCOUNT_ID" 2>&1 >/dev/null) && return 0
  grep -q PreconditionFailed <<<"$answer" && return 0
  why=$(tail -n 1 <<<"$answer" | cut -c1-160)
  return 1
}
