"""The ask report: the question, the answer as it came, and its figures (time to first token,
tokens/s, tokens), or the one line that says why there is no answer."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from runner.core.stats import fmt
from runner.render.tables import models


def timing_line(record: dict[str, Any]) -> str:
    """`TTFT 0.034 s · 64.1 tok/s · 100 tokens (server count) · 1.56 s end to end · finish length`."""
    ttft = "TTFT - (whole answer)" if record.get("ttft_s") is None else f"TTFT {fmt(record['ttft_s'])} s"
    rate = record.get("tokens_per_s")
    source = {"server": "server count", "client-chunks": "counted by chunks"}.get(record.get("token_source") or "", "-")
    return " · ".join(
        [
            ttft,
            f"{fmt(rate, 1)} tok/s",
            f"{record.get('output_tokens') if record.get('output_tokens') is not None else '-'} tokens ({source})",
            f"{fmt(record.get('e2e_s'), 2)} s end to end",
            f"finish {record.get('finish_reason') or '-'}",
            "streamed" if record.get("streamed") else "answered whole",
        ]
    )


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    served = models(evidence)
    for record in evidence.get("records", []):
        name = record.get("backend", "-")
        out.print(Text(f"ask {name} ({served.get(name, '-')}): {record.get('question', '')}", style="bold"))
        if record.get("text"):
            out.print(Text(record["text"].rstrip()))
        if record.get("ok"):
            out.print(Text(timing_line(record), style="dim"))
        else:
            out.print(Text(f"error: {record.get('error') or 'no answer'}", style="red"))
