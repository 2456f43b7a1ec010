"""The g5g image's Turing shared-memory fix, applied to vLLM's real unified attention source
(vLLM 0.30.0 from the vLLM tier's environment) and to sources it must refuse."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("turing_fix", ROOT / "images" / "vllm-sm75" / "turing_shared_memory.py")
turing_fix = importlib.util.module_from_spec(spec)
spec.loader.exec_module(turing_fix)
REAL = sorted(ROOT.glob(".venv-vllm/lib/python3*/site-packages/vllm/v1/attention/ops/triton_unified_attention.py"))


@pytest.mark.skipif(not REAL, reason="the vLLM tier's environment is not set up (make setup-vllm)")
def test_the_fix_lands_after_every_tile_assignment_in_real_vllm():
    source = REAL[0].read_text()
    patched = turing_fix.patch(source)
    compile(patched, "triton_unified_attention.py", "exec")
    function = next(
        n for n in ast.parse(patched).body if isinstance(n, ast.FunctionDef) and n.name == "unified_attention"
    )
    setters = [s for s in function.body if turing_fix.assigns_tile(s)]
    guard = setters[-1]
    # The last statement setting a tile is the guard itself: on compute capability 7.x it caps both
    # tiles at 16 for 512-wide heads and launches with one pipeline stage (the survey's fix).
    assert isinstance(guard, ast.If) and ast.unparse(guard.test) == "torch.cuda.get_device_capability(q.device)[0] < 8"
    heads, stages = guard.body
    assert ast.unparse(heads.test) == "head_size >= 512"
    assert [ast.unparse(s) for s in heads.body] == [
        "TILE_SIZE_PREFILL = min(TILE_SIZE_PREFILL, 16)",
        "TILE_SIZE_DECODE = min(TILE_SIZE_DECODE, 16)",
    ]
    assert ast.unparse(stages) == "launch_num_stages = 1"
    # ... and it is also after every other assignment of the stages, and before the launch reads them.
    body = function.body
    index = body.index(guard)
    assert not any(turing_fix.assigns(s, ("launch_num_stages",)) for s in body[index + 1 :])
    assert any("launch_num_stages" in ast.unparse(s) for s in body[index + 1 :])
    # 0.30.0 widens the prefill tile to 128 for large heads and clamps for tensor descriptors
    # before launching: the guard comes after both.
    earlier = "\n".join(ast.unparse(s) for s in setters[:-1])
    assert "TILE_SIZE_PREFILL = 128" in earlier and "min(TILE_SIZE_PREFILL, block_size)" in earlier
    assert turing_fix.patch(patched) == patched  # applying it twice changes nothing


def test_a_source_without_the_function_or_its_tiles_stops_the_build(tmp_path):
    with pytest.raises(SystemExit, match="no function unified_attention"):
        turing_fix.patch("def other():\n    pass\n")
    with pytest.raises(SystemExit, match="assigns no TILE_SIZE_PREFILL"):
        turing_fix.patch("def unified_attention(q):\n    head_size = q.shape[2]\n    return head_size\n")
    # A vLLM whose launch takes no stage setting cannot get the one-stage pipeline: the build stops.
    with pytest.raises(SystemExit, match="no launch_num_stages"):
        turing_fix.patch(
            "def unified_attention(q):\n    head_size = q.shape[2]\n    TILE_SIZE_PREFILL = 32\n    TILE_SIZE_DECODE = 16\n"
        )
    target = tmp_path / "attention.py"
    target.write_text(
        "import torch\n\ndef unified_attention(q):\n    head_size = q.shape[2]\n    launch_num_stages = None\n"
        "    TILE_SIZE_PREFILL = 32\n    TILE_SIZE_DECODE = 16\n    return TILE_SIZE_PREFILL, launch_num_stages\n"
    )
    sys.argv = ["turing_shared_memory.py", str(target)]
    turing_fix.main()
    assert "turing-shared-memory-fix" in target.read_text()
