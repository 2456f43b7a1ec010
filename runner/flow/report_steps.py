"""The survey's cost and report steps, from the evidence of the steps before them."""

from __future__ import annotations

from runner import cost, report
from runner.flow.state import SurveyState

PAGE_STEPS = ("up", "check", "ask", "demo1-filter", "demo1-rows", "demo2", "bench", "bench-sweep", "bench-lengths",
              "bench-workload", "quality", "cost")  # fmt: skip


def cost_step(state: SurveyState) -> int:
    inputs = [
        str(state.folder.root / p)
        for p in state.evidence_of("bench", "bench-sweep", "bench-workload", "batch", "quality")
    ]
    return cost.run([*inputs, *(["--offline"] if state.options.offline_prices else []), *state.results(), *state.aws()])


def report_step(state: SurveyState) -> int:
    state.save()
    inputs = [str(state.folder.state), *[str(state.folder.root / p) for p in state.evidence_of(*PAGE_STEPS)]]
    return report.run(
        [*inputs, "--html", str(state.folder.report_html), "--markdown", str(state.folder.report_markdown)]
    )
