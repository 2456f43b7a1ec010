"""What a server container runs on a stand-in host: the scripted OpenAI-compatible server (it
streams like vLLM) on a free loopback port, which it writes to --port-file; its log says how long
its "weights" took, in vLLM's words, so the readiness script has a line to read. The readiness
script's question (catalog/boot.py READINESS_QUESTION) gets its right answer; every other request
the scripted reply."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from catalog.boot import READINESS_ANSWER, READINESS_QUESTION
from tests.runner.fake_openai import FakeOpenAI, Step, text

REPLY = "The ocean is wide and deep."
REPLY_TOKENS = 9


class StandInEngine(FakeOpenAI):
    def respond(self, handler: Any, step: Step, body: dict[str, Any]) -> None:
        asked = " ".join(str(m.get("content")) for m in body.get("messages") or [])
        super().respond(handler, text(READINESS_ANSWER) if READINESS_QUESTION in asked else step, body)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--health", type=int, default=200)
    args = parser.parse_args()
    # SIGTERM taken with sigwait, blocked before the server's threads start (they inherit the
    # mask): a handler setting an Event could land while this thread held its lock, and hang.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # pending while blocked, even if the caller ignored it
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    with StandInEngine([text(REPLY, usage_tokens=REPLY_TOKENS)]) as server:
        server.health = lambda: args.health
        print("(EngineCore pid=2128) INFO [default_loader.py:430] Loading weights took 3.21 seconds", flush=True)
        partial = args.port_file.with_suffix(".partial")
        partial.write_text(server.url.rsplit(":", 1)[1])
        partial.replace(args.port_file)
        print(f"INFO: Uvicorn running on {server.url}", flush=True)
        signal.sigwait({signal.SIGTERM})
    return 0


if __name__ == "__main__":
    sys.exit(main())
