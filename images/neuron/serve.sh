#!/bin/bash
# Entrypoint of the Neuron server image: vLLM's OpenAI-compatible server on the Neuron cores,
# its flags derived from the environment the stack sets. Every value is checked before the
# engine starts; a bad one, or no Neuron device, exits with status 78 (a configuration fault:
# the server's systemd unit does not restart it) and one line saying what is wrong.
#
#   MODEL                 Hugging Face id, or a local checkpoint folder (required)
#   TENSOR_PARALLEL_SIZE  NeuronCores to shard over (default 2: one Inferentia2 or Trainium chip)
#   MAX_MODEL_LEN         prompt + output tokens per sequence (default 4096; at least 2048, room
#                         for a Strands agent's system prompt and tool schemas)
#   MAX_NUM_SEQS          sequences decoded together (default 4)
#   TOOL_CALL_PARSER      vLLM's parser for the model's tool calls; empty: no tools (default hermes)
#   PORT                  port of the OpenAI-compatible API and /health (default 8080)
#   COMPILED_ARTIFACTS    where compiled graphs are kept, per model and shape, so a restart does
#                         not recompile (default /var/cache/neuron; mount a volume there)
#   NEURON_DEVICES        device files to look for (default /dev/neuron*)
#   CHECKPOINT            a local folder holding MODEL's files (the host's copy from the app's store):
#                         served from there under MODEL's name, with no download
#
# The checkpoint is downloaded first (into the Hugging Face cache the host mounts) and served from
# that local folder under its hub id: vLLM-Neuron's shard-on-load fails on models with tied word
# embeddings, Qwen 2.5 among them, when it reads them from the hub ("Cannot copy out of meta
# tensor"; the Neuron vLLM user guide's known issues give the local path as the fix).
set -euo pipefail

die() {
  echo "serve: $*" >&2
  exit 78
}

whole_number() {  # whole_number NAME VALUE MIN
  [[ "$2" =~ ^[0-9]+$ ]] && (( 10#$2 >= $3 )) || die "$1 must be a whole number of at least $3, got '$2'"
}

[[ -n "${MODEL:-}" ]] || die "MODEL is not set: the Hugging Face id of the model to serve"
TENSOR_PARALLEL_SIZE="${TENSOR_PARALLEL_SIZE:-2}"
MAX_MODEL_LEN="${MAX_MODEL_LEN:-4096}"
MAX_NUM_SEQS="${MAX_NUM_SEQS:-4}"
TOOL_CALL_PARSER="${TOOL_CALL_PARSER-hermes}"
PORT="${PORT:-8080}"
COMPILED_ARTIFACTS="${COMPILED_ARTIFACTS:-/var/cache/neuron}"

shopt -s nullglob
# shellcheck disable=SC2206  # the pattern is meant to expand
devices=(${NEURON_DEVICES:-/dev/neuron*})
shopt -u nullglob
(( ${#devices[@]} > 0 )) || die "no Neuron device (${NEURON_DEVICES:-/dev/neuron*}): run the container with --device=/dev/neuron0 on an inf2 or trn1 instance"

whole_number TENSOR_PARALLEL_SIZE "$TENSOR_PARALLEL_SIZE" 1
whole_number MAX_MODEL_LEN "$MAX_MODEL_LEN" 2048
whole_number MAX_NUM_SEQS "$MAX_NUM_SEQS" 1
whole_number PORT "$PORT" 1
(( 10#$PORT <= 65535 )) || die "PORT must be at most 65535, got '$PORT'"
cores=$(( ${#devices[@]} * 2 ))  # two NeuronCore-v2 per Inferentia2 or Trainium device
(( 10#$TENSOR_PARALLEL_SIZE <= cores )) || die "TENSOR_PARALLEL_SIZE $TENSOR_PARALLEL_SIZE exceeds the $cores NeuronCores of ${#devices[@]} device(s)"
case "$TOOL_CALL_PARSER" in
  "" | hermes | llama3_json | mistral | pythonic | granite | internlm | jamba) ;;
  *) die "TOOL_CALL_PARSER '$TOOL_CALL_PARSER' is not one this image serves (hermes, llama3_json, mistral, pythonic, granite, internlm, jamba, or empty for none)" ;;
esac

# One folder per model and shape: a compiled graph is only valid for the shape it was traced at.
shape="$(tr '/:' '__' <<<"$MODEL")-tp${TENSOR_PARALLEL_SIZE}-len${MAX_MODEL_LEN}-seqs${MAX_NUM_SEQS}"
export NEURON_COMPILED_ARTIFACTS="$COMPILED_ARTIFACTS/$shape"
mkdir -p "$NEURON_COMPILED_ARTIFACTS" || die "COMPILED_ARTIFACTS $COMPILED_ARTIFACTS is not writable"

if [[ -n "${CHECKPOINT:-}" ]]; then
  [[ -f "$CHECKPOINT/config.json" ]] || die "CHECKPOINT $CHECKPOINT holds no config.json: not a checkpoint of $MODEL"
  checkpoint="$CHECKPOINT"
elif [[ -d "$MODEL" ]]; then
  checkpoint="$MODEL"
elif ! checkpoint=$("${PYTHON:-python3}" -c 'import sys; from huggingface_hub import snapshot_download; print(snapshot_download(sys.argv[1]))' "$MODEL"); then
  echo "serve: could not download $MODEL from the Hugging Face hub" >&2
  exit 1  # a network or hub fault: the unit restarts it
fi

args=(serve "$checkpoint" --served-model-name "$MODEL"
  --host 0.0.0.0 --port "$PORT"
  --tensor-parallel-size "$TENSOR_PARALLEL_SIZE"
  --max-model-len "$MAX_MODEL_LEN"
  --max-num-seqs "$MAX_NUM_SEQS")
if [[ -n "$TOOL_CALL_PARSER" ]]; then
  args+=(--enable-auto-tool-choice --tool-call-parser "$TOOL_CALL_PARSER")
fi
echo "serve: vllm ${args[*]} (compiled artifacts: $NEURON_COMPILED_ARTIFACTS)" >&2
exec vllm "${args[@]}"
