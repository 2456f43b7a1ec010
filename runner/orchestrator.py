"""`python -m runner.orchestrator` (demo 2): one agent asks every backend, code keeps score.

The agent (Bedrock by default; the embedded model without AWS) gets one `ask_<backend>` tool
per backend plus `scoreboard`. Each ask sends the same fixed question, after one untimed
warm-up per backend, and times it in code; every ask is kept; the scoreboard sorts in code. The evidence keeps the code's table and the agent's closing sentence apart, records
which backends the agent never asked, and flags a sentence that names a different winner.
"""

from __future__ import annotations

import argparse

from runner.cli.options import add_common_arguments
from runner.cli.session import Discovery, main_guard, run_command
from runner.core.agent_evidence import OrchestratorFile
from runner.core.evidence import Evidence
from runner.core.flags import at_least


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.orchestrator", description=__doc__.splitlines()[0])
    parser.add_argument("--agent", help="backend whose model drives the agent (default: bedrock, else local)")
    parser.add_argument("--runs", type=int, default=1, help="orchestrator runs (default: %(default)s)")
    parser.add_argument("--max-tokens", type=int, default=512, help="per agent model call (default: %(default)s)")
    add_common_arguments(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    at_least("--runs", args.runs, 1)
    at_least("--max-tokens", args.max_tokens, 1)
    # The agent (Strands and the model SDKs, about 1 s of imports) only once there is work: --help stays quick.
    from runner.agent.orchestration import ASK_MAX_TOKENS, QUESTION, asks_measured, orchestrate_once, pick_agent

    config = {"question": QUESTION, "ask_max_tokens": ASK_MAX_TOKENS, "runs": args.runs}

    def measure(discovery: Discovery, evidence: Evidence[OrchestratorFile]) -> None:
        agent_backend = pick_agent(discovery.backends, args.agent)
        evidence.file.config["agent_backend"] = agent_backend.name
        for run_number in range(1, args.runs + 1):
            evidence.add_record(orchestrate_once(discovery.backends, agent_backend, run_number, args))

    return run_command("orchestrator", args, config, measure, measured=lambda file: asks_measured(file.records))


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
