"""`python -m runner.report FILE...`: render any evidence file's table (tables are never typed)."""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from runner.errors import RunnerError
from runner.evidence import load
from runner.session import main_guard
from runner.stats import change_percent, fmt, fmt_range, median, value_range

stdout = Console(highlight=False, soft_wrap=False, width=200)


def _by_backend(evidence: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for backend in evidence.get("backends", []):
        grouped[backend["name"]] = []
    for record in evidence.get("records", []):
        grouped[record["backend"]].append(record)
    return grouped


def bench_summary(evidence: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per backend: the figures the bench table shows, computed from the raw records."""
    summary = {}
    for name, records in _by_backend(evidence).items():
        ok = [r for r in records if r["ok"]]
        rates = [r["tokens_per_s"] for r in ok]
        tokens = [r["output_tokens"] for r in ok]
        summary[name] = {
            "runs": len(records),
            "ok": len(ok),
            "errors": len(records) - len(ok),
            "median_s": median(r["e2e_s"] for r in ok),
            "median_ttft_s": median(r["ttft_s"] for r in ok),
            "median_tok_s": median(rates),
            "tok_s_range": value_range(rates),
            "token_range": value_range(tokens),
            "distinct_completions": len({r["text"] for r in ok}),
            "token_sources": sorted({r["token_source"] for r in ok if r.get("token_source")}),
            "first_error": next((r["error"] for r in records if r.get("error")), None),
        }
    return summary


def bench_table(evidence: dict[str, Any], baseline: dict[str, Any] | None = None) -> Table:
    table = Table(
        title=f"bench: {evidence['config'].get('prompt', '')!r}, {evidence['config'].get('max_tokens')} tokens max"
    )
    for column in (
        "backend",
        "ok/runs",
        "median s",
        "median TTFT s",
        "median tok/s",
        "tok/s range",
        "tokens",
        "distinct",
    ):
        table.add_column(column, justify="left" if column == "backend" else "right")
    if baseline is not None:
        table.add_column("tok/s change", justify="right")
    table.add_column("notes")
    old = bench_summary(baseline) if baseline else {}
    for name, row in bench_summary(evidence).items():
        notes = []
        if "client-chunks" in row["token_sources"]:
            notes.append("tokens counted by client (no server usage)")
        if row["first_error"]:
            notes.append(row["first_error"])
        cells = [
            name,
            f"{row['ok']}/{row['runs']}",
            fmt(row["median_s"]),
            fmt(row["median_ttft_s"]),
            fmt(row["median_tok_s"], 1),
            fmt_range(row["tok_s_range"]),
            fmt_range(row["token_range"], 0),
            str(row["distinct_completions"]) if row["ok"] else "-",
        ]
        if baseline is not None:
            cells.append(change_percent(old.get(name, {}).get("median_tok_s"), row["median_tok_s"]))
        table.add_row(*cells, "; ".join(notes))
    return table


def print_report(evidence: dict[str, Any], baseline: dict[str, Any] | None = None, *, notices: bool = True) -> None:
    command = evidence["command"]
    if command == "bench":
        stdout.print(bench_table(evidence, baseline))
    elif command == "check":
        from runner.check import check_table

        stdout.print(check_table(evidence))
    elif command == "counting":
        from runner.counting import counting_table

        stdout.print(counting_table(evidence))
    elif command == "up":
        from runner.up import up_table

        stdout.print(up_table(evidence))
    elif command == "orchestrator":
        from runner.orchestrator import orchestrator_report

        orchestrator_report(evidence, stdout)
    else:
        raise RunnerError(f"no report for command {command!r}")
    for line in evidence.get("notices", []) if notices else []:
        stdout.print(f"[dim]note: {line}[/dim]")
    if evidence.get("interrupted"):
        stdout.print("[yellow]interrupted: the table shows what was measured before Ctrl-C[/yellow]")


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.report", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="evidence files")
    parser.add_argument("--compare", type=Path, help="a bench evidence file to compare against")
    args = parser.parse_args(argv)
    baseline = load(args.compare) if args.compare else None
    for path in args.files:
        evidence = load(path)
        stdout.print(f"[bold]{path}[/bold] ({evidence['started_at']})")
        print_report(evidence, baseline if evidence["command"] == "bench" else None)
    return 0


def counts(values: list[str]) -> str:
    return ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in Counter(values).most_common()) or "-"


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
