#!/bin/bash
# The weights copy, run by CodeBuild inside AWS: download a Hugging Face model's files at one
# revision from the hub, every file the engines read (configs, tokenizer, chat template, the
# safetensors weights), leaving out weight formats no engine of the app reads (WEIGHTS_EXCLUDED),
# and put them under one S3 prefix. The weights never pass through the user's machine. A gated
# model takes a token from Secrets Manager (HF_TOKEN_SECRET, set only for gated models). Two callers:
#
# - Bedrock Custom Model Import (stacks/import_stack.py): MODEL_ID into WEIGHTS_URI
#   (s3://bucket/prefix/), the prefix the import reads, with `<prefix>.complete` beside it.
# - The app's store in the region (stacks/store_stack.py): each of MODEL_IDS (`MODEL` or
#   `MODEL@REVISION`) into s3://STORE_BUCKET/weights/<model>/, once per region (a model whose copy
#   is complete, at this manifest version, is skipped), with its manifest `weights/<model>.complete`
#   ({"version": 2, "model", "revision", "files": {name: {"size", "sha256"}}}) written last, which
#   the servers check what they read against. The store stack owns the bucket (ACCOUNT_ID must own
#   it); the copy makes nothing but objects.
#
# Environment: MODEL_ID and WEIGHTS_URI, or MODEL_IDS, STORE_BUCKET and ACCOUNT_ID;
# HF_TOKEN_SECRET, HF_HUB_VERSION (the huggingface_hub release to install), CodeBuild's AWS_REGION
# and CODEBUILD_BUILD_ID.
set -euo pipefail
export AWS_DEFAULT_REGION="${AWS_REGION:?}"
: "${HF_HUB_VERSION:?}"
# The manifest version the servers read (server_scripts/store.sh WEIGHTS_MANIFEST_VERSION): a copy
# made under an older version is made again.
MANIFEST_VERSION=2
# Weight formats no engine of the app loads (vLLM and NxD Inference read safetensors): left out.
WEIGHTS_EXCLUDED=("*.bin" "*.pt" "*.pth" "*.ckpt" "*.h5" "*.msgpack" "*.onnx" "*.onnx_data" "*.gguf" "*.tflite"
  "*.ot" "*.mlmodel" "*.nemo" "original/*" "*.gitattributes")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# CodeBuild's standard image has no `hf`: install the pinned release (an image that has it keeps its own).
if ! command -v hf > /dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check "huggingface_hub==${HF_HUB_VERSION}"
  # pip puts the CLI in the interpreter's scripts folder, which a pyenv shim PATH may not list.
  scripts=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
  [[ -n "$scripts" ]] && PATH="$scripts:$PATH"
  command -v hf > /dev/null || { echo "error: the hf CLI is not on PATH after installing huggingface_hub"; exit 1; }
fi
if [[ -n "${HF_TOKEN_SECRET:-}" ]]; then
  if token=$(aws secretsmanager get-secret-value --secret-id "$HF_TOKEN_SECRET" --query SecretString --output text 2>/dev/null); then
    export HF_TOKEN="$token"
  else
    echo "note: no Hugging Face token in $HF_TOKEN_SECRET; downloading as an anonymous user"
  fi
fi

# revision_of MODEL [REVISION]: the commit the hub serves for REVISION (its main branch when none);
# one line and status 1 when the hub has no such model or revision (the copy then stops: set -e).
revision_of() {
  local answer errors="$work/hub-errors"
  if ! answer=$(hf models info "$1" --revision "${2:-main}" --expand sha --json 2>"$errors"); then
    echo "error: the hub gives no revision ${2:-main} of $1: $(sed 's/\x1b\[[0-9;]*m//g' "$errors" | grep -v -e '^\s*$' -e 'Hint' | tail -n 1)"
    return 1
  fi
  python3 -c 'import json, sys; print(json.load(sys.stdin)["sha"])' <<<"$answer"
}

# download MODEL REVISION FOLDER: every file the engines read, at that commit. One pattern per
# --exclude: the CLI's option takes one value, and a second word becomes a file name
# (huggingface_hub cli/download.py).
download() {
  local excludes=()
  for pattern in "${WEIGHTS_EXCLUDED[@]}"; do excludes+=(--exclude "$pattern"); done
  hf download "$1" --revision "$2" --local-dir "$3" "${excludes[@]}"
  [[ -f "$3/config.json" ]] || { echo "error: $1 has no config.json"; exit 1; }
  compgen -G "$3/*.safetensors" > /dev/null || { echo "error: $1 has no safetensors weights"; exit 1; }
  rm -rf "$3/.cache"
}

