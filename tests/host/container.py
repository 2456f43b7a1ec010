"""What a server container runs on a stand-in host: the scripted OpenAI-compatible server (it
streams like vLLM) on a free loopback port, which it writes to --port-file; its log says how long
its "weights" took, in vLLM's words, so the readiness script has a line to read. The readiness
script's question (catalog/boot.py READINESS_QUESTION) gets its right answer; every other request
the scripted reply. Started with --no-chat-template (its checkpoint has no chat template: no
`chat_template.jinja` and none in `tokenizer_config.json`), it refuses every chat completion
with the 400 vLLM answers then (vllm/entrypoints/chat_utils.py: transformers no longer allows a
default template), as the real engine would serve such a copy."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Any

from catalog.boot import READINESS_ANSWER, READINESS_QUESTION
from tests.runner.fake_openai import FakeOpenAI, Step, text

NO_TEMPLATE = (
    "As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template "
    "if the tokenizer does not define one."
)

REPLY = "The ocean is wide and deep."
REPLY_TOKENS = 9


class StandInEngine(FakeOpenAI):
    chat_template = True

    def respond(self, handler: Any, step: Step, body: dict[str, Any]) -> None:
        if not self.chat_template and "messages" in body:
            refusal = {"object": "error", "message": NO_TEMPLATE, "type": "BadRequestError", "code": 400}
            super().respond(handler, Step(kind="http_error", status=400, error_body=json.dumps(refusal)), body)
            return
        asked = " ".join(str(m.get("content")) for m in body.get("messages") or [])
        super().respond(handler, text(READINESS_ANSWER) if READINESS_QUESTION in asked else step, body)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--health", type=int, default=200)
    parser.add_argument("--no-chat-template", action="store_true")
    args = parser.parse_args()
    # SIGTERM taken with sigwait, blocked before the server's threads start (they inherit the
    # mask): a handler setting an Event could land while this thread held its lock, and hang.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # pending while blocked, even if the caller ignored it
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    with StandInEngine([text(REPLY, usage_tokens=REPLY_TOKENS)]) as server:
        server.health = lambda: args.health
        server.chat_template = not args.no_chat_template
        print("(EngineCore pid=2128) INFO [default_loader.py:430] Loading weights took 3.21 seconds", flush=True)
        partial = args.port_file.with_suffix(".partial")
        partial.write_text(server.url.rsplit(":", 1)[1])
        partial.replace(args.port_file)
        print(f"INFO: Uvicorn running on {server.url}", flush=True)
        signal.sigwait({signal.SIGTERM})
    return 0


if __name__ == "__main__":
    sys.exit(main())
