"""Cost of what was measured: per backend and load level the rate it reached (median of single
requests, or all output tokens over the level's wall time), priced per million output tokens,
with the break-even against Bedrock."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from catalog import BACKENDS, BackendKind
from catalog.prices import BEDROCK, HOURS_PER_MONTH, PRICING_API_REGION, Price
from runner.cloud.pricing import (
    REFERENCE_BEDROCK,
    PriceRequest,
    bedrock_per_million_output,
    bedrock_price_name,
    breakeven_tok_s,
    price_request,
    usd_per_million_output,
)
from runner.core.errors import RunnerError
from runner.core.evidence import load
from runner.core.stats import median


@dataclass
class LevelFigures:
    """What one backend sustained at one load level, from the bench records."""

    level: str
    requests: int
    output_tok_s: float | None
    method: str
    input_per_output: float | None


def load_levels(evidence: dict[str, Any]) -> dict[str, list[LevelFigures]]:
    """Per backend and load level: output tokens/s. One request at a time: the median of the
    requests' own rates, as the survey priced them; any other level: all output tokens over the
    level's wall time (the bench sweep's own figure)."""
    from runner.measure.levels import level_groups, level_summary

    levels: dict[str, list[LevelFigures]] = defaultdict(list)
    for (backend, label), records in level_groups(evidence).items():
        done = [r for r in records if r.get("ok")]
        if not done:
            continue
        prompt = [r.get("prompt_tokens") for r in done]
        output = sum(r.get("output_tokens") or 0 for r in done)
        ratio = sum(prompt) / output if output and all(isinstance(p, int) for p in prompt) else None
        if label == "1 at a time":
            rate, method = median(r.get("tokens_per_s") for r in done), "median of single requests"
        else:
            rate, method = level_summary(records)["output_tok_s"], "all output tokens / level wall time"
        levels[backend].append(LevelFigures(label, len(done), rate, method, ratio))
    return levels


def catalog_backends() -> list[dict[str, Any]]:
    """With no evidence: every AWS backend of the catalog, in its first region."""
    return [
        {
            "name": spec.name,
            "kind": spec.kind.value,
            "region": spec.regions[0] if spec.regions else None,
            "model_id": spec.model_id,
            "catalog": {"instance_type": spec.instance_type},
        }
        for spec in BACKENDS
        if spec.kind not in (BackendKind.LOCAL, BackendKind.OPENAI)
    ]


def read_bench_evidence(path: Path) -> dict[str, Any]:
    data = load(path)
    if data["command"] != "bench":
        raise RunnerError(
            f"{path} is {data['command']} evidence; runner.cost reads bench evidence (written by python -m runner.bench)"
        )
    return data


def cost_rows(
    source: str,
    backends: list[dict[str, Any]],
    levels: dict[str, list[LevelFigures]],
    prices: dict[PriceRequest, Price],
) -> list[dict[str, Any]]:
    """One row per backend and measured load level (one row without figures when none was measured)."""
    bedrock_reference = prices.get(
        PriceRequest(BEDROCK, bedrock_price_name(REFERENCE_BEDROCK.model_id), PRICING_API_REGION)
    )
    rows = []
    for backend in backends:
        request = price_request(backend)
        price = prices.get(request) if request else None
        base = {
            "evidence": source,
            "backend": backend["name"],
            "region": request.region if request else backend.get("region"),
            "billed_by": request.item if request else None,
            "price": price.to_json() if price else None,
            "usd_per_hour": price.usd_per_hour if price else None,
            "usd_per_month_24x7": price.usd_per_hour * HOURS_PER_MONTH if price and price.usd_per_hour else None,
        }
        if request is None:
            rows.append(base | {"note": "not billed by AWS"})
            continue
        if price is None:
            rows.append(base | {"note": "no price found"})
            continue
        measured = levels.get(backend["name"]) or [LevelFigures(0, 0, None, "not measured", None)]
        for figures in measured:
            row = base | {
                "level": figures.level or None,
                "figures": asdict(figures),
                "output_tok_s": figures.output_tok_s,
            }
            if price.per_token:
                row["usd_per_million_output"] = bedrock_per_million_output(price, figures.input_per_output)
                row["basis"] = "output price" + (
                    " + measured input per output token" if figures.input_per_output else ""
                )
            else:
                if figures.output_tok_s:
                    row["usd_per_million_output"] = usd_per_million_output(price.usd_per_hour, figures.output_tok_s)
                if bedrock_reference is not None:
                    reference = bedrock_per_million_output(bedrock_reference, figures.input_per_output)
                    row["breakeven_vs_bedrock_tok_s"] = breakeven_tok_s(price.usd_per_hour, reference)
                    row["bedrock_usd_per_million_output"] = reference
            rows.append(row)
    return rows