# publish FOLDER URI MARKER_FILE: upload to a staging prefix, then move, then put the marker (a
# sibling object, outside the prefix a reader lists): a copy that died half-way has no marker, and
# is copied again.
publish() {
  local build="${CODEBUILD_BUILD_ID:-local}" staging
  staging="${2%/}.partial-${build##*:}/"
  aws s3 rm "${2%/}.complete" --only-show-errors
  aws s3 sync "$1" "$staging" --only-show-errors
  aws s3 rm "$2" --recursive --only-show-errors
  aws s3 mv "$staging" "$2" --recursive --only-show-errors
  aws s3 cp "$3" "${2%/}.complete" --only-show-errors
}

if [[ -z "${MODEL_IDS:-}" ]]; then
  : "${MODEL_ID:?}" "${WEIGHTS_URI:?}"
  revision=$(revision_of "$MODEL_ID") || { echo "$revision"; exit 1; }
  download "$MODEL_ID" "$revision" "$work/model"
  echo "$MODEL_ID" > "$work/complete"
  publish "$work/model" "$WEIGHTS_URI" "$work/complete"
  echo "copied $MODEL_ID to $WEIGHTS_URI ($(du -sh "$work/model" | cut -f1))"
  exit 0
fi

# The store: the region's store stack's bucket, in this region and owned by this account.
: "${STORE_BUCKET:?}" "${ACCOUNT_ID:?}"
if ! location=$(aws s3api get-bucket-location --bucket "$STORE_BUCKET" --expected-bucket-owner "$ACCOUNT_ID" \
  --query LocationConstraint --output text 2>&1); then
  echo "error: the store $STORE_BUCKET cannot be read (deploy the region's store stack first): $(tail -n 1 <<<"$location")"
  exit 1
fi
[[ "$location" == None || -z "$location" ]] && location=us-east-1
if [[ "$location" != "$AWS_REGION" ]]; then
  echo "error: the store $STORE_BUCKET is in $location, not $AWS_REGION: the servers here would not read it"
  exit 1
fi
# copied_already MODEL PINNED: whether a complete copy of this manifest version (and the pinned
# revision) is in the store.
copied_already() {
  aws s3api get-object --bucket "$STORE_BUCKET" --key "weights/$1.complete" --expected-bucket-owner "$ACCOUNT_ID" \
    "$work/existing.json" >/dev/null 2>&1 \
    && VERSION="$MANIFEST_VERSION" PINNED="$2" python3 -c '
import json, os, sys
manifest = json.load(open(sys.argv[1]))
same = manifest.get("version") == int(os.environ["VERSION"])
sys.exit(0 if same and (not os.environ["PINNED"] or manifest.get("revision") == os.environ["PINNED"]) else 1)' \
      "$work/existing.json" 2>/dev/null
}

# copy_model MODEL PINNED: one model into the store, unless a complete copy is there already. Asked
# again just before publishing: copies may run side by side (every deploy of a stack of the region
# starts one, and the project has no build limit), and a copy that finished first may be serving a
# server by now; it is never replaced by an equal one.
copy_model() {
  local model="$1" pinned="$2" revision folder
  if copied_already "$model" "$pinned"; then
    echo "$model is already in s3://$STORE_BUCKET/weights/$model/: not copied again"
    return 0
  fi
  revision=$(revision_of "$model" "$pinned") || { echo "$revision"; return 1; }
  folder="$work/$model"
  download "$model" "$revision" "$folder"
  MODEL="$model" REVISION="$revision" VERSION="$MANIFEST_VERSION" python3 - "$folder" > "$work/manifest.json" <<'PY'
import hashlib, json, os, pathlib, sys
root = pathlib.Path(sys.argv[1])
files = {}
for path in sorted(p for p in root.rglob("*") if p.is_file()):
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    files[str(path.relative_to(root))] = {"size": path.stat().st_size, "sha256": digest.hexdigest()}
print(json.dumps({"version": int(os.environ["VERSION"]), "model": os.environ["MODEL"],
                  "revision": os.environ["REVISION"], "files": files}))
PY
  if copied_already "$model" "$pinned"; then
    echo "$model: another copy finished first in s3://$STORE_BUCKET/weights/$model/: kept, not replaced"
    rm -rf "$folder"
    return 0
  fi
  publish "$folder" "s3://$STORE_BUCKET/weights/$model/" "$work/manifest.json"
  echo "copied $model at $revision to s3://$STORE_BUCKET/weights/$model/ ($(du -sh "$folder" | cut -f1))"
  rm -rf "$folder"
}

# Each model in a subshell of its own with errexit on (a function called from `if` or `||` runs
# with errexit off): one model the hub refuses never stops the others; the build fails at the end,
# naming those not copied.
not_copied=()
for entry in $MODEL_IDS; do
  pinned=""
  [[ "$entry" == *@* ]] && pinned="${entry#*@}"
  set +e
  (set -e; copy_model "${entry%%@*}" "$pinned")
  status=$?
  set -e
  ((status == 0)) || not_copied+=("${entry%%@*}")
done
if ((${#not_copied[@]})); then
  echo "error: not copied: ${not_copied[*]} (the lines above say why); the servers of those models read the hub"
  exit 1
fi
