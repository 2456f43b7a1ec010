"""The forward table: per server, the local port, the instance and what happened."""

from __future__ import annotations

from rich.table import Table

from runner.cloud.reach.forwards_file import (
    forwards_file,
)
from runner.cloud.reach.ssm_forward import Outcome


def outcome_table(outcomes: list[Outcome]) -> Table:
    table = Table(title=f"SSM port forwards ({forwards_file()})")
    for column in ("backend", "region", "state", "detail"):
        table.add_column(column)
    for outcome in outcomes:
        table.add_row(outcome.backend, outcome.region, outcome.state, outcome.detail)
    return table
