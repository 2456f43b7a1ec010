"""Model lanes: which weights the open-model paths serve (`-c lane=NAME`).

`survey` (the default) keeps each path on the model the survey ran there, so its table compares
paths and models at once (Nova Micro, a 4-bit Gemma 4 repack, Gemma 4 in fp16, Qwen on Neuron).
`open` puts one model on every path that can serve an open model, so a table compares paths on
the same weights: Qwen2.5-1.5B-Instruct (Apache-2.0, no licence gate; Qwen2 architecture, which
Custom Model Import accepts; vLLM and the vendor's vLLM-Neuron serve it; its Q8_0 file fits a
serverless endpoint's memory; tool calls in the hermes format vLLM parses). Bedrock's managed
model and the embedded model are not open-model paths and stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from catalog.backends import (
    EC2_KINDS,
    OPEN_MODEL,
    QWEN25_1_5B_BF16_GB,
    SAGEMAKER_KINDS,
    BackendKind,
    BackendSpec,
)
from catalog.errors import CatalogError

OPEN_MODEL_KINDS = frozenset({*EC2_KINDS, *SAGEMAKER_KINDS, BackendKind.BEDROCK_IMPORT})
TOOL_PARSER_FLAG = "--tool-call-parser"


@dataclass(frozen=True)
class Lane:
    name: str
    summary: str
    # None: every backend keeps its catalog model.
    model_id: str | None = None
    tool_call_parser: str | None = None
    weights_gb: float | None = None


SURVEY_LANE = Lane("survey", "each path on the model the survey ran there")
OPEN_LANE = Lane(
    "open",
    f"{OPEN_MODEL} on every open-model path",
    model_id=OPEN_MODEL,
    tool_call_parser="hermes",  # Qwen2.5 writes <tool_call>{json}</tool_call>
    weights_gb=QWEN25_1_5B_BF16_GB,
)
LANES = {lane.name: lane for lane in (SURVEY_LANE, OPEN_LANE)}
DEFAULT_LANE = SURVEY_LANE.name


def get_lane(name: str) -> Lane:
    try:
        return LANES[name]
    except KeyError:
        raise CatalogError(f"context lane: unknown lane {name!r}; lanes: {', '.join(LANES)}") from None


def with_tool_parser(flags: tuple[str, ...], parser: str) -> tuple[str, ...]:
    """The flags with `--tool-call-parser` set to `parser` (added when the flags have none)."""
    out = list(flags)
    if TOOL_PARSER_FLAG in out:
        at = out.index(TOOL_PARSER_FLAG)
        out[at + 1 : at + 2] = [parser]
        return tuple(out)
    if "--enable-auto-tool-choice" in out:
        return (*out, TOOL_PARSER_FLAG, parser)
    return tuple(out)


def in_lane(spec: BackendSpec, lane: Lane) -> BackendSpec:
    """The catalog entry as the lane serves it: the lane's model, its tool parser, its weight size.
    The serverless backend's image carries its own quantized file of the same checkpoint."""
    if lane.model_id is None or spec.kind not in OPEN_MODEL_KINDS or spec.model_id == lane.model_id:
        return spec
    precision = "fp16" if "float16" in spec.serve_flags else "bf16"
    return replace(
        spec,
        model_id=lane.model_id,
        serve_flags=with_tool_parser(spec.serve_flags, lane.tool_call_parser or ""),
        decode_read_gb=lane.weights_gb,
        precision=precision,
        # The survey's figures were for another model: they no longer stand beside this row.
        survey_tok_s=(),
        survey_weights_load_s=(),
        survey_demo1=(),
        survey_demo2_median_s=None,
        survey_usd_per_hour=None,
        notes=f"lane {lane.name}: {lane.model_id}",
    )


def model_label(model_id: str, lane: str | None, precision: str | None = None) -> str:
    """What every table's model column shows: the model, its precision, and the lane."""
    parts = [model_id]
    if precision:
        parts.append(f"({precision})")
    if lane:
        parts.append(f"[{lane}]")
    return " ".join(parts)
