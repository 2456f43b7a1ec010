"""`python -m runner.report FILE...`: render evidence files' tables (tables are never typed), and
with `--html` one self-contained page (a headline per backend and model, the plots, every table)
from bench, cost and quality evidence, with `--markdown` the headline and the tables as Markdown.

Every file is read and checked before anything is written: a file that is not evidence, cost or
advise evidence whose rows are of another version (`runner.costing.rows`), or (for `--html` and
`--markdown`) evidence of a command the page does not take, is one line, exit 2."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from runner.cli.options import add_block_arguments, block_config
from runner.cli.session import main_guard
from runner.core.accuracy import summaries_of
from runner.core.errors import NotWritten, RunnerError
from runner.core.evidence import EvidenceFile, load
from runner.core.files import check_output_file, write_atomically
from runner.costing.rows import check_rows_schema
from runner.render.tables import print_report, renderer_for, stdout, typed


def check_tables(path: Path, command: str) -> None:
    """A command without a table of its own is one line naming it (quality evidence has the
    page's summary table when its command's module is not there)."""
    if command == "quality":
        return
    try:
        renderer_for(command)
    except RunnerError as error:
        raise RunnerError(f"{path}: {error} (a file written by another program, or by a newer runner)") from None


def print_tables(evidence: EvidenceFile, baseline: EvidenceFile | None) -> None:
    try:
        renderer_for(evidence.command)
    except RunnerError:
        from runner.render.headline import quality_table

        stdout.print(quality_table(evidence))
        for line in evidence.notices:
            stdout.print(f"[dim]note: {line}[/dim]")
        return
    print_report(evidence, baseline)


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.report", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="evidence files")
    parser.add_argument("--compare", type=Path, help="an earlier evidence file of the same command to compare against")
    parser.add_argument(
        "--html",
        type=Path,
        help="write one self-contained HTML page (headline, plots, tables) here: bench, cost, quality",
    )
    parser.add_argument("--markdown", type=Path, help="write the headline and the tables as Markdown here")
    add_block_arguments(parser)
    args = parser.parse_args(argv)
    outputs = [(flag, target) for flag, target in (("--html", args.html), ("--markdown", args.markdown)) if target]
    for flag, target in outputs:
        check_output_file(target, flag)  # a folder, or one that takes no file: before anything is read
    # The run blocks of bench evidence as asked here, over what the bench run asked for.
    asked = block_config(args, given_only=True)
    baseline = load(args.compare) if args.compare else None
    sources = [(path, load(path)) for path in args.files]
    if baseline is not None and all(evidence["command"] != baseline["command"] for _, evidence in sources):
        commands = ", ".join(sorted({evidence["command"] for _, evidence in sources}))
        raise RunnerError(
            f"--compare {args.compare} is {baseline['command']} evidence: it compares against an earlier file of "
            f"the same command, and the files given are {commands} evidence"
        )
    for path, evidence in sources:
        check_tables(path, evidence["command"])
        check_rows_schema(evidence, path)
        summaries_of(evidence, path)  # a malformed quality summary: one line, before anything is written
    # Each file typed as its command's, the one its tables are drawn from (a malformed part: one line).
    files = [(path, typed(evidence, path)) for path, evidence in sources]
    earlier = typed(baseline, args.compare) if baseline is not None else None
    if args.html or args.markdown:
        from runner.render.page import check_page_sources, render_html, render_markdown

        check_page_sources(files)
        renderers = {"--html": render_html, "--markdown": render_markdown}
        pages = [(flag, target, renderers[flag](files)) for flag, target in outputs]
        for flag, target, text in pages:
            try:
                write_atomically(target, text)
            except OSError as error:
                raise NotWritten(f"{flag} {target} could not be written ({error.strerror or error})") from None
            stdout.print(f"wrote {target}")
    for path, file in files:
        stdout.print(f"[bold]{path}[/bold] ({file.started_at})")
        same_command = earlier is not None and earlier.command == file.command
        if asked and file.command == "bench":
            file = replace(file, config=file.config | asked)
        print_tables(file, earlier if same_command else None)
    return 0


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
