"""A real vLLM server on loopback: vLLM's CPU build serving the embedded model, for the test tier.

Three of the six rows (g6, g5g, SageMaker) run vLLM. This starts the same engine here, with the
serving flags the stacks write for the g6 server wherever they apply on a CPU, so the runner is
exercised against vLLM's real request validation, stream shape and tool-call parser. It lives
in its own environment (`.venv-vllm`, `scripts/setup_vllm.sh`); the server is a child process
group, stopped by PID.
"""

from __future__ import annotations

import argparse
import time

from runner.servers.vllm import SERVED_NAME, VllmServer


def build_parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(
        prog="python -m runner.vllm_local",
        description="Serve the embedded model on vLLM's CPU build (.venv-vllm) on 127.0.0.1 until Ctrl-C.",
        epilog=f"Then: runner.bench --endpoint vllm=URL,model={SERVED_NAME}, or INFERENCE_VLLM_PORT=PORT for the test tier.",
    )


def main(argv: list[str] | None = None) -> None:
    """`python -m runner.vllm_local`: serve the embedded model on vLLM until Ctrl-C, for
    `--endpoint vllm=URL,model=gemma-3-270m` or `INFERENCE_VLLM_PORT` (the test tier)."""
    from runner.cli.session import main_guard
    from runner.core.console import console

    build_parser().parse_args(argv)

    def serve() -> int:
        with VllmServer() as server:
            console.print(
                f"vLLM {SERVED_NAME} on {server.base_url} (ready in {server.startup_s:.0f} s); Ctrl-C stops it"
            )
            while server.process is not None and server.process.poll() is None:
                time.sleep(1)
        return 1

    main_guard(serve)


if __name__ == "__main__":
    main()
