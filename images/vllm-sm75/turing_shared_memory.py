"""The Turing shared-memory fix, applied to vLLM's Triton unified attention at build time.

Turing (compute capability 7.5) gives a thread block 64 KiB of shared memory. Gemma 4's
full-attention layers have 512-wide heads, and the unified attention kernel's KV tiles for that
width (32, or 128 on the tuned large-head prefill path) need more than that, so the kernel fails
to launch ("out of resources: shared memory", Required: 98304, Hardware limit: 65536) and vLLM,
which forces TRITON_ATTN for Gemma 4, cannot serve it. The fix caps both tiles at 16 when heads
are 512 wide or more, and launches the kernel with one pipeline stage, on a device older than
compute capability 8.0 (a second stage double-buffers the tiles in shared memory; Turing has no
asynchronous copy to pipeline them with). Both as the survey's rig served Gemma 4 on a T4G
(xbill9/gemma4-dev, gpu-vllm-g5g-2b/docs/turing-aarch64-gap.md: "Clamp the KV tile ... and drop
the pipeline to one stage"); nothing changes elsewhere. It goes after the function's last
assignment of a tile size or of the launch's stages, found in the syntax tree, so it holds across
vLLM versions that move those lines; if the function, the tiles or `launch_num_stages` are not
found the build stops.

    python3 turing_shared_memory.py vllm/v1/attention/ops/triton_unified_attention.py
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MARKER = "# turing-shared-memory-fix"
TILES = ("TILE_SIZE_PREFILL", "TILE_SIZE_DECODE")
STAGES = "launch_num_stages"
GUARD = f"""{MARKER}: 64 KiB of shared memory per block on compute capability 7.x; 512-wide heads
# need KV tiles of 16 there, and the launch one pipeline stage, or the kernel does not launch.
if torch.cuda.get_device_capability(q.device)[0] < 8:
    if head_size >= 512:
        TILE_SIZE_PREFILL = min(TILE_SIZE_PREFILL, 16)
        TILE_SIZE_DECODE = min(TILE_SIZE_DECODE, 16)
    {STAGES} = 1
"""


def assigns(statement: ast.stmt, names: tuple[str, ...]) -> bool:
    return any(
        isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Store)
        for node in ast.walk(statement)
    )


def assigns_tile(statement: ast.stmt) -> bool:
    return assigns(statement, TILES)


def patch(source: str) -> str:
    """`source` with the guard after the last statement of `unified_attention` that sets a tile."""
    if MARKER in source:
        return source
    tree = ast.parse(source)
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "unified_attention"), None)
    if function is None:
        raise SystemExit("turing fix: no function unified_attention in this file")
    names = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)} | {a.arg for a in function.args.args}
    if not {"head_size", "q"} <= names:
        raise SystemExit("turing fix: unified_attention has no head_size or q to test")
    setters = [s for s in function.body if assigns_tile(s)]
    if not setters:
        raise SystemExit("turing fix: unified_attention assigns no TILE_SIZE_PREFILL or TILE_SIZE_DECODE")
    stages = [s for s in function.body if assigns(s, (STAGES,))]
    if not stages:
        raise SystemExit(f"turing fix: unified_attention has no {STAGES} to set to one stage")
    last = max([*setters, *stages], key=lambda s: s.end_lineno or 0)
    lines = source.splitlines(keepends=True)
    indent = " " * last.col_offset
    guard = "".join(f"{indent}{line}\n" if line else "\n" for line in GUARD.splitlines())
    return "".join(lines[: last.end_lineno]) + guard + "".join(lines[last.end_lineno :])


def main() -> None:
    path = Path(sys.argv[1])
    patched = patch(path.read_text())
    compile(patched, str(path), "exec")
    path.write_text(patched)
    print(f"turing fix: applied to {path}")


if __name__ == "__main__":
    main()
