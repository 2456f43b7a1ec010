"""The local servers the runner starts itself: the embedded llama.cpp server (`llama_cpp`, the
default when nothing is deployed) and the vLLM test tier's CPU vLLM with its converted checkpoint
(`vllm`, `vllm_checkpoint`), each a child process stopped by its process group (`child`).

Imports `runner.core` and the catalog only.
"""
