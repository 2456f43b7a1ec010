"""The orchestrator table: per backend its measured asks and median time, sorted in code, and the
agent's closing sentence beside it."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner.core.agent_evidence import OrchestratorFile
from runner.core.stats import fmt
from runner.render.tables import models


def render_report(evidence: OrchestratorFile, out: Console, baseline: OrchestratorFile | None = None) -> None:
    served = models(evidence)
    for record in evidence.records:
        table = Table(title=f"orchestrator run {record.run} (agent: {record.agent_backend}); table computed in code")
        for column in ("backend", "model", "answer", "measured/asks", "median s", "median tokens/s", "error"):
            table.add_column(column)
        for row in record.table:
            table.add_row(
                row.backend,
                escape(served.get(row.backend, "-")),
                row.answer,
                f"{row.measured}/{row.asks}",
                fmt(row.seconds),
                fmt(row.tokens_per_s, 1) if row.tokens_per_s else "-",
                row.error or "",
            )
        out.print(table)
        out.print(f"agent's closing sentence: {record.closing_sentence or '(none)'}")
        out.print(
            f"harness: {len(record.asks)} backend calls; not asked by the agent: {', '.join(record.never_asked) or 'none'}"
        )
        if record.sentence_names_different_winner:
            out.print(
                f"[yellow]flag: the sentence names {record.sentence_names[0]} first; the table's winner is {record.table_winner}[/yellow]"
            )
        if record.agent.error:
            out.print(f"[red]agent error: {record.agent.error}[/red]")
