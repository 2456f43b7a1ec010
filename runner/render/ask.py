"""The ask report: the question, the answer as it came, and its figures (time to first token,
tokens/s, tokens), or the one line that says why there is no answer."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from runner.core.agent_evidence import AskFile, AskRecord
from runner.core.stats import fmt
from runner.render.tables import models


def timing_line(asked: AskRecord) -> str:
    """`TTFT 0.034 s · 64.1 tok/s · 100 tokens (server count) · 1.56 s end to end · finish length`."""
    record = asked.request
    ttft = "TTFT - (whole answer)" if record.ttft_s is None else f"TTFT {fmt(record.ttft_s)} s"
    source = {"server": "server count", "client-chunks": "counted by chunks"}.get(record.token_source or "", "-")
    return " · ".join(
        [
            ttft,
            f"{fmt(record.tokens_per_s, 1)} tok/s",
            f"{record.output_tokens if record.output_tokens is not None else '-'} tokens ({source})",
            f"{fmt(record.e2e_s, 2)} s end to end",
            f"finish {record.finish_reason or '-'}",
            "streamed" if asked.streamed else "answered whole",
        ]
    )


def render_report(evidence: AskFile, out: Console, baseline: AskFile | None = None) -> None:
    served = models(evidence)
    for asked in evidence.records:
        record = asked.request
        out.print(Text(f"ask {record.backend} ({served.get(record.backend, '-')}): {asked.question}", style="bold"))
        if record.text:
            out.print(Text(record.text.rstrip()))
        if record.ok:
            out.print(Text(timing_line(asked), style="dim"))
        else:
            out.print(Text(f"error: {record.error or 'no answer'}", style="red"))
