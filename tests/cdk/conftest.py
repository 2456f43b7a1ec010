"""One synthesis per session, with cdk.json's context loaded exactly as `cdk synth` would."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")

ROOT = Path(__file__).resolve().parents[2]
# The synth's clock: the default time-to-live (12 h) then expires at a fixed time, so snapshots hold.
SYNTH_NOW = datetime(2026, 12, 1, 9, 0, 30, tzinfo=UTC)
SYNTH_EXPIRY = "2026-12-01T21:01:00Z"


def cdk_json_context() -> dict[str, Any]:
    return json.loads((ROOT / "cdk.json").read_text())["context"]


def synth(context: dict[str, Any], outdir: Path, *, nag: bool = True, records: dict[str, Any] | None = None):
    """Build and synthesize the app as app.py does; returns (assembly, stacks)."""
    import aws_cdk as cdk

    from catalog.config import load_config
    from stacks import build_app

    # The CLI adds path metadata; cfn-lint reads it to recognise CDK templates.
    context = context | {"aws:cdk:enable-path-metadata": True}
    app = cdk.App(context=context, outdir=str(outdir), builtin_cloud_formation_validation=False)
    # No placement record unless given: tests see the catalog's defaults, whatever a developer deployed.
    config = load_config(app.node.get_all_context(), records=records or {}, now=SYNTH_NOW)
    stacks = build_app(app, config, nag=nag)
    return app.synth(), stacks


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory):
    return synth(cdk_json_context(), tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def assembly(synthesized):
    return synthesized[0]


@pytest.fixture(scope="session")
def app_stacks(synthesized):
    return synthesized[1]


@pytest.fixture(scope="session")
def templates(assembly) -> dict[str, dict[str, Any]]:
    return {stack.stack_name: stack.template for stack in assembly.stacks}


def resources(template: dict[str, Any], type_name: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_name}


def render_join(value: Any, refs: dict[str, str] | None = None) -> str:
    """Flatten Fn::Join / Fn::Base64 / Fn::Sub / Ref into text (Refs become <LogicalId> or a given value)."""
    refs = refs or {}
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if "Fn::Base64" in value:
            return render_join(value["Fn::Base64"], refs)
        if "Fn::Join" in value:
            sep, parts = value["Fn::Join"]
            return sep.join(render_join(p, refs) for p in parts)
        if "Ref" in value:
            return refs.get(value["Ref"], f"<{value['Ref']}>")
        if "Fn::Sub" in value and isinstance(value["Fn::Sub"], str):
            return value["Fn::Sub"]
        if "Fn::GetAtt" in value:
            return f"<{'.'.join(value['Fn::GetAtt'])}>"
        if "Fn::Select" in value and value["Fn::Select"][1] == {"Fn::GetAZs": ""}:
            return f"<zone {value['Fn::Select'][0]}>"
        if "Fn::Select" in value and "Fn::Split" in value["Fn::Select"][1]:
            index, split = value["Fn::Select"]
            separator, source = split["Fn::Split"]
            return f"<{render_join(source, refs)} split {separator!r} [{index}]>"
    raise AssertionError(f"unexpected template value {value!r}")
