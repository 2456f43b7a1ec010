"""The survey's tables: the preflight's plan (what runs where, its quota, price and time-to-live),
then, for a whole survey, every step (took how long, passed or not, why), what the teardown did
and what the closing sweep found left."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner.render.tables import add_columns

COLUMNS = ("backend", "region", "failover", "type", "quota", "images", "$/h", "TTL h", "TTL worst $", "runs")
STEP_COLUMNS = ("#", "step", "backend", "outcome", "took s", "why", "evidence")


def render_report(evidence: dict[str, Any], out: Console, baseline: dict[str, Any] | None = None) -> None:
    if evidence.get("preflight"):
        render_plan(evidence, out)
    if "steps" in evidence:
        render_steps(evidence, out)


def render_plan(evidence: dict[str, Any], out: Console) -> None:
    preflight = evidence.get("preflight") or {}
    account = preflight.get("account") or {}
    out.print(f"account {account.get('account')} ({account.get('arn')})")
    plugin = preflight.get("plugin") or {}
    mark = {True: "ok", False: "missing", None: "not found (not needed)"}[plugin.get("ok")]
    out.print(f"Session Manager plugin: {mark}: {plugin.get('detail', '')}")
    table = Table(title="preflight: what will run where (nothing deployed)")
    add_columns(table, COLUMNS, ("backend", "region", "failover", "type", "quota", "images", "runs"))
    rows = preflight.get("rows", [])
    for row in rows:
        price = row.get("usd_per_hour")
        worst = row.get("ttl_worst_usd")
        ttl = row.get("ttl_hours")
        table.add_row(
            row["backend"],
            row.get("region") or "-",
            ", ".join(row.get("failover") or []) or "-",
            row.get("instance_type") or "-",
            row.get("quota") or "-",
            ", ".join(row.get("images") or []) or "-",
            f"{price:.4f}" if price is not None else "-",
            f"{ttl:g}" if ttl is not None else "off",
            f"{worst:.2f}" if worst is not None else "-",
            "yes" if row["runs"] else f"left out: {row['reason']}",
        )
    out.print(table)
    # One line per image build (inf2 and trn1 share the neuron image), for the backends that run.
    builds: dict[str, list[str]] = {}
    for row in (r for r in rows if r["runs"]):
        for check in row.get("checks", []):
            if check["what"].startswith("image "):
                builds.setdefault(f"{check['what']}: {check['detail']}", []).append(row["backend"])
    for line, users in builds.items():
        out.print(f"[dim]{line} (for {', '.join(users)})[/dim]")
    # A failed check that leaves nothing out (the weights copy's quota): said once, with who it touches.
    warnings: dict[str, list[str]] = {}
    for row in (r for r in rows if r["runs"]):
        for check in row.get("checks", []):
            if check["ok"] is False:
                warnings.setdefault(check["detail"], []).append(row["backend"])
    for line, users in warnings.items():
        out.print(f"[yellow]{line} ({', '.join(users)})[/yellow]")
    running = [r for r in rows if r["runs"]]
    if running:
        total = sum(r.get("usd_per_hour") or 0.0 for r in running)
        out.print(f"{len(running)} of {len(rows)} backend(s) can run; {total:.4f} $/h together at list prices")
    else:
        out.print("[red]no backend can run: see the reasons above[/red]")


def render_steps(evidence: dict[str, Any], out: Console) -> None:
    elapsed = evidence.get("elapsed_s")
    title = "survey: every step" + (f" ({elapsed / 60:.1f} min in all)" if elapsed is not None else "")
    table = Table(title=title)
    add_columns(table, STEP_COLUMNS, ("step", "backend", "outcome", "why", "evidence"))
    for index, step in enumerate(evidence.get("steps", []), start=1):
        outcome = step["status"]
        shown = {"passed": "[green]passed[/green]", "failed": "[red]failed[/red]"}.get(outcome, outcome)
        table.add_row(
            str(index),
            step["step"],
            step.get("backend") or "-",
            shown,
            f"{step.get('seconds', 0):.1f}",
            escape(step.get("line") or ""),
            ", ".join(p.rsplit("/", 1)[-1] for p in step.get("evidence", [])) or "-",
        )
    out.print(table)
    for backend, why in (evidence.get("left_out") or {}).items():
        out.print(f"left out before anything billed: {backend}: {escape(why)}")
    for backend, why in (evidence.get("failed") or {}).items():
        out.print(f"[yellow]not measured: {backend}: {escape(why)}[/yellow]")
    for stack, region in (evidence.get("pre_existing") or {}).items():
        out.print(f"{stack} stood in {region} before this survey: measured as it was, left as it was")
    for action in evidence.get("teardown", []):
        out.print(
            f"[dim]teardown: {action['region']} {action['kind']} {action['id']}: {escape(action['outcome'])}[/dim]"
        )
    if any(s["step"] == "sweep" for s in evidence.get("steps", [])):
        left = evidence.get("left") or []
        problems = evidence.get("sweep_problems") or []
        if problems:
            out.print(f"[red]the sweep is incomplete: {escape('; '.join(problems))}[/red]")
        elif not left:
            out.print("[green]nothing of ours billing, and nothing of ours left[/green]")
        for item in left:
            out.print(f"[yellow]left: {item['region']} {item['kind']} {item['id']} ({item['state']})[/yellow]")
