"""The command registry (runner/commands.py), the README's command list, docs/runner.md's sections
and the front doors in runner/ name the same commands, both ways; `python -m runner` lists them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from runner.commands import COMMANDS, GROUPS

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text()
REFERENCE = (ROOT / "docs" / "runner.md").read_text()
NAMES = [c.name for c in COMMANDS]
PACKAGES = {p.parent.name for p in (ROOT / "runner").glob("*/__init__.py")}


def test_every_front_door_in_runner_is_a_registered_command_and_every_command_has_one():
    doors = {
        p.stem
        for p in (ROOT / "runner").glob("*.py")
        if p.stem != "__main__" and 'if __name__ == "__main__":' in p.read_text()
    }
    assert doors == set(NAMES)
    assert all(c.group in GROUPS for c in COMMANDS) and len(set(NAMES)) == len(NAMES)


def test_the_reference_has_one_section_per_command_in_the_registry_order():
    assert re.findall(r"^## runner\.([a-z_]+)$", REFERENCE, flags=re.MULTILINE) == NAMES


def test_the_readme_lists_every_command_with_the_registry_summary_by_group():
    section = README.split("## Commands", 1)[1].split("\n## ", 1)[0]
    listed = {group: re.findall(r"`runner\.([a-z_]+)` \(((?:[^()]|\([^()]*\))*)\)", line) for group, line in
              (re.match(r"- ([^:]+): (.*)", line).groups() for line in section.splitlines() if line.startswith("- "))}  # fmt: skip
    assert listed == {g: [(c.name, c.summary) for c in COMMANDS if c.group == g] for g in GROUPS}


def test_every_command_the_readme_and_the_manual_name_is_registered():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        named = set(re.findall(r"(?<![\w/.\[(])runner\.([a-z_]+)\b(?!\.md|/)", page.read_text()))
        unknown = named - set(NAMES) - PACKAGES
        assert not unknown, f"{page.name} names runner.{sorted(unknown)}, which is no command"


def test_python_dash_m_runner_lists_every_command_with_its_summary():
    out = subprocess.run([sys.executable, "-m", "runner"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for command in COMMANDS:
        assert re.search(rf"^  {command.name}\s+{re.escape(command.summary)}$", out, flags=re.MULTILINE), command.name


def test_python_dash_m_runner_command_runs_that_command_and_an_unknown_one_is_one_line():
    """`python -m runner report --help` is `python -m runner.report --help`, as pip runs `pip
    install`; a name no command has is one line, exit 2."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
        )

    through, direct = run("runner", "report", "--help"), run("runner.report", "--help")
    assert through.returncode == direct.returncode == 0 and through.stdout == direct.stdout
    assert through.stdout.startswith("usage: python -m runner.report")
    unknown = run("runner", "nope")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.splitlines() == ["error: no command 'nope'; `python -m runner` lists them"]
