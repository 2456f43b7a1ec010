"""`python -m runner.report FILE...`: render any evidence file's table (tables are never typed)."""

from __future__ import annotations

import argparse
from pathlib import Path

from runner.evidence import load
from runner.session import main_guard
from runner.tables import print_report, stdout


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.report", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="evidence files")
    parser.add_argument("--compare", type=Path, help="an earlier evidence file of the same command to compare against")
    args = parser.parse_args(argv)
    baseline = load(args.compare) if args.compare else None
    for path in args.files:
        evidence = load(path)
        stdout.print(f"[bold]{path}[/bold] ({evidence['started_at']})")
        same_command = baseline is not None and baseline["command"] == evidence["command"]
        print_report(evidence, baseline if same_command else None)
    return 0


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
