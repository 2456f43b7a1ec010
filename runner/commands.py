"""Every runner command in one table: its name (`python -m runner.<name>`), its one-line summary,
and the group it is listed under. `python -m runner` lists them; the docs test holds this table,
the README and docs/runner.md (one section per command) to each other, both ways. A command's
module is imported only when it runs, so listing them imports nothing heavy (pip's
`commands/__init__.py` keeps its commands the same way).

This module imports nothing of the runner: every other module may import it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    group: str

    @property
    def module(self) -> str:
        return f"runner.{self.name}"

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)


GROUPS = ("the survey", "deploying", "measuring", "cost and advice", "looking back")
COMMANDS: tuple[Command, ...] = (
    Command("survey", "the whole survey: preflight, deploy, measure, report, take down, sweep", "the survey"),
    Command("up", "deploy the stacks and bring every server to ready or to zero", "deploying"),
    Command("images", "rebuild a backend's server image in AWS and follow the build", "deploying"),
    Command("model_import", "Bedrock Custom Model Import of the copied weights: import, status, delete", "deploying"),
    Command("forward", "one SSM port forward per ready EC2 server", "deploying"),
    Command("sweep", "what is left, and billing, and until when, in every region; --delete removes it", "deploying"),
    Command("check", "wait until every backend is healthy, then one plain answer and one tool call each", "measuring"),
    Command("ask", "one question to one backend, its answer streamed, timed and kept", "measuring"),
    Command(
        "bench", "a workload on every backend: lengths, sweeps, load levels, goodput at an SLO, capacity", "measuring"
    ),
    Command("counting", "demo 1: the survey's counting demo, graded on the filter and the number", "measuring"),
    Command("orchestrator", "demo 2: one agent asks every backend, code keeps the score", "measuring"),
    Command("quality", "a generated task set with exact answers, graded on every backend", "measuring"),
    Command("batch", "one SageMaker batch transform job over a prompt set, timed and priced", "measuring"),
    Command("vllm_local", "a real vLLM (CPU build) serving the embedded model on loopback", "measuring"),
    Command(
        "cost", "what each backend costs by its own billing model, per hour and per million tokens", "cost and advice"
    ),
    Command("advise", "the cheapest measured option for a workload, within its latency bound", "cost and advice"),
    Command("report", "evidence files as tables, one HTML page or Markdown", "looking back"),
)
BY_NAME = {command.name: command for command in COMMANDS}


def listing() -> str:
    """What `python -m runner` prints: every command by group, with its summary."""
    width = max(len(c.name) for c in COMMANDS)
    lines = ["usage: python -m runner.<command> [--help], or python -m runner <command> [--help]", ""]
    for group in GROUPS:
        lines.append(f"{group}:")
        lines += [f"  {c.name:<{width}}  {c.summary}" for c in COMMANDS if c.group == group]
        lines.append("")
    lines.append("docs/runner.md has a section per command; python -m runner.<command> --help its flags.")
    return "\n".join(lines)
