#!/bin/bash
# The weights copy, run by CodeBuild inside AWS: download a Hugging Face model's serving files
# (safetensors, config.json, tokenizer) from the hub and put them under one S3 prefix, where
# Bedrock Custom Model Import reads them. The weights never pass through the user's machine.
# A gated model takes a token from Secrets Manager (HF_TOKEN_SECRET, optional).
#
# Environment: MODEL_ID (owner/name), WEIGHTS_URI (s3://bucket/prefix/), HF_TOKEN_SECRET,
# HF_HUB_VERSION (the huggingface_hub release to install), CodeBuild's AWS_REGION.
set -euo pipefail
export AWS_DEFAULT_REGION="${AWS_REGION:?}"
: "${MODEL_ID:?}" "${WEIGHTS_URI:?}" "${HF_HUB_VERSION:?}"
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
# Custom Model Import takes the safetensors weights, config.json and the tokenizer's files only.
# One pattern per --include: the CLI's option takes one value, and a second word becomes a file
# name, after which every --include is ignored (huggingface_hub cli/download.py).
hf download "$MODEL_ID" --local-dir "$work/model" \
  --include "*.safetensors" --include "*.json" --include "tokenizer*" --include "merges.txt"
[[ -f "$work/model/config.json" ]] || { echo "error: $MODEL_ID has no config.json"; exit 1; }
compgen -G "$work/model/*.safetensors" > /dev/null || { echo "error: $MODEL_ID has no safetensors weights"; exit 1; }
rm -rf "$work/model/.cache"
# Upload to a staging prefix, then move, then mark the copy complete (a sibling object, outside
# the prefix the import reads): a copy that died half-way has no marker, and is copied again.
aws s3 rm "${WEIGHTS_URI%/}.complete" --only-show-errors
aws s3 sync "$work/model" "${WEIGHTS_URI%/}.partial/" --only-show-errors
aws s3 rm "${WEIGHTS_URI}" --recursive --only-show-errors
aws s3 mv "${WEIGHTS_URI%/}.partial/" "${WEIGHTS_URI}" --recursive --only-show-errors
echo "$MODEL_ID" > "$work/complete"
aws s3 cp "$work/complete" "${WEIGHTS_URI%/}.complete" --only-show-errors
echo "copied $MODEL_ID to $WEIGHTS_URI ($(du -sh "$work/model" | cut -f1))"
