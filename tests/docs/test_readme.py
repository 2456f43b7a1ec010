"""The README is the front page: its layout section matches the tree, its links resolve, and every
`python -m runner.<command>` it or the manual names still runs (`--help` at least)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text()
MANUAL = sorted((ROOT / "docs").glob("*.md"))


def layout_block() -> list[str]:
    section = README.split("## Layout", 1)[1]
    return section.split("```", 2)[1].strip("\n").splitlines()


def listed(lines: list[str], indented: bool) -> set[str]:
    names = set()
    for line in lines:
        if line.startswith("  ") != indented:
            continue
        for name in re.split(r",\s*", re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]):
            names.add(name.rstrip("/"))
    return names


def tracked_top_level() -> set[str]:
    """The project's own top-level folders and files that carry code or configuration."""
    hidden = {"node_modules", "cdk.out", "cdk.out.up", "results", "__pycache__"}
    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name not in hidden}
    return folders | {"app.py", "cdk.json"}


def test_the_layout_lists_every_top_level_folder_and_no_other():
    assert listed(layout_block(), indented=False) == tracked_top_level()


def test_the_layout_lists_every_runner_package_and_no_other():
    packages = {p.parent.name for p in (ROOT / "runner").glob("*/__init__.py")}
    assert listed(layout_block(), indented=True) == packages


def test_the_layout_names_every_test_folder():
    (tests_line,) = [line for line in layout_block() if line.startswith("tests/")]
    named = set(re.findall(r"([a-z_]+)/", tests_line.split(None, 1)[1]))
    folders = {p.parent.name for p in (ROOT / "tests").glob("*/*.py")}
    assert named == folders


def test_every_link_of_the_front_page_and_the_manual_resolves():
    for page in [ROOT / "README.md", *MANUAL]:
        for target in re.findall(r"\]\(([^)#]+)\)", page.read_text()):
            if not target.startswith("http"):
                assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"


COMMANDS = sorted(
    {
        name
        for page in [ROOT / "README.md", *MANUAL]
        for name in re.findall(r"python -m runner\.(\w+)", page.read_text())
    }
)


def test_the_front_page_names_the_commands_a_user_starts_with():
    assert {"bench", "up", "forward", "check", "cost", "sweep", "report"} <= set(COMMANDS)


def test_every_command_the_docs_name_runs():
    """`python -m runner.<command> --help`, as a user types it, each in its own process (side by
    side, bounded: a command that ignores --help and starts working fails here instead of hanging)."""
    runs = {
        command: subprocess.Popen(
            [sys.executable, "-m", f"runner.{command}", "--help"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for command in COMMANDS
    }
    broken = {}
    for command, run in runs.items():
        try:
            out, _ = run.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            run.kill()
            out, _ = run.communicate()
            broken[command] = "still running after 60 s"
            continue
        if run.returncode != 0 or f"python -m runner.{command}" not in out:
            broken[command] = f"exit {run.returncode}: {out[-300:]}"
    assert broken == {}
