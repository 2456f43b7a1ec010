"""Stops the g5g image's build unless its torch carries kernels for the T4G (compute capability 7.5).

It reads the list torch was compiled for, `torch._C._cuda_getArchFlags()` (a string fixed at
torch's build, read without touching a device: torch/csrc/cuda/Module.cpp), not
`torch.cuda.get_arch_list()`, which in torch 2.12 answers [] on a machine with no GPU
(torch/cuda/__init__.py: `if not is_available(): return []`; 2.13 checks `_is_compiled()`
instead, pytorch/pytorch#180356). CodeBuild's ARM builders have no GPU. A CPU build of torch has
no such function: it carries no CUDA kernels at all.
"""

from __future__ import annotations

import sys

import torch

WANTED = "sm_75"


def compiled_arches() -> list[str]:
    flags = getattr(torch._C, "_cuda_getArchFlags", None)
    return (flags() or "").split() if flags else []


def main(argv: list[str]) -> int:
    arches = compiled_arches()
    if WANTED not in arches:
        compiled = " ".join(arches) or "no CUDA architecture (a CPU build)"
        why = f" ({argv[1]})" if len(argv) > 1 else ""
        print(f"torch {torch.__version__} has no {WANTED} kernels{why}: compiled for {compiled}", file=sys.stderr)
        return 1
    print(f"torch {torch.__version__} compiled for {' '.join(arches)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
