#!/bin/bash
# The weights copy, run by CodeBuild inside AWS: download a Hugging Face model's serving files
# (safetensors, config.json, tokenizer) from the hub and put them under one S3 prefix. The weights
# never pass through the user's machine. A gated model takes a token from Secrets Manager
# (HF_TOKEN_SECRET, optional). Two callers:
#
# - Bedrock Custom Model Import (stacks/import_stack.py): MODEL_ID into WEIGHTS_URI
#   (s3://bucket/prefix/), the prefix the import reads, with `<prefix>.complete` beside it.
# - The app's store in the region (inference_constructs/region_store.py): each of MODEL_IDS into
#   s3://STORE_BUCKET/weights/<model>/, once per region (a model whose copy is complete is
#   skipped), with its manifest `weights/<model>.complete` ({"model", "files": {name: bytes}})
#   written last, which the servers check what they read against. The bucket is made here on
#   first use (ACCOUNT_ID must own it): private, TLS only, encrypted, tagged APP_TAG.
#
# Environment: MODEL_ID and WEIGHTS_URI, or MODEL_IDS, STORE_BUCKET, ACCOUNT_ID and APP_TAG;
# HF_TOKEN_SECRET, HF_HUB_VERSION (the huggingface_hub release to install), CodeBuild's AWS_REGION
# and CODEBUILD_BUILD_ID.
set -euo pipefail
export AWS_DEFAULT_REGION="${AWS_REGION:?}"
: "${HF_HUB_VERSION:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# CodeBuild's standard image has no `hf`: install the pinned release (an image that has it keeps its own).
if ! command -v hf > /dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check "huggingface_hub==${HF_HUB_VERSION}"
  # pip puts the CLI in the interpreter's scripts folder, which a pyenv shim PATH may not list.
  PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
fi
if [[ -n "${HF_TOKEN_SECRET:-}" ]]; then
  if token=$(aws secretsmanager get-secret-value --secret-id "$HF_TOKEN_SECRET" --query SecretString --output text 2>/dev/null); then
    export HF_TOKEN="$token"
  else
    echo "note: no Hugging Face token in $HF_TOKEN_SECRET; downloading as an anonymous user"
  fi
fi

# download MODEL FOLDER: the serving files only. One pattern per --include: the CLI's option takes
# one value, and a second word becomes a file name, after which every --include is ignored
# (huggingface_hub cli/download.py).
download() {
  hf download "$1" --local-dir "$2" \
    --include "*.safetensors" --include "*.json" --include "tokenizer*" --include "merges.txt"
  [[ -f "$2/config.json" ]] || { echo "error: $1 has no config.json"; exit 1; }
  compgen -G "$2/*.safetensors" > /dev/null || { echo "error: $1 has no safetensors weights"; exit 1; }
  rm -rf "$2/.cache"
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
  download "$MODEL_ID" "$work/model"
  echo "$MODEL_ID" > "$work/complete"
  publish "$work/model" "$WEIGHTS_URI" "$work/complete"
  echo "copied $MODEL_ID to $WEIGHTS_URI ($(du -sh "$work/model" | cut -f1))"
  exit 0
fi

# The store: made on first use, in this region and owned by this account, or refused.
: "${STORE_BUCKET:?}" "${ACCOUNT_ID:?}" "${APP_TAG:?}"
if location=$(aws s3api get-bucket-location --bucket "$STORE_BUCKET" --expected-bucket-owner "$ACCOUNT_ID" \
  --query LocationConstraint --output text 2>&1); then
  [[ "$location" == None || -z "$location" ]] && location=us-east-1
  if [[ "$location" != "$AWS_REGION" ]]; then
    echo "error: the store $STORE_BUCKET is in $location, not $AWS_REGION: the servers here would not read it"
    exit 1
  fi
else
  echo "making the store $STORE_BUCKET in $AWS_REGION (kept across deploys)"
  location_args=()
  [[ "$AWS_REGION" == us-east-1 ]] || location_args=(--create-bucket-configuration "LocationConstraint=$AWS_REGION")
  if ! made=$(aws s3api create-bucket --bucket "$STORE_BUCKET" "${location_args[@]}" 2>&1) \
    && ! grep -q BucketAlreadyOwnedByYou <<<"$made"; then
    echo "error: could not make the store $STORE_BUCKET: $made"
    exit 1
  fi
  aws s3api put-public-access-block --bucket "$STORE_BUCKET" --public-access-block-configuration \
    BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true
  aws s3api put-bucket-encryption --bucket "$STORE_BUCKET" --server-side-encryption-configuration \
    '{"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}'
  aws s3api put-bucket-tagging --bucket "$STORE_BUCKET" --tagging "TagSet=[{Key=${APP_TAG%%=*},Value=${APP_TAG#*=}}]"
  aws s3api put-bucket-policy --bucket "$STORE_BUCKET" --policy "$(printf '{"Version": "2012-10-17", "Statement": [{"Sid": "TlsOnly", "Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": ["arn:aws:s3:::%s", "arn:aws:s3:::%s/*"], "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}' "$STORE_BUCKET" "$STORE_BUCKET")"
  aws s3api put-bucket-lifecycle-configuration --bucket "$STORE_BUCKET" --lifecycle-configuration \
    '{"Rules": [{"ID": "abort-incomplete-uploads", "Status": "Enabled", "Filter": {}, "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}]}'
fi
for model in $MODEL_IDS; do
  marker="weights/$model.complete"
  if aws s3api head-object --bucket "$STORE_BUCKET" --key "$marker" --expected-bucket-owner "$ACCOUNT_ID" >/dev/null 2>&1; then
    echo "$model is already in s3://$STORE_BUCKET/weights/$model/: not copied again"
    continue
  fi
  folder="$work/$model"
  download "$model" "$folder"
  MODEL="$model" python3 - "$folder" > "$work/manifest.json" <<'PY'
import json, os, pathlib, sys
root = pathlib.Path(sys.argv[1])
files = {str(p.relative_to(root)): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}
print(json.dumps({"model": os.environ["MODEL"], "files": files}))
PY
  publish "$folder" "s3://$STORE_BUCKET/weights/$model/" "$work/manifest.json"
  echo "copied $model to s3://$STORE_BUCKET/weights/$model/ ($(du -sh "$folder" | cut -f1))"
  rm -rf "$folder"
done
