"""`python -m runner.check --wait SECONDS`: wait until every backend is healthy (all at once), then
per backend one plain answer and one tool call through the shared agent. A table says what
passed; the exit status is 1 when nothing passed."""

from __future__ import annotations

import argparse

from runner.cli.options import add_common_arguments
from runner.cli.progress import step
from runner.cli.session import Discovery, main_guard, run_command
from runner.core.agent_evidence import CheckFile
from runner.core.console import console
from runner.core.evidence import Evidence
from runner.core.flags import at_least


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.check", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--wait", type=float, default=0.0, help="seconds to wait for the backends to be healthy (all at once)"
    )
    parser.add_argument("--max-tokens", type=int, default=128, help="per model call (default: %(default)s)")
    add_common_arguments(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    at_least("--wait", args.wait, 0, "seconds")
    at_least("--max-tokens", args.max_tokens, 1)
    # The agent (Strands and the model SDKs, about 1 s of imports) only once there is work: --help stays quick.
    from runner.agent.checks import PLAIN_PROMPT, TOOL_PROMPT, check_backend, wait_all

    config = {"plain_prompt": PLAIN_PROMPT, "tool_prompt": TOOL_PROMPT, "wait_s": args.wait}

    def measure(discovery: Discovery, evidence: Evidence[CheckFile]) -> None:
        # Each step said as it starts and as it ends, with its time: a slow model answers for minutes.
        names = ", ".join(b.name for b in discovery.backends)
        within = f", up to {args.wait:.0f} s for all at once" if args.wait > 0 else ""
        with step(f"waiting for health: {names}{within}") as done:
            health = wait_all(discovery.backends, args, discovery.aws)
            done(f"{sum(h.healthy for h in health.values())} of {len(health)} healthy")
        for backend in discovery.backends:
            state = health[backend.name]
            said = "healthy" if state.healthy else "not healthy"
            console.print(f"[dim]{backend.name}: {said} after {state.waited_s:.1f} s ({state.detail})[/dim]")
            evidence.add_record(check_backend(backend, state, args, step))

    # Exit 1 when no check passed: reaching a server that answers HTTP 500 is not a pass.
    return run_command("check", args, config, measure, measured=lambda file: any(r.passed for r in file.records))


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
