"""`python -m runner.report FILE...`: render evidence files' tables (tables are never typed), and
with `--html` one self-contained page with plots, with `--markdown` the same tables as Markdown."""

from __future__ import annotations

import argparse
from pathlib import Path

from runner.cli.session import main_guard
from runner.core.evidence import load
from runner.core.files import write_atomically
from runner.render.tables import print_report, stdout


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.report", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="evidence files")
    parser.add_argument("--compare", type=Path, help="an earlier evidence file of the same command to compare against")
    parser.add_argument("--html", type=Path, help="write one self-contained HTML page with plots and tables here")
    parser.add_argument("--markdown", type=Path, help="write the tables as Markdown here")
    args = parser.parse_args(argv)
    baseline = load(args.compare) if args.compare else None
    if args.html or args.markdown:
        from runner.render.page import render_html, render_markdown

        files = [(path, load(path)) for path in args.files]
        for target, render in ((args.html, render_html), (args.markdown, render_markdown)):
            if target:
                write_atomically(target, render(files))
                stdout.print(f"wrote {target}")
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
