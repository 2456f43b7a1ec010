"""InferenceGpuStack: vLLM on NVIDIA instances (g6 with L4, g5g with Graviton2 + T4G)."""

from stacks.server_stack import ModelServerStack


class InferenceGpuStack(ModelServerStack):
    pass
