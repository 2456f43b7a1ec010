"""The converted checkpoint's cache: reused only while it matches its source, its files and the recipe."""

from __future__ import annotations

import json

from runner.servers.vllm_checkpoint import MANIFEST, RECIPE, checkpoint_is_current, sha256


def make(tmp_path, **overrides):
    tmp_path.mkdir(parents=True, exist_ok=True)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF source")
    out = tmp_path / "hf"
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"weights")
    manifest = {
        "recipe": RECIPE,
        "source_sha256": sha256(gguf),
        "files": {"model.safetensors": sha256(out / "model.safetensors")},
    } | overrides
    (out / MANIFEST).write_text(json.dumps(manifest))
    return gguf, out


def test_a_matching_checkpoint_is_reused(tmp_path):
    gguf, out = make(tmp_path)
    assert checkpoint_is_current(gguf, out)


def test_a_changed_source_a_damaged_file_or_an_older_recipe_rebuilds(tmp_path):
    gguf, out = make(tmp_path / "a")
    gguf.write_bytes(b"GGUF other")
    assert not checkpoint_is_current(gguf, out)
    gguf, out = make(tmp_path / "b")
    (out / "model.safetensors").write_bytes(b"weightz")
    assert not checkpoint_is_current(gguf, out)
    gguf, out = make(tmp_path / "c", recipe=RECIPE - 1)
    assert not checkpoint_is_current(gguf, out)
    gguf, out = make(tmp_path / "d")
    (out / MANIFEST).write_text("{not json")
    assert not checkpoint_is_current(gguf, out)
    assert not checkpoint_is_current(gguf, tmp_path / "missing")
