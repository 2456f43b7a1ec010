"""The one console every part of the runner writes progress and notes to: stderr, so the tables on
stdout stay clean; soft_wrap, so an error stays one line whatever the terminal's width."""

from rich.console import Console

console = Console(stderr=True, highlight=False, soft_wrap=True)
