"""The up tables: per backend launch to ready beside the survey's, each boot phase's seconds and
which step took the slow way (and why), and what bills now."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from catalog.boot import PHASES
from runner.cloud.bring_up.one_stack import StackExtended, UpFile
from runner.core.typed_json import JsonObject

# How a step that took its fast way says so (server_scripts): anything else is a fallback.
FAST = ("instance store", "copied from s3://", "streamed by the engine", "restored from",
        "carried by the image")  # fmt: skip


def phase_line(record: JsonObject) -> str:
    """`running 45 · image 120 · weights 10 · engine 60 · answer 1`: the seconds each phase took."""
    taken = record.get("phase_s") or {}
    return " · ".join(f"{name} {taken[name]:g}" for name in PHASES if name in taken) or "-"


def slow_ways(record: JsonObject) -> str:
    """The steps that fell back, each with its reason (`-` when every step took its fast way)."""
    paths = record.get("paths") or {}
    slow = [f"{step}: {why}" for step, why in paths.items() if not why.startswith(FAST) and step != "image"]
    image = paths.get("image", "")
    if image.startswith("from "):  # the image's public copy, pulled when the region's could not be
        slow.insert(0, f"image: {image}")
    return "; ".join(slow) or "-"


def render_report(evidence: UpFile, out: Console, baseline: UpFile | None = None) -> None:
    if "extend_hours" in evidence.config:
        table = Table(title=f"up --extend {evidence.config['extend_hours']:g} h")
        for column in ("stack", "region", "outcome", "expires at"):
            table.add_column(column)
        for moved in evidence.records:
            if isinstance(moved, dict):  # as a file read back holds it
                moved = StackExtended.from_json(moved, "an extended stack")
            error = f": {moved.error}" if moved.error else ""
            table.add_row(moved.stack, moved.region, moved.outcome + error, moved.expires_at or "-")
        out.print(table)
        return
    table = Table(title="up: launch to ready (survey: run 2 of 2026-10-05)")
    columns = (
        "backend", "outcome", "region", "zone", "attempts", "launched", "ready", "min", "survey min", "model min",
        "phases s", "weights s", "survey weights s", "slow ways",
    )  # fmt: skip
    for column in columns:
        table.add_column(column)
    for record in evidence.records:
        if not isinstance(record, dict):
            continue
        regions = " → ".join(a["region"] for a in record["attempts"]) or "-"
        outcome = record["outcome"] + (f": {record['reason']}" if record.get("reason") else "")
        if record.get("held_at_zero"):
            outcome += f" (was held at zero: {record['held_at_zero']})"
        if record.get("answer_correct") is False:
            outcome += f" (first answer {record.get('answer')!r} is not the expected one)"
        table.add_row(
            record["backend"],
            outcome,
            record.get("region") or "-",
            record.get("zone") or "-",
            regions,
            record.get("launched_at") or "-",
            record.get("ready_at") or "-",
            str(record.get("launch_to_ready_min") or "-"),
            str(record.get("survey_launch_to_ready_min") or "-"),
            str(record.get("modelled_launch_to_ready_min") or "-"),
            phase_line(record),
            str(record.get("weights_load_s") or "-"),
            str(record.get("survey_weights_load_s") or "-"),
            slow_ways(record),
        )
    out.print(table)
    render_billing_now(evidence.billing or [], out, evidence.config.get("expires_at"))


def render_billing_now(rows: list[JsonObject], out: Console, expires_at: str | None) -> None:
    """What bills now (runner.costing.billing_now's rows), its total, and when the time-to-live ends it."""
    if not rows:
        out.print("[green]nothing of this run is billing by the hour[/green]")
    else:
        table = Table(title="billing now (list prices)")
        for column in ("backend", "region", "what", "$/h", "note"):
            table.add_column(column, justify="right" if column == "$/h" else "left")
        total = 0.0
        for row in rows:
            price = row.get("usd_per_hour")
            total += price or 0.0
            table.add_row(row["backend"], row["region"], row["what"], f"{price:.4f}" if price else "-", row["note"])
        table.add_row("total", "", "", f"{total:.4f}", "")
        out.print(table)
    if expires_at:
        out.print(
            f"time-to-live: every server of this deploy goes to zero at {expires_at} (runner.up --extend H moves it)"
        )
