"""Turns the embedded GGUF model into a Hugging Face checkpoint vLLM can serve, once.

vLLM does not serve this GGUF directly. transformers' own GGUF loader (with `gguf` and
`accelerate`) dequantizes it; the state dict is saved as bf16 safetensors with its config and
tokenizer. The result is cached beside the GGUF with a manifest of sha256 sums (the source
file's and every written file's), so a changed source or a damaged checkpoint is rebuilt.

Runs inside the vLLM environment (`.venv-vllm`), which has torch and transformers:
`.venv-vllm/bin/python -m runner.servers.vllm_checkpoint GGUF OUT_DIR`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

MANIFEST = "manifest.json"
# Raised whenever the conversion below changes what it writes, so older checkpoints are rebuilt.
RECIPE = 2


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checkpoint_is_current(gguf: Path, out_dir: Path) -> bool:
    """True when `out_dir` holds a checkpoint made from this very GGUF, every file intact."""
    manifest_path = out_dir / MANIFEST
    if not manifest_path.is_file():
        return False
    try:
        manifest = json.loads(manifest_path.read_text())
    except json.JSONDecodeError:
        return False
    if manifest.get("recipe") != RECIPE or manifest.get("source_sha256") != sha256(gguf):
        return False
    files = manifest.get("files") or {}
    return bool(files) and all(
        (out_dir / name).is_file() and sha256(out_dir / name) == digest for name, digest in files.items()
    )


def convert(gguf: Path, out_dir: Path) -> dict[str, object]:
    """Dequantize `gguf` into `out_dir` (written beside it, then moved into place)."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    started = time.monotonic()
    staging = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # transformers will not re-save a GGUF-loaded model: save its (dequantized) weights directly,
    # and a config without the GGUF quantization entry. The output layer is tied to the
    # embedding: keep the embedding (what vLLM loads and ties), not the lm_head alias of it.
    staging.mkdir(parents=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    save_file(state, str(staging / "model.safetensors"), metadata={"format": "pt"})
    config = model.config
    config.architectures = [type(model).__name__]  # vLLM picks its model class by this
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.save_pretrained(staging)
    # Gemma ends a turn with <end_of_turn> as well as <eos>, as its own generation config says and
    # as llama.cpp does by itself; vLLM reads the stop ids from this file.
    end_of_turn = tokenizer.convert_tokens_to_ids("<end_of_turn>")
    GenerationConfig(
        bos_token_id=config.bos_token_id, eos_token_id=[config.eos_token_id, end_of_turn], pad_token_id=0
    ).save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    manifest = {
        "recipe": RECIPE,
        "source": gguf.name,
        "source_sha256": sha256(gguf),
        "dtype": "bfloat16",
        "architectures": model.config.architectures,
        "seconds": round(time.monotonic() - started, 1),
        "files": {p.name: sha256(p) for p in sorted(staging.iterdir()) if p.is_file()},
    }
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.rename(out_dir)
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m runner.servers.vllm_checkpoint", description=__doc__.splitlines()[0]
    )
    parser.add_argument("gguf", type=Path)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    if not args.gguf.is_file():
        print(f"error: {args.gguf} does not exist", file=sys.stderr)
        return 2
    if checkpoint_is_current(args.gguf, args.out_dir):
        print(f"checkpoint: {args.out_dir} is current")
        return 0
    manifest = convert(args.gguf, args.out_dir)
    print(f"checkpoint: converted {args.gguf.name} in {manifest['seconds']} s into {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
