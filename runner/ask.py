"""`python -m runner.ask BACKEND "question"`: one question to one backend, the answer printed as it arrives, timed, kept as evidence.

The quickest way to see that a backend is alive and what it says. The request goes through the
bench's own timed client for the backend (`timed_client_for`), so its figures mean what the
bench's do: time to first token, output tokens (the server's count where it sends one) and
tokens/s over the end-to-end time. No warm-up: the figures include opening the connection. On
the streaming paths (OpenAI-compatible servers, the SageMaker real-time endpoint, Custom Model
Import) each piece of text is printed as its chunk arrives; the paths that answer whole
(serverless, asynchronous) print the answer when it arrives and say so first. Exit 0 with an
answer, 1 when the backend could not be reached or gave none (one line), 2 on bad input (an
unknown backend: one line naming the known ones).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from runner.cli.options import add_common_arguments
from runner.cli.session import main_guard, run_session
from runner.core.agent_evidence import AskRecord
from runner.core.backends import Backend
from runner.core.console import console
from runner.core.errors import RunnerError
from runner.core.flags import at_least
from runner.core.records import RequestRecord
from runner.measure import ChatRequest, timed_client_for
from runner.render.ask import timing_line
from runner.render.tables import models
from runner.timing.stream import streaming_text_to


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.ask", description=__doc__.splitlines()[0])
    parser.add_argument("backend", metavar="BACKEND", help="the backend to ask (local: the embedded model)")
    parser.add_argument("question", metavar="QUESTION", help="the question, quoted")
    parser.add_argument("--max-tokens", type=int, default=256, help="at most this many tokens (default: %(default)s)")
    add_common_arguments(parser)
    for action in parser._actions:
        if action.dest == "backends":
            action.help = argparse.SUPPRESS  # BACKEND, positional, names the one backend
    return parser


def write_out(piece: str) -> None:
    sys.stdout.write(piece)
    sys.stdout.flush()


def ask(backend: Backend, request: ChatRequest, timeout_s: float, on_text: Callable[[str], None]) -> AskRecord:
    """One timed request; each piece of text to `on_text` as it arrives (on a streaming path), or
    the whole answer once it is there. Never raises for the backend's fault: the record says it."""
    record = RequestRecord(backend=backend.name, run=1)
    pieces: list[str] = []
    interrupted = False

    def piece(text: str) -> None:
        pieces.append(text)
        on_text(text)

    try:
        client = timed_client_for(backend, timeout_s)
        try:
            with streaming_text_to(piece):
                client.chat(request, record)
        finally:
            client.close()
    except KeyboardInterrupt:
        interrupted = True
        record.ok, record.error = False, "interrupted (Ctrl-C)"
    except Exception as error:
        record.ok, record.error = False, backend.explain(error)
    record.text = record.text or "".join(pieces)
    if not pieces and record.text:
        on_text(record.text)  # a path that answers whole: the answer, now that it is there
    return AskRecord(
        record, question=request.prompt, streamed=bool(pieces), pieces=len(pieces), interrupted=interrupted
    )


def run(argv: list[str] | None = None, on_text: Callable[[str], None] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.backends:
        raise RunnerError("--backends does not apply: ask takes one BACKEND")
    if not args.question.strip():
        raise RunnerError("the question is empty")
    at_least("--max-tokens", args.max_tokens, 1)
    args.backends = args.backend  # discovery selects it; an unknown name is one line naming the known ones
    config = {"backend": args.backend, "question": args.question, "max_tokens": args.max_tokens, "warm_up": None}
    request = ChatRequest(prompt=args.question, max_tokens=args.max_tokens)
    with run_session("ask", args, config) as (discovery, evidence):
        backend = next(b for b in discovery.backends if b.name == args.backend)
        model = models(evidence.file).get(backend.name, backend.model_id)
        whole = backend.supports.answer  # the paths whose client hands the text over only when it is all there
        if whole:
            console.print(f"[dim]{backend.name} ({model}) answers whole: {whole}; printed when it arrives …[/dim]")
        else:
            console.print(f"[dim]{backend.name} ({model}), printed as it arrives:[/dim]")
        asked = ask(backend, request, args.timeout, on_text or write_out)
        answer = asked.request
        if answer.text and not answer.text.endswith("\n") and on_text is None:
            write_out("\n")
        evidence.add_record(asked)
        evidence.finish(interrupted=asked.interrupted)
        if answer.ok:
            console.print(f"[dim]{timing_line(asked)}[/dim]")
        elif not asked.interrupted:
            console.print(f"[red]error:[/red] {backend.name}: {answer.error}")
        # The answer is on the terminal already: a folder that could not take it loses nothing shown.
        evidence.announce(interrupted=asked.interrupted)
        return 0 if answer.ok else 1


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
